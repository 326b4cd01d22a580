"""How relevant each search candidate is to the query: the signals both indexes give a candidate
(``Candidate``), the features a ranking model reads from them (``features``), and the rankers
that turn them into a relevance in [0, 1] (``Relevance``).

Two rankers implement the port:

- ``FusedRelevance``, the hand-set fusion: ``w · cosine⁺ + (1 − w) · coverage · bm25 / max``
  blended with the strength of the candidate's session (``services.candidates``: why);
- a model learned from labelled questions (``adapters.rankers``), which reads every feature
  below; the fusion is its fallback (no model file, or ``RANKER=fusion``).

Features are computed the same way when the model is trained (``benchmarks/ranker``) and when
it serves, by ``features`` alone, so the two cannot drift apart.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from agentcore.domain.models import Memory
from agentcore.domain.records import speaker_of
from agentcore.domain.updates.vocabulary import word_set

Matrix = npt.NDArray[np.float64]

FEATURES = (
    "dense",  # the cosine rescaled from the model's background (0) to 1, clipped
    "dense_lift",  # the same, not clipped (below the background it is negative)
    "dense_rank",  # log2(1 + rank) in the vector store's list (absent: one past its end)
    "lexical",  # BM25 for the whole query / the best candidate's
    "lexical_per_term",  # BM25 / the query's distinct words
    "lexical_rank",  # log2(1 + rank) in the lexical list (absent: one past its end)
    "coverage",  # the idf-weighted share of the query's words the document holds
    "fused",  # the hand-set fusion (``fuse``), without its session blend
    "session_strength",  # the mean fused value of its session's best 3, / the best session's
    "session_support",  # the fused values of the other candidates of its session, summed
    "newest",  # its creation among the candidates: 1 the newest, 0 the oldest
    "speaker_named",  # the query names who said it (``metadata.speaker``)
    "names_shared",  # the share of the query's names its text holds
    "question",  # it asks something itself
    "words",  # log(1 + its words)
    "query_words",  # log(1 + the query's distinct words)
    "candidates",  # log(1 + the candidates of this query)
)


@dataclass(frozen=True, slots=True)
class Candidate:
    """What the two indexes say of one candidate of a query."""

    memory: Memory
    cosine: float  # calibrated, clipped to [0, 1] (``candidates.calibrated``)
    lift: float  # calibrated, not clipped
    bm25: float  # for the whole query; the lexical list's floor when not known
    coverage: float  # in [0, 1]
    dense_rank: int | None  # 1-based in the vector store's list, None when absent
    lexical_rank: int | None  # likewise in the lexical index's list
    fused: float  # ``candidates.fuse``, in [0, 1]


@dataclass(frozen=True, slots=True)
class Query:
    """The query as the features read it."""

    text: str
    words: int  # distinct words
    pool: int  # each side's list length asked for


class Relevance(Protocol):
    """Ranks candidates: a relevance in [0, 1] for each, higher is better."""

    @property
    def name(self) -> str: ...

    def score(self, query: Query, candidates: Sequence[Candidate]) -> list[float]: ...


@dataclass(frozen=True, slots=True)
class FusedRelevance:
    """The hand-set fusion: ``fused`` blended with the strength of the candidate's session (the
    mean of its best ``episode_top`` fused values, relative to the best session's)."""

    episode_weight: float = 0.3
    episode_top: int = 3

    @property
    def name(self) -> str:
        return "fusion"

    def score(self, query: Query, candidates: Sequence[Candidate]) -> list[float]:
        if self.episode_weight <= 0 or not candidates:
            return [c.fused for c in candidates]
        strength = session_strength(candidates, self.episode_top)
        weight = self.episode_weight
        return [
            (c.fused + weight * s) / (1.0 + weight)
            for c, s in zip(candidates, strength, strict=True)
        ]


def episode_of(memory: Memory) -> Hashable:
    """The episode a memory belongs to: its session within its scope and layer."""
    if memory.scope.session_id is None:
        return ("memory", memory.id)
    return (memory.scope_key, memory.layer.value, memory.scope.session_id)


def session_strength(candidates: Sequence[Candidate], top: int = 3) -> list[float]:
    """Each candidate's session strength: the mean fused value of the session's best ``top``
    candidates, relative to the best session's (a candidate without a session is one of its
    own)."""
    members: dict[Hashable, list[float]] = {}
    for c in candidates:
        members.setdefault(episode_of(c.memory), []).append(c.fused)
    strength = {
        key: sum(sorted(v, reverse=True)[:top]) / min(len(v), top) for key, v in members.items()
    }
    best = max(strength.values(), default=0.0)
    if best <= 0:
        return [0.0] * len(candidates)
    return [strength[episode_of(c.memory)] / best for c in candidates]


def features(query: Query, candidates: Sequence[Candidate]) -> Matrix:
    """One row per candidate, one column per name of ``FEATURES``."""
    n = len(candidates)
    out = np.zeros((n, len(FEATURES)), dtype=np.float64)
    if n == 0:
        return out
    absent = math.log2(2 + query.pool)
    best_bm25 = max((c.bm25 for c in candidates), default=0.0)
    strength = session_strength(candidates)
    sessions: dict[Hashable, float] = {}
    for c in candidates:
        key = episode_of(c.memory)
        sessions[key] = sessions.get(key, 0.0) + c.fused
    order = sorted(
        range(n), key=lambda i: (candidates[i].memory.created_at, candidates[i].memory.id)
    )
    newest = [0.0] * n
    for position, i in enumerate(order):
        newest[i] = position / (n - 1) if n > 1 else 1.0
    names = query_names(query.text)
    lowered = query.text.lower()
    for i, c in enumerate(candidates):
        memory = c.memory
        speaker = speaker_of(memory.metadata)
        row = out[i]
        row[0] = c.cosine
        row[1] = c.lift
        row[2] = absent if c.dense_rank is None else math.log2(1 + c.dense_rank)
        row[3] = c.bm25 / best_bm25 if best_bm25 > 0 else 0.0
        row[4] = c.bm25 / max(query.words, 1)
        row[5] = absent if c.lexical_rank is None else math.log2(1 + c.lexical_rank)
        row[6] = c.coverage
        row[7] = c.fused
        row[8] = strength[i]
        row[9] = sessions[episode_of(memory)] - c.fused
        row[10] = newest[i]
        row[11] = 1.0 if speaker is not None and _named(speaker.lower(), lowered) else 0.0
        row[12] = _names_shared(names, memory.content)
        row[13] = 1.0 if "?" in memory.content else 0.0
        row[14] = math.log1p(len(memory.content.split()))
        row[15] = math.log1p(query.words)
        row[16] = math.log1p(n)
    return out


_NAME = re.compile(r"\b[A-Z][\w'-]*[a-z][\w'-]*\b")
_NOT_NAMES = word_set(
    "what who whom whose which where when why how is are was were do does did has have had can "
    "could would should will the a an in on at of for to and or but i you he she we they it "
    "my your his her our their this that these those"
)


def query_names(text: str) -> list[str]:
    """The capitalized words of a query that are not its first word or a question word: the
    people, places and things it names, lower-cased, without a possessive."""
    found = []
    for match in _NAME.finditer(text):
        word = match.group(0).lower().removesuffix("'s")
        if match.start() == 0 or word in _NOT_NAMES:
            continue
        found.append(word)
    return list(dict.fromkeys(found))


def _named(name: str, lowered_query: str) -> bool:
    first = name.split()[0] if name.split() else ""
    return bool(first) and re.search(rf"\b{re.escape(first)}\b", lowered_query) is not None


def _names_shared(names: Sequence[str], content: str) -> float:
    if not names:
        return 0.0
    lowered = content.lower()
    held = sum(1 for name in names if re.search(rf"\b{re.escape(name)}\b", lowered))
    return held / len(names)


def relevance_map(
    ranker: Relevance, query: Query, candidates: Sequence[Candidate]
) -> Mapping[str, float]:
    """memory id → relevance, as ``ranker`` scores the candidates."""
    scores = ranker.score(query, candidates)
    return {c.memory.id: s for c, s in zip(candidates, scores, strict=True)}
