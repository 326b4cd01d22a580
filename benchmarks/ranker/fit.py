"""Fit a LambdaRank model on the features of some conversations; measure evidence recall on
others; write the model the service loads."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from agentcore.adapters.rankers.trees import depth_of, ensemble_json
from agentcore.services.relevance import FEATURES

from .dataset import CATEGORIES, Features

KS = (1, 5, 10)
MODEL = (
    Path(__file__).resolve().parents[2]
    / "agentcore"
    / "adapters"
    / "rankers"
    / "relevance_model.json"
)
# Features on which more can only help: the model may not learn that a closer match is worse.
INCREASING = ("dense", "dense_lift", "lexical", "lexical_per_term", "coverage", "fused")
DECREASING = ("dense_rank", "lexical_rank")


@dataclass(frozen=True)
class Params:
    leaves: int = 15
    depth: int = 4  # the service evaluates every tree to this depth
    rounds: int = 200
    learning_rate: float = 0.05
    min_data_in_leaf: int = 50
    monotone: bool = True
    seed: int = 7


def combined(parts: Sequence[Features]) -> Features:
    return Features(
        np.vstack([p.x for p in parts]),
        np.concatenate([p.label for p in parts]),
        np.concatenate([p.group for p in parts]),
        np.concatenate([p.category for p in parts]),
        np.concatenate([p.conversation + 1000 * n for n, p in enumerate(parts)]).astype(np.int16),
        np.concatenate([p.evidence for p in parts]),
        parts[0].embedder,
    )


def subset(data: Features, questions: npt.NDArray[np.bool_]) -> Features:
    """The rows of the chosen questions."""
    starts = np.concatenate([[0], np.cumsum(data.group)[:-1]])
    rows = np.concatenate(
        [
            np.arange(s, s + g)
            for s, g, keep in zip(starts, data.group, questions, strict=True)
            if keep
        ]
    )
    return Features(
        data.x[rows],
        data.label[rows],
        data.group[questions],
        data.category[questions],
        data.conversation[questions],
        data.evidence[questions],
        data.embedder,
    )


def train(data: Features, params: Params, columns: Sequence[str] = FEATURES) -> Any:
    import lightgbm as lgb

    use = [FEATURES.index(c) for c in columns]
    constraints = [1 if c in INCREASING else -1 if c in DECREASING else 0 for c in columns]
    dataset = lgb.Dataset(data.x[:, use], data.label, group=data.group, feature_name=list(columns))
    config = {
        "objective": "lambdarank",
        "metric": "ndcg",
        "ndcg_eval_at": [10],
        "lambdarank_truncation_level": 20,
        "num_leaves": params.leaves,
        "max_depth": params.depth,
        "learning_rate": params.learning_rate,
        "min_data_in_leaf": params.min_data_in_leaf,
        "feature_fraction": 0.9,
        "bagging_fraction": 0.8,
        "bagging_freq": 1,
        "seed": params.seed,
        "num_threads": 2,
        "verbose": -1,
        "deterministic": True,
        "force_row_wise": True,
    }
    if params.monotone:
        config["monotone_constraints"] = constraints
    return lgb.train(config, dataset, num_boost_round=params.rounds)


def recall(data: Features, scores: npt.NDArray[np.float64]) -> dict[str, Any]:
    """Evidence recall@k overall and per category, ranking each question's candidates by
    ``scores`` (evidence missing from the candidates counts as missed)."""
    rows: dict[int, list[dict[int, float]]] = {c: [] for c in CATEGORIES}
    start = 0
    for size, cat, wanted in zip(data.group, data.category, data.evidence, strict=True):
        labels = data.label[start : start + size]
        order = np.argsort(-scores[start : start + size], kind="stable")
        found = labels[order]
        rows[int(cat)].append({k: float(found[:k].sum()) / float(wanted) for k in KS})
        start += size
    every = [r for group in rows.values() for r in group]
    out: dict[str, Any] = {f"R@{k}": round(statistics.fmean(r[k] for r in every), 3) for k in KS}
    out["questions"] = len(every)
    out["R@10 by category"] = {
        CATEGORIES[c]: round(statistics.fmean(r[10] for r in group), 3)
        for c, group in rows.items()
        if group
    }
    return out


def calibration(
    scores: npt.NDArray[np.float64], labels: npt.NDArray[np.int8]
) -> tuple[float, float]:
    """Platt scaling: the slope and intercept of the logistic curve that maps a raw score to
    the probability that the candidate is evidence, fitted by Newton's method."""
    a, b = 1.0, 0.0
    y = labels.astype(np.float64)
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(a * scores + b)))
        w = np.maximum(p * (1 - p), 1e-9)
        grad = np.array([np.sum((p - y) * scores), np.sum(p - y)])
        hess = np.array(
            [[np.sum(w * scores * scores), np.sum(w * scores)], [np.sum(w * scores), np.sum(w)]]
        )
        step = np.linalg.solve(hess + 1e-9 * np.eye(2), grad)
        a, b = a - step[0], b - step[1]
        if np.abs(step).max() < 1e-9:
            break
    return float(a), float(b)


def spread(data: Features, raw: npt.NDArray[np.float64], scale: tuple[float, float]) -> float:
    """The log-odds distance the service maps to the fusion's drop: the median distance from
    a question's first to its 10th candidate by the model, over the median share of its
    first fused value the fusion's 10th candidate falls below it."""
    odds = raw * scale[0] + scale[1]
    fused = data.x[:, FEATURES.index("fused")]
    below, drop = [], []
    start = 0
    for size in data.group:
        if size >= 10:
            by_model = np.sort(odds[start : start + size])[::-1]
            by_fusion = np.sort(fused[start : start + size])[::-1]
            below.append(by_model[0] - by_model[9])
            if by_fusion[0] > 0:
                drop.append(1.0 - by_fusion[9] / by_fusion[0])
        start += size
    return round(float(np.median(below) / np.median(drop)), 4)


def reference(data: Features, raw: npt.NDArray[np.float64]) -> float:
    """The median fused value of the model's first candidate, over the questions where it is
    evidence: what the fusion gives a right answer the model ranks first."""
    fused = data.x[:, FEATURES.index("fused")]
    first = []
    start = 0
    for size in data.group:
        top = start + int(np.argmax(raw[start : start + size]))
        if data.label[top]:
            first.append(fused[top])
        start += size
    return round(float(np.median(first)), 4)


def export(
    model: Any, columns: Sequence[str], scale: tuple[float, float], note: dict[str, Any]
) -> dict[str, Any]:
    """The model as the service reads it (``agentcore.adapters.rankers``)."""
    trees = [info["tree_structure"] for info in model.dump_model()["tree_info"]]
    depth = max(1, max(depth_of(tree) for tree in trees))
    return {
        "format": 1,
        "features": list(columns),
        "calibration": list(scale),
        **note,
        **ensemble_json(trees, depth),
    }


def write(path: Path, exported: dict[str, Any]) -> None:
    path.write_text(json.dumps(exported, separators=(",", ":")) + "\n", encoding="utf-8")
