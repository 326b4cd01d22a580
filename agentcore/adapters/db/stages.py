"""COMPASS records in SQL: ``stages``, ``stage_memories`` and ``task_contexts`` (revision 0001;
0004 adds the partial unique index that allows one active stage per task, 0007 how a stage
was set, 0017 who submitted its compression job)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    CursorResult,
    RowMapping,
    Table,
    exists,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from agentcore.adapters.db.dialect import insert_ignoring_conflicts, upsert
from agentcore.adapters.db.tables import StageMemoryRow, StageRow, TaskContextRow
from agentcore.domain.errors import Conflict, StageNotFound
from agentcore.domain.models import StageType
from agentcore.domain.stages import Stage, StageMemory, StageOrigin, StageStatus, TaskContext

_STAGES = cast(Table, StageRow.__table__)
_STAGE_MEMORIES = cast(Table, StageMemoryRow.__table__)
_TASK_CONTEXTS = cast(Table, TaskContextRow.__table__)
_LOCK_SPACE = 0x53544147  # "STAG": the first key of the two-key advisory locks of tasks


def _stage_values(stage: Stage) -> dict[str, Any]:
    return {
        "id": stage.id,
        "task_id": stage.task_id,
        "stage_type": stage.stage_type.value,
        "status": stage.status.value,
        "started_at": stage.started_at,
        "completed_at": stage.completed_at,
        "agent_id": stage.agent_id,
        "session_id": stage.session_id,
        "detection_reason": stage.reason,
        "metadata": dict(stage.metadata),
        "origin": stage.origin.value,
        "detect_transitions": stage.detect_transitions,
    }


def _stage(row: RowMapping) -> Stage:
    return Stage(
        id=row["id"],
        task_id=row["task_id"],
        stage_type=StageType(row["stage_type"]),
        status=StageStatus(row["status"]),
        started_at=row["started_at"],
        completed_at=row["completed_at"],
        agent_id=row["agent_id"],
        session_id=row["session_id"],
        reason=row["detection_reason"] or "",
        metadata=dict(row["metadata"] or {}),
        origin=StageOrigin(row["origin"]),
        detect_transitions=bool(row["detect_transitions"]),
    )


class SqlStageRepository:
    """``StageRepository`` over one ``AsyncSession`` (the unit of work's)."""

    def __init__(self, session: AsyncSession, dialect: str) -> None:
        self._session = session
        self._dialect = dialect

    async def lock_task(self, task_id: str) -> None:
        """Postgres: a transaction-scoped advisory lock on the task, so concurrent changes of
        its stage take turns instead of racing on the unique index. SQLite: nothing to do,
        its write transactions already hold the database lock."""
        if self._dialect == "postgresql":
            await self._session.execute(
                text("SELECT pg_advisory_xact_lock(:space, hashtext(:task_id))"),
                {"space": _LOCK_SPACE, "task_id": task_id},
            )

    async def add(self, stage: Stage) -> None:
        stmt = insert_ignoring_conflicts(self._dialect, _STAGES, _stage_values(stage))
        result = cast(CursorResult[Any], await self._session.execute(stmt))
        if result.rowcount == 0:
            raise Conflict(
                "the task already has an active stage", task_id=stage.task_id, stage_id=stage.id
            )

    async def update(self, stage: Stage) -> None:
        values = _stage_values(stage)
        del values["id"]
        stmt = update(_STAGES).where(_STAGES.c.id == stage.id).values(values)
        result = cast(CursorResult[Any], await self._session.execute(stmt))
        if result.rowcount == 0:
            raise StageNotFound("stage not found", stage_id=stage.id)

    async def get(self, stage_id: str, *, lock: bool = False) -> Stage | None:
        stmt = select(_STAGES).where(_STAGES.c.id == stage_id)
        if lock:  # a no-op on SQLite, whose write transactions hold the database lock
            stmt = stmt.with_for_update()
        row = (await self._session.execute(stmt)).mappings().one_or_none()
        return None if row is None else _stage(row)

    async def active(self, task_id: str, *, lock: bool = False) -> Stage | None:
        stmt = select(_STAGES).where(
            _STAGES.c.task_id == task_id, _STAGES.c.status == StageStatus.ACTIVE.value
        )
        if lock:
            stmt = stmt.with_for_update()
        row = (await self._session.execute(stmt)).mappings().first()
        return None if row is None else _stage(row)

    async def of_task(self, task_id: str) -> list[Stage]:
        stmt = (
            select(_STAGES)
            .where(_STAGES.c.task_id == task_id)
            .order_by(_STAGES.c.started_at, _STAGES.c.id)
        )
        return [_stage(row) for row in (await self._session.execute(stmt)).mappings()]

    async def pending_compression(self, limit: int, claimed_before: datetime | None) -> list[Stage]:
        compressed = exists().where(_STAGE_MEMORIES.c.stage_id == _STAGES.c.id)
        stmt = (
            select(_STAGES)
            .where(
                _STAGES.c.status == StageStatus.COMPLETED.value,
                ~compressed,
                _claimable(claimed_before),
            )
            .order_by(_STAGES.c.completed_at, _STAGES.c.id)
            .limit(max(limit, 0))
        )
        return [_stage(row) for row in (await self._session.execute(stmt)).mappings()]

    async def claim_compression(
        self, stage_id: str, at: datetime, claimed_before: datetime | None
    ) -> bool:
        stmt = (
            update(_STAGES)
            .where(_STAGES.c.id == stage_id, _claimable(claimed_before))
            .values(compression_claimed_at=at)
        )
        result = cast(CursorResult[Any], await self._session.execute(stmt))
        return result.rowcount == 1


def _claimable(claimed_before: datetime | None) -> ColumnElement[bool]:
    """Never claimed, or (with a time) claimed before it."""
    unclaimed = _STAGES.c.compression_claimed_at.is_(None)
    if claimed_before is None:
        return unclaimed
    return or_(unclaimed, _STAGES.c.compression_claimed_at < claimed_before)


class SqlStageMemoryRepository:
    """``StageMemoryRepository``: one row per stage, whose id is the stage's id."""

    def __init__(self, session: AsyncSession, dialect: str) -> None:
        self._session = session
        self._dialect = dialect

    async def save(self, memory: StageMemory) -> bool:
        values = {
            "id": memory.stage_id,
            "stage_id": memory.stage_id,
            "task_id": memory.task_id,
            "summary": memory.summary,
            "insights": list(memory.insights),
            "critical_facts": list(memory.critical_facts),
            "raw_memory_ids": list(memory.raw_memory_ids),
            "compression_ratio": memory.compression_ratio,
            "quality_metrics": dict(memory.quality_metrics),
            "engine": memory.engine,
            "fallback": memory.fallback,
            "cost_usd": memory.cost_usd,
            "tokens_in": memory.tokens_in,
            "tokens_out": memory.tokens_out,
            "created_at": memory.created_at,
        }
        stmt = insert_ignoring_conflicts(self._dialect, _STAGE_MEMORIES, values)
        result = cast(CursorResult[Any], await self._session.execute(stmt))
        return result.rowcount > 0

    async def get(self, stage_id: str) -> StageMemory | None:
        stmt = select(_STAGE_MEMORIES).where(_STAGE_MEMORIES.c.stage_id == stage_id)
        row = (await self._session.execute(stmt)).mappings().one_or_none()
        return None if row is None else _stage_memory(row)

    async def of_task(self, task_id: str) -> list[StageMemory]:
        stmt = (
            select(_STAGE_MEMORIES)
            .where(_STAGE_MEMORIES.c.task_id == task_id)
            .order_by(_STAGE_MEMORIES.c.created_at, _STAGE_MEMORIES.c.id)
        )
        return [_stage_memory(row) for row in (await self._session.execute(stmt)).mappings()]


def _stage_memory(row: RowMapping) -> StageMemory:
    return StageMemory(
        stage_id=row["stage_id"],
        task_id=row["task_id"],
        summary=row["summary"],
        insights=tuple(row["insights"] or ()),
        critical_facts=tuple(row["critical_facts"] or ()),
        raw_memory_ids=tuple(row["raw_memory_ids"] or ()),
        compression_ratio=row["compression_ratio"],
        quality_metrics=dict(row["quality_metrics"] or {}),
        engine=row["engine"],
        fallback=row["fallback"],
        cost_usd=row["cost_usd"],
        tokens_in=row["tokens_in"],
        tokens_out=row["tokens_out"],
        created_at=row["created_at"],
    )


class SqlTaskContextRepository:
    """``TaskContextRepository``: one row per task."""

    def __init__(self, session: AsyncSession, dialect: str) -> None:
        self._session = session
        self._dialect = dialect

    async def save(self, context: TaskContext) -> None:
        values = {
            "task_id": context.task_id,
            "progress_summary": context.progress_summary,
            "current_stage_id": context.current_stage_id,
            "completed_stage_ids": list(context.completed_stage_ids),
            "critical_constraints": list(context.critical_constraints),
            "performance_metrics": dict(context.performance_metrics),
            "updated_at": context.updated_at,
        }
        await self._session.execute(upsert(self._dialect, _TASK_CONTEXTS, values, "task_id"))

    async def get(self, task_id: str) -> TaskContext | None:
        stmt = select(_TASK_CONTEXTS).where(_TASK_CONTEXTS.c.task_id == task_id)
        row = (await self._session.execute(stmt)).mappings().one_or_none()
        if row is None:
            return None
        return TaskContext(
            task_id=row["task_id"],
            progress_summary=row["progress_summary"],
            current_stage_id=row["current_stage_id"],
            completed_stage_ids=tuple(row["completed_stage_ids"] or ()),
            critical_constraints=tuple(row["critical_constraints"] or ()),
            performance_metrics=dict(row["performance_metrics"] or {}),
            updated_at=row["updated_at"],
        )
