"""The backend shim: one formula, three evaluators, and size validation."""

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel._backend import NUMPY, PYTHON, SYMPY, check_positive, check_size, namespace
from perfmodel.errors import InvalidShapeError


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


def test_sympy_where_folds_known_conditions():
    x = sp.Symbol("x")
    assert SYMPY.where(True, x, 0) == x
    assert SYMPY.where(sp.false, x, 0) == 0
    assert isinstance(SYMPY.where(x > 1, x, 0), sp.Piecewise)


@pytest.mark.parametrize("bad", [0, -1, 1.5, float("nan"), float("inf"), True, None, "4096", [1, 2]])
def test_check_size_rejects(bad):
    with pytest.raises(InvalidShapeError, match="M must be a positive integer"):
        check_size("M", bad)


def test_check_size_accepts():
    assert check_size("M", 4096) == 4096
    assert check_size("M", 4096.0) == 4096.0
    arr = np.array([1, 2, 3])
    assert check_size("M", arr) is arr
    assert check_size("M", sp.Symbol("M")) == sp.Symbol("M")
    assert check_positive("t", 1.5e-6) == 1.5e-6


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
