"""Keeps the vector store in line with the database, which holds the truth.

Every write that changes a memory's vector queues an outbox row in the same transaction as the
memory itself. The write path then applies the vector change at once; the row is removed only
after the vector store has made the change durable (``flush``). A failed or interrupted vector
write therefore stays queued and is replayed from the database by ``run`` (and on start-up), so
an acknowledged write is never lost by either store.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from agentcore.domain.clock import Clock
from agentcore.domain.errors import AgentCoreError
from agentcore.domain.models import Memory
from agentcore.services.failures import log_failure
from agentcore.services.ports import (
    NEVER_EXPIRES,
    Embedder,
    OutboxEntry,
    UnitOfWorkFactory,
    VectorPoint,
    Vectors,
    VectorStore,
)

log = logging.getLogger(__name__)

UPSERT = "upsert"
DELETE = "delete"


def to_point(memory: Memory, vector: Sequence[float] | Vectors) -> VectorPoint:
    ids = {name: value for name, value in memory.scope.as_dict().items() if value is not None}
    expires = memory.expires_at.timestamp() if memory.expires_at else NEVER_EXPIRES
    scalars = {k: v for k, v in memory.metadata.items() if isinstance(v, str | int | float | bool)}
    return VectorPoint(
        id=memory.id,
        vector=vector,
        scope_key=memory.scope_key,
        scope_ids=ids,
        layer=memory.layer.value,
        stage_id=memory.stage_id,
        tags=tuple(memory.tags),
        critical=memory.critical,
        expires_at=expires,
        created_at=memory.created_at.timestamp(),
        metadata=scalars,
    )


@dataclass(frozen=True, slots=True)
class Prepared:
    """Vector writes read and embedded (``VectorSync.prepare``), not yet written."""

    to_delete: list[OutboxEntry]
    points: list[tuple[int, VectorPoint]]  # (outbox entry id, point)
    deletes: int  # vector deletes this process had issued when the memories were read


class VectorSync:
    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        vectors: VectorStore,
        embedder: Embedder,
        clock: Clock,
        batch_size: int = 100,
    ) -> None:
        self._uow_factory = uow_factory
        self._vectors = vectors
        self._embedder = embedder
        self._clock = clock
        self._batch_size = batch_size
        self._applied: set[int] = set()  # outbox ids applied but not yet flushed
        self._deletes = 0  # vector deletes issued so far (see ``write``)
        self._in_flight: set[int] = set()
        self._lock = asyncio.Lock()

    async def upsert(self, entries: Sequence[tuple[int, VectorPoint]]) -> bool:
        """Apply queued upserts now; on failure they stay queued for ``run``. True if applied."""
        points = [point for _, point in entries]
        ids = [entry_id for entry_id, _ in entries]
        return await self._apply(ids, UPSERT, lambda: self._vectors.upsert(points))

    async def delete(self, entry_ids: Sequence[int], memory_ids: Sequence[str]) -> bool:
        """Apply queued deletes now; on failure they stay queued for ``run``. True if applied."""
        self._deletes += 1
        return await self._apply(entry_ids, DELETE, lambda: self._vectors.delete(memory_ids))

    async def _apply(
        self, entry_ids: Sequence[int], op: str, write: Callable[[], Awaitable[None]]
    ) -> bool:
        self._in_flight.update(entry_ids)
        try:
            await write()
        except AgentCoreError as exc:
            log.warning("vector %s failed, queued for retry: %s", op, exc.message)
            await self._mark_failed(entry_ids)
            return False
        else:
            self._applied.update(entry_ids)
            return True
        finally:
            self._in_flight.difference_update(entry_ids)

    async def _mark_failed(self, entry_ids: Sequence[int]) -> None:
        async with self._uow_factory() as uow:
            await uow.outbox.mark_failed(entry_ids)
            await uow.commit()

    async def flush(self) -> int:
        """Make applied writes durable, then drop their outbox rows. Returns how many."""
        async with self._lock:
            done = sorted(self._applied)
            if not done:
                return 0
            await self._vectors.flush()
            async with self._uow_factory() as uow:
                await uow.outbox.remove(done)
                await uow.commit()
            self._applied.difference_update(done)
            return len(done)

    def reserve(self, entry_ids: Sequence[int]) -> None:
        """Entries another component (the indexer) will apply: ``replay`` leaves them until
        they are ``release``d."""
        self._in_flight.update(entry_ids)

    def release(self, entry_ids: Sequence[int]) -> None:
        self._in_flight.difference_update(entry_ids)

    async def replay(
        self, *, failed_only: bool = False, created_before: datetime | None = None
    ) -> int:
        """Re-apply queued writes not in flight here, from the database's current state.

        Returns how many were applied.
        """
        async with self._uow_factory() as uow:
            entries = await uow.outbox.pending(
                self._batch_size, failed_only=failed_only, created_before=created_before
            )
        entries = [e for e in entries if e.id not in self._applied | self._in_flight]
        return await self.apply(entries)

    async def apply(self, entries: Sequence[OutboxEntry]) -> int:
        """Apply queued writes from the database's current state: a memory's vector is
        embedded from its content as stored now, and a memory deleted or compacted meanwhile
        loses its vector whatever was queued. Returns how many were applied."""
        return await self.write(await self.prepare(entries))

    async def prepare(
        self,
        entries: Sequence[OutboxEntry],
        known: Mapping[str, tuple[str, Vectors]] | None = None,
    ) -> Prepared:
        """The first half of ``apply``: read the memories and embed those that keep a vector
        (``known``: memory id -> a text and its vector already computed, used while the
        memory's content is still that text). Several may run at once; ``write`` their
        results in the order they were prepared (a later preparation read the database
        later)."""
        if not entries:
            return Prepared([], [], self._deletes)
        deletes = self._deletes
        async with self._uow_factory(read_only=True) as uow:
            memories = await uow.memories.get_many(list({e.memory_id for e in entries}))
        by_id = {memory.id: memory for memory in memories}
        # A compacted memory has left search: its vector goes whatever was queued for it.
        gone = {i for i, memory in by_id.items() if memory.compacted_into_id is not None}
        to_delete: list[OutboxEntry] = []
        to_upsert: list[OutboxEntry] = []
        for e in entries:
            dropped = e.op == DELETE or e.memory_id not in by_id or e.memory_id in gone
            (to_delete if dropped else to_upsert).append(e)
        if not to_upsert:
            return Prepared(to_delete, [], deletes)
        vector_of: dict[str, Vectors] = {}
        for memory_id, (text, vector) in (known or {}).items():
            if memory_id in by_id and by_id[memory_id].content == text:
                vector_of[memory_id] = vector
        # each memory embedded once
        ids = [i for i in dict.fromkeys(e.memory_id for e in to_upsert) if i not in vector_of]
        try:
            if ids:
                vectors = await self._embedder.embed([by_id[i].content for i in ids])
                vector_of.update(zip(ids, vectors, strict=True))
        except AgentCoreError as exc:
            log.warning("embedding for the vector index failed: %s", exc.message)
            await self._mark_failed([e.id for e in to_upsert])
            return Prepared(to_delete, [], deletes)
        points = [(e.id, to_point(by_id[e.memory_id], vector_of[e.memory_id])) for e in to_upsert]
        return Prepared(to_delete, points, deletes)

    async def write(self, prepared: Prepared) -> int:
        """The second half of ``apply``: the vector store's deletes and upserts. Returns how
        many writes were applied."""
        applied = 0
        to_delete, points = prepared.to_delete, prepared.points
        if to_delete and await self.delete(
            [e.id for e in to_delete], [e.memory_id for e in to_delete]
        ):
            applied += len(to_delete)
        if points and await self.upsert(points):
            applied += len(points)
            if self._deletes != prepared.deletes:  # a delete may have come before this upsert
                await self._drop_removed_meanwhile(list(dict.fromkeys(p.id for _, p in points)))
        return applied

    async def _drop_removed_meanwhile(self, memory_ids: Sequence[str]) -> None:
        """A memory deleted or compacted while its vector was being embedded had its vector
        removed at once, possibly before this upsert wrote it back: remove it again. (Only
        when this process issued a vector delete meanwhile: another process's delete in that
        window leaves a vector that searches never return, since they check each candidate
        against the database.)"""
        async with self._uow_factory(read_only=True) as uow:
            found = await uow.memories.get_many(memory_ids)
        kept = {memory.id for memory in found if memory.compacted_into_id is None}
        removed = [memory_id for memory_id in memory_ids if memory_id not in kept]
        if not removed:
            return
        try:
            await self._vectors.delete(removed)
        except AgentCoreError as exc:  # searches check every candidate against the database
            log.warning("removing the vectors of deleted memories failed: %s", exc.message)

    async def recover(self) -> int:
        """At start-up: apply everything still queued (writes cut off by a crash)."""
        total = 0
        while (applied := await self.replay()) > 0:
            total += applied
            await self.flush()
        return total

    async def run(self, interval: float, flush_interval: float, stop: asyncio.Event) -> None:
        """Until ``stop``: retry failed writes every ``interval`` seconds; every
        ``flush_interval`` seconds flush, then pick up writes orphaned by another process."""
        await self._guarded(self.recover)
        last_flush = time.monotonic()
        while not stop.is_set():
            await self._guarded(partial(self.replay, failed_only=True))
            if time.monotonic() - last_flush >= flush_interval:
                await self._guarded(self.flush)
                await self._guarded(partial(self._replay_orphans, 2 * flush_interval))
                last_flush = time.monotonic()
            try:
                await asyncio.wait_for(stop.wait(), timeout=interval)
            except TimeoutError:
                continue
        await self.flush()

    async def _replay_orphans(self, age_seconds: float) -> int:
        return await self.replay(created_before=self._clock() - timedelta(seconds=age_seconds))

    async def _guarded(self, step: Callable[[], Awaitable[int]]) -> None:
        try:
            await step()
        except Exception as exc:  # the loop must outlive any single failure; it is logged
            log_failure(log, "vector sync step failed", exc)
