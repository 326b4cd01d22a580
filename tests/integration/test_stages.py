"""StageManager on the real stack: SQLite + qdrant-edge and PostgreSQL + Qdrant (local mode),
migrated by Alembic (0004 adds the one-active-stage-per-task index), with the real embedder."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime
from typing import Self

import pytest

from agentcore.adapters.db.stages import (
    SqlStageMemoryRepository,
    SqlStageRepository,
    SqlTaskContextRepository,
)
from agentcore.adapters.db.uow import SqlUnitOfWork, SqlUnitOfWorkFactory
from agentcore.bootstrap import Container
from agentcore.domain.clock import utcnow
from agentcore.domain.errors import Conflict
from agentcore.domain.models import ScopeIds, StageType
from agentcore.domain.records import NewMemory
from agentcore.domain.stages import Stage, StageMemory, StageOrigin, StageStatus, TaskContext
from agentcore.services.compass.stages import StageManager
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


def stage_manager(stack: Container) -> StageManager:
    return StageManager(
        _StageUnitOfWorkFactory(stack.engine),
        utcnow,
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
