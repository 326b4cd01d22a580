"""Fakes of the ports, for unit tests: simple, in memory, and faithful to the contracts."""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Generic, Self, TypeVar

import numpy as np
import numpy.typing as npt

from agentcore.adapters.vectors.payload import point_payload
from agentcore.adapters.vectors.payload_filter import payload_filter
from agentcore.domain.errors import Conflict, ProviderError
from agentcore.domain.filters import Filter
from agentcore.domain.models import Layer, Memory, MemoryEvent, ScopeLevel
from agentcore.domain.records import content_hash
from agentcore.services.ports import (
    Access,
    ListQuery,
    OutboxEntry,
    VectorFilter,
    VectorHit,
    VectorPoint,
    Vectors,
)
from tests.filter_oracle import FakeConditions, satisfies

_WORD = re.compile(r"\w+")


class FakeEmbedder:
    """Hashed bag of words: texts sharing words are similar, which is all unit tests need."""

    def __init__(self, dimension: int = 64, model_name: str = "fake-bow") -> None:
        self._dimension = dimension
        self._model_name = model_name
        self.calls = 0

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def precision(self) -> str:
        return "hashed bag of words"

    @property
    def background_similarity(self) -> float:
        return 0.0

    async def embed_query(self, text: str) -> Vectors:
        vectors: Vectors = (await self.embed([text]))[0]
        return vectors

    async def embed_now(self, texts: Sequence[str]) -> Vectors:
        return await FakeEmbedder.embed(self, texts)  # not a subclass's queued ``embed``

    async def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
                out[row, int.from_bytes(digest, "little") % self._dimension] += 1.0
            norm = np.linalg.norm(out[row])
            out[row] = out[row] / norm if norm else 1.0 / np.sqrt(self._dimension)
        return out

    async def close(self) -> None:
        return None


def _matches(point: VectorPoint, flt: VectorFilter) -> bool:
    if point.scope_key not in flt.scope_keys:
        return False
    if flt.layers is not None and point.layer not in flt.layers:
        return False
    if flt.where is not None:  # what the payload can say, as every adapter says it
        test = payload_filter(flt.where, FakeConditions())
        if test is not None and not test(point_payload(point)):
            return False
    if flt.ids is not None and point.id not in flt.ids:
        return False
    return flt.alive_at is None or point.expires_at > flt.alive_at


class FakeVectorStore:
    """Brute-force cosine over a dict; ``failing = True`` makes every write fail."""

    def __init__(self) -> None:
        self.points: dict[str, VectorPoint] = {}
        self.durable: dict[str, VectorPoint] = {}
        self.failing = False
        self.dimension = 0

    @property
    def name(self) -> str:
        return "fake"

    async def ensure_collection(self, dimension: int, embedder_name: str) -> None:
        self.dimension = dimension

    async def reset_collection(self, dimension: int, embedder_name: str) -> None:
        self.points.clear()
        self.durable.clear()
        self.dimension = dimension

    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        if self.failing:
            raise ProviderError("vector store unavailable")
        for point in points:
            self.points[point.id] = point

    async def delete(self, ids: Sequence[str]) -> None:
        if self.failing:
            raise ProviderError("vector store unavailable")
        for point_id in ids:
            self.points.pop(point_id, None)

    async def search(
        self,
        vector: npt.NDArray[np.float32],
        flt: VectorFilter,
        limit: int,
        score_threshold: float | None = None,
    ) -> list[VectorHit]:
        hits = []
        for point in self.points.values():
            if _matches(point, flt):
                score = float(np.dot(np.asarray(point.vector, dtype=np.float32), vector))
                if score_threshold is None or score >= score_threshold:
                    hits.append(VectorHit(point.id, score))
        hits.sort(key=lambda h: h.score, reverse=True)
        return hits[:limit]

    async def count(self, flt: VectorFilter) -> int:
        return sum(_matches(p, flt) for p in self.points.values())

    async def vectors(self, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        if self.failing:
            raise ProviderError("vector store unavailable")
        return {i: np.asarray(self.points[i].vector) for i in ids if i in self.points}

    async def flush(self) -> None:
        self.durable = dict(self.points)

    async def close(self) -> None:
        return None


class _State:
    def __init__(self) -> None:
        self.memories: dict[str, Memory] = {}
        self.history: list[MemoryEvent] = []
        self.outbox: dict[int, OutboxEntry] = {}
        self.settings: dict[str, str] = {}
        self.next_outbox_id = 1


class _Memories:
    def __init__(self, state: _State) -> None:
        self._s = state

    async def add(self, memory: Memory) -> None:
        if memory.key is not None and any(
            m.key == memory.key and m.scope_key == memory.scope_key
            for m in self._s.memories.values()
        ):
            raise Conflict(f"key {memory.key!r} already exists in this scope")
        self._s.memories[memory.id] = copy.deepcopy(memory)

    async def add_many(self, memories: Sequence[Memory]) -> None:
        for memory in memories:
            await self.add(memory)

    async def get(self, memory_id: str) -> Memory | None:
        found = self._s.memories.get(memory_id)
        return copy.deepcopy(found)

    async def get_many(
        self, memory_ids: Sequence[str], where: Filter | None = None
    ) -> list[Memory]:
        found = [self._s.memories[i] for i in dict.fromkeys(memory_ids) if i in self._s.memories]
        return [copy.deepcopy(m) for m in found if satisfies(m, where)]

    async def update(self, memory: Memory) -> None:
        self._s.memories[memory.id] = copy.deepcopy(memory)

    async def delete(self, memory_ids: Sequence[str]) -> int:
        return sum(self._s.memories.pop(i, None) is not None for i in memory_ids)

    async def page(self, query: ListQuery) -> tuple[list[Memory], int]:
        rows = [m for m in self._s.memories.values() if _listed(m, query)]
        rows.sort(key=lambda m: (m.created_at, m.id), reverse=query.order_desc)
        total = len(rows)
        if query.after is not None:
            if query.order_desc:
                rows = [m for m in rows if (m.created_at, m.id) < query.after]
            else:
                rows = [m for m in rows if (m.created_at, m.id) > query.after]
        return [copy.deepcopy(m) for m in rows[: query.limit]], total

    async def ids_in_scope(self, scope_key: str, layer: Layer) -> list[str]:
        return [
            m.id for m in self._s.memories.values() if m.scope_key == scope_key and m.layer is layer
        ]

    async def in_session(self, session_id: str, levels: Sequence[ScopeLevel]) -> list[Memory]:
        found = [
            m
            for m in self._s.memories.values()
            if m.scope.session_id == session_id
            and m.scope_level in levels
            and m.compacted_into_id is None
        ]
        return [copy.deepcopy(m) for m in sorted(found, key=lambda m: (m.created_at, m.id))]

    async def lock_texts(self, keys: Sequence[str]) -> None:
        return None  # one event loop: the fake's transactions never interleave a write

    async def same_texts(
        self, scope_keys: Sequence[str], hashes: Sequence[str], now: datetime
    ) -> list[Memory]:
        found = [
            m
            for m in self._s.memories.values()
            if m.scope_key in scope_keys
            and content_hash(m.content) in hashes
            and m.compacted_into_id is None
            and m.superseded_by is None
            and m.key is None
            and (m.expires_at is None or m.expires_at > now)
        ]
        return [copy.deepcopy(m) for m in sorted(found, key=lambda m: (m.created_at, m.id))]

    async def session_writers(self, session_id: str) -> list[tuple[str, str | None]]:
        found = {
            (m.scope_key, m.scope.agent_id)
            for m in self._s.memories.values()
            if m.scope.session_id == session_id and m.compacted_into_id is None
        }
        return sorted(found, key=lambda pair: (pair[0], pair[1] or ""))

    async def search_keys(
        self, scope_key: str, needle: str, now: datetime, limit: int
    ) -> list[tuple[Memory, str, str]]:
        n = needle.lower()
        found = []
        for m in self._s.memories.values():
            key = (m.key or "").lower()
            if m.scope_key != scope_key or m.key is None or m.is_expired(now):
                continue
            for rank, hit in enumerate(
                (key == n, key.startswith(n), n in key, n in m.content.lower())
            ):
                if hit:
                    found.append((rank, key, m))
                    break
        labels = [("key", "exact"), ("key", "prefix"), ("key", "substring"), ("value", "substring")]
        found.sort(key=lambda f: (f[0], f[1]))
        return [(copy.deepcopy(m), *labels[r]) for r, _, m in found[:limit]]

    async def expired(self, now: datetime, limit: int) -> list[Memory]:
        found = [m for m in self._s.memories.values() if m.is_expired(now)]
        found.sort(key=lambda m: (m.expires_at, m.id))
        return [copy.deepcopy(m) for m in found[:limit]]

    async def promoted_from(self, source_ids: Sequence[str]) -> dict[str, str]:
        return {
            m.promoted_from_id: m.id
            for m in self._s.memories.values()
            if m.promoted_from_id is not None and m.promoted_from_id in source_ids
        }

    async def in_stage(self, stage_id: str) -> list[Memory]:
        found = [m for m in self._s.memories.values() if m.stage_id == stage_id]
        return [copy.deepcopy(m) for m in sorted(found, key=lambda m: (m.created_at, m.id))]

    async def current_in_slot(
        self, scope_keys: Sequence[str], slot: str, at: datetime | None = None
    ) -> list[Memory]:
        return [
            copy.deepcopy(m)
            for m in self._s.memories.values()
            if m.scope_key in scope_keys
            and m.fact_slot == slot
            and (m.superseded_by is None if at is None else m.created_at <= at and m.current_at(at))
        ]

    async def after_id(self, memory_id: str, limit: int) -> list[Memory]:
        found = sorted(
            (m for m in self._s.memories.values() if m.id > memory_id and not m.compacted_into_id),
            key=lambda m: m.id,
        )
        return [copy.deepcopy(m) for m in found[:limit]]

    async def count_searchable(self) -> int:
        return sum(1 for m in self._s.memories.values() if not m.compacted_into_id)

    async def get_by_key(self, scope_key: str, key: str) -> Memory | None:
        for m in self._s.memories.values():
            if m.scope_key == scope_key and m.key == key:
                return copy.deepcopy(m)
        return None

    async def add_accesses(self, accesses: Mapping[str, Access]) -> None:
        for memory_id, access in accesses.items():
            memory = self._s.memories.get(memory_id)
            if memory is not None:
                memory.access_count += access.count
                memory.last_accessed_at = access.at


def _listed(m: Memory, q: ListQuery) -> bool:
    return (
        m.scope_key in q.scope_keys
        and m.compacted_into_id is None
        and (q.layer is None or m.layer is q.layer)
        and satisfies(m, q.where)
        and (q.since is None or m.created_at >= q.since)
        and (q.until is None or m.created_at < q.until)
        and (q.alive_at is None or m.expires_at is None or m.expires_at > q.alive_at)
        and (not q.keyed_only or m.key is not None)
    )


class _History:
    def __init__(self, state: _State) -> None:
        self._s = state

    async def add(self, event: MemoryEvent) -> None:
        self._s.history.append(event)

    async def add_many(self, events: Sequence[MemoryEvent]) -> None:
        self._s.history.extend(events)

    async def for_memory(self, memory_id: str) -> list[MemoryEvent]:
        return [e for e in self._s.history if e.memory_id == memory_id]


class _Outbox:
    def __init__(self, state: _State) -> None:
        self._s = state

    async def add(self, memory_id: str, op: str) -> int:
        entry_id = self._s.next_outbox_id
        self._s.next_outbox_id += 1
        self._s.outbox[entry_id] = OutboxEntry(entry_id, memory_id, op, 0)
        return entry_id

    async def add_many(self, memory_ids: Sequence[str], op: str) -> list[int]:
        return [await self.add(memory_id, op) for memory_id in memory_ids]

    async def pending(
        self, limit: int, *, failed_only: bool = False, created_before: datetime | None = None
    ) -> list[OutboxEntry]:
        entries = sorted(self._s.outbox.values(), key=lambda e: e.id)
        if failed_only:
            entries = [e for e in entries if e.attempts > 0]
        return entries[:limit]

    async def remove(self, entry_ids: Sequence[int]) -> None:
        for entry_id in entry_ids:
            self._s.outbox.pop(entry_id, None)

    async def mark_failed(self, entry_ids: Sequence[int]) -> None:
        for entry_id in entry_ids:
            e = self._s.outbox[entry_id]
            self._s.outbox[entry_id] = OutboxEntry(e.id, e.memory_id, e.op, e.attempts + 1)

    async def count(self) -> int:
        return len(self._s.outbox)


class _Settings:
    def __init__(self, state: _State) -> None:
        self._s = state

    async def get(self, name: str) -> str | None:
        return self._s.settings.get(name)

    async def put(self, name: str, value: str) -> None:
        self._s.settings[name] = value


S = TypeVar("S")


class SnapshotUnitOfWork(Generic[S]):
    """A unit of work over a deep copy of ``store.state``: ``commit`` publishes the copy and
    counts it in ``store.commits``; leaving without it drops the copy. Subclasses bind their
    repositories to the copy in ``_bind``."""

    def __init__(self, store: Any) -> None:
        self._store = store

    async def __aenter__(self) -> Self:
        self._state: S = copy.deepcopy(self._store.state)
        self._bind(self._state)
        return self

    def _bind(self, state: S) -> None:
        raise NotImplementedError

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    async def commit(self) -> None:
        self._store.state = self._state
        self._store.commits += 1


class FakeUnitOfWork(SnapshotUnitOfWork["_State"]):
    def _bind(self, state: _State) -> None:
        self.memories = _Memories(state)
        self.history = _History(state)
        self.outbox = _Outbox(state)
        self.store_settings = _Settings(state)


class FakeStore:
    """The unit-of-work factory of the fakes: call it for a new unit of work."""

    def __init__(self) -> None:
        self.state = _State()
        self.commits = 0

    def __call__(self, *, read_only: bool = False) -> FakeUnitOfWork:
        return FakeUnitOfWork(self)


def memories_in(store: FakeStore) -> dict[str, Any]:
    return dict(store.state.memories)
