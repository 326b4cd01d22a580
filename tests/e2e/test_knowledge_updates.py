"""Knowledge that updates, over JSON-RPC on both backends (SQLite and PostgreSQL): a newer
value supersedes the old one on write, ranks first, shows why, and ``as_of`` reads the past."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from starlette.testclient import TestClient

from tests.e2e.test_rpc_api import result


def test_a_move_supersedes_the_old_home(backends: TestClient) -> None:
    scope = {"user_id": "e2e-moves"}
    berlin = result(backends, "memory.add", content="I live in Berlin.", **scope)["memory_id"]
    result(backends, "memory.add", content="My brother lives in Oslo.", **scope)
    result(backends, "memory.add", content="I love hiking on weekends.", **scope)
    time.sleep(0.01)
    before_the_move = datetime.now(UTC).isoformat()
    time.sleep(0.01)
    added = result(backends, "memory.add", content="I moved to Munich last month.", **scope)
    munich = added["memory_id"]
    assert added["memory"]["fact_slot"] == "user|home"

    found = result(backends, "memory.search", query="Where does the user live now?", **scope)
    hits = found["results"]
    assert (hits[0]["memory"]["id"], hits[0]["current_for"]) == (munich, "user|home")
    stale = next(h for h in hits if h["memory"]["id"] == berlin)
    assert stale["superseded_by"] == munich
    assert hits.index(stale) > 0

    old = result(backends, "memory.get", memory_id=berlin, **scope)
    assert old["superseded_by"] == munich
    assert old["valid_to"] is not None
    events = result(backends, "memory.history", memory_id=berlin, **scope)["events"]
    assert [e["actor"] for e in events] == ["api", "supersession"]

    past = result(
        backends,
        "memory.search",
        query="Where does the user live?",
        as_of=before_the_move,
        **scope,
    )["results"]
    assert munich not in [h["memory"]["id"] for h in past]
    assert past[0]["memory"]["id"] == berlin
    assert past[0]["superseded_by"] is None


def test_extracted_facts_update_too(backends: TestClient) -> None:
    scope = {"user_id": "e2e-fact-moves"}
    first = result(backends, "memory.add", content="I work at Initech.", infer=True, **scope)
    (fact,) = first["facts"]
    assert (fact["content"], fact["fact_slot"]) == ("The user works at Initech", "user|employer")
    second = result(
        backends, "memory.add", content="I just joined Globex as an engineer.", infer=True, **scope
    )
    for stale in (first["memory_id"], fact["id"]):
        memory = result(backends, "memory.get", memory_id=stale, **scope)
        assert memory["superseded_by"] == second["memory_id"]
    found = result(backends, "memory.search", query="Who does the user work for?", **scope)
    assert found["results"][0]["memory"]["content"] in (
        "I just joined Globex as an engineer.",
        "The user joined Globex as an engineer",
    )
