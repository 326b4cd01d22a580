"""Payload conditions in qdrant-edge's terms (``payload_filter.PayloadConditions``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import qdrant_edge as qe

EdgeCondition = qe.FieldCondition | qe.IsEmptyCondition | qe.Filter


class EdgeConditions:
    def keyword(self, key: str, values: Sequence[str]) -> EdgeCondition:
        if len(values) == 1:
            return qe.FieldCondition(key, match=qe.MatchValue(values[0]))
        return qe.FieldCondition(key, match=qe.MatchAny(list(values)))

    def flag(self, key: str, value: bool) -> EdgeCondition:
        # The binding turns a Python bool into the integer 1/0 (bool subclasses int), which
        # never matches a boolean payload; numpy.bool_ reaches the engine as a real bool.
        match = qe.MatchValue(np.bool_(value))  # type: ignore[arg-type]  # stub omits np.bool_
        return qe.FieldCondition(key, match=match)

    def range(
        self,
        key: str,
        *,
        gt: float | None = None,
        gte: float | None = None,
        lt: float | None = None,
        lte: float | None = None,
    ) -> EdgeCondition:
        return qe.FieldCondition(key, range=qe.RangeFloat(gt=gt, gte=gte, lt=lt, lte=lte))

    def empty(self, key: str) -> EdgeCondition:
        return qe.IsEmptyCondition(key)

    def all(self, parts: list[EdgeCondition]) -> EdgeCondition:
        return qe.Filter(must=list(parts))

    def any(self, parts: list[EdgeCondition]) -> EdgeCondition:
        return qe.Filter(should=list(parts))

    def none(self, parts: list[EdgeCondition]) -> EdgeCondition:
        return qe.Filter(must_not=list(parts))


EDGE_CONDITIONS = EdgeConditions()
