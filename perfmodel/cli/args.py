"""The CLI's argument types and shared options: positive numbers, comma lists, ``--gpu`` (with ``--calibration``
attached), ``--time-model``. Argument types raise :class:`argparse.ArgumentTypeError` (argparse prints the usage
line); the rest raise :class:`~perfmodel.errors.PerfModelError` (``perfmodel: error: ...``, exit 2)."""

from __future__ import annotations

import argparse
import dataclasses
import math
from typing import Any

from ..errors import PerfModelError

__all__ = [
    "_TIME_MODELS",
    "_add_calibration",
    "_add_gpu",
    "_add_time_model",
    "_gpu",
    "_list",
    "_positive_float",
    "_positive_int",
    "_split",
]

_TIME_MODELS = ("roofline", "original", "calibrated", "tiles")


def _positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a positive finite number, got {text!r}")
    return value


def _split(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def _list(flag: str, text: str | None, example: str) -> list[str] | None:
    """A comma-separated option: ``None`` when not given; an empty list is an error naming the flag."""
    if text is None:
        return None
    items = _split(text)
    if not items:
        raise PerfModelError(f"{flag} {text!r} is empty: pass e.g. {flag} {example}")
    return items


def _gpu(args: argparse.Namespace) -> Any:
    """``--gpu``, with ``--calibration FILE`` attached (``dataclasses.replace(gpu, calibration=...)``)."""
    from ..specs.gpu import get_gpu

    spec = get_gpu(args.gpu)
    if args.calibration is None:
        return spec
    if args.time_model in ("roofline", "original", "tiles"):
        raise PerfModelError(
            f"--calibration uses your fit, --time-model {args.time_model} ignores it: pass one of them "
            "(or --time-model calibrated)"
        )
    from ..models.calibrated import load_calibration  # only here: the CLI's import stays light

    return dataclasses.replace(spec, calibration=load_calibration(args.calibration))


def _add_gpu(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpu", default="H100", help="GPU name or alias (default: H100 = H100-SXM); see `perfmodel gpus`")


def _add_calibration(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--calibration",
        metavar="FIT.json",
        default=None,
        help="your own calibration (written by `perfmodel calibrate`) attached to --gpu; same architecture only",
    )


def _add_time_model(p: argparse.ArgumentParser, *flags: str) -> None:
    p.add_argument(
        *(flags or ("--time-model",)),
        dest="time_model",
        default=None,
        choices=_TIME_MODELS,
        help="time model (default: the GPU's calibration if it has one, else roofline)",
    )
