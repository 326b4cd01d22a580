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
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

import numpy as np
import numpy.typing as npt

from agentcore.domain.fact_text import terms
from agentcore.domain.models import Memory
from agentcore.domain.records import speaker_of
from agentcore.domain.updates.vocabulary import word_set

Matrix = npt.NDArray[np.float64]

FEATURES = (
    "dense",  # the cosine rescaled from the model's background (0) to 1, clipped
    "dense_lift",  # the same, not clipped (below the background it is negative)
    "dense_rank",  # log2(1 + rank) in the vector store's list (absent: one past its end)
    "dense_relative",  # the cosine over the best candidate's
    "lexical",  # BM25 for the whole query / the best candidate's
    "lexical_per_term",  # BM25 / the query's distinct words
    "lexical_rank",  # log2(1 + rank) in the lexical list (absent: one past its end)
    "coverage",  # the idf-weighted share of the query's words the document holds
    "own_words",  # the share of the query's content words its own text holds (not its context)
    "fused",  # the hand-set fusion (``fuse``), without its session blend
    "session_strength",  # the mean fused value of its session's best 3, / the best session's
    "session_support",  # the fused values of the other candidates of its session, summed
    "session_dense",  # the mean cosine of its session's best 3 candidates
    "newest",  # its creation among the candidates: 1 the newest, 0 the oldest
    "speaker_named",  # the query names who said it (``metadata.speaker``)
    "other_speaker_named",  # the query names another speaker of the candidates, not this one
    "names_shared",  # the share of the query's names its text holds
    "question",  # it asks something itself
    "time_said",  # it says when (a date, a month, a weekday, "yesterday", "last week", ...)
    "number_said",  # it holds a number
    "words",  # log(1 + its words)
    "query_words",  # log(1 + the query's distinct words)
    "candidates",  # log(1 + the candidates of this query)
    # what the query asks, by its first word (one of them is 1, or none)
    "asks_when",
    "asks_who",
    "asks_where",
    "asks_what",  # what, which
    "asks_how",
    "asks_why",
    "asks_yes_no",  # is, are, does, did, has, can, ...
    "asks_likely",  # would, likely, might, could: an inference rather than a fact
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
    fused_dense: float = 0.0  # the part of ``fused`` its cosine gave (the rest is BM25's)


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

    def explain(self, query: Query, candidates: Sequence[Candidate]) -> list[dict[str, float]]:
        """What each candidate's relevance was made of, by signal (the ranker's own units,
        docs/retrieval.md: Ranking)."""
        ...


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

    def explain(self, query: Query, candidates: Sequence[Candidate]) -> list[dict[str, float]]:
        """The three parts that sum to each relevance: the cosine's, BM25's and the session's."""
        weight = self.episode_weight if self.episode_weight > 0 else 0.0
        strength = (
            session_strength(candidates, self.episode_top) if weight else [0.0] * len(candidates)
        )
        scale = 1.0 + weight
        return [
            {
                "dense": c.fused_dense / scale,
                "lexical": (c.fused - c.fused_dense) / scale,
                "session": weight * s / scale,
            }
            for c, s in zip(candidates, strength, strict=True)
        ]


def episode_of(memory: Memory) -> Hashable:
    """The episode a memory belongs to: its session within its scope and layer."""
    if memory.scope.session_id is None:
        return ("memory", memory.id)
    return (memory.scope_key, memory.layer.value, memory.scope.session_id)


def session_strength(
    candidates: Sequence[Candidate], top: int = 3, episodes: Sequence[Hashable] | None = None
) -> list[float]:
    """Each candidate's session strength: the mean fused value of the session's best ``top``
    candidates, relative to the best session's (a candidate without a session is one of its
    own). ``episodes``: each candidate's ``episode_of``, when known."""
    keys = episodes if episodes is not None else [episode_of(c.memory) for c in candidates]
    means = _session_means(keys, [c.fused for c in candidates], top)
    best = max(means, default=0.0)
    return [m / best if best > 0 else 0.0 for m in means]


def features(
    query: Query, candidates: Sequence[Candidate], rows: Sequence[int] | None = None
) -> Matrix:
    """One row per candidate (or per index in ``rows``: what is said of the session and the
    others still reads every candidate), one column per name of ``FEATURES``."""
    n = len(candidates)
    picked = list(range(n)) if rows is None else list(rows)
    if not picked:
        return np.zeros((0, len(FEATURES)), dtype=np.float64)
    chosen = [candidates[i] for i in picked]
    absent = math.log2(2 + query.pool)
    best_bm25 = max(c.bm25 for c in candidates)
    best_cosine = max(c.cosine for c in candidates)
    episodes = [episode_of(c.memory) for c in candidates]
    sessions: dict[Hashable, float] = {}
    for key, c in zip(episodes, candidates, strict=True):
        sessions[key] = sessions.get(key, 0.0) + c.fused
    order = sorted(
        range(n), key=lambda i: (candidates[i].memory.created_at, candidates[i].memory.id)
    )
    newest = [0.0] * n
    for position, i in enumerate(order):
        newest[i] = position / (n - 1) if n > 1 else 1.0
    strength = session_strength(candidates, episodes=episodes)
    dense_means = _session_means(episodes, [c.cosine for c in candidates])
    names = tuple(query_names(query.text))
    lowered = query.text.lower()
    wanted = terms(query.text).words
    said_by = [_lowered(speaker_of(c.memory.metadata)) for c in candidates]
    named = {s for s in said_by if s is not None and _named(s, lowered)}
    facts = [_facts_of(c.memory.content) for c in chosen]
    columns: dict[str, Sequence[float]] = {
        "dense": [c.cosine for c in chosen],
        "dense_lift": [c.lift for c in chosen],
        "dense_rank": [
            absent if c.dense_rank is None else math.log2(1 + c.dense_rank) for c in chosen
        ],
        "dense_relative": [c.cosine / best_cosine if best_cosine > 0 else 0.0 for c in chosen],
        "lexical": [c.bm25 / best_bm25 if best_bm25 > 0 else 0.0 for c in chosen],
        "lexical_per_term": [c.bm25 / max(query.words, 1) for c in chosen],
        "lexical_rank": [
            absent if c.lexical_rank is None else math.log2(1 + c.lexical_rank) for c in chosen
        ],
        "coverage": [c.coverage for c in chosen],
        "own_words": [len(wanted & f.terms) / len(wanted) if wanted else 0.0 for f in facts],
        "fused": [c.fused for c in chosen],
        "session_strength": [strength[i] for i in picked],
        "session_support": [sessions[episodes[i]] - candidates[i].fused for i in picked],
        "session_dense": [dense_means[i] for i in picked],
        "newest": [newest[i] for i in picked],
        "speaker_named": [1.0 if said_by[i] in named else 0.0 for i in picked],
        "other_speaker_named": [1.0 if named - {said_by[i]} else 0.0 for i in picked],
        "names_shared": [_names_shared(names, c.memory.content) for c in chosen],
        "question": [f.question for f in facts],
        "time_said": [f.time for f in facts],
        "number_said": [f.number for f in facts],
        "words": [f.words for f in facts],
        "query_words": [math.log1p(query.words)] * len(picked),
        "candidates": [math.log1p(n)] * len(picked),
    }
    for name, asked in zip(_ASKED, _asked(lowered), strict=True):
        columns[f"asks_{name}"] = [asked] * len(picked)
    return np.array([columns[name] for name in FEATURES], dtype=np.float64).T


def _lowered(speaker: str | None) -> str | None:
    return None if speaker is None else speaker.lower()


def _session_means(
    episodes: Sequence[Hashable], values: Sequence[float], top: int = 3
) -> list[float]:
    """Each candidate's session's mean of its best ``top`` ``values`` (``episodes``: each
    candidate's ``episode_of``)."""
    members: dict[Hashable, list[float]] = {}
    for key, value in zip(episodes, values, strict=True):
        members.setdefault(key, []).append(value)
    means = {k: sum(sorted(v, reverse=True)[:top]) / min(len(v), top) for k, v in members.items()}
    return [means[key] for key in episodes]


_ASKED = ("when", "who", "where", "what", "how", "why", "yes_no", "likely")
_FIRST_WORD = {
    "when": "when",
    "who": "who",
    "whom": "who",
    "whose": "who",
    "where": "where",
    "what": "what",
    "which": "what",
    "how": "how",
    "why": "why",
    **dict.fromkeys(
        word_set("is are was were do does did has have had can will shall should"), "yes_no"
    ),
}
_LIKELY = re.compile(r"\b(?:would|likely|might|could|probably)\b")
_TIME = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|ago|recently|lately|since|"
    r"(?:last|next|this) (?:week|weekend|month|year|night|summer|winter|spring|fall|autumn|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"january|february|march|april|may|june|july|august|september|october|november|december|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|(?:19|20)\d\d)\b",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"\d")


def _asked(lowered_query: str) -> list[float]:
    """``asks_*``: the kind of question by its first word, and whether it asks for an
    inference."""
    words = re.findall(r"[a-z']+", lowered_query)
    kind = _FIRST_WORD.get(words[0]) if words else None
    return [1.0 if kind == name else 0.0 for name in _ASKED[:-1]] + [
        1.0 if _LIKELY.search(lowered_query) else 0.0
    ]


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


@dataclass(frozen=True, slots=True)
class _Facts:
    """What the features read of a memory's text alone (read once per text: ``_facts_of``)."""

    terms: frozenset[str]
    question: float
    time: float
    number: float
    words: float


@lru_cache(maxsize=32_768)
def _facts_of(text: str) -> _Facts:
    return _Facts(
        terms=terms(text).words,
        question=1.0 if "?" in text else 0.0,
        time=1.0 if _TIME.search(text) else 0.0,
        number=1.0 if _DIGIT.search(text) else 0.0,
        words=math.log1p(len(text.split())),
    )


@lru_cache(maxsize=4_096)
def _named(name: str, lowered_query: str) -> bool:
    first = name.split()[0] if name.split() else ""
    return bool(first) and re.search(rf"\b{re.escape(first)}\b", lowered_query) is not None


def _names_shared(names: tuple[str, ...], content: str) -> float:
    if not names:
        return 0.0
    return sum(1 for name in names if _holds(name, content)) / len(names)


@lru_cache(maxsize=65_536)
def _holds(name: str, content: str) -> bool:
    """Whether ``content`` holds ``name`` (lower-cased) as a whole word."""
    return re.search(rf"\b{re.escape(name)}\b", content.lower()) is not None
