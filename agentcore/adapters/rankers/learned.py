"""The learned relevance (``services.relevance.Relevance``): the features of each candidate
(``services.relevance.features``), the tree ensemble's score, and that score mapped to a
probability that the candidate is what the query asks about (a logistic curve fitted with the
model, so thresholds and relevance shares keep a meaning)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

import numpy as np

from agentcore.adapters.rankers.trees import TreeEnsemble
from agentcore.domain.errors import ConfigurationError
from agentcore.services.relevance import FEATURES, Candidate, Query, features

MODEL_FILE = "relevance_model.json"


class LearnedRelevance:
    def __init__(self, data: Mapping[str, Any]) -> None:
        """``data``: a model as ``benchmarks/ranker`` writes it."""
        try:
            names = list(data["features"])
            unknown = [name for name in names if name not in FEATURES]
            if unknown:
                raise ValueError(f"features this service does not compute: {unknown}")
            self._columns = [FEATURES.index(name) for name in names]
            self._names = names
            self._trees = TreeEnsemble.from_json(data, len(names))
            self._slope, self._intercept = (float(v) for v in data["calibration"])
            self._version = str(data.get("version", "unversioned"))
            self.embedder = str(data["embedder"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(f"the ranking model cannot be read: {exc}") from exc
        self.trained_on = str(data.get("trained_on", ""))

    @property
    def name(self) -> str:
        return f"learned:{self._version}"

    def score(self, query: Query, candidates: Sequence[Candidate]) -> list[float]:
        if not candidates:
            return []
        rows = features(query, candidates)[:, self._columns]
        raw = self._trees.predict(rows) * self._slope + self._intercept
        return [_sigmoid(float(v)) for v in np.clip(raw, -50.0, 50.0)]

    def explain(self, query: Query, candidates: Sequence[Candidate]) -> list[dict[str, float]]:
        """Each feature's part of each candidate's log-odds (Saabas attribution over the trees,
        times the calibration's slope), the larger ones (at least 0.05); ``base``: the part
        every candidate starts from. ``base`` and the parts sum to the log-odds of the
        relevance (of those left out, each is below 0.05)."""
        if not candidates:
            return []
        rows = features(query, candidates)[:, self._columns]
        base, parts = self._trees.explain(rows, len(self._columns))
        start = base * self._slope + self._intercept
        out = []
        for row in parts * self._slope:
            signals = {
                self._names[j]: round(float(v), 4) for j, v in enumerate(row) if abs(v) >= 0.05
            }
            out.append({"base": round(start, 4), **signals})
        return out


def _sigmoid(value: float) -> float:
    return 1.0 / (1.0 + math.exp(-value))


def packaged_model() -> LearnedRelevance | None:
    """The model shipped in this package, or None when there is none."""
    path = resources.files(__package__ or "agentcore.adapters.rankers").joinpath(MODEL_FILE)
    if not path.is_file():
        return None
    return LearnedRelevance(json.loads(path.read_text(encoding="utf-8")))
