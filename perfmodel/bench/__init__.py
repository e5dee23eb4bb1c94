"""GPU measurement harness: the sweeps whose data calibrate perfmodel, and real Proton fixtures.

``python -m perfmodel.bench {gemm,linear,memory,launch,fixtures,all} --out DIR [--quick] [--dry-run]``

Importing this package imports neither torch nor triton; the GPU paths import them when they run and
raise :class:`NoGPUError` (a ``RuntimeError``) where no CUDA device is visible; every ``python -m perfmodel.bench...``
entry point prints that (or a missing extra) as one ``error:`` line and exits 2 (:func:`._device.run_cli`). The shape
plans and the dataset format (:mod:`.plan`, :mod:`.dataset`) are pure Python and tested on CPU.
"""

from __future__ import annotations

from ._device import NoGPUError, require_cuda
from .dataset import SCHEMA, DatasetWriter, validate_dataset
from .plan import GEMM_FORMATS, GemmSpec, LinearSpec, gemm_plan, linear_plan

__all__ = [
    "GEMM_FORMATS",
    "SCHEMA",
    "DatasetWriter",
    "GemmSpec",
    "LinearSpec",
    "NoGPUError",
    "gemm_plan",
    "linear_plan",
    "require_cuda",
    "validate_dataset",
]
