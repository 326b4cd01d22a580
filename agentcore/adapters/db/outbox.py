"""The vector outbox: vector writes owed to the vector store, oldest first, written in the
same transaction as the memory they follow."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import cast

from sqlalchemy import Table, delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from agentcore.adapters.db.dialect import chunks
from agentcore.adapters.db.tables import VectorOutboxRow
from agentcore.services.ports import OutboxEntry

_OUTBOX = cast(Table, VectorOutboxRow.__table__)
OUTBOX_OPS = frozenset({"upsert", "delete"})


_OUTBOX_INSERT = insert(_OUTBOX).returning(_OUTBOX.c.id, sort_by_parameter_order=True)


class SqlOutboxRepository:
    """Vector writes owed to the vector store, oldest first."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def add(self, memory_id: str, op: str) -> int:
        """Queue a write; returns the entry id."""
        return (await self.add_many([memory_id], op))[0]

    async def add_many(self, memory_ids: Sequence[str], op: str) -> list[int]:
        if op not in OUTBOX_OPS:
            raise ValueError(f"outbox op must be one of {sorted(OUTBOX_OPS)}, not {op!r}")
        if not memory_ids:
            return []
        now = datetime.now(UTC)
        params = [
            {"memory_id": memory_id, "op": op, "attempts": 0, "created_at": now}
            for memory_id in memory_ids
        ]
        result = await self._session.execute(
            _OUTBOX_INSERT, params[0] if len(params) == 1 else params
        )
        return [int(entry_id) for entry_id in result.scalars()]

    async def pending(
        self, limit: int, *, failed_only: bool = False, created_before: datetime | None = None
    ) -> list[OutboxEntry]:
        stmt = select(VectorOutboxRow)
        if failed_only:
            stmt = stmt.where(VectorOutboxRow.attempts > 0)
        if created_before is not None:
            stmt = stmt.where(VectorOutboxRow.created_at < created_before)
        stmt = (
            stmt.order_by(VectorOutboxRow.id)
            .limit(max(limit, 0))
            .execution_options(populate_existing=True)
        )
        return [
            OutboxEntry(id=row.id, memory_id=row.memory_id, op=row.op, attempts=row.attempts)
            for row in await self._session.scalars(stmt)
        ]

    async def count(self) -> int:
        """How many writes are still owed."""
        stmt = select(func.count()).select_from(_OUTBOX)
        return int((await self._session.execute(stmt)).scalar_one())

    async def remove(self, entry_ids: Sequence[int]) -> None:
        for part in chunks(list(dict.fromkeys(entry_ids))):
            await self._session.execute(delete(_OUTBOX).where(_OUTBOX.c.id.in_(part)))

    async def mark_failed(self, entry_ids: Sequence[int]) -> None:
        """Count one more failed attempt and when it happened."""
        now = datetime.now(UTC)
        for part in chunks(list(dict.fromkeys(entry_ids))):
            stmt = (
                update(_OUTBOX)
                .where(_OUTBOX.c.id.in_(part))
                .values(attempts=_OUTBOX.c.attempts + 1, last_error_at=now)
            )
            await self._session.execute(stmt)
