"""perfmodel: predict how fast GPU work runs, and read what it really ran at, in one vocabulary.

Importing perfmodel imports numpy only: sympy, torch, triton and matplotlib are imported where
they are used.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .errors import (
    CalibrationError,
    InvalidShapeError,
    PerfModelError,
    ProfileError,
    UnknownFormatError,
    UnknownGPUError,
    UnknownRecipeError,
    UnsupportedFormatError,
)
from .formats import FORMATS, Format, get_format
from .hardware import GPUS, Efficiency, GPUSpec, Peaks, get_gpu, gpu_from_proton, list_gpus
from .perfdata import PerfData

__all__ = [
    "FORMATS",
    "GPUS",
    "CalibrationError",
    "Efficiency",
    "Format",
    "GPUSpec",
    "InvalidShapeError",
    "Peaks",
    "PerfData",
    "PerfModelError",
    "ProfileError",
    "UnknownFormatError",
    "UnknownGPUError",
    "UnknownRecipeError",
    "UnsupportedFormatError",
    "__version__",
    "get_format",
    "get_gpu",
    "gpu_from_proton",
    "list_gpus",
]
