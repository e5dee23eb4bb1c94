"""float8 Linear model: kernel bytes per recipe (by hand), times, decision API, all backends."""

import dataclasses
import functools

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import perfmodel as pm
from perfmodel import float8 as f8
from perfmodel.compat import roofline_utils as ru
from perfmodel.errors import (
    IneligibleShapeError,
    InvalidShapeError,
    NoClosedFormError,
    UnknownRecipeError,
    UnsupportedFormatError,
)
from perfmodel.float8.recipes import CastOptions
from perfmodel.gemm import gemm_time_s

M, K, N = 8192, 4096, 14336
H100 = pm.get_gpu("H100-SXM")
# a what-if Blackwell-like GPU with MX units, so the mxfp8 recipe can be exercised on any table
MX_GPU = dataclasses.replace(
    H100, name="what-if-mx", peaks=dataclasses.replace(H100.peaks, mxfp8=H100.peaks.fp8_e4m3, source="what-if")
)


def kernel_bytes(recipe, **opts):
    ks = f8.get_recipe(recipe).cast_kernels(M, K, N, CastOptions(**opts))
    return {k.name: (k.read_bytes, k.write_bytes) for k in ks if not k.launch_only}, sum(k.launch_only for k in ks)


def test_bf16_has_no_casts():
    assert kernel_bytes("bf16") == ({}, 0)


def test_tensorwise_kernels():
    got, launches = kernel_bytes("tensorwise")
    assert got == {
        "input.amax_stage1": (2 * M * K, 0),
        "input.cast_row_col": (2 * M * K, 2 * M * K),
        "weight.amax_stage1": (2 * N * K, 0),
        "weight.cast_row_col": (2 * N * K, 2 * N * K),
        "grad_output.amax_stage1": (2 * M * N, 0),
        "grad_output.cast_row_col": (2 * M * N, 2 * M * N),
    }
    assert launches == 3
    fused, _ = kernel_bytes("tensorwise", fuse_input_with_prev=True, fuse_grad_output_with_prev=True)
    assert "input.amax_stage1" not in fused and "grad_output.amax_stage1" not in fused
    cached, launches = kernel_bytes("tensorwise", cache_weight_cast=True)
    assert not any(k.startswith("weight") for k in cached) and launches == 2


def test_rowwise_kernels():
    got, launches = kernel_bytes("rowwise")
    assert launches == 0
    assert got == {
        # contiguous reductions: one fused amax+cast kernel, fp32 scale per row
        "input.cast_along_K": (2 * M * K, M * K + 4 * M),
        "weight.cast_along_K": (2 * N * K, N * K + 4 * N),
        "grad_output.cast_along_N": (2 * M * N, M * N + 4 * M),
        # strided reductions: a column amax, then the cast
        "weight.amax_along_N": (2 * N * K, 0),
        "weight.cast_along_N": (2 * N * K, N * K + 4 * K),
        "input.amax_along_M": (2 * M * K, 0),
        "input.cast_along_M": (2 * M * K, M * K + 4 * K),
        "grad_output.amax_along_M": (2 * M * N, 0),
        "grad_output.cast_along_M": (2 * M * N, M * N + 4 * N),
    }


def test_rowwise_with_gw_hp_kernels():
    got, _ = kernel_bytes("rowwise_with_gw_hp")
    assert set(got) == {
        "input.cast_along_K",
        "weight.cast_along_K",
        "weight.amax_along_N",
        "weight.cast_along_N",
        "grad_output.cast_along_N",
    }
    assert f8.get_recipe("rowwise_with_gw_hp").grad_weight_dtype == "bf16"


def test_mxfp8_kernels():
    got, _ = kernel_bytes("mxfp8")
    assert got == {
        "input.cast_along_K": (2 * M * K, M * K + M * K // 32),
        "input.cast_along_M": (2 * M * K, M * K + M * K // 32),
        "weight.cast_along_K": (2 * N * K, N * K + N * K // 32),
        "weight.cast_along_N": (2 * N * K, N * K + N * K // 32),
        "grad_output.cast_along_N": (2 * M * N, M * N + M * N // 32),
        "grad_output.cast_along_M": (2 * M * N, M * N + M * N // 32),
    }


def test_blockwise_kernels():
    got, _ = kernel_bytes("blockwise")
    assert got["input.cast_along_K"] == (2 * M * K, M * K + 4 * M * (K // 128))
    assert got["input.cast_along_M"] == (2 * M * K, M * K + 4 * K * (M // 128))
    assert got["weight.cast_along_K"] == (2 * N * K, N * K + 4 * (N // 128) * (K // 128))
    assert got["weight.cast_along_N"] == got["weight.cast_along_K"]
    assert len(got) == 6


def test_linear_time_dynamic_reproduces_original_model():
    gpu = "H100-2.4TB"
    lt = f8.linear_time(
        M, K, N, "dynamic", gpu, time_model="original", fuse_input_with_prev=True, fuse_grad_output_with_prev=True
    )
    assert lt.gemm_s == pytest.approx(ru.get_gemm_time_sympy(M, K, N, "fp8"), rel=1e-12)
    assert lt.cast_s + lt.launch_s == pytest.approx(ru.get_float8_mem_sympy(M, K, N), rel=1e-12)
    base = f8.linear_time(M, K, N, None, gpu, time_model="original")
    assert base.total_s == pytest.approx(ru.get_gemm_time_sympy(M, K, N, "bf16"), rel=1e-12)


def test_linear_time_breakdown_roofline():
    lt = f8.linear_time(M, K, N, "tensorwise", H100, time_model="roofline")
    assert lt.provenance.kind == "roofline"
    assert [g.name for g in lt.gemms] == ["output", "grad_input", "grad_weight"]
    assert [(g.M, g.K, g.N) for g in lt.gemms] == [(M, K, N), (M, N, K), (K, M, N)]
    assert lt.gemm_s == pytest.approx(
        sum(gemm_time_s(*s, "fp8", H100, time_model="roofline") for s in [(M, K, N), (M, N, K), (K, M, N)])
    )
    bw = 3.35e12 * 0.92
    # per tensor: amax reads 2n, the cast reads 2n and writes 2n (row + col major)
    assert lt.cast_bytes == 6 * M * K + 6 * N * K + 6 * M * N
    assert lt.cast_s == pytest.approx(lt.cast_bytes / bw)
    assert lt.launch_s == pytest.approx(3 * 2e-6)
    assert lt.total_s == pytest.approx(lt.gemm_s + lt.cast_s + lt.launch_s)
    p = lt.perfdata()
    assert p.time_s == lt.total_s and p.flops == 3 * 2 * M * K * N
    assert "grad_output.cast_row_col" in lt.table()


def test_speedup_by_hand_on_two_gpus():
    for gpu in ("H100-SXM", "H100-PCIe"):  # the roofline model (calibrated models: test_registry, test_validation)
        spec = pm.get_gpu(gpu)
        bf16 = 3 * 2 * M * K * N / spec.achievable_flops_per_s("bf16")
        fp8 = (
            3 * 2 * M * K * N / spec.achievable_flops_per_s("fp8")
            + (6 * (M * K + N * K + M * N)) / spec.achievable_mem_bw_bytes_per_s
            + 3 * spec.launch_overhead_s
        )
        rf = {"time_model": "roofline"}
        assert f8.speedup(M, K, N, "tensorwise", gpu, **rf) == pytest.approx(bf16 / fp8, rel=1e-9)
        assert f8.should_use(M, K, N, "tensorwise", gpu, **rf) is True
        assert f8.should_use(M, K, N, "tensorwise", gpu, min_speedup=bf16 / fp8 * 1.01, **rf) is False
    # a tiny layer is launch-bound: float8 loses
    assert f8.speedup(64, 256, 256, "tensorwise", H100) < 1
    assert f8.should_use(64, 256, 256, "rowwise", H100) is False


def test_break_even_is_exact_on_the_model():
    for recipe, gpu in [("tensorwise", "H100-SXM"), ("rowwise", "H200"), ("rowwise_with_gw_hp", "H100-SXM")]:
        m = f8.break_even_tokens(4096, 4096, recipe, gpu)
        assert isinstance(m, int) and m > 1
        assert f8.speedup(m, 4096, 4096, recipe, gpu) >= 1
        assert f8.speedup(m - 1, 4096, 4096, recipe, gpu) < 1
    arr = f8.break_even_tokens(np.array([1024, 4096, 8192]), np.array([1024, 4096, 28672]), "tensorwise", H100)
    scalars = [f8.break_even_tokens(k, n, "tensorwise", H100) for k, n in [(1024, 1024), (4096, 4096), (8192, 28672)]]
    assert list(arr) == [-1 if m is None else m for m in scalars]  # arrays say "never" as -1, scalars as None
    # never pays when the ask is impossible
    assert f8.break_even_tokens(4096, 4096, "tensorwise", H100, min_speedup=5.0) is None


def test_break_even_symbolic_matches_numeric_in_its_regime():
    k, n = sp.symbols("K N", positive=True)
    expr = f8.break_even_tokens(k, n, "tensorwise", "H100-2.4TB", time_model="original")
    value = float(expr.subs({k: 8192, n: 8192}))
    # in the "original" regime the speedup is exactly 1 at the closed-form M
    m = sp.Symbol("M", positive=True)
    s = f8.speedup(m, 8192, 8192, "tensorwise", "H100-2.4TB", time_model="original")
    assert float(s.subs(m, value)) == pytest.approx(1.0, rel=1e-9)
    # and the integer break-even of the same model is its ceiling
    assert f8.break_even_tokens(8192, 8192, "tensorwise", "H100-2.4TB", time_model="original") == int(np.ceil(value))
    # the calibrated model has no closed-form inverse: a named error that says which part, not sympy's
    with pytest.raises(NoClosedFormError, match="tile and wave quantization"):
        f8.break_even_tokens(k, n, "tensorwise", "H100")
    # per-block scales (ceil(M / block)) have none either, even in the original model
    with pytest.raises(NoClosedFormError, match="per block of tokens"):
        f8.break_even_tokens(k, n, "blockwise", "H100", time_model="original")


def test_symbolic_numbers_answer_like_numbers():
    for recipe in ("tensorwise", "rowwise", "rowwise_with_gw_hp", "blockwise"):
        numeric = f8.break_even_tokens(4096, 4096, recipe, "H200")
        symbolic = f8.break_even_tokens(sp.Integer(4096), sp.Integer(4096), recipe, "H200")
        assert symbolic == numeric and isinstance(symbolic, sp.Integer), recipe
    assert f8.break_even_tokens(sp.Integer(4096), 4096, "rowwise", "H200", dynamic_shapes=True) == (
        f8.break_even_tokens(4096, 4096, "rowwise", "H200", dynamic_shapes=True)
    )
    assert f8.break_even_tokens(sp.Integer(4096), 4096, "mxfp8", "B200") == f8.break_even_tokens(
        4096, 4096, "mxfp8", "B200"
    )


def test_best_recipe_and_supported():
    assert f8.supported_recipes("H100") == [
        "bf16",
        "dynamic",
        "delayed",
        "tensorwise",
        "rowwise",
        "rowwise_with_gw_hp",
        "blockwise",
    ]
    assert "mxfp8" in f8.supported_recipes(MX_GPU)
    assert f8.best_recipe(64, 256, 256, H100) == "bf16"
    big = f8.best_recipe(16384, 8192, 28672, H100)
    assert big != "bf16"
    arr = f8.best_recipe(np.array([64, 16384]), np.array([256, 8192]), np.array([256, 28672]), H100)
    assert list(arr) == ["bf16", big]


def test_mxfp8_needs_mx_units():
    with pytest.raises(UnsupportedFormatError, match=r"recipe 'mxfp8' needs mxfp8 GEMMs.*H100-SXM"):
        f8.linear_time(M, K, N, "mxfp8", H100)
    assert f8.speedup(M, K, N, "mxfp8", MX_GPU) > 1


def test_bad_input_errors():
    with pytest.raises(UnknownRecipeError, match="unknown recipe 'rowise'; did you mean 'rowwise'"):
        f8.linear_time(M, K, N, "rowise")
    with pytest.raises(InvalidShapeError, match="M must be a positive integer"):
        f8.speedup(0, K, N)
    with pytest.raises(InvalidShapeError, match="N must be"):
        f8.break_even_tokens(4096, -1)
    with pytest.raises(pm.PerfModelError, match="min_speedup"):
        f8.should_use(M, K, N, min_speedup=0)
    with pytest.raises(pm.UnknownGPUError):
        f8.module_filter(gpu="X100")


def test_recipe_enum_like_and_none():
    class FakeEnum:
        value = "rowwise"

    assert f8.get_recipe(FakeEnum()).name == "rowwise"
    assert f8.get_recipe(None).name == "bf16"
    assert f8.get_recipe(" TensorWise ").name == "tensorwise"


class _Linear:
    def __init__(self, k, n):
        self.in_features, self.out_features = k, n


def test_module_filter_duck_typed():
    fn = f8.module_filter(gpu="H100", tokens=16384, recipe="tensorwise", exclude=("lm_head",))
    assert fn(_Linear(8192, 28672), "layers.0.mlp.up") is f8.should_use(16384, 8192, 28672, "tensorwise", "H100")
    assert fn(_Linear(8192, 28672), "lm_head") is False
    assert fn(_Linear(8192, 28670), "x") is False  # not a multiple of 16
    assert fn(object(), "norm") is False


sizes = st.integers(min_value=1, max_value=40_000)
aligned = st.integers(min_value=1, max_value=5_000).map(lambda x: 8 * x)


@settings(max_examples=40, deadline=None)
@given(
    sizes,
    sizes,
    sizes,
    st.sampled_from(["tensorwise", "rowwise", "rowwise_with_gw_hp", "blockwise", "delayed"]),
    st.sampled_from(["H200", "H100-SXM"]),
)
def test_numeric_and_numpy_agree(m, k, n, recipe, gpu):
    arr = f8.speedup(np.array([m, 7]), np.array([k, 7]), np.array([n, 7]), recipe, gpu)
    assert np.ma.is_masked(arr[1])  # 7 x 7 cannot run in float8: masked, never NaN
    if k % 16 or n % 16:
        with pytest.raises(IneligibleShapeError, match="multiples of 16"):
            f8.speedup(m, k, n, recipe, gpu)
        assert np.ma.is_masked(arr[0]) and f8.should_use(m, k, n, recipe, gpu) is False
        return
    scalar = f8.speedup(m, k, n, recipe, gpu)
    assert arr[0] == pytest.approx(scalar, rel=1e-12)
    for dtype in (np.int32, np.uint32, np.int64, np.float16 if max(m, k, n) < 2048 else np.float32, np.float64):
        typed = f8.speedup(
            np.array([m], dtype=dtype), np.array([k], dtype=dtype), np.array([n], dtype=dtype), recipe, gpu
        )
        assert typed[0] == pytest.approx(scalar, rel=1e-12), dtype


SYMBOLS = sp.symbols("M K N", positive=True, integer=True)


@functools.cache
def symbolic_total(recipe, gpu):
    """The closed form, built once per (recipe, GPU)."""
    return f8.linear_time(*SYMBOLS, recipe, gpu).total_s


@settings(max_examples=20, deadline=None)
@given(
    aligned,
    aligned,
    aligned,
    st.sampled_from(["tensorwise", "rowwise", "rowwise_with_gw_hp", "delayed"]),
    st.sampled_from(["H200", "H100-SXM"]),
)
def test_sympy_agrees_with_numbers(m, k, n, recipe, gpu):
    # the calibrated model takes symbols as 8-aligned (no misalignment slowdown), so the sizes are too;
    # M is a GEMM's K in grad_weight, so it must be aligned as well
    expr = symbolic_total(recipe, gpu)
    assert float(expr.subs(dict(zip(SYMBOLS, (m, k, n), strict=True)))) == pytest.approx(
        f8.linear_time(m, k, n, recipe, gpu).total_s, rel=1e-12
    )


def test_module_filter_tokens_per_layer():
    big, small = 32768, 64
    fn = f8.module_filter(gpu="H100", tokens={"experts": small, "*": big})
    expert, dense = _Linear(4096, 14336), _Linear(4096, 14336)
    assert fn(dense, "layers.0.mlp.up") is f8.should_use(big, 4096, 14336, "tensorwise", "H100") is True
    assert fn(expert, "layers.0.experts.3.w1") is f8.should_use(small, 4096, 14336, "tensorwise", "H100") is False
    only = f8.module_filter(gpu="H100", tokens={"mlp": big})
    assert only(dense, "layers.0.attn.q") is False  # no key matches and no "*": not converted
    call = f8.module_filter(gpu="H100", tokens=lambda fqn: small if "experts" in fqn else big)
    assert call(dense, "mlp.up") is True and call(expert, "experts.0.w1") is False
    with pytest.raises(InvalidShapeError, match=r"tokens\['experts'\]"):
        f8.module_filter(gpu="H100", tokens={"experts": 0})
    bad = f8.module_filter(gpu="H100", tokens=lambda fqn: -1)
    with pytest.raises(InvalidShapeError, match="tokens"):
        bad(dense, "x")
    with pytest.raises(pm.PerfModelError, match="empty"):
        f8.module_filter(gpu="H100", tokens={})


def test_dynamic_shapes_option_reaches_every_entry_point():
    h200 = "H200"
    assert f8.break_even_tokens(4096, 14336, "rowwise", h200, dynamic_shapes=True) > f8.break_even_tokens(
        4096, 14336, "rowwise", h200
    )
    assert f8.best_recipe(8192, 4096, 14336, h200, recipes=["bf16", "rowwise"], dynamic_shapes=True) in (
        "bf16",
        "rowwise",
    )
    # the roofline ignores it: same kernels, same bytes
    assert f8.speedup(8192, 4096, 4096, "rowwise", "H100", dynamic_shapes=True, time_model="roofline") == f8.speedup(
        8192, 4096, 4096, "rowwise", "H100", time_model="roofline"
    )
