"""The backend shim: one formula, three evaluators, and size validation."""

from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel._backend import (
    MAX_SIZE,
    NUMPY,
    PYTHON,
    SYMPY,
    check_flag,
    check_nonnegative,
    check_positive,
    check_ratio,
    check_size,
    namespace,
)
from perfmodel.errors import InvalidShapeError, PerfModelError


def formula(M, K, N):
    """A formula using every operation, written once."""
    xp = namespace(M, K, N)
    tiles = xp.cdiv(M, 128) * xp.cdiv(N, 256)
    padded = xp.round_up(K, 64)
    return xp.max(tiles * padded, xp.min(M * N, K)) + xp.where(M > N, xp.ceil(M / 3), xp.floor(N / 3)) + xp.log(1 + K)


def test_namespace_picks_backend_from_values():
    assert namespace(1, 2.0) is PYTHON
    assert namespace(1, np.int64(3)) is NUMPY
    assert namespace(np.arange(3), 1) is NUMPY
    assert namespace(np.arange(3), sp.Symbol("x")) is SYMPY
    assert namespace() is PYTHON


def test_python_cdiv_is_exact_for_big_ints():
    big = 10**30 + 1
    assert PYTHON.cdiv(big, 10) == 10**29 + 1
    assert isinstance(PYTHON.cdiv(7, 2), int) and PYTHON.cdiv(7, 2) == 4


sizes = st.integers(min_value=1, max_value=100_000)


@settings(max_examples=60, deadline=None)
@given(sizes, sizes, sizes)
def test_sympy_substituted_equals_numeric(M, K, N):
    m, k, n = sp.symbols("M K N", positive=True, integer=True)
    expr = formula(m, k, n)
    assert float(expr.subs({m: M, k: K, n: N})) == pytest.approx(formula(M, K, N), rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(sizes, sizes, sizes), min_size=1, max_size=20))
def test_numpy_grid_equals_scalar_loop(shapes):
    M, K, N = (np.array(c) for c in zip(*shapes, strict=True))
    grid = formula(M, K, N)
    assert grid.shape == (len(shapes),)
    for value, (m, k, n) in zip(grid, shapes, strict=True):
        assert value == pytest.approx(formula(m, k, n), rel=1e-12)


def test_sympy_max_and_min_of_symbols_stay_unevaluated_and_substitute_to_the_numbers():
    x, y = sp.symbols("x y", positive=True)
    big = SYMPY.max(2 * x + 1, x)  # sympy would prove the first larger; built unevaluated, both stay
    assert isinstance(big, sp.Max) and set(big.args) == {2 * x + 1, x}
    assert isinstance(SYMPY.min(x, y), sp.Min)
    for value in (0.25, 3, 10**6):
        assert big.subs(x, value) == 2 * value + 1  # substituting numbers evaluates: the same value
        assert SYMPY.min(x, 2 * x).subs(x, value) == value
    assert SYMPY.max(sp.Integer(2), sp.Rational(7, 2)) == sp.Rational(7, 2)  # numbers evaluate at once
    assert SYMPY.min(3, sp.Float(1.5)) == sp.Float(1.5)
    assert sp.lambdify(x, big)(4.0) == 9.0


def test_sympy_where_folds_known_conditions():
    x = sp.Symbol("x")
    assert SYMPY.where(True, x, 0) == x
    assert SYMPY.where(sp.false, x, 0) == 0
    assert isinstance(SYMPY.where(x > 1, x, 0), sp.Piecewise)


@pytest.mark.parametrize(
    "bad",
    [0, -1, 1.5, float("nan"), float("inf"), True, None, "4096", [1, 2], 1j, 10**400, MAX_SIZE + 1, np.bool_(True)],
)
def test_check_size_rejects(bad):
    with pytest.raises(InvalidShapeError, match="M must be a positive integer"):
        check_size("M", bad)


def test_check_size_accepts_and_normalises():
    assert check_size("M", 4096) == 4096
    assert check_size("M", 4096.0) == 4096.0
    assert check_size("M", Fraction(8, 2)) == 4 and type(check_size("M", Fraction(8, 2))) is int
    for dtype in (np.int8, np.int16, np.int32, np.uint32, np.int64, np.uint64, np.float16, np.float32):
        got = check_size("M", np.array([1, 2, 100], dtype=dtype))
        assert got.dtype == np.float64 and list(got) == [1, 2, 100]  # no int32 wrap-around, no float16 rounding
        assert check_size("M", dtype(100)) == 100 and type(check_size("M", dtype(100))) in (int, float)
    assert check_size("M", sp.Symbol("M")) == sp.Symbol("M")
    assert check_size("M", sp.Integer(4096)) == sp.Integer(4096)
    assert check_positive("t", 1.5e-6) == 1.5e-6
    assert check_positive("t", 1e300) == 1e300  # no size limit on times


def test_huge_and_long_inputs_give_short_named_errors():
    with pytest.raises(InvalidShapeError, match=r"up to 1\.1e\+12"):
        check_size("M", np.array([MAX_SIZE * 2], dtype=np.uint64))
    with pytest.raises(InvalidShapeError) as err:
        check_size("M", "x" * 5_000_000)
    assert len(str(err.value)) < 500
    with pytest.raises(InvalidShapeError):
        check_nonnegative("flops", float("inf"))
    with pytest.raises(InvalidShapeError):
        check_nonnegative("flops", True)
    with pytest.raises(PerfModelError, match="True or False"):
        check_flag("dynamic_shapes", "yes")
    for bad in (0, -1, float("nan"), float("inf"), True, "2"):
        with pytest.raises(PerfModelError, match="min_speedup must be a positive"):
            check_ratio("min_speedup", bad)


def test_check_size_arrays_and_symbols():
    with pytest.raises(InvalidShapeError, match=r"1 element\(s\) are not, e.g. 0"):
        check_size("K", np.array([1, 0, 3]))
    with pytest.raises(InvalidShapeError, match="everywhere"):
        check_size("K", np.array([1.0, 2.5]))
    with pytest.raises(InvalidShapeError, match="empty"):
        check_size("K", np.array([], dtype=int))
    with pytest.raises(InvalidShapeError, match="dtype"):
        check_size("K", np.array(["a"]))
    with pytest.raises(InvalidShapeError, match="non-positive"):
        check_size("K", sp.Symbol("k", negative=True))
    with pytest.raises(InvalidShapeError):
        check_size("K", sp.Integer(-3))
    with pytest.raises(InvalidShapeError):
        check_size("K", sp.Rational(3, 2))
