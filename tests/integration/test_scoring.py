"""The six-factor score on the real stack (SQLite + qdrant-edge, PostgreSQL + Qdrant local
mode) with the real local embedder: factors on every result, per-query weights, stage
relevance read from real stages, accesses written back in the background, and the JSON-RPC
surface of memory.search."""

from __future__ import annotations

import json
from typing import Any

from agentcore.api.methods import build_methods
from agentcore.api.metrics import RpcMetrics
from agentcore.api.rpc import JsonRpcEndpoint
from agentcore.bootstrap import Container
from agentcore.domain.clock import utcnow
from agentcore.domain.models import ScopeIds
from agentcore.domain.records import MemoryChanges, NewMemory
from agentcore.domain.scoring import FACTORS
from agentcore.services.access import AccessRecorder
from agentcore.services.retrieval import EnhancedRetrieval, SearchQuery

ALICE = ScopeIds(user_id="alice")
TASK = ScopeIds(task_id="trip-7", agent_id="planner")


async def test_results_carry_six_factors_and_an_override_changes_the_order(
    stack: Container,
) -> None:
    dog = await stack.memory.add(NewMemory("Caroline adopted a dog named Max", ALICE))
    rule = await stack.memory.add(
        NewMemory("Visitors must sign the adoption form at the front desk", ALICE)
    )
    await stack.memory.add(NewMemory("The quarterly report is due next Monday", ALICE))
    query = "What is the name of Caroline's dog?"
    default = await stack.memory.search(SearchQuery(query, ALICE, limit=3))
    assert default.results[0].memory.id == dog.id
    assert default.weights["similarity"] == stack.settings.memory_relevance_weight
    for hit in default.results:
        assert set(hit.factors) == set(FACTORS)
        assert 0.0 <= hit.score <= 1.0

    await stack.memory.update(rule.id, ALICE, MemoryChanges(critical=True))
    weights = {"similarity": 0.2, "criticality": 0.8}
    boosted = await stack.memory.search(SearchQuery(query, ALICE, scoring_weights=weights))
    assert boosted.results[0].memory.id == rule.id
    assert boosted.weights["recency"] == 0.0
    assert boosted.results[0].factors["criticality"] == 1.0


async def test_the_memory_written_in_the_current_stage_type_ranks_first(
    stack: Container,
) -> None:
    task_id = TASK.task_id or ""
    text = "Compare the fares of the three airlines for Lisbon"
    await stack.stages.start(task_id, "planning")
    planned = await stack.memory.add(NewMemory(text, TASK))
    await stack.stages.start(task_id, "execution")
    executed = await stack.memory.add(NewMemory(text, TASK))
    assert planned.stage_id != executed.stage_id
    for stage, first, second in (
        ("planning", planned, executed),
        ("execution", executed, planned),
    ):
        found = await stack.memory.search(SearchQuery(text, TASK, current_stage=stage))
        assert [r.memory.id for r in found.results] == [first.id, second.id]
        assert found.results[0].factors["stage_relevance"] == 1.0
        assert found.results[1].factors["stage_relevance"] == 0.0
    plain = await stack.memory.search(SearchQuery(text, TASK))
    assert {r.factors["stage_relevance"] for r in plain.results} == {0.5}


async def test_search_accesses_reach_the_database_after_a_flush(stack: Container) -> None:
    access = AccessRecorder(stack.uow_factory)
    retrieval = EnhancedRetrieval(
        stack.uow_factory,
        stack.vectors,
        stack.embedder,
        utcnow,
        stack.settings.memory_max_query_length,
        access=access,
    )
    stored = await stack.memory.add(NewMemory("Melanie painted a sunrise over the lake", ALICE))
    await stack.memory.indexed()  # this retrieval reads the vectors directly
    for _ in range(3):
        found = await retrieval.search(SearchQuery("What did Melanie paint?", ALICE, limit=1))
        assert found.results[0].memory.id == stored.id
    async with stack.uow_factory(read_only=True) as uow:
        before = await uow.memories.get(stored.id)
    assert before is not None
    assert before.access_count == 0
    assert await access.flush() == 1
    async with stack.uow_factory(read_only=True) as uow:
        after = await uow.memories.get(stored.id)
    assert after is not None
    assert after.access_count == 3
    assert after.last_accessed_at is not None
    again = await retrieval.search(SearchQuery("What did Melanie paint?", ALICE, limit=1))
    assert again.results[0].factors["frequency"] > 0


async def test_memory_search_over_json_rpc(stack: Container) -> None:
    endpoint = JsonRpcEndpoint(build_methods(stack, dict), RpcMetrics(stack.registry))

    async def call(**params: Any) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "method": "memory.search", "params": params, "id": 1}
        reply: dict[str, Any] = await endpoint.handle(json.dumps(body).encode())
        return reply

    old = await stack.memory.add(NewMemory("Jo lives in Paris.", ALICE))
    new = await stack.memory.add(NewMemory("Jo lives in Berlin.", ALICE))
    reply = await call(query="Where does Jo live?", user_id="alice", current_stage="planning")
    hits = {hit["memory"]["id"]: hit for hit in reply["result"]["results"]}
    assert hits[old.id]["contradicts"] == [new.id]
    assert hits[old.id]["superseded_by"] == new.id
    assert hits[new.id]["superseded_by"] is None
    assert set(reply["result"]["weights"]) == set(FACTORS)

    bad = await call(query="x", user_id="alice", scoring_weights={"recency": -1, "bogus": 0.1})
    assert bad["error"]["code"] == -32602
    fields = {e["field"] for e in bad["error"]["data"]["errors"]}
    assert fields == {"scoring_weights.recency", "scoring_weights.bogus"}
    stage = await call(query="x", user_id="alice", current_stage="dreaming")
    assert stage["error"]["data"]["errors"][0]["field"] == "current_stage"
    order = await call(query="x", user_id="alice", order_by="precedence")
    assert "result" in order
