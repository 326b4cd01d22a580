"""Exact duplicates over JSON-RPC, on each backend: the same text added twice to one scope and
layer is stored once, the repeat answers with the stored memory and counts an access."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from starlette.testclient import TestClient

from tests.e2e.test_rpc_api import result

TEA = "I prefer green tea in the morning."


def listed(client: TestClient, **scope: str) -> list[str]:
    return [m["content"] for m in result(client, "memory.list", **scope)["memories"]]


def test_a_repeated_text_is_stored_once_and_answers_with_the_first(backends: TestClient) -> None:
    user = {"user_id": "dup-alice"}
    first = result(backends, "memory.add", content=TEA, **user)
    again = result(backends, "memory.add", content=f"  {TEA.replace(' ', '  ')}\n", **user)

    assert first["deduplicated"] is False
    assert (again["memory_id"], again["deduplicated"]) == (first["memory_id"], True)
    assert again["memory"]["access_count"] == first["memory"]["access_count"] + 1
    assert listed(backends, **user) == [TEA]
    hits = result(backends, "memory.search", query="what does alice drink", **user)["results"]
    assert [h["memory"]["id"] for h in hits] == [first["memory_id"]]
    stored = result(backends, "memory.get", memory_id=first["memory_id"], **user)
    assert stored["access_count"] >= 2  # the repeat and the get


def test_another_scope_layer_case_or_a_conversation_is_not_a_repeat(backends: TestClient) -> None:
    user = {"user_id": "dup-bob"}
    first = result(backends, "memory.add", content=TEA, **user)["memory_id"]
    others = [
        result(backends, "memory.add", content=TEA, user_id="dup-carol"),
        result(backends, "memory.add", content=TEA, layer="semantic", **user),
        result(backends, "memory.add", content=TEA.lower(), **user),
        result(backends, "memory.add", content=TEA, key="drink", **user),
    ]
    assert all(not o["deduplicated"] and o["memory_id"] != first for o in others)
    talk = result(
        backends,
        "memory.add",
        messages=[
            {"role": "user", "content": "ok"},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "ok"},
        ],
        session_id="dup-chat",
    )
    assert len(set(talk["memory_ids"])) == 3  # each message is a turn of its own
    task = {"task_id": "dup-task"}
    ran = "Ran the test suite: 143 tests passed."
    by_stage = []
    for stage_type in ("planning", "verification"):
        result(backends, "memory.stage.start", stage_type=stage_type, **task)
        by_stage += [result(backends, "memory.add", content=ran, **task) for _ in range(2)]
    assert [a["deduplicated"] for a in by_stage] == [False, True, False, True]
    assert by_stage[0]["memory_id"] != by_stage[2]["memory_id"]  # each stage keeps its record


def test_a_batch_and_concurrent_callers_store_one(backends: TestClient) -> None:
    user = {"user_id": "dup-dave"}
    text = "The staging database is read-only on Sundays."
    batch = result(
        backends,
        "memory.add_batch",
        items=[
            {"content": text, **user},
            {"content": "Deploys go through the blue pool first.", **user},
            {"content": text, **user},
        ],
    )
    ids = batch["memory_ids"]
    assert ids[0] == ids[2] != ids[1]
    assert batch["deduplicated"] == [ids[2]]

    racing = "The on-call phone is with Mira this week."
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(
            pool.map(lambda _: result(backends, "memory.add", content=racing, **user), range(16))
        )
    assert len({a["memory_id"] for a in answers}) == 1
    assert sum(not a["deduplicated"] for a in answers) == 1
    assert sorted(listed(backends, **user)) == sorted(
        [text, "Deploys go through the blue pool first.", racing]
    )


def test_a_deleted_or_expired_memory_is_not_repeated(backends: TestClient) -> None:
    user = {"user_id": "dup-erin"}
    text = "Erin's badge number is 4471."
    gone = result(backends, "memory.add", content=text, **user)["memory_id"]
    assert result(backends, "memory.delete", memory_id=gone, **user)["deleted"]
    back = result(backends, "memory.add", content=text, ttl_seconds=1, **user)
    assert (back["deduplicated"], back["memory_id"] != gone) == (False, True)
    time.sleep(1.2)
    fresh = result(backends, "memory.add", content=text, **user)
    assert (fresh["deduplicated"], fresh["memory_id"] != back["memory_id"]) == (False, True)
