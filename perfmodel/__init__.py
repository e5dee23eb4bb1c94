"""perfmodel: predict how fast GPU work runs, and read what it really ran at, in one vocabulary.

Importing perfmodel imports numpy only: sympy, torch, triton and matplotlib are imported where
they are used, and perfmodel's own modules on first use of a name they define (``perfmodel.gemm_time_s`` loads
:mod:`perfmodel.gemm`): ``import perfmodel`` costs little beyond numpy (issue #35).
"""

from __future__ import annotations

__version__ = "0.1.0"

from typing import TYPE_CHECKING, Any

from ._backend import lambdify  # numpy, the one dependency every answer needs
from .errors import (
    CalibrationError,
    FileRefusedError,
    IneligibleLinearError,
    IneligibleShapeError,
    InvalidShapeError,
    MaskedInputError,
    MissingExtraError,
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

if TYPE_CHECKING:  # the names below load on first use (``__getattr__``); type checkers read them here
    from .formats import FORMATS, Format, get_format
    from .gemm import gemm_bytes, gemm_error_bar, gemm_flops, gemm_perfdata, gemm_time_s
    from .models.base import ExpectedError, Provenance
    from .models.errorbars import ErrorBar
    from .models.kernel_choice import GemmKernel, gemm_kernel, kernel_class
    from .models.registry import provenance, time_model
    from .perfdata import PerfData
    from .specs.gpu import GPUS, Efficiency, GPUSpec, Peaks, get_gpu, gpu_from_proton, list_gpus

# Submodules reached as attributes (pm.float8.speedup, pm.proton.read) load on first use.
_LAZY = {
    "float8": "float8",
    "proton": "measured.proton",
    "plot": "measured.plot",
    "moe": "moe",
    "calibrate": "calibrate",
    "presets": "presets",
    "report": "report",
    "step": "step",
    "train": "train",
    "bench": "bench",
    "compat": "compat",
    "specs": "specs",
    "models": "models",
    "measured": "measured",
    "counting": "counting",
    "examples": "examples",
}
#: public names whose module loads on first use (keeps ``import perfmodel`` near numpy's cost, and a CLI verb pays
#: only for the modules it runs: issue #35); the value is the module, relative to this package
_LAZY_NAMES = {
    **dict.fromkeys(("FORMATS", "Format", "get_format"), "formats"),
    **dict.fromkeys(("gemm_bytes", "gemm_error_bar", "gemm_flops", "gemm_perfdata", "gemm_time_s"), "gemm"),
    **dict.fromkeys(("ExpectedError", "Provenance"), "models.base"),
    "ErrorBar": "models.errorbars",
    **dict.fromkeys(("GemmKernel", "gemm_kernel", "kernel_class"), "models.kernel_choice"),
    **dict.fromkeys(("provenance", "time_model"), "models.registry"),
    "PerfData": "perfdata",
    **dict.fromkeys(("GPUS", "Efficiency", "GPUSpec", "Peaks", "get_gpu", "gpu_from_proton", "list_gpus"), "specs.gpu"),
}
#: module names of the flat layout (before 2026-12-03) -> their home now; reached as ``pm.<old>`` they still
#: work, with a DeprecationWarning that names the new path.
_MOVED = {
    "registry": "models.registry",
    "timemodel": "models.base",
    "calibrated_model": "models.calibrated",
    "errorbars": "models.errorbars",
    "network": "models.collectives",
    "recipes": "float8.recipes",
    "hardware": "specs.gpu",
    "kernel_choice": "models.kernel_choice",
    "tile_model": "models.tiles",
}


#: names that a lower package shows but that live above it: ``perfmodel.float8.report`` is
#: :func:`perfmodel.report.report` (it prices whole models with float8's functions, so it sits on the floor
#: above). The face on top wires them, so that the lower package never imports upward; its ``__getattr__``
#: asks :func:`_handed_on`.
_HANDED_ON = {"perfmodel.float8": {"report": ("report", "report")}}


def _handed_on(module: str, name: str) -> Any:
    """The value of ``module.name`` for a name in :data:`_HANDED_ON` (``AttributeError`` for any other)."""
    import importlib

    try:
        home, attr = _HANDED_ON[module][name]
    except KeyError:
        raise AttributeError(f"module {module!r} has no attribute {name!r}") from None
    return getattr(importlib.import_module(f"{__name__}.{home}"), attr)


def __getattr__(name: str):
    import importlib

    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{_LAZY[name]}")
    if name in _LAZY_NAMES:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY_NAMES[name]}"), name)
        globals()[name] = value  # once loaded, a plain attribute
        return value
    if name in _MOVED:
        import warnings

        warnings.warn(
            f"perfmodel.{name} moved to perfmodel.{_MOVED[name]}; the old name goes in a later release",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(f"{__name__}.{_MOVED[name]}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The loaded attributes, every public name and the submodules that load on first use."""
    return sorted({*globals(), *__all__, *_LAZY})


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
    "MaskedInputError",
    "MissingExtraError",
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
    "lambdify",
    "list_gpus",
    "provenance",
    "time_model",
]
