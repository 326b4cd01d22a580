"""Ports: what the services need from the outside world, by role. Adapters implement them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import TracebackType
from typing import Any, Literal, Protocol, Self

import numpy as np
import numpy.typing as npt

from agentcore.domain.ace import Intervention
from agentcore.domain.compression_metrics import CompressionLevel, CompressionMetric, LevelSummary
from agentcore.domain.episodes import Episode, EpisodeStatus
from agentcore.domain.error_records import ErrorQuery, ErrorRecord
from agentcore.domain.filters import Filter
from agentcore.domain.models import Layer, Memory, MemoryEvent, ScopeIds, ScopeLevel
from agentcore.domain.pricing import CostQuery, CostRecord, CostTotals
from agentcore.domain.stages import Stage, StageMemory, TaskContext

Vectors = npt.NDArray[np.float32]

# Stored as the expiry of memories that never expire, so one range filter excludes the expired.
NEVER_EXPIRES = 32_503_680_000.0  # 3000-01-01T00:00:00Z


class Embedder(Protocol):
    """Turns text into unit-length float32 vectors of a fixed dimension."""

    @property
    def model_name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    @property
    def precision(self) -> str:
        """How the model runs, for health ("int8 (u8s8 kernel)", "remote", …)."""
        ...

    @property
    def background_similarity(self) -> float:
        """The cosine two unrelated texts typically have under this model (0 when unknown).

        Models differ widely (all-MiniLM-L6-v2 about 0.02, multilingual-e5-small about 0.7):
        search rescales cosines from here to 1, so that relevance, thresholds and the score
        mean the same under every model (``services.candidates.calibrated``)."""
        ...

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """One row per text, L2-normalized. Raises ``EmbeddingFailed`` on provider failure."""
        ...

    async def embed_query(self, text: str) -> Vectors:
        """The 1-D vector to search with, in the same space as ``embed``'s. A model trained with
        prefixes reads the query with its query prefix (e5's "query: ") where ``embed`` uses
        its passage prefix; the local embedders run queries on a thread of their own so that a
        search never waits behind stored texts."""
        ...

    async def embed_now(self, texts: Sequence[str]) -> Vectors:
        """``embed``'s rows for stored texts a caller is waiting for (a search's memories whose
        vectors are still owed): the local embedders run them on a thread of their own, at the
        serving priority, ahead of the texts queued for the vector index."""
        ...

    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class VectorPoint:
    """A memory's vector and the payload needed to filter it (never the truth about it)."""

    id: str
    vector: Sequence[float] | npt.NDArray[np.float32]
    scope_key: str
    scope_ids: dict[str, str]
    layer: str
    stage_id: str | None = None
    tags: Sequence[str] = ()
    critical: bool = False
    expires_at: float = NEVER_EXPIRES
    created_at: float = 0.0
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class VectorFilter:
    """Conditions joined by AND; ``None`` or empty means no condition on that field, except
    ``scope_keys``: empty matches nothing (isolation fails closed).

    ``where`` tests the memory's fields (``agentcore.domain.filters``): a vector store never
    leaves out a match, and returns exactly the matches when its payload decides ``where``
    (``services.vector_payload``); the database evaluates all of it, and the rows read decide.
    ``alive_at`` keeps points whose ``expires_at`` is later than it (epoch seconds).
    ``ids`` keeps only those memories (e.g. to score known candidates against a query).
    """

    scope_keys: Sequence[str]
    layers: Sequence[str] | None = None
    where: Filter | None = None
    alive_at: float | None = None
    ids: Sequence[str] | None = None


@dataclass(frozen=True, slots=True)
class VectorHit:
    id: str
    score: float  # cosine similarity in [-1, 1], higher is closer


class VectorStore(Protocol):
    """Vectors plus filterable payload for memories. Writes are idempotent upserts by id."""

    @property
    def name(self) -> str: ...

    async def ensure_collection(self, dimension: int, embedder_name: str) -> None:
        """Create the collection or check it; a different dimension raises ConfigurationError."""
        ...

    async def reset_collection(self, dimension: int, embedder_name: str) -> None:
        """Drop every vector and start over for another embedder (re-embedding)."""
        ...

    async def upsert(self, points: Sequence[VectorPoint]) -> None: ...

    async def delete(self, ids: Sequence[str]) -> None: ...

    async def search(
        self,
        vector: npt.NDArray[np.float32],
        flt: VectorFilter,
        limit: int,
        score_threshold: float | None = None,
    ) -> list[VectorHit]:
        """Closest points first."""
        ...

    async def count(self, flt: VectorFilter) -> int: ...

    async def vectors(self, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        """The stored vectors of those of ``ids`` the store holds."""
        ...

    async def flush(self) -> None:
        """Make every write so far durable against a machine crash (a no-op on a server).

        It may block for hundreds of milliseconds; call it periodically, never per request.
        """
        ...

    async def close(self) -> None: ...


Superseded = Literal["include", "exclude", "only"]


@dataclass(frozen=True, slots=True)
class ScopeLayerCount:
    scope_key: str
    layer: str
    count: int
    latest: datetime


@dataclass(frozen=True, slots=True)
class ListQuery:
    scope_keys: Sequence[str]
    layer: Layer | None = None
    where: Filter | None = None  # conditions on the memory's fields (agentcore.domain.filters)
    since: datetime | None = None
    until: datetime | None = None
    alive_at: datetime | None = None
    order_desc: bool = True
    limit: int = 50
    after: tuple[datetime, str] | None = None  # keyset cursor: (created_at, id) of the last row
    keyed_only: bool = False  # only memories that have a key
    # Sorted by importance, then (created_at, id): the keyset leads with the last row's.
    by_importance: bool = False
    after_importance: float | None = None
    superseded: Superseded = "include"  # or "exclude" (current only), "only"


@dataclass(frozen=True, slots=True)
class ItemQuery:
    """Namespaced items (``agentcore.domain.namespaces``): the live memories of ``scope_keys``
    (None: of every scope) that satisfy ``where``, most recently updated first."""

    scope_keys: Sequence[str] | None
    where: Filter
    alive_at: datetime
    limit: int
    offset: int = 0


@dataclass(frozen=True, slots=True)
class Access:
    """Retrievals of one memory: how many, and the time of the last."""

    count: int
    at: datetime


@dataclass(frozen=True, slots=True)
class OutboxEntry:
    """A vector write still owed to the vector store: ``op`` is ``upsert`` or ``delete``."""

    id: int
    memory_id: str
    op: str
    attempts: int


@dataclass(frozen=True, slots=True)
class FeedEvent:
    """One change of a memory as the change feed reads it: its history event and its place in
    the store-wide order (``position``)."""

    position: int
    memory_id: str
    scope_key: str
    kind: str
    actor: str | None
    at: datetime
    before: dict[str, Any] | None
    after: dict[str, Any] | None


class ChangeFeed(Protocol):
    """The memories' history as one feed, in position order: what the change stream reads."""

    async def head(self) -> int:
        """The highest position a reader may deliver now (0 when there is none)."""
        ...

    async def after(self, position: int, scope_keys: Sequence[str], limit: int) -> list[FeedEvent]:
        """Up to ``limit`` events of ``scope_keys`` after ``position``, in position order."""
        ...


class MemoryRepository(Protocol):
    async def add(self, memory: Memory) -> None:
        """Raises ``Conflict`` when the id, or the key within the scope, is taken."""
        ...

    async def add_many(self, memories: Sequence[Memory]) -> None:
        """``add`` for several new memories at once; ``Conflict`` when any id or key is
        taken (the unit of work must then be dropped)."""
        ...

    async def get(self, memory_id: str) -> Memory | None: ...

    async def get_many(
        self, memory_ids: Sequence[str], where: Filter | None = None
    ) -> list[Memory]:
        """Found memories only (those that satisfy ``where``, if given), in no particular
        order."""
        ...

    async def update(self, memory: Memory) -> None: ...

    async def delete(self, memory_ids: Sequence[str]) -> int: ...

    async def page(self, query: ListQuery) -> tuple[list[Memory], int]:
        """One page in (created_at, id) order, and the total count matching the filters."""
        ...

    async def ids_in_scope(self, scope_key: str, layer: Layer) -> list[str]: ...

    async def get_by_key(self, scope_key: str, key: str) -> Memory | None: ...

    async def in_session(self, session_id: str, levels: Sequence[ScopeLevel]) -> list[Memory]:
        """The memories of a session at ``levels`` (not compacted), oldest first."""
        ...

    async def lock_texts(self, keys: Sequence[str]) -> None:
        """Until the transaction ends, no other writer holds one of ``keys`` (a scope key and
        a content hash): concurrent adds of one text in one scope take turns."""
        ...

    async def same_texts(
        self, scope_keys: Sequence[str], hashes: Sequence[str], now: datetime
    ) -> list[Memory]:
        """The live memories (current, not compacted, not expired, not keyed) of ``scope_keys``
        whose ``content_hash`` is one of ``hashes``, oldest first."""
        ...

    async def session_writers(self, session_id: str) -> list[tuple[str, str | None]]:
        """Each distinct (scope key, agent id) of the session's memories (not compacted): the
        scopes its agents, users and tasks wrote in, and who."""
        ...

    async def items(self, query: ItemQuery) -> list[Memory]:
        """One page of ``query``'s items, skipping ``offset``."""
        ...

    async def scope_layers(self) -> list[ScopeLayerCount]:
        """Per scope and layer: how many memories (compacted ones aside) and the latest update."""
        ...

    async def superseded_by(self, scope_key: str, memory_id: str) -> list[Memory]:
        """The memories of ``scope_key`` that ``memory_id`` superseded, oldest first."""
        ...

    async def item_namespaces(self, query: ItemQuery) -> list[tuple[str, str]]:
        """The distinct (scope key, namespace) of ``query``'s items (``limit``, ``offset``
        ignored)."""
        ...

    async def search_keys(
        self, scope_key: str, needle: str, now: datetime, limit: int
    ) -> list[tuple[Memory, str, str]]:
        """Keyed memories of a scope whose key or content holds ``needle`` (case ignored),
        ranked: key equal, key prefix, key substring, then content; each with its
        ``matched_field`` ("key"/"value") and ``match`` ("exact"/"prefix"/"substring")."""
        ...

    async def expired(self, now: datetime, limit: int) -> list[Memory]:
        """Up to ``limit`` memories whose expiry is at or before ``now``, oldest expiry first."""
        ...

    async def promoted_from(self, source_ids: Sequence[str]) -> dict[str, str]:
        """For each of ``source_ids`` already promoted: the id of its promoted memory."""
        ...

    async def in_stage(self, stage_id: str) -> list[Memory]:
        """Every memory linked to the stage, oldest first (whatever its scope)."""
        ...

    async def current_in_slot(
        self, scope_keys: Sequence[str], slot: str, at: datetime | None = None
    ) -> list[Memory]:
        """The memories of these scopes that fill ``slot`` and are not superseded (at ``at``:
        created by then and not superseded by then)."""
        ...

    async def after_id(self, memory_id: str, limit: int) -> list[Memory]:
        """Up to ``limit`` searchable memories (not compacted away) of every scope with an id
        greater than ``memory_id``, by id: a walk over the whole store."""
        ...

    async def count_searchable(self) -> int:
        """How many memories of every scope ``after_id`` walks over."""
        ...

    async def add_accesses(self, accesses: Mapping[str, Access]) -> None:
        """Add each access count to access_count and set last_accessed_at to its time
        (unknown ids are ignored)."""
        ...


class HistoryRepository(Protocol):
    async def add(self, event: MemoryEvent) -> None: ...

    async def add_many(self, events: Sequence[MemoryEvent]) -> None: ...

    async def for_memory(self, memory_id: str) -> list[MemoryEvent]:
        """Oldest first."""
        ...


class OutboxRepository(Protocol):
    async def add(self, memory_id: str, op: str) -> int:
        """Queue a write; returns the entry id."""
        ...

    async def add_many(self, memory_ids: Sequence[str], op: str) -> list[int]:
        """Queue one write per memory; returns the entry ids, in order."""
        ...

    async def pending(
        self, limit: int, *, failed_only: bool = False, created_before: datetime | None = None
    ) -> list[OutboxEntry]:
        """Oldest first; ``failed_only`` keeps entries with at least one failed attempt."""
        ...

    async def remove(self, entry_ids: Sequence[int]) -> None: ...

    async def mark_failed(self, entry_ids: Sequence[int]) -> None: ...

    async def count(self) -> int: ...


class SettingsRepository(Protocol):
    """Small key/value facts about the store itself (for example the embedder it was built with)."""

    async def get(self, name: str) -> str | None: ...

    async def put(self, name: str, value: str) -> None: ...


@dataclass(frozen=True, slots=True)
class EpisodeQuery:
    """Episodes of ``scope_keys`` newest first; ``since``/``until`` match every episode whose
    [started_at, ended_at] overlaps them; ``after`` is the (started_at, id) of the last row."""

    scope_keys: Sequence[str]
    session_id: str | None = None
    task_id: str | None = None
    stage_id: str | None = None
    status: EpisodeStatus | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int = 20
    after: tuple[datetime, str] | None = None


class EpisodeRepository(Protocol):
    async def get_many(self, episode_ids: Sequence[str], *, lock: bool = False) -> list[Episode]:
        """Found episodes only; ``lock`` holds them against concurrent writers until commit."""
        ...

    async def open_for(self, scope_key: str, session_id: str | None) -> Episode | None:
        """The newest open episode of the session in that scope."""
        ...

    async def overlapping(self, scope_key: str, since: datetime, until: datetime) -> list[Episode]:
        """Every episode of the scope, of any status, whose time range meets [since, until]."""
        ...

    async def save(self, episode: Episode) -> None:
        """Insert, or replace the episode with the same id."""
        ...

    async def page(self, query: EpisodeQuery) -> tuple[list[Episode], int]:
        """One page and the total count matching the filters."""
        ...

    async def closed_since(self, since: datetime | None, limit: int) -> list[Episode]:
        """Closed episodes last updated after ``since`` (all when None), oldest update first."""
        ...

    async def beyond_cap(self, scope_key: str, keep: int) -> list[Episode]:
        """Unsummarized episodes of the scope older than its newest ``keep``, oldest first."""
        ...


class StageRepository(Protocol):
    async def lock_task(self, task_id: str) -> None:
        """Hold the task against concurrent stage changes until the transaction ends."""
        ...

    async def add(self, stage: Stage) -> None:
        """Raises ``Conflict`` when the id is taken or the task already has an active stage;
        the unit of work stays usable."""
        ...

    async def update(self, stage: Stage) -> None:
        """Write its status, completed_at, reason and metadata."""
        ...

    async def get(self, stage_id: str, *, lock: bool = False) -> Stage | None: ...

    async def active(self, task_id: str, *, lock: bool = False) -> Stage | None:
        """The task's active stage; ``lock`` holds it against concurrent writers until commit."""
        ...

    async def of_task(self, task_id: str) -> list[Stage]:
        """Oldest first."""
        ...

    async def pending_compression(self, limit: int, claimed_before: datetime | None) -> list[Stage]:
        """Completed stages that have no stage memory yet, oldest completion first: those whose
        compression nobody claimed, or (with a time) claimed before it."""
        ...

    async def claim_compression(
        self, stage_id: str, at: datetime, claimed_before: datetime | None
    ) -> bool:
        """Claim the stage's compression job at ``at``, unless it is claimed already (or,
        with ``claimed_before``, claimed since then); whether this call claimed it. Atomic:
        of concurrent claims, one wins."""
        ...


class StageMemoryRepository(Protocol):
    async def save(self, memory: StageMemory) -> bool:
        """Insert unless the stage has a stage memory already (the first one stands);
        whether it was inserted."""
        ...

    async def get(self, stage_id: str) -> StageMemory | None: ...

    async def of_task(self, task_id: str) -> list[StageMemory]:
        """Oldest first."""
        ...


class TaskContextRepository(Protocol):
    async def save(self, context: TaskContext) -> None:
        """Insert, or replace the context of the same task."""
        ...

    async def get(self, task_id: str) -> TaskContext | None: ...


class CostRepository(Protocol):
    async def add(self, record: CostRecord) -> None: ...

    async def spent(self, since: datetime, until: datetime) -> float:
        """Dollars of every record created in [since, until)."""
        ...

    async def totals(self, query: CostQuery) -> list[CostTotals]:
        """One row per (operation, model) among the matching records."""
        ...


class CompressionMetricsRepository(Protocol):
    async def add(self, metric: CompressionMetric) -> None: ...

    async def summary(self, task_id: str) -> dict[CompressionLevel, LevelSummary]:
        """Per level with at least one compression of the task."""
        ...


class ErrorRecordRepository(Protocol):
    async def add(self, record: ErrorRecord) -> None: ...

    async def delete(self, error_id: str) -> None: ...

    async def query(self, query: ErrorQuery) -> list[ErrorRecord]:
        """Newest first; each record carries the type of its stage when the stage exists."""
        ...


class InterventionRepository(Protocol):
    async def add(self, intervention: Intervention) -> None: ...

    async def of_task(self, task_id: str, limit: int) -> list[Intervention]:
        """Newest first."""
        ...

    async def count(self, task_id: str) -> dict[tuple[str, str], int]:
        """How many interventions of the task by (intervention type, outcome)."""
        ...


class UnitOfWork(Protocol):
    """``async with uow:`` opens one transaction; it rolls back unless ``commit()`` was called."""

    memories: MemoryRepository
    history: HistoryRepository
    outbox: OutboxRepository
    store_settings: SettingsRepository
    episodes: EpisodeRepository
    stages: StageRepository
    stage_memories: StageMemoryRepository
    task_contexts: TaskContextRepository
    costs: CostRepository
    compression_metrics: CompressionMetricsRepository
    errors: ErrorRecordRepository
    interventions: InterventionRepository

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    async def commit(self) -> None: ...


class UnitOfWorkFactory(Protocol):
    def __call__(self, *, read_only: bool = False) -> UnitOfWork:
        """A new unit of work; a ``read_only`` one must not write (it may skip write locks)."""
        ...


@dataclass(frozen=True, slots=True)
class EpisodeItem:
    """One item leaving working memory: it becomes an episodic memory of its session."""

    id: str  # the working-memory item's id; reused as the memory id (idempotent moves)
    content: str
    kind: str  # message, task or goal
    role: str | None
    at: datetime
    stage_id: str | None = None


class EpisodeSink(Protocol):
    """Where working memory sends what it evicts or flushes (the episodic layer)."""

    async def record(self, scope: ScopeIds, items: Sequence[EpisodeItem], reason: str) -> list[str]:
        """Store the items as episodes of ``scope`` (which carries the session id); returns
        the ids of the stored memories. Items of different stages never share an episode.
        Idempotent: items already stored are skipped. ``reason``: evicted, flushed or idle."""
        ...


class StageResolver(Protocol):
    """Links raw memories added under a task to the task's current COMPASS stage."""

    async def stage_for(self, task_id: str, memory: Memory) -> str | None:
        """The id of the stage ``memory`` belongs to (the task's current stage, after any
        automatic transition the memory itself signals), or None when the task has no stage."""
        ...
