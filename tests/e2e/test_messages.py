"""mem0-style input: ``memory.add`` with ``messages``, over JSON-RPC on the embedded default."""

from __future__ import annotations

from starlette.testclient import TestClient

from tests.e2e.test_rpc_api import count, result, rpc

CONVERSATION = [
    {"role": "user", "content": "I'm vegetarian and I'm allergic to peanuts."},
    {"role": "assistant", "content": "Noted: no meat and nothing with peanuts."},
    {"role": "user", "content": "My sister Dana is visiting from Lisbon next week.", "name": "Ana"},
]


def test_messages_are_stored_as_a_conversation_with_roles(client: TestClient) -> None:
    scope = {"user_id": "mem0-alice"}
    added = result(client, "memory.add", messages=CONVERSATION, metadata={"app": "chat"}, **scope)
    assert len(added["memory_ids"]) == 3
    assert added["memory_id"] == added["memory_ids"][-1]
    stored = [result(client, "memory.get", memory_id=i, **scope) for i in added["memory_ids"]]
    assert [m["content"] for m in stored] == [m["content"] for m in CONVERSATION]
    assert [m["metadata"]["role"] for m in stored] == ["user", "assistant", "user"]
    assert [m["metadata"]["turn"] for m in stored] == [0, 1, 2]
    assert len({m["metadata"]["conversation_id"] for m in stored}) == 1
    assert all(m["metadata"]["app"] == "chat" for m in stored)
    assert stored[2]["metadata"]["name"] == "Ana"
    assert "name" not in stored[0]["metadata"]
    found = result(client, "memory.search", query="What food can't she eat?", **scope)
    # Her own words and the assistant's reply both say it; the visit does not.
    ranked = [hit["memory"]["id"] for hit in found["results"]]
    assert set(ranked[:2]) == set(added["memory_ids"][:2])


def test_messages_with_infer_extract_facts(client: TestClient) -> None:
    scope = {"user_id": "mem0-bob"}
    added = result(client, "memory.add", messages=CONVERSATION, infer=True, **scope)
    facts = added["facts"]
    assert facts, "the offline extractor finds facts in the user's messages"
    assert all(f["layer"] == "semantic" for f in facts)
    assert any("peanut" in f["content"].lower() for f in facts)


def test_messages_as_a_string_is_content(client: TestClient) -> None:
    scope = {"user_id": "mem0-carol"}
    added = result(client, "memory.add", messages="Carol prefers window seats.", **scope)
    assert added["memory_ids"] == [added["memory_id"]]
    assert added["memory"]["content"] == "Carol prefers window seats."


def test_bad_messages_are_refused_and_store_nothing(client: TestClient) -> None:
    scope = {"user_id": "mem0-dave"}
    bad = [
        {"messages": CONVERSATION, "content": "both"},
        {},
        {"messages": []},
        {"messages": [{"role": "robot", "content": "beep"}]},
        {"messages": [{"role": "user", "content": ""}]},
        {"messages": [{"role": "user"}]},
        {"messages": [{"role": "user", "content": "x", "extra": 1}]},
        {"messages": CONVERSATION, "key": "diet"},
        {"messages": [{"role": "user", "content": "x" * 20_000}]},
    ]
    for params in bad:
        error = rpc(client, "memory.add", **params, **scope)["error"]
        assert error["data"]["code"] in {"INVALID_PARAMS", "CONTENT_TOO_LONG"}, (params, error)
    assert count(client, **scope) == 0
