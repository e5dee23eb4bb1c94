"""Property tests over the public API: one answer whatever the input's type, finite and positive for valid
input, and only perfmodel's named errors for invalid input (never a raw TypeError, OverflowError, NaN...)."""

import functools
import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import perfmodel as pm
from perfmodel import float8 as f8
from perfmodel.errors import IneligibleShapeError, PerfModelError

GPUS = ["H200", "H100", "H100-PCIe", "H20", "A100", "B200", "MI300X", "L40S"]
FP8_GPUS = [g for g in GPUS if pm.get_gpu(g).supports("fp8")]
RECIPES = ["tensorwise", "rowwise", "rowwise_with_gw_hp", "blockwise"]
sizes = st.integers(min_value=1, max_value=200_000)
aligned = st.integers(min_value=1, max_value=4_096).map(lambda x: 16 * x)
DTYPES = (np.int32, np.uint32, np.int64, np.uint64, np.float32, np.float64)
PROPS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
M, K, N = sp.symbols("M K N", positive=True, integer=True)


@functools.cache
def gemm_expr(gpu: str, dtype: str):
    """The closed form, substituted exactly (integers into its rationals): ``sp.lambdify`` would evaluate
    ``ceiling(T/132)`` as ``ceil(T * (1/132))`` in floats, one wave high at an exact multiple (H200 bf16
    1281 x 1 x 29057: 2508 tiles, 19 waves, lambdified 20) — a float artefact, not the model's."""
    expr = pm.gemm_time_s(M, K, N, dtype, gpu)
    return lambda m, k, n: expr.subs({M: int(m), K: int(k), N: int(n)})


@PROPS
@given(sizes, sizes, sizes, st.sampled_from(GPUS), st.sampled_from(["bf16", "fp8"]), st.sampled_from(DTYPES))
@example(1281, 1, 29057, "H200", "bf16", np.int32)  # 2508 tiles on 132 SMs: exactly 19 waves (see gemm_expr)
def test_gemm_time_is_one_function_of_the_shape(m, k, n, gpu, dtype, np_dtype):
    if dtype == "fp8" and gpu not in FP8_GPUS:
        return
    if dtype == "fp8" and (k % 16 or n % 16):  # torch._scaled_mm cannot run it: a named error, scalar or array
        with pytest.raises(IneligibleShapeError, match="multiples of 16"):
            pm.gemm_time_s(m, k, n, dtype, gpu)
        with pytest.raises(IneligibleShapeError, match="multiples of 16"):
            pm.gemm_time_s(np.array([m], np_dtype), np.array([k], np_dtype), np.array([n], np_dtype), dtype, gpu)
        k, n = -(-k // 16) * 16, -(-n // 16) * 16  # the padded shape runs
    t = pm.gemm_time_s(m, k, n, dtype, gpu)
    assert isinstance(t, float) and math.isfinite(t) and t > 0
    arr = pm.gemm_time_s(np.array([m], np_dtype), np.array([k], np_dtype), np.array([n], np_dtype), dtype, gpu)
    assert arr[0] == pytest.approx(t, rel=1e-12)
    assert float(gemm_expr(gpu, dtype)(m, k, n)) == pytest.approx(t, rel=1e-9)  # the closed form, substituted


@PROPS
@given(sizes, aligned, aligned, st.sampled_from(RECIPES), st.sampled_from(FP8_GPUS))
def test_speedup_scalar_array_and_decision_agree(m, k, n, recipe, gpu):
    s = f8.speedup(m, k, n, recipe, gpu)
    assert math.isfinite(s) and s > 0
    arr = f8.speedup(np.array([m, m]), np.array([k, 24]), np.array([n, n]), recipe, gpu)
    assert arr[0] == pytest.approx(s, rel=1e-12) and np.ma.is_masked(arr[1])  # 24 is not a multiple of 16
    assert f8.should_use(m, k, n, recipe, gpu) == (s >= 1)
    lt = f8.linear_time(m, k, n, recipe, gpu)
    assert lt.eligible and all(math.isfinite(float(x)) and x >= 0 for x in (lt.gemm_s, lt.cast_s, lt.launch_s))
    assert f8.best_recipe(m, k, n, gpu, recipes=["bf16", recipe]) == (recipe if s > 1 else "bf16")


@PROPS
@given(sizes, sizes, sizes, st.sampled_from(RECIPES))
def test_ineligible_shapes_are_answered_as_keep_bf16(m, k, n, recipe):
    if k % 16 == 0 and n % 16 == 0:
        k += 1
    assert f8.should_use(m, k, n, recipe, "H200") is False
    assert f8.best_recipe(m, k, n, "H200") == "bf16"
    with pytest.raises(IneligibleShapeError, match="multiples of 16"):
        f8.speedup(m, k, n, recipe, "H200")
    with pytest.raises(IneligibleShapeError):
        f8.break_even_tokens(k, n, recipe, "H200")
    lt = f8.linear_time(m, k, n, recipe, "H200")
    assert not lt.eligible and "keep it in bf16" in lt.ineligible_reason
    arr = f8.break_even_tokens(np.array([k, 4096]), np.array([n, 4096]), recipe, "H200", max_tokens=1 << 16)
    assert np.ma.is_masked(arr[0]) and not np.ma.is_masked(arr[1])


@settings(max_examples=15, deadline=None)
@given(aligned, aligned, st.sampled_from(["tensorwise", "rowwise"]), st.sampled_from(["H200", "H100", "B200"]))
def test_break_even_is_where_float8_stays_ahead(k, n, recipe, gpu):
    limit = 1 << 16
    m = f8.break_even_tokens(k, n, recipe, gpu, max_tokens=limit)
    if m is None:
        assert f8.speedup(limit, k, n, recipe, gpu) < 1
        return
    tokens = np.arange(m, min(m + 4096, limit) + 1)
    assert np.all(f8.speedup(tokens, np.full_like(tokens, k), np.full_like(tokens, n), recipe, gpu) >= 1)
    if m > 1:
        assert f8.speedup(m - 1, k, n, recipe, gpu) < 1
    arr = f8.break_even_tokens(np.array([k]), np.array([n]), recipe, gpu, max_tokens=limit)
    assert int(arr[0]) == m


def test_huge_inputs_are_named_errors_not_overflows():
    with pytest.raises(PerfModelError, match="up to"):
        f8.break_even_tokens(524288, 524288, "tensorwise", "H200", max_tokens=2**62)
    assert f8.break_even_tokens(524288, 524288, "tensorwise", "H200") is not None  # no int64 overflow
    s = f8.speedup(
        np.array([8192], np.int32), np.array([65536], np.int32), np.array([65536], np.int32), "rowwise", "H200"
    )
    assert s[0] == pytest.approx(f8.speedup(8192, 65536, 65536, "rowwise", "H200"), rel=1e-12)
    assert f8.speedup(100_000_000_000, 4096, 4096, "tensorwise", "H200") > 1  # clocks settle: no made-up slowdown
    with pytest.raises(PerfModelError, match="up to"):
        pm.gemm_time_s(10**15, 4096, 4096)


GARBAGE = st.one_of(
    st.none(),
    st.booleans(),
    st.text(max_size=20),
    st.integers(max_value=0),
    st.integers(min_value=2**41, max_value=2**200),
    st.floats(allow_nan=True, allow_infinity=True).filter(
        lambda x: not (x > 0 and x == int(x) if math.isfinite(x) else False)
    ),
    st.complex_numbers(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.just(np.array(["a"])),
    st.just(np.array([], dtype=np.int64)),
    st.just(np.array([1, -1])),
    st.just(sp.Integer(-3)),
    st.just(sp.Rational(1, 3)),
)


@settings(max_examples=120, deadline=None)
@given(GARBAGE, st.integers(min_value=0, max_value=2))
def test_invalid_sizes_give_named_errors(bad, position):
    args = [4096, 4096, 4096]
    args[position] = bad
    for fn in (
        pm.gemm_flops,
        pm.gemm_bytes,
        pm.gemm_time_s,
        pm.gemm_perfdata,
        f8.linear_time,
        f8.speedup,
        f8.should_use,
    ):
        with pytest.raises(PerfModelError) as err:
            fn(*args)
        assert len(str(err.value)) < 1000
    if position:  # break-even takes K, N
        with pytest.raises(PerfModelError):
            f8.break_even_tokens(*args[1:])


@settings(max_examples=80, deadline=None)
@given(GARBAGE)
def test_invalid_options_give_named_errors(bad):
    calls = [
        lambda: pm.gemm_time_s(64, 64, 64, bad),
        lambda: pm.gemm_time_s(64, 64, 64, "bf16", bad),
        lambda: pm.gemm_time_s(64, 64, 64, "fp8", "H200", bad),
        lambda: pm.gemm_time_s(64, 64, 64, "bf16", "H200", time_model=bad),
        lambda: f8.speedup(64, 64, 64, bad),
        lambda: f8.speedup(64, 64, 64, "tensorwise", "H200", dynamic_shapes=bad),
        lambda: f8.should_use(64, 64, 64, "tensorwise", "H200", min_speedup=bad),
        lambda: f8.break_even_tokens(64, 64, "tensorwise", "H200", min_speedup=bad),
        lambda: f8.module_filter("H200", bad),
        lambda: f8.module_filter("H200", 8192, exclude=bad),
        lambda: pm.get_gpu(bad),
        lambda: pm.get_format(bad),
        lambda: pm.provenance(bad),
    ]
    for call in calls:
        try:
            call()
        except PerfModelError:
            pass
        except Exception as exc:  # pragma: no cover - what the test exists to catch
            raise AssertionError(f"raw {type(exc).__name__}: {exc}") from exc


def test_min_speedup_must_be_a_positive_number():
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(PerfModelError, match="min_speedup"):
            f8.break_even_tokens(4096, 4096, min_speedup=bad)
        with pytest.raises(PerfModelError, match="min_speedup"):
            f8.should_use(4096, 4096, 4096, min_speedup=bad)


def test_exclude_matches_whole_name_components():
    import re

    class Lin:
        in_features = out_features = 4096

    filt = f8.module_filter("H200", 16384, "tensorwise", exclude="lm_head")
    assert filt(Lin(), "lm_head") is False and filt(Lin(), "model.lm_head") is False
    assert filt(Lin(), "layers.0.attention.wq") is True  # a single string is one pattern, not its letters
    filt = f8.module_filter("H200", 16384, exclude=["layers.1"])
    assert filt(Lin(), "layers.1.attention.wq") is False and filt(Lin(), "layers.12.attention.wq") is True
    filt = f8.module_filter("H200", 16384, exclude=re.compile(r"attention\.w[qk]$"))
    assert filt(Lin(), "layers.3.attention.wq") is False and filt(Lin(), "layers.3.attention.wo") is True
    per_layer = f8.module_filter("H200", {"layers.1": 16384, "*": 64})
    assert per_layer(Lin(), "layers.1.ffn.w1") is True and per_layer(Lin(), "layers.12.ffn.w1") is False


@PROPS
@given(
    sizes,
    sizes,
    sizes,
    st.sampled_from(["bf16", "fp16", "tensorwise", "rowwise"]),
    st.sampled_from(["rr", "rc", "cr"]),
    st.sampled_from(["kernel", "event"]),
    st.sampled_from(DTYPES),
)
def test_tile_model_is_one_function_of_the_shape(m, k, n, fmt, layout, timing, np_dtype):
    """time_model="tiles": finite and positive, the same for a number and a one-element array of any integer or float
    dtype, and a named error for what it does not price (symbols)."""
    dtype, scaling = (fmt, None) if fmt in ("bf16", "fp16") else ("fp8_e4m3", fmt)
    if scaling:
        k, n, layout = -(-k // 16) * 16, -(-n // 16) * 16, "rc"  # _scaled_mm's shapes and layout
    kw = dict(time_model="tiles", layout=layout, timing=timing)
    t = pm.gemm_time_s(m, k, n, dtype, "H200", scaling, **kw)
    assert isinstance(t, float) and math.isfinite(t) and t > 0
    arr = pm.gemm_time_s(*(np.array([x], np_dtype) for x in (m, k, n)), dtype, "H200", scaling, **kw)
    assert arr.shape == (1,) and arr[0] == pytest.approx(t, rel=1e-12)
    with pytest.raises(PerfModelError, match="numeric only"):
        pm.gemm_time_s(M, k, n, dtype, "H200", scaling, **kw)
