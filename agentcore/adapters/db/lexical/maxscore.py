"""The best documents of a stored scope by BM25, exactly, without walking every posting of the
query's frequent stems (MaxScore, term at a time).

Each query stem can add at most ``bound`` to a document's score (its idf times its largest
impact: ``Postings.impact_bound``). Stems are taken in order of their bound, largest (usually
rarest) first, and each one's postings are added to the documents' partial scores (a dense
array over the scope's slots). After each, the few documents of best partial score are scored
in full (the stems left looked up in their sorted postings): the ``limit``-th best of those is
a score the ``limit``-th best document reaches at least (the threshold). Once the bounds of
the stems left add up to less than it, no document holding only those stems can enter the
best ``limit``: only the documents whose partial score plus those bounds reaches the
threshold are completed. The result is the exhaustive BM25's, while a question's frequent
stems ("john", "time") are usually only looked up for a few hundred documents.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from agentcore.adapters.db.lexical.coverage import K1, B
from agentcore.adapters.db.lexical.postings import Postings
from agentcore.adapters.db.lexical.scope import Query

Slots = npt.NDArray[np.signedinteger[Any]]  # slots of a scope's stored documents
Keep = Callable[[Slots], npt.NDArray[np.bool_]]


class MaxScore:
    """Searches of one ``Postings``, reusing an array of partial scores over its slots
    (cleared after each search). One search at a time."""

    def __init__(self, base: Postings) -> None:
        self._base = base
        self._scores: npt.NDArray[np.float64] | None = None

    def best(self, query: Query, limit: int, keep: Keep) -> list[tuple[float, int]]:
        """The best ``limit`` (BM25 > 0, slot) of the documents ``keep`` keeps, in no order."""
        base = self._base
        terms = [(t, w) for stem, w in query.bm25_idf.items() if (t := base.term(stem)) >= 0]
        if not terms or limit <= 0:
            return []
        if self._scores is None:
            self._scores = np.zeros(base.documents)
        scores = self._scores
        average = query.average_length
        bounds = [w * base.impact_bound(t, average) for t, w in terms]
        order = sorted(range(len(terms)), key=lambda i: -bounds[i])
        added: list[Slots] = []  # postings added to ``scores``: cleared at the end
        top = np.zeros(0, dtype=np.int32)  # the best partial scores so far (``_TOP`` of them)
        threshold = 0.0
        try:
            for done, i in enumerate(order, start=1):
                term, weight = terms[i]
                slots, tfs = base.postings(term)
                scores[slots] += _contributions(base, slots, tfs, weight, average)
                added.append(slots)
                left = [terms[j] for j in order[done:]]
                rest = sum(bounds[j] for j in order[done:])  # (0 exactly when none is left)
                top = _best_partial(scores, top, slots, _TOP * limit)
                found = _kth_full(base, scores, top, keep, left, limit, average)
                threshold = max(threshold, found)
                if rest < threshold:
                    break
            # Only a document touched, whose partial score plus what is left reaches the
            # threshold, can be among the best.
            candidates = np.flatnonzero(scores >= max(threshold - rest, 1e-300))
            candidates = candidates[keep(candidates)]
            # A stem left is added to every document when its postings are few beside the
            # candidates, else looked up for each candidate.
            dense = [(t, w) for t, w in left if base.holding(t) < _DENSE * len(candidates)]
            for term, weight in dense:
                slots, tfs = base.postings(term)
                scores[slots] += _contributions(base, slots, tfs, weight, average)
                added.append(slots)
            full = scores[candidates]
            for term, weight in left:
                if (term, weight) not in dense:
                    full += _looked_up(base, candidates, term, weight, average)
        finally:
            for slots in added:
                scores[slots] = 0.0
        if len(full) > limit:
            best = np.argpartition(-full, limit - 1)[:limit]
            candidates, full = candidates[best], full[best]
        return [(float(s), int(slot)) for s, slot in zip(full, candidates, strict=True) if s > 0]


_TOP = 2  # documents whose full score is found after each stem, per result wanted
_DENSE = 1  # a stem left with fewer postings than candidates (times this) is added to all


def _best_partial(scores: npt.NDArray[np.float64], top: Slots, slots: Slots, size: int) -> Slots:
    """The ``size`` documents of best partial score, after the stem of ``slots`` was added:
    among the previous best (scores only grew) and the documents of ``slots``."""
    if len(top):
        at = np.minimum(np.searchsorted(slots, top), len(slots) - 1)
        top = top[slots[at] != top]  # those of ``slots`` are in it already
    pool = np.concatenate([top, slots])
    if len(pool) <= size:
        return pool
    return pool[np.argpartition(-scores[pool], size - 1)[:size]]


def _kth_full(
    base: Postings,
    scores: npt.NDArray[np.float64],
    top: Slots,
    keep: Keep,
    left: list[tuple[int, float]],
    limit: int,
    average: float,
) -> float:
    """The ``limit``-th best full score of the kept documents of ``top`` (0 if fewer): a
    score the ``limit``-th best document of all reaches at least."""
    kept = top[keep(top)]
    if len(kept) < limit:
        return 0.0
    full = scores[kept]
    for term, weight in left:
        full = full + _looked_up(base, kept, term, weight, average)
    return float(np.partition(full, len(full) - limit)[len(full) - limit])


def _contributions(
    base: Postings, slots: Slots, tfs: npt.NDArray[np.float32], weight: float, average: float
) -> npt.NDArray[np.float32]:
    return _impacts(tfs, base.lengths[slots], weight, average)


def _looked_up(
    base: Postings, slots: Slots, term: int, weight: float, average: float
) -> npt.NDArray[np.float32]:
    """What ``term`` adds to the documents of ``slots`` (found in its sorted postings)."""
    held, tfs = base.postings(term)
    if not len(held) or not len(slots):
        return np.zeros(len(slots), dtype=np.float32)
    at = np.minimum(np.searchsorted(held, slots), len(held) - 1)
    found = held[at] == slots
    tf = np.where(found, tfs[at], np.float32(0))
    return _impacts(tf, base.lengths[slots], weight, average)


def _impacts(
    tf: npt.NDArray[np.float32], lengths: npt.NDArray[np.float32], weight: float, average: float
) -> npt.NDArray[np.float32]:
    """BM25's term part, in float32 (half the memory traffic of float64; the bounds carry a
    margin above float32's rounding): weight·tf·(k1+1)/(tf + k1·(1-b+b·length/average))."""
    norm = np.float32(K1 * (1 - B)) + np.float32(K1 * B / average) * lengths
    impacts = (np.float32(weight * (K1 + 1)) * tf) / (tf + norm)
    return impacts.astype(np.float32, copy=False)
