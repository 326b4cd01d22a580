"""The real server process: crash safety (kill -9 right after an acknowledged add) and the CLI."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agentcore.client import AsyncMemoryClient
from tests.server_process import Server


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = Server(tmp_path / "data")
    s.start()
    yield s
    s.stop()


async def test_kill_9_after_add_loses_nothing(server: Server) -> None:
    async with AsyncMemoryClient(server.url) as client:
        added = await client.add("The staging password rotates every 30 days", user_id="ops")
    server.kill(signal.SIGKILL)  # no shutdown hook runs: nothing is flushed on the way out
    server.start()
    async with AsyncMemoryClient(server.url) as client:
        stored = await client.get(added["memory_id"], user_id="ops")
        found = await client.search("how often does the staging password rotate", user_id="ops")
    assert stored["content"] == "The staging password rotates every 30 days"
    assert found["results"][0]["memory"]["id"] == added["memory_id"]


def test_cli_talks_to_a_running_server(server: Server) -> None:
    added = server.cli(
        "add", "Bob is allergic to peanuts", "--user-id", "bob", "--tags", "health", "--json"
    )
    assert added.returncode == 0, added.stderr
    memory_id = json.loads(added.stdout)["memory_id"]
    found = server.cli("search", "what is bob allergic to", "--user-id", "bob", "--json").stdout
    assert json.loads(found.splitlines()[0])["memory"]["id"] == memory_id  # JSON Lines
    listed = server.cli("list", "--user-id", "bob", "--json").stdout.splitlines()
    assert [json.loads(line)["id"] for line in listed] == [memory_id]
    got = json.loads(server.cli("get", memory_id, "--user-id", "bob", "--json").stdout)
    assert got["tags"] == ["health"]
    assert json.loads(server.cli("delete", memory_id, "--user-id", "bob", "--json").stdout) == {
        "deleted": True
    }
    missing = server.cli("get", memory_id, "--user-id", "bob")
    assert missing.returncode == 1
    assert "MEMORY_NOT_FOUND" in missing.stderr


def rpc(server: Server, method: str, **params: object) -> object:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    reply = httpx.post(server.url, json=body, timeout=60).json()
    assert "error" not in reply, reply
    return reply["result"]


def test_cli_exports_and_imports_a_scope(server: Server, tmp_path: Path) -> None:
    items = [
        {"content": f"Note {n}: the build took {n} seconds.", "user_id": "exp"} for n in range(120)
    ]
    for start in (0, 100):  # more than one import batch
        rpc(server, "memory.add_batch", items=items[start : start + 100])
    exported = server.cli("--user-id", "exp", command="export")
    assert exported.returncode == 0, exported.stderr
    lines = exported.stdout.splitlines()
    assert len(lines) == 120
    assert "exported 120/120" in exported.stderr
    backup = tmp_path / "backup.jsonl"
    backup.write_text(exported.stdout)
    # the same user's memories restored into an emptied scope, then once more: one copy
    for memory_id in [json.loads(line)["original_id"] for line in lines]:
        rpc(server, "memory.delete", memory_id=memory_id, user_id="exp")
    first = server.cli(str(backup), "--user-id", "exp", "--json", command="import")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == {"imported": 120, "skipped": 0, "expired": 0}
    again = json.loads(
        server.cli(str(backup), "--user-id", "exp", "--json", command="import").stdout
    )
    assert again == {"imported": 0, "skipped": 120, "expired": 0}
    listed = server.cli("list", "--user-id", "exp", "--limit", "1", "--json")
    assert len(listed.stdout.splitlines()) == 1
    assert listed.stderr.startswith("1 of 120; next page: --cursor ")
    foreign = server.cli(str(backup), "--user-id", "someone-else", command="import")
    assert foreign.returncode == 1
    assert "FORBIDDEN" in foreign.stderr
