"""Calibration: fit the shape-aware time model (:mod:`perfmodel.models.calibrated`) to measurements.

``Calibrator(gpu=...).fit(dataset)`` (scikit-learn style: explicit parameters, deterministic,
returns ``self``; fitted attributes end in ``_``) reads datasets written by
``python -m perfmodel.bench`` and fits, per (format, scaling), the GEMM parameters — the tile
shape from a few candidates, the rest by robust least squares on log time (scipy, imported here
only) — then the memory-kernel and launch costs, and per float8 recipe the cast-kernel costs
from measured Linear steps. Shapes are split train / held-out by a hash of the shape; residuals
are absolute percentage errors (MdAPE, p90, max) on both.

Timing conversion: GEMM sweeps time single calls with CUDA events (``do_bench``), which adds the
launch gap of one call to the kernel time; the model predicts kernel time, so the fit subtracts
the gap measured on the same GPU (do_bench of a 1-element kernel minus its profiled duration).
"""

# ruff: noqa: F401  (the old flat module's names stay importable from here; __all__ is its public list)

from __future__ import annotations

from ..models.calibrated import SCHEMA, CalibratedModel, CastParams, GemmParams, KernelParams, load_calibration
from .calibrator import MIN_FALLBACK, TILE_CANDIDATES, Calibrator, _fit_kernels, _source, fit
from .cli import _run_cli, add_calibrate_cli, residual_table
from .data import _FIT_FIELDS, _check_record, _usable, ape_stats, is_heldout, load_dataset, read_data_json
from .gemm_fit import _HI, _LO, _X0, _fit_group, _params
from .linear_fit import (
    GEMM_KERNEL_RE,
    _fit_casts,
    _fit_step_gemm,
    _step_gemm_ratio,
    is_dynamic,
    is_gemm_kernel,
    measured_cast_time_s,
)
from .nnls import _nnls

__all__ = [
    "SCHEMA",
    "CalibratedModel",
    "Calibrator",
    "CastParams",
    "GemmParams",
    "KernelParams",
    "ape_stats",
    "fit",
    "is_dynamic",
    "is_gemm_kernel",
    "is_heldout",
    "load_calibration",
    "load_dataset",
    "measured_cast_time_s",
    "read_data_json",
]
