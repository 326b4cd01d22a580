"""EnhancedRetrieval: candidates (dense + lexical, fused: ``agentcore.services.candidates``),
checked against the database, ranked.

Ranking (``_rank`` and after) is the multi-factor score of ``agentcore.domain.scoring``
(DESIGN §4): the top ``limit`` by score, contradicting results flagged and the superseded one
placed after the one preferred over it (``agentcore.domain.contradictions``), optionally
ordered by scope precedence; the accesses are then noted for the background writer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Protocol

import numpy as np

from agentcore.domain.clock import Clock
from agentcore.domain.contradictions import clauses, resolve, superseded_last
from agentcore.domain.error_patterns import text_tokens
from agentcore.domain.errors import InvalidParams, MissingIdentifier, ProviderError, QueryTooLong
from agentcore.domain.filters import (
    AnyOf,
    Condition,
    Field,
    Filter,
    Op,
    all_of,
    created_between,
    tags_filter,
)
from agentcore.domain.models import Layer, Memory, ScopeIds, StageType
from agentcore.domain.records import STORED_LAYERS, parse_layer
from agentcore.domain.scopes import visible_scope_keys
from agentcore.domain.scoring import (
    ScoreContext,
    Weights,
    combine,
    content_cues,
    factors,
    parse_current_stage,
)
from agentcore.domain.updates import asked_slot
from agentcore.domain.updates.questions import asks_present, timeless
from agentcore.domain.updates.ranking import may_reorder, newer_first
from agentcore.domain.updates.subjects import asked_people, states_for
from agentcore.services.access import AccessRecorder
from agentcore.services.candidates import (
    CandidateGenerator,
    Fusion,
    LexicalIndex,
    Ranked,
    calibrated,
)
from agentcore.services.fresh import FreshVectors
from agentcore.services.ports import Embedder, UnitOfWorkFactory, VectorFilter, VectorStore
from agentcore.services.ranked import ScoredMemory, answers_first, current_of, in_place_of
from agentcore.services.relevance import Candidate, Query, Relevance

# Candidates ranked beyond ``limit``, so the other factors of the score can lift a memory that
# is slightly less relevant (candidates come from ``agentcore.services.candidates``).
_SLACK = 8

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SearchQuery:
    query: str
    scope: ScopeIds
    layers: Sequence[str] | None = None
    scopes: Sequence[str] | None = None
    scope_keys: Sequence[str] | None = None  # exactly these scopes (replaces ``scopes``)
    limit: int = 10
    threshold: float | None = None
    tags: Sequence[str] | None = None
    tags_match: str = "any"  # or "all": every tag must be held
    where: Filter | None = None  # conditions on the memory's fields (agentcore.domain.filters)
    stage_id: str | None = None
    current_stage: str | None = None  # a stage type: boosts what fits it (FR-5.3)
    scoring_weights: Mapping[str, float] | None = None  # full or partial (domain.scoring)
    order_by: str = "score"  # or "precedence": most specific scope first, then score
    dense_only: bool = False  # relevance = cosine alone (near-duplicate checks)
    as_of: datetime | None = None  # memory as it was then (knowledge updates)
    explain: bool = False  # each result also says what its relevance was made of
    since: datetime | None = None  # created at or after
    until: datetime | None = None  # created before
    # also every scope that holds memories of the scope's session (its agents', users' and
    # tasks' memories written in it), those rows restricted to the session
    session_wide: bool = False

    def row_filter(self) -> Filter | None:
        """Every condition on the memory's fields: stage, tags, ``where``, creation times
        (``as_of``: created by then)."""
        return all_of(
            None if self.stage_id is None else Condition(Field.STAGE_ID, Op.EQ, self.stage_id),
            tags_filter(self.tags, self.tags_match),
            self.where,
            created_between(self.since, self.until, through=self.as_of),
        )


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    results: list[ScoredMemory]
    searched_layers: list[Layer]
    searched_scopes: list[str]
    weights: dict[str, float] = field(default_factory=dict)  # the weights the score used
    ranker: str = ""  # what ranked the candidates (``services.relevance``)


ErrorCorrection = Callable[[Sequence[Memory]], Mapping[str, float]]
"""Memory id → [0, 1]: how much each memory corrected, or relates to, recent errors of the
caller's task or agent. Ids left out score 0."""


class ErrorCorrectionSource(Protocol):
    """The error tracker's retrieval signal (FR-4.4)."""

    async def prepare(self, query: str, scope: ScopeIds) -> ErrorCorrection | None:
        """What the factor needs for this search, read before the candidates are known (it
        runs beside candidate generation); None when the search has no error signal."""
        ...


ORDERS = ("score", "precedence")
_PRIMED_PER_TURN = 8  # texts read per turn of the event loop after a write (~0.2 ms each)
_STAGE_CACHE = 10_000  # stage id → type entries kept (a stage never changes type)
_UPDATE_HOPS = 8  # updates followed from a superseded result to the current value
# A question about the user counts this share of the relevance of a memory that states the
# fact of someone it does not ask about ("My wife's GP is Dr. Singh" for "Who is the user's
# doctor?", "My best friend is dating Luca" for "Who is the user's partner?").
_SOMEONE_ELSES = 0.25


class EnhancedRetrieval:
    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        vectors: VectorStore,
        embedder: Embedder,
        clock: Clock,
        max_query_length: int,
        *,
        weights: Weights | None = None,
        recency_half_life_hours: float = 168.0,
        access: AccessRecorder | None = None,
        error_signals: ErrorCorrectionSource | None = None,
        lexical: LexicalIndex | None = None,
        fusion: Fusion | None = None,
        relevance: Relevance | None = None,
        saturated: Callable[[], bool] = lambda: False,
    ) -> None:
        # what the indexer owes the vector store, compared with queries until it is written
        self.fresh = FreshVectors()
        self._candidates = CandidateGenerator(
            uow_factory,
            vectors,
            embedder,
            lexical,
            fusion,
            fresh=self.fresh,
            relevance=relevance,
            saturated=saturated,
        )
        self._uow_factory = uow_factory
        self._vectors = vectors
        self._embedder = embedder
        self._clock = clock
        self._max_query_length = max_query_length
        self._weights = weights or Weights()
        self._half_life = recency_half_life_hours
        self._access = access
        self._error_signals = error_signals
        self._stage_types: dict[str, StageType] = {}

    async def search(self, q: SearchQuery) -> SearchOutcome:
        if len(q.query) > self._max_query_length:
            raise QueryTooLong(
                f"query has {len(q.query)} characters; the limit is {self._max_query_length}"
            )
        weights, current_stage = self._scoring(q)  # invalid params fail before any work
        now = self._clock()
        keys, layers, flt = await self._filter(q, now)
        candidates, correction, answers = await asyncio.gather(
            self._candidates.generate(
                q.query if q.dense_only else timeless(q.query),
                flt,
                q.limit + _SLACK,
                q.threshold,
                now,
                dense_only=q.dense_only,
                owners=_owners(q.scope, keys),
                explain=q.explain,
            ),
            self._error_correction(q),
            self._current_answers(q, keys, layers),
        )
        ctx = ScoreContext(now, weights, self._half_life, current_stage)
        return SearchOutcome(
            results=await self._rank(q, candidates, ctx, correction, answers, flt.where),
            searched_layers=layers,
            searched_scopes=[key.split(":", 1)[0] for key in keys],
            weights=weights.as_dict(),
            ranker=self._candidates.relevance.name,
        )

    async def candidates(self, q: SearchQuery) -> tuple[Query, list[Candidate]]:
        """The candidates ``search`` would rank for ``q``, each with the signals its relevance
        is computed from (what a ranking model is trained on: ``benchmarks/ranker``)."""
        now = self._clock()
        keys, _, flt = await self._filter(q, now)
        return await self._candidates.candidates(
            timeless(q.query), flt, q.limit + _SLACK, now, owners=_owners(q.scope, keys)
        )

    async def _filter(
        self, q: SearchQuery, now: datetime
    ) -> tuple[list[str], list[Layer], VectorFilter]:
        """The scope keys and layers ``q`` searches, and the filter of its candidates."""
        if q.scope_keys is not None:
            keys = list(q.scope_keys)
        else:
            keys = visible_scope_keys(q.scope, q.scopes)
        layers = list(STORED_LAYERS) if q.layers is None else [parse_layer(v) for v in q.layers]
        where = q.row_filter()
        if q.session_wide:
            keys, where = await self._session_wide(q.scope, keys, where)
        flt = VectorFilter(
            scope_keys=keys,
            # Every stored memory is of a stored layer: a filter naming them all is left out
            # (it cost the vector store a payload check per point).
            layers=None if set(layers) >= set(STORED_LAYERS) else [layer.value for layer in layers],
            where=where,
            alive_at=now.timestamp(),
        )
        return keys, layers, flt

    async def _session_wide(
        self, scope: ScopeIds, keys: list[str], where: Filter | None
    ) -> tuple[list[str], Filter | None]:
        """``keys`` and the scopes written in the session; ``where`` then also requires a row
        to be of the session or of one of the levels the caller named."""
        session = scope.session_id
        if session is None:
            raise MissingIdentifier("a session-wide search needs session_id")
        async with self._uow_factory(read_only=True) as uow:
            written = [key for key, _ in await uow.memories.session_writers(session)]
        extra = [key for key in dict.fromkeys(written) if key not in keys]
        if not extra:
            return keys, where
        named = [key.split(":", 1) for key in keys]
        of_named = [Condition(Field(level + "_id"), Op.EQ, value) for level, value in named]
        return keys + extra, all_of(where, AnyOf(tuple(of_named)))

    def _scoring(self, q: SearchQuery) -> tuple[Weights, StageType | None]:
        if q.order_by not in ORDERS:
            raise InvalidParams(
                f"unknown order_by {q.order_by!r}",
                errors=[{"field": "order_by", "message": "one of " + ", ".join(ORDERS)}],
            )
        return self._weights.override(q.scoring_weights or {}), parse_current_stage(q.current_stage)

    async def _error_correction(self, q: SearchQuery) -> ErrorCorrection | None:
        if self._error_signals is None:
            return None
        return await self._error_signals.prepare(q.query, q.scope)

    async def _rank(
        self,
        q: SearchQuery,
        candidates: list[Ranked],
        ctx: ScoreContext,
        correction: ErrorCorrection | None,
        answers: Sequence[Memory] = (),
        where: Filter | None = None,
    ) -> list[ScoredMemory]:
        """The top ``q.limit`` candidates (memory, relevance in [0, 1]) by score, each current
        value (satisfying ``where``) before the memories it superseded, contradictions
        flagged, in the requested order; their accesses are noted."""
        memories = [r.memory for r in candidates]
        if ctx.current_stage is not None:
            ctx = replace(ctx, stage_types=await self._stage_types_of(memories))
        if correction is not None and memories:
            ctx = replace(ctx, error_correction=correction(memories))
        scored = []
        asked = asked_people(q.query)
        for memory, relevance, signals, cosine in candidates:
            if asked is not None and not states_for(memory.content, asked):
                relevance *= _SOMEONE_ELSES
            values = factors(memory, relevance, ctx)
            scored.append(
                ScoredMemory(
                    memory,
                    combine(values, ctx.weights),
                    values["similarity"],
                    values,
                    signals=signals,
                    cosine=cosine,
                )
            )
        scored.sort(key=lambda s: s.score, reverse=True)
        top = scored[: q.limit]
        if q.order_by == "precedence":  # chosen by score, shown most specific scope first
            top.sort(key=lambda s: (s.memory.scope_level.precedence, -s.score))
        top = await self._current_first(top, ctx, q.as_of or ctx.now, where)
        top = answers_first(top, answers, ctx, q.as_of or ctx.now)
        if q.as_of is None and not q.dense_only and asks_present(q.query):
            # a newer statement of what an older one said answers a question of how things are
            top = await self._newer_first(top)
        top = _flag_contradictions(top)[: q.limit]
        if self._access is not None:
            self._access.note([s.memory.id for s in top], ctx.now)
        return top

    async def _newer_first(self, top: list[ScoredMemory]) -> list[ScoredMemory]:
        """``newer_first`` with the statements' own vectors (those still owed to the store from
        the fresh ones, the rest from the store), read only when a pair may be reordered."""
        if not may_reorder([s.memory for s in top]):
            return top
        ids = [s.memory.id for s in top]
        vectors = {key: vector for key, (_, vector) in self.fresh.known(ids).items()}
        missing = [memory_id for memory_id in ids if memory_id not in vectors]
        if missing:
            try:
                vectors |= await self._vectors.vectors(missing)
            except ProviderError as exc:  # the store is away: what is unknown does not move
                log.warning("statement vectors unavailable: %s", exc.message)
        background = self._embedder.background_similarity

        def related(older: ScoredMemory, newer: ScoredMemory) -> float | None:
            a, b = vectors.get(older.memory.id), vectors.get(newer.memory.id)
            if a is None or b is None:
                return None
            return calibrated(float(np.dot(a.ravel(), b.ravel())), background)  # unit length

        return newer_first(top, lambda s: s.memory, lambda s: s.cosine, related)

    async def _current_answers(
        self, q: SearchQuery, keys: Sequence[str], layers: Sequence[Layer]
    ) -> list[Memory]:
        """The memories that fill the slot the query asks the current value of ("where does
        the user live now?": ``user|home``; at ``as_of``, the value current then), when it
        asks one and filters nothing they could fail (tags, a stage, ``where``, times, a
        session)."""
        slot = asked_slot(q.query)
        filtered = (
            q.tags or q.where or q.stage_id is not None or q.since or q.until or q.session_wide
        )
        if slot is None or filtered or q.dense_only:
            return []
        async with self._uow_factory(read_only=True) as uow:
            found = await uow.memories.current_in_slot(keys, slot, q.as_of)
        return [m for m in found if m.layer in layers]

    async def _current_first(
        self,
        top: list[ScoredMemory],
        ctx: ScoreContext,
        when: datetime,
        where: Filter | None = None,
    ) -> list[ScoredMemory]:
        """A result superseded by ``when`` goes right after the current value of its slot
        (the end of its chain of updates, among the memories that satisfy ``where``), which
        takes its place in the ranking, whether it ranked lower or not at all: a question
        the old value answered is answered by the new one."""
        stale = [s for s in top if not s.memory.current_at(when)]
        if not stale:
            return top
        known = {s.memory.id: s.memory for s in top}
        wanted = {s.memory.superseded_by for s in stale} - known.keys()
        for _ in range(_UPDATE_HOPS):
            wanted.discard(None)
            if not wanted:
                break
            async with self._uow_factory(read_only=True) as uow:
                found = await uow.memories.get_many([w for w in wanted if w is not None], where)
            known.update((m.id, m) for m in found)
            wanted = {m.superseded_by for m in found if not m.current_at(when)} - known.keys()
        ranked = {s.memory.id: s for s in top}
        out: list[ScoredMemory] = []
        placed: set[str] = set()
        for s in top:
            if s.memory.id in placed:
                continue  # a current value already moved up to the place of an old one
            current = current_of(s.memory, known, when, ctx.now)
            if current is not None:
                s = replace(s, superseded_by=current.id)
                if current.id not in placed:
                    placed.add(current.id)
                    out.append(in_place_of(s, ranked.get(current.id), current, ctx))
            placed.add(s.memory.id)
            out.append(s)
        return out

    async def _stage_types_of(self, memories: Sequence[Memory]) -> dict[str, StageType]:
        """The stage type of every stage the memories were written in (cached: it never
        changes)."""
        wanted = {m.stage_id for m in memories if m.stage_id is not None}
        missing = wanted - self._stage_types.keys()
        if missing:
            async with self._uow_factory(read_only=True) as uow:
                for stage_id in sorted(missing):
                    stage = await uow.stages.get(stage_id)
                    if stage is not None:
                        if len(self._stage_types) >= _STAGE_CACHE:
                            self._stage_types.clear()
                        self._stage_types[stage_id] = stage.stage_type
        return {sid: self._stage_types[sid] for sid in wanted if sid in self._stage_types}


def prime_ranking_soon(contents: Sequence[str]) -> None:
    """Read what ranking reads of each text (the contradiction check's clauses, the stage cues,
    the error-correction words, each cached by text) on the event loop once the caller has
    returned, ``_PRIMED_PER_TURN`` texts per turn of the loop (a batch of a hundred never holds
    it long): the first searches that return a new memory find it done, where a text read cold
    cost a search about 0.2 ms."""
    loop = asyncio.get_running_loop()

    def step(start: int) -> None:
        for content in contents[start : start + _PRIMED_PER_TURN]:
            clauses(content)
            content_cues(content)
            text_tokens(content)
        if start + _PRIMED_PER_TURN < len(contents):
            loop.call_soon(step, start + _PRIMED_PER_TURN)

    if contents:
        loop.call_soon(step, 0)


def _flag_contradictions(results: list[ScoredMemory]) -> list[ScoredMemory]:
    """Mark results that contradict each other; a superseded one goes right after the result
    preferred over it."""
    resolution = resolve([s.memory for s in results])
    if not resolution.contradicts:
        return results
    flagged = [
        replace(
            s,
            contradicts=tuple(resolution.contradicts.get(s.memory.id, ())),
            superseded_by=s.superseded_by or resolution.superseded_by.get(s.memory.id),
        )
        for s in results
    ]
    return superseded_last(flagged, lambda s: s.memory.id, resolution.superseded_by)


def _owners(scope: ScopeIds, keys: Sequence[str]) -> list[str]:
    """The identifiers of the searched scopes (a key is ``level:identifier``)."""
    searched = {key.split(":", 1)[0] for key in keys}
    return [value for level, value in scope.present().items() if level.value in searched]
