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
from agentcore.services.relevance import FEATURES, Candidate, FusedRelevance, Query, features

MODEL_FILE = "relevance_model.json"
# The fusion's best candidates the model ranks (a cascade: the fusion chooses, the model
# orders). On LoCoMo, with 60 candidates a side (~100 in all), the model ranking only the best
# 30 finds as much as ranking all of them (R@10 0.790 against 0.787), for a third of the work.
RERANKED = 30
_FUSION = FusedRelevance()
_LAST = 0.01  # the relevance of the fusion's best candidate beyond those the model ranked, at
# most, when the model put them all at 0


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
        """The fusion's best ``RERANKED`` candidates ranked by the model; the others after
        them, in the fusion's order."""
        if not candidates:
            return []
        fused = _FUSION.score(query, candidates)
        order = _best_first(fused)
        chosen = order[:RERANKED]
        rows = features(query, candidates, chosen)[:, self._columns]
        raw = self._trees.predict(rows) * self._slope + self._intercept
        level = min(1.0, max(c.fused for c in candidates) / self._reference)
        best = float(raw.max())
        out = [0.0] * len(candidates)
        for i, value in zip(chosen, raw, strict=True):
            out[i] = level * max(0.0, 1.0 - (best - float(value)) / self._spread)
        if len(order) > RERANKED:
            below = min(out[i] for i in chosen) or _LAST
            last = fused[chosen[-1]] or 1.0
            for i in order[RERANKED:]:
                out[i] = below * fused[i] / last
        return out

    def explain(self, query: Query, candidates: Sequence[Candidate]) -> list[dict[str, float]]:
        """Each feature's part of each candidate's log-odds of being what was asked (Saabas
        attribution over the trees, times the calibration's slope), the larger ones (at least
        0.05); ``base``: the part every candidate starts from. ``base`` and the parts sum to
        those log-odds (of those left out, each is below 0.05). A candidate the model did not
        rank (beyond the fusion's best ``RERANKED``) is explained by the fusion's parts."""
        if not candidates:
            return []
        out = _FUSION.explain(query, candidates)
        chosen = _best_first(_FUSION.score(query, candidates))[:RERANKED]
        rows = features(query, candidates, chosen)[:, self._columns]
        base, parts = self._trees.explain(rows, len(self._columns))
        start = base * self._slope + self._intercept
        for i, row in zip(chosen, parts * self._slope, strict=True):
            signals = {
                self._names[j]: round(float(v), 4) for j, v in enumerate(row) if abs(v) >= 0.05
            }
            out[i] = {"base": round(start, 4), **signals}
        return out


def _best_first(values: Sequence[float]) -> list[int]:
    return sorted(range(len(values)), key=lambda i: -values[i])


def packaged_model() -> LearnedRelevance | None:
    """The model shipped in this package, or None when there is none."""
    path = resources.files(__package__ or "agentcore.adapters.rankers").joinpath(MODEL_FILE)
    if not path.is_file():
        return None
    return LearnedRelevance(json.loads(path.read_text(encoding="utf-8")))
