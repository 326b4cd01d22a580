"""The memory lifecycle over JSON-RPC through the real app, embedded and on PostgreSQL + Redis:
importance and sensitivity, session close with promotion and PII redaction, promote, compact,
expiry; bad input gets a stable code and changes nothing."""

from __future__ import annotations

import time
from typing import Any

from starlette.testclient import TestClient

from tests.e2e.test_rpc_api import result, rpc


def add(client: TestClient, content: str, **params: Any) -> dict[str, Any]:
    added: dict[str, Any] = result(client, "memory.add", content=content, **params)
    return added["memory"]


def contents(client: TestClient, **scope: Any) -> list[str]:
    return [m["content"] for m in result(client, "memory.list", **scope)["memories"]]


def test_importance_is_scored_or_given_and_sensitivity_is_kept(backends: TestClient) -> None:
    scope = {"user_id": "imp-user"}
    assert add(backends, "I prefer green tea in the morning.", **scope)["importance"] == 0.8
    assert add(backends, "ok", **scope)["importance"] == 0.3
    assert add(backends, "Took the bus today.", **scope)["importance"] == 0.5
    given = add(backends, "Took the train today.", importance=0.65, sensitive=True, **scope)
    assert (given["importance"], given["sensitive"]) == (0.65, True)
    bad = rpc(backends, "memory.add", content="x", importance=1.5, **scope)["error"]
    assert bad["code"] == -32602


def test_session_close_promotes_what_matters_redacted_once(backends: TestClient) -> None:
    session = {"session_id": "s-close", "user_id": "close-user"}
    kept = add(
        backends,
        "I prefer window seats; mail me at close.user@example.com.",
        scope="session",
        **session,
    )
    small = add(backends, "ok", scope="session", **session)
    secret = add(
        backends,
        "My password: Hunter2!2024 for the portal.",
        importance=0.9,
        scope="session",
        **session,
    )
    private = add(backends, "I live in Lisbon.", sensitive=True, scope="session", **session)
    result(
        backends,
        "memory.working.append",
        session_id="s-close",
        content="Remember that my daughter Lia's phone is +1 415-555-0134.",
        role="user",
    )

    report = result(backends, "memory.session.close", **session)

    assert report["flushed_working"] == 1
    assert report["consolidated_facts"] >= 1  # episodic → semantic on close
    assert report["evaluated"] == 5 + report["consolidated_facts"]
    promoted = {p["promoted_from_id"]: p for p in report["promoted"]}
    assert kept["id"] in promoted
    assert small["id"] not in promoted
    assert promoted[kept["id"]]["redacted"] == {"email": 1}
    assert report["redacted"] == {"email": 1, "phone": 1}
    assert {secret["id"], private["id"]} <= set(report["skipped_sensitive"])
    assert report["below_threshold"] >= 1
    facts = result(backends, "memory.list", layer="semantic", scope="session", **session)
    from_private = [
        f for f in facts["memories"] if private["id"] in f["metadata"].get("source_ids", [])
    ]
    assert from_private
    assert all(f["sensitive"] for f in from_private)  # a fact of a sensitive memory is too
    at_user = result(backends, "memory.list", user_id="close-user", scope="user")["memories"]
    assert len(at_user) == 2
    assert all("[REDACTED]" in m["content"] for m in at_user)
    assert all(m["promoted_from_id"] and m["created_in_session_id"] == "s-close" for m in at_user)
    found = result(
        backends, "memory.search", query="window seats", user_id="close-user", scopes=["user"]
    )["results"]
    assert found[0]["memory"]["promoted_from_id"] == kept["id"]

    again = result(backends, "memory.session.close", **session)
    assert again["promoted"] == []
    assert len(again["already_promoted"]) == 2
    assert len(contents(backends, user_id="close-user", scope="user")) == 2


def test_promote_upward_only_with_history_on_both(backends: TestClient) -> None:
    agent = {"agent_id": "pr-agent", "project_id": "pr-project"}
    memory = add(backends, "Deploys go through the blue pool first.", **agent)
    assert memory["scope"] == "agent"
    promoted = result(
        backends, "memory.promote", memory_id=memory["id"], target_scope="project", **agent
    )
    new = promoted["memory"]
    assert (new["scope"], new["project_id"], new["promoted_from_id"]) == (
        "project",
        "pr-project",
        memory["id"],
    )
    source_events = result(backends, "memory.history", memory_id=memory["id"], **agent)["events"]
    new_events = result(backends, "memory.history", memory_id=new["id"], **agent)["events"]
    assert source_events[-1]["kind"] == "promote"
    assert source_events[-1]["after"] == {"into": new["id"]}
    assert new_events[0]["kind"] == "promote"
    assert new_events[0]["before"] == {"from": [memory["id"]]}

    down = rpc(
        backends,
        "memory.promote",
        memory_id=new["id"],
        target_scope="user",
        user_id="someone",
        **agent,
    )["error"]
    assert down["data"]["code"] == "INVALID_PROMOTION"
    # not allowed by the hierarchy (down to a volatile level, the same level, a volatile
    # source's own kind) is told apart from a malformed call
    for target, ids in (("session", {"session_id": "s1"}), ("agent", {}), ("project", {})):
        refused = rpc(
            backends,
            "memory.promote",
            memory_id=new["id"] if target != "agent" else memory["id"],
            target_scope=target,
            **agent,
            **ids,
        )["error"]
        assert (refused["code"], refused["data"]["code"]) == (-32015, "INVALID_PROMOTION")
        assert refused["data"]["target_scope"] == target
    malformed = rpc(
        backends, "memory.promote", memory_id=new["id"], target_scope="galaxy", **agent
    )["error"]
    assert (malformed["code"], malformed["data"]["code"]) == (-32602, "INVALID_PARAMS")
    no_id = rpc(backends, "memory.promote", memory_id=memory["id"], target_scope="team", **agent)[
        "error"
    ]
    assert no_id["data"]["code"] == "MISSING_IDENTIFIER"
    other = rpc(
        backends,
        "memory.promote",
        memory_id=memory["id"],
        target_scope="project",
        agent_id="stranger",
        project_id="pr-project",
    )["error"]
    assert other["data"]["code"] == "MEMORY_NOT_FOUND"
    assert len(contents(backends, project_id="pr-project", scope="project")) == 1  # nothing new

    moved = add(backends, "The staging database is read-only on Sundays.", **agent)
    result(
        backends,
        "memory.promote",
        memory_id=moved["id"],
        target_scope="project",
        delete_original=True,
        **agent,
    )
    gone = rpc(backends, "memory.get", memory_id=moved["id"], **agent)["error"]
    assert gone["data"]["code"] == "MEMORY_NOT_FOUND"


def test_compact_merges_and_hides_the_originals(backends: TestClient) -> None:
    scope = {"user_id": "cp-user"}
    first = add(backends, "The build runs on Node 20 and takes nine minutes.", tags=["ci"], **scope)
    second = add(backends, "The build takes nine minutes. Caching would halve it.", **scope)
    third = add(backends, "Lunch is at noon on Fridays.", **scope)

    compacted = result(backends, "memory.compact", memory_ids=[first["id"], second["id"]], **scope)

    assert compacted["content"] == (  # the restatement is left out
        "The build runs on Node 20 and takes nine minutes. Caching would halve it."
    )
    assert compacted["compacted_from_ids"] == [first["id"], second["id"]]
    assert compacted["tags"] == ["ci"]
    listed = result(backends, "memory.list", **scope)["memories"]
    assert {m["id"] for m in listed} == {compacted["id"], third["id"]}
    hits = result(backends, "memory.search", query="how long does the build take", **scope)
    assert first["id"] not in {h["memory"]["id"] for h in hits["results"]}
    assert result(backends, "memory.get", memory_id=first["id"], **scope)["id"] == first["id"]
    events = result(backends, "memory.history", memory_id=second["id"], **scope)["events"]
    assert events[-1]["kind"] == "compact"

    other = add(backends, "A memory of someone else.", user_id="cp-other")
    mixed = rpc(
        backends, "memory.compact", memory_ids=[third["id"], other["id"]], user_id="cp-user"
    )
    assert mixed["error"]["data"]["code"] == "MEMORY_NOT_FOUND"  # not visible to this caller
    both = {"user_id": "cp-user", "agent_id": "cp-agent"}
    agents = add(backends, "An agent memory.", **both)
    across = rpc(backends, "memory.compact", memory_ids=[third["id"], agents["id"]], **both)
    assert across["error"]["data"]["code"] == "INVALID_SCOPE"
    twice = rpc(backends, "memory.compact", memory_ids=[first["id"], third["id"]], **scope)
    assert twice["error"]["data"]["code"] == "INVALID_STATE"
    assert {m["id"] for m in result(backends, "memory.list", **scope)["memories"]} == {
        compacted["id"],
        third["id"],
    }


def test_expiry_hides_at_once_and_can_be_cleared(backends: TestClient) -> None:
    scope = {"user_id": "exp-user"}
    short = add(backends, "The door code changes every hour.", ttl_seconds=1, **scope)
    lasting = add(backends, "The office closes at six.", ttl_seconds=1, **scope)
    cleared = result(backends, "memory.update", memory_id=lasting["id"], expires_at=None, **scope)
    assert cleared["expires_at"] is None
    session = add(backends, "A note in a session.", session_id="exp-session")
    assert session["expires_at"] is not None  # sessions live 30 days by default
    time.sleep(1.2)
    gone = rpc(backends, "memory.get", memory_id=short["id"], **scope)["error"]
    assert gone["data"]["code"] == "MEMORY_NOT_FOUND"
    assert contents(backends, **scope) == ["The office closes at six."]
    hits = result(backends, "memory.search", query="door code", **scope)["results"]
    assert short["id"] not in {h["memory"]["id"] for h in hits}


def test_tags_match_all_on_list_and_search(backends: TestClient) -> None:
    scope = {"user_id": "tags-user"}
    both = add(
        backends, "Deploy checklist for the billing service.", tags=["ops", "billing"], **scope
    )
    add(backends, "Deploy checklist for the search service.", tags=["ops"], **scope)
    add(backends, "Billing rates for 2027.", tags=["billing"], **scope)
    listed = result(backends, "memory.list", tags=["ops", "billing"], tags_match="all", **scope)
    assert [m["id"] for m in listed["memories"]] == [both["id"]]
    assert result(backends, "memory.list", tags=["ops", "billing"], **scope)["total_count"] == 3
    hits = result(
        backends,
        "memory.search",
        query="deploy checklist",
        tags=["billing", "ops"],
        tags_match="all",
        **scope,
    )["results"]
    assert [h["memory"]["id"] for h in hits] == [both["id"]]
