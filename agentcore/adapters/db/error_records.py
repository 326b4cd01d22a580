"""Error records in SQL: table ``error_records`` of revision 0001 (indexed by task and agent).

A record's stage type is read from ``stages`` by a join on its ``stage_id``: the history filter
by stage type and the records returned both see the stage as it is.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import ColumnElement, RowMapping, Table, delete, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from agentcore.adapters.db.tables import ErrorRecordRow, StageRow
from agentcore.domain.error_records import ErrorQuery, ErrorRecord, ErrorType
from agentcore.domain.models import StageType

_ERRORS = cast(Table, ErrorRecordRow.__table__)
_STAGES = cast(Table, StageRow.__table__)


def _record(row: RowMapping) -> ErrorRecord:
    stage_type = row["stage_type"]
    return ErrorRecord(
        id=row["id"],
        task_id=row["task_id"],
        error_type=ErrorType(row["error_type"]),
        description=row["description"],
        severity=float(row["severity"]),
        created_at=row["created_at"],
        stage_id=row["stage_id"],
        agent_id=row["agent_id"],
        context=dict(row["context"] or {}),
        recovery_action=row["recovery_action"],
        stage_type=None if stage_type is None else StageType(stage_type),
    )


class SqlErrorRecordRepository:
    """``ErrorRecordRepository`` over one ``AsyncSession`` (the unit of work's)."""

    def __init__(self, session: AsyncSession, dialect: str) -> None:
        self._session = session
        self._dialect = dialect

    async def add(self, record: ErrorRecord) -> None:
        values: dict[str, Any] = {
            "id": record.id,
            "task_id": record.task_id,
            "stage_id": record.stage_id,
            "agent_id": record.agent_id,
            "error_type": record.error_type.value,
            "description": record.description,
            "context": dict(record.context),
            "recovery_action": record.recovery_action,
            "severity": record.severity,
            "created_at": record.created_at,
        }
        await self._session.execute(insert(_ERRORS).values(values))

    async def delete(self, error_id: str) -> None:
        await self._session.execute(delete(_ERRORS).where(_ERRORS.c.id == error_id))

    async def query(self, query: ErrorQuery) -> list[ErrorRecord]:
        e, s = _ERRORS.c, _STAGES.c
        conditions: list[ColumnElement[bool]] = []
        if query.task_id is not None:
            conditions.append(e.task_id == query.task_id)
        if query.agent_id is not None:
            conditions.append(e.agent_id == query.agent_id)
        if query.min_severity is not None:
            conditions.append(e.severity >= query.min_severity)
        if query.stage_type is not None:
            conditions.append(s.stage_type == query.stage_type.value)
        stmt = (
            select(_ERRORS, s.stage_type)
            .select_from(_ERRORS.outerjoin(_STAGES, s.id == e.stage_id))
            .where(*conditions)
            .order_by(e.created_at.desc(), e.id.desc())
            .limit(query.limit)
        )
        rows = await self._session.execute(stmt)
        return [_record(row) for row in rows.mappings()]
