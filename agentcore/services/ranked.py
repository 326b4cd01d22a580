"""A ranked search result (``ScoredMemory``), and the current values in a ranking
(``services.retrieval``): the current value of a slot a question asks for goes first
(``answers_first``); a superseded result gives its place to the current value of its chain
of updates (``current_of``, ``in_place_of``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from agentcore.domain.models import Memory
from agentcore.domain.scoring import ScoreContext, combine, factors


@dataclass(frozen=True, slots=True)
class ScoredMemory:
    memory: Memory
    score: float
    similarity: float
    factors: dict[str, float] = field(default_factory=dict)
    contradicts: tuple[str, ...] = ()  # ids of other results this one contradicts
    superseded_by: str | None = None  # the contradicting result preferred over this one
    current_for: str | None = None  # ranked first as the current value of this slot
    signals: Mapping[str, float] | None = None  # what its relevance was made of, if asked
    cosine: float = 0.0  # calibrated: how close its meaning is to the query's


def answers_first(
    top: list[ScoredMemory], answers: Sequence[Memory], ctx: ScoreContext, when: datetime
) -> list[ScoredMemory]:
    """The current values of the slot the query asked about, newest first, ahead of the
    ranking (each with its own factors; one that was not a candidate gets the best
    candidate's relevance), then the rest of the ranking."""
    live = [
        m
        for m in answers
        if m.created_at <= when
        and m.current_at(when)
        and not m.is_expired(ctx.now)
        and m.compacted_into_id is None
    ]
    if not live:
        return top
    live.sort(key=lambda m: m.created_at, reverse=True)
    ranked = {s.memory.id: s for s in top}
    best = max((s.score for s in top), default=0.0)
    relevance = max((s.factors.get("similarity", 0.0) for s in top), default=0.0)
    cosine = max((s.cosine for s in top), default=0.0)
    first = []
    for memory in live:
        found = ranked.get(memory.id)
        if found is None:
            values = factors(memory, relevance, ctx)
            found = ScoredMemory(
                memory, combine(values, ctx.weights), values["similarity"], values, cosine=cosine
            )
        first.append(replace(found, score=max(found.score, best), current_for=memory.fact_slot))
    placed = {s.memory.id for s in first}
    return first + [s for s in top if s.memory.id not in placed]


def in_place_of(
    old: ScoredMemory, ranked: ScoredMemory | None, current: Memory, ctx: ScoreContext
) -> ScoredMemory:
    """The current value ranked where ``old`` was: its own factors (with the relevance of the
    old value when it was not a candidate itself), at least the old value's score."""
    if ranked is None:
        values = factors(current, old.factors["similarity"], ctx)
        ranked = ScoredMemory(
            current, combine(values, ctx.weights), values["similarity"], values, cosine=old.cosine
        )
    return replace(ranked, score=max(ranked.score, old.score))


def current_of(
    memory: Memory, known: Mapping[str, Memory], when: datetime, now: datetime
) -> Memory | None:
    """The current memory of ``memory``'s chain of updates at ``when``, if it is not
    ``memory`` itself and still readable (not deleted, expired or compacted away)."""
    seen = {memory.id}
    current = memory
    while not current.current_at(when):
        successor = known.get(current.superseded_by or "")
        if successor is None:
            break
        current = successor
        if current.id in seen:
            return None
        seen.add(current.id)
    if current is memory or current.is_expired(now) or current.compacted_into_id is not None:
        return None
    return current
