"""The fp8 K-class rule (:func:`fp8_k_lattice`): the K lattice fp8 GEMMs are priced on."""

from __future__ import annotations

import numpy as np

__all__ = ["FP8_K_LATTICE", "FP8_K_STEP_OFFSET", "FP8_K_WITHIN_CLASS", "fp8_k_lattice"]

#: formula's row-stride classes, 32 and 128 bytes of fp8, and the correction's K residues and alignment flags up to
#: 128 all repeat with it).
FP8_K_LATTICE = 128
#: The one class of K with a measured step between aligned fp8 neighbours (``benchmarks/data/h200_2026-12-03``,
#: ``fp8_neighbours_time.json.gz``: ``torch._scaled_mm`` on the H200, M = N = 8192, K = 4032…4128 by 16): K = 16
#: (mod 32), fp8 rows of 16 but not 32 bytes — rowwise 1.27–1.34x slower than its K = 0 (mod 32) neighbours,
#: tensorwise 1.04–1.13x; K = 32, 64, 96 (mod 128) ran within 4 % of K = 4096, and M or N by 16 within 5 %. The
#: held-out layout sweeps agree (2829 tensorwise GEMMs of that class ran a median 10 % slower than the K = 0 mod 128
#: lattice predicts). Such GEMMs are priced on a lattice of their own class, offset by this many elements.
FP8_K_STEP_OFFSET = 16
#: How far an fp8 time may stray from its class's interpolation (a fraction): the largest gap the neighbour
#: measurement shows within one class (K = 4032, 4064, 4128 against K = 4096, rowwise and tensorwise: within 4 %).
#: The model's own K structure is kept up to it, so neighbours within a class stay within ~1.04/0.96 of each other.
FP8_K_WITHIN_CLASS = 0.04


def fp8_k_lattice(K: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fp8 K-class rule: the two K an fp8 GEMM's time is interpolated between, and the weight of the upper one.

    The tile formula (its ``stride32`` and ``stride128`` load factors) and its learned correction (K residues and
    alignment flags) step sharply between aligned fp8 neighbours in K — 1.15x between K = 4096 and 4128, where the
    H200 measured 1.04x (:data:`FP8_K_STEP_OFFSET`). So an fp8 GEMM is priced at the multiples of
    :data:`FP8_K_LATTICE` around its K and interpolated linearly; a K = 16 (mod 32) GEMM, the class with a measured
    step, at the points 16 (mod 128) around it. The model's own time at K is kept where it lies within
    :data:`FP8_K_WITHIN_CLASS` of that interpolation, and clipped to it elsewhere. Exact on the lattice; a K under
    one spacing (above the offset), or on the lattice, is taken as it is.

    Args:
        K: 1-d float array, elements.

    Returns:
        ``(lo, hi, w)``: float arrays of K's shape; the time is ``(1 − w)·t(lo) + w·t(hi)`` (``w = 0``: ``lo = K``).
    """
    step = float(FP8_K_LATTICE)
    off = np.where(K % 32 == FP8_K_STEP_OFFSET, float(FP8_K_STEP_OFFSET), 0.0)
    lo = np.floor((K - off) / step) * step + off
    snap = (K - off >= step) & (lo != K)
    lo = np.where(snap, lo, K)
    return lo, np.where(snap, lo + step, K), np.where(snap, (K - lo) / step, 0.0)
