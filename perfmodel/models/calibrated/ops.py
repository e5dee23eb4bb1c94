"""The arithmetic :meth:`GemmParams.compute_s` is written in, two ways: on any values (numbers, arrays, sympy) and in
place on float64 arrays of one shape.

The GEMM formula is written once (:meth:`perfmodel.models.calibrated.GemmParams.compute_s`) in the few operations
below. :data:`FUNCTIONAL` evaluates them with the backend of the values (:func:`perfmodel._backend.namespace`:
python numbers, numpy, sympy expressions); :data:`INPLACE` evaluates them on float64 numpy arrays into two buffers
of the grid's shape instead of a temporary per operation.

Contract of :data:`INPLACE`: an operation may overwrite its first argument (or write ``into=``), so the formula
passes as first argument only a value an earlier operation returned, never an input; ``cdiv`` and
``add(x, c, into=)`` read inputs. On arrays the two give the same floats (a multiply by the reciprocal of a power
of two is the exact division, and a multiply is ~3x cheaper than a divide).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._backend import namespace

__all__ = ["FUNCTIONAL", "INPLACE", "Functional", "InPlace"]


def _power_of_two(d: Any) -> bool:
    return isinstance(d, int) and d > 0 and d & (d - 1) == 0


class Functional:
    """The formula's operations on any values: a new value each (``into`` is ignored)."""

    def cdiv(self, x: Any, d: int, into: Any = None) -> Any:
        """``ceil(x / d)`` (exact on python ints)."""
        return namespace(x).cdiv(x, d)

    def mul(self, a: Any, b: Any) -> Any:
        return a * b

    def add(self, a: Any, b: Any, into: Any = None) -> Any:
        return a + b

    def min(self, a: Any, c: float, into: Any = None) -> Any:
        """``min(a, c)``; ``a`` itself where ``c`` is infinite."""
        return a if c == math.inf else namespace(a).min(a, c)

    def times_log(self, x: Any, c: float) -> Any:
        """``c · ln(x)``."""
        return c * namespace(x).log(x)


class InPlace(Functional):
    """The formula's operations on float64 numpy arrays of one shape, written into the first argument or ``into``."""

    def cdiv(self, x: np.ndarray, d: int, into: np.ndarray | None = None) -> np.ndarray:
        out = np.empty_like(x) if into is None else into
        if _power_of_two(d):  # x · (1/d) is exactly x / d, and a multiply is ~3x cheaper than a divide
            np.multiply(x, 1.0 / d, out=out)
        else:
            np.divide(x, d, out=out)
        return np.ceil(out, out=out)

    def mul(self, a: np.ndarray, b: Any) -> np.ndarray:
        return np.multiply(a, b, out=a)

    def add(self, a: np.ndarray, b: Any, into: np.ndarray | None = None) -> np.ndarray:
        return np.add(a, b, out=a if into is None else into)

    def min(self, a: np.ndarray, c: float, into: np.ndarray | None = None) -> np.ndarray:
        out = np.empty_like(a) if into is None else into
        if c == math.inf:
            np.copyto(out, a)
            return out
        return np.minimum(a, c, out=out)

    def times_log(self, x: np.ndarray, c: float) -> np.ndarray:
        np.log(x, out=x)
        return np.multiply(x, c, out=x)


FUNCTIONAL = Functional()
INPLACE = InPlace()
