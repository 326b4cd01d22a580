"""Pattern detection over error records (FR-4.2) and the error-correction signal (FR-4.4).

Pure functions over ``ErrorRecord`` sequences; ``threshold`` is
ERROR_PATTERN_DETECTION_THRESHOLD.

- **frequency**: one error type occurs at least ``threshold`` times.
- **sequence**: errors of type A are followed by errors of type B (the next error of the same
  task, runs of one type counted once) at least ``threshold`` times, and B follows at least
  half of A's runs: a successor that follows A only now and then is no pattern.
- **context**: errors whose description and context are alike. Each error becomes a set of
  tokens (stemmed description words, the words of its context values, and one ``key=value``
  token per context leaf); two errors' similarity is their weighted Jaccard, each token
  weighted by a smoothed inverse document frequency over the errors analysed (a token every
  error shares counts least). Average-link clustering merges while the mean similarity stays
  at least ``CONTEXT_SIMILARITY``; a cluster of at least ``max(2, threshold)`` errors is a
  pattern.

Severity of a pattern: the mean severity of its errors, each weighted by recency (half-life
``SEVERITY_HALF_LIFE`` before the pattern's newest error), times a repetition factor that grows
from 0.75 at ``threshold`` occurrences to 1 at twice the threshold.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from datetime import timedelta
from functools import lru_cache
from itertools import pairwise
from typing import Any

import numpy as np
import numpy.typing as npt

from agentcore.domain.error_records import (
    ADVICE,
    ERROR_KIND,
    RECOVERY_KIND,
    ErrorPattern,
    ErrorRecord,
    ErrorType,
    PatternType,
)
from agentcore.domain.models import Memory

# At the gap between unrelated and related errors: on the generated streams of
# tests/unit/test_error_patterns.py unrelated pairs stay below 0.14 (99.9th percentile) and
# pairs from one planted context above 0.25 (1st percentile).
CONTEXT_SIMILARITY = 0.22
SIMILAR_CONTEXT = 0.5  # share of an error's words a memory must cover to be "about" it
MIN_SEQUENCE_SHARE = 0.5
SEVERITY_HALF_LIFE = timedelta(hours=24)
RECOVERY_SIGNAL = 1.0
ERROR_MEMORY_SIGNAL = 0.6
SIMILAR_CONTEXT_SIGNAL = 0.6
SAME_STAGE_SIGNAL = 0.3
_VALUE_CHARS = 60  # of a context value in its key=value token
_TEXT_CHARS = 4_000  # of a text that is tokenized

_WORD = re.compile(r"[a-z][a-z0-9_]*(?:[.-][a-z0-9_]+)*")
_SUFFIXES = ("ing", "ed", "es", "s")
_STOP_TEXT = (
    "a an and are as at be been but by can could did do does for from had has have he her his "
    "i if in into is it its me my no not of on or our she so than that the their them then "
    "there these they this those to was we were what when where which while who why will with "
    "would you your"
)
STOPWORDS = frozenset(_STOP_TEXT.split())


@lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


@lru_cache(maxsize=16_384)  # memories come back search after search (their error signal)
def text_tokens(text: str) -> frozenset[str]:
    """Stemmed, lower-cased words of ``text`` without stop words and numbers."""
    words = set(_WORD.findall(text[:_TEXT_CHARS].lower())) - STOPWORDS
    return frozenset(_stem(w) for w in words if len(w) > 1)


def _leaves(value: Any, path: str) -> list[tuple[str, Any]]:
    if isinstance(value, Mapping):
        return [leaf for k, v in value.items() for leaf in _leaves(v, f"{path}.{k}" if path else k)]
    if isinstance(value, list | tuple):
        return [leaf for item in value for leaf in _leaves(item, path)]
    return [(path, value)]


def error_words(record: ErrorRecord) -> set[str]:
    """The words of an error's description and context values (to find it in free text)."""
    words = set(text_tokens(record.description))
    for _, value in _leaves(record.context, ""):
        if isinstance(value, str):
            words |= text_tokens(value)
    return words


def error_tokens(record: ErrorRecord) -> set[str]:
    """``error_words`` plus one ``key=value`` token per context leaf (its exact setting)."""
    tokens = error_words(record)
    for path, value in _leaves(record.context, ""):
        if value is None or path == "":
            continue
        shown = " ".join(str(value).lower().split())[:_VALUE_CHARS]
        tokens.add(f"{path.lower()}={shown}")
    return tokens


def similarity_matrix(token_sets: Sequence[set[str]]) -> npt.NDArray[np.float64]:
    """Pairwise weighted Jaccard; token weight ``1 + ln((n + 1) / (df + 1))``."""
    n = len(token_sets)
    postings: defaultdict[str, list[int]] = defaultdict(list)
    for row, tokens in enumerate(token_sets):
        for token in tokens:
            postings[token].append(row)
    mass = np.zeros(n)
    shared = np.zeros((n, n))
    for rows in postings.values():
        weight = 1.0 + math.log((n + 1) / (len(rows) + 1))
        mass[rows] += weight
        if len(rows) > 1:  # only tokens that two errors have link them: a sparse sum
            shared[np.ix_(rows, rows)] += weight
    union = mass[:, None] + mass[None, :] - shared
    with np.errstate(divide="ignore", invalid="ignore"):
        sim = np.where(union > 0, shared / union, 0.0)
    np.fill_diagonal(sim, np.where(mass > 0, 1.0, 0.0))
    return np.asarray(sim, dtype=np.float64)


def average_link(sim: npt.NDArray[np.float64], min_similarity: float) -> list[list[int]]:
    """Clusters of row indices: merge the two closest clusters while their mean pairwise
    similarity is at least ``min_similarity``."""
    n = len(sim)
    between = sim.astype(np.float64, copy=True)
    np.fill_diagonal(between, -np.inf)
    sizes = np.ones(n)
    members = [[i] for i in range(n)]
    while n > 1:
        i, j = divmod(int(np.argmax(between)), n)
        if between[i, j] < min_similarity:
            break
        merged = (between[i] * sizes[i] + between[j] * sizes[j]) / (sizes[i] + sizes[j])
        between[i, :] = merged
        between[:, i] = merged
        between[i, i] = -np.inf
        between[j, :] = -np.inf
        between[:, j] = -np.inf
        sizes[i] += sizes[j]
        members[i] += members[j]
        members[j] = []
    return [sorted(m) for m in members if m]


def pattern_severity(members: Sequence[ErrorRecord], threshold: int) -> float:
    """See the module docstring; 0 for no members."""
    if not members:
        return 0.0
    newest = max(r.created_at for r in members)
    half_life = SEVERITY_HALF_LIFE.total_seconds()
    weights = [math.pow(0.5, (newest - r.created_at).total_seconds() / half_life) for r in members]
    mean = sum(w * r.severity for w, r in zip(weights, members, strict=True)) / sum(weights)
    repetition = 0.5 + 0.5 * min(1.0, len(members) / (2 * max(threshold, 1)))
    return round(min(max(mean * repetition, 0.0), 1.0), 4)


def _chronological(records: Sequence[ErrorRecord]) -> list[ErrorRecord]:
    return sorted(records, key=lambda r: (r.created_at, r.id))


def _newest_first(members: Sequence[ErrorRecord]) -> tuple[str, ...]:
    ordered = sorted(members, key=lambda r: (r.created_at, r.id), reverse=True)
    return tuple(dict.fromkeys(r.id for r in ordered))


def _types_by_count(members: Sequence[ErrorRecord]) -> tuple[ErrorType, ...]:
    counts = Counter(r.error_type for r in members)
    return tuple(sorted(counts, key=lambda t: (-counts[t], t.value)))


def frequency_patterns(records: Sequence[ErrorRecord], threshold: int) -> list[ErrorPattern]:
    by_type: dict[ErrorType, list[ErrorRecord]] = defaultdict(list)
    for record in records:
        by_type[record.error_type].append(record)
    patterns = []
    for error_type, members in by_type.items():
        if len(members) < threshold:
            continue
        patterns.append(
            ErrorPattern(
                pattern_type=PatternType.FREQUENCY,
                error_types=(error_type,),
                occurrences=len(members),
                severity=pattern_severity(members, threshold),
                description=f"{error_type.value} errors occurred {len(members)} times",
                recommendation=f"Recurring {error_type.value} errors: {ADVICE[error_type]}.",
                error_ids=_newest_first(members),
            )
        )
    return patterns


def _runs(records: Sequence[ErrorRecord]) -> dict[str, list[ErrorRecord]]:
    """Per task, the chronological errors with runs of one type reduced to their last error."""
    by_task: dict[str, list[ErrorRecord]] = defaultdict(list)
    for record in _chronological(records):
        runs = by_task[record.task_id]
        if runs and runs[-1].error_type is record.error_type:
            runs[-1] = record
        else:
            runs.append(record)
    return by_task


def sequence_patterns(records: Sequence[ErrorRecord], threshold: int) -> list[ErrorPattern]:
    pairs: dict[tuple[ErrorType, ErrorType], list[tuple[ErrorRecord, ErrorRecord]]]
    pairs = defaultdict(list)
    followed: Counter[ErrorType] = Counter()  # runs of a type that have a successor
    for runs in _runs(records).values():
        for first, second in pairwise(runs):
            pairs[(first.error_type, second.error_type)].append((first, second))
            followed[first.error_type] += 1
    patterns = []
    for (a, b), found in pairs.items():
        if len(found) < threshold or len(found) < MIN_SEQUENCE_SHARE * followed[a]:
            continue
        members = [r for pair in found for r in pair]
        patterns.append(
            ErrorPattern(
                pattern_type=PatternType.SEQUENCE,
                error_types=(a, b),
                occurrences=len(found),
                severity=pattern_severity(members, threshold),
                description=f"{a.value} errors were followed by {b.value} errors "
                f"{len(found)} times (of {followed[a]})",
                recommendation=f"After a {a.value} error, expect a {b.value} error next: "
                f"before continuing, {ADVICE[b]}.",
                error_ids=_newest_first(members),
            )
        )
    return patterns


def _shared_context(members: Sequence[ErrorRecord]) -> list[str]:
    """What most members have in common: context settings first, else description words."""
    half = len(members) / 2
    settings: Counter[str] = Counter()
    words: Counter[str] = Counter()
    for record in members:
        tokens = error_tokens(record)
        settings.update(t for t in tokens if "=" in t)
        words.update(t for t in tokens if "=" not in t)
    common = [t for t, n in settings.most_common() if n >= half][:4]
    return common or [t for t, n in words.most_common() if n >= half][:5]


def context_patterns(records: Sequence[ErrorRecord], threshold: int) -> list[ErrorPattern]:
    ordered = _chronological(records)
    minimum = max(2, threshold)
    if len(ordered) < minimum:
        return []
    sim = similarity_matrix([error_tokens(r) for r in ordered])
    patterns = []
    for cluster in average_link(sim, CONTEXT_SIMILARITY):
        if len(cluster) < minimum:
            continue
        members = [ordered[i] for i in cluster]
        types = _types_by_count(members)
        shared = ", ".join(_shared_context(members)) or "similar descriptions"
        patterns.append(
            ErrorPattern(
                pattern_type=PatternType.CONTEXT,
                error_types=types,
                occurrences=len(members),
                severity=pattern_severity(members, threshold),
                description=f"{len(members)} errors occurred in a similar context ({shared})",
                recommendation=f"Errors recur in this context ({shared}): when it appears "
                f"again, {ADVICE[types[0]]}.",
                error_ids=_newest_first(members),
            )
        )
    return patterns


def detect_patterns(records: Sequence[ErrorRecord], threshold: int) -> list[ErrorPattern]:
    """Every frequency, sequence and context pattern; most severe first."""
    if threshold < 1:
        raise ValueError("threshold must be at least 1")
    patterns = [
        *frequency_patterns(records, threshold),
        *sequence_patterns(records, threshold),
        *context_patterns(records, threshold),
    ]
    patterns.sort(key=lambda p: (-p.severity, -p.occurrences, p.pattern_type.value))
    return patterns


def containment(needle: AbstractSet[str], haystack: AbstractSet[str]) -> float:
    """The share of ``needle``'s tokens found in ``haystack`` (0 for an empty needle)."""
    return len(needle & haystack) / len(needle) if needle else 0.0


def correction_signals(
    task_id: str, recent: Sequence[ErrorRecord], memories: Sequence[Memory]
) -> dict[str, float]:
    """The error-correction factor (0-1) of each memory for a search made for ``task_id``,
    given the task's recent errors, newest first.

    - 1.0: a recovery memory (``metadata.kind == "recovery"``) of an error of this task, or of
      an error elsewhere whose words cover at least ``SIMILAR_CONTEXT`` of the words of one of
      the task's recent errors (error-prevention knowledge for a context seen again);
    - else the strongest link to a recent error ``e``, times ``0.5 ** (rank(e) / 5)`` (the
      newest error has rank 0): 0.6 for ``e``'s own error memory, 0.6 × coverage for a memory
      whose words cover at least ``SIMILAR_CONTEXT`` of ``e``'s words, 0.3 for a memory of
      ``e``'s stage;
    - 0 otherwise.
    """
    words = [error_words(e) for e in recent]
    signals: dict[str, float] = {}
    for memory in memories:
        kind = memory.metadata.get("kind")
        tokens = text_tokens(memory.content)
        coverage = [containment(w, tokens) for w in words]
        if kind == RECOVERY_KIND and (
            memory.metadata.get("task_id") == task_id or any(c >= SIMILAR_CONTEXT for c in coverage)
        ):
            signals[memory.id] = RECOVERY_SIGNAL
            continue
        best = 0.0
        for rank, (error, covered) in enumerate(zip(recent, coverage, strict=True)):
            weight = math.pow(0.5, rank / 5)
            if kind == ERROR_KIND and memory.metadata.get("error_id") == error.id:
                best = max(best, ERROR_MEMORY_SIGNAL * weight)
            if covered >= SIMILAR_CONTEXT:
                best = max(best, SIMILAR_CONTEXT_SIGNAL * covered * weight)
            if memory.stage_id is not None and memory.stage_id == error.stage_id:
                best = max(best, SAME_STAGE_SIGNAL * weight)
        signals[memory.id] = round(best, 4)
    return signals
