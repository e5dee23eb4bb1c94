"""The features the tile model's learned correction reads (:func:`correction_features`), which correction a kind
takes (:func:`correction_key`), and which bf16 GEMMs run the fallback kernels (:func:`fallback_mask`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...counting import layout_lead_dims
from ..calibrated import fallback_kernels

__all__ = [
    "N_CORRECTION_FEATURES",
    "N_FALLBACK_FEATURES",
    "correction_features",
    "correction_key",
    "fallback_mask",
]

#: tiles whose counts and wave fractions the correction's features hold (the shapes cuBLAS ran most; 64x64 and
#: 256x64 for its CUTLASS fallback kernels)
_FEATURE_TILES = ((128, 128), (128, 256), (256, 128), (64, 128), (64, 64), (256, 64))
#: alignments the correction's features test each dimension against (2 and 4: which CUTLASS fallback kernel a
#: misaligned bf16 GEMM gets, sm75 ``align1`` or sm80 ``align2``)
_FEATURE_ALIGNS = (2, 4, 8, 16, 32, 64, 128)
#: number of features :func:`correction_features` returns
N_CORRECTION_FEATURES = 3 + 1 + 7 + 3 * len(_FEATURE_TILES) + 1 + 3 * len(_FEATURE_ALIGNS)
#: number of features a fallback kind's correction reads where it was fitted with the padded shape's time (two
#: more: :func:`correction_features` with ``padded_t``); older files' fallback corrections read
#: :data:`N_CORRECTION_FEATURES`
N_FALLBACK_FEATURES = N_CORRECTION_FEATURES + 2


def correction_features(
    M: np.ndarray, K: np.ndarray, N: np.ndarray, t: np.ndarray, sms: int, padded_t: np.ndarray | None = None
) -> np.ndarray:
    """The rows the learned correction reads (``(n, N_CORRECTION_FEATURES)``): log2 of M, K, N; the formula's
    own log time, rounded to 1e-3 (so that BLAS noise in it seldom moves a split); M and N modulo 64, 128,
    256 and K modulo 64; per tile of :data:`_FEATURE_TILES` the log2 tile count, its fractional and whole
    waves on ``sms`` SMs; log2 of the arithmetic intensity M·N·K / (M·K + K·N + M·N); and whether each
    dimension is a multiple of 2, 4, 8, 16, 32, 64, 128. With ``padded_t`` (a fallback kind's GEMMs: the
    model's seconds for their :func:`padded_shape`), two more columns (``N_FALLBACK_FEATURES`` in all): its log
    and the log of ``t / padded_t``, rounded to 1e-3 — how the fallback kernel's formula compares with what
    the Hopper kernels take for nearly the same work."""
    M, K, N = (np.asarray(x, dtype=np.float64) for x in (M, K, N))
    cols = [np.log2(M), np.log2(K), np.log2(N), np.round(np.log(t), 3)]
    for a in (64, 128, 256):
        cols += [M % a, N % a]
    cols.append(K % 64)
    for tm, tn in _FEATURE_TILES:
        tiles = np.ceil(M / tm) * np.ceil(N / tn)
        waves = tiles / sms
        cols += [np.log2(tiles), waves - np.floor(waves), np.ceil(waves)]
    cols.append(np.log2(M * N * K / (M * K + K * N + M * N)))
    for d in (M, K, N):
        cols += [(d % a == 0).astype(np.float64) for a in _FEATURE_ALIGNS]
    if padded_t is not None:
        padded_t = np.asarray(padded_t, dtype=np.float64)
        cols += [np.round(np.log(padded_t), 3), np.round(np.log(t / padded_t), 3)]
    return np.stack(cols, axis=1)


def correction_key(kind_key: str, corrections: Mapping[str, Any] | None = None) -> str:
    """The correction a kind's GEMMs get: the kind's own (``"bf16@fallback/cr"`` …); in ``corrections`` without
    one for a fallback kind (files written before they were split), its layout's (``"bf16@cr"``)."""
    if corrections is not None and kind_key not in corrections and "@fallback/" in kind_key:
        return "bf16@" + kind_key.rsplit("/", 1)[1]
    return kind_key


def _kind_rows(
    key: str, M: np.ndarray, K: np.ndarray, N: np.ndarray, layout: str, lead_dims: tuple[Any, Any] | None = None
) -> list[tuple[str, np.ndarray]]:
    """``(kind key, row mask)`` for each kind that prices some of these GEMMs (1-d float arrays) of ``key``: a bf16
    key's GEMMs split between its main kind and its layout's fallback kind (:func:`fallback_mask`, on ``lead_dims``
    where given), any other key's all in that kind."""
    if not key.startswith("bf16"):
        return [(key, np.ones(M.shape, dtype=bool))]
    dims = None if lead_dims is None else tuple(np.broadcast_to(np.asarray(d, float), M.shape) for d in lead_dims)
    fb = fallback_mask(M, K, N, layout, dims)
    return [(k, rows) for k, rows in ((key, ~fb), (f"bf16@fallback/{layout}", fb)) if rows.any()]


def fallback_mask(M: Any, K: Any, N: Any, layout: str, lead_dims: tuple[Any, Any] | None = None) -> np.ndarray:
    """Which bf16 GEMMs run cuBLAS's pre-Hopper fallback kernels: a leading dimension (``lead_dims``, else
    the layout's: K, N for ``rr``/``rc``, M, N for ``cr``) not a multiple of 8 with M > 1, or K < 8."""
    a, b = lead_dims if lead_dims is not None else layout_lead_dims(layout, M, K, N)
    a, b, M, K = (np.asarray(x, dtype=np.float64) for x in (a, b, M, K))
    return fallback_kernels(M, K, a, b)


#: The fp8 K-class rule (:func:`fp8_k_lattice`): the K spacing of the lattice fp8 GEMMs are priced on, elements (the
