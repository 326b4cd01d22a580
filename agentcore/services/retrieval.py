"""EnhancedRetrieval: candidates from the vector store, checked against the database, ranked.

Ranking today is by similarity alone; ``_rank`` is the seam where the multi-factor score
(DESIGN §4) plugs in. ``similarity`` is the cosine to the query clipped to [0, 1].
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agentcore.domain.clock import Clock
from agentcore.domain.errors import QueryTooLong
from agentcore.domain.models import Layer, Memory, ScopeIds
from agentcore.domain.records import STORED_LAYERS, parse_layer
from agentcore.domain.scopes import visible_scope_keys
from agentcore.services.ports import Embedder, UnitOfWorkFactory, VectorFilter, VectorStore

# Extra candidates fetched beyond ``limit`` so that vectors whose memory was just deleted
# (the vector delete still queued) do not shorten a page.
_SLACK = 8


@dataclass(frozen=True, slots=True)
class SearchQuery:
    query: str
    scope: ScopeIds
    layers: Sequence[str] | None = None
    scopes: Sequence[str] | None = None
    limit: int = 10
    threshold: float | None = None
    tags: Sequence[str] | None = None
    metadata: dict[str, str | int | bool] | None = None
    stage_id: str | None = None


@dataclass(frozen=True, slots=True)
class ScoredMemory:
    memory: Memory
    score: float
    similarity: float
    factors: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    results: list[ScoredMemory]
    searched_layers: list[Layer]
    searched_scopes: list[str]


class EnhancedRetrieval:
    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        vectors: VectorStore,
        embedder: Embedder,
        clock: Clock,
        max_query_length: int,
    ) -> None:
        self._uow_factory = uow_factory
        self._vectors = vectors
        self._embedder = embedder
        self._clock = clock
        self._max_query_length = max_query_length

    async def search(self, q: SearchQuery) -> SearchOutcome:
        if len(q.query) > self._max_query_length:
            raise QueryTooLong(
                f"query has {len(q.query)} characters; the limit is {self._max_query_length}"
            )
        keys = visible_scope_keys(q.scope, q.scopes)
        layers = list(STORED_LAYERS) if q.layers is None else [parse_layer(v) for v in q.layers]
        now = self._clock()
        flt = VectorFilter(
            scope_keys=keys,
            layers=[layer.value for layer in layers],
            stage_id=q.stage_id,
            tags_any=q.tags or None,
            metadata=q.metadata or None,
            alive_at=now.timestamp(),
        )
        vector = (await self._embedder.embed([q.query]))[0]
        hits = await self._vectors.search(vector, flt, q.limit + _SLACK, q.threshold)
        async with self._uow_factory(read_only=True) as uow:
            memories = await uow.memories.get_many([hit.id for hit in hits])
        by_id = {m.id: m for m in memories if m.scope_key in keys and not m.is_expired(now)}
        ranked = self._rank(
            [(by_id[hit.id], hit.score) for hit in hits if hit.id in by_id],
        )
        return SearchOutcome(
            results=ranked[: q.limit],
            searched_layers=layers,
            searched_scopes=[key.split(":", 1)[0] for key in keys],
        )

    def _rank(self, candidates: list[tuple[Memory, float]]) -> list[ScoredMemory]:
        scored = []
        for memory, cosine in candidates:
            similarity = min(max(cosine, 0.0), 1.0)
            scored.append(ScoredMemory(memory, similarity, similarity, {"similarity": similarity}))
        scored.sort(key=lambda s: s.score, reverse=True)
        return scored
