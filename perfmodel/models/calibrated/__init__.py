"""The calibrated, shape-aware time model: formulas, fitted parameters in units that travel, JSON files.

A package by concept: :mod:`.params` (fitted parameters and the GEMM formula), :mod:`.ops` (the arithmetic the
formula is written in: by value, or in place on a grid), :mod:`.groups` (which fit prices which GEMM),
:mod:`.checks` (ranges and file keys), :mod:`.model` (:class:`CalibratedModel`, its files). Every name is importable
from here, as before the split.

Fitting lives in :mod:`perfmodel.calibrate` (nothing here imports it); which GPU gets which model is
decided by :mod:`perfmodel.models.registry`.

All times are **GPU kernel time** in seconds — what a profiler (Proton, torch.profiler) sums —
so a predicted step adds up like a measured one. Timing a single call with CUDA events or
``triton.testing.do_bench`` adds a launch gap on top (``KernelParams.event_overhead_s``, ~2.9 µs
measured on the H200).

GEMM ``[M, K] @ [K, N]`` in one (format, scaling)::

    tiles    = ⌈M / tile_m⌉ · ⌈N / tile_n⌉                                 tile quantization
    waves    = (1 − q) · tiles / SMs  +  q · ⌈tiles / SMs⌉                   wave quantization, q ∈ [0, 1]
    compute  = waves · 2 · tile_m · tile_n · SMs · (K + k_overhead) / rate · f_align(K, N)
    compute ← compute · (1 + throttle_gain · ln(1 + min(compute, settle) / throttle_time_s))   clocks drop on
                                                                                 long runs, then settle
    time     = latency + max(compute, gemm_bytes / mem_bw)

``q = 0`` is perfect load balancing (split-K / stream-K), ``q = 1`` whole waves.
``f_align`` is 1 when the layout's leading dimensions (K and N; M and N for ``cr``) are multiples of
8 elements (16-byte rows for bf16), else the fitted slowdown for the largest power of two (1, 2 or 4)
dividing both; on sympy symbols it is a ``Piecewise`` over ``Mod(·, 2|4|8)``, so symbolic and numeric
answers agree. Misaligned 16-bit GEMMs of more than one row, and those with K < 8, run cuBLAS's pre-Hopper
fallback kernels (:func:`fallback_kernels`; one row runs Hopper or gemv kernels): where the calibration
has a fallback group (``bf16@fallback``, :data:`FALLBACK`) they are priced by that group's own
parameters (its ``f_align`` then relative to 2- and 4-aligned dimensions) and the main group prices the
others; without one, the main group's ``f_align`` prices them. Memory-bound kernels
cost ``latency + bytes / bw``, per recipe and per tensor kind for float8 casts (activations and
weights run different kernels); a launch-only kernel costs ``launch_s``.

Units that travel
-----------------
A calibration is fitted on one GPU (its :class:`ReferenceGPU`) and written in units that hold for
every GPU of the same architecture; on another GPU (``gpu=`` of a call) the model is rescaled by
that GPU's spec:

* GEMM ``rate`` is a fraction of the dense peak of the format (``rate_fraction``): on the target,
  ``rate_fraction × peak(fmt)`` — so SM count and clock enter through the peak;
* bandwidths (skinny GEMMs, memory kernels, casts) are fractions of the HBM bandwidth;
* latencies and launch costs are seconds; tiles, ``k_overhead``, ``q`` and the misalignment
  factors are the architecture's kernels and stay as they are; SMs come from the target's spec;
* ``throttle_gain`` scales with the *power pressure* ``peak_bf16 / power_w`` (dense tensor FLOP/s
  per watt of board power) relative to the reference — an **assumption**: one GPU cannot show how
  throttling depends on power headroom (:data:`ASSUMPTIONS` lists every one);
* the model has no L2 term (the sweeps flush L2 between calls), so the L2 size does not enter.
"""

from __future__ import annotations

from .checks import (
    CAST_RECIPES,
    FILE_KEYS,
    RANGES,
    _check_file_keys,  # noqa: F401  (importable as before the split)
    _finite_nonneg,  # noqa: F401  (importable as before the split)
    _finite_positive,  # noqa: F401  (importable as before the split)
    _fraction,  # noqa: F401  (importable as before the split)
    _in_range,  # noqa: F401  (importable as before the split)
    _known_keys,  # noqa: F401  (importable as before the split)
    _mapping,  # noqa: F401  (importable as before the split)
    _short,  # noqa: F401  (importable as before the split)
)
from .groups import (
    _BORROW,  # noqa: F401  (importable as before the split)
    _BORROW_SCALING,  # noqa: F401  (importable as before the split)
    CAST_LIKE,
    FALLBACK,
    _fmt_of,  # noqa: F401  (importable as before the split)
    _key,  # noqa: F401  (importable as before the split)
    _select,  # noqa: F401  (importable as before the split)
    fallback_kernels,
    fallback_key,
)
from .model import _OLD_SCHEMA, ASSUMPTIONS, SCHEMA, CalibratedModel, _check_label, load_calibration  # noqa: F401
from .params import (
    CastParams,
    GemmParams,
    KernelParams,
    ReferenceGPU,
    _rescaled,  # noqa: F401  (importable as before the split)
    _same_float_arrays,  # noqa: F401  (importable as before the split)
    _without_misalignment,  # noqa: F401  (importable as before the split)
    power_pressure,  # noqa: F401  (importable as before the split)
)

__all__ = [
    "ASSUMPTIONS",
    "CAST_LIKE",
    "CAST_RECIPES",
    "FALLBACK",
    "FILE_KEYS",
    "RANGES",
    "SCHEMA",
    "CalibratedModel",
    "CastParams",
    "GemmParams",
    "KernelParams",
    "ReferenceGPU",
    "fallback_kernels",
    "fallback_key",
    "load_calibration",
]
