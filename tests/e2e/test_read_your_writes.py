"""Read-your-writes with vectors written behind the reply, over JSON-RPC on both backends: a
search right after an acknowledged write finds it by its words and by its meaning, even while
the vectors of a large batch are still being written (the search waits for its scope's)."""

from __future__ import annotations

from starlette.testclient import TestClient

from tests.e2e.test_rpc_api import result

BOARD = "The quarterly board meeting moved to Thursday afternoon."


def test_a_search_right_after_a_batch_finds_its_last_item(backends: TestClient) -> None:
    scope = {"user_id": "e2e-read-your-writes"}
    notes = [{"content": f"Note {i} about watering the tomatoes and the beans"} for i in range(99)]
    items = [{**item, **scope} for item in [*notes, {"content": BOARD}]]
    stored = result(backends, "memory.add_batch", items=items)["memory_ids"]
    by_meaning = result(
        backends, "memory.search", query="when do the company directors get together", **scope
    )
    assert by_meaning["results"][0]["memory"]["id"] == stored[-1]
    by_words = result(backends, "memory.search", query="quarterly board", **scope)
    assert by_words["results"][0]["memory"]["id"] == stored[-1]
