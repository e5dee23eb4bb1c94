"""Closed forms stay exact when lambdified: the sympy backend's ceiling/floor print as integer floor division,
so ``sympy.lambdify`` (and ``perfmodel.lambdify``) give what ``.subs`` and the numeric path give, wave for wave."""

import inspect
import itertools

import numpy as np
import pytest
import sympy as sp

import perfmodel as pm
from perfmodel import float8 as f8
from perfmodel._backend import SYMPY
from perfmodel.formats import get_format

M, K, N = sp.symbols("M K N", positive=True, integer=True)
SMS = pm.get_gpu("H200").num_sms


def _tiles():
    p = pm.time_model("H200").params_for(get_format("bf16"), None)
    return p.tile_m, p.tile_n


def _grid():
    """Shapes whose tile count is an exact multiple of the SM count (222 waves among them; all but the last two
    are products that ``ceil((1/132)*a*b)`` in floats puts one wave high), their neighbours
    one element up and down, and a few plain ones."""
    tm, tn = _tiles()
    assert SMS == 132
    shapes = []
    for a, b in [(148, 198), (11, 36), (11, 132), (88, 333), (66, 2), (19, 132)]:  # ceil((1/132)*a*b) is one high
        assert (a * b) % SMS == 0
        for dm, dn in itertools.product((-1, 0, 1), repeat=2):
            shapes.append((a * tm + dm, 4096, b * tn + dn))
    shapes += [(1281, 1, 29057), (1, 1, 1), (4096, 4096, 4096), (8, 50257, 4095)]
    return shapes


def test_the_printed_code_divides_integers_exactly():
    a, b = sp.symbols("a b", positive=True, integer=True)
    expr = SYMPY.cdiv(a * b, 132)
    assert str(expr) == "ceiling(a*b/132)" and expr.has(sp.ceiling)
    for modules in ("numpy", "math", "mpmath"):
        src = inspect.getsource(sp.lambdify((a, b), expr, modules))
        assert "//" in src and "1/132" not in src, (modules, src)
    f = sp.lambdify((a, b), expr, "numpy")
    # 29304 / 132 = 222 exactly; 29526 / 132 = 223.7
    assert f(222, 132) == 222 and f(222.0, 132.0) == 222 and f(222, 133) == 224
    arr = f(np.array([222.0, 1.0, 2.0 * 10**9]), np.array([132.0, 1.0, 66.0]))
    assert list(arr) == [222, 1, 10**9]
    assert SYMPY.floor(a * b / 132).subs({a: 222, b: 131}) == 220
    assert sp.lambdify((a, b), SYMPY.floor(a * b / 132))(222.0, 131.0) == 220


@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_lambdified_gemm_time_equals_subs_and_the_numeric_path(dtype):
    expr = pm.gemm_time_s(M, K, N, dtype, "H200")
    plain = sp.lambdify((M, K, N), expr, "numpy") if dtype == "bf16" else None
    ours = pm.lambdify((M, K, N), expr)
    shapes = [s for s in _grid() if dtype == "bf16" or (s[1] % 16 == 0 and s[2] % 16 == 0)]
    if dtype == "fp8":
        tm, tn = _tiles()
        shapes += [(148 * tm + d, 4096, 198 * tn) for d in (-1, 0, 1)]  # 198 * tn: a multiple of 16
    assert len(shapes) > 20
    m, k, n = (np.array(c, dtype=float) for c in zip(*shapes, strict=True))
    numeric = pm.gemm_time_s(m, k, n, dtype, "H200")
    lam = ours(m, k, n)
    for i, (mi, ki, ni) in enumerate(shapes):
        exact = float(expr.subs({M: mi, K: ki, N: ni}))
        assert lam[i] == pytest.approx(exact, rel=1e-12), (mi, ki, ni)
        assert numeric[i] == pytest.approx(exact, rel=1e-12), (mi, ki, ni)
        if plain is not None:
            assert plain(float(mi), float(ki), float(ni)) == pytest.approx(exact, rel=1e-12), (mi, ki, ni)


def test_the_222_wave_case_is_222_waves_lambdified():
    """148 x 198 tiles = 222 * 132: ceil(tiles / 132) is 222 in .subs, lambdified and numeric; the float form
    sympy's printers wrote before, ceil((1/132)*a*b), makes it 223."""
    import math

    assert math.ceil((1 / 132) * 148 * 198) == 223  # the bug this guards against
    tm, tn = _tiles()
    shape = (148 * tm, 4096, 198 * tn)
    expr = pm.gemm_time_s(M, K, N, "bf16", "H200")
    one_up = pm.gemm_time_s(148 * tm + 1, 4096, 198 * tn, "bf16", "H200")  # one more row of tiles: more waves
    exact = float(expr.subs(dict(zip((M, K, N), shape, strict=True))))
    assert exact == pytest.approx(pm.gemm_time_s(*shape, "bf16", "H200"), rel=1e-12)
    lam = sp.lambdify((M, K, N), expr)(*map(float, shape))
    assert lam == pytest.approx(exact, rel=1e-12)
    assert one_up > exact * (1 + 1e-4)  # the test could fail: the next wave count is a different time


def test_lambdified_speedup_equals_subs_on_a_grid():
    s = f8.speedup(M, K, N, "rowwise", "H200")
    f = pm.lambdify((M, K, N), s)
    tm, tn = _tiles()
    shapes = [(148 * tm, 4096, 198 * tn), (8, 4096, 50272), (4097, 8192, 28672), (1, 16, 16), (16384, 5120, 5120)]
    m, k, n = (np.array(c, dtype=float) for c in zip(*shapes, strict=True))
    out = f(m, k, n)
    for i, shp in enumerate(shapes):
        exact = float(s.xreplace(dict(zip((M, K, N), shp, strict=True))))
        assert out[i] == pytest.approx(exact, rel=1e-12)
        assert out[i] == pytest.approx(f8.speedup(*shp, "rowwise", "H200"), rel=1e-9)
