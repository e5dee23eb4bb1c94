"""Boosted trees (perfmodel.models.trees) and their fit (benchmarks.harness.calibrate_tiles.fit_boost): a hand-built
tree, both evaluation paths, named errors for bad arrays, and the fit on data whose answer is known."""

import numpy as np
import pytest

from benchmarks.harness.calibrate_tiles import fit_boost
from perfmodel.errors import CalibrationError
from perfmodel.models.trees import BoostedTrees

INF = np.inf


def one_tree() -> BoostedTrees:
    # depth 2: root tests x0 > 1; left child tests x1 > 5, right child does not split (every row goes left)
    return BoostedTrees(
        base=0.5,
        feature=np.array([[0, 1, 0]]),
        threshold=np.array([[1.0, 5.0, INF]]),
        value=np.array([[10.0, 20.0, 30.0, 40.0]]),
        n_features=2,
    )


def test_a_hand_built_tree():
    t = one_tree()
    X = np.array([[0.0, 0.0], [0.0, 6.0], [2.0, 0.0], [2.0, 99.0], [1.0, 5.0]])
    # rows: left-left, left-right, right-left (no split below), right-left again, ties go left
    assert t.predict(X).tolist() == [10.5, 20.5, 30.5, 30.5, 10.5]
    assert t.depth == 2


def test_both_evaluation_paths_agree():
    rng = np.random.default_rng(1)
    trees = BoostedTrees(
        base=-0.1,
        feature=rng.integers(0, 7, (40, 15)),
        threshold=rng.normal(size=(40, 15)),
        value=rng.normal(size=(40, 16)),
        n_features=7,
    )
    X = rng.normal(size=(600, 7))  # the many-rows path; slices of 100 take the all-trees-at-once path
    whole = trees.predict(X)
    parts = np.concatenate([trees.predict(X[i : i + 100]) for i in range(0, 600, 100)])
    assert np.allclose(whole, parts, rtol=0, atol=1e-12)
    brute = [trees.base + sum(trees.value[t][_leaf(trees, t, x)] for t in range(40)) for x in X[:20]]
    assert np.allclose(whole[:20], brute, rtol=0, atol=1e-12)


def _leaf(trees: BoostedTrees, t: int, x: np.ndarray) -> int:
    node = 0
    for _ in range(trees.depth):
        node = 2 * node + 1 + int(x[trees.feature[t, node]] > trees.threshold[t, node])
    return node - trees.feature.shape[1]


def test_round_trip_and_named_errors():
    t = one_tree()
    back = BoostedTrees.from_dict(t.to_dict(), where="here")
    X = np.array([[0.0, 6.0], [3.0, 1.0]])
    assert back.predict(X).tolist() == t.predict(X).tolist()
    with pytest.raises(CalibrationError, match="complete trees"):
        BoostedTrees(base=0, feature=np.zeros((1, 2)), threshold=np.zeros((1, 2)), value=np.zeros((1, 3)), n_features=1)
    with pytest.raises(CalibrationError, match="feature indices"):
        BoostedTrees(base=0, feature=np.array([[3]]), threshold=np.zeros((1, 1)), value=np.zeros((1, 2)), n_features=2)
    with pytest.raises(CalibrationError, match="finite"):
        BoostedTrees(base=0, feature=np.zeros((1, 1)), threshold=np.zeros((1, 1)), value=[[np.nan, 0]], n_features=1)
    with pytest.raises(CalibrationError, match=r"X must be \(rows, 2\)"):
        t.predict(np.zeros((3, 5)))
    with pytest.raises(CalibrationError, match="here: not a boosted-trees object"):
        BoostedTrees.from_dict({"base": 0}, where="here")


def test_fit_finds_a_step_and_ignores_outliers():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3))
    y = np.where(X[:, 1] > 0.3, 0.2, -0.1)
    noisy = y.copy()
    noisy[::50] += 5.0  # 2 % wild outliers: least absolute deviation leaves them out
    t = fit_boost(X, noisy, trees=60, depth=2, learning_rate=0.3, min_leaf=20)
    assert np.median(np.abs(t.predict(X) - y)) < 0.01
    assert set(np.unique(t.feature[t.threshold < INF])) == {1}  # only the informative feature splits
    again = fit_boost(X, noisy, trees=60, depth=2, learning_rate=0.3, min_leaf=20)
    assert np.array_equal(again.threshold, t.threshold) and np.array_equal(again.value, t.value)  # deterministic


def test_fit_respects_min_leaf():
    X = np.arange(100, dtype=float)[:, None]
    y = (X[:, 0] >= 95).astype(float)  # a step only 5 rows wide: no split may isolate fewer than 20
    t = fit_boost(X, y, trees=5, depth=1, learning_rate=1.0, min_leaf=20)
    split = t.threshold[t.threshold < INF]
    assert split.size == 0 or (split.min() >= 19.5 and split.max() <= 79.5)
