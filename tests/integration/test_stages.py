"""StageManager on the real stack: SQLite + qdrant-edge and PostgreSQL + Qdrant (local mode),
migrated by Alembic (0004 adds the one-active-stage-per-task index, 0017 the compression
claims), with the real embedder."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, Self

import pytest

from agentcore.adapters.compressors import ExtractiveEngine
from agentcore.adapters.db.stages import (
    SqlStageMemoryRepository,
    SqlStageRepository,
    SqlTaskContextRepository,
)
from agentcore.adapters.db.uow import SqlUnitOfWork, SqlUnitOfWorkFactory
from agentcore.adapters.tokens import BpeTokenCounter
from agentcore.bootstrap import Container
from agentcore.domain.clock import Clock, utcnow
from agentcore.domain.errors import Conflict
from agentcore.domain.models import ScopeIds, StageType
from agentcore.domain.records import NewMemory
from agentcore.domain.stages import Stage, StageMemory, StageOrigin, StageStatus, TaskContext
from agentcore.services.compass.compression import ContextCompressor
from agentcore.services.compass.orchestration import (
    RESUBMIT_SECONDS,
    CompassService,
    CompassSettings,
)
from agentcore.services.compass.stages import StageManager
from agentcore.services.jobs import JobStatus, QueueFacts
from agentcore.services.memory_manager import ListRequest, MemoryManager
from agentcore.services.ports import StageMemoryRepository, StageRepository, TaskContextRepository

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
SCOPE = ScopeIds(task_id="trip-42", agent_id="planner")


class _StageUnitOfWork(SqlUnitOfWork):
    """The SQL unit of work with the stage repositories (until the lead wires them in)."""

    stages: StageRepository
    stage_memories: StageMemoryRepository
    task_contexts: TaskContextRepository

    async def __aenter__(self) -> Self:
        await super().__aenter__()
        session = self._session
        assert session is not None
        dialect = session.get_bind().dialect.name
        self.stages = SqlStageRepository(session, dialect)
        self.stage_memories = SqlStageMemoryRepository(session, dialect)
        self.task_contexts = SqlTaskContextRepository(session, dialect)
        return self


class _StageUnitOfWorkFactory(SqlUnitOfWorkFactory):
    def __call__(self, *, read_only: bool = False) -> _StageUnitOfWork:
        return _StageUnitOfWork(self._read_sessions if read_only else self._sessions)


def stage_manager(stack: Container, clock: Clock = utcnow) -> StageManager:
    return StageManager(
        _StageUnitOfWorkFactory(stack.engine),
        clock,
        auto_transition=stack.settings.stage_auto_transition,
        default_duration_seconds=stack.settings.stage_default_duration_seconds,
    )


def memory_manager(stack: Container, stages: StageManager) -> MemoryManager:
    return MemoryManager(
        stack.uow_factory,
        stack.embedder,
        stack.vector_sync,
        stack.retrieval,
        utcnow,
        max_content_length=stack.settings.memory_max_context_length,
        max_batch_size=stack.settings.memory_max_batch_size,
        stages=stages,
    )


async def test_memories_of_a_task_join_its_stage_and_a_tool_call_moves_it(
    stack: Container,
) -> None:
    stages = stage_manager(stack)
    memories = memory_manager(stack, stages)
    assert (await memories.add(NewMemory("Book a trip to Lisbon.", SCOPE))).stage_id is None

    planning = await stages.start(
        SCOPE.task_id or "", "planning", agent_id="planner", detect_transitions=True
    )
    assert (await stages.current(SCOPE.task_id or "")) == planning  # origin and opt-in stored
    plan = await memories.add(NewMemory("Plan: compare fares, then book the cheapest.", SCOPE))
    note = await memories.add(NewMemory("The budget is 600 euros.", SCOPE))
    assert (plan.stage_id, note.stage_id) == (planning.id, planning.id)

    call = await memories.add(
        NewMemory(
            "search_flights(origin='OPO', destination='LIS')",
            SCOPE,
            metadata={"kind": "tool_call", "tool": "search_flights"},
        )
    )
    execution = await stages.current(SCOPE.task_id or "")
    assert execution is not None
    assert (execution.stage_type, execution.reason) == (
        StageType.EXECUTION,
        "action: metadata.kind=tool_call",
    )
    assert execution.origin is StageOrigin.DETECTED
    assert execution.metadata["detection"]["trigger_memory_id"] == call.id
    assert execution.metadata["previous_stage_id"] == planning.id
    assert call.stage_id == execution.id
    assert (await stages.get(planning.id)).status is StageStatus.COMPLETED

    page = await memories.list_page(ListRequest(SCOPE, stage_id=planning.id))
    assert {m.id for m in page.memories} == {plan.id, note.id}
    assert [s.id for s in await stages.pending_compression()] == [planning.id]


async def test_the_database_allows_one_active_stage_per_task(stack: Container) -> None:
    factory = _StageUnitOfWorkFactory(stack.engine)
    first = Stage("00000000-0000-4000-8000-000000000001", "t", StageType.PLANNING,
                  StageStatus.ACTIVE, T0)  # fmt: skip
    second = Stage("00000000-0000-4000-8000-000000000002", "t", StageType.EXECUTION,
                   StageStatus.ACTIVE, T0)  # fmt: skip
    async with factory() as uow:
        await uow.stages.add(first)
        with pytest.raises(Conflict):
            await uow.stages.add(second)
        other = replace(second, task_id="other-task")
        await uow.stages.add(other)  # the unit of work is still usable
        await uow.commit()
    async with factory(read_only=True) as uow:
        assert (await uow.stages.active("t"), await uow.stages.active("other-task")) == (
            first,
            other,
        )


async def test_concurrent_starts_leave_one_active_stage(stack: Container) -> None:
    stages = stage_manager(stack)
    kinds = [StageType.PLANNING, StageType.EXECUTION, StageType.REFLECTION] * 3
    started = await asyncio.gather(*(stages.start("busy", kind) for kind in kinds))
    history = await stages.stages_of("busy")
    active = [s for s in history if s.status is StageStatus.ACTIVE]
    assert len(active) == 1
    assert active[0] == await stages.current("busy")
    assert {s.id for s in started} <= {s.id for s in history}
    assert all(s.completed_at is not None for s in history if s not in active)


async def test_stage_memories_and_task_contexts_are_stored(stack: Container) -> None:
    stages = stage_manager(stack)
    planning = await stages.start("t9", "planning")
    await stages.complete("t9", planning.id)
    record = StageMemory(
        planning.id, "t9", "Chose Postgres 15.", ("pin versions",), ("budget is 5k USD",),
        ("m1", "m2"), 9.8, {"retention": 1.0, "ratio_ok": True}, "extractive", False, 0.0,
        400, 41, T0,
    )  # fmt: skip
    assert await stages.save_stage_memory(record) == record
    later = replace(record, summary="Chose Postgres 16.", fallback=True)
    assert await stages.save_stage_memory(later) == record  # the first compression stands
    assert await stages.stage_memory(planning.id) == record
    assert await stages.stage_memories_of("t9") == [record]
    assert await stages.pending_compression() == []
    assert await stages.detail(planning.id) == (await stages.get(planning.id), record)

    context = TaskContext("t9", "Planned.", None, (planning.id,), ("budget",), {"errors": 0}, T0)
    await stages.save_task_context(context)
    moved = TaskContext("t9", "Executing.", "s2", (planning.id,), ("budget",), {"errors": 1}, T0)
    await stages.save_task_context(moved)
    assert await stages.task_context("t9") == moved


class _Submissions:
    """A job queue that records the stages whose compression it was given (they run nowhere)
    and reports ``workers`` live workers."""

    def __init__(self) -> None:
        self.stage_ids: list[str] = []
        self.workers = 1

    async def submit(self, kind: str, payload: dict[str, Any]) -> str:
        self.stage_ids.append(payload["stage_id"])
        return f"job-{id(self)}-{len(self.stage_ids)}"

    async def facts(self) -> QueueFacts:
        return QueueFacts(workers_alive=self.workers, queued=0, oldest_queued_seconds=None)

    async def status(self, job_id: str) -> JobStatus | None:
        return None

    async def wait(self, job_id: str, max_wait: float) -> JobStatus:
        raise AssertionError("nothing here waits")

    async def close(self) -> None:
        return None


async def test_of_the_processes_that_find_a_stage_pending_one_submits_its_job(
    stack: Container,
) -> None:
    """Each serving process sweeps for pending stages: a stage's compression is claimed in
    the database, so one job is submitted for it however many processes sweep, none for a
    stage whose completion submitted it, and again once a claim is RESUBMIT_SECONDS old
    while a worker is alive (the job may be lost with its worker)."""
    now = [datetime.now(UTC)]

    def clock() -> datetime:
        return now[0]

    counter = BpeTokenCounter()
    processes = []
    for _ in range(2):
        queue = _Submissions()
        stages = stage_manager(stack, clock)
        compass = CompassService(
            stages,
            stack.uow_factory,
            ContextCompressor(ExtractiveEngine(counter), counter),
            stack.costs,
            stack.compression_metrics,
            queue,
            counter,
            clock,
            CompassSettings(),
        )
        processes.append((compass, queue, stages))
    (a, queue_a, stages), (b, queue_b, _) = processes
    planning = await stages.start("t7", "planning")
    execution = await stages.start("t7", "execution")  # ends planning: nobody submitted its job

    swept = await asyncio.gather(a.compress_pending(), b.compress_pending())
    assert sorted(swept) == [0, 1]
    assert queue_a.stage_ids + queue_b.stage_ids == [planning.id]
    assert (await a.compress_pending(), await b.compress_pending()) == (0, 0)

    done = await a.complete_stage("t7", execution.id, wait=False)
    assert done.job_id is not None
    assert queue_a.stage_ids[-1] == execution.id
    assert await b.compress_pending() == 0  # its completion submitted the job

    now[0] += timedelta(seconds=RESUBMIT_SECONDS + 1)
    queue_b.workers = 0
    assert await b.compress_pending() == 0  # no worker took the jobs: they still wait
    submitted = len(queue_a.stage_ids)
    assert await a.compress_pending() == 2
    assert set(queue_a.stage_ids[submitted:]) == {planning.id, execution.id}
    assert await b.compress_pending() == 0
