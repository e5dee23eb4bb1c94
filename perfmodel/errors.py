"""Exception types.

Every error perfmodel raises subclasses :class:`PerfModelError` *and* the builtin that
describes it best, so ``except LookupError`` or ``except ValueError`` in user code keeps working.
Messages name the bad value, list the valid choices and say what to do instead.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = [
    "CalibrationError",
    "FileRefusedError",
    "IneligibleLinearError",
    "IneligibleShapeError",
    "InvalidParallelismError",
    "InvalidShapeError",
    "ModuleShapeError",
    "NoClosedFormError",
    "PerfModelError",
    "PerfModelWarning",
    "ProfileError",
    "UnknownFormatError",
    "UnknownGPUError",
    "UnknownLayerKindError",
    "UnknownLinearError",
    "UnknownNetworkError",
    "UnknownPresetError",
    "UnknownRecipeError",
    "UnsupportedFormatError",
    "UnsupportedLayerError",
    "choices_message",
]


class PerfModelError(Exception):
    """Base class of every error raised by perfmodel."""


class UnknownGPUError(PerfModelError, LookupError):
    """A GPU name, alias or device string that is not in the hardware table."""


class UnknownFormatError(PerfModelError, ValueError):
    """A number format (dtype) name that is not in the format registry."""


class UnknownRecipeError(PerfModelError, ValueError):
    """A float8 recipe name that is not in the recipe registry."""


class UnsupportedFormatError(PerfModelError, ValueError):
    """A known number format that a GPU (or an operation) has no rate for, e.g. mxfp8 on an H100."""


class InvalidShapeError(PerfModelError, ValueError):
    """A size that is zero, negative, not an integer, or not a number at all."""


class IneligibleShapeError(PerfModelError, ValueError):
    """A shape a float8 recipe cannot run (``K`` or ``N`` not a multiple of 16): keep it in bf16."""


class NoClosedFormError(PerfModelError, NotImplementedError):
    """A symbolic answer asked of a model that has no closed form for it (says which part has none)."""


class ProfileError(PerfModelError, ValueError):
    """A profile file that cannot be read: bad JSON, wrong layout, missing or non-numeric metrics."""


class UnsupportedLayerError(PerfModelError, ValueError):
    """A layer the step model does not price (MoE routing, MLA attention), or not a layer at all."""


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


class FileRefusedError(PerfModelError, OSError):
    """A file perfmodel will not read or write: not a regular file (a FIFO, device or folder), above
    the size limit, an output that exists (without ``force``), is one of the inputs, or lies in a
    folder that does not exist. The message names the file and says what to do."""


class UnknownNetworkError(PerfModelError, LookupError):
    """A network (inter-node fabric) name that is not in the table."""


class InvalidParallelismError(PerfModelError, ValueError):
    """A training configuration that cannot run: GPUs not divisible by the TP degree, heads not divisible by
    it, fewer than one sequence per rank, a collective on a GPU without a known interconnect, ..."""


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
