"""The MessageRouter's context and artifacts over JSON-RPC, on each backend."""

from __future__ import annotations

from starlette.testclient import TestClient

from tests.e2e.test_rpc_api import result, rpc


def test_route_context_scores_the_agent_with_relevant_history(backends: TestClient) -> None:
    session = {"session_id": "route-s1", "user_id": "route-user"}
    for text in ("The user wants a refund for order 1182.", "The user lives in Porto."):
        result(backends, "memory.add", content=text, scope="session", **session)
    for text in (
        "Processed a refund through the payments API for order 77.",
        "Refunds over 500 euros need a second approval.",
    ):
        result(backends, "memory.add", content=text, agent_id="billing-agent")
    result(
        backends, "memory.add", content="Booked a table for two at eight.", agent_id="travel-agent"
    )
    for _ in range(3):
        result(
            backends,
            "memory.procedure.record",
            agent_id="billing-agent",
            action="refund order 1182 via payments api",
            context="customer asks for a refund",
            outcome="refunded",
            success=True,
        )

    routed = result(
        backends,
        "memory.route_context",
        content="Can I get my money back?",
        session_id="route-s1",
        candidate_agents=["travel-agent", "billing-agent"],
    )

    assert routed["memories"][0]["memory"]["content"].startswith("The user wants a refund")
    assert len(routed["memories"]) <= 5
    billing, travel = routed["agent_scores"]
    assert (billing["agent_id"], travel["agent_id"]) == ("billing-agent", "travel-agent")
    assert 0 <= travel["score"] < billing["score"] <= 1
    assert billing["procedure_score"] > 0
    assert any("success_rate" in e for e in billing["evidence"])
    assert any("memory_id" in e for e in billing["evidence"])
    result(backends, "memory.add", content="The user pays refunds into card ending 44.", **session)
    wider = result(
        backends,
        "memory.route_context",
        content="refund card",
        user_id="route-user",
        session_id="route-s1",
        candidate_agents=["billing-agent"],
    )
    assert any("card ending 44" in h["memory"]["content"] for h in wider["memories"])
    bad = rpc(backends, "memory.route_context", content="x", session_id="route-s1", limit=0)
    assert bad["error"]["code"] == -32602


def test_the_router_sees_what_the_session_s_agents_and_user_wrote(backends: TestClient) -> None:
    """The MessageRouter knows the session and the message, not who wrote what in it."""
    session = {"session_id": "router-s7"}
    result(
        backends,
        "memory.add",
        content="Checked the failing deploy: the tests pass locally but CI times out.",
        agent_id="ops-agent",
        **session,
    )
    result(
        backends,
        "memory.add",
        content="Drafted the release notes for version 2.4.",
        agent_id="writer-agent",
        **session,
    )
    result(
        backends,
        "memory.add",
        content="I need the deploy fixed before Friday's launch.",
        user_id="router-user",
        **session,
    )
    result(  # the same agent in another session: not this session's context
        backends,
        "memory.add",
        content="The deploy of the billing service failed on a missing secret.",
        agent_id="ops-agent",
        session_id="router-s8",
    )

    routed = result(
        backends,
        "memory.route_context",
        content="Why is the deploy still failing?",
        session_id="router-s7",
        limit=5,
    )

    contents = [hit["memory"]["content"] for hit in routed["memories"]]
    assert contents[0].startswith(("Checked the failing deploy", "I need the deploy fixed"))
    assert {c.split()[0] for c in contents} == {"Checked", "Drafted", "I"}
    assert all(hit["memory"]["session_id"] == "router-s7" for hit in routed["memories"])
    scored = [s["agent_id"] for s in routed["agent_scores"]]
    assert scored == ["ops-agent", "writer-agent"]  # the session's writers, best first
    assert routed["agent_scores"][0]["score"] > routed["agent_scores"][1]["score"]


def test_artifacts_are_linked_to_session_stage_and_participants(backends: TestClient) -> None:
    task = {"task_id": "art-task"}
    stage = result(backends, "memory.stage.start", stage_type="execution", **task)["stage_id"]
    report = result(
        backends,
        "memory.artifact.add",
        session_id="art-s1",
        name="report.md",
        content="# Export fix\nStreaming cut memory to 150 MB.",
        participants=["agent-a", "reviewer"],
        **task,
    )
    assert (report["stage_id"], report["layer"], report["session_id"]) == (
        stage,
        "episodic",
        "art-s1",
    )
    link = result(
        backends,
        "memory.artifact.add",
        session_id="art-s2",
        name="diff",
        uri="s3://bucket/diff-42.patch",
        participants=["agent-b"],
        **task,
    )
    assert link["metadata"]["uri"] == "s3://bucket/diff-42.patch"
    result(backends, "memory.add", content="Not an artifact.", **task)

    def names(**filters: str) -> list[str]:
        listed = result(backends, "memory.artifact.list", **task, **filters)["memories"]
        return [m["metadata"]["name"] for m in listed]

    assert names() == ["diff", "report.md"]
    assert names(session_id="art-s1") == ["report.md"]
    assert names(participant="agent-b") == ["diff"]
    assert names(stage_id=stage) == ["diff", "report.md"]
    assert names(stage_id="no-such-stage") == []
    both = rpc(
        backends, "memory.artifact.add", session_id="s", name="x", content="c", uri="u", **task
    )["error"]
    assert both["data"]["code"] == "INVALID_PARAMS"
    assert names() == ["diff", "report.md"]
