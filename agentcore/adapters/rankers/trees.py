"""A tree ensemble evaluated with numpy: every tree complete to one depth (a shallower leaf is
repeated below itself), so a row's path is computed for all trees at once, level by level,
with no branching: at a node, the row goes right when its feature is above the threshold
(LightGBM's ``<=`` goes left)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]
_ABOVE_ALL = 1e300  # a threshold no feature reaches (JSON has no infinity)


@dataclass(frozen=True)
class TreeEnsemble:
    """``feature``/``threshold``/``values``: (trees, 2**depth - 1) in level order (node n's
    children are 2n+1 and 2n+2; ``values``: what the tree predicts for the rows that reach a
    node, its training mean); ``leaves``: (trees, 2**depth)."""

    depth: int
    feature: npt.NDArray[np.intp]
    threshold: Matrix
    leaves: Matrix
    values: Matrix

    @staticmethod
    def from_json(data: Mapping[str, Any], features: int) -> TreeEnsemble:
        depth = int(data["depth"])
        feature = np.asarray(data["feature"], dtype=np.intp)
        threshold = np.asarray(data["threshold"], dtype=np.float64)
        leaves = np.asarray(data["leaves"], dtype=np.float64)
        values = np.asarray(data.get("values", np.zeros(feature.shape)), dtype=np.float64)
        trees = len(feature)
        if (
            depth < 1
            or feature.shape != (trees, 2**depth - 1)
            or threshold.shape != feature.shape
            or values.shape != feature.shape
            or leaves.shape != (trees, 2**depth)
            or (trees and (feature.min() < 0 or feature.max() >= features))
        ):
            raise ValueError("the tree ensemble's arrays do not fit its depth and features")
        return TreeEnsemble(depth, feature, threshold, leaves, values)

    def predict(self, rows: Matrix) -> Matrix:
        """The ensemble's raw score of each row (the sum of its leaves)."""
        if len(rows) == 0:
            return np.zeros(0)
        trees = np.arange(len(self.feature))[:, None]
        index = np.arange(len(rows))[None, :]
        node = np.zeros((len(self.feature), len(rows)), dtype=np.intp)
        for _ in range(self.depth):
            value = rows[index, self.feature[trees, node]]
            node = 2 * node + 1 + (value > self.threshold[trees, node])
        scores: Matrix = self.leaves[trees, node - (2**self.depth - 1)].sum(axis=0)
        return scores

    def explain(self, rows: Matrix, features: int) -> tuple[float, Matrix]:
        """What each feature added to each row's score (Saabas: along the row's path in every
        tree, the change of the node's value at each split, credited to its feature): the
        ensemble's base score and a (rows, features) matrix; base + a row's sum = its score."""
        out = np.zeros((len(rows), features))
        trees = np.arange(len(self.feature))[:, None]
        index = np.arange(len(rows))[None, :]
        node = np.zeros((len(self.feature), len(rows)), dtype=np.intp)
        inner = 2**self.depth - 1
        for level in range(self.depth):
            feature = self.feature[trees, node]
            before = self.values[trees, node]
            node = 2 * node + 1 + (rows[index, feature] > self.threshold[trees, node])
            if level + 1 < self.depth:
                after = self.values[trees, node]
            else:
                after = self.leaves[trees, node - inner]
            np.add.at(out, (np.broadcast_to(index, node.shape), feature), after - before)
        return float(self.values[:, 0].sum()), out


def complete(
    tree: Mapping[str, Any], depth: int
) -> tuple[list[int], list[float], list[float], list[float]]:
    """A LightGBM tree (``Booster.dump_model``'s ``tree_structure``) as complete level-order
    arrays (feature, threshold, leaves, values) of ``depth``."""
    inner = 2**depth - 1
    feature = [0] * inner
    threshold = [_ABOVE_ALL] * inner  # a pad node: every row goes left
    values = [0.0] * inner
    leaves = [0.0] * (2**depth)

    def fill(node: Mapping[str, Any], at: int, level: int) -> None:
        if "leaf_value" in node:
            if level == depth:
                leaves[at - inner] = float(node["leaf_value"])
            else:  # the leaf stands for every node below it
                values[at] = float(node["leaf_value"])
                fill(node, 2 * at + 1, level + 1)
                fill(node, 2 * at + 2, level + 1)
            return
        if level == depth:
            raise ValueError(f"a tree deeper than {depth}")
        if node.get("decision_type", "<=") != "<=" or node.get("missing_type") not in (
            None,
            "None",
        ):
            raise ValueError("only numerical splits without missing values are supported")
        feature[at] = int(node["split_feature"])
        threshold[at] = float(node["threshold"])
        values[at] = float(node.get("internal_value", 0.0))
        fill(node["left_child"], 2 * at + 1, level + 1)
        fill(node["right_child"], 2 * at + 2, level + 1)

    fill(tree, 0, 0)
    return feature, threshold, leaves, values


def depth_of(tree: Mapping[str, Any]) -> int:
    if "leaf_value" in tree:
        return 0
    return 1 + max(depth_of(tree["left_child"]), depth_of(tree["right_child"]))


def ensemble_json(trees: Sequence[Mapping[str, Any]], depth: int) -> dict[str, Any]:
    """What ``TreeEnsemble.from_json`` reads, from LightGBM's dumped trees."""
    filled = [complete(tree, depth) for tree in trees]
    return {
        "depth": depth,
        "feature": [f for f, _, _, _ in filled],
        "threshold": [t for _, t, _, _ in filled],
        "leaves": [v for _, _, v, _ in filled],
        "values": [v for _, _, _, v in filled],
    }
