"""The original torchao float8 roofline model, reproduced exactly (values derived by hand here)."""

import itertools

import numpy as np
import pytest
import sympy as sp

from perfmodel.compat import roofline_utils as ru
from perfmodel.errors import UnsupportedFormatError

SHAPES = [(8192, 4096, 14336), (1, 1, 1), (17, 300, 4097), (16384, 8192, 28672)]
SCALINGS = ("dynamic", "delayed")


def test_constants_are_the_originals():
    assert ru.BYTES_PER_EL_FLOAT8 == 1 and ru.BYTES_PER_EL_BF16 == 2
    assert ru.H100_BF16_PEAK_TOPS == 989e12
    assert ru.H100_FP8_PEAK_TOPS == 1979e12
    assert ru.H100_PEAK_MEM_BW_BYTES_SEC == 2.4e12
    assert ru.H100_PCT_ACHIEVABLE_GEMM_TOPS == 0.6
    assert ru.H100_PCT_ACHIEVABLE_MEM_BW == 0.92
    assert ru.TRITON_KERNEL_1_ELEMENT_TIME_SEC == 0.002 * 0.001


def _traffic_by_hand(d0, d1, scaling, fuse, tc):
    n = d0 * d1
    if scaling == "dynamic":
        k1 = 0 if fuse else 2 * n
        return k1 + (2 * n + 2 * n) + (n if tc else 0)
    k1r = 0 if fuse else 2 * n
    adj = (n + (-2 * n + 2 * n + 2 * n)) if tc else 0
    return k1r + 2 * n + adj


@pytest.mark.parametrize("scaling,fuse,tc", list(itertools.product(SCALINGS, [False, True], [False, True])))
@pytest.mark.parametrize("d0,d1", [(8192, 4096), (3, 5), (4097, 1)])
def test_tensor_memory_traffic(d0, d1, scaling, fuse, tc):
    got = ru.get_tensor_memory_traffic_bytes(d0, d1, scaling, fuse_with_prev=fuse, model_torch_compile_limitations=tc)
    assert got == _traffic_by_hand(d0, d1, scaling, fuse, tc)


def test_tensor_memory_traffic_known_values():
    n = 8192 * 4096
    assert ru.get_tensor_memory_traffic_bytes(8192, 4096, "dynamic") == 6 * n
    assert ru.get_tensor_memory_traffic_bytes(8192, 4096, "dynamic", True) == 4 * n
    assert ru.get_tensor_memory_traffic_bytes(8192, 4096, "delayed") == 4 * n
    assert ru.get_tensor_memory_traffic_bytes(8192, 4096, "delayed", True, True) == 5 * n


@pytest.mark.parametrize("M,K,N", SHAPES)
def test_gemm_time(M, K, N):
    flops = 2 * M * K * N * 3
    assert ru.get_gemm_time_sympy(M, K, N, "bf16") == pytest.approx(flops / 989e12 / 0.6, rel=1e-15)
    assert ru.get_gemm_time_sympy(M, K, N, "fp8_e4m3") == pytest.approx(flops / 1979e12 / 0.6, rel=1e-15)
    assert ru.get_gemm_time_sympy(M, K, N, "float8_e5m2") == pytest.approx(flops / 1979e12 / 0.6, rel=1e-15)


def test_gemm_time_torch_dtypes():
    torch = pytest.importorskip("torch")
    assert ru.get_gemm_time_sympy(4096, 4096, 4096, torch.bfloat16) == pytest.approx(6 * 4096**3 / 989e12 / 0.6)
    assert ru.get_gemm_time_sympy(4096, 4096, 4096, torch.float8_e4m3fn) == pytest.approx(6 * 4096**3 / 1979e12 / 0.6)
    with pytest.raises(UnsupportedFormatError, match="float32"):
        ru.get_gemm_time_sympy(4096, 4096, 4096, torch.float32)


def _mem_by_hand(M, K, N, tc, si, sw, sg):
    total = (
        _traffic_by_hand(M, K, si, True, tc)
        + _traffic_by_hand(K, N, sw, False, tc)
        + _traffic_by_hand(M, N, sg, True, tc)
    )
    extra = sum(1 if s == "dynamic" else 2 for s in (si, sw, sg))
    return total / 2.4e12 / 0.92 + extra * 2e-6


@pytest.mark.parametrize("tc,si,sw,sg", list(itertools.product([False, True], SCALINGS, SCALINGS, SCALINGS)))
@pytest.mark.parametrize("M,K,N", SHAPES)
def test_float8_mem_every_flag_combination(M, K, N, tc, si, sw, sg):
    got = ru.get_float8_mem_sympy(M, K, N, tc, si, sw, sg)
    assert got == pytest.approx(_mem_by_hand(M, K, N, tc, si, sw, sg), rel=1e-14)


def test_float8_mem_defaults():
    M, K, N = 8192, 4096, 14336
    expected = (4 * M * K + 6 * K * N + 4 * M * N) / 2.4e12 / 0.92 + 3 * 2e-6
    assert ru.get_float8_mem_sympy(M, K, N) == pytest.approx(expected, rel=1e-15)


def test_symbolic_forms():
    M, K, N = sp.symbols("M K N", positive=True)
    assert sp.simplify(ru.get_gemm_time_sympy(M, K, N, "bf16") - sp.Float(6 / 989e12 / 0.6) * M * K * N) == 0
    mem = ru.get_float8_mem_sympy(M, K, N)
    poly = sp.Poly(sp.expand(mem), M, K, N)
    coeff = poly.as_dict()
    assert coeff[(1, 1, 0)] == pytest.approx(4 / 2.4e12 / 0.92)  # M*K: input, amax fused
    assert coeff[(0, 1, 1)] == pytest.approx(6 / 2.4e12 / 0.92)  # K*N: weight
    assert coeff[(1, 0, 1)] == pytest.approx(4 / 2.4e12 / 0.92)  # M*N: grad_output, fused
    assert coeff[(0, 0, 0)] == pytest.approx(3 * 2e-6)
    traffic = ru.get_tensor_memory_traffic_bytes(M, K, "delayed", False, True)
    assert sp.expand(traffic - 7 * M * K) == 0  # 2 (k1 read) + 2 + 1 (tc) + 2


def test_numpy_grid_equals_scalar_loop():
    Ms = np.array([1, 128, 4096, 8191])
    Ks = np.array([[256], [4096]])
    grid = ru.get_float8_mem_sympy(Ms, Ks, 1024, True, "delayed", "dynamic", "delayed")
    for i, k in enumerate(Ks[:, 0]):
        for j, m in enumerate(Ms):
            assert grid[i, j] == pytest.approx(
                ru.get_float8_mem_sympy(int(m), int(k), 1024, True, "delayed", "dynamic", "delayed"), rel=1e-14
            )


@pytest.mark.parametrize("arg", ["scaling_type_input", "scaling_type_weight", "scaling_type_grad_output"])
def test_bad_scaling_type_is_a_value_error(arg):
    with pytest.raises(ValueError, match="static"):
        ru.get_float8_mem_sympy(16, 16, 16, **{arg: "static"})
    with pytest.raises(ValueError, match=r"'static'.*delayed, dynamic"):
        ru.get_tensor_memory_traffic_bytes(16, 16, "static")


def test_seed_source_matches_when_torch_available():
    """Execute the seed's original code (it imports torch) and compare exactly."""
    torch = pytest.importorskip("torch")
    import pathlib

    seed = pathlib.Path(__file__).parent / "data" / "seed_roofline_utils.py"
    ns: dict = {}
    exec(compile(seed.read_text(), str(seed), "exec"), ns)
    for M, K, N in SHAPES:
        for tc, si, sw, sg in itertools.product([False, True], SCALINGS, SCALINGS, SCALINGS):
            assert ns["get_float8_mem_sympy"](M, K, N, tc, si, sw, sg) == ru.get_float8_mem_sympy(
                M, K, N, tc, si, sw, sg
            )
        for dt in (torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2):
            assert ns["get_gemm_time_sympy"](M, K, N, dt) == ru.get_gemm_time_sympy(M, K, N, dt)
    M, K, N = sp.symbols("M K N")
    assert ns["get_float8_mem_sympy"](M, K, N) == ru.get_float8_mem_sympy(M, K, N)
    assert ns["get_gemm_time_sympy"](M, K, N, torch.bfloat16) == ru.get_gemm_time_sympy(M, K, N, "bf16")
