"""Which fitted group prices a GEMM: group keys, the fallback kernels of misaligned 16-bit GEMMs, borrowed fits."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._backend import namespace
from ...counting import ALIGN, misaligned
from ...formats import Format

__all__ = ["CAST_LIKE", "FALLBACK", "fallback_kernels", "fallback_key"]


def _key(fmt: Format, scaling: str | None, layout: str = "rc") -> str:
    """Group key: ``bf16``, ``fp8_e4m3/rowwise``; a layout other than ``rc`` adds ``@rr`` / ``@cr``."""
    base = fmt.name if scaling is None else f"{fmt.name}/{scaling}"
    return base if layout == "rc" else f"{base}@{layout}"


def _fmt_of(key: str) -> str:
    """The format name of a group key (``bf16@rr`` -> ``bf16``; ``fp8_e4m3/rowwise`` -> ``fp8_e4m3``)."""
    return key.split("@")[0].split("/")[0]


#: Group-key suffix of the kernels cuBLAS falls back to when a 16-bit GEMM's leading dimensions are not
#: multiples of 8 (:data:`ALIGN`): pre-Hopper CUTLASS kernels (sm75 ``align1``, sm80 ``align2``/``align4``),
#: a different kernel class with its own rate, tile and latency (``bf16@fallback``).
FALLBACK = "fallback"


def fallback_key(fmt_name: str) -> str:
    """The fallback group of a 16-bit format: ``bf16@fallback``."""
    return f"{fmt_name}@{FALLBACK}"


def fallback_kernels(M: Any, K: Any, a: Any, b: Any) -> Any:
    """Whether cuBLAS runs its pre-Hopper fallback kernels for a 16-bit GEMM of ``M`` rows and reduction ``K``
    whose layout's leading dimensions are ``a``, ``b``: they are :func:`misaligned` and the GEMM has more than one
    row (one row runs cuBLAS's Hopper or gemv kernels), or K < :data:`ALIGN` — measured on every H200 layout sweep
    of 2026-12-01 (``python benchmarks/validate.py kernel-choice``). A bool, a bool array, or a sympy condition."""
    if namespace(M, K, a, b).name == "sympy":
        import sympy

        return sympy.Or(sympy.And(misaligned(a, b), sympy.Ne(M, 1)), sympy.Lt(K, ALIGN))
    out = (np.asarray(misaligned(a, b)) & (np.asarray(M) != 1)) | (np.asarray(K) < ALIGN)
    return out if any(isinstance(x, np.ndarray) for x in (M, K, a, b)) else bool(out)


def _select(cond: Any, if_true: Any, if_false: Any) -> Any:
    """``if_true`` where ``cond`` holds, else ``if_false``: numbers, arrays, or a sympy ``Piecewise``."""
    if namespace(if_true, if_false).name == "sympy" or type(cond).__module__.startswith("sympy"):
        import sympy

        return sympy.Piecewise((if_true, cond), (if_false, True))
    if isinstance(cond, np.ndarray):
        return np.where(cond, if_true, if_false)
    return if_true if cond else if_false


#: Recipes without a cast fit borrow the fit of the measured recipe whose kernels do the same work:
#: per-group amax and cast along rows and along columns (with a transposed copy), bf16 in, fp8 out.
CAST_LIKE: dict[str, str] = {"mxfp8": "rowwise", "blockwise": "rowwise"}

# Formats and scalings without their own fit borrow a measured one (same tensor-core path).
_BORROW = {"fp16": "bf16", "fp8_e5m2": "fp8_e4m3"}
_BORROW_SCALING = {"blockwise": "rowwise"}
