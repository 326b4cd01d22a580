"""MemoryManager: coordinates every memory.* call over the store, the vectors and the embedder."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from agentcore.domain.clock import Clock
from agentcore.domain.errors import Conflict, InvalidParams, MemoryNotFound
from agentcore.domain.filters import (
    Condition,
    Field,
    Filter,
    Op,
    all_of,
    metadata_equals,
    tags_filter,
)
from agentcore.domain.models import (
    EventKind,
    Memory,
    MemoryEvent,
    ScopeIds,
    ScopeLevel,
    new_id,
    scope_key,
)
from agentcore.domain.records import (
    MemoryChanges,
    NewMemory,
    apply_changes,
    build_memory,
    parse_layer,
)
from agentcore.domain.scopes import owning_level, visible_scope_keys
from agentcore.services.duplicates import repeats
from agentcore.services.group_commit import GroupCommit
from agentcore.services.indexer import VectorIndexer
from agentcore.services.ports import (
    Access,
    Embedder,
    ListQuery,
    ScopeLayerCount,
    StageResolver,
    Superseded,
    UnitOfWork,
    UnitOfWorkFactory,
)
from agentcore.services.retrieval import (
    EnhancedRetrieval,
    SearchOutcome,
    SearchQuery,
    prime_ranking_soon,
)
from agentcore.services.supersession import may_supersede, supersede
from agentcore.services.vector_sync import DELETE, UPSERT, VectorSync

log = logging.getLogger(__name__)

WAIT_INDEXED_SECONDS = 30.0  # ``vectors_written``: what a caller may wait, at most


@dataclass(frozen=True, slots=True)
class Stored:
    """What an add left in the store: its new memory, or the live one it repeats exactly."""

    memory: Memory
    deduplicated: bool = False


@dataclass(frozen=True, slots=True)
class _Write:
    memory: Memory
    unique: bool  # an exact repeat answers with the stored memory


@dataclass(frozen=True, slots=True)
class ListRequest:
    scope: ScopeIds
    layer: str | None = None
    scope_level: str | None = None
    stage_id: str | None = None
    tags: Sequence[str] | None = None
    tags_match: str = "any"  # or "all"
    since: datetime | None = None
    until: datetime | None = None
    after: tuple[datetime, str] | None = None
    limit: int = 20
    order_desc: bool = True
    metadata: dict[str, str | int | bool] | None = None  # exact values of top-level keys
    where: Filter | None = None  # agentcore.domain.filters; ANDed with the fields above
    keyed_only: bool = False
    by_importance: bool = False  # most important first (with order_desc), then newest
    after_importance: float | None = None  # the cursor's, with by_importance
    include_expired: bool = False
    superseded: Superseded = "include"


@dataclass(frozen=True, slots=True)
class Page:
    memories: list[Memory]
    next_after: tuple[datetime, str] | None
    total_count: int


class Retire(Enum):
    """What happens to the sources of a derived memory."""

    KEEP = "keep"
    DELETE = "delete"
    HIDE = "hide"  # out of search and listings, readable by id (compaction)


def _snapshot(memory: Memory) -> dict[str, Any]:
    return asdict(memory)


def _jsonable(value: Any) -> Any:
    """History events are stored as JSON: datetimes become ISO strings, enums their values."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    return value


class MemoryManager:
    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        embedder: Embedder,
        vector_sync: VectorSync,
        retrieval: EnhancedRetrieval,
        clock: Clock,
        max_content_length: int,
        max_batch_size: int,
        stages: StageResolver | None = None,
        default_ttl: Mapping[ScopeLevel, int] | None = None,
    ) -> None:
        self._uow_factory = uow_factory
        self._embedder = embedder
        self._sync = vector_sync
        self._indexer = VectorIndexer(vector_sync, fresh=retrieval.fresh)
        self._writes = GroupCommit(self._store_new, max_items=max_batch_size)
        self._retrieval = retrieval
        self._clock = clock
        self._max_content = max_content_length
        self._max_batch = max_batch_size
        self._stages = stages
        self._default_ttl = dict(default_ttl or {})  # seconds, by scope level

    async def add(self, new: NewMemory) -> Memory:
        return (await self.add_batch([new]))[0]

    async def add_batch(self, items: Sequence[NewMemory]) -> list[Memory]:
        return [stored.memory for stored in await self.store(items)]

    async def store(self, items: Sequence[NewMemory]) -> list[Stored]:
        """Store all items or none; each is validated before anything is written, and a
        ``unique`` item that repeats a live memory answers with it (``services.duplicates``)."""
        if not items or len(items) > self._max_batch:
            raise InvalidParams(
                f"a batch holds 1 to {self._max_batch} items",
                errors=[{"field": "items", "message": f"1 to {self._max_batch} items"}],
            )
        now = self._clock()
        model = self._embedder.model_name
        # One microsecond apart, so the order of a batch survives in time-ordered listings.
        memories = [
            build_memory(
                item, now + timedelta(microseconds=i), self._max_content, model, self._default_ttl
            )
            for i, item in enumerate(items)
        ]
        if self._stages is not None:
            for memory in memories:
                if memory.stage_id is None and memory.scope.task_id is not None:
                    memory.stage_id = await self._stages.stage_for(memory.scope.task_id, memory)
        writes = [_Write(m, item.unique) for m, item in zip(memories, items, strict=True)]
        stored = await self._writes.submit(writes)  # with the adds that arrive meanwhile
        prime_ranking_soon([s.memory.content for s in stored if not s.deduplicated])
        return stored

    async def _store_new(self, writes: list[_Write]) -> list[Stored]:
        """One transaction for the new memories of one or more ``store`` calls (the group
        commit's), each table written in one statement for all of them, except memories that
        may supersede others (stored one at a time, in order), and an access counted on each
        memory a ``unique`` write repeats; then the new memories' vectors are queued."""
        now = self._clock()
        async with self._uow_factory() as uow:
            unique = [w.memory for w in writes if w.unique]
            repeated = await repeats(uow, unique, now)
            memories = [w.memory for w in writes if w.memory.id not in repeated]
            entry_ids = await self._insert(uow, memories)
            counts = Counter(m.id for m in repeated.values())
            await uow.memories.add_accesses({i: Access(n, now) for i, n in counts.items()})
            await uow.commit()
        # write-behind: the vectors follow (services/indexer.py)
        self._indexer.submit(list(zip(entry_ids, memories, strict=True)))
        for earlier in {m.id: m for m in repeated.values()}.values():
            earlier.access_count += counts[earlier.id]
            earlier.last_accessed_at = now
        return [
            Stored(w.memory) if w.memory.id not in repeated else Stored(repeated[w.memory.id], True)
            for w in writes
        ]

    async def _insert(self, uow: UnitOfWork, memories: list[Memory]) -> list[int]:
        """The rows, history and outbox entries of new memories; the outbox entries' ids."""
        slotted = [may_supersede(memory) for memory in memories]
        plain = [memory for memory, it in zip(memories, slotted, strict=True) if not it]
        if plain:
            await uow.memories.add_many(plain)
            await uow.history.add_many(
                [self._event(m, EventKind.ADD, None, _snapshot(m)) for m in plain]
            )
        for memory, it in zip(memories, slotted, strict=True):
            if it:
                await supersede(uow, memory, self._record)
                await uow.memories.add(memory)
                await self._record(uow, memory, EventKind.ADD, None, _snapshot(memory))
        return await uow.outbox.add_many([memory.id for memory in memories], UPSERT)

    async def get(self, memory_id: str, scope: ScopeIds) -> Memory:
        """The memory, counting one access."""
        now = self._clock()
        async with self._uow_factory() as uow:
            memory = await self._visible(uow, memory_id, scope)
            await uow.memories.add_accesses({memory.id: Access(1, now)})
            await uow.commit()
        memory.access_count += 1
        memory.last_accessed_at = now
        return memory

    async def read(self, memory_ids: Sequence[str], scope: ScopeIds) -> list[Memory]:
        """The memories, in the order asked, counting no access; ``MemoryNotFound`` when one
        is not visible to ``scope`` (its existence is not revealed)."""
        async with self._uow_factory(read_only=True) as uow:
            return [await self._visible(uow, memory_id, scope) for memory_id in memory_ids]

    async def existing(self, memory_ids: Sequence[str]) -> list[Memory]:
        """Those of ``memory_ids`` that are stored (any scope: for idempotent writes)."""
        async with self._uow_factory(read_only=True) as uow:
            return await uow.memories.get_many(memory_ids)

    async def held_keys(self, keys: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        """Those of the (scope key, memory key) pairs a stored memory holds."""
        async with self._uow_factory(read_only=True) as uow:
            return {pair for pair in keys if await uow.memories.get_by_key(*pair) is not None}

    async def in_session(self, session_id: str, levels: Sequence[ScopeLevel]) -> list[Memory]:
        """The live memories of a session at ``levels``, oldest first."""
        now = self._clock()
        async with self._uow_factory(read_only=True) as uow:
            found = await uow.memories.in_session(session_id, levels)
        return [m for m in found if not m.is_expired(now)]

    async def session_agents(self, session_id: str) -> list[str]:
        """The agents that wrote memories in a session, at any level."""
        async with self._uow_factory(read_only=True) as uow:
            writers = await uow.memories.session_writers(session_id)
        return list(dict.fromkeys(agent for _, agent in writers if agent is not None))

    async def promoted_from(self, source_ids: Sequence[str]) -> dict[str, str]:
        """For each source already promoted: the promoted memory's id."""
        async with self._uow_factory(read_only=True) as uow:
            return await uow.memories.promoted_from(source_ids)

    async def update(self, memory_id: str, scope: ScopeIds, changes: MemoryChanges) -> Memory:
        """Apply a partial update; a content change re-embeds the memory and supersedes the
        facts of the slot it fills now, as a new memory does (those created before it)."""
        now = self._clock()
        async with self._uow_factory(read_only=True) as uow:
            current = await self._visible(uow, memory_id, scope)
        updated, before, after = apply_changes(current, changes, now, self._max_content)
        if not after:
            return current
        async with self._uow_factory() as uow:
            await self._visible(uow, memory_id, scope)
            if "content" in after:  # what it says now may update another fact
                await supersede(uow, updated, self._record)
            await uow.memories.update(updated)
            await self._record(uow, updated, EventKind.UPDATE, before, after)
            entry_id = await uow.outbox.add(updated.id, UPSERT)
            await uow.commit()
        self._indexer.submit([(entry_id, updated)])
        prime_ranking_soon([updated.content])
        return updated

    async def extend_expiry(self, expiries: Mapping[str, datetime]) -> list[Memory]:
        """Move each memory's expiry to the given time (a TTL refreshed by a read: no history
        event); the vector payload follows. Memories gone meanwhile are left out."""
        moved: list[tuple[int, Memory]] = []
        async with self._uow_factory() as uow:
            for memory in await uow.memories.get_many(list(expiries)):
                memory.expires_at = expiries[memory.id]
                await uow.memories.update(memory)
                moved.append((await uow.outbox.add(memory.id, UPSERT), memory))
            await uow.commit()
        self._indexer.submit(moved)
        return [memory for _, memory in moved]

    async def reweigh(
        self,
        memory_ids: Sequence[str],
        scope: ScopeIds,
        importance: Callable[[Memory], float],
        actor: str,
        *,
        then: Callable[[UnitOfWork, list[tuple[Memory, float]]], Awaitable[None]] | None = None,
    ) -> list[tuple[Memory, float]]:
        """Set the importance of each memory to ``importance(memory)``, all in one
        transaction, each change in the memory's history by ``actor``; ``then`` writes what
        goes with the change in the same transaction. Returns each memory as it is now with
        its importance before. ``MemoryNotFound`` (nothing changes) when one is not visible
        to ``scope``. Importance is not in the vector payload: no vector write."""
        changed: list[tuple[Memory, float]] = []
        async with self._uow_factory() as uow:
            for memory_id in dict.fromkeys(memory_ids):
                memory = await self._visible(uow, memory_id, scope)
                before = memory.importance
                memory.importance = importance(memory)
                if memory.importance != before:
                    await uow.memories.update(memory)
                    await self._record(
                        uow,
                        memory,
                        EventKind.UPDATE,
                        {"importance": before},
                        {"importance": memory.importance},
                        actor=actor,
                    )
                changed.append((memory, before))
            if then is not None:
                await then(uow, changed)
            await uow.commit()
        return changed

    async def derive(
        self,
        new: NewMemory,
        kind: EventKind,
        sources: Sequence[Memory],
        *,
        retire: Retire = Retire.KEEP,
    ) -> Memory:
        """Store a memory made from ``sources`` (a promotion, a compaction) and record ``kind``
        on it (with its snapshot) and on each source (``into``: the new id), in one
        transaction; then ``retire`` the sources: keep them, delete them, or hide them (out of
        search and listings, still readable by id). The sources were read visible by the
        caller; one deleted meanwhile makes the whole write ``MemoryNotFound``."""
        model = self._embedder.model_name
        memory = build_memory(new, self._clock(), self._max_content, model, self._default_ttl)
        upserts, deletes = [], []
        async with self._uow_factory() as uow:
            await supersede(uow, memory, self._record)
            await uow.memories.add(memory)
            origin = {"from": [s.id for s in sources]}
            await self._record(uow, memory, kind, origin, _snapshot(memory))
            upserts.append((await uow.outbox.add(memory.id, UPSERT), memory))
            for source in sources:
                current = await uow.memories.get(source.id)
                if current is None:
                    raise MemoryNotFound(f"no memory {source.id} in the given scope")
                await self._record(uow, current, kind, None, {"into": memory.id})
                if retire is Retire.DELETE:
                    await uow.memories.delete([current.id])
                    await self._record(uow, current, EventKind.DELETE, _snapshot(current), None)
                elif retire is Retire.HIDE:
                    current.compacted_into_id = memory.id
                    await uow.memories.update(current)
                if retire is not Retire.KEEP:
                    deletes.append((await uow.outbox.add(current.id, DELETE), current.id))
            await uow.commit()
        self._indexer.submit(upserts)
        if deletes:
            await self._sync.delete([e for e, _ in deletes], [i for _, i in deletes])
        prime_ranking_soon([memory.content])
        return memory

    async def delete_expired(self, limit: int) -> int:
        """Delete up to ``limit`` expired memories and their vectors (each with a ``delete``
        event by the actor ``expiry``); how many were deleted."""
        async with self._uow_factory() as uow:
            expired = await uow.memories.expired(self._clock(), limit)
            entry_ids = await self._drop_expired(uow, expired)
            await uow.commit()
        if expired:
            await self._sync.delete(entry_ids, [m.id for m in expired])
        return len(expired)

    async def _drop_expired(self, uow: UnitOfWork, expired: Sequence[Memory]) -> list[int]:
        """Delete ``expired`` in ``uow``, each with a ``delete`` event by ``expiry`` and an
        outbox entry for its vector (returned)."""
        entry_ids = []
        for memory in expired:
            snapshot = _snapshot(memory)
            await self._record(uow, memory, EventKind.DELETE, snapshot, None, actor="expiry")
            entry_ids.append(await uow.outbox.add(memory.id, DELETE))
        await uow.memories.delete([m.id for m in expired])
        return entry_ids

    async def put_keyed(self, new: NewMemory, changes: MemoryChanges) -> tuple[Memory, bool]:
        """``new`` stored under its key, or ``changes`` made to the memory of its scope that
        holds the key; returns the memory and whether it is new. A memory there whose expiry
        passed is deleted first, as the sweep would (the key is free again). A concurrent
        first write of the key wins, and is then changed."""
        assert new.key is not None
        level = owning_level(new.scope, new.scope_level)
        holder = scope_key(level, new.scope.present()[level])
        for _ in range(2):
            async with self._uow_factory(read_only=True) as uow:
                current = await uow.memories.get_by_key(holder, new.key)
            if current is not None and current.is_expired(self._clock()):
                async with self._uow_factory() as uow:
                    entry_ids = await self._drop_expired(uow, [current])
                    await uow.commit()
                await self._sync.delete(entry_ids, [current.id])
                current = None
            if current is not None:
                return await self.update(current.id, new.scope, changes), False
            try:
                return await self.add(new), True
            except Conflict:
                continue
        raise Conflict(f"key {new.key!r} is being written concurrently; retry")

    async def delete(self, memory_id: str, scope: ScopeIds) -> bool:
        """Delete one memory; False when there is none to delete (deleted already, never
        stored, or of another scope: the answer is the same, so nothing is revealed)."""
        async with self._uow_factory() as uow:
            try:
                memory = await self._visible(uow, memory_id, scope)
            except MemoryNotFound:
                return False
            await uow.memories.delete([memory.id])
            await self._record(uow, memory, EventKind.DELETE, _snapshot(memory), None)
            entry_id = await uow.outbox.add(memory.id, DELETE)
            await uow.commit()
        await self._sync.delete([entry_id], [memory.id])
        return True

    async def clear(self, layer: str, scope: ScopeIds, scope_level: str | None) -> int:
        """Delete one layer of one scope (BR-3: nothing else). Returns how many were deleted."""
        level = owning_level(scope, scope_level)
        key = visible_scope_keys(scope, [level.value])[0]
        parsed = parse_layer(layer)
        async with self._uow_factory() as uow:
            ids = await uow.memories.ids_in_scope(key, parsed)
            memories = await uow.memories.get_many(ids)
            entry_ids = []
            for memory in memories:
                await self._record(uow, memory, EventKind.DELETE, _snapshot(memory), None)
                entry_ids.append(await uow.outbox.add(memory.id, DELETE))
            deleted = await uow.memories.delete(ids)
            await uow.commit()
        if ids:
            await self._sync.delete(entry_ids, ids)
        return deleted

    async def list_page(self, request: ListRequest) -> Page:
        keys = (
            visible_scope_keys(request.scope)
            if request.scope_level is None
            else visible_scope_keys(request.scope, [request.scope_level])
        )
        where = all_of(
            None
            if request.stage_id is None
            else Condition(Field.STAGE_ID, Op.EQ, request.stage_id),
            tags_filter(request.tags, request.tags_match),
            metadata_equals(request.metadata),
            request.where,
        )
        query = ListQuery(
            scope_keys=keys,
            layer=None if request.layer is None else parse_layer(request.layer),
            where=where,
            since=request.since,
            until=request.until,
            alive_at=None if request.include_expired else self._clock(),
            order_desc=request.order_desc,
            limit=request.limit + 1,
            after=request.after,
            keyed_only=request.keyed_only,
            by_importance=request.by_importance,
            after_importance=request.after_importance,
            superseded=request.superseded,
        )
        async with self._uow_factory(read_only=True) as uow:
            rows, total = await uow.memories.page(query)
        page, more = rows[: request.limit], len(rows) > request.limit
        next_after = (page[-1].created_at, page[-1].id) if more and page else None
        return Page(page, next_after, total)

    async def search(self, query: SearchQuery) -> SearchOutcome:
        """Ranked memories; a search sees every memory acknowledged before it and never waits
        for the indexer (``services.fresh``), except a near-duplicate check (``dense_only``:
        cosines of stored texts against a fixed bar, e.g. a new fact against the stored
        ones), which waits for its scopes' owed vectors to be exact."""
        if query.dense_only:
            await self._indexer.settle(visible_scope_keys(query.scope, query.scopes))
        return await self._retrieval.search(query)

    async def scope_layers(self) -> list[ScopeLayerCount]:
        """How many memories each scope holds per layer, and its latest update."""
        async with self._uow_factory(read_only=True) as uow:
            return await uow.memories.scope_layers()

    async def superseded_by(self, scope_key: str, memory_id: str) -> list[Memory]:
        """The memories of ``scope_key`` that ``memory_id`` superseded (older values)."""
        async with self._uow_factory(read_only=True) as uow:
            return await uow.memories.superseded_by(scope_key, memory_id)

    async def history(self, memory_id: str, scope: ScopeIds) -> list[MemoryEvent]:
        keys = visible_scope_keys(scope)
        async with self._uow_factory(read_only=True) as uow:
            events = await uow.history.for_memory(memory_id)
        if not events or events[0].scope_key not in keys:
            raise MemoryNotFound(f"no memory {memory_id} in the given scope")
        return events

    @property
    def indexing_backlog(self) -> int:
        """Memories stored by this process whose vectors are still queued."""
        return self._indexer.pending

    async def vectors_written(
        self, memories: Sequence[Memory], seconds: float = WAIT_INDEXED_SECONDS
    ) -> bool:
        """Wait until the vectors these memories' scopes owe now are written (at most
        ``seconds``): a bulk import's caller that wants its first search to find everything
        by meaning too. True if they were."""
        return await self._indexer.settle({m.scope_key for m in memories}, seconds)

    async def indexed(self, seconds: float = 30) -> bool:
        """Wait until every vector queued so far is written (or handed to the replay)."""
        return await self._indexer.drain(seconds)

    async def close(self) -> None:
        """Finish the writes under way, then write the vectors still queued (up to 30 s; what
        is left is replayed at start)."""
        await self._writes.drain()
        if not await self._indexer.drain(30):
            log.warning(
                "%d vectors still queued at shutdown: replayed at start", self._indexer.pending
            )

    async def _visible(self, uow: UnitOfWork, memory_id: str, scope: ScopeIds) -> Memory:
        """The memory if the caller's scope ids make it visible; otherwise not found (no leak)."""
        keys = visible_scope_keys(scope)
        memory = await uow.memories.get(memory_id)
        if memory is None or memory.scope_key not in keys or memory.is_expired(self._clock()):
            raise MemoryNotFound(f"no memory {memory_id} in the given scope")
        return memory

    async def _record(
        self,
        uow: UnitOfWork,
        memory: Memory,
        kind: EventKind,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
        *,
        actor: str | None = None,
    ) -> None:
        await uow.history.add(self._event(memory, kind, before, after, actor=actor))

    def _event(
        self,
        memory: Memory,
        kind: EventKind,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
        *,
        actor: str | None = None,
    ) -> MemoryEvent:
        return MemoryEvent(
            id=new_id(),
            memory_id=memory.id,
            scope_key=memory.scope_key,
            kind=kind,
            at=self._clock(),
            before=None if before is None else _jsonable(before),
            after=None if after is None else _jsonable(after),
            actor=actor or memory.source,
        )
