"""ErrorTracker on in-memory fakes: recording (stage link, memories, undo on failure),
history filters, patterns (with an LLM extractor fake: cache, failure, budget), the
error-correction signal, and the JSON-RPC methods."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Self

import pytest
from prometheus_client import CollectorRegistry

from agentcore.api.handlers.error_memory import error_memory_methods
from agentcore.api.metrics import RpcMetrics
from agentcore.api.rpc import JsonRpcEndpoint
from agentcore.domain.error_patterns import pattern_severity
from agentcore.domain.error_records import (
    ERROR_KIND,
    RECOVERY_KIND,
    ErrorPattern,
    ErrorQuery,
    ErrorRecord,
    ErrorType,
    PatternSource,
    PatternType,
    memory_id,
)
from agentcore.domain.errors import (
    EmbeddingFailed,
    InvalidParams,
    InvalidState,
    MissingIdentifier,
    ProviderError,
    StageNotFound,
)
from agentcore.domain.models import Layer, ScopeIds, ScopeLevel, StageType
from agentcore.domain.pricing import CostQuery, CostRecord, CostTotals, PriceTable
from agentcore.domain.records import NewMemory
from agentcore.domain.stages import Stage, StageStatus
from agentcore.domain.usage import TokenUsage
from agentcore.services import errors as errors_module
from agentcore.services.costs import CostTracker
from agentcore.services.errors import (
    RECENT_SECONDS,
    ErrorTracker,
    ExtractedPatterns,
    LlmStatus,
    NewError,
)
from agentcore.services.memory_manager import MemoryManager
from agentcore.services.retrieval import EnhancedRetrieval
from agentcore.services.vector_sync import VectorSync
from tests.fakes import (
    FakeEmbedder,
    FakeStore,
    FakeVectorStore,
    SnapshotUnitOfWork,
    memories_in,
)
from tests.unit.conftest import FakeClock

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
H, M, I, C = (  # noqa: E741
    ErrorType.HALLUCINATION,
    ErrorType.MISSING_INFO,
    ErrorType.INCORRECT_ACTION,
    ErrorType.CONTEXT_DEGRADATION,
)


# --- fakes -------------------------------------------------------------------------------


@dataclass
class _State:
    errors: dict[str, ErrorRecord] = field(default_factory=dict)
    stages: dict[str, Stage] = field(default_factory=dict)


class _Errors:
    def __init__(self, state: _State) -> None:
        self._s = state

    async def add(self, record: ErrorRecord) -> None:
        self._s.errors[record.id] = replace(record, stage_type=None)

    async def delete(self, error_id: str) -> None:
        self._s.errors.pop(error_id, None)

    async def query(self, query: ErrorQuery) -> list[ErrorRecord]:
        found = []
        for r in self._s.errors.values():
            stage = self._s.stages.get(r.stage_id or "")
            r = replace(r, stage_type=None if stage is None else stage.stage_type)
            if (
                (query.task_id is None or r.task_id == query.task_id)
                and (query.agent_id is None or r.agent_id == query.agent_id)
                and (query.min_severity is None or r.severity >= query.min_severity)
                and (query.stage_type is None or r.stage_type is query.stage_type)
            ):
                found.append(r)
        found.sort(key=lambda r: (r.created_at, r.id), reverse=True)
        return found[: query.limit]


class _Stages:
    def __init__(self, state: _State) -> None:
        self._s = state

    async def get(self, stage_id: str, *, lock: bool = False) -> Stage | None:
        return self._s.stages.get(stage_id)

    async def active(self, task_id: str, *, lock: bool = False) -> Stage | None:
        return next(
            (
                s
                for s in self._s.stages.values()
                if s.task_id == task_id and s.status is StageStatus.ACTIVE
            ),
            None,
        )


class FakeErrorUnitOfWork(SnapshotUnitOfWork[_State]):
    def _bind(self, state: _State) -> None:
        self.errors = _Errors(state)
        self.stages = _Stages(state)


class FakeErrorStore:
    def __init__(self) -> None:
        self.state = _State()
        self.commits = 0

    def __call__(self, *, read_only: bool = False) -> FakeErrorUnitOfWork:
        return FakeErrorUnitOfWork(self)

    def stage(self, task_id: str, stage_type: StageType, *, active: bool = True) -> Stage:
        status = StageStatus.ACTIVE if active else StageStatus.COMPLETED
        stage = Stage(f"{task_id}-{stage_type.value}", task_id, stage_type, status, T0)
        self.state.stages[stage.id] = stage
        return stage


class FlakyEmbedder(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.fail = False

    async def embed(self, texts: Sequence[str]) -> Any:
        if self.fail:
            raise EmbeddingFailed("the embedding provider is down")
        return await super().embed(texts)


class FakePatternExtractor:
    def __init__(self) -> None:
        self.calls = 0
        self.fail = False

    @property
    def model_name(self) -> str:
        return "gpt-4.1-mini"

    async def extract(self, records: Sequence[ErrorRecord], min_errors: int) -> ExtractedPatterns:
        self.calls += 1
        if self.fail:
            raise ProviderError("the error pattern provider failed (HTTP 500)")
        cited = list(records[-min_errors:])
        pattern = ErrorPattern(
            PatternType.CONTEXT,
            (cited[0].error_type,),
            len(cited),
            pattern_severity(cited, min_errors),
            "the same root cause",
            "Check the cause first.",
            tuple(r.id for r in reversed(cited)),
            PatternSource.LLM,
        )
        return ExtractedPatterns([pattern], TokenUsage("gpt-4.1-mini", 1_000, 100))


class _Costs:
    def __init__(self, rows: list[CostRecord]) -> None:
        self.rows = rows

    async def add(self, record: CostRecord) -> None:
        self.rows.append(record)

    async def spent(self, since: datetime, until: datetime) -> float:
        return sum(r.cost_usd for r in self.rows if since <= r.created_at < until)

    async def totals(self, query: CostQuery) -> list[CostTotals]:
        return []


class FakeCostStore:
    def __init__(self) -> None:
        self.rows: list[CostRecord] = []

    def __call__(self, *, read_only: bool = False) -> FakeCostStore:
        return self

    async def __aenter__(self) -> Self:
        self.costs = _Costs(self.rows)
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def commit(self) -> None:
        return None


@dataclass
class Env:
    tracker: ErrorTracker
    errors: FakeErrorStore
    store: FakeStore
    memory: MemoryManager
    embedder: FlakyEmbedder
    clock: FakeClock


def make_env(
    *,
    enabled: bool = True,
    threshold: int = 2,
    extractor: FakePatternExtractor | None = None,
    costs: CostTracker | None = None,
) -> Env:
    store, vectors, embedder, clock = FakeStore(), FakeVectorStore(), FlakyEmbedder(), FakeClock()
    sync = VectorSync(store, vectors, embedder, clock)
    retrieval = EnhancedRetrieval(store, vectors, embedder, clock, max_query_length=200)
    memory = MemoryManager(
        store, embedder, sync, retrieval, clock, max_content_length=500, max_batch_size=10
    )
    errors = FakeErrorStore()
    tracker = ErrorTracker(
        errors,
        memory,
        clock,
        enabled=enabled,
        threshold=threshold,
        max_content_length=500,
        extractor=extractor,
        costs=costs,
    )
    return Env(tracker, errors, store, memory, embedder, clock)


@pytest.fixture
def env() -> Env:
    return make_env()


def error(
    error_type: ErrorType = I, task_id: str = "t1", severity: float = 0.5, **kw: Any
) -> NewError:
    kw.setdefault("description", f"Called the deploy tool with the wrong region ({task_id})")
    return NewError(task_id, error_type.value, severity=severity, **kw)


# --- record ------------------------------------------------------------------------------


async def test_record_stores_the_error_linked_to_the_active_stage_and_as_memories(
    env: Env,
) -> None:
    stage = env.errors.stage("t1", StageType.EXECUTION)
    out = await env.tracker.record(
        error(
            agent_id="a1",
            severity=0.8,
            context={"tool": "deploy", "region": "eu-west-1"},
            recovery_action="Read the region from the task constraints before deploying.",
        )
    )

    assert (out.record.stage_id, out.record.stage_type) == (stage.id, StageType.EXECUTION)
    [stored] = await env.tracker.history(task_id="t1")
    assert stored == out.record
    memories = memories_in(env.store)
    assert out.memory_ids == (
        memory_id(out.record.id, ERROR_KIND),
        memory_id(out.record.id, RECOVERY_KIND),
    )
    error_memory, recovery = (memories[i] for i in out.memory_ids)
    assert (error_memory.layer, error_memory.scope_level) == (Layer.EPISODIC, ScopeLevel.TASK)
    assert (recovery.layer, recovery.scope_level) == (Layer.PROCEDURAL, ScopeLevel.AGENT)
    assert error_memory.critical
    assert recovery.critical
    assert error_memory.stage_id == recovery.stage_id == stage.id
    assert error_memory.metadata == {
        "kind": "error",
        "error_id": out.record.id,
        "error_type": "incorrect_action",
        "task_id": "t1",
        "severity": 0.8,
    }
    assert recovery.metadata["kind"] == "recovery"
    assert "region=eu-west-1" in error_memory.content
    assert recovery.content.startswith("Recovery from a incorrect_action error: Read the region")
    assert out.patterns == []  # one error is no pattern


async def test_the_task_patterns_come_back_once_a_type_recurs(env: Env) -> None:
    await env.tracker.record(error(I, severity=0.4))
    out = await env.tracker.record(error(I, severity=0.6, description="Deleted the wrong file"))
    [frequency] = [p for p in out.patterns if p.pattern_type is PatternType.FREQUENCY]
    assert (frequency.error_types, frequency.occurrences) == ((I,), 2)
    assert frequency.error_ids[0] == out.record.id
    assert "preconditions" in frequency.recommendation
    assert 0 < frequency.severity <= 0.6


async def test_a_stage_of_another_task_or_an_unknown_stage_is_refused(env: Env) -> None:
    other = env.errors.stage("t2", StageType.PLANNING)
    for stage_id in (other.id, "nope"):
        with pytest.raises(StageNotFound):
            await env.tracker.record(error(stage_id=stage_id))
    assert env.errors.state.errors == {}
    assert memories_in(env.store) == {}


async def test_an_explicit_completed_stage_of_the_task_is_kept(env: Env) -> None:
    planning = env.errors.stage("t1", StageType.PLANNING, active=False)
    env.errors.stage("t1", StageType.EXECUTION)
    out = await env.tracker.record(error(stage_id=planning.id))
    assert (out.record.stage_id, out.record.stage_type) == (planning.id, StageType.PLANNING)


async def test_a_failed_memory_write_undoes_the_record(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def refused(*_: object) -> None:
        raise InvalidState("the store refused the write")

    monkeypatch.setattr(env.memory, "add_batch", refused)
    with pytest.raises(InvalidState, match="refused"):
        await env.tracker.record(error())
    assert env.errors.state.errors == {}


async def test_an_embedding_outage_does_not_lose_the_record(env: Env) -> None:
    """Vectors are written behind the memory: the record and its memory are stored, the
    vector stays owed in the outbox until the embedder is back."""
    env.embedder.fail = True
    recorded = await env.tracker.record(error())
    assert recorded.record.id in env.errors.state.errors
    await env.memory.indexed()
    assert len(env.store.state.outbox) == len(env.store.state.memories) > 0


@pytest.mark.parametrize(
    ("changes", "field_name"),
    [
        ({"error_type": "typo"}, "error_type"),
        ({"severity": 1.5}, "severity"),
        ({"description": "   "}, "description"),
        ({"recovery_action": ""}, "recovery_action"),
        ({"context": {"blob": "x" * 20_000}}, "context"),
    ],
)
async def test_invalid_fields_are_refused(
    env: Env, changes: dict[str, Any], field_name: str
) -> None:
    with pytest.raises(InvalidParams) as raised:
        await env.tracker.record(replace(error(), **changes))
    assert raised.value.details["errors"][0]["field"] == field_name
    assert env.errors.state.errors == {}


async def test_disabled_tracking_refuses_records_and_gives_no_signal() -> None:
    env = make_env(enabled=False)
    with pytest.raises(InvalidState, match="ERROR_TRACKING_ENABLED"):
        await env.tracker.record(error())
    memory = await env.memory.add(NewMemory("anything", ScopeIds(task_id="t1")))
    assert await env.tracker.error_signals("t1", [memory]) == {memory.id: 0.0}


# --- history -----------------------------------------------------------------------------


async def test_history_filters_and_orders_newest_first(env: Env) -> None:
    env.errors.stage("t1", StageType.PLANNING)
    planned = await env.tracker.record(error(H, severity=0.9, agent_id="a1"))
    env.errors.state.stages["t1-planning"] = replace(
        env.errors.state.stages["t1-planning"], status=StageStatus.COMPLETED
    )
    env.errors.stage("t1", StageType.EXECUTION)
    low = await env.tracker.record(error(M, severity=0.2, agent_id="a1"))
    high = await env.tracker.record(error(I, severity=0.7, agent_id="a2"))
    other = await env.tracker.record(error(I, task_id="t2", severity=0.9, agent_id="a1"))

    ids = [r.id for r in await env.tracker.history(task_id="t1")]
    assert ids == [high.record.id, low.record.id, planned.record.id]
    by_stage = await env.tracker.history(task_id="t1", stage_type="planning")
    assert [r.id for r in by_stage] == [planned.record.id]
    severe = await env.tracker.history(task_id="t1", min_severity=0.7)
    assert [r.id for r in severe] == [high.record.id, planned.record.id]
    agent = await env.tracker.history(agent_id="a1")
    assert [r.id for r in agent] == [other.record.id, low.record.id, planned.record.id]
    both = await env.tracker.history(task_id="t1", agent_id="a1", limit=1)
    assert [r.id for r in both] == [low.record.id]


async def test_history_needs_an_owner_and_valid_filters(env: Env) -> None:
    with pytest.raises(MissingIdentifier):
        await env.tracker.history()
    with pytest.raises(InvalidParams):
        await env.tracker.history(task_id="t1", stage_type="lunch")
    with pytest.raises(InvalidParams):
        await env.tracker.history(task_id="t1", limit=101)
    with pytest.raises(InvalidParams):
        await env.tracker.history(task_id="t1", min_severity=-0.1)


# --- patterns ----------------------------------------------------------------------------


async def test_agent_sequences_count_within_each_task(env: Env) -> None:
    # Task t1: H -> M twice. Interleaved in time, t2's errors never follow t1's.
    for task in ("t1", "t2", "t1", "t2"):
        await env.tracker.record(error(H if task == "t1" else M, task, agent_id="a1"))
        await env.tracker.record(error(M if task == "t1" else C, task, agent_id="a1"))
    report = await env.tracker.patterns(agent_id="a1")
    sequences = {p.error_types for p in report.patterns if p.pattern_type is PatternType.SEQUENCE}
    assert sequences == {(H, M), (M, C)}
    assert report.analysed_errors == 8
    assert report.llm_status is LlmStatus.OFF
    with pytest.raises(MissingIdentifier):
        await env.tracker.patterns()


async def test_llm_patterns_are_added_cached_and_costed() -> None:
    extractor, spent = FakePatternExtractor(), FakeCostStore()
    costs = CostTracker(
        spent, PriceTable(), FakeClock(), CollectorRegistry(),
        reasoning_model="gpt-4.1", monthly_budget_usd=10.0,
    )  # fmt: skip
    env = make_env(extractor=extractor, costs=costs)
    assert (await env.tracker.patterns(task_id="t1")).llm_status is LlmStatus.SKIPPED
    await env.tracker.record(error(I))
    await env.tracker.record(error(H))

    report = await env.tracker.patterns(task_id="t1")
    assert report.llm_status is LlmStatus.USED
    [llm] = [p for p in report.patterns if p.source is PatternSource.LLM]
    assert llm.occurrences == 2
    again = await env.tracker.patterns(task_id="t1")
    assert (again.patterns, extractor.calls) == (report.patterns, 1)
    [cost] = spent.rows
    assert (cost.operation, cost.task_id, cost.tokens_in) == ("error_patterns", "t1", 1_000)

    await env.tracker.record(error(M))  # a new error: ask again
    extractor.fail = True
    failed = await env.tracker.patterns(task_id="t1")
    assert failed.llm_status is LlmStatus.FAILED
    assert failed.patterns
    assert all(p.source is PatternSource.STATISTICAL for p in failed.patterns)


async def test_llm_patterns_respect_the_budget() -> None:
    extractor = FakePatternExtractor()
    costs = CostTracker(
        FakeCostStore(), PriceTable(), FakeClock(), CollectorRegistry(),
        reasoning_model="gpt-4.1", monthly_budget_usd=0.0,
    )  # fmt: skip
    env = make_env(extractor=extractor, costs=costs)
    await env.tracker.record(error(I))
    await env.tracker.record(error(I))
    report = await env.tracker.patterns(task_id="t1")
    assert (report.llm_status, extractor.calls) == (LlmStatus.OVER_BUDGET, 0)
    kinds = {p.pattern_type for p in report.patterns}
    assert kinds == {PatternType.FREQUENCY, PatternType.CONTEXT}  # the same error twice


# --- error-aware retrieval ---------------------------------------------------------------


async def test_error_signals(env: Env) -> None:
    stage = env.errors.stage("t1", StageType.EXECUTION)
    context = {"tool": "inventory_api", "operation": "lookup"}
    description = "The inventory lookup returned a stale stock count for the warehouse"
    done = await env.tracker.record(
        error(I, task_id="t0", agent_id="a1", description=description, context=context,
              recovery_action="Refresh the warehouse cache before the lookup.")
    )  # fmt: skip
    now = await env.tracker.record(
        error(I, agent_id="a1", description=description, context=context)
    )
    add = env.memory.add
    scope = ScopeIds(task_id="t1", agent_id="a1")
    same_stage = await add(NewMemory("Deployed the release notes.", scope, stage_id=stage.id))
    similar = await add(NewMemory("Warehouse stock counts from the inventory lookup are stale "
                                  "until the nightly sync.", ScopeIds(agent_id="a1")))  # fmt: skip
    unrelated = await add(NewMemory("The user prefers short answers.", ScopeIds(agent_id="a1")))
    store = memories_in(env.store)
    other_recovery = store[done.memory_ids[1]]  # t0's recovery of the same error
    own_error = store[now.memory_ids[0]]

    signals = await env.tracker.error_signals(
        "t1", [other_recovery, own_error, same_stage, similar, unrelated]
    )
    assert signals[other_recovery.id] == 1.0
    assert signals[own_error.id] == pytest.approx(0.6)
    assert signals[same_stage.id] == pytest.approx(0.3)
    assert 0.3 < signals[similar.id] <= 0.6
    assert signals[unrelated.id] == 0.0
    # A task without errors: only its own recoveries would count; t0's recovery of t0 does.
    assert (await env.tracker.error_signals("t0", [other_recovery]))[other_recovery.id] == 1.0
    assert (await env.tracker.error_signals("t9", [other_recovery]))[other_recovery.id] == 0.0


async def test_error_signals_keep_a_tasks_errors_briefly(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Searches reuse a task's recent errors for RECENT_SECONDS; an error recorded through the
    same tracker is seen at once, one recorded by another process (here a second tracker over
    the same store) once that time has passed."""
    now = [1_000.0]
    monkeypatch.setattr(errors_module, "monotonic", lambda: now[0])
    other = ErrorTracker(
        env.errors, env.memory, env.clock, enabled=True, threshold=2, max_content_length=500
    )
    first = await env.tracker.record(error(I))
    own = memories_in(env.store)[first.memory_ids[0]]
    assert (await env.tracker.error_signals("t1", [own]))[own.id] == pytest.approx(0.6)
    assert (await other.error_signals("t1", [own]))[own.id] == pytest.approx(0.6)

    second = await env.tracker.record(error(I, description="The deploy tool timed out"))
    newest = memories_in(env.store)[second.memory_ids[0]]
    assert (await env.tracker.error_signals("t1", [newest]))[newest.id] == pytest.approx(0.6)
    assert (await other.error_signals("t1", [newest]))[newest.id] == 0.0  # kept, not re-read
    now[0] += RECENT_SECONDS
    assert (await other.error_signals("t1", [newest]))[newest.id] == pytest.approx(0.6)


# --- RPC ---------------------------------------------------------------------------------


async def test_rpc_methods(env: Env) -> None:
    methods = error_memory_methods(env.tracker)
    endpoint = JsonRpcEndpoint({m.name: m for m in methods}, RpcMetrics(CollectorRegistry()))

    async def call(method: str, **params: Any) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return await endpoint.handle(json.dumps(body).encode())

    env.errors.stage("t1", StageType.EXECUTION)
    params = {"task_id": "t1", "error_type": "missing_info", "severity": 1}
    first = await call("memory.error.record", **params, description="No API key given")
    second = await call(
        "memory.error.record", **params, description="No region given", context={"tool": "x"}
    )
    result = second["result"]
    assert result["error"]["stage_type"] == "execution"
    assert result["error"]["context"] == {"tool": "x"}
    assert len(result["memory_ids"]) == 1
    [pattern] = result["patterns"]
    assert pattern["pattern_type"] == "frequency"
    assert pattern["examples"] == [result["error_id"], first["result"]["error_id"]]
    assert pattern["source"] == "statistical"

    history = (await call("memory.error.history", task_id="t1", stage_type="execution"))["result"]
    assert [e["error_id"] for e in history["errors"]] == pattern["examples"]
    patterns = (await call("memory.error.patterns", task_id="t1"))["result"]
    assert (patterns["analysed_errors"], patterns["llm_status"]) == (2, "off")

    bad = await call("memory.error.record", **{**params, "severity": 2}, description="x")
    assert bad["error"]["code"] == -32602
    missing = await call("memory.error.history")
    assert missing["error"]["data"]["code"] == "MISSING_IDENTIFIER"
    typo = await call("memory.error.record", **{**params, "error_type": "oops"}, description="x")
    assert typo["error"]["code"] == -32602


def test_severity_weights_recent_errors_and_grows_with_repetition() -> None:
    old = ErrorRecord("a", "t", I, "x", 1.0, T0)
    new = ErrorRecord("b", "t", I, "x", 0.0, T0 + timedelta(hours=24))
    # the older error weighs half: (0.5 * 1.0 + 1 * 0.0) / 1.5, times 0.75 at the threshold
    assert pattern_severity([old, new], threshold=2) == pytest.approx(0.25, abs=1e-4)
    same = [ErrorRecord(str(i), "t", I, "x", 0.8, T0) for i in range(4)]
    assert pattern_severity(same[:2], 2) < pattern_severity(same[:3], 2) < 0.8
    assert pattern_severity(same, 2) == pytest.approx(0.8)
