"""memory.export and memory.import over JSON-RPC, on each backend: paged records with
provenance, idempotent import, foreign records refused with nothing stored."""

from __future__ import annotations

from starlette.testclient import TestClient

from tests.e2e.test_rpc_api import result, rpc


def test_export_pages_and_import_restores_once(backends: TestClient) -> None:
    scope = {"user_id": "tr-user"}
    for n in range(7):
        result(
            backends,
            "memory.add",
            content=f"Fact {n} about the tr project.",
            tags=["t"],
            metadata={"n": n},
            importance=0.6,
            **scope,
        )
    result(backends, "memory.add", content="A semantic fact.", layer="semantic", **scope)
    records, cursor = [], None
    while True:
        page = result(
            backends, "memory.export", limit=3, **scope, **({"cursor": cursor} if cursor else {})
        )
        records += page["records"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert page["total_count"] == 8
    assert [r["content"] for r in records][:2] == [
        "Fact 0 about the tr project.",
        "Fact 1 about the tr project.",
    ]
    first = records[0]
    assert (first["user_id"], first["tags"], first["metadata"], first["importance"]) == (
        "tr-user",
        ["t"],
        {"n": 0},
        0.6,
    )
    semantic = result(backends, "memory.export", layers=["semantic"], **scope)["records"]
    assert [r["content"] for r in semantic] == ["A semantic fact."]

    target = {"user_id": "tr-user"}
    for r in records:
        result(backends, "memory.delete", memory_id=r["original_id"], **target)
    done = result(backends, "memory.import", records=records, **target)
    assert (len(done["imported"]), done["skipped"]) == (8, [])
    again = result(backends, "memory.import", records=records, **target)
    assert (again["imported"], len(again["skipped"])) == ([], 8)
    listed = result(backends, "memory.list", limit=100, **target)["memories"]
    assert len(listed) == 8
    restored = next(m for m in listed if m["content"] == "Fact 0 about the tr project.")
    assert restored["created_at"][:19] == first["created_at"][:19]
    found = result(backends, "memory.search", query="the semantic fact", **target)["results"]
    assert found[0]["memory"]["content"] == "A semantic fact."  # re-embedded and indexed


def test_import_refuses_foreign_records_and_stores_nothing(backends: TestClient) -> None:
    record = {"original_id": "x1", "content": "Someone else's note.", "user_id": "intruder"}
    mine = {"original_id": "x2", "content": "My note.", "user_id": "tr-owner"}
    refused = rpc(backends, "memory.import", records=[mine, record], user_id="tr-owner")["error"]
    assert (refused["code"], refused["data"]["code"]) == (-32013, "FORBIDDEN")
    assert result(backends, "memory.list", user_id="tr-owner")["total_count"] == 0
    bad = rpc(backends, "memory.import", records=[{"content": "no id"}], user_id="tr-owner")
    assert bad["error"]["code"] == -32602
    expired = {**mine, "expires_at": "2020-01-01T00:00:00Z"}
    report = result(backends, "memory.import", records=[expired], user_id="tr-owner")
    assert report["expired"] == ["x2"]
    assert result(backends, "memory.list", user_id="tr-owner")["total_count"] == 0


def test_a_keyed_record_whose_key_the_scope_holds_is_skipped(backends: TestClient) -> None:
    """Values and store items keep their key: importing a scope's export into it again, or a
    record for a key set since, keeps the value there and imports the rest."""
    scope = {"user_id": "tr-keys"}
    result(backends, "memory.put", key="theme", value={"mode": "dark"}, **scope)
    op = {"op": "put", "namespace": ["prefs"], "key": "lang", "value": {"v": "pt"}, **scope}
    result(backends, "memory.store.batch", ops=[op])
    result(backends, "memory.add", content="Plain memory of the keyed scope.", **scope)
    records = result(backends, "memory.export", **scope)["records"]
    assert len(records) == 3
    done = result(backends, "memory.import", records=records, **scope)
    assert (len(done["imported"]), len(done["skipped"])) == (1, 2)  # the plain one: a copy
    value = result(backends, "memory.get_value", key="theme", **scope)
    assert value["value"] == {"mode": "dark"}
