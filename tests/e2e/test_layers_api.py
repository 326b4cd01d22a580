"""The memory layers through the real app (embedded default): working, episodic, semantic,
procedural."""

from __future__ import annotations

from starlette.testclient import TestClient

from tests.e2e.test_rpc_api import result, rpc


def test_working_memory_evicts_into_episodes(client: TestClient) -> None:
    session = {"session_id": "e2e-wm", "user_id": "e2e-wm-user"}
    long_turn = "We planned the trip to Lisbon, the museum visit and the dinner at eight. " * 40
    evicted: list[str] = []
    for i in range(12):
        out = result(
            client, "memory.working.append", content=f"{i}: {long_turn}", role="user", **session
        )
        assert out["token_count"] <= out["max_tokens"]
        evicted += out["evicted_ids"]
    assert evicted, "the token bound must have evicted the oldest turns"
    view = result(client, "memory.working.get", session_id="e2e-wm")
    assert view["token_count"] <= view["max_tokens"]
    episodes = result(client, "memory.episodes.list", session_id="e2e-wm")
    assert sum(e["item_count"] for e in episodes["episodes"]) == len(evicted)
    flushed = result(client, "memory.working.flush", session_id="e2e-wm")
    assert flushed["flushed"] == len(view["items"])
    assert result(client, "memory.working.get", session_id="e2e-wm")["items"] == []
    listed = result(client, "memory.list", session_id="e2e-wm", layer="episodic", limit=100)
    assert listed["total_count"] == len(evicted) + flushed["flushed"]


def test_working_memory_refuses_other_layers_and_bad_input(client: TestClient) -> None:
    error = rpc(client, "memory.add", content="x", layer="working", user_id="u")["error"]
    assert error["data"]["code"] == "INVALID_LAYER"
    missing = rpc(client, "memory.working.append", content="hello")["error"]
    assert missing["code"] == -32602


def test_infer_extracts_facts_and_merges_duplicates(client: TestClient) -> None:
    first = result(
        client,
        "memory.add",
        content="I really love hiking in the mountains",
        user_id="e2e-fact",
        session_id="s1",
        infer=True,
    )
    assert first["facts"], "the offline extractor must find the preference"
    fact_id = first["facts"][0]["id"]
    second = result(
        client,
        "memory.add",
        content="Hiking in the mountains is what I love most",
        user_id="e2e-fact",
        session_id="s2",
        infer=True,
    )
    assert [f["id"] for f in second["facts"]] == [fact_id]
    fact = result(client, "memory.get", memory_id=fact_id, user_id="e2e-fact")
    assert fact["layer"] == "semantic"
    assert set(fact["metadata"]["source_ids"]) == {first["memory_id"], second["memory_id"]}


def test_procedures_form_after_three_records(client: TestClient) -> None:
    scope = {"agent_id": "e2e-proc"}
    outcomes = [True, True, False, True]
    last = {}
    for i, ok in enumerate(outcomes):
        last = result(
            client,
            "memory.procedure.record",
            action="retry the payment request with backoff",
            context=f"payment gateway returned HTTP 503 on order {i}",
            outcome="succeeded" if ok else "still failing",
            success=ok,
            **scope,
        )
    assert last["occurrences"] == 4
    assert last["success_rate"] == 0.75
    found = result(
        client, "memory.procedure.search", context="the payment provider answers 503", **scope
    )
    assert found["results"][0]["success_rate"] == 0.75
