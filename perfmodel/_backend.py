"""Write a formula once, evaluate it on numbers, numpy arrays or sympy expressions.

``xp = namespace(M, K, N)`` picks the backend from the values themselves (the einops way):

* any ``sympy.Basic`` among them  -> :data:`SYMPY` (``Max``, ``Min``, ``ceiling``, ``Piecewise``),
  where ``ceiling``/``floor`` of a ratio print as exact integer division (``-(-(a*b) // 132)``), so
  ``sympy.lambdify`` evaluates a wave count exactly as ``.subs`` does (:func:`exact_ceiling`),
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
import warnings
from typing import Any

import numpy as np

from ._files import short_repr
from .errors import (
    ConflictingArgumentsError,
    IneligibleShapeError,
    InvalidShapeError,
    MaskedInputError,
    PerfModelError,
)

__all__ = [
    "FP8_INELIGIBLE_NAME",
    "MAX_SIZE",
    "NUMPY",
    "PYTHON",
    "SYMPY",
    "Namespace",
    "check_compatible",
    "check_flag",
    "check_nonnegative",
    "check_positive",
    "check_ratio",
    "check_shapes",
    "check_size",
    "describe_value",
    "exact_ceiling",
    "exact_floor",
    "guard_eligible",
    "ineligible",
    "is_symbolic",
    "lambdify",
    "namespace",
    "short_repr",
    "time_model_arg",
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


def describe_value(value: Any, unit: str = "") -> str:
    """A number, numpy array or sympy expression in a few words, for one-line reprs: seconds (``unit="s"``) as
    ``12.345 ms`` / ``67.8 us``; another number with 4 significant digits and ``unit``; an array as ``N values, lo to
    hi``; an expression as itself when short (``T``, ``2*T``), else ``a sympy expression in T, K`` (its free
    symbols). Never raises on a value a formula returns; anything else prints as its short repr."""
    if is_symbolic(value):
        text = str(value)
        syms = sorted(str(x) for x in getattr(value, "free_symbols", ()))
        if len(text) <= 40 or not syms:
            return short_repr(value, 40) if len(text) > 40 else text
        return f"a sympy expression in {', '.join(syms)}"
    if isinstance(value, np.ndarray) and value.ndim > 0:
        if value.size == 0:
            return "0 values"
        try:
            lo, hi = float(np.min(value)), float(np.max(value))
        except (TypeError, ValueError):
            return f"{value.size} values"
        return f"{value.size} values, {describe_value(lo, unit)} to {describe_value(hi, unit)}"
    try:
        v = float(value)
    except (TypeError, ValueError):
        return short_repr(value, 40)
    if unit == "s" and math.isfinite(v):
        return f"{v * 1e3:.3f} ms" if abs(v) >= 1e-3 else f"{v * 1e6:.1f} us"
    return f"{v:.4g}{' ' + unit if unit else ''}"


def _numbers(sp: Any, a: Any, b: Any) -> bool:
    """True where neither ``a`` nor ``b`` has a free symbol: sympy's ``Max`` / ``Min`` then evaluate as usual.
    With a symbol they are built unevaluated: evaluating asks sympy's assumptions which argument is larger
    (``Max._find_localzeros``), ~2/3 of the time of building a float8 speedup (0.35 s against 0.14 s for
    ``float8.speedup(M, K, N, "rowwise", "H200")``), and rarely drops an argument (the roofline terms of a time have
    no order that holds for every shape). Substituting numbers evaluates them, so every value is unchanged."""
    return not (isinstance(a, sp.Basic) and a.free_symbols) and not (isinstance(b, sp.Basic) and b.free_symbols)


class _Sympy(Namespace):
    name = "sympy"

    @staticmethod
    def _sp():
        import sympy

        return sympy

    def max(self, a, b):
        sp = self._sp()
        return sp.Max(a, b, evaluate=_numbers(sp, a, b))

    def min(self, a, b):
        sp = self._sp()
        return sp.Min(a, b, evaluate=_numbers(sp, a, b))

    def ceil(self, x):
        return exact_ceiling()(x)

    def floor(self, x):
        return exact_floor()(x)

    def where(self, cond, a, b):
        sp = self._sp()
        if cond is True or cond is sp.true:
            return a
        if cond is False or cond is sp.false:
            return b
        return sp.Piecewise((a, cond), (b, True))

    def log(self, x):
        return self._sp().log(x)


def _int_div_code(printer: Any, arg: Any, floor: bool) -> str | None:
    """``arg`` = numerator / integer denominator as exact floor division code, or None where it is no ratio."""
    num, den = arg.as_numer_denom()
    if not (den.is_Integer and den > 1):
        return None
    n = printer._print(num)
    return f"(({n}) // {den})" if floor else f"(-(-({n}) // {den}))"


def _exact_rounding_classes() -> tuple[type, type]:
    """sympy ``ceiling`` / ``floor`` subclasses whose code printers (``lambdify``'s numpy, math, mpmath...) write a
    ratio ``a*b/132`` as integer floor division, ``-(-(a*b) // 132)``, instead of ``ceil((1/132)*a*b)``: the
    float product by ``1/132`` is one ulp off at exact multiples (H200: 222 waves became 223), floor division of
    floats holding integers below 2**53 is exact. They are ``ceiling``/``floor`` for everything else (``.subs``,
    ``isinstance``, ``str``)."""
    import sympy

    class ceiling(sympy.ceiling):
        def _code(self, printer: Any) -> str:
            return _int_div_code(printer, self.args[0], False) or f"ceil({printer._print(self.args[0])})"

        def _numpycode(self, printer: Any) -> str:
            code = _int_div_code(printer, self.args[0], False)
            return code or f"{printer._module_format(printer._module + '.ceil')}({printer._print(self.args[0])})"

        _pythoncode = _mpmathcode = _code

        def _sympystr(self, printer: Any) -> str:
            return f"ceiling({printer._print(self.args[0])})"

    class floor(sympy.floor):
        def _code(self, printer: Any) -> str:
            return _int_div_code(printer, self.args[0], True) or f"floor({printer._print(self.args[0])})"

        def _numpycode(self, printer: Any) -> str:
            code = _int_div_code(printer, self.args[0], True)
            return code or f"{printer._module_format(printer._module + '.floor')}({printer._print(self.args[0])})"

        _pythoncode = _mpmathcode = _code

        def _sympystr(self, printer: Any) -> str:
            return f"floor({printer._print(self.args[0])})"

    return ceiling, floor


_ROUNDING: list[type] = []
#: Module attributes the lazily built sympy classes are reachable under (so expressions pickle and unpickle:
#: :func:`__getattr__` builds them on first access, e.g. in a fresh process).
_LAZY_CLASSES = ("_ExactCeiling", "_ExactFloor", "_Float8Ineligible")


def _rounding() -> list[type]:
    if not _ROUNDING:
        classes = _exact_rounding_classes()
        for cls, name in zip(classes, _LAZY_CLASSES[:2], strict=True):
            cls.__qualname__, cls.__module__ = name, __name__
        _ROUNDING.extend(classes)
    return _ROUNDING


def exact_ceiling() -> type:
    """The ``ceiling`` class the sympy backend builds expressions with (see :func:`_exact_rounding_classes`)."""
    return _rounding()[0]


def exact_floor() -> type:
    """The ``floor`` class the sympy backend builds expressions with (see :func:`_exact_rounding_classes`)."""
    return _rounding()[1]


def __getattr__(name: str) -> Any:
    if name == "_ExactCeiling":
        return exact_ceiling()
    if name == "_ExactFloor":
        return exact_floor()
    if name == "_Float8Ineligible":
        return type(ineligible())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: How a symbolic float8 answer prints where the shape cannot run in float8 (K or N not a multiple of 16).
FP8_INELIGIBLE_NAME = "float8_ineligible"
_INELIGIBLE: list[Any] = []


def ineligible() -> Any:
    """The value a symbolic float8 answer takes for a shape float8 cannot run: a named sympy atom, printed
    ``float8_ineligible``. It is no number: ``float()``/``int()`` of it raise
    :class:`~perfmodel.errors.IneligibleShapeError`, comparisons stay unevaluated, plain ``sympy.lambdify`` of an
    expression holding it fails with ``NameError: float8_ineligible`` (use :func:`lambdify`, which masks those
    entries). Never NaN, which a sum or a ``max`` would carry on silently."""
    if _INELIGIBLE:
        return _INELIGIBLE[0]
    import sympy

    class Float8Ineligible(sympy.core.expr.AtomicExpr):
        """Not a value: float8 cannot run this shape (``torch._scaled_mm`` needs K, N multiples of 16)."""

        is_number = False
        is_comparable = False

        def _hashable_content(self) -> tuple:
            return (FP8_INELIGIBLE_NAME,)

        def _sympystr(self, printer: Any) -> str:
            return FP8_INELIGIBLE_NAME

        def _latex(self, printer: Any) -> str:
            return r"\mathrm{float8\_ineligible}"

        def _code(self, printer: Any) -> str:
            return FP8_INELIGIBLE_NAME

        _numpycode = _pythoncode = _mpmathcode = _code

        def _eval_evalf(self, prec: int) -> Any:
            return self

        def _refuse(self, *_: Any) -> Any:
            raise IneligibleShapeError(
                "this symbolic float8 answer was substituted with a shape float8 cannot run (torch._scaled_mm needs "
                "K and N to be multiples of 16): there is no speedup; keep the Linear in bf16"
            )

        __float__ = __int__ = __complex__ = __index__ = _refuse

    Float8Ineligible.__qualname__, Float8Ineligible.__module__ = "_Float8Ineligible", __name__
    _INELIGIBLE.append(Float8Ineligible())
    return _INELIGIBLE[0]


def guard_eligible(value: Any, condition: Any) -> Any:
    """``value`` where the sympy ``condition`` (float8 eligibility) holds, :func:`ineligible` elsewhere:
    ``Piecewise((value, condition), (float8_ineligible, True))``; ``value`` itself where ``condition`` is True."""
    import sympy

    if condition is True or condition is sympy.true:
        return value
    if condition is False or condition is sympy.false:
        return ineligible()
    return sympy.Piecewise((value, condition), (ineligible(), True))


def lambdify(args: Any, expr: Any, modules: str = "numpy") -> Any:
    """``sympy.lambdify(args, expr, modules)`` for perfmodel's closed forms, evaluated exactly as ``.subs`` is.

    Integer rounding (tiles, waves, scale blocks) is printed as integer floor division by the sympy backend's
    ``ceiling``/``floor`` (so plain ``sympy.lambdify`` is exact too); this wrapper adds the float8 eligibility
    of symbolic float8 answers: where the inputs are a shape float8 cannot run (:func:`ineligible`), a scalar
    call raises :class:`~perfmodel.errors.IneligibleShapeError` and an array call returns a
    ``numpy.ma.MaskedArray`` masked there — never a number. Booleans (``should_use``) come back as they are.
    """
    import sympy

    marker = np.float64("nan")  # internal only: every NaN the function makes is an ineligible entry
    f = sympy.lambdify(args, expr, modules=[{FP8_INELIGIBLE_NAME: marker}, modules])

    def evaluate(*values: Any) -> Any:
        with np.errstate(invalid="ignore"):
            out = f(*values)
        arr = np.asarray(out)
        if arr.dtype.kind != "f" or not np.isnan(arr).any():
            return out
        if arr.ndim == 0:
            raise IneligibleShapeError(
                "float8 cannot run this shape (torch._scaled_mm needs K and N to be multiples of 16): no speedup; "
                "keep the Linear in bf16"
            )
        return np.ma.masked_array(np.where(np.isnan(arr), 0.0, arr), mask=np.isnan(arr))

    evaluate.__doc__ = f"perfmodel.lambdify of {short_repr(expr)} over {short_repr(args)}"
    evaluate.expr = expr  # type: ignore[attr-defined]
    return evaluate


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
    value = _unmasked(name, value)
    if is_symbolic(value):
        if getattr(value, "is_number", False):
            if (
                not value.is_comparable  # nan, zoo, I
                or value.is_finite is False
                or value.is_positive is False
                or (integer and value.is_integer is False)
            ):
                raise InvalidShapeError(f"{name} must be {valid}, got {short_repr(value)}")
            if float(value) > limit:
                raise InvalidShapeError(f"{name} must be {valid}, got {short_repr(value)}")
        elif not isinstance(value, sys.modules["sympy"].Expr):  # a relation, a boolean, a set...
            raise InvalidShapeError(f"{name} must be {valid} or a sympy expression, got {short_repr(value)}")
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
        if value.dtype.kind in "iu":  # whole and finite already: compare the ints themselves (exact, no rounding)
            bad = value <= 0
            if limit < 2**64:
                bad |= value > limit
        else:
            bad = ~np.isfinite(arr) | (arr <= 0) | (arr > limit)
            if integer:
                bad |= arr != np.floor(arr)
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
    """:func:`check_size` on the three sizes of a GEMM or Linear, naming each one, then :func:`check_compatible`;
    returns them normalised."""
    M, K, N = check_size("M", M), check_size("K", K), check_size("N", N)
    check_compatible(M=M, K=K, N=N)
    return M, K, N


def _unmasked(name: str, value: Any) -> Any:
    """The policy for ``numpy.ma.MaskedArray`` inputs, applied at the gate: one without masked entries is its
    data; one with masked entries is refused (:class:`~perfmodel.errors.MaskedInputError`) — a formula on
    its data would price the masked entries (break-even's masked output fed back into ``speedup`` gave
    1.6e-5x), and numpy drops masks in ``where``/``maximum``."""
    ma = sys.modules.get("numpy.ma")  # no masked array exists before numpy.ma loads: `np.ma` costs ~20 ms (#35)
    if ma is None or not isinstance(value, ma.MaskedArray):
        return value
    mask = np.ma.getmaskarray(value)
    if mask.any():
        raise MaskedInputError(
            f"{name} is a masked array with {int(mask.sum())} masked entr{'y' if mask.sum() == 1 else 'ies'} of "
            f"{mask.size}: perfmodel does not price masked entries; pass {name}.compressed() (the unmasked "
            f"entries) or {name}.filled(value)"
        )
    return np.ma.getdata(value)


def check_compatible(**values: Any) -> None:
    """Checked (already normalised) inputs of one formula that can be evaluated together: no numpy array mixed
    with a sympy expression (substitute numbers, or pass arrays only), and arrays that broadcast."""
    arrays = {k: v for k, v in values.items() if isinstance(v, np.ndarray) and v.ndim > 0}
    symbols = [k for k, v in values.items() if is_symbolic(v) and not getattr(v, "is_number", False)]
    if arrays and symbols:
        raise InvalidShapeError(
            f"{', '.join(arrays)} {'is an array' if len(arrays) == 1 else 'are arrays'} and {', '.join(symbols)} "
            f"symbolic: a formula takes either numbers/arrays or sympy expressions; substitute the symbols "
            "first, or lambdify the expression (perfmodel.lambdify) and call it on the arrays"
        )
    if len(arrays) > 1:
        try:
            np.broadcast_shapes(*(a.shape for a in arrays.values()))
        except ValueError:
            shapes = ", ".join(f"{k}{tuple(a.shape)}" for k, a in arrays.items())
            raise InvalidShapeError(
                f"arrays {shapes} do not broadcast together (numpy rules: trailing dimensions equal or 1)"
            ) from None


def check_positive(name: str, value: Any) -> Any:
    """:func:`check_size` for real-valued quantities (times, bytes, rates): positive, finite; no size limit."""
    return check_size(name, value, integer=False, limit=math.inf)


def check_nonnegative(name: str, value: Any) -> Any:
    """A finite real ``>= 0`` (FLOPs, bytes): numbers, numpy arrays or sympy; bools, inf and NaN refused."""
    value = _unmasked(name, value)
    if is_symbolic(value):
        if getattr(value, "is_number", False) and (
            not value.is_comparable or value.is_finite is False or value.is_negative
        ):
            raise InvalidShapeError(f"{name} must be a finite number >= 0, got {short_repr(value)}")
        if not isinstance(value, sys.modules["sympy"].Expr):  # a relation, a boolean, a set...
            raise InvalidShapeError(
                f"{name} must be a finite number >= 0 or a sympy expression, got {short_repr(value)}"
            )
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


def time_model_arg(time_model: Any, model: Any, where: str) -> Any:
    """The time model a public function was given: its ``time_model=``, or ``model=``, the keyword's old name
    (issue 32: ``model`` names networks only), which still works and warns :class:`DeprecationWarning` naming
    ``time_model=``. The one home of the rename: every function that took a time model as ``model=`` calls this.

    Raises:
        ConflictingArgumentsError: both given.
    """
    if model is None:
        return time_model
    if time_model is not None:
        raise ConflictingArgumentsError(
            f"{where}: pass the time model once, as time_model= (model= is its deprecated old name), not both"
        )
    warnings.warn(
        f"{where}(model=...) is deprecated: the time model's keyword is time_model= (model= names networks)",
        DeprecationWarning,
        stacklevel=3,
    )
    return model
