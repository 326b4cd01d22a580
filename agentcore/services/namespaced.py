"""Namespaced items: LangGraph's store operations over the memories of a scope
(``agentcore.domain.namespaces`` says how an item is kept).

An operation names the scope its items live in; one that names no scope id reaches the items
of every scope (the API lets only an admin key do that). Reading an item with a TTL and
``refresh_ttl`` moves its expiry to TTL minutes from now, without a history event (a read is
not a change). Search with a query ranks the indexed items by this service's retrieval (score
and factors as ``memory.search`` gives them) and, as LangGraph's stores do, fills a page it
cannot fill with items that are not indexed (no score).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from agentcore.domain.clock import Clock
from agentcore.domain.filters import Filter, Not, all_of
from agentcore.domain.models import Memory, ScopeIds, scope_key
from agentcore.domain.namespaces import (
    INDEXED,
    ITEM_KEY,
    TTL_MINUTES,
    VALUE,
    Match,
    Namespace,
    indexed_only,
    item_metadata,
    matching_namespaces,
    namespace_of,
    stored_key,
    under,
)
from agentcore.domain.records import MemoryChanges, NewMemory
from agentcore.domain.scopes import owning_level
from agentcore.services.memory_manager import MemoryManager
from agentcore.services.ports import ItemQuery, UnitOfWorkFactory
from agentcore.services.ranked import ScoredMemory
from agentcore.services.retrieval import EnhancedRetrieval, SearchQuery

LAYER = "semantic"
SOURCE = "store"


@dataclass(frozen=True, slots=True)
class ItemScope:
    """Where an operation's items live: the scope of ``ids`` at ``level`` (default: the most
    specific id given); no id at all: every scope."""

    ids: ScopeIds
    level: str | None = None

    def key(self) -> str:
        level = owning_level(self.ids, self.level)
        return scope_key(level, self.ids.present()[level])

    def keys(self) -> list[str] | None:
        return [self.key()] if self.ids.present() else None


@dataclass(frozen=True, slots=True)
class Item:
    memory: Memory
    namespace: Namespace
    key: str
    value: dict[str, Any]
    scored: ScoredMemory | None = None  # how a search with a query ranked it


@dataclass(frozen=True, slots=True)
class Put:
    namespace: Namespace
    key: str
    value: Mapping[str, Any] | None  # None: delete the item
    text: str | None = None  # what search matches; None: the value as JSON
    indexed: bool = True
    ttl: float | None = None  # minutes


@dataclass(frozen=True, slots=True)
class Search:
    prefix: Namespace
    query: str | None = None
    where: Filter | None = None  # on the value (``namespaces.value_filter``)
    limit: int = 10
    offset: int = 0
    refresh_ttl: bool = True
    explain: bool = False


def _item(memory: Memory, scored: ScoredMemory | None = None) -> Item:
    value = memory.metadata.get(VALUE)
    return Item(
        memory=memory,
        namespace=namespace_of(memory.metadata),
        key=str(memory.metadata.get(ITEM_KEY, "")),
        value=value if isinstance(value, dict) else {},
        scored=scored,
    )


def _ttl(memory: Memory) -> float | None:
    ttl = memory.metadata.get(TTL_MINUTES)
    return float(ttl) if isinstance(ttl, int | float) and not isinstance(ttl, bool) else None


class NamespacedItems:
    def __init__(
        self,
        memory: MemoryManager,
        retrieval: EnhancedRetrieval,
        uow_factory: UnitOfWorkFactory,
        clock: Clock,
        max_content_length: int,
    ) -> None:
        self._memory = memory
        self._retrieval = retrieval
        self._uow_factory = uow_factory
        self._clock = clock
        self._max_content = max_content_length

    async def get(
        self, scope: ItemScope, namespace: Namespace, key: str, refresh_ttl: bool = True
    ) -> Item | None:
        found = await self._find(scope, stored_key(namespace, key))
        if found is None:
            return None
        if refresh_ttl:
            [found] = await self._refresh([found])
        return _item(found)

    async def put(self, scope: ItemScope, put: Put) -> Item | None:
        """Store (replace) the item, or delete it when ``put.value`` is None."""
        stored = stored_key(put.namespace, put.key)
        if put.value is None:
            current = await self._find(scope, stored)
            if current is not None:
                await self._memory.delete(current.id, scope.ids)
            return None
        text = put.text if put.text else json.dumps(put.value, sort_keys=True, ensure_ascii=False)
        content = text[: self._max_content]
        metadata = item_metadata(put.namespace, put.key, put.value, put.indexed, put.ttl)
        expires_at = None if put.ttl is None else self._clock() + timedelta(minutes=put.ttl)
        new = NewMemory(
            content=content,
            scope=scope.ids,
            layer=LAYER,
            scope_level=scope.level,
            metadata=metadata,
            key=stored,
            source=SOURCE,
            expires_at=expires_at,
        )
        changes = MemoryChanges(
            content=content,
            metadata=metadata,
            expires_at=expires_at,
            clear_expiry=expires_at is None,
        )
        return _item((await self._memory.put_keyed(new, changes))[0])

    async def search(self, scope: ItemScope, search: Search) -> list[Item]:
        where = all_of(under(search.prefix), search.where)
        assert where is not None
        if search.query:
            found = await self._ranked(scope, search, where)
        else:
            found = await self._items(scope.keys(), where, search.limit, search.offset)
        if not search.refresh_ttl:
            return found
        refreshed = {m.id: m for m in await self._refresh([item.memory for item in found])}
        return [_item(refreshed[i.memory.id], i.scored) for i in found]

    async def namespaces(
        self,
        scope: ItemScope,
        matches: Sequence[Match],
        max_depth: int | None,
        limit: int,
        offset: int,
    ) -> list[Namespace]:
        fixed = max((m.fixed_prefix() for m in matches), key=len, default=())
        async with self._uow_factory(read_only=True) as uow:
            found = await uow.memories.item_namespaces(
                ItemQuery(scope.keys(), under(fixed), self._clock(), 0)
            )
        namespaces = [tuple(ns.split(".")) for _, ns in found if ns]
        return matching_namespaces(namespaces, matches, max_depth, limit, offset)

    async def _ranked(self, scope: ItemScope, search: Search, where: Filter) -> list[Item]:
        keys = scope.keys()
        if keys is None:  # every scope that holds such items
            async with self._uow_factory(read_only=True) as uow:
                found = await uow.memories.item_namespaces(ItemQuery(None, where, self._clock(), 0))
            keys = sorted({key for key, _ in found})
            if not keys:
                return []
        outcome = await self._retrieval.search(
            SearchQuery(
                query=search.query or "",
                scope=scope.ids,
                scope_keys=keys,
                limit=search.offset + search.limit,
                where=all_of(where, indexed_only()),
                explain=search.explain,
            )
        )
        ranked = [_item(s.memory, s) for s in outcome.results[search.offset :]]
        if len(ranked) < search.limit:  # not indexed: no score, after the ranked ones
            rest = all_of(where, Not((indexed_only(),)))
            assert rest is not None
            ranked += await self._items(keys, rest, search.limit - len(ranked), 0)
        return ranked[: search.limit]

    async def _items(
        self, keys: list[str] | None, where: Filter, limit: int, offset: int
    ) -> list[Item]:
        async with self._uow_factory(read_only=True) as uow:
            found = await uow.memories.items(ItemQuery(keys, where, self._clock(), limit, offset))
        return [_item(m) for m in found]

    async def _find(self, scope: ItemScope, stored: str) -> Memory | None:
        async with self._uow_factory(read_only=True) as uow:
            memory = await uow.memories.get_by_key(scope.key(), stored)
        if memory is None or memory.is_expired(self._clock()):
            return None
        return memory if INDEXED in memory.metadata else None  # another kind of keyed memory

    async def _refresh(self, memories: Sequence[Memory]) -> list[Memory]:
        """Each memory with a TTL expiring TTL minutes from now (the others as they are)."""
        now: datetime = self._clock()
        moved = {
            m.id: now + timedelta(minutes=ttl) for m in memories if (ttl := _ttl(m)) is not None
        }
        if not moved:
            return list(memories)
        extended = {m.id: m for m in await self._memory.extend_expiry(moved)}
        return [extended.get(m.id, m) for m in memories]
