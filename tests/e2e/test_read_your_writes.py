"""Read-your-writes with vectors written behind the reply, over JSON-RPC on both backends: a
search right after an acknowledged write finds it by its words at once, and by its meaning at
once when its scope owes a few vectors (the search embeds them itself) or as soon as the
indexer has embedded it under a backlog; it never waits for the indexer."""

from __future__ import annotations

import time

from starlette.testclient import TestClient

from tests.e2e.test_rpc_api import result

BOARD = "The quarterly board meeting moved to Thursday afternoon."


def test_a_search_right_after_a_batch_finds_its_last_item(backends: TestClient) -> None:
    scope = {"user_id": "e2e-read-your-writes"}
    notes = [{"content": f"Note {i} about watering the tomatoes and the beans"} for i in range(99)]
    items = [{**item, **scope} for item in [*notes, {"content": BOARD}]]
    stored = result(backends, "memory.add_batch", items=items)["memory_ids"]
    by_words = result(backends, "memory.search", query="quarterly board", **scope)
    assert by_words["results"][0]["memory"]["id"] == stored[-1]
    deadline = time.monotonic() + 60
    while True:  # by meaning (no word in common) once its vector exists, written or not
        by_meaning = result(
            backends, "memory.search", query="when do the company directors get together", **scope
        )
        if by_meaning["results"] and by_meaning["results"][0]["memory"]["id"] == stored[-1]:
            break
        assert time.monotonic() < deadline, by_meaning["results"][:3]
        time.sleep(0.05)


def test_a_batch_that_waits_for_its_vectors_is_found_by_meaning_at_once(
    backends: TestClient,
) -> None:
    """More owed than a search embeds itself (100 > EMBED_NOW): without the wait the last
    item would be found by its words only until the indexer reached it."""
    scope = {"user_id": "e2e-wait-indexed"}
    notes = [{"content": f"Note {i} about pruning the apple trees and roses"} for i in range(99)]
    items = [{**item, **scope} for item in [*notes, {"content": BOARD}]]
    reply = result(backends, "memory.add_batch", items=items, wait_indexed=True)
    assert reply["indexed"] is True
    assert result(backends, "memory.health")["indexing_backlog"] == 0
    by_meaning = result(
        backends, "memory.search", query="when do the company directors get together", **scope
    )
    assert by_meaning["results"][0]["memory"]["id"] == reply["memory_ids"][-1]
    plain = result(backends, "memory.add_batch", items=[{"content": "One more note", **scope}])
    assert plain["indexed"] is None  # no wait asked: nothing said about the vectors


def test_a_search_under_a_backlog_of_thousands_does_not_wait_for_it(
    backends: TestClient,
) -> None:
    scope = {"user_id": "e2e-backlog"}
    for start in range(0, 3000, 100):
        batch = [
            {"content": f"Log line {n}: the nightly export wrote {n * 7} rows to S3", **scope}
            for n in range(start, start + 100)
        ]
        result(backends, "memory.add_batch", items=batch)
    added = result(
        backends, "memory.add", content="The parking garage code changed to 4471.", **scope
    )
    found = result(backends, "memory.search", query="parking garage code", **scope)
    # Another scope's write is found by its meaning at once: its search embeds it itself.
    mine = {"user_id": "e2e-beside-the-backlog"}
    board = result(backends, "memory.add", content=BOARD, **mine)
    meaning = result(
        backends, "memory.search", query="when do the company directors get together", **mine
    )
    owed = result(backends, "memory.health")["indexing_backlog"]

    assert found["results"][0]["memory"]["id"] == added["memory_id"]
    assert meaning["results"][0]["memory"]["id"] == board["memory_id"]
    assert meaning["results"][0]["similarity"] > 0  # no word in common: by its vector
    assert owed > 0, "the backlog was written before the searches answered: they waited"
