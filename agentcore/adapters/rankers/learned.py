"""The learned relevance (``services.relevance.Relevance``): the features of each candidate
(``services.relevance.features``), the tree ensemble's score, and that score mapped to the
probability that the candidate is what the query asks about (a logistic curve fitted with the
model).

The model orders; the fusion says how well the query is matched at all. A candidate's
relevance is ``level`` less its log-odds' distance below the query's best candidate's, over
``spread`` (at 0 below that): ``level`` is 1 when the query's best fused value (the hand-set
blend of calibrated cosine and BM25 coverage, ``services.candidates.fuse``) reaches
``reference``, what the fusion gives a right answer the model ranks first (the median over the
training questions), and proportionally less below it, so a query that matches nothing keeps
low relevances and a ``threshold`` still leaves it out; ``spread`` is fitted so that the
model's 10th candidate falls as far below its first as the fusion's does on the training
questions, the spread of similarity the score's other factors were weighed against. The
model's probabilities are not used as they are: fitted on conversations, they rate memories
unlike those (a few short facts with no session or speaker) all low though the model orders
them well, and they fall so steeply below the first few candidates that a handful of accesses
(the frequency factor) would reorder the rest (docs/decisions.md, Retrieval)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

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
            self._spread = float(data["spread"])
            self._reference = float(data["reference"])
            if not (self._spread > 0 and self._reference > 0):
                raise ValueError("the spread and the reference must be positive")
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
        level = min(1.0, max(c.fused for c in candidates) / self._reference)
        best = float(raw.max())
        return [level * max(0.0, 1.0 - (best - float(v)) / self._spread) for v in raw]

    def explain(self, query: Query, candidates: Sequence[Candidate]) -> list[dict[str, float]]:
        """Each feature's part of each candidate's log-odds of being what was asked (Saabas
        attribution over the trees, times the calibration's slope), the larger ones (at least
        0.05); ``base``: the part every candidate starts from. ``base`` and the parts sum to
        those log-odds (of those left out, each is below 0.05)."""
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


def packaged_model() -> LearnedRelevance | None:
    """The model shipped in this package, or None when there is none."""
    path = resources.files(__package__ or "agentcore.adapters.rankers").joinpath(MODEL_FILE)
    if not path.is_file():
        return None
    return LearnedRelevance(json.loads(path.read_text(encoding="utf-8")))
