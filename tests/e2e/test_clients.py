"""Both clients over real HTTP against ``agentcore serve`` (embedded default, API keys on), and
a client call for every method ``rpc.discover`` lists."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentcore.client import AsyncMemoryClient, MemoryClient, RpcError, method_name
from tests.server_process import Server


@pytest.fixture(scope="module")
def api_key(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    keys_file = tmp_path_factory.mktemp("keys") / "keys.json"
    argv = [sys.executable, "-m", "agentcore.cli", "keys", "create", "--id", "clients"]
    argv += ["--access", "admin", "--file", str(keys_file)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    return keys_file, done.stdout.strip()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, api_key: tuple[Path, str]) -> Iterator[Server]:
    keys_file, _ = api_key
    s = Server(tmp_path_factory.mktemp("data"), env={"AGENTCORE_API_KEYS_FILE": str(keys_file)})
    s.start()
    yield s
    s.stop()


@pytest.fixture
def client(server: Server, api_key: tuple[Path, str]) -> Iterator[MemoryClient]:
    with MemoryClient(server.base, api_key=api_key[1]) as c:
        yield c


def test_every_discovered_method_has_a_client_call(client: MemoryClient) -> None:
    """Each method of rpc.discover is a client method that takes its required params by name
    and sends that method (to a recording transport: nothing is stored)."""
    sent: list[dict[str, Any]] = []

    def record(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(200, json={"jsonrpc": "2.0", "result": {}, "id": sent[-1]["id"]})

    methods = client.discover()["methods"]
    assert len(methods) >= 48
    missing = [m["name"] for m in methods if not hasattr(MemoryClient, method_name(m["name"]))]
    assert missing == [], f"no client call for {missing}"
    with MemoryClient(transport=httpx.MockTransport(record)) as recording:
        for method in methods:
            required = {p["name"]: _example(p["schema"]) for p in method["params"] if p["required"]}
            getattr(recording, method_name(method["name"]))(**required)
            assert sent[-1]["method"] == method["name"]
            assert sent[-1]["params"] == required
    missing_async = [
        m["name"] for m in methods if not hasattr(AsyncMemoryClient, method_name(m["name"]))
    ]
    assert missing_async == []


def _example(schema: dict[str, Any]) -> Any:
    return {"array": [], "boolean": True, "number": 0.5, "integer": 1}.get(
        schema.get("type", ""), "x"
    )


def test_the_sync_client_over_http(client: MemoryClient) -> None:
    added = client.add("Erin drinks oat milk flat whites", user_id="erin", tags=["coffee"])
    memory_id = added["memory_id"]
    assert client.get(memory_id, user_id="erin")["content"] == "Erin drinks oat milk flat whites"
    found = client.search("what coffee does erin drink", user_id="erin")
    assert found["results"][0]["memory"]["id"] == memory_id
    batch = client.add_batch([{"content": f"Erin's note {n}", "user_id": "erin"} for n in range(3)])
    assert len(batch["memory_ids"]) == 3
    assert client.list(user_id="erin", limit=10)["total_count"] == 4
    updated = client.update(memory_id, user_id="erin", tags=["coffee", "milk"])
    assert updated["tags"] == ["coffee", "milk"]
    assert client.delete(memory_id, user_id="erin") == {"deleted": True}
    with pytest.raises(RpcError) as raised:
        client.get(memory_id, user_id="erin")
    assert raised.value.code == "MEMORY_NOT_FOUND"
    assert not raised.value.retryable

    with pytest.raises(RpcError) as refused:
        client.search("", user_id="erin", limit=0)
    assert str(refused.value) == (
        "Invalid params (-32602): query: String should have at least 1 character; "
        "limit: Input should be greater than or equal to 1"
    )
    assert [e["field"] for e in refused.value.data["errors"]] == ["query", "limit"]

    started = client.stage_start("task-erin", "planning")
    assert client.stage_current("task-erin")["stage"]["id"] == started["stage_id"]
    client.add("Never deploy on Fridays", task_id="task-erin", critical=True)
    completed = client.stage_complete("task-erin", started["stage_id"])
    assert completed["stage"]["status"] == "completed"
    assert client.stage_current("task-erin")["stage"] is None

    recorded = client.error_record("task-erin", "missing_info", "no schema given", 0.6)
    client.error_record("task-erin", "missing_info", "no schema given again", 0.5)
    history = client.error_history(task_id="task-erin")
    assert history["count"] == 2
    assert recorded["error_id"] in {e["error_id"] for e in history["errors"]}
    patterns = client.error_patterns(task_id="task-erin")
    assert patterns["analysed_errors"] == 2

    conversation = [
        {"role": "user", "content": "I'm vegetarian and allergic to nuts."},
        {"role": "assistant", "content": "Noted: vegetarian, no nuts."},
    ]
    said = client.add(conversation, user_id="erin-chat")  # mem0's m.add(messages, user_id=...)
    assert len(said["memory_ids"]) == 2
    stored = client.get(said["memory_ids"][0], user_id="erin-chat")
    assert stored["content"] == "I'm vegetarian and allergic to nuts."

    client.working_append("s-erin", "the user asked for a refund", role="user")
    items = client.working_get("s-erin")
    assert [i["content"] for i in items["items"]] == ["the user asked for a refund"]
    assert client.health()["status"] == "ok"


async def test_the_async_client_over_http(server: Server, api_key: tuple[Path, str]) -> None:
    async with AsyncMemoryClient(server.url, api_key=api_key[1]) as client:
        added = await client.add("Frank keeps bees", user_id="frank")
        found = await client.search("who keeps bees", user_id="frank")
        listed = await client.list(user_id="frank")
        assert (await client.get(added["memory_id"], user_id="frank"))[
            "content"
        ] == "Frank keeps bees"
        assert found["results"][0]["memory"]["id"] == added["memory_id"]
        assert listed["total_count"] == 1
        assert await client.put("hive", {"count": 3}, user_id="frank") is not None
        assert (await client.get_value("hive", user_id="frank"))["value"] == {"count": 3}
        started = await client.stage_start("task-frank", "execution")
        assert (await client.stage_get(started["stage_id"]))["stage"]["task_id"] == "task-frank"
        assert (await client.call("memory.health"))["status"] == "ok"
        assert await client.delete(added["memory_id"], user_id="frank") == {"deleted": True}
        methods = {m["name"] for m in (await client.discover())["methods"]}
    assert "memory.ace.strategic_context" in methods


def test_without_the_key_the_call_is_refused(server: Server) -> None:
    with MemoryClient(server.base) as anonymous, pytest.raises(RpcError) as raised:
        anonymous.list(user_id="erin")
    assert raised.value.code == "UNAUTHORIZED"
    assert not raised.value.retryable
