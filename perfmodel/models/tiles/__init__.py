"""The tile model: H200 cuBLAS GEMM kernel time from a per-tile formula, minimised over candidate tiles.

``model="tiles"`` (:func:`perfmodel.gemm_time_s`, the CLI's ``--model tiles``) prices a GEMM
``[M, K] @ [K, N]`` the way a persistent Hopper kernel runs it: for each candidate tile of a short,
fitted list (:class:`TileKind`), the time of its waves of CTAs, then a soft minimum over the candidates
(an idealised cuBLAS heuristic: no kernel name is needed). It is fitted on the profiled kernel times of
the 2026-12-01 H200 layout sweep (``benchmarks/harness/calibrate_tiles.py``, L2 flushed before every call) and
describes the effects the default calibrated model (:mod:`perfmodel.models.calibrated`) leaves out:
wave quantization at cluster granularity, split-K, per-CTA load and L2 limits, partial M tiles, and
row strides that are 16-byte but not 32- or 128-byte aligned. Where it comes from and how it scored on
shapes measured after the fit: ``docs/validation.md`` ("The tile model").

Per candidate tile ``(tM, tN)`` with cluster ``(cM, cN)`` and optional split-K, for a GEMM in one format
and layout (``S`` SMs, ``eb`` bytes per operand element, ``tK`` the K step, ``peak`` the dense peak)::

    Tm, Tn   = ⌈M/tM⌉, ⌈N/tN⌉;  T = Tm·Tn                                   output tiles
    s        = max(1, min(⌊S/T⌋, ⌊K/split_k_min⌋)) with split-K, else 1     K slices
    Kq       = ⌈K/(s·tK)⌉·tK;   rows, cols = M/Tm, N/Tn                      per-CTA work
    C        = ⌈Tm/cM⌉·cM · ⌈Tn/cN⌉·cN · s                                   CTAs, whole clusters
    slots    = S (clusters of ≤ 2) or S − 4;  W = ⌈C/slots⌉;  r = C − (W−1)·slots
    f(n)     = ‖ compute, tma, l2(n), hbm(n) + out(n), cta_hbm ‖_p + tile_overhead      n CTAs at once
      compute  = Kq/tK · (2·tM·tN·tK / (rate_fraction·peak/S) + k_step)
      tma      = Kq·eb·(rows·iA + cols·iB) / cta_load_bw
      l2(n)    = n·Kq·eb·(rows·iA/cN + cols·iB/cM) / l2_bw                  multicast shares loads
      hbm(n)   = n·(M·K + N·K)·eb/(T·s) · (1 + partial_m·(1 − rows/tM)) / hbm_bw
      cta_hbm  = (M·K + N·K)·eb/(T·s) · (1 + partial_m·(1 − rows/tM)) / cta_hbm_bw
      out(n)   = n·rows·cols·ob / out_bw            (ob: 2 bytes, 4 for split-K partial sums)
    time     = latency + (W−1)·f(slots) + f(r) + multi_wave·[C > 2·slots]
               + [split-K] · (reduce_latency + (4·s·M·N + 2·M·N) / reduce_bw)

``iA``, ``iB``: the row stride of A, B in bytes (its layout's leading dimension × eb) not a multiple of
32 multiplies that operand's loads by ``stride32``, not of 128 by ``stride128`` too. The soft minimum
over candidate times ``t_i`` is ``exp(min ln t − τ·ln Σ exp(−(ln t_i − min ln t)/τ))`` with ``τ`` the
kind's ``softmin``; a kind without one (fp8 rowwise: one candidate; the fallback kernels) takes the
plain minimum. bf16 GEMMs whose leading dimensions are not multiples of 8 (K, N for ``rr``/``rc``;
M, N for ``cr``; and every K < 8), M > 1, run cuBLAS's pre-Hopper fallback kernels: their own kind per
layout (``bf16@fallback/rr`` …: CUTLASS-like tiles without clusters, ``tK`` 32, the rate and the per-CTA
load rate scaled by ``align1_rate`` and ``align1_load`` when the dimensions are only 1-aligned).

Scope, said rather than guessed: the H200 it was measured on only (another GPU — even another Hopper —
gets a named error: nothing here rescales), bf16 (fp16 borrows it) and fp8 e4m3 (e5m2 borrows it) with
tensorwise or rowwise scaling, bf16 output; numbers and numpy arrays only — the minimum over candidate
tiles has no compact closed form, so sympy input gets a named error (the default model stays symbolic).
Memory-bound kernels, launches and the event gap are the H200 calibration's (:meth:`TileModel.base`);
the in-step GEMM factors are 1 (the tile model is not fitted to GEMMs inside training steps).

**Two timings, two fits.** ``kinds`` are fitted on profiled kernel times (``timing="kernel"``);
``event_kinds``, the same formula and candidate tiles, on the same sweep's ``triton.testing.do_bench``
times of the same GEMMs (``timing="event"``: CUDA events around each call, a process no profiler has
attached to). A GEMM timed by events is not its kernel time plus a constant gap: back-to-back calls of one
shape for ~100 ms run at the clocks that sustained load leaves, and small calls overlap their launches.
Where a file has no ``event_kinds`` (files written before them), event timing is the kernel fit plus the
calibration's measured gap, as for the other models.

**A learned correction on top.** What the formula misses varies with the shape in ways no term of it describes
(which tile cuBLAS's heuristic takes, epilogue and split-K choices), so the shipped model multiplies the formula's
time by ``exp(c)``, ``c`` the sum of 300 boosted regression trees (:mod:`perfmodel.models.trees`) over
:func:`correction_features` — log sizes, residues modulo tile sizes, tile counts and wave fractions, alignment
flags and the formula's own log time; for the fallback kinds also the model's time of the nearest shape the Hopper
kernels run (:func:`padded_shape`) — one set per kind (bf16 layout, main or fallback kernels; fp8 scaling) and
per timing, fitted on the layout sweeps measured before it, one row per measurement, so that it predicts a GEMM's
median time (``benchmarks/harness/calibrate_tiles.py``; later sweeps' GEMMs of shapes in no fit are its held-out
score). It is a lookup
learned from our measurements, said as such: it describes the H200 and the shapes' range it was fitted on (M and K
1–65 536, N 256–28 672), and :meth:`TileModel.formula_time_s` gives the formula alone.
"""

from __future__ import annotations

from ...counting import padded_shape
from .features import (  # noqa: F401  (names of the old tiles.py)
    _FEATURE_ALIGNS,
    _FEATURE_TILES,
    N_CORRECTION_FEATURES,
    N_FALLBACK_FEATURES,
    _kind_rows,
    correction_features,
    correction_key,
    fallback_mask,
)
from .fp8 import FP8_K_LATTICE, FP8_K_STEP_OFFSET, FP8_K_WITHIN_CLASS, fp8_k_lattice
from .kinds import (  # noqa: F401  (as above)
    _CLUSTER_IDLE_SMS,
    _KIND_OF_FORMAT,
    CORRECTION_KEYS,
    FALLBACK_PARAM_NAMES,
    PARAM_NAMES,
    SCHEMA,
    Tile,
    TileKind,
    _inflation,
    _softmin,
    _strides,
)
from .load import _KINDS_ONLY_KEYS, load_tile_kinds, load_tile_model  # noqa: F401  (as above)
from .model import _RANGE_DIMS, TileModel  # noqa: F401  (as above)

__all__ = [
    "CORRECTION_KEYS",
    "FALLBACK_PARAM_NAMES",
    "FP8_K_LATTICE",
    "FP8_K_STEP_OFFSET",
    "FP8_K_WITHIN_CLASS",
    "N_CORRECTION_FEATURES",
    "N_FALLBACK_FEATURES",
    "PARAM_NAMES",
    "SCHEMA",
    "Tile",
    "TileKind",
    "TileModel",
    "correction_features",
    "correction_key",
    "fallback_mask",
    "fp8_k_lattice",
    "load_tile_kinds",
    "load_tile_model",
    "padded_shape",
]
