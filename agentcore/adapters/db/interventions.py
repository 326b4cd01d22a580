"""Interventions of the ACE meta-thinker in SQL: table ``interventions`` (revision 0008),
read newest first per task."""

from __future__ import annotations

from typing import cast

from sqlalchemy import RowMapping, Table, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from agentcore.adapters.db.tables import InterventionRow
from agentcore.domain.ace import Intervention, Outcome

_TABLE = cast(Table, InterventionRow.__table__)


def _intervention(row: RowMapping) -> Intervention:
    return Intervention(
        id=row["id"],
        task_id=row["task_id"],
        intervention_type=row["intervention_type"],
        outcome=Outcome(row["outcome"]),
        created_at=row["created_at"],
        agent_id=row["agent_id"],
        decision_type=row["decision_type"],
        memory_ids=tuple(row["memory_ids"] or ()),
        details=dict(row["details"] or {}),
        changes=tuple(row["changes"] or ()),
    )


class SqlInterventionRepository:
    """``InterventionRepository`` over one ``AsyncSession`` (the unit of work's)."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def add(self, intervention: Intervention) -> None:
        values = {
            "id": intervention.id,
            "task_id": intervention.task_id,
            "agent_id": intervention.agent_id,
            "intervention_type": intervention.intervention_type,
            "decision_type": intervention.decision_type,
            "outcome": intervention.outcome.value,
            "memory_ids": list(intervention.memory_ids),
            "details": dict(intervention.details),
            "changes": list(intervention.changes),
            "created_at": intervention.created_at,
        }
        await self._session.execute(insert(_TABLE).values(values))

    async def of_task(self, task_id: str, limit: int) -> list[Intervention]:
        stmt = (
            select(_TABLE)
            .where(_TABLE.c.task_id == task_id)
            .order_by(_TABLE.c.created_at.desc(), _TABLE.c.id.desc())
            .limit(limit)
        )
        return [_intervention(row) for row in (await self._session.execute(stmt)).mappings()]

    async def count(self, task_id: str) -> dict[tuple[str, str], int]:
        """How many interventions of the task by (type, outcome)."""
        t = _TABLE.c
        stmt = (
            select(t.intervention_type, t.outcome, func.count())
            .where(t.task_id == task_id)
            .group_by(t.intervention_type, t.outcome)
        )
        rows = await self._session.execute(stmt)
        return {(kind, outcome): int(n) for kind, outcome, n in rows}
