"""perfmodel: predict how fast GPU work runs, and read what it really ran at, in one vocabulary.

Importing perfmodel imports numpy only: sympy, torch, triton and matplotlib are imported where
they are used.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .errorbars import ErrorBar
from .errors import (
    CalibrationError,
    FileRefusedError,
    IneligibleLinearError,
    IneligibleShapeError,
    InvalidShapeError,
    ModuleShapeError,
    NoClosedFormError,
    PerfModelError,
    PerfModelWarning,
    ProfileError,
    UnknownFormatError,
    UnknownGPUError,
    UnknownLayerKindError,
    UnknownLinearError,
    UnknownPresetError,
    UnknownRecipeError,
    UnsupportedFormatError,
    UnsupportedLayerError,
)
from .formats import FORMATS, Format, get_format
from .gemm import gemm_bytes, gemm_error_bar, gemm_flops, gemm_perfdata, gemm_time_s
from .hardware import GPUS, Efficiency, GPUSpec, Peaks, get_gpu, gpu_from_proton, list_gpus
from .kernel_choice import GemmKernel, gemm_kernel, kernel_class
from .perfdata import PerfData
from .registry import provenance, time_model
from .timemodel import ExpectedError, Provenance

# Submodules reached as attributes (pm.float8.speedup, pm.proton.read) load on first use.
_LAZY = (
    "float8",
    "proton",
    "plot",
    "calibrate",
    "recipes",
    "presets",
    "report",
    "step",
    "moe",
    "bench",
    "compat",
    "registry",
    "timemodel",
    "calibrated_model",
    "errorbars",
    "network",
    "train",
)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FORMATS",
    "GPUS",
    "CalibrationError",
    "Efficiency",
    "ErrorBar",
    "ExpectedError",
    "FileRefusedError",
    "Format",
    "GPUSpec",
    "GemmKernel",
    "IneligibleLinearError",
    "IneligibleShapeError",
    "InvalidShapeError",
    "ModuleShapeError",
    "NoClosedFormError",
    "Peaks",
    "PerfData",
    "PerfModelError",
    "PerfModelWarning",
    "ProfileError",
    "Provenance",
    "UnknownFormatError",
    "UnknownGPUError",
    "UnknownLayerKindError",
    "UnknownLinearError",
    "UnknownPresetError",
    "UnknownRecipeError",
    "UnsupportedFormatError",
    "UnsupportedLayerError",
    "__version__",
    "gemm_bytes",
    "gemm_error_bar",
    "gemm_flops",
    "gemm_kernel",
    "gemm_perfdata",
    "gemm_time_s",
    "get_format",
    "get_gpu",
    "gpu_from_proton",
    "kernel_class",
    "list_gpus",
    "provenance",
    "time_model",
]
