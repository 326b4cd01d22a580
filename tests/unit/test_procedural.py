"""The procedural layer over fakes: patterns, aggregation, search order, races, RPC shape."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from agentcore.api.handlers.procedural import procedural_methods
from agentcore.api.metrics import RpcMetrics
from agentcore.api.rpc import JsonRpcEndpoint
from agentcore.domain.errors import InvalidParams
from agentcore.domain.models import Layer, Memory, ScopeIds
from agentcore.services.memory_manager import ListRequest, MemoryManager
from agentcore.services.ports import Vectors
from agentcore.services.procedural import ProceduralMemoryService, action_pattern
from agentcore.services.retrieval import EnhancedRetrieval
from tests.fakes import FakeEmbedder, memories_in
from tests.unit.conftest import Services

ALICE = ScopeIds(user_id="alice")
BOB = ScopeIds(user_id="bob")
RETRY = "retry the request with backoff after {} seconds"
UNAVAILABLE = "upstream api returned 503 service unavailable during checkout"


@pytest.fixture
def procedures(services: Services) -> ProceduralMemoryService:
    return ProceduralMemoryService(services.memory, min_occurrences=3)


def kinds(services: Services, kind: str) -> list[Memory]:
    return [m for m in memories_in(services.store).values() if m.metadata.get("kind") == kind]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Retry request 3 times", "retry  request 5 times."),
        ("GET https://api.example.com/v1/orders/17", "get http://localhost:8080/health"),
        ("open /var/log/app.log", "open ./build/out.txt"),
        ("run 'make test' in the repo", 'run "pytest -q" in the repo'),
        ("cancel order 550e8400-e29b-41d4-a716-446655440000", "cancel order req-123"),
        ("revert commit 3f2a9c1d", "revert commit deadbeef42"),
        ("set timeout to 100ms", "set timeout to 2.5s"),
        ("email bob@example.com the report", "email carol@corp.io the report"),
    ],
)
def test_variable_parts_share_a_pattern(first: str, second: str) -> None:
    assert action_pattern(first) == action_pattern(second)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("retry the request", "cancel the request"),
        ("deploy to s3", "deploy to ec2"),  # short names with a digit are kept
        ("merge and/or rebase", "merge and rebase"),
    ],
)
def test_different_actions_keep_different_patterns(first: str, second: str) -> None:
    assert action_pattern(first) != action_pattern(second)


def test_pattern_examples() -> None:
    assert action_pattern("Retry request 3 times") == "retry request <num> times"
    assert action_pattern("Don't retry the user's 'x'") == "don't retry the user's <str>"
    long_one, long_two = "step " * 100 + "a", "step " * 100 + "b"
    assert len(action_pattern(long_one)) == 200
    assert action_pattern(long_one) != action_pattern(long_two)


async def test_blank_input_is_refused_and_nothing_is_stored(
    services: Services, procedures: ProceduralMemoryService
) -> None:
    with pytest.raises(InvalidParams):
        await procedures.record(" ... ", "ctx", "ok", True, ALICE)
    with pytest.raises(InvalidParams):
        await procedures.record("retry", "   ", "ok", True, ALICE)
    assert memories_in(services.store) == {}


async def test_a_procedure_appears_at_the_threshold_and_tracks_outcomes(
    services: Services, procedures: ProceduralMemoryService
) -> None:
    outcomes = [True, True, False, True, True]
    results = []
    for n, success in enumerate(outcomes):
        outcome = "the retry went through" if success else "still failing after retries"
        results.append(
            await procedures.record(RETRY.format(n + 1), UNAVAILABLE, outcome, success, ALICE)
        )
    assert [r.procedure is None for r in results] == [True, True, False, False, False]
    assert [r.occurrences for r in results] == [1, 2, 3, 4, 5]
    last = results[-1]
    assert (last.occurrences, last.successes, last.success_rate) == (5, 4, 0.8)
    assert last.procedure is not None
    assert len(kinds(services, "procedure")) == 1
    assert {r.procedure.id for r in results if r.procedure} == {last.procedure.id}
    meta = last.procedure.metadata
    assert meta["action_key"] == "retry the request with backoff after <num> seconds"
    assert (meta["occurrences"], meta["successes"], meta["success_rate"]) == (5, 4, 0.8)
    assert meta["record_ids"] == [r.record.id for r in reversed(results)]
    assert meta["contexts"] == [UNAVAILABLE]
    assert last.procedure.content.startswith("Procedure: retry the request")
    assert "4/5 cases" in last.procedure.content
    assert last.procedure.key == "procedure:" + meta["action_key"]
    assert last.procedure.layer is Layer.PROCEDURAL
    record = last.record
    assert record.layer is Layer.PROCEDURAL
    assert record.metadata["kind"] == "record"
    assert record.metadata["success"] is True
    assert UNAVAILABLE in record.content


async def test_a_procedure_fits_the_content_limit(services: Services) -> None:
    procedures = ProceduralMemoryService(services.memory, 3, max_content_length=500)
    for n in range(3):  # each record fits the fixture's 500 characters; three contexts do not
        out = await procedures.record("tune the cache", f"{n} " + "busy " * 60, "ok", True, ALICE)
    assert out.procedure is not None
    assert len(out.procedure.content) <= 500
    assert out.procedure.content.endswith("…")
    assert out.procedure.content.startswith("Procedure: tune the cache — works in 3/3 cases")


async def test_records_of_one_user_aggregate_across_sessions(
    services: Services, procedures: ProceduralMemoryService
) -> None:
    for session in ("s1", "s2", "s3"):
        scope = ScopeIds(user_id="alice", session_id=session)
        out = await procedures.record("restart the worker", "queue stalled", "ok", True, scope)
    assert out.procedure is not None
    assert out.procedure.scope == ALICE  # the scope's procedure, not one session's
    assert out.occurrences == 3


async def test_scopes_do_not_mix(services: Services, procedures: ProceduralMemoryService) -> None:
    for _ in range(3):
        await procedures.record("restart the worker", "queue stalled", "ok", True, ALICE)
    bob = await procedures.record("restart the worker", "queue stalled", "ok", True, BOB)
    assert (bob.occurrences, bob.procedure) == (1, None)
    assert await procedures.search("the queue stalled", BOB) == []
    assert len(await procedures.search("the queue stalled", ALICE)) == 1


async def _repeat(
    procedures: ProceduralMemoryService, action: str, context: str, outcomes: Sequence[bool]
) -> None:
    for success in outcomes:
        result = "it worked" if success else "it did not help"
        await procedures.record(action, context, result, success, ALICE)


async def test_a_similar_context_finds_the_procedure_first(
    procedures: ProceduralMemoryService,
) -> None:
    await _repeat(procedures, RETRY.format(2), UNAVAILABLE, [True, True, False, True, True])
    await _repeat(
        procedures,
        "clear the package cache and reinstall",
        "pip install failed with a hash mismatch",
        [True, True, True],
    )
    await _repeat(
        procedures, "rebuild the search index", "queries on orders became slow", [True] * 3
    )
    await _repeat(
        procedures, "rotate the expired key", "authentication failed with 401", [True] * 3
    )
    found = await procedures.search("checkout fails: upstream 503, service unavailable", ALICE)
    assert len(found) == 4
    assert found[0].procedure.metadata["action_key"] == action_pattern(RETRY.format(9))
    assert (found[0].success_rate, found[0].occurrences, found[0].successes) == (0.8, 5, 4)
    assert all(m.procedure.metadata["kind"] == "procedure" for m in found)  # never records
    assert found[0].relevant
    assert not any(m.relevant for m in found[1:])


async def test_among_relevant_procedures_the_best_success_rate_comes_first(
    procedures: ProceduralMemoryService,
) -> None:
    context = "the job queue is backing up with pending tasks"
    await _repeat(procedures, "restart the job queue worker", context, [True, False, False])
    await _repeat(procedures, "scale up the job worker pool", context, [True, True, True])
    await _repeat(procedures, "archive old logs", "disk is almost full", [True, True, True])
    found = await procedures.search("pending tasks pile up in the job queue", ALICE)
    actions = [m.action for m in found]
    assert actions == [
        "scale up the job worker pool",
        "restart the job queue worker",
        "archive old logs",
    ]
    assert [m.relevant for m in found] == [True, True, False]
    assert found[0].similarity < found[1].similarity  # success rate beat a closer match
    assert found[2].success_rate > found[1].success_rate  # but not from outside the band
    assert len(await procedures.search("pending tasks pile up", ALICE, limit=1)) == 1


class LaggingEmbedder(FakeEmbedder):
    """Gives up the event loop on every call, as a real embedder does, so writers interleave;
    each call waits fewer turns than the one before, so the writes started first finish last
    (the worst order for a write based on an older count)."""

    def __init__(self) -> None:
        super().__init__()
        self._turns = 100

    async def embed(self, texts: Sequence[str]) -> Vectors:
        self._turns = max(self._turns - 3, 0)
        for _ in range(self._turns):
            await asyncio.sleep(0)
        return await super().embed(texts)


def manager_with(services: Services, embedder: FakeEmbedder) -> MemoryManager:
    """A MemoryManager over the fixture's store and vectors, with another embedder."""
    retrieval = EnhancedRetrieval(
        services.store, services.vectors, embedder, services.clock, max_query_length=200
    )
    return MemoryManager(
        services.store, embedder, services.sync, retrieval, services.clock, 500, 10
    )


@pytest.fixture
def interleaving(services: Services) -> MemoryManager:
    return manager_with(services, LaggingEmbedder())


async def test_concurrent_records_make_one_procedure(
    services: Services, interleaving: MemoryManager
) -> None:
    procedures = ProceduralMemoryService(interleaving, min_occurrences=3)
    await asyncio.gather(
        *(procedures.record(RETRY.format(n), "503", "ok", n % 2 == 0, ALICE) for n in range(6))
    )
    (procedure,) = kinds(services, "procedure")
    assert (procedure.metadata["occurrences"], procedure.metadata["successes"]) == (6, 3)


async def test_two_processes_racing_converge_on_one_procedure(
    services: Services, interleaving: MemoryManager
) -> None:
    # Two services stand for two processes: they share the store but not their locks.
    first = ProceduralMemoryService(interleaving, min_occurrences=3)
    second = ProceduralMemoryService(interleaving, min_occurrences=3)
    await first.record(RETRY.format(1), "503", "ok", True, ALICE)
    await asyncio.gather(
        *(
            service.record(RETRY.format(n), "503", "ok", n % 2 == 0, ALICE)
            for n in range(6)
            for service in (first, second)
        )
    )
    (procedure,) = kinds(services, "procedure")
    assert len(kinds(services, "record")) == 13
    assert (procedure.metadata["occurrences"], procedure.metadata["successes"]) == (13, 7)
    page = await services.memory.list_page(
        ListRequest(scope=ALICE, layer="procedural", metadata={"kind": "procedure"})
    )
    assert page.total_count == 1


class StallingEmbedder(FakeEmbedder):
    """Yields once per call, except that the next procedure embedded after ``stall()`` waits
    many turns: its writer then finishes after writers that started later."""

    def __init__(self) -> None:
        super().__init__()
        self._stall = False

    def stall(self) -> None:
        self._stall = True

    async def embed(self, texts: Sequence[str]) -> Vectors:
        turns = 1
        if self._stall and texts[0].startswith("Procedure:"):
            self._stall, turns = False, 50
        for _ in range(turns):
            await asyncio.sleep(0)
        return await super().embed(texts)


async def test_a_procedure_written_from_an_older_count_is_rewritten(services: Services) -> None:
    embedder = StallingEmbedder()
    manager = manager_with(services, embedder)
    first = ProceduralMemoryService(manager, min_occurrences=3)
    second = ProceduralMemoryService(manager, min_occurrences=3)
    for _ in range(3):
        await first.record("restart the worker", "queue stalled", "ok", True, ALICE)
    embedder.stall()  # the first writer counts 4 records, then stalls while the 5th lands
    await asyncio.gather(
        first.record("restart the worker", "queue stalled", "ok", True, ALICE),
        second.record("restart the worker", "queue stalled", "failed", False, ALICE),
    )
    (procedure,) = kinds(services, "procedure")
    assert (procedure.metadata["occurrences"], procedure.metadata["successes"]) == (5, 4)


async def test_rpc_methods(procedures: ProceduralMemoryService) -> None:
    methods = {m.name: m for m in procedural_methods(procedures)}
    endpoint = JsonRpcEndpoint(methods, RpcMetrics(CollectorRegistry()))

    async def call(method: str, params: dict[str, Any]) -> Any:
        body = json.dumps({"jsonrpc": "2.0", "method": method, "params": params, "id": 1})
        return await endpoint.handle(body.encode())

    params = {"action": "restart the worker", "context": "queue stalled", "outcome": "ok"}
    for success in (True, True, False):
        reply = await call(
            "memory.procedure.record", {**params, "success": success, "user_id": "a"}
        )
    result = reply["result"]
    assert result["procedure"]["metadata"]["occurrences"] == 3
    assert (result["occurrences"], result["successes"]) == (3, 2)
    assert result["success_rate"] == 0.6667
    assert result["record"]["layer"] == "procedural"
    found = await call("memory.procedure.search", {"context": "the queue stalled", "user_id": "a"})
    (hit,) = found["result"]["results"]
    assert hit["action"] == "restart the worker"
    assert hit["relevant"] is True
    assert 0 < hit["similarity"] <= 1
    assert found["result"]["total_count"] == 1
    bad = await call("memory.procedure.record", {**params, "success": "yes", "user_id": "a"})
    assert bad["error"]["code"] == -32602
    unscoped = await call("memory.procedure.search", {"context": "queue"})
    assert unscoped["error"]["data"]["code"] == "MISSING_IDENTIFIER"
