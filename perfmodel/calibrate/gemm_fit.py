"""The GEMM fit of one (format, scaling, layout) group: robust least squares on log time over a few output tiles."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..counting import alignment
from ..errors import require
from ..models.calibrated import GemmParams

__all__: list[str] = []  # private: _fit_group, _params and the parameter bounds


# x = [latency µs, rate 1e14 FLOP/s, k_overhead / 100, bw TB/s, throttle gain, throttle ms, q, f1, f2, f4]
_X0 = np.array([5.0, 8.0, 2.0, 3.0, 0.05, 1.0, 0.2, 4.0, 3.0, 2.0])
_LO = np.array([0.0, 0.5, 0.0, 0.3, 0.0, 0.01, 0.0, 1.0, 1.0, 1.0])
_HI = np.array([50.0, 60.0, 50.0, 10.0, 2.0, 100.0, 1.0, 30.0, 30.0, 30.0])


def _params(x: np.ndarray, tile: tuple[int, int]) -> GemmParams:
    return GemmParams(
        tile_m=tile[0],
        tile_n=tile[1],
        latency_s=float(x[0]) * 1e-6,
        rate_flops_per_s=float(x[1]) * 1e14,
        k_overhead=float(x[2]) * 100,
        mem_bw_bytes_per_s=float(x[3]) * 1e12,
        throttle_gain=float(x[4]),
        throttle_time_s=float(x[5]) * 1e-3,
        wave_quantization=float(x[6]),
        misaligned_factors=(float(x[7]), float(x[8]), float(x[9])),
    )


def _fit_group(
    M,
    K,
    N,
    nbytes,
    t,
    sms: int,
    tiles: Sequence[tuple[int, int]],
    rate0: float,
    *,
    lead: tuple[Any, Any] | None = None,
    fallback_group: bool = False,
    max_bw: float | None = None,
) -> GemmParams:
    """Best :class:`GemmParams` for one (format, scaling, layout): robust least squares on log time. ``lead``:
    the leading dimensions whose alignment picks the kernel (default ``(K, N)``). ``fallback_group``: a
    fallback group, which holds misaligned GEMMs only: its rate is the 2- and 4-aligned kernels' (sm80
    CUTLASS, one class: on the H200 data 19 GEMMs cannot tell them apart), 1-aligned ones (sm75) are
    slowed down from it, and no throttling (too few long fallback GEMMs to identify it: a free throttle
    time would drift between BLAS builds).
    ``max_bw``: upper bound of the memory bandwidth, B/s (a calibration file refuses more than 1.2x
    the GPU's): a fallback group's bound from the start; any other group is fitted again within it where its
    free fit went above."""
    least_squares = require("scipy.optimize", "perfmodel calibrate (the least-squares fit)").least_squares

    lead = lead if lead is not None else (K, N)
    x0 = _X0.copy()
    x0[1] = np.clip(rate0 / 1e14, _LO[1], _HI[1])
    aligned_all = bool((np.minimum(alignment(lead[0]), alignment(lead[1])) >= 8).all())
    best: tuple[float, GemmParams] | None = None
    for tile in tiles:

        def residual(x: np.ndarray, tile: tuple[int, int] = tile) -> np.ndarray:
            return np.log(_params(x, tile).time_s(M, K, N, nbytes, sms, lead) / t)

        lo, hi = _LO.copy(), _HI.copy()
        if fallback_group:  # no throttling: gain 0 (its time scale then has no meaning: 1 ms)
            x0[4:6], lo[4:6], hi[4:6] = (0.0, 1.0), (0.0, 1.0), (1e-12, 1.0 + 1e-9)
        if max_bw is not None and fallback_group:
            hi[3] = min(hi[3], max_bw / 1e12)
            x0[3] = min(x0[3], hi[3] / 2)
        pinned = slice(7, 10) if aligned_all else slice(8, 10) if fallback_group else slice(0, 0)
        x0[pinned], lo[pinned], hi[pinned] = 1.0, 1.0, 1.0 + 1e-9  # nothing to fit them on: 1
        # a small group's flat directions: converge tightly, or the answer drifts with the BLAS build
        tol = {"xtol": 1e-13, "ftol": 1e-13, "gtol": 1e-13, "max_nfev": 2000} if fallback_group else {}
        res = least_squares(residual, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.05, **tol)
        if max_bw is not None and res.x[3] * 1e12 > max_bw:
            # a bandwidth the calibration file would refuse (data with few memory-bound GEMMs leave it free):
            # fit again within it (refitting only then keeps the fits that never reach it as they were)
            hi[3] = max(max_bw / 1e12, lo[3] * (1 + 1e-9))
            x0b = x0.copy()
            x0b[3] = float(np.clip(x0[3], lo[3], hi[3] / 2 if hi[3] / 2 > lo[3] else hi[3]))
            res = least_squares(residual, x0b, bounds=(lo, hi), loss="soft_l1", f_scale=0.05, **tol)
        x = res.x.copy()
        x[pinned] = 1.0
        if fallback_group:
            x[4:6] = 0.0, 1.0
        if best is None or res.cost < best[0]:
            best = (float(res.cost), _params(x, tile))
    assert best is not None  # tiles is never empty (checked by the caller)
    return best[1]
