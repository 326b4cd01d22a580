"""Search candidates: dense (vector store) and lexical (BM25) hits fused into one relevance.

Dense similarity with a small embedder misses many exact-name and exact-word questions; BM25
misses paraphrases. Both sides fetch their best ``pool`` memories under the same filter; the
union is checked against the database (scope, expiry, existence: the rows decide) and each
memory gets

    relevance = w · cosine⁺ + (1 − w) · coverage · bm25 / max bm25          (all in [0, 1])

where cosine⁺ is the cosine rescaled from the embedder's background similarity (what two
unrelated texts score under that model: about 0.73 for multilingual-e5-small, 0.04 for
all-MiniLM-L6-v2) to 1 (``calibrated``), so that one blend weight, a caller's threshold and
the score's similarity factor mean the same under every model.

(normalized score blending: reciprocal rank fusion throws the score gaps away and, with a weak
dense side, lets its poor ranks in). A lexical candidate the dense side did not return is
scored by its own cosine (one more vector search, restricted to those ids). A dense candidate
missing from a full lexical list is given that list's last score, the most it can have, and
from a list that was not full, zero. A lexical index that scores any memory (``Lookup.bm25``:
SQLite, whose search finds candidates by the rarer query terms only) rescores its hits by the
whole query, and a dense candidate gets its own BM25 where that is above the floor
(``lexical_scores``). ``coverage`` is the share of the query's distinct terms the memory's
lexical document holds, each term weighted by its idf (Lucene's ``coord``): BM25 alone lets
one frequent word outscore a memory that holds most of the question. With one side empty (no
lexical index, no word in common, no vector yet) the other side alone decides.

Evidence clusters in episodes: a memory whose session holds other strong candidates is more
likely what was asked about. The fused value is what ``services.relevance`` ranks by: the
hand-set ``FusedRelevance`` blends it with the strength of the memory's session, a learned
model reads it beside the other signals of each candidate (``Candidate``).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import NamedTuple, Protocol

from agentcore.domain.models import Memory
from agentcore.services.fresh import Claimed, FreshVectors, embed_owed
from agentcore.services.ports import (
    Embedder,
    UnitOfWorkFactory,
    VectorFilter,
    VectorHit,
    Vectors,
    VectorStore,
)
from agentcore.services.query_vectors import QueryVectors
from agentcore.services.relevance import Candidate, FusedRelevance, Query, Relevance
from agentcore.services.vector_payload import decided


@dataclass(frozen=True, slots=True)
class Lookup:
    """The stored memories among some candidates, and what the lexical index knows of them.

    ``coverage``: of each memory whose document holds a term of the query, the share of the
    query's distinct terms it holds, each weighted by its idf over the filter's scopes, in
    (0, 1]. ``bm25``, when the index computes it: each such memory's own BM25 for the whole
    query, on the scale of ``search``'s scores; None when only ``search``'s scores are known.
    Memories holding no term are left out of both; an empty query has none."""

    memories: list[Memory]
    coverage: dict[str, float]
    bm25: dict[str, float] | None = None


class LexicalIndex(Protocol):
    """Full-text search over memories (BM25 or equivalent), kept up to date on every write."""

    async def search(self, query: str, flt: VectorFilter, limit: int) -> list[VectorHit]:
        """About the best ``limit`` memories matching ``flt``, best first; ``score`` > 0,
        higher is better, comparable only within one call. Expired and deleted memories never
        appear. An index whose ``lookup`` gives BM25 may find them by the query's rarer terms
        only (the scores of ``lookup`` then rank them)."""
        ...

    async def lookup(self, query: str, flt: VectorFilter, memory_ids: Sequence[str]) -> Lookup:
        """The stored memories among ``memory_ids`` that satisfy ``flt.where`` (whatever
        their scope or expiry), with their coverage of ``query`` and, if the index computes
        it, their BM25."""
        ...


class Ranked(NamedTuple):
    """A candidate as ``CandidateGenerator.generate`` ranks it."""

    memory: Memory
    relevance: float  # in [0, 1]
    signals: Mapping[str, float] | None = None  # what it was made of, when asked to explain
    cosine: float = 0.0  # calibrated, clipped: how close its meaning is to the query's


@dataclass(frozen=True, slots=True)
class Fusion:
    """How dense and lexical candidates are combined (see the module docstring)."""

    dense_weight: float = 0.4
    pool: int = 30  # candidates fetched from each side (50 found no more evidence on LoCoMo)

    def __post_init__(self) -> None:
        if not 0.0 <= self.dense_weight <= 1.0:
            raise ValueError("dense_weight must be in [0, 1]")
        if self.pool < 1:
            raise ValueError("pool must be positive")


_WIDEN = 4  # dense candidates fetched per one kept when the rows test a ``where``
_WORD = re.compile(r"[^\W_]+")


def calibrated(cosine: float, background: float) -> float:
    """A cosine rescaled from the embedder's background similarity (0) to 1, clipped to
    [0, 1]: what relevance, thresholds and the score take as similarity."""
    if background <= 0.0:
        return min(max(cosine, 0.0), 1.0)
    return min(max((cosine - background) / (1.0 - background), 0.0), 1.0)


def lift(cosine: float, background: float) -> float:
    """A cosine rescaled from the embedder's background similarity (0) to 1, not clipped."""
    if background <= 0.0:
        return cosine
    return (cosine - background) / (1.0 - background)


def without_words(text: str, names: Sequence[str]) -> str:
    """``text`` without the whole words (any case) that make up ``names``."""
    words = {word for name in names for word in _WORD.findall(name.lower())}
    if not words:
        return text
    pattern = r"\b(?:" + "|".join(re.escape(word) for word in sorted(words)) + r")\b"
    return re.sub(pattern, " ", text, flags=re.IGNORECASE)


def floor_of(hits: Sequence[VectorHit], requested: int) -> float:
    """The most a memory missing from ``hits`` can score: the last score of a full list."""
    return hits[-1].score if hits and len(hits) >= requested else 0.0


def lexical_scores(
    hits: Sequence[VectorHit], bm25: Mapping[str, float] | None, requested: int
) -> tuple[dict[str, float], float]:
    """The lexical score of each candidate and the floor of those left out (``fuse``).

    Without ``bm25``: the hits' scores, and the last one's for the rest (``floor_of``). With
    it (the index found the hits by the query's rarer terms only): each hit's BM25 for the
    whole query, the least of them as the floor when the list is full, and its own BM25 for a
    candidate above that floor, which a search by every term would have returned."""
    if bm25 is None:
        return {hit.id: hit.score for hit in hits}, floor_of(hits, requested)
    scores = {hit.id: bm25.get(hit.id, 0.0) for hit in hits}
    floor = min(scores.values()) if scores and len(hits) >= requested else 0.0
    return scores | {k: v for k, v in bm25.items() if v > floor and k not in scores}, floor


def fuse(
    dense: Mapping[str, float],
    lexical: Mapping[str, float],
    dense_weight: float,
    *,
    dense_floor: float = 0.0,
    lexical_floor: float = 0.0,
    coverage: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """Relevance in [0, 1] of every id in either map: cosine clipped to [0, 1], BM25 divided by
    the best BM25 and, given ``coverage``, multiplied by the id's coverage (0 if left out),
    blended with ``dense_weight``; a missing side takes its floor."""
    if not dense and not lexical:
        return {}
    weight = dense_weight if dense and lexical else (1.0 if dense else 0.0)
    best = max(lexical.values(), default=0.0)
    fused = {}
    for memory_id in dict.fromkeys([*dense, *lexical]):
        cosine = _unit(dense.get(memory_id, dense_floor))
        bm25 = _unit(lexical.get(memory_id, lexical_floor) / best) if best > 0 else 0.0
        if coverage is not None:
            bm25 *= _unit(coverage.get(memory_id, 0.0))
        fused[memory_id] = weight * cosine + (1.0 - weight) * bm25
    return fused


class CandidateGenerator:
    """Dense and lexical candidates for a query, fused into (memory, relevance) pairs."""

    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        vectors: VectorStore,
        embedder: Embedder,
        lexical: LexicalIndex | None = None,
        fusion: Fusion | None = None,
        *,
        fresh: FreshVectors | None = None,
        relevance: Relevance | None = None,
        saturated: Callable[[], bool] = lambda: False,
    ) -> None:
        """``relevance`` ranks the candidates (the hand-set fusion when None; a near-duplicate
        check, ``dense_only``, always ranks by it). ``saturated``: whether calls wait for their
        turn (``services.admission``); a search then leaves the owed texts to the indexer."""
        self._uow_factory = uow_factory
        self._vectors = vectors
        self._embedder = embedder
        self._queries = QueryVectors(embedder)
        self._lexical = lexical
        self._fusion = fusion or Fusion()
        self._fresh = FreshVectors() if fresh is None else fresh
        self._fused = FusedRelevance()
        self.relevance: Relevance = relevance or self._fused
        self._saturated = saturated

    async def generate(
        self,
        query: str,
        flt: VectorFilter,
        limit: int,
        threshold: float | None,
        now: datetime,
        *,
        dense_only: bool = False,
        owners: Sequence[str] = (),
        explain: bool = False,
    ) -> list[Ranked]:
        """Up to ``limit`` live memories visible under ``flt``, most relevant first, each with
        its relevance in [0, 1] (at least ``threshold`` when one is given) and, with
        ``explain``, what the ranker made it of. ``dense_only`` makes the relevance the
        clipped cosine alone (e.g. to find paraphrases).

        ``owners``: the identifiers of the searched scopes ("alice" of ``user_id``). Every
        memory of a scope is about its owner whether it names them or not ("I'm vegetarian",
        stored for alice), so a query's words that name the owner ("what can alice not
        eat?") are no lexical evidence and are left out of the lexical side."""
        ranker = self._fused if dense_only else self.relevance
        found, scored = await self.candidates(
            query, flt, limit, now, dense_only=dense_only, owners=owners
        )
        relevance = ranker.score(found, scored)
        signals: list[Mapping[str, float] | None] = [None] * len(scored)
        if explain:
            signals = list(ranker.explain(found, scored))
        ranked = sorted(
            (
                Ranked(c.memory, value, why, c.cosine)
                for c, value, why in zip(scored, relevance, signals, strict=True)
            ),
            key=lambda r: (-r.relevance, r.memory.id),
        )
        if threshold is not None:
            ranked = [r for r in ranked if r.relevance >= threshold]
        return ranked[:limit]

    async def candidates(
        self,
        query: str,
        flt: VectorFilter,
        limit: int,
        now: datetime,
        *,
        dense_only: bool = False,
        owners: Sequence[str] = (),
    ) -> tuple[Query, list[Candidate]]:
        """The query as the rankers read it, and every live candidate of both sides with its
        signals (``generate`` ranks them; the ranking model's training reads them too)."""
        pool = max(self._fusion.pool, limit)
        query_words = without_words(query, owners)
        # A ``where`` is tested by the database on the rows read; when the vector store's
        # payload does not decide all of it (``vector_payload``: it returns a superset), the
        # store is asked for more and its best ``pool`` that the rows confirm are kept.
        wide = pool if flt.where is None or decided(flt.where) else pool * _WIDEN
        lexical_side = self._no_hits() if dense_only else self._lexical_hits(query_words, flt, pool)
        (vector, dense), lexical = await asyncio.gather(
            self._dense(query, flt, wide, exact=dense_only), lexical_side
        )
        asked = Query(query, len(set(_WORD.findall(query_words.lower()))), pool)
        owed = self._fresh.cosines(vector, flt.scope_keys)
        if owed and flt.ids is not None:
            owed = [hit for hit in owed if hit.id in set(flt.ids)]
        dense = _merged(dense, owed, wide)
        ids = list(dict.fromkeys([hit.id for hit in dense] + [hit.id for hit in lexical]))
        if not ids:
            return asked, []
        found, exact = await asyncio.gather(
            self._lookup(query_words if lexical else "", flt, ids),
            self._cosines(vector, flt, dense, lexical, owed),
        )
        keys = set(flt.scope_keys)
        layers = None if flt.layers is None else set(flt.layers)
        live = {
            m.id: m
            for m in found.memories
            if m.scope_key in keys
            and not m.is_expired(now)
            and m.compacted_into_id is None
            and (layers is None or m.layer.value in layers)
        }
        background = self._embedder.background_similarity
        raw = {hit.id: hit.score for hit in (*dense, *exact) if hit.id in live}
        dense_floor = floor_of(dense, wide)
        if wide > pool:
            dense = [hit for hit in dense if hit.id in live][:pool]
            dense_floor = floor_of(dense, pool) if len(dense) >= pool else dense_floor
        wanted = {hit.id for hit in dense} | {hit.id for hit in lexical}
        raw = {memory_id: score for memory_id, score in raw.items() if memory_id in wanted}
        cosine = {memory_id: calibrated(score, background) for memory_id, score in raw.items()}
        floor = calibrated(dense_floor, background) if dense_floor else 0.0
        scores, lexical_floor = lexical_scores(lexical, found.bm25, pool)
        scores = {memory_id: score for memory_id, score in scores.items() if memory_id in live}
        coverage = found.coverage if lexical else {}
        fused = fuse(
            cosine,
            scores,
            self._fusion.dense_weight,
            dense_floor=floor,
            lexical_floor=lexical_floor,
            coverage=coverage if lexical else None,
        )
        dense_rank = {hit.id: n for n, hit in enumerate(dense, 1)}
        lexical_rank = {hit.id: n for n, hit in enumerate(lexical, 1)}
        # the part of a fused value the cosine gives (``fuse``: the weight of the sides it has)
        weight = self._fusion.dense_weight if cosine and scores else (1.0 if cosine else 0.0)
        out: list[Candidate] = []
        for memory_id, value in fused.items():
            near = cosine.get(memory_id, floor)  # in [0, 1] (``calibrated``)
            out.append(
                Candidate(
                    memory=live[memory_id],
                    cosine=near,
                    lift=lift(raw[memory_id], background) if memory_id in raw else floor,
                    bm25=scores.get(memory_id, lexical_floor),
                    coverage=coverage.get(memory_id, 0.0),
                    dense_rank=dense_rank.get(memory_id),
                    lexical_rank=lexical_rank.get(memory_id),
                    fused=value,
                    fused_dense=weight * near,
                )
            )
        return asked, out

    async def _dense(
        self, query: str, flt: VectorFilter, pool: int, *, exact: bool
    ) -> tuple[Vectors, list[VectorHit]]:
        """The query's vector and its nearest memories. ``exact`` embeds the query as a stored
        text is embedded (a near-duplicate check compares cosines to a fixed bar); otherwise
        with the embedder's faster query path, beside the few owed texts of the searched
        scopes not embedded yet (``services.fresh``)."""
        owed: Claimed = {} if exact or self._saturated() else self._fresh.unembedded(flt.scope_keys)
        if owed and flt.ids is not None:
            owed = {memory_id: o for memory_id, o in owed.items() if memory_id in set(flt.ids)}
        if exact:
            vector = (await self._embedder.embed([query]))[0]
        elif owed:
            vector, _ = await asyncio.gather(
                self._queries.of(query), embed_owed(self._fresh, self._embedder, owed)
            )
        else:
            vector = await self._queries.of(query)
        return vector, await self._vectors.search(vector, flt, pool)

    async def _cosines(
        self,
        vector: Vectors,
        flt: VectorFilter,
        dense: Sequence[VectorHit],
        lexical: Sequence[VectorHit],
        owed: Sequence[VectorHit],
    ) -> list[VectorHit]:
        """The cosine of the lexical candidates the dense side did not return: each is
        scored against the query itself (``owed``: those the vector store does not hold yet,
        compared here), not given the dense side's floor."""
        seen = {hit.id for hit in dense}
        missing = [hit.id for hit in lexical if hit.id not in seen]
        if not missing:
            return []
        found = [hit for hit in owed if hit.id in set(missing)]
        missing = [memory_id for memory_id in missing if memory_id not in {h.id for h in found}]
        if not missing:
            return found
        return found + await self._vectors.search(vector, replace(flt, ids=missing), len(missing))

    async def _lookup(self, query: str, flt: VectorFilter, ids: Sequence[str]) -> Lookup:
        """The memories of ``ids`` and, from the lexical index, what it knows of them."""
        if self._lexical is not None:
            return await self._lexical.lookup(query, flt, ids)
        async with self._uow_factory(read_only=True) as uow:
            return Lookup(await uow.memories.get_many(ids, flt.where), {})

    async def _no_hits(self) -> list[VectorHit]:
        return []

    async def _lexical_hits(self, query: str, flt: VectorFilter, pool: int) -> list[VectorHit]:
        if self._lexical is None:
            return []
        return await self._lexical.search(query, flt, pool)


def _merged(dense: list[VectorHit], owed: list[VectorHit], pool: int) -> list[VectorHit]:
    """The vector store's hits with the owed memories it does not hold yet, compared with the
    query here (their rows are checked against the filter with the others), best ``pool``."""
    if not owed:
        return dense
    merged = {hit.id: hit for hit in dense} | {hit.id: hit for hit in owed}
    return sorted(merged.values(), key=lambda hit: -hit.score)[:pool]


def _unit(value: float) -> float:
    return min(max(value, 0.0), 1.0)
