"""The README's quickstart as a newcomer runs it, top to bottom, against ``agentcore serve`` on
the embedded default: each block in order, each building on what the ones before stored.

- ``sh``: run by bash from the checkout (``localhost:8080`` is the test's server); it succeeds,
  each JSON-RPC reply is a result, and each search finds first the memory it asks about.
- ``python``: run in one namespace shared by the blocks, as one interpreter session;
  ``print(...)  # text`` must print that text.
- ``text``: what the block before it printed, exactly (times aside).
- ``json``: the MCP host's settings (``mcpServers``), then a ``tools/call`` request that host
  sends: the server of those settings answers it as the Python client answered the same
  method."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.server_process import Server

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)
CURL_BODY = re.compile(r"-d '(\{.*?\})'", re.DOTALL)
EXPECTED = re.compile(r"^print\(.*\)  # (.+)$", re.MULTILINE)
TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d")
# The answer each quickstart search asks for (a part of the memory it must find first).
ANSWERS = {"what does alice like to drink?": "green tea"}


def quickstart() -> list[tuple[str, str]]:
    """The (language, code) blocks of the section, up to the next heading outside a block."""
    lines = README.read_text(encoding="utf-8").split("\n## Quickstart\n", 1)[1].splitlines()
    fenced, section = False, []
    for line in lines:
        fenced ^= line.startswith("```")
        if not fenced and line.startswith("## "):
            break
        section.append(line)
    return BLOCK.findall("\n".join(section) + "\n")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = Server(tmp_path / "data")
    s.start()
    yield s
    s.stop()


def replies(output: str) -> list[Any]:
    """The JSON documents curl printed one after another."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while at < len(output.rstrip()):
        reply, at = decoder.raw_decode(output, at)
        found.append(reply)
        at += len(output[at:]) - len(output[at:].lstrip())
    return found


def run_shell(code: str, server: Server) -> str:
    script = code.replace("localhost:8080", f"127.0.0.1:{server.port}")
    env = {**server.env, "AGENTCORE_URL": server.base}
    done = subprocess.run(
        ["bash", "-c", f"set -euo pipefail\n{script}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, (code, done.stdout, done.stderr)
    bodies = [json.loads(body) for body in CURL_BODY.findall(code)]
    if bodies:
        answered = replies(done.stdout)
        assert len(answered) == len(bodies), done.stdout
        for body, reply in zip(bodies, answered, strict=True):
            assert "result" in reply, reply
            if body["method"] == "memory.search":
                top = reply["result"]["results"][0]["memory"]["content"]
                assert ANSWERS[body["params"]["query"]] in top.lower(), reply
    return done.stdout


def run_python(code: str, server: Server, namespace: dict[str, Any]) -> str:
    assert "MemoryClient()" not in code or "m = MemoryClient()" in code
    code = code.replace("MemoryClient()", f"MemoryClient({server.base!r})")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "README quickstart", "exec"), namespace)
    for expected in EXPECTED.findall(code):
        assert expected in printed.getvalue(), (expected, printed.getvalue())
    return printed.getvalue()


async def call_tool(settings: dict[str, Any], request: dict[str, Any], server: Server) -> Any:
    """The request, sent by an MCP client to the server the host's settings start."""
    (entry,) = settings["mcpServers"].values()
    assert Path(entry["command"]).name == "agentcore"
    args = [arg.replace("http://127.0.0.1:8080", server.base) for arg in entry["args"]]
    host = {key: value for key, value in server.env.items() if key != "AGENTCORE_DATA_DIR"}
    started = StdioServerParameters(
        command=sys.executable, args=["-m", "agentcore.cli", *args], env=host
    )
    assert request["method"] == "tools/call"
    async with Client(started) as client:
        called = await client.call_tool(request["params"]["name"], request["params"]["arguments"])
    assert not called.is_error, called
    return called.structured_content


async def test_the_quickstart_runs_top_to_bottom(server: Server) -> None:
    blocks = quickstart()
    kinds = [kind for kind, _ in blocks]
    assert kinds == ["sh", "python", "python", "python", "text", "json", "json", "sh"], kinds
    namespace: dict[str, Any] = {"__name__": "__main__"}
    printed, settings = "", None
    try:
        for kind, code in blocks:
            if kind == "sh":
                printed = run_shell(code, server)
            elif kind == "python":
                printed = run_python(code, server, namespace)
            elif kind == "text":
                assert TIME.sub("<time>", printed.strip()) == TIME.sub("<time>", code.strip())
            elif "mcpServers" in code:
                settings = json.loads(code)
            else:
                assert settings is not None, "the MCP settings come before the call"
                request = json.loads(code)
                answered = await call_tool(settings, request, server)
                assert answered == namespace["block"], "the tool answers as the client did"
    finally:
        namespace["m"].close()  # the newcomer's session would close it on exit
    assert "vegetarian" in printed, printed  # the CLI's search, last, finds alice's diet
