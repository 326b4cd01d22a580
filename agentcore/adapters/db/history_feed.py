"""The history table read as one feed of changes, in position order (0014), for the change
stream: ``head()`` is where a new subscriber starts, ``after(position, scope_keys, limit)`` the
next events of some scopes.

Only positions that can no longer be preceded are read. SQLite writes one transaction at a
time and takes the next position inside it, so every committed position is final. PostgreSQL
draws positions from a sequence when a row is inserted, not when it commits: a reader that
delivered position 7 could later see position 6 commit. So a position is read only below a
*safe* mark: the sequence's value ``L`` read at some moment is safe once every transaction that
had an id then has ended (the insert trigger gives a transaction its id before it draws, so
whatever drew at most ``L`` had one): the snapshot's ``xmax`` taken right after ``L`` bounds
those transactions' ids, and ``L`` is safe once no transaction *of this database* with an
older id is running (``pg_stat_activity``). Only this database's transactions write its
history: a long transaction in another database of the cluster (which a snapshot's ``xmin``
counts) must not hold the stream back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from agentcore.adapters.db.engine import for_reads
from agentcore.adapters.db.tables import MemoryHistoryRow
from agentcore.services.ports import FeedEvent

SAFE_MARK_REUSE_SECONDS = 0.002  # subscribers woken together share one reading of the mark


class SqlHistoryFeed:
    """``ChangeFeed`` over the history table (SQLite or PostgreSQL)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = for_reads(engine)
        self._postgres = engine.dialect.name == "postgresql"
        self._lock = asyncio.Lock()
        self._safe = 0
        self._safe_read_at = -1.0
        self._candidate: tuple[int, int] | None = None  # (sequence value, xmax right after)

    async def head(self) -> int:
        """The highest position a reader may deliver now (0 when there is none)."""
        if self._postgres:
            return await self._safe_mark()
        async with self._engine.connect() as conn:
            found = await conn.scalar(select(func.max(MemoryHistoryRow.position)))
        return int(found or 0)

    async def after(self, position: int, scope_keys: Sequence[str], limit: int) -> list[FeedEvent]:
        """Up to ``limit`` events of ``scope_keys`` after ``position``, in position order."""
        h = MemoryHistoryRow
        stmt = (
            select(h.position, h.memory_id, h.scope_key, h.kind, h.actor, h.at, h.before, h.after)
            .where(h.position > position, h.scope_key.in_(scope_keys))
            .order_by(h.position)
            .limit(limit)
        )
        if self._postgres:
            safe = await self._safe_mark()
            if safe <= position:
                return []
            stmt = stmt.where(h.position <= safe)
        async with self._engine.connect() as conn:
            rows = (await conn.execute(stmt)).all()
        return [FeedEvent(*row) for row in rows]

    async def _safe_mark(self) -> int:
        async with self._lock:
            if time.monotonic() - self._safe_read_at > SAFE_MARK_REUSE_SECONDS:
                async with self._engine.connect() as conn:
                    self._safe = max(self._safe, await self._advance(conn))
                self._safe_read_at = time.monotonic()
            return self._safe

    async def _advance(self, conn: AsyncConnection) -> int:
        """The safe mark now (see the module doc); each statement reads its own snapshot."""
        safe = self._safe
        if self._candidate is not None and not await self._older_running(conn, self._candidate[1]):
            safe, self._candidate = self._candidate[0], None
        if self._candidate is None:
            row = (
                await conn.execute(
                    text("SELECT last_value, is_called FROM memory_history_position_seq")
                )
            ).one()
            drawn = int(row.last_value) if row.is_called else int(row.last_value) - 1
            xmax = await conn.scalar(text("SELECT pg_snapshot_xmax(pg_current_snapshot())::text"))
            if drawn > safe:
                if await self._older_running(conn, int(xmax)):
                    self._candidate = (drawn, int(xmax))
                else:
                    safe = drawn
        return safe

    @staticmethod
    async def _older_running(conn: AsyncConnection, xmax: int) -> bool:
        """Whether a transaction of this database whose id is below ``xmax`` (a 64-bit id)
        is still running (ids compared modulo 2^32, as PostgreSQL compares them)."""
        found = await conn.scalar(
            text(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND backend_xid IS NOT NULL"
                " AND ((:xmax - backend_xid::text::bigint + 4294967296) % 4294967296)"
                " BETWEEN 1 AND 2147483647"
            ),
            {"xmax": xmax % 4294967296},
        )
        return bool(found)
