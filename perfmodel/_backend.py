"""Write a formula once, evaluate it on numbers, numpy arrays or sympy expressions.

``xp = namespace(M, K, N)`` picks the backend from the values themselves (the einops way):

* any ``sympy.Basic`` among them  -> :data:`SYMPY` (``Max``, ``Min``, ``ceiling``, ``Piecewise``),
* else any ``numpy.ndarray`` / numpy scalar -> :data:`NUMPY` (elementwise, broadcasting),
* else plain ``int``/``float``  -> :data:`PYTHON` (builtins and :mod:`math`; ints stay exact).

sympy is never imported here: a value can only be a sympy expression if the user already
imported sympy, so we look it up in :data:`sys.modules`.

The module also holds :func:`check_size` / :func:`check_positive`, the one place where
user-given sizes are validated for every backend.
"""

from __future__ import annotations

import math
import numbers
import sys
from typing import Any

import numpy as np

from .errors import InvalidShapeError

__all__ = [
    "NUMPY",
    "PYTHON",
    "SYMPY",
    "Namespace",
    "check_positive",
    "check_shapes",
    "check_size",
    "is_symbolic",
    "namespace",
]


def is_symbolic(value: object) -> bool:
    """True when ``value`` is a sympy object (without importing sympy)."""
    sympy = sys.modules.get("sympy")
    return sympy is not None and isinstance(value, sympy.Basic)


class Namespace:
    """The operations a formula may use; one instance per backend."""

    name = "abstract"

    def max(self, a: Any, b: Any) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def min(self, a: Any, b: Any) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def ceil(self, x: Any) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def floor(self, x: Any) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def where(self, cond: Any, a: Any, b: Any) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def log(self, x: Any) -> Any:  # pragma: no cover - interface
        """Natural logarithm."""
        raise NotImplementedError

    def cdiv(self, a: Any, b: Any) -> Any:
        """Ceiling division ``ceil(a / b)``: tiles needed to cover ``a`` with tiles of ``b``."""
        return self.ceil(a / b)

    def round_up(self, a: Any, b: Any) -> Any:
        """``a`` rounded up to a multiple of ``b`` (padding to a tile or block size)."""
        return self.cdiv(a, b) * b

    def __repr__(self) -> str:
        return f"<perfmodel backend {self.name}>"


class _Python(Namespace):
    name = "python"

    def max(self, a, b):
        return a if a >= b else b

    def min(self, a, b):
        return a if a <= b else b

    def ceil(self, x):
        return math.ceil(x)

    def floor(self, x):
        return math.floor(x)

    def where(self, cond, a, b):
        return a if cond else b

    def log(self, x):
        return math.log(x)

    def cdiv(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return -(-a // b)  # exact for big ints, no float rounding
        return math.ceil(a / b)


class _Numpy(Namespace):
    name = "numpy"

    def max(self, a, b):
        return np.maximum(a, b)

    def min(self, a, b):
        return np.minimum(a, b)

    def ceil(self, x):
        return np.ceil(x)

    def floor(self, x):
        return np.floor(x)

    def where(self, cond, a, b):
        return np.where(cond, a, b)

    def log(self, x):
        return np.log(x)


class _Sympy(Namespace):
    name = "sympy"

    @staticmethod
    def _sp():
        import sympy

        return sympy

    def max(self, a, b):
        return self._sp().Max(a, b)

    def min(self, a, b):
        return self._sp().Min(a, b)

    def ceil(self, x):
        return self._sp().ceiling(x)

    def floor(self, x):
        return self._sp().floor(x)

    def where(self, cond, a, b):
        sp = self._sp()
        if cond is True or cond is sp.true:
            return a
        if cond is False or cond is sp.false:
            return b
        return sp.Piecewise((a, cond), (b, True))

    def log(self, x):
        return self._sp().log(x)


PYTHON: Namespace = _Python()
NUMPY: Namespace = _Numpy()
SYMPY: Namespace = _Sympy()


def namespace(*values: Any) -> Namespace:
    """The backend for a formula over ``values`` (sympy > numpy > python, see module doc)."""
    backend = PYTHON
    for v in values:
        if is_symbolic(v):
            return SYMPY
        if isinstance(v, (np.ndarray, np.generic)):
            backend = NUMPY
    return backend


def check_size(name: str, value: Any, *, integer: bool = True) -> Any:
    """Validate a size argument and return it unchanged (floats that are whole stay floats).

    Accepts positive ``int``, whole ``float`` (``4096.0``), numpy arrays of those, and sympy
    expressions (a symbol is taken on trust; a sympy number is checked). With
    ``integer=False`` any positive finite real passes (used for times and byte counts).

    Raises:
        InvalidShapeError: zero, negative, non-integer (when ``integer``), NaN/inf, bool or
            non-numeric values; the message names the argument and the value.
    """
    kind = "a positive integer" if integer else "a positive number"
    if is_symbolic(value):
        if getattr(value, "is_number", False):
            if value.is_positive is False or (integer and value.is_integer is False):
                raise InvalidShapeError(f"{name} must be {kind}, got {value!r}")
        elif value.is_positive is False:  # e.g. a symbol declared negative=True
            raise InvalidShapeError(f"{name} must be {kind}, got {value!r} (declared non-positive)")
        return value
    if isinstance(value, (bool, np.bool_)) or value is None:
        raise InvalidShapeError(f"{name} must be {kind}, got {value!r}")
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        if arr.dtype.kind not in "iuf":
            raise InvalidShapeError(f"{name} must be {kind} (array of numbers), got dtype {arr.dtype}")
        if arr.size == 0:
            raise InvalidShapeError(f"{name} is an empty array")
        bad = ~np.isfinite(arr) | (arr <= 0)
        if integer and arr.dtype.kind == "f":
            bad |= arr != np.floor(arr)
        if bad.any():
            first = arr.reshape(-1)[np.flatnonzero(bad.reshape(-1))[0]]
            raise InvalidShapeError(
                f"{name} must be {kind} everywhere; {int(bad.sum())} element(s) are not, e.g. {first.item()!r}"
            )
        return value
    if not isinstance(value, numbers.Real):
        raise InvalidShapeError(f"{name} must be {kind}, got {type(value).__name__} {value!r}")
    if not math.isfinite(value) or value <= 0 or (integer and value != math.floor(value)):
        raise InvalidShapeError(f"{name} must be {kind}, got {value!r}")
    return value


def check_shapes(M: Any, K: Any, N: Any) -> None:
    """:func:`check_size` on the three sizes of a GEMM or Linear, naming each one."""
    check_size("M", M)
    check_size("K", K)
    check_size("N", N)


def check_positive(name: str, value: Any) -> Any:
    """:func:`check_size` for real-valued quantities (times, bytes, rates): positive, finite."""
    return check_size(name, value, integer=False)
