"""``memory.list`` as the memory browser pages it: sorted by importance with a keyset cursor,
superseded memories with the rest, hidden or alone, and expired ones on request."""

from __future__ import annotations

import time
from typing import Any

from starlette.testclient import TestClient

from tests.e2e.test_rpc_api import result, rpc


def _pages(client: TestClient, **params: Any) -> list[dict[str, Any]]:
    """Every memory, three at a time, following the cursors."""
    found: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = result(client, "memory.list", limit=3, cursor=cursor, **params)
        found += page["memories"]
        cursor = page["next_cursor"]
        if cursor is None:
            return found


def test_sorted_by_importance_pages_through_ties(backends: TestClient) -> None:
    scope = {"user_id": "list-importance"}
    importances = [0.2, 0.9, 0.5, 0.9, 0.1, 0.7, 0.5, 0.5]
    for i, importance in enumerate(importances):
        text = f"Note {i}: the build server in rack {i} needs a new fan"
        result(backends, "memory.add", content=text, importance=importance, **scope)

    def key(m: dict[str, Any]) -> tuple[float, str, str]:
        return (m["importance"], m["created_at"], m["id"])

    by_time = _pages(backends, **scope)
    descending = _pages(backends, sort="importance", **scope)
    ascending = _pages(backends, sort="importance", order="asc", **scope)
    assert len(descending) == len(ascending) == len(importances)
    assert descending == sorted(by_time, key=key, reverse=True)
    assert ascending == sorted(by_time, key=key)

    first = result(backends, "memory.list", limit=3, **scope)
    ranked = result(backends, "memory.list", limit=3, sort="importance", **scope)
    for cursor, sort in ((first["next_cursor"], "importance"), (ranked["next_cursor"], None)):
        params = {"sort": sort} if sort else {}
        refused = rpc(backends, "memory.list", cursor=cursor, **params, **scope)
        assert refused["error"]["data"]["code"] == "INVALID_PARAMS"
        assert refused["error"]["data"]["errors"][0]["field"] == "cursor"


def test_superseded_shown_hidden_or_alone(backends: TestClient) -> None:
    scope = {"user_id": "list-superseded"}
    old = result(backends, "memory.add", content="Lisa lives in Lisbon", **scope)["memory_id"]
    new = result(backends, "memory.add", content="Lisa moved to Porto last month", **scope)
    assert (
        result(backends, "memory.get", memory_id=old, **scope)["superseded_by"] == new["memory_id"]
    )

    def ids(**params: Any) -> list[str]:
        page = result(backends, "memory.list", **params, **scope)
        return [m["id"] for m in page["memories"]]

    assert ids() == [new["memory_id"], old]
    assert ids(superseded="exclude") == [new["memory_id"]]
    assert ids(superseded="only") == [old]
    refused = rpc(backends, "memory.list", superseded="never", **scope)
    assert refused["error"]["data"]["code"] == "INVALID_PARAMS"


def test_expired_memories_on_request(client: TestClient) -> None:
    scope = {"user_id": "list-expired"}
    kept = result(client, "memory.add", content="The office opens at nine", **scope)
    brief = result(
        client, "memory.add", content="The lift is out of order today", ttl_seconds=1, **scope
    )
    time.sleep(1.2)  # past its expiry; the sweep (every 300 s here) has not deleted it
    live = result(client, "memory.list", **scope)["memories"]
    every = result(client, "memory.list", include_expired=True, **scope)["memories"]
    assert [m["id"] for m in live] == [kept["memory_id"]]
    assert [m["id"] for m in every] == [brief["memory_id"], kept["memory_id"]]
