"""StageManager and the stage detector on in-memory fakes: lifecycle, errors, every detection
signal with its reason, precedence, no flip on weak signals, and the RPC methods."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from agentcore.api.handlers.stages import stage_methods
from agentcore.api.metrics import RpcMetrics
from agentcore.api.rpc import JsonRpcEndpoint
from agentcore.domain.errors import Conflict, InvalidParams, InvalidState, StageNotFound
from agentcore.domain.models import Layer, Memory, ScopeIds, ScopeLevel, StageType
from agentcore.domain.records import NewMemory
from agentcore.domain.stage_detection import Detection, DetectionSignal, StageDetector
from agentcore.domain.stages import (
    Stage,
    StageMemory,
    StageOrigin,
    StageStatus,
    TaskContext,
)
from agentcore.services.compass.stages import StageManager
from agentcore.services.memory_manager import MemoryManager
from agentcore.services.ports import StageMemoryRepository, StageRepository, TaskContextRepository
from agentcore.services.retrieval import EnhancedRetrieval
from tests.fakes import SnapshotUnitOfWork
from tests.unit.conftest import FakeClock, Services

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
P, E, R, V = StageType.PLANNING, StageType.EXECUTION, StageType.REFLECTION, StageType.VERIFICATION


# --- fakes -------------------------------------------------------------------------------


@dataclass
class _State:
    stages: dict[str, Stage] = field(default_factory=dict)
    stage_memories: dict[str, StageMemory] = field(default_factory=dict)
    task_contexts: dict[str, TaskContext] = field(default_factory=dict)
    claims: dict[str, datetime] = field(default_factory=dict)  # stage id → claimed at


class _Stages:
    def __init__(self, state: _State, store: FakeStageStore) -> None:
        self._s = state
        self._store = store

    async def lock_task(self, task_id: str) -> None:
        return None

    async def add(self, stage: Stage) -> None:
        if self._store.before_add is not None:  # a concurrent writer commits first
            hook, self._store.before_add = self._store.before_add, None
            hook(self._store.state)
            self._s.stages = dict(self._store.state.stages)
        if stage.id in self._s.stages or (
            stage.status is StageStatus.ACTIVE and _active(self._s, stage.task_id) is not None
        ):
            raise Conflict("the task already has an active stage")
        self._s.stages[stage.id] = stage

    async def update(self, stage: Stage) -> None:
        if stage.id not in self._s.stages:
            raise StageNotFound("stage not found")
        self._s.stages[stage.id] = stage

    async def get(self, stage_id: str, *, lock: bool = False) -> Stage | None:
        return self._s.stages.get(stage_id)

    async def active(self, task_id: str, *, lock: bool = False) -> Stage | None:
        return _active(self._s, task_id)

    async def of_task(self, task_id: str) -> list[Stage]:
        found = [s for s in self._s.stages.values() if s.task_id == task_id]
        return sorted(found, key=lambda s: (s.started_at, s.id))

    async def pending_compression(self, limit: int, claimed_before: datetime | None) -> list[Stage]:
        done = [
            s
            for s in self._s.stages.values()
            if s.status is StageStatus.COMPLETED
            and s.id not in self._s.stage_memories
            and self._claimable(s.id, claimed_before)
        ]
        return sorted(done, key=lambda s: (s.completed_at or T0, s.id))[:limit]

    async def claim_compression(
        self, stage_id: str, at: datetime, claimed_before: datetime | None
    ) -> bool:
        if stage_id not in self._s.stages or not self._claimable(stage_id, claimed_before):
            return False
        self._s.claims[stage_id] = at
        return True

    def _claimable(self, stage_id: str, claimed_before: datetime | None) -> bool:
        at = self._s.claims.get(stage_id)
        return at is None or (claimed_before is not None and at < claimed_before)


def _active(state: _State, task_id: str) -> Stage | None:
    return next(
        (
            s
            for s in state.stages.values()
            if s.task_id == task_id and s.status is StageStatus.ACTIVE
        ),
        None,
    )


class _StageMemories:
    def __init__(self, state: _State) -> None:
        self._s = state

    async def save(self, memory: StageMemory) -> bool:
        if memory.stage_id in self._s.stage_memories:
            return False
        self._s.stage_memories[memory.stage_id] = memory
        return True

    async def get(self, stage_id: str) -> StageMemory | None:
        return self._s.stage_memories.get(stage_id)

    async def of_task(self, task_id: str) -> list[StageMemory]:
        found = [m for m in self._s.stage_memories.values() if m.task_id == task_id]
        return sorted(found, key=lambda m: m.created_at)


class _TaskContexts:
    def __init__(self, state: _State) -> None:
        self._s = state

    async def save(self, context: TaskContext) -> None:
        self._s.task_contexts[context.task_id] = context

    async def get(self, task_id: str) -> TaskContext | None:
        return self._s.task_contexts.get(task_id)


class FakeStageUnitOfWork(SnapshotUnitOfWork[_State]):
    stages: StageRepository
    stage_memories: StageMemoryRepository
    task_contexts: TaskContextRepository

    def _bind(self, state: _State) -> None:
        self.stages = _Stages(state, self._store)
        self.stage_memories = _StageMemories(state)
        self.task_contexts = _TaskContexts(state)


class FakeStageStore:
    def __init__(self) -> None:
        self.state = _State()
        self.commits = 0
        self.before_add: Callable[[_State], None] | None = None

    def __call__(self, *, read_only: bool = False) -> FakeStageUnitOfWork:
        return FakeStageUnitOfWork(self)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store() -> FakeStageStore:
    return FakeStageStore()


@pytest.fixture
def manager(store: FakeStageStore, clock: FakeClock) -> StageManager:
    return StageManager(store, clock, auto_transition=True, default_duration_seconds=1800)


def memory(content: str = "Noted.", task_id: str = "t1", **metadata: Any) -> Memory:
    return Memory(
        id=f"m-{abs(hash((content, json.dumps(metadata, sort_keys=True)))):x}",
        content=content,
        layer=Layer.EPISODIC,
        scope_level=ScopeLevel.TASK,
        scope=ScopeIds(task_id=task_id, agent_id="a1", session_id="s1"),
        created_at=T0,
        updated_at=T0,
        metadata=metadata,
    )


def stage(
    stage_type: StageType, started_at: datetime = T0, origin: StageOrigin = StageOrigin.DETECTED
) -> Stage:
    return Stage("st-1", "t1", stage_type, StageStatus.ACTIVE, started_at, origin=origin)


def detect(content: str = "Noted.", active: Stage | None = None, **metadata: Any) -> Detection:
    found = StageDetector(1800).detect(memory(content, **metadata), active, T0)
    assert found is not None
    return found


def nothing(content: str = "Noted.", active: Stage | None = None, **metadata: Any) -> None:
    assert StageDetector(1800).detect(memory(content, **metadata), active, T0) is None


# --- detector ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [("stage", "execution", E), ("stage_type", " Reflection ", R), ("stage_marker", "PLANNING", P)],
)
def test_explicit_markers_name_the_stage(key: str, value: Any, expected: StageType) -> None:
    found = detect(**{key: value})
    assert (found.stage_type, found.signal) == (expected, DetectionSignal.EXPLICIT)
    assert found.reason == f"explicit: metadata.{key}={expected.value}"


def test_an_unknown_stage_marker_is_no_signal() -> None:
    nothing(stage="lunch", stage_marker=3)


def test_ace_signals_as_a_stage_name_or_an_object() -> None:
    found = detect(ace_signal="reflection")
    assert (found.stage_type, found.signal) == (R, DetectionSignal.ACE)
    assert found.reason == "ace: metadata.ace_signal targets reflection"
    found = detect(intervention={"target_stage": "verification", "type": "context_degradation"})
    assert found.stage_type is V
    assert found.reason == "ace: metadata.intervention targets verification (context_degradation)"
    nothing(intervention={"type": "replan"})


@pytest.mark.parametrize(
    ("metadata", "expected", "reason"),
    [
        ({"kind": "tool_call"}, E, "action: metadata.kind=tool_call"),
        ({"kind": "error"}, R, "action: metadata.kind=error"),
        ({"kind": "check"}, V, "action: metadata.kind=check"),
        ({"kind": "Test"}, V, "action: metadata.kind=test"),
        ({"kind": "plan"}, P, "action: metadata.kind=plan"),
        ({"tool": "web_search"}, E, "action: tool call (metadata.tool=web_search)"),
        ({"tool_name": "bash"}, E, "action: tool call (metadata.tool_name=bash)"),
    ],
)
def test_action_metadata(metadata: dict[str, Any], expected: StageType, reason: str) -> None:
    found = detect(**metadata)
    assert (found.stage_type, found.signal, found.reason) == (
        expected,
        DetectionSignal.ACTION,
        reason,
    )


@pytest.mark.parametrize(
    ("content", "expected", "label"),
    [
        ("Calling tool web_search; executed the query for flights to Lisbon.", E, "'calling tool'"),
        ("I ran the command pytest -x and executed the migration.", E, "'ran command'"),
        ("Lesson learned: the root cause was a stale cache.", R, "'lesson learned'"),
        ("The upload failed with an error from the proxy.", R, "'error'"),
        ("All tests passed; verify the totals next.", V, "'test passed/failed'"),
        ("Now check that the totals match and verify the invoice.", V, "'check that'"),
        ("Plan: first, we will gather the requirements.", P, "'plan:'"),
        ("The plan is a caching strategy for the reports.", P, "'the plan is'"),
    ],
)
def test_two_phrases_of_a_stage_in_the_first_sentence(
    content: str, expected: StageType, label: str
) -> None:
    found = detect(f"{content} Then more text follows here.")
    assert (found.stage_type, found.signal) == (expected, DetectionSignal.ACTION)
    assert found.reason.startswith(f"action: {label}")
    assert "in the first sentence" in found.reason
    assert found.confidence >= 0.6
    seen = [e for e in found.evidence if e.stage_type is expected]
    assert len(seen) >= 2
    assert seen[0].label == label.strip("'")


@pytest.mark.parametrize(
    "content",
    [
        # What agents write in every stage: one stage word is never enough.
        "Ran the existing test suite: 143 tests passed.",
        "Sketched a plan to stream rows instead of buffering them.",
        "The error in the log points at the CSV writer.",
        "Executed the migration on the staging copy.",
        "Verify the VAT totals with finance tomorrow.",
        "Calling tool web_search with the query 'flights to Lisbon'.",
        "Lesson learned: always pin the dependency versions.",
        "Plan: gather the requirements, then draft the schema.",
        "Step 1: list the tables.",
        "We met at noon and talked about many things. Someone mentioned an error once.",
        "Our strategy failed.",
        "No errors so far, and no mistakes either.",  # negated
        "Without any validation the form still loads.",
        "The planetary terror was executable and testing continued.",  # no whole-word match
        "Just a status update for the team.",
    ],
)
def test_one_phrase_or_weak_content_flips_nothing(content: str) -> None:
    nothing(content)


def test_a_strong_phrase_later_in_the_text_still_counts() -> None:
    found = detect(
        "The weather was fine today. Looking back, the lesson learned is to cache, "
        "and the root cause was a missing index."
    )
    assert (found.stage_type, found.confidence) == (R, 0.73)
    assert "in the content" in found.reason


def test_the_stronger_stage_must_lead_by_a_margin() -> None:
    # verification ("test failed" 0.9 + "verify") leads reflection ("failed" 0.7) by 0.3
    found = detect("The integration test failed when we tried to verify the payments module.")
    assert found.stage_type is V
    assert {e.stage_type for e in found.evidence} == {V, R}  # every phrase seen is reported
    # reflection has two phrases (0.8) but verification's one phrase (0.9) is stronger
    nothing("The integration test failed; the error was a timeout.")


def test_a_declared_stage_holds_against_everything_but_a_declaration() -> None:
    old = T0 - timedelta(hours=2)
    declared = stage(P, old, StageOrigin.DECLARED)
    nothing("Calling tool grep; executed it on the logs.", declared, kind="tool_call")
    nothing("Noted.", declared)  # no time-based move either
    assert detect(active=declared, stage="execution").signal is DetectionSignal.EXPLICIT
    assert detect(active=declared, ace_signal="reflection").signal is DetectionSignal.ACE
    opted_in = replace(declared, detect_transitions=True)
    assert detect("Noted.", opted_in).signal is DetectionSignal.TIME


def test_declarations_and_detections_have_their_origin() -> None:
    assert detect(stage="execution").origin is StageOrigin.DECLARED
    assert detect(ace_signal="reflection").origin is StageOrigin.DECLARED
    assert detect(kind="tool_call").origin is StageOrigin.DETECTED
    assert detect("Lesson learned: the root cause was a stale cache.").origin is (
        StageOrigin.DETECTED
    )


def test_time_moves_to_the_next_stage_of_the_cycle() -> None:
    old = T0 - timedelta(seconds=1801)
    found = detect(active=stage(P, old))
    assert (found.stage_type, found.signal) == (E, DetectionSignal.TIME)
    assert found.reason == "time: stage exceeded 1800 s (planning active for 1801 s)"
    assert detect(active=stage(V, old)).stage_type is P  # the cycle wraps
    nothing(active=stage(P, T0 - timedelta(seconds=1800)))
    nothing(active=None)


def test_precedence_explicit_then_ace_then_action_then_time() -> None:
    old = stage(P, T0 - timedelta(hours=2))
    everything = {"stage": "verification", "ace_signal": "reflection", "kind": "plan"}
    content = "Calling tool grep; executed it on the logs."
    assert detect(content, old, **everything).signal is DetectionSignal.EXPLICIT
    del everything["stage"]
    assert detect(content, old, **everything).signal is DetectionSignal.ACE
    del everything["ace_signal"]
    assert detect(content, old, **everything).stage_type is P  # metadata before content
    assert detect(content, old).stage_type is E  # content before time
    assert detect("Noted.", old).signal is DetectionSignal.TIME


# --- lifecycle ---------------------------------------------------------------------------


async def test_start_current_and_starting_the_next_stage(manager: StageManager) -> None:
    assert await manager.current("t1") is None
    planning = await manager.start("t1", "planning", agent_id="a1", session_id="s1")
    assert (planning.status, planning.reason, planning.agent_id) == (
        StageStatus.ACTIVE,
        "explicit",
        "a1",
    )
    assert await manager.current("t1") == planning
    assert await manager.start("t1", P) == planning  # a repeated start keeps the stage

    execution = await manager.start("t1", E)
    assert execution.metadata == {"previous_stage_id": planning.id}
    ended = await manager.get(planning.id)
    assert ended.status is StageStatus.COMPLETED
    assert ended.completed_at == execution.started_at
    assert [s.id for s in await manager.stages_of("t1")] == [planning.id, execution.id]
    assert await manager.current("t1") == execution
    assert await manager.current("t2") is None
    assert [s.id for s in await manager.pending_compression()] == [planning.id]


async def test_start_refuses_an_unknown_stage_type(manager: StageManager) -> None:
    with pytest.raises(InvalidParams) as caught:
        await manager.start("t1", "lunch")
    assert caught.value.details["errors"][0]["field"] == "stage_type"


async def test_complete_is_idempotent_and_checks_the_task(manager: StageManager) -> None:
    planning = await manager.start("t1", P)
    with pytest.raises(StageNotFound):
        await manager.complete("t1", "nope")
    with pytest.raises(InvalidState):
        await manager.complete("t2", planning.id)
    done = await manager.complete("t1", planning.id)
    assert (done.status, done.completed_at is not None) == (StageStatus.COMPLETED, True)
    assert await manager.complete("t1", planning.id) == done
    assert await manager.current("t1") is None
    with pytest.raises(StageNotFound):
        await manager.get("nope")


async def test_the_loser_of_a_start_race_decides_again(
    manager: StageManager, store: FakeStageStore
) -> None:
    await manager.start("t1", P)

    def winner_starts(state: _State) -> None:
        (active,) = [s for s in state.stages.values() if s.status is StageStatus.ACTIVE]
        state.stages[active.id] = replace(active, status=StageStatus.COMPLETED, completed_at=T0)
        state.stages["w"] = Stage("w", "t1", E, StageStatus.ACTIVE, T0 + timedelta(days=1))

    store.before_add = winner_starts
    assert (await manager.start("t1", E)).id == "w"  # the winner's stage has the wanted type
    store.before_add = lambda state: None
    reflection = await manager.start("t1", R)
    assert reflection.metadata["previous_stage_id"] == "w"


async def test_stage_memories_and_task_contexts_round_trip(manager: StageManager) -> None:
    planning = await manager.start("t1", P)
    await manager.complete("t1", planning.id)
    record = StageMemory(
        planning.id, "t1", "Chose Postgres.", ("pin versions",), ("budget is $5k",),
        ("m1", "m2"), 10.2, {"retention": 1.0}, "extractive", False, 0.0, 400, 39, T0,
    )  # fmt: skip
    await manager.save_stage_memory(record)
    assert await manager.stage_memory(planning.id) == record
    assert await manager.stage_memories_of("t1") == [record]
    assert await manager.pending_compression() == []
    assert await manager.detail(planning.id) == (await manager.get(planning.id), record)
    with pytest.raises(StageNotFound):
        await manager.detail(planning.id, task_id="t2")
    context = TaskContext("t1", "Planning done.", None, (planning.id,), ("budget",), {}, T0)
    await manager.save_task_context(context)
    assert await manager.task_context("t1") == context
    assert await manager.task_context("t2") is None


# --- stage_for ---------------------------------------------------------------------------


async def test_stage_for_without_a_stage_or_a_signal_is_none(manager: StageManager) -> None:
    assert await manager.stage_for("t1", memory("Noted.")) is None
    assert await manager.current("t1") is None


async def test_stage_for_returns_the_active_stage(manager: StageManager) -> None:
    planning = await manager.start("t1", P)
    assert await manager.stage_for("t1", memory("Noted.")) == planning.id
    assert await manager.stage_for("t1", memory("Plan: first, we will read the docs.")) == (
        planning.id
    )


async def test_a_declared_stage_keeps_what_the_agent_writes(manager: StageManager) -> None:
    planning = await manager.start("t1", P)
    for text in (
        "Ran the existing test suite: 143 tests passed, all checks passed.",
        "Calling tool grep; executed it on the export module.",
        "Lesson learned: the root cause was the buffered writer.",
    ):
        assert await manager.stage_for("t1", memory(text)) == planning.id
    assert await manager.stage_for("t1", memory(kind="tool_call", tool="bash")) == planning.id
    assert [s.id for s in await manager.stages_of("t1")] == [planning.id]
    moved = await manager.stage_for("t1", memory(stage="execution"))  # a declaration
    execution = await manager.get(moved or "")
    assert (execution.stage_type, execution.origin) == (E, StageOrigin.DECLARED)


async def test_a_tool_call_moves_a_stage_open_to_detection(manager: StageManager) -> None:
    planning = await manager.start("t1", P, detect_transitions=True)
    assert (planning.origin, planning.detect_transitions) == (StageOrigin.DECLARED, True)
    trigger = memory("Calling tool search_flights for LIS.", kind="tool_call")
    stage_id = await manager.stage_for("t1", trigger)
    execution = await manager.get(stage_id or "")
    assert (execution.stage_type, execution.reason) == (E, "action: metadata.kind=tool_call")
    assert (execution.origin, execution.detect_transitions) == (StageOrigin.DETECTED, False)
    assert (execution.agent_id, execution.session_id) == ("a1", "s1")
    assert execution.metadata == {
        "detection": {
            "signal": "action",
            "confidence": 1.0,
            "reason": "action: metadata.kind=tool_call",
            "signals": [
                {"stage_type": "execution", "label": "metadata.kind=tool_call", "weight": 1.0}
            ],
            "trigger_memory_id": trigger.id,
        },
        "previous_stage_id": planning.id,
    }
    assert (await manager.get(planning.id)).status is StageStatus.COMPLETED


async def test_starting_the_detected_stage_declares_it(manager: StageManager) -> None:
    detected = await manager.get(
        await manager.stage_for("t1", memory("Lesson learned: the root cause was DNS.")) or ""
    )
    assert (detected.stage_type, detected.origin) == (R, StageOrigin.DETECTED)
    declared = await manager.start("t1", R)
    assert (declared.id, declared.origin) == (detected.id, StageOrigin.DECLARED)
    assert len(await manager.stages_of("t1")) == 1
    assert await manager.stage_for("t1", memory(kind="tool_call")) == detected.id


async def test_a_signal_starts_the_first_stage(manager: StageManager) -> None:
    stage_id = await manager.stage_for("t1", memory("Plan: first, we will list the tables."))
    started = await manager.get(stage_id or "")
    assert (started.stage_type, started.origin) == (P, StageOrigin.DETECTED)
    assert started.reason.startswith("action: 'plan:'")
    assert started.metadata["detection"]["confidence"] == 1.0


async def test_time_based_transition_when_a_memory_arrives(
    manager: StageManager, clock: FakeClock
) -> None:
    execution = await manager.start("t1", E, detect_transitions=True)
    clock.advance(1000)
    assert await manager.stage_for("t1", memory("Noted.")) == execution.id
    clock.advance(1000)
    reflection = await manager.get(await manager.stage_for("t1", memory("Noted.")) or "")
    assert reflection.stage_type is R
    assert reflection.reason.startswith("time: stage exceeded 1800 s (execution active for 20")


async def test_without_auto_transition_signals_are_ignored(
    store: FakeStageStore, clock: FakeClock
) -> None:
    manager = StageManager(store, clock, auto_transition=False, default_duration_seconds=1)
    assert await manager.stage_for("t1", memory(stage="execution")) is None
    planning = await manager.start("t1", P)
    clock.advance(60)
    assert await manager.stage_for("t1", memory(stage="execution")) == planning.id
    assert len(await manager.stages_of("t1")) == 1


async def test_memory_manager_links_memories_to_the_stage(
    services: Services, manager: StageManager
) -> None:
    retrieval = EnhancedRetrieval(
        services.store, services.vectors, services.embedder, services.clock, 200
    )
    memories = MemoryManager(
        services.store,
        services.embedder,
        services.sync,
        retrieval,
        services.clock,
        max_content_length=500,
        max_batch_size=10,
        stages=manager,
    )
    planning = await manager.start("t1", P, detect_transitions=True)
    scope = ScopeIds(task_id="t1", agent_id="a1")
    first = await memories.add(NewMemory("We need a cheap flight to Lisbon.", scope))
    tool = await memories.add(NewMemory("search_flights LIS", scope, metadata={"tool": "search"}))
    other = await memories.add(NewMemory("Unrelated note.", ScopeIds(agent_id="a1")))
    pinned = await memories.add(NewMemory("Booked.", scope, stage_id=planning.id))
    execution = await manager.current("t1")
    assert execution is not None
    assert execution.stage_type is E
    assert (first.stage_id, tool.stage_id, other.stage_id) == (planning.id, execution.id, None)
    assert pinned.stage_id == planning.id  # a memory that names its stage keeps it


# --- RPC ---------------------------------------------------------------------------------


async def test_rpc_methods(manager: StageManager) -> None:
    methods = stage_methods(manager)
    endpoint = JsonRpcEndpoint({m.name: m for m in methods}, RpcMetrics(CollectorRegistry()))

    async def call(method: str, **params: Any) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return await endpoint.handle(json.dumps(body).encode())

    assert (await call("memory.stage.current", task_id="t1"))["result"] == {"stage": None}
    first = (await call("memory.stage.start", task_id="t1", stage_type="planning"))["result"]
    assert (first["stage"]["status"], first["previous_stage_id"]) == ("active", None)
    second = (await call("memory.stage.start", task_id="t1", stage_type="execution"))["result"]
    assert second["previous_stage_id"] == first["stage_id"]
    current = (await call("memory.stage.current", task_id="t1"))["result"]["stage"]
    assert (current["id"], current["stage_type"]) == (second["stage_id"], "execution")
    got = (await call("memory.stage.get", stage_id=first["stage_id"]))["result"]
    assert (got["stage"]["status"], got["stage_memory"]) == ("completed", None)

    bad = await call("memory.stage.start", task_id="t1", stage_type="lunch")
    assert bad["error"]["code"] == -32602
    missing = await call("memory.stage.get", stage_id=first["stage_id"], task_id="t2")
    assert missing["error"]["data"]["code"] == "STAGE_NOT_FOUND"


def test_a_step_number_inside_a_report_is_not_a_plan() -> None:
    detector = StageDetector(default_duration_seconds=1800)
    report = memory("Ran the bisect step 1: commit 1 builds and the totals are wrong.")
    detection = detector.detect(report, None, T0)
    assert detection is None or detection.stage_type is not StageType.PLANNING
