"""Symbolic float8 answers carry their eligibility: no substitution of a shape the numeric call refuses
(K or N not a multiple of 16) yields a speedup, a time or a True decision; masked arrays are refused."""

import math

import numpy as np
import pytest
import sympy as sp

import perfmodel as pm
from perfmodel import float8 as f8
from perfmodel._backend import FP8_INELIGIBLE_NAME, ineligible
from perfmodel.errors import IneligibleShapeError, MaskedInputError, PerfModelError

M, K, N = sp.symbols("M K N", positive=True, integer=True)
GPUS = ["H200", "B200", "MI300X"]
BAD = [8, 24, 4095, 50257]  # not multiples of 16
GOOD = [4096, 50272]


def _recipes(gpu):
    return [r for r in f8.supported_recipes(gpu) if r != "bf16"]


def _no_number(value) -> bool:
    """True where ``value`` is not a finite positive number and not True (what an ineligible shape must give)."""
    if value is True or value is sp.true:
        return False
    if value is False or value is sp.false:
        return True
    if isinstance(value, sp.Basic) and not value.is_number:
        with pytest.raises((IneligibleShapeError, TypeError)):
            float(value)
        return True
    return False


@pytest.mark.parametrize("gpu", GPUS)
def test_no_substitution_of_an_ineligible_shape_is_a_speedup_or_true(gpu):
    """The property: every recipe, a grid of ineligible K or N (with eligible partners and several M)."""
    checked = 0
    for recipe in _recipes(gpu):
        s = f8.speedup(M, K, N, recipe, gpu)
        u = f8.should_use(M, K, N, recipe, gpu, min_speedup=0.5)
        for i, bad in enumerate(BAD):
            for m in (1, 4096):
                good = GOOD[(i + m) % len(GOOD)]  # each bad value with each eligible partner across the M values
                for point in ({M: m, K: bad, N: good}, {M: m, K: good, N: bad}, {M: m, K: bad, N: bad}):
                    assert _no_number(s.xreplace(point)), (gpu, recipe, point)
                    assert _no_number(u.xreplace(point)), (gpu, recipe, point)
                    checked += 1
            with pytest.raises(IneligibleShapeError):  # the numeric call refuses the same shape
                f8.speedup(4096, bad, 4096, recipe, gpu)
        s_k = f8.speedup(4096, K, 4096, recipe, gpu)  # what the issue did: .subs on one symbol
        u_k = f8.should_use(4096, K, 4096, recipe, gpu)
        for bad in (1, 4095, 4097):
            assert _no_number(s_k.subs(K, bad)) and _no_number(u_k.subs(K, bad)), (gpu, recipe, bad)
    assert checked == len(_recipes(gpu)) * len(BAD) * 2 * 3


@pytest.mark.parametrize("gpu", ["H200", "B200"])
def test_eligible_substitutions_equal_the_numeric_answer(gpu):
    for recipe in _recipes(gpu):
        s = f8.speedup(M, K, N, recipe, gpu)
        u = f8.should_use(M, K, N, recipe, gpu)
        for m, k, n in [(4096, 4096, 4096), (8, 16, 50272)]:
            val = s.xreplace({M: m, K: k, N: n})
            assert val.is_number
            num = f8.speedup(m, k, n, recipe, gpu)
            assert float(val) == pytest.approx(num, rel=1e-9)
            assert bool(u.xreplace({M: m, K: k, N: n})) == f8.should_use(m, k, n, recipe, gpu)
        assert float(s.subs({M: 4096, K: 4096, N: 4096})) == pytest.approx(f8.speedup(4096, 4096, 4096, recipe, gpu))


def test_the_ineligible_value_is_named_and_refuses_to_be_a_number():
    s = f8.speedup(4096, K, 4096, "rowwise", "H200")
    assert isinstance(s, sp.Piecewise)
    assert FP8_INELIGIBLE_NAME in str(s)
    v = s.subs(K, 4095)
    assert v == ineligible() and str(v) == FP8_INELIGIBLE_NAME
    assert not v.free_symbols  # not a symbol a user lambdifies over
    for convert in (float, int, complex):
        with pytest.raises(IneligibleShapeError, match="multiples of 16"):
            convert(v)
    assert (v >= 1) is not sp.true
    assert "float8" in sp.latex(s)


def test_integer_multiples_of_16_are_eligible_without_substitution():
    j = sp.Symbol("j", positive=True, integer=True)
    s = f8.speedup(4096, 16 * j, 4096, "tensorwise", "H200")
    assert FP8_INELIGIBLE_NAME not in str(s)
    assert float(s.subs(j, 256)) == pytest.approx(f8.speedup(4096, 4096, 4096, "tensorwise", "H200"), rel=1e-9)


def test_linear_time_carries_the_condition():
    lt = f8.linear_time(M, K, 4096, "tensorwise", "H200")
    assert lt.eligible.subs(K, 4095) is sp.false and lt.eligible.subs(K, 4096) is sp.true
    assert "multiples of 16" in lt.ineligible_reason
    assert f8.linear_time(M, K, 4096, None, "H200").eligible is True  # bf16 runs anything
    lt16 = f8.linear_time(M, 4096, 4096, "tensorwise", "H200")
    assert lt16.ineligible_reason == ""


def test_gemm_time_of_an_fp8_gemm_carries_the_condition():
    t = pm.gemm_time_s(M, K, N, "fp8", "H200")
    assert _no_number(t.subs({M: 4096, K: 4095, N: 4096}))
    assert float(t.subs({M: 4096, K: 4096, N: 4096})) == pytest.approx(
        pm.gemm_time_s(4096, 4096, 4096, "fp8", "H200"), rel=1e-9
    )
    assert FP8_INELIGIBLE_NAME not in str(pm.gemm_time_s(M, K, N, "bf16", "H200"))


def test_break_even_closed_form_carries_the_condition():
    be = f8.break_even_tokens(K, N, "tensorwise", "H100-2.4TB", time_model="original")
    assert _no_number(be.subs({K: 4095, N: 4096}))
    assert _no_number(be.subs({K: 4096, N: 50257}))
    ok = be.subs({K: 8192, N: 8192})
    assert ok.is_number and math.isfinite(float(ok))


def test_lambdified_speedup_masks_ineligible_entries():
    s = f8.speedup(M, K, N, "tensorwise", "H200")
    f = pm.lambdify((M, K, N), s)
    out = f(np.array([4096.0, 4096.0]), np.array([4096.0, 4095.0]), np.array([4096.0, 4096.0]))
    assert isinstance(out, np.ma.MaskedArray) and list(out.mask) == [False, True]
    assert out[0] == pytest.approx(f8.speedup(4096, 4096, 4096, "tensorwise", "H200"), rel=1e-9)
    with pytest.raises(IneligibleShapeError):
        f(4096, 4095, 4096)
    with pytest.raises(NameError, match=FP8_INELIGIBLE_NAME):  # plain sympy.lambdify fails loudly, never NaN
        sp.lambdify((M, K, N), s)(4096.0, 4095.0, 4096.0)
    u = pm.lambdify((M, K, N), f8.should_use(M, K, N, "tensorwise", "H200"))
    assert list(u(np.array([4096.0, 4096.0]), np.array([4096.0, 4095.0]), np.array([4096.0, 4096.0]))) == [
        True,
        False,
    ]


# masked arrays: refused at the gate (one policy for every public function)


def _masked_input():
    return np.ma.masked_array([4096.0, 4096.0], mask=[False, True])


@pytest.mark.parametrize(
    "call",
    [
        lambda a: pm.gemm_time_s(a, 4096, 4096),
        lambda a: pm.gemm_flops(4096, a, 4096),
        lambda a: pm.gemm_bytes(4096, 4096, a),
        lambda a: f8.speedup(a, 4096, 4096, "tensorwise", "H200"),
        lambda a: f8.should_use(a, 4096, 4096, "tensorwise", "H200"),
        lambda a: f8.linear_time(4096, a, 4096, "tensorwise", "H200"),
        lambda a: f8.break_even_tokens(a, 4096, "tensorwise", "H200", max_tokens=4096),
        lambda a: f8.best_recipe(a, 4096, 4096, "H200"),
    ],
)
def test_masked_entries_are_refused_with_a_named_error(call):
    with pytest.raises(MaskedInputError, match="compressed"):
        call(_masked_input())


def test_break_even_masked_output_fed_back_into_speedup_is_refused():
    be = f8.break_even_tokens(np.array([4096, 4095]), np.array([4096, 4096]), "tensorwise", "H200", max_tokens=1 << 16)
    assert isinstance(be, np.ma.MaskedArray) and list(be.mask) == [False, True]
    with pytest.raises(MaskedInputError):
        f8.speedup(be, 4096, 4096, "tensorwise", "H200")
    ok = be.compressed()  # the documented way on
    s = f8.speedup(np.maximum(ok, 1), 4096, 4096, "tensorwise", "H200")
    assert np.all(np.isfinite(s))


def test_masked_array_without_masked_entries_is_its_data():
    a = np.ma.masked_array([4096.0, 8192.0], mask=[False, False])
    assert pm.gemm_time_s(a, 4096, 4096, "bf16", "H200") == pytest.approx(
        pm.gemm_time_s(np.array([4096.0, 8192.0]), 4096, 4096, "bf16", "H200"), rel=1e-12
    )


def test_masked_input_error_is_a_perfmodel_and_value_error():
    assert issubclass(MaskedInputError, PerfModelError) and issubclass(MaskedInputError, ValueError)


def test_symbolic_answers_pickle():
    import pickle

    s = f8.speedup(4096, K, 4096, "tensorwise", "H200")
    back = pickle.loads(pickle.dumps(s))
    assert back == s and back.subs(K, 4095) == ineligible()
    assert float(back.subs(K, 4096)) == pytest.approx(float(s.subs(K, 4096)), rel=1e-12)
