"""A desktop agent host beside a running service: ``agentcore mcp --url`` forwards the tools to
``agentcore serve`` (real processes, the SDK's own stdio client), a second process on a served
data directory (``mcp``, ``serve``, ``migrate``) stops at once with one line, and ``agentcore
mcp`` ends soon after its stdin
closes, in both modes, with work under way. (An owner killed with -9 leaves the directory free:
``test_server_process.test_kill_9_after_add_loses_nothing`` serves it again.)"""

from __future__ import annotations

import itertools
import json
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from agentcore.client import MemoryClient
from tests.e2e.test_mcp import REQUIRED_TOOLS, create_key, error_of, structured
from tests.openai_chat_stub import FakeOpenAI, Reply, chat_server
from tests.server_process import Server, free_port

AGENTCORE = [sys.executable, "-m", "agentcore.cli"]


@pytest.fixture(scope="module")
def keys_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("keys") / "keys.json"


@pytest.fixture(scope="module")
def keys(keys_file: Path) -> dict[str, str]:
    return {
        "writer": create_key(keys_file, "nia-rw", "write", "--user-id", "nia"),
        "reader": create_key(keys_file, "nia-r", "read", "--user-id", "nia"),
    }


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, keys_file: Path, keys: dict[str, str]
) -> Iterator[Server]:
    s = Server(tmp_path_factory.mktemp("data"), env={"AGENTCORE_API_KEYS_FILE": str(keys_file)})
    s.start()
    yield s
    s.stop()


def proxy(server: Server, *args: str, **env: str) -> StdioServerParameters:
    """``agentcore mcp --url`` as a desktop host starts it: no data directory of its own."""
    environment = {key: value for key, value in server.env.items() if key != "AGENTCORE_DATA_DIR"}
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentcore.cli", "mcp", *args],
        env={**environment, **env},
    )


async def test_the_proxy_lists_the_tools_the_local_server_lists(
    server: Server, tmp_path: Path
) -> None:
    local = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentcore.cli", "mcp"],
        env=Server(tmp_path / "own").env,
    )
    async with Client(local) as client:
        served_here = (await client.list_tools()).tools
    async with Client(proxy(server, "--url", server.base)) as client:
        forwarded = (await client.list_tools()).tools
    assert {tool.name for tool in forwarded} >= REQUIRED_TOOLS
    assert [t.model_dump() for t in forwarded] == [t.model_dump() for t in served_here]


async def test_the_proxy_forwards_calls_with_the_key(server: Server, keys: dict[str, str]) -> None:
    async with Client(proxy(server, "--url", server.base, "--api-key", keys["writer"])) as client:
        added = structured(
            await client.call_tool(
                "memory_add", {"content": "Nia's train to Porto leaves at 9:15", "user_id": "nia"}
            )
        )
        found = structured(
            await client.call_tool(
                "memory_search", {"query": "when does nia's train leave", "user_id": "nia"}
            )
        )
        got = structured(
            await client.call_tool(
                "memory_get", {"memory_id": added["memory_id"], "user_id": "nia"}
            )
        )
        empty = await client.call_tool("memory_add", {"content": "", "user_id": "nia"})
        other_user = await client.call_tool("memory_list", {"user_id": "noah"})
        with pytest.raises(MCPError, match="unknown tool"):
            await client.call_tool("memory_teleport", {})
    assert found["results"][0]["memory"]["id"] == added["memory_id"]
    with MemoryClient(server.base, api_key=keys["writer"]) as direct:
        read = direct.get(added["memory_id"], user_id="nia")  # the method's own result
    reading = {"access_count", "last_accessed_at"}  # each read counts
    assert {k: v for k, v in got.items() if k not in reading} == {
        k: v for k, v in read.items() if k not in reading
    }
    assert error_of(empty) == "INVALID_PARAMS"
    assert "content: String should have at least 1 character" in empty.content[0].text
    assert error_of(other_user) == "FORBIDDEN"


async def test_the_proxy_acts_as_the_key_of_its_environment(
    server: Server, keys: dict[str, str]
) -> None:
    """``AGENTCORE_URL`` and ``AGENTCORE_API_KEY``, as the CLI's client commands read them."""
    reader = proxy(server, AGENTCORE_URL=server.base, AGENTCORE_API_KEY=keys["reader"])
    async with Client(reader) as client:
        write = await client.call_tool("memory_add", {"content": "x", "user_id": "nia"})
        read = structured(await client.call_tool("memory_list", {"user_id": "nia"}))
    assert error_of(write) == "FORBIDDEN"
    assert read["total_count"] >= 0
    async with Client(proxy(server, "--url", server.base)) as client:
        anonymous = await client.call_tool("memory_list", {"user_id": "nia"})
    assert error_of(anonymous) == "UNAUTHORIZED"


async def test_a_service_out_of_reach_is_a_tool_error_naming_it(server: Server) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    async with Client(proxy(server, "--url", nowhere)) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("memory_search", {"query": "q", "user_id": "nia"})
    assert names >= REQUIRED_TOOLS  # listed without the service
    assert error_of(result) == "PROVIDER_ERROR"
    assert f"cannot reach the AgentCore service at {nowhere}/rpc" in result.content[0].text
    elsewhere = f"{server.base}/not-the-service"  # something answers, not JSON-RPC
    async with Client(proxy(server, "--url", elsewhere)) as client:
        result = await client.call_tool("memory_search", {"query": "q", "user_id": "nia"})
    assert error_of(result) == "PROVIDER_ERROR"
    assert f"service at {elsewhere}/rpc answered HTTP 404" in result.content[0].text


def test_a_second_process_on_a_served_directory_stops_at_once(
    server: Server, keys: dict[str, str]
) -> None:
    data_dir = server.env["AGENTCORE_DATA_DIR"]
    assert server.process is not None
    for argv in (["mcp"], ["serve", "--port", str(free_port())], ["migrate"]):
        started = time.monotonic()
        # A host keeps stdin open: the process must end on its own.
        with subprocess.Popen(
            [*AGENTCORE, *argv],
            env=server.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as second:
            stdout, stderr = second.communicate(timeout=30)
        elapsed = time.monotonic() - started
        lines = stderr.decode().splitlines()
        assert second.returncode != 0
        assert elapsed < 10, elapsed
        assert stdout == b""
        assert len(lines) == 1, lines
        assert data_dir in lines[0]
        assert f"process {server.process.pid} (agentcore serve at {server.base})" in lines[0]
        assert f"`agentcore mcp --url {server.base}`" in lines[0]
        assert "AGENTCORE_DATA_DIR" in lines[0]
    served = server.cli("list", "--user-id", "nia", "--api-key", keys["reader"])
    assert served.returncode == 0, served.stderr  # the owner serves on


class StdioHost:
    """The host's side of ``agentcore mcp``, line by line, to see when the process ends."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self._lines: queue.Queue[bytes] = queue.Queue()
        self._ids = itertools.count(1)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(b"")

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any], *, answer: bool = True) -> Any:
        number = next(self._ids)
        self.send({"id": number, "method": method, "params": params})
        while answer:
            line = self._lines.get(timeout=120)
            assert line, "agentcore mcp closed its stdout"
            reply = json.loads(line)
            if reply.get("id") == number:
                assert "error" not in reply, reply
                return reply["result"]
        return None

    def initialize(self) -> None:
        client = {"name": "host", "version": "1"}
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
        self.request("initialize", params)
        self.send({"method": "notifications/initialized"})

    def call(self, tool: str, arguments: dict[str, Any], *, answer: bool = True) -> Any:
        return self.request("tools/call", {"name": tool, "arguments": arguments}, answer=answer)

    def close_stdin(self) -> tuple[float, str]:
        """Close stdin; the seconds until the process ended, and its stderr."""
        started = time.monotonic()
        with self.process:  # closes its pipes
            assert self.process.stdin is not None
            assert self.process.stderr is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=60)
            finally:
                self.process.kill()
            elapsed = time.monotonic() - started
            return elapsed, self.process.stderr.read().decode()


@pytest.fixture
def silent_service() -> Iterator[str]:
    """An address that accepts connections and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def test_the_proxy_ends_when_stdin_closes_with_a_call_under_way(
    server: Server, silent_service: str
) -> None:
    environment = {k: v for k, v in server.env.items() if k != "AGENTCORE_DATA_DIR"}
    host = StdioHost([*AGENTCORE, "mcp", "--url", silent_service], environment)
    host.initialize()
    host.call("memory_search", {"query": "q", "user_id": "nia"}, answer=False)
    time.sleep(0.5)  # the call waits on the silent service
    elapsed, stderr = host.close_stdin()
    assert elapsed < 5, elapsed  # 2 s by design; slack for a loaded machine
    assert "Traceback" not in stderr, stderr


def test_the_local_server_ends_when_stdin_closes_with_work_under_way(tmp_path: Path) -> None:
    """A stage's compression waits on a model that takes a minute to answer."""
    model = FakeOpenAI(script=[Reply(delay=60.0)] * 4)
    with chat_server(model):
        environment = {
            **Server(tmp_path / "data").env,
            "COMPRESSION_ENGINE": "llm",
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": model.url,
        }
        host = StdioHost([*AGENTCORE, "mcp"], environment)
        host.initialize()
        scope = {"task_id": "t-slow", "user_id": "nia"}
        stage = host.call("stage_start", {**scope, "stage_type": "planning"})
        stage_id = stage["structuredContent"]["stage_id"]
        for region in ("EMEA", "APAC", "LATAM", "North America", "Nordics", "Benelux"):
            note = (
                f"Checked the {region} export: the totals in the quarterly sheet did not match "
                f"the ledger, so I re-ran the {region} extraction with the corrected currency "
                "table, compared every row against the warehouse, and wrote down which "
                "accounts still differ and by how much before moving on to the next region."
            )
            host.call("memory_add", {**scope, "content": note})  # enough to be compressed
        job = host.call("stage_complete", {**scope, "stage_id": stage_id, "wait": False})
        assert not job.get("isError"), job
        deadline = time.monotonic() + 30
        while not model.requests:  # the compression has asked the model
            assert time.monotonic() < deadline, "the compression never called the model"
            time.sleep(0.1)
        elapsed, stderr = host.close_stdin()
    assert elapsed < 5, elapsed
    assert "Traceback" not in stderr, stderr
