"""Write a formula once, evaluate it on numbers, numpy arrays or sympy expressions.

``xp = namespace(M, K, N)`` picks the backend from the values themselves (the einops way):

* any ``sympy.Basic`` among them  -> :data:`SYMPY` (``Max``, ``Min``, ``ceiling``, ``Piecewise``),
* else any ``numpy.ndarray`` / numpy scalar -> :data:`NUMPY` (elementwise, broadcasting),
* else plain ``int``/``float``  -> :data:`PYTHON` (builtins and :mod:`math`; ints stay exact).

sympy is never imported here: a value can only be a sympy expression if the user already
imported sympy, so we look it up in :data:`sys.modules`.

The module also holds the input gate — :func:`check_size` and friends — the one place where
user-given values are validated and normalised (any numpy integer/float dtype -> float64, so no
int32 overflow or float16 rounding reaches a formula) for every backend.
"""

from __future__ import annotations

import math
import numbers
import sys
from typing import Any

import numpy as np

from ._files import short_repr
from .errors import InvalidShapeError, PerfModelError

__all__ = [
    "MAX_SIZE",
    "NUMPY",
    "PYTHON",
    "SYMPY",
    "Namespace",
    "check_flag",
    "check_nonnegative",
    "check_positive",
    "check_ratio",
    "check_shapes",
    "check_size",
    "is_symbolic",
    "namespace",
    "short_repr",
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


#: The largest size (M, K, N, tokens) perfmodel models: 2**40 ≈ 1.1e12. Products of three sizes stay far
#: inside float64's range, and a time model fitted on kernels of microseconds to tens of milliseconds is
#: not extrapolated to sizes that would take days.
MAX_SIZE = 2**40


def check_size(name: str, value: Any, *, integer: bool = True, limit: float = MAX_SIZE) -> Any:
    """The input gate of every size argument: validate it and return it normalised.

    Accepted, and returned as:

    * Python ``int``, ``fractions.Fraction``, whole ``float`` (``4096.0``), numpy integer or float
      scalars of any dtype -> a Python ``int`` (or ``float`` where ``integer=False``);
    * numpy arrays of any integer or float dtype (``int8`` … ``uint64``, ``float16`` … ``float64``) ->
      a ``float64`` array (exact for every size up to 2**53, and no intermediate product can wrap
      around or lose range as int32 or float16 would);
    * sympy expressions: a symbol is taken on trust (unless declared non-positive); a sympy number is
      checked and kept as sympy.

    With ``integer=False`` any positive finite real passes (times, byte counts, rates).

    Raises:
        InvalidShapeError: zero, negative, non-integer (when ``integer``), NaN/inf, above ``limit``,
            bool, or not a number (strings, lists, complex...); the message names the argument, shows
            the value (shortened) and says what is valid.
    """
    kind = "a positive integer" if integer else "a positive number"
    valid = f"{kind} up to {limit:.3g}" if limit != math.inf else kind
    if is_symbolic(value):
        if getattr(value, "is_number", False):
            if value.is_real is False or value.is_positive is False or (integer and value.is_integer is False):
                raise InvalidShapeError(f"{name} must be {valid}, got {short_repr(value)}")
            if float(value) > limit:
                raise InvalidShapeError(f"{name} must be {valid}, got {short_repr(value)}")
        elif value.is_positive is False:  # e.g. a symbol declared negative=True
            raise InvalidShapeError(f"{name} must be {kind}, got {short_repr(value)} (declared non-positive)")
        return value
    if isinstance(value, (bool, np.bool_)) or value is None:
        raise InvalidShapeError(f"{name} must be {valid}, got {value!r}")
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "iuf":
            raise InvalidShapeError(
                f"{name} must be {valid}: an array of integers or floats, got dtype {value.dtype} {short_repr(value)}"
            )
        if value.size == 0:
            raise InvalidShapeError(f"{name} is an empty array; give at least one size")
        arr = value.astype(np.float64)
        bad = ~np.isfinite(arr) | (arr <= 0) | (arr > limit)
        if integer:
            bad |= arr != np.floor(arr)
        if value.dtype.kind in "iu":  # a float64 conversion of a huge int64 could round into range
            bad |= value.astype(object) > limit
        if bad.any():
            first = value.reshape(-1)[np.flatnonzero(bad.reshape(-1))[0]]
            raise InvalidShapeError(
                f"{name} must be {valid} everywhere; {int(bad.sum())} element(s) are not, e.g. {first.item()!r}"
            )
        return arr
    if isinstance(value, np.generic):
        if value.dtype.kind not in "iuf":
            raise InvalidShapeError(f"{name} must be {valid}, got {type(value).__name__} {short_repr(value)}")
        value = value.item()
    if not isinstance(value, numbers.Real):
        raise InvalidShapeError(
            f"{name} must be {valid} (int, float, numpy scalar or array, sympy expression), "
            f"got {type(value).__name__} {short_repr(value)}"
        )
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int too large for a float
        finite = False
    if not finite or value <= 0 or value > limit or (integer and value != math.floor(value)):
        raise InvalidShapeError(f"{name} must be {valid}, got {short_repr(value)}")
    if integer:
        return int(value) if not isinstance(value, float) else value
    return float(value)


def check_shapes(M: Any, K: Any, N: Any) -> tuple[Any, Any, Any]:
    """:func:`check_size` on the three sizes of a GEMM or Linear, naming each one; returns them normalised."""
    return check_size("M", M), check_size("K", K), check_size("N", N)


def check_positive(name: str, value: Any) -> Any:
    """:func:`check_size` for real-valued quantities (times, bytes, rates): positive, finite; no size limit."""
    return check_size(name, value, integer=False, limit=math.inf)


def check_nonnegative(name: str, value: Any) -> Any:
    """A finite real ``>= 0`` (FLOPs, bytes): numbers, numpy arrays or sympy; bools, inf and NaN refused."""
    if is_symbolic(value):
        if getattr(value, "is_number", False) and (value.is_real is False or value.is_negative):
            raise InvalidShapeError(f"{name} must be a finite number >= 0, got {short_repr(value)}")
        return value
    if isinstance(value, (bool, np.bool_)) or value is None:
        raise InvalidShapeError(f"{name} must be a finite number >= 0, got {value!r}")
    if isinstance(value, (np.ndarray, np.generic)):
        if value.dtype.kind not in "iuf" or value.size == 0:
            raise InvalidShapeError(f"{name} must be finite numbers >= 0, got dtype {value.dtype} {short_repr(value)}")
        arr = np.asarray(value, dtype=np.float64)
        if not bool(np.all(np.isfinite(arr) & (arr >= 0))):
            raise InvalidShapeError(f"{name} must be finite numbers >= 0 everywhere, got {short_repr(value)}")
        return arr if isinstance(value, np.ndarray) else float(arr)
    if not isinstance(value, numbers.Real):
        raise InvalidShapeError(f"{name} must be a finite number >= 0, got {type(value).__name__} {short_repr(value)}")
    try:
        ok = math.isfinite(value) and value >= 0
    except OverflowError:
        ok = False
    if not ok:
        raise InvalidShapeError(f"{name} must be a finite number >= 0, got {short_repr(value)}")
    return value


def check_flag(name: str, value: Any) -> bool:
    """A boolean option (``True``/``False``, numpy bool); anything else is a named error."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise PerfModelError(f"{name} must be True or False, got {type(value).__name__} {short_repr(value)}")


def check_ratio(name: str, value: Any) -> float:
    """A positive finite real option such as ``min_speedup``; bools, NaN, inf, zero and negatives refused."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise PerfModelError(f"{name} must be a positive number, got {type(value).__name__} {short_repr(value)}")
    v = float(value)
    if not math.isfinite(v) or v <= 0:
        raise PerfModelError(f"{name} must be a positive finite number, got {short_repr(value)}")
    return v
