"""Cost records and compression metrics in SQL (tables ``cost_records`` and
``compression_metrics`` of revision 0001)."""

from __future__ import annotations

from datetime import datetime
from typing import cast

from sqlalchemy import ColumnElement, Table, case, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from agentcore.adapters.db.tables import CompressionMetricRow, CostRecordRow
from agentcore.domain.compression_metrics import CompressionLevel, CompressionMetric, LevelSummary
from agentcore.domain.pricing import CostQuery, CostRecord, CostTotals

_COSTS = cast(Table, CostRecordRow.__table__)
_METRICS = cast(Table, CompressionMetricRow.__table__)


class SqlCostRepository:
    """``CostRepository`` over one ``AsyncSession`` (the unit of work's)."""

    def __init__(self, session: AsyncSession, dialect: str) -> None:
        self._session = session
        self._dialect = dialect

    async def add(self, record: CostRecord) -> None:
        await self._session.execute(
            insert(_COSTS).values(
                id=record.id,
                agent_id=record.agent_id,
                task_id=record.task_id,
                operation=record.operation,
                model=record.model,
                tokens_in=record.tokens_in,
                tokens_out=record.tokens_out,
                cost_usd=record.cost_usd,
                created_at=record.created_at,
            )
        )

    async def spent(self, since: datetime, until: datetime) -> float:
        # A range scan of ix_cost_records_created_at.
        stmt = select(func.coalesce(func.sum(_COSTS.c.cost_usd), 0.0)).where(
            _COSTS.c.created_at >= since, _COSTS.c.created_at < until
        )
        return float((await self._session.execute(stmt)).scalar_one())

    async def totals(self, query: CostQuery) -> list[CostTotals]:
        c = _COSTS.c
        conditions: list[ColumnElement[bool]] = [
            c.created_at >= query.since,
            c.created_at < query.until,
        ]
        if query.agent_id is not None:
            conditions.append(c.agent_id == query.agent_id)
        if query.task_id is not None:
            conditions.append(c.task_id == query.task_id)
        if query.operation is not None:
            conditions.append(c.operation == query.operation)
        model = func.coalesce(c.model, "unknown")
        stmt = (
            select(
                c.operation,
                model,
                func.count(),
                func.sum(c.tokens_in),
                func.sum(c.tokens_out),
                func.sum(c.cost_usd),
            )
            .where(*conditions)
            .group_by(c.operation, model)
            .order_by(c.operation, model)
        )
        return [
            CostTotals(str(op), str(name), int(calls), int(t_in), int(t_out), float(dollars))
            for op, name, calls, t_in, t_out, dollars in await self._session.execute(stmt)
        ]


class SqlCompressionMetricsRepository:
    """``CompressionMetricsRepository`` over one ``AsyncSession`` (the unit of work's)."""

    def __init__(self, session: AsyncSession, dialect: str) -> None:
        self._session = session
        self._dialect = dialect

    async def add(self, metric: CompressionMetric) -> None:
        await self._session.execute(
            insert(_METRICS).values(
                id=metric.id,
                stage_id=metric.stage_id,
                task_id=metric.task_id,
                level=metric.level.value,
                input_tokens=metric.input_tokens,
                output_tokens=metric.output_tokens,
                ratio=metric.ratio,
                retention=metric.retention,
                engine=metric.engine,
                fallback=metric.fallback,
                cost_usd=metric.cost_usd,
                created_at=metric.created_at,
            )
        )

    async def summary(self, task_id: str) -> dict[CompressionLevel, LevelSummary]:
        c = _METRICS.c
        stmt = (
            select(
                c.level,
                func.count(),
                func.sum(c.input_tokens),
                func.sum(c.output_tokens),
                func.avg(c.ratio),
                func.avg(c.retention),  # AVG skips NULLs: the measured retentions only
                func.sum(case((c.fallback, 1), else_=0)),
                func.sum(c.cost_usd),
            )
            .where(c.task_id == task_id)
            .group_by(c.level)
        )
        found: dict[CompressionLevel, LevelSummary] = {}
        for (
            level,
            count,
            t_in,
            t_out,
            ratio,
            retention,
            fallbacks,
            dollars,
        ) in await self._session.execute(stmt):
            found[CompressionLevel(level)] = LevelSummary(
                compressions=int(count),
                input_tokens=int(t_in),
                output_tokens=int(t_out),
                avg_ratio=float(ratio),
                avg_retention=None if retention is None else float(retention),
                fallbacks=int(fallbacks),
                cost_usd=float(dollars),
            )
        return found
