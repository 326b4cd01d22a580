"""The numpy evaluation of a tree ensemble equals LightGBM's own prediction, for trees of
every shape the export meets (shallower leaves, one-leaf trees)."""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest

from agentcore.adapters.rankers.trees import TreeEnsemble, depth_of, ensemble_json


def _model(depth: int, leaves: int, rounds: int) -> tuple[lgb.Booster, np.ndarray]:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(600, 5))
    y = (x[:, 0] + 0.5 * x[:, 1] * x[:, 2] + rng.normal(scale=0.3, size=600) > 0).astype(int)
    params = {
        "objective": "binary",
        "num_leaves": leaves,
        "max_depth": depth,
        "min_data_in_leaf": 5,
        "verbose": -1,
        "seed": 1,
        "num_threads": 1,
    }
    return lgb.train(params, lgb.Dataset(x, y), num_boost_round=rounds), x


@pytest.mark.parametrize(("depth", "leaves"), [(1, 2), (3, 5), (4, 15)])
def test_the_numpy_ensemble_predicts_what_lightgbm_does(depth: int, leaves: int) -> None:
    model, x = _model(depth, leaves, 40)
    trees = [info["tree_structure"] for info in model.dump_model()["tree_info"]]
    deepest = max(depth_of(tree) for tree in trees)
    assert deepest <= depth
    ensemble = TreeEnsemble.from_json(ensemble_json(trees, max(deepest, 1)), 5)
    expected = model.predict(x, raw_score=True)
    np.testing.assert_allclose(ensemble.predict(x), expected, rtol=1e-9, atol=1e-9)
    probe = np.random.default_rng(9).normal(size=(50, 5)) * 3  # beyond the training range
    np.testing.assert_allclose(
        ensemble.predict(probe), model.predict(probe, raw_score=True), rtol=1e-9, atol=1e-9
    )
    base, parts = ensemble.explain(x[:20], 5)
    np.testing.assert_allclose(base + parts.sum(axis=1), expected[:20], rtol=1e-9, atol=1e-9)
    # LightGBM's own attribution (SHAP) agrees on which feature matters most
    shap = model.predict(x[:200], pred_contrib=True)[:, :5]
    _, ours = ensemble.explain(x[:200], 5)
    assert np.abs(ours).mean(axis=0).argmax() == np.abs(shap).mean(axis=0).argmax()


def test_a_model_whose_arrays_do_not_fit_is_refused() -> None:
    good = {"depth": 1, "feature": [[0]], "threshold": [[0.5]], "leaves": [[1.0, 2.0]]}
    assert TreeEnsemble.from_json(good, 1).predict(np.array([[0.2], [0.9]])).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="do not fit"):
        TreeEnsemble.from_json({**good, "feature": [[3]]}, 1)  # no such feature
    with pytest.raises(ValueError, match="do not fit"):
        TreeEnsemble.from_json({**good, "leaves": [[1.0]]}, 1)
