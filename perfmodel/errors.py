"""Exception types.

Every error perfmodel raises subclasses :class:`PerfModelError` *and* the builtin that
describes it best, so ``except LookupError`` or ``except ValueError`` in user code keeps working.
Messages name the bad value, list the valid choices and say what to do instead.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

__all__ = [
    "EXTRAS",
    "CalibrationError",
    "ConflictingArgumentsError",
    "FileRefusedError",
    "IneligibleLinearError",
    "IneligibleShapeError",
    "InvalidParallelismError",
    "InvalidShapeError",
    "MaskedInputError",
    "MissingDataError",
    "MissingExtraError",
    "MoEPresetError",
    "ModuleShapeError",
    "MovedOutOfPackageError",
    "NoClosedFormError",
    "NoCurrentGPUError",
    "PerfModelError",
    "PerfModelWarning",
    "ProfileError",
    "TooManyBatchesError",
    "UnknownExampleError",
    "UnknownFormatError",
    "UnknownGPUError",
    "UnknownLayerKindError",
    "UnknownLinearError",
    "UnknownNetworkError",
    "UnknownOptionError",
    "UnknownPresetError",
    "UnknownRecipeError",
    "UnsupportedFormatError",
    "UnsupportedLayerError",
    "choices_message",
    "exit_moved",
    "moved_module_getattr",
    "require",
]


class PerfModelError(Exception):
    """Base class of every error raised by perfmodel."""


class UnknownGPUError(PerfModelError, LookupError):
    """A GPU name, alias or device string that is not in the hardware table."""


class NoCurrentGPUError(UnknownGPUError):
    """``gpu="auto"`` asked for the current CUDA device where there is none (torch missing, or no CUDA device
    visible): the message says to pass ``gpu=`` with the GPU the job runs on."""


class UnknownFormatError(PerfModelError, ValueError):
    """A number format (dtype) name that is not in the format registry."""


class UnknownRecipeError(PerfModelError, ValueError):
    """A float8 recipe name that is not in the recipe registry."""


class UnsupportedFormatError(PerfModelError, ValueError):
    """A known number format that a GPU (or an operation) has no rate for, e.g. mxfp8 on an H100."""


class InvalidShapeError(PerfModelError, ValueError):
    """A size that is zero, negative, not an integer, or not a number at all."""


class MaskedInputError(InvalidShapeError):
    """A ``numpy.ma.MaskedArray`` with masked entries given as a size or quantity: perfmodel does not guess what
    a masked entry means; pass ``a.compressed()`` (the unmasked entries) or ``a.filled(value)``."""


class MissingExtraError(PerfModelError, ImportError):
    """An optional dependency (matplotlib, scipy, torch, triton) that a feature needs and is not installed; the
    message names the extra that brings it (``pip install ".[plot]"`` from a checkout)."""


class IneligibleShapeError(PerfModelError, ValueError):
    """A shape a float8 recipe cannot run (``K`` or ``N`` not a multiple of 16): keep it in bf16."""


class NoClosedFormError(PerfModelError, NotImplementedError):
    """A symbolic answer asked of a model that has no closed form for it (says which part has none)."""


class ProfileError(PerfModelError, ValueError):
    """A profile file that cannot be read: bad JSON, wrong layout, missing or non-numeric metrics."""


class TooManyBatchesError(PerfModelError, ValueError):
    """Batch ranges (``perfmodel roofline --batch-ranges``) that hold more batch sizes than the documented
    maximum (:data:`perfmodel.measured.moe_bench.MAX_BATCHES`); the message says the limit and how many were asked."""


class UnsupportedLayerError(PerfModelError, ValueError):
    """A layer the step model does not price (MoE routing, MLA attention), or not a layer at all."""


class MoEPresetError(UnsupportedLayerError):
    """An MoE model asked of a dense-only API (the decoder-layer step model, the cluster model): its routed experts
    are priced by :mod:`perfmodel.moe` (``expert_block_time``, ``speedup``), which the message names."""


class IneligibleLinearError(PerfModelError, ValueError):
    """A Linear asked to run in float8 whose K or N is not a multiple of 16."""


class ModuleShapeError(PerfModelError, ValueError):
    """A module whose Linear shapes cannot be read, or do not match the layer the decision was made for."""


class UnknownLinearError(PerfModelError, LookupError):
    """A Linear or group name that is not one of the layer's (canonical, group, torchtitan or Hugging Face)."""


class UnknownPresetError(PerfModelError, ValueError):
    """A model preset name that is not in :data:`PRESETS`."""


class UnknownLayerKindError(PerfModelError, ValueError):
    """A norm or activation of a :class:`LayerShape` that the step model does not know."""


class CalibrationError(PerfModelError, ValueError):
    """A calibration dataset or file that cannot be used (empty, malformed, wrong GPU)."""


class MissingDataError(CalibrationError, FileNotFoundError):
    """The measurements a fit needs are not where it was told to look (a missing or empty folder, a file of the
    set missing): the wheel ships fitted calibrations only, the raw sweeps stay in the repository
    (``benchmarks/data/``). The message names the folder, the files it needs and where the repository keeps them.
    A :class:`CalibrationError` and a ``FileNotFoundError``."""


class UnknownOptionError(PerfModelError, ValueError):
    """An option value a function does not know (e.g. a grouped GEMM's ``op``, ``timing`` or ``scaling``): the
    message lists the valid ones, or says what was measured."""


class FileRefusedError(PerfModelError, OSError):
    """A file perfmodel will not read or write: not a regular file (a FIFO, device or folder), above
    the size limit, an output that exists (without ``force``), is one of the inputs, or lies in a
    folder that does not exist. The message names the file and says what to do."""


class UnknownExampleError(PerfModelError, LookupError):
    """A name that is not one of the example files shipped in :mod:`perfmodel.examples` (the message lists them)."""


class UnknownNetworkError(PerfModelError, LookupError):
    """A network (inter-node fabric) name that is not in the table."""


class InvalidParallelismError(PerfModelError, ValueError):
    """A training configuration that cannot run: GPUs not divisible by the TP degree, heads not divisible by
    it, fewer than one sequence per rank, a collective on a GPU without a known interconnect, ..."""


class MovedOutOfPackageError(PerfModelError, ImportError):
    """A module that moved out of the package into the repository's ``benchmarks/`` (the frozen tile model's fitter
    and layout sweep): the wheel does not ship it; the message names where it lives now and how to run it."""


def moved_module_getattr(message: str) -> Callable[[str], object]:
    """A module-level ``__getattr__`` for a module that moved out of the package: reading any name raises
    :class:`MovedOutOfPackageError` with ``message`` (where it lives now) and the name asked for; dunder look-ups
    (copy, pickle, doctest) stay a plain :class:`AttributeError`."""

    def __getattr__(name: str) -> object:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        raise MovedOutOfPackageError(f"{message} (asked for {name!r})")

    return __getattr__


def exit_moved(message: str) -> NoReturn:
    """``python -m`` of a moved module: ``message`` on stderr, exit status 2 (a usage error, as ``docs/cli.md``
    states)."""
    print(message, file=sys.stderr)
    raise SystemExit(2)


class ConflictingArgumentsError(PerfModelError, TypeError):
    """One thing given twice under two names, e.g. ``time_model=`` and its old name ``model=``: the message names
    the keyword to keep."""


class PerfModelWarning(UserWarning):
    """An answer that is less sure than usual, e.g. a GPU with no calibrated model (roofline only).

    Emitted once per GPU and cause; ``warnings.simplefilter("ignore", PerfModelWarning)`` silences it.
    """


def choices_message(
    kind: str, value: object, choices: Iterable[str], hint: str = "", *, candidates: Iterable[str] = ()
) -> str:
    """Return ``"unknown {kind} 'x'; did you mean ...? Valid choices: a, b, c. {hint}"``.

    Close matches come from :func:`difflib.get_close_matches` on the lower-cased text, over
    ``choices`` plus ``candidates`` (aliases that are accepted but not worth listing).
    """
    choices = sorted(set(choices))
    text = str(value)
    lowered = {c.lower(): c for c in [*candidates, *choices]}
    close = [lowered[c] for c in difflib.get_close_matches(text.lower(), list(lowered), n=3, cutoff=0.5)]
    msg = f"unknown {kind} {text!r}"
    msg += f"; did you mean {', '.join(repr(c) for c in close)}?" if close else "."
    msg += f" Valid choices: {', '.join(choices)}."
    if hint:
        msg += f" {hint}"
    return msg


#: The extra of pyproject.toml that installs each optional top-level module.
EXTRAS = {"matplotlib": "plot", "scipy": "calibrate", "torch": "torch", "triton": "proton"}


def require(module: str, feature: str) -> Any:
    """Import ``module`` (an optional dependency) for ``feature``, or raise :class:`MissingExtraError` naming the
    extra that installs it. perfmodel is not on the package index, so the install line is the checkout's:
    ``pip install ".[plot]"`` from a perfmodel checkout (or the package itself, ``pip install matplotlib``)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        top = module.split(".")[0]
        extra = EXTRAS.get(top, top)
        raise MissingExtraError(
            f"{feature} needs {top}, which is not installed (import {module} failed). Install it with "
            f'pip install ".[{extra}]" from a perfmodel checkout, or pip install {top}'
        ) from None
