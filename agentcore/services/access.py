"""AccessRecorder: counts retrieval accesses without slowing the search path.

A search calls ``note`` (in-memory, never awaits, O(number of ids)); a background loop calls
``flush`` every second or so, which writes everything noted since the last flush in one
transaction. What is noted but not yet flushed is lost if the process dies: access counts
are a ranking signal, not a record (``memory.get`` still counts its access synchronously).

``last_accessed_at`` is written per bucket of ``bucket_seconds`` (the latest access in the
bucket), so a flush issues a handful of statements however many searches it covers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from agentcore.services.ports import Access, MemoryRepository, UnitOfWorkFactory

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Tally:
    count: int
    last_at: datetime


class AccessRecorder:
    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        *,
        max_pending: int = 100_000,
        bucket_seconds: float = 1.0,
    ) -> None:
        self._uow_factory = uow_factory
        self._max_pending = max_pending
        self._bucket = bucket_seconds
        self._pending: dict[str, _Tally] = {}
        self._dropped = 0
        self._lock = asyncio.Lock()

    @property
    def pending(self) -> int:
        """Distinct memories noted and not yet written."""
        return len(self._pending)

    def note(self, memory_ids: Sequence[str], at: datetime) -> None:
        """Count one access of each memory at ``at``. Never blocks; when ``max_pending``
        memories already wait (the flush loop is stuck), new ones are dropped and counted."""
        for memory_id in memory_ids:
            tally = self._pending.get(memory_id)
            if tally is not None:
                tally.count += 1
                tally.last_at = max(tally.last_at, at)
            elif len(self._pending) < self._max_pending:
                self._pending[memory_id] = _Tally(1, at)
            else:
                self._dropped += 1

    async def flush(self) -> int:
        """Write what was noted since the last flush in one transaction; returns how many
        memories were updated. On failure the tallies are kept for the next flush."""
        async with self._lock:
            if self._dropped:
                log.warning("dropped %d retrieval accesses (flush falling behind)", self._dropped)
                self._dropped = 0
            batch, self._pending = self._pending, {}
            if not batch:
                return 0
            try:
                async with self._uow_factory() as uow:
                    await self._write(uow.memories, batch)
                    await uow.commit()
            except BaseException:
                self._restore(batch)
                raise
            return len(batch)

    async def _write(self, repo: MemoryRepository, batch: Mapping[str, _Tally]) -> None:
        # Times are rounded to their bucket's latest access, so the repository groups the
        # memories into few statements.
        at_of = {memory_id: at for at, ids in self._buckets(batch).items() for memory_id in ids}
        await repo.add_accesses({k: Access(t.count, at_of[k]) for k, t in batch.items()})

    def _buckets(self, batch: Mapping[str, _Tally]) -> dict[datetime, list[str]]:
        """Memory ids grouped by access time bucket, keyed by the bucket's latest access."""
        groups: dict[int, list[str]] = {}
        latest: dict[int, datetime] = {}
        for memory_id, tally in batch.items():
            key = int(tally.last_at.timestamp() // self._bucket)
            groups.setdefault(key, []).append(memory_id)
            latest[key] = max(latest.get(key, tally.last_at), tally.last_at)
        return {latest[key]: ids for key, ids in groups.items()}

    def _restore(self, batch: Mapping[str, _Tally]) -> None:
        for memory_id, tally in batch.items():
            current = self._pending.get(memory_id)
            if current is None:
                self._pending[memory_id] = tally
            else:
                current.count += tally.count
                current.last_at = max(current.last_at, tally.last_at)
