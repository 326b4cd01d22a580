"""The history table read as one feed of changes, in position order (0014), for the change
stream: ``head()`` is where a new subscriber starts, ``after(position, scope_keys, limit)`` the
next events of some scopes.

Only positions that can no longer be preceded are read. SQLite writes one transaction at a
time and takes the next position inside it, so every committed position is final. PostgreSQL
draws positions from a sequence when a row is inserted, not when it commits: a reader that
delivered position 7 could later see position 6 commit. So a position is read only below a
*safe* mark: the sequence's value ``L`` read at some moment is safe once every transaction *of
this database* that was writing right after that read has ended (the insert trigger gives a
transaction its id before it draws, so whatever drew at most ``L`` and had not ended was
one of them; whatever had ended is committed or gone). Those transactions are taken from
``pg_stat_activity`` by id (each read in a statement of its own: autocommit, so each sees the
sessions as they are then, not as at a transaction's first look). Not by comparing ids with a
snapshot's ``xmax``: that is the last *ended* id plus one, so a writer whose id was above it
(it got its id after the last one to end, and drew before it) was taken for ended, its
position passed, and its event never sent. Only this database's transactions write its
history: a long transaction in another database of the cluster must not hold the stream back.
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
        # (sequence value, the ids of this database's writers right after it was read)
        self._candidate: tuple[int, list[int]] | None = None

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
        if self._candidate is not None and not await self._writers(conn, self._candidate[1]):
            safe, self._candidate = self._candidate[0], None
        if self._candidate is None:
            row = (
                await conn.execute(
                    text("SELECT last_value, is_called FROM memory_history_position_seq")
                )
            ).one()
            drawn = int(row.last_value) if row.is_called else int(row.last_value) - 1
            if drawn > safe:
                writers = await self._writers(conn)
                if writers:
                    self._candidate = (drawn, writers)
                else:
                    safe = drawn
        return safe

    @staticmethod
    async def _writers(conn: AsyncConnection, among: list[int] | None = None) -> list[int]:
        """The ids of this database's transactions writing now (of ``among`` only, if given)."""
        found = await conn.scalar(
            text(
                "SELECT array_agg(backend_xid::text::bigint) FROM pg_stat_activity"
                " WHERE datname = current_database() AND backend_xid IS NOT NULL"
                " AND (CAST(:among AS bigint[]) IS NULL"
                " OR backend_xid::text::bigint = ANY(CAST(:among AS bigint[])))"
            ),
            {"among": among},
        )
        return [int(xid) for xid in found or ()]
