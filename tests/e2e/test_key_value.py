"""Key-value memories through the real app: upsert, exact read, listing, search, limits."""

from __future__ import annotations

from starlette.testclient import TestClient

from tests.e2e.test_rpc_api import result, rpc


def test_put_get_list_delete(client: TestClient) -> None:
    scope = {"agent_id": "kv-agent"}
    first = result(client, "memory.put", key="timezone", value="Europe/Paris", **scope)
    assert first["created"] is True
    again = result(
        client, "memory.put", key="timezone", value={"tz": "Asia/Tokyo", "dst": False}, **scope
    )
    assert again["created"] is False
    assert again["memory_id"] == first["memory_id"]
    value = result(client, "memory.get_value", key="timezone", **scope)
    assert value["value"] == {"tz": "Asia/Tokyo", "dst": False}
    result(client, "memory.put", key="retries", value=3, **scope)
    result(client, "memory.add", content="not a keyed memory", **scope)
    keys = result(client, "memory.list_keys", **scope)
    assert [k["key"] for k in keys["keys"]] == ["timezone", "retries"]
    assert keys["total_count"] == 2
    found = result(client, "memory.search", query="which timezone is the agent in?", **scope)
    assert found["results"][0]["memory"]["key"] == "timezone"
    assert result(client, "memory.delete_key", key="timezone", **scope) == {"deleted": True}
    assert result(client, "memory.delete_key", key="timezone", **scope) == {"deleted": False}
    missing = rpc(client, "memory.get_value", key="timezone", **scope)["error"]
    assert missing["data"]["code"] == "MEMORY_NOT_FOUND"


def test_keys_are_per_scope(client: TestClient) -> None:
    result(client, "memory.put", key="colour", value="green", user_id="kv-u1")
    result(client, "memory.put", key="colour", value="blue", user_id="kv-u2")
    assert result(client, "memory.get_value", key="colour", user_id="kv-u1")["value"] == "green"
    assert result(client, "memory.get_value", key="colour", user_id="kv-u2")["value"] == "blue"


def test_limits(client: TestClient) -> None:
    scope = {"user_id": "kv-limits"}
    assert result(client, "memory.put", key="k" * 256, value=1, **scope)["created"] is True
    long_key = rpc(client, "memory.put", key="k" * 257, value=1, **scope)["error"]
    assert long_key["data"]["errors"][0]["field"] == "key"
    big = rpc(client, "memory.put", key="big", value="x" * 1_000_001, **scope)["error"]
    assert big["data"]["code"] == "CONTENT_TOO_LONG"
    assert result(client, "memory.list_keys", **scope)["total_count"] == 1


def test_search_keys_ranks_exact_prefix_substring_then_value(client: TestClient) -> None:
    scope = {"user_id": "kv-search"}
    for key, value in [
        ("theme_dark", {"on": True}),
        ("theme", "light"),
        ("ui_theme_font", "serif"),
        ("editor", {"note": "the THEME follows the system"}),
        ("timezone", "UTC"),
    ]:
        result(client, "memory.put", key=key, value=value, **scope)
    hits = result(client, "memory.search_keys", query="Theme", **scope)["results"]
    assert [(h["key"], h["matched_field"], h["match"]) for h in hits] == [
        ("theme", "key", "exact"),
        ("theme_dark", "key", "prefix"),
        ("ui_theme_font", "key", "substring"),
        ("editor", "value", "substring"),
    ]
    assert hits[0]["value"] == "light"
    assert result(client, "memory.search_keys", query="100%", **scope)["results"] == []
    other = result(client, "memory.search_keys", query="theme", user_id="kv-other")["results"]
    assert other == []
