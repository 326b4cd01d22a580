"""JSON-RPC calls through the real Starlette app on the embedded default."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from starlette.testclient import TestClient

_ids = itertools.count(1)


def rpc(client: TestClient, method: str, **params: Any) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "method": method, "params": params, "id": next(_ids)}
    response = client.post("/rpc", json=body)
    assert response.status_code == 200
    reply: dict[str, Any] = response.json()
    return reply


def result(client: TestClient, method: str, **params: Any) -> Any:
    reply = rpc(client, method, **params)
    assert "error" not in reply, reply
    return reply["result"]


def count(client: TestClient, **scope: str) -> int:
    total: int = result(client, "memory.list", **scope)["total_count"]
    return total


def test_add_then_search_returns_it_first(client: TestClient) -> None:
    scope = {"user_id": "e2e-search"}
    result(client, "memory.add", content="The deploy pipeline runs on Fridays", **scope)
    added = result(client, "memory.add", content="Caroline adopted a dog named Max", **scope)
    result(client, "memory.add", content="Quarterly revenue grew by four percent", **scope)
    found = result(client, "memory.search", query="What is the name of Caroline's dog?", **scope)
    top = found["results"][0]
    assert top["memory"]["id"] == added["memory_id"]
    assert set(top) >= {"memory", "score", "similarity", "factors", "layer", "scope"}
    assert set(top["factors"]) == {
        "similarity",
        "recency",
        "frequency",
        "stage_relevance",
        "criticality",
        "error_correction",
    }
    assert found["searched_scopes"] == ["user"]


def test_crud_and_history(client: TestClient) -> None:
    scope = {"agent_id": "e2e-crud"}
    added = result(client, "memory.add", content="v1", tags=["a"], metadata={"k": 1}, **scope)
    memory_id = added["memory_id"]
    updated = result(
        client, "memory.update", memory_id=memory_id, content="v2", metadata={"j": 2}, **scope
    )
    assert updated["metadata"] == {"k": 1, "j": 2}
    assert result(client, "memory.get", memory_id=memory_id, **scope)["content"] == "v2"
    assert result(client, "memory.delete", memory_id=memory_id, **scope) == {"deleted": True}
    assert result(client, "memory.delete", memory_id=memory_id, **scope) == {"deleted": False}
    kinds = [
        e["kind"] for e in result(client, "memory.history", memory_id=memory_id, **scope)["events"]
    ]
    assert kinds == ["add", "update", "delete"]
    gone = rpc(client, "memory.get", memory_id=memory_id, **scope)
    assert gone["error"]["data"]["code"] == "MEMORY_NOT_FOUND"


def test_list_paginates_and_clear_is_one_layer(client: TestClient) -> None:
    scope = {"project_id": "e2e-list"}
    batch = [{"content": f"note {i}", **scope} for i in range(7)]
    result(client, "memory.add_batch", items=batch)
    result(client, "memory.add", content="a fact", layer="semantic", **scope)
    seen, cursor = [], None
    while True:
        page = result(
            client,
            "memory.list",
            limit=3,
            layer="episodic",
            **scope,
            **({"cursor": cursor} if cursor else {}),
        )
        assert page["total_count"] == 7
        seen += [m["content"] for m in page["memories"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [f"note {i}" for i in reversed(range(7))]
    assert result(client, "memory.clear", layer="episodic", **scope) == {"deleted_count": 7}
    assert count(client, **scope) == 1


BAD_ADDS: list[tuple[str, dict[str, Any], int, str]] = [
    ("wrong type", {"content": 42, "user_id": "e2e-bad"}, -32602, "INVALID_PARAMS"),
    ("missing scope", {"content": "x"}, -32003, "MISSING_IDENTIFIER"),
    (
        "unknown layer",
        {"content": "x", "layer": "dreams", "user_id": "e2e-bad"},
        -32001,
        "INVALID_LAYER",
    ),
    ("oversize", {"content": "x" * 10_001, "user_id": "e2e-bad"}, -32007, "CONTENT_TOO_LONG"),
    (
        "unknown scope",
        {"content": "x", "scope": "galaxy", "user_id": "e2e-bad"},
        -32002,
        "INVALID_SCOPE",
    ),
    (
        "unknown param",
        {"content": "x", "user_id": "e2e-bad", "colour": "red"},
        -32602,
        "INVALID_PARAMS",
    ),
]


@pytest.mark.parametrize(
    ("case", "params", "number", "code"), BAD_ADDS, ids=[c[0] for c in BAD_ADDS]
)
def test_bad_input_gets_the_right_error_and_changes_nothing(
    client: TestClient, case: str, params: dict[str, Any], number: int, code: str
) -> None:
    before = count(client, user_id="e2e-bad")
    error = rpc(client, "memory.add", **params)["error"]
    assert (error["code"], error["data"]["code"]) == (number, code)
    assert error["data"]["retryable"] is False
    assert count(client, user_id="e2e-bad") == before


def test_field_errors_name_the_field(client: TestClient) -> None:
    error = rpc(client, "memory.search", query="q", limit="ten", user_id="u")["error"]
    assert error["data"]["errors"] == [
        {"field": "limit", "message": "Input should be a valid integer"}
    ]


def test_malformed_json_and_unknown_method(client: TestClient) -> None:
    reply = client.post("/rpc", content=b'{"jsonrpc": "2.0", "method"').json()
    assert reply["error"]["code"] == -32700
    assert rpc(client, "memory.teleport")["error"]["code"] == -32601


def test_a_body_over_16_mib_is_refused_declared_or_chunked(client: TestClient) -> None:
    big = (
        b'{"jsonrpc": "2.0", "id": 1, "method": "memory.health", "params": {"x": "'
        + (b"a" * (16 * 2**20))
        + b'"}}'
    )
    declared = client.post("/rpc", content=big)

    def chunks() -> Any:  # no content-length: the size is counted as the body arrives
        for start in range(0, len(big), 2**20):
            yield big[start : start + 2**20]

    chunked = client.post("/rpc", content=chunks())
    for response in (declared, chunked):
        assert response.status_code == 413
        assert response.json()["error"]["data"]["code"] == "INVALID_REQUEST"


def test_a_web_page_cannot_call_the_open_service(client: TestClient) -> None:
    # A page on another site may POST to a local service (a "simple" request, no preflight);
    # the browser marks it with Origin, which no agent sends.
    add = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "memory.add",
        "params": {"content": "planted by a web page", "user_id": "csrf"},
    }
    page = {"origin": "https://evil.example", "content-type": "text/plain"}
    refused = client.post("/rpc", content=json.dumps(add), headers=page)
    assert refused.status_code == 403
    assert refused.json()["error"]["data"]["code"] == "FORBIDDEN"
    mcp = client.post(
        "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=page
    )
    assert mcp.status_code == 403
    assert rpc(client, "memory.list", user_id="csrf")["result"]["total_count"] == 0


def test_a_mixed_batch_answers_each_member_and_stores_only_the_good(client: TestClient) -> None:
    scope = {"user_id": "e2e-batch"}
    batch = [
        {
            "jsonrpc": "2.0",
            "method": "memory.add",
            "params": {"content": "good one", **scope},
            "id": 1,
        },
        {"jsonrpc": "2.0", "method": "memory.add", "params": {"content": "no scope"}, "id": 2},
        {"jsonrpc": "2.0", "method": "memory.nope", "params": {}, "id": 3},
        {
            "jsonrpc": "2.0",
            "method": "memory.add",
            "params": {"content": "a notification", **scope},
        },
        {
            "jsonrpc": "2.0",
            "method": "memory.add",
            "params": {"content": "good two", **scope},
            "id": 4,
        },
        {"method": "memory.add", "id": 5},
    ]
    replies = {r["id"]: r for r in client.post("/rpc", json=batch).json()}
    assert set(replies) == {1, 2, 3, 4, 5}
    assert "result" in replies[1]
    assert "result" in replies[4]
    assert replies[2]["error"]["data"]["code"] == "MISSING_IDENTIFIER"
    assert replies[3]["error"]["code"] == -32601
    assert replies[5]["error"]["code"] == -32600
    assert count(client, **scope) == 3  # two good members and the notification


def test_a_notification_gets_no_body(client: TestClient) -> None:
    response = client.post("/rpc", json={"jsonrpc": "2.0", "method": "memory.health"})
    assert response.status_code == 204
    assert response.content == b""


def test_health_metrics_and_discover(client: TestClient) -> None:
    health = client.get("/health")
    assert health.status_code == 200
    assert health.json()["components"]["database"]["status"] == "up"
    assert result(client, "memory.health")["mode"] == "embedded"
    metrics = client.get("/metrics").text
    assert 'agentcore_rpc_requests_total{method="memory.health",outcome="ok"}' in metrics
    doc = result(client, "rpc.discover")
    names = {m["name"] for m in doc["methods"]}
    assert {"memory.add", "memory.search", "memory.list", "rpc.discover"} <= names
    add = next(m for m in doc["methods"] if m["name"] == "memory.add")
    content = next(p for p in add["params"] if p["name"] == "content")
    assert content["required"] is False  # content, or mem0-style messages
    assert "messages" in {p["name"] for p in add["params"]}
    search = next(m for m in doc["methods"] if m["name"] == "memory.search")
    assert next(p for p in search["params"] if p["name"] == "query")["required"] is True
    assert doc["components"]["errors"]["MEMORY_NOT_FOUND"]["code"] == -32004
