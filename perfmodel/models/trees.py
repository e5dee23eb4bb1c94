"""Boosted regression trees as plain arrays: the learned correction of the tile model (:mod:`perfmodel.models.tiles`).

A :class:`BoostedTrees` is a sum of complete binary trees of one depth ``D``. Tree ``t`` sends a row ``x`` from
node 0 to the right child (``2i + 2``) when ``x[feature[t, i]] > threshold[t, i]``, else to the left one
(``2i + 1``); after ``D`` steps it lands on leaf ``j`` (0 … 2**D − 1) and adds ``value[t, j]``. The prediction
is ``base + Σ_t value[t, leaf_t(x)]``. A node that does not split has feature 0 and threshold +inf (every row
goes left). Numbers and numpy arrays only: a lookup, not a formula (no symbolic form).

The trees are fitted by ``fit_boost`` of ``benchmarks/harness/calibrate_tiles.py`` (least absolute deviation
boosting); this module only evaluates them, with numpy.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import CalibrationError

__all__ = ["BoostedTrees"]

_MAX_DEPTH = 8
_MAX_TREES = 10_000
_ROWS_PER_TREE_LOOP = 256  # from this many rows on, a loop over trees is faster than all trees at once


@dataclasses.dataclass(frozen=True, eq=False)
class BoostedTrees:
    """Trees of one depth (module doc).

    Attributes:
        base: the constant every prediction starts from.
        feature: ``(trees, 2**depth − 1)`` int, the feature each internal node tests.
        threshold: ``(trees, 2**depth − 1)`` float, go right where the feature is above it (+inf: never).
        value: ``(trees, 2**depth)`` float, what each leaf adds (already scaled by the learning rate).
        n_features: how many features a row has.
    """

    base: float
    feature: np.ndarray
    threshold: np.ndarray
    value: np.ndarray
    n_features: int

    def __post_init__(self) -> None:
        feature = np.asarray(self.feature, dtype=np.int64)
        threshold = np.asarray(self.threshold, dtype=np.float64)
        value = np.asarray(self.value, dtype=np.float64)
        if feature.ndim != 2 or threshold.shape != feature.shape or value.ndim != 2:
            raise CalibrationError("BoostedTrees: feature and threshold must be (trees, nodes) arrays of one shape")
        trees, nodes = feature.shape
        depth = round(math.log2(nodes + 1)) if nodes > 0 else 0
        if not (1 <= depth <= _MAX_DEPTH and nodes == 2**depth - 1 and 1 <= trees <= _MAX_TREES):
            raise CalibrationError(
                f"BoostedTrees: {trees} trees of {nodes} internal nodes; valid: 1 to {_MAX_TREES} complete trees of "
                f"depth 1 to {_MAX_DEPTH} (2**depth - 1 nodes)"
            )
        if value.shape != (trees, nodes + 1):
            raise CalibrationError(f"BoostedTrees: value must be ({trees}, {nodes + 1}), got {value.shape}")
        if not isinstance(self.n_features, int) or isinstance(self.n_features, bool) or self.n_features < 1:
            raise CalibrationError(f"BoostedTrees: n_features must be a positive int, got {self.n_features!r}")
        if feature.min() < 0 or feature.max() >= self.n_features:
            raise CalibrationError(f"BoostedTrees: feature indices must be in [0, {self.n_features})")
        if np.isnan(threshold).any() or not np.isfinite(value).all() or not math.isfinite(self.base):
            raise CalibrationError("BoostedTrees: thresholds must not be NaN; values and base must be finite")
        object.__setattr__(self, "feature", feature)
        object.__setattr__(self, "threshold", threshold)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "base", float(self.base))

    @property
    def depth(self) -> int:
        return round(math.log2(self.feature.shape[1] + 1))

    def predict(self, X: np.ndarray) -> np.ndarray:
        """``base + Σ_t value[t, leaf_t(x)]`` for each row of ``X`` (``(rows, n_features)``)."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise CalibrationError(f"BoostedTrees.predict: X must be (rows, {self.n_features}), got {X.shape}")
        trees, inner = self.feature.shape
        n = X.shape[0]
        if n < _ROWS_PER_TREE_LOOP:  # few rows: every tree at once
            tree = np.arange(trees)
            node = np.zeros((n, trees), dtype=np.int64)
            rows = np.arange(n)[:, None]
            for _ in range(self.depth):
                node = 2 * node + 1 + (X[rows, self.feature[tree, node]] > self.threshold[tree, node])
            return self.base + self.value[tree, node - inner].sum(axis=1)  # leaves follow the internal nodes
        flat = np.ascontiguousarray(X.T).reshape(-1)  # many rows: one tree at a time, row-contiguous gathers
        rows = np.arange(n)
        out = np.full(n, self.base)
        for t in range(trees):
            node = np.zeros(n, dtype=np.int64)
            feature, threshold = self.feature[t], self.threshold[t]
            for _ in range(self.depth):
                node = 2 * node + 1 + (flat[feature[node] * n + rows] > threshold[node])
            out += self.value[t][node - inner]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "n_features": self.n_features,
            "feature": self.feature.tolist(),
            "threshold": [[t if math.isfinite(t) else "inf" for t in row] for row in self.threshold.tolist()],
            "value": self.value.tolist(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str) -> BoostedTrees:
        try:
            threshold = [[float(t) for t in row] for row in data["threshold"]]
            return cls(
                base=float(data["base"]),
                feature=np.asarray(data["feature"]),
                threshold=np.asarray(threshold),
                value=np.asarray(data["value"], dtype=np.float64),
                n_features=data["n_features"],
            )
        except CalibrationError as exc:
            raise CalibrationError(f"{where}: {exc}") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise CalibrationError(
                f"{where}: not a boosted-trees object (needs base, n_features, feature, threshold, value): {exc}"
            ) from None
