"""GEMM FLOPs, bytes and time on every backend; expected values derived here from the formulas."""

import dataclasses

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import perfmodel as pm
from perfmodel.errors import InvalidShapeError, PerfModelError, UnsupportedFormatError
from perfmodel.gemm import ORIGINAL, ROOFLINE, Roofline, gemm_bytes, gemm_flops, gemm_perfdata, gemm_time_s

H100 = pm.get_gpu("H100-SXM")


def test_flops():
    assert gemm_flops(2, 3, 4) == 48
    assert gemm_flops(8192, 8192, 8192) == 2 * 8192**3


def test_bytes_per_scaling():
    M, K, N = 1000, 300, 4097
    assert gemm_bytes(M, K, N, "bf16") == (M * K + K * N) * 2 + M * N * 2
    assert gemm_bytes(M, K, N, "fp32", "fp32") == (M * K + K * N + M * N) * 4
    fp8 = (M * K + K * N) * 1 + M * N * 2
    assert gemm_bytes(M, K, N, "fp8") == fp8 + 8
    assert gemm_bytes(M, K, N, "fp8", scaling="rowwise") == fp8 + 4 * (M + N)
    assert gemm_bytes(M, K, N, "fp8", scaling="blockwise") == fp8 + 4 * (M * 3 + 3 * 33)
    assert gemm_bytes(M, K, N, "mxfp8") == fp8 + (M + N) * 10  # ceil(300/32) = 10 E8M0 bytes per row
    assert gemm_bytes(M, K, N, "nvfp4") == (M * K + K * N) * 0.5 + M * N * 2 + (M + N) * 19  # ceil(300/16)


def test_scaling_validation():
    with pytest.raises(UnsupportedFormatError, match="unscaled"):
        gemm_bytes(16, 16, 16, "bf16", scaling="rowwise")
    with pytest.raises(UnsupportedFormatError, match="own block scales"):
        gemm_bytes(16, 16, 16, "mxfp8", scaling="rowwise")
    with pytest.raises(UnsupportedFormatError, match="MX format"):
        gemm_bytes(16, 16, 16, "fp8", scaling="mx")
    with pytest.raises(PerfModelError, match=r"unknown scaling 'colwise'.*rowwise"):
        gemm_time_s(16, 16, 16, "fp8", "H100", "colwise")


def test_roofline_time_regimes():
    # big square bf16: compute-bound at 60 % of 989.5 TFLOP/s
    M = K = N = 8192
    assert gemm_time_s(M, K, N, "bf16", H100, time_model="roofline") == pytest.approx(
        2 * M * K * N / (1979e12 / 2 * 0.6)
    )
    # skinny: memory-bound at 92 % of 3.35 TB/s
    M, K, N = 16, 8192, 8192
    nbytes = (M * K + K * N) * 2 + M * N * 2
    assert gemm_time_s(M, K, N, "bf16", H100, time_model="roofline") == pytest.approx(nbytes / (3.35e12 * 0.92))
    # tiny: the launch floor
    assert gemm_time_s(16, 16, 16, "bf16", H100, time_model="roofline") == pytest.approx(2e-6)
    fp8 = gemm_time_s(8192, 8192, 8192, "fp8", H100, time_model="roofline")
    assert fp8 == pytest.approx(2 * 8192**3 / (3958e12 / 2 * 0.6))


def test_models_are_pluggable():
    assert gemm_time_s(16, 8192, 8192, "bf16", H100, time_model="original") == pytest.approx(
        2 * 16 * 8192 * 8192 / (989.5e12 * 0.6)
    )
    no_floor = Roofline(launch_floor=False)
    assert gemm_time_s(16, 16, 16, "bf16", H100, time_model=no_floor) < 2e-6
    spec = dataclasses.replace(H100, calibration=ORIGINAL)
    assert gemm_time_s(16, 16, 16, "bf16", spec) == pytest.approx(2 * 16**3 / (989.5e12 * 0.6))
    assert gemm_time_s(16, 16, 16, "bf16", spec, time_model=ROOFLINE) == pytest.approx(2e-6)
    with pytest.raises(PerfModelError, match="unknown time model 'fast'"):
        gemm_time_s(16, 16, 16, "bf16", H100, time_model="fast")
    # calibration=None means "nothing attached": the H100 keeps the calibration transferred from the H200
    plain = dataclasses.replace(H100, calibration=None)
    assert gemm_time_s(16, 16, 16, "bf16", plain, time_model="calibrated") == gemm_time_s(16, 16, 16, "bf16", H100)
    unknown_arch = dataclasses.replace(H100, arch="75", name="T4-like")
    with pytest.raises(PerfModelError, match="no calibration"):
        gemm_time_s(16, 16, 16, "bf16", unknown_arch, time_model="calibrated")


def test_what_if_bandwidth():
    fast = dataclasses.replace(H100, mem_bw_bytes_per_s=2 * H100.mem_bw_bytes_per_s)
    slow = gemm_time_s(16, 8192, 8192, "bf16", H100, time_model="roofline")
    assert gemm_time_s(16, 8192, 8192, "bf16", fast, time_model="roofline") == pytest.approx(slow / 2)


def test_bad_input():
    for bad in (0, -5, 2.5):
        with pytest.raises(InvalidShapeError, match="K must be a positive integer"):
            gemm_time_s(16, bad, 16)
    with pytest.raises(pm.UnknownGPUError, match="H1000"):
        gemm_time_s(16, 16, 16, gpu="H1000")
    with pytest.raises(ValueError, match="unknown number format 'bf17'"):
        gemm_time_s(16, 16, 16, dtype="bf17")
    with pytest.raises(UnsupportedFormatError, match="H100-SXM has no mxfp8 peak"):
        gemm_time_s(16, 16, 16, "mxfp8", "H100")


def test_perfdata():
    p = gemm_perfdata(4096, 4096, 4096, "bf16", "H100-SXM", time_model="roofline")
    assert p.source == "predicted" and p.gpu is H100
    assert p.flops == 2 * 4096**3
    assert p.time_s == gemm_time_s(4096, 4096, 4096, "bf16", "H100-SXM", time_model="roofline")
    assert p.util == pytest.approx(0.6)
    assert p.meta["provenance"].kind == "roofline"
    assert gemm_perfdata(4096, 4096, 4096, "bf16", "H100-SXM").meta["provenance"].kind == "transferred"
    assert p.bound == "compute"
    assert gemm_perfdata(16, 8192, 8192, "bf16", H100).bound == "memory"


sizes = st.integers(min_value=1, max_value=70_000)


@settings(max_examples=50, deadline=None)
@given(sizes, sizes, sizes, st.sampled_from(["bf16", "fp8", "tf32"]), st.sampled_from(["H100-SXM", "H200"]))
def test_numeric_numpy_sympy_agree(M, K, N, dtype, gpu):
    if dtype == "fp8":  # torch._scaled_mm runs K and N multiples of 16 only (others: a named error)
        K, N = -(-K // 16) * 16, -(-N // 16) * 16
    scalar = gemm_time_s(M, K, N, dtype, gpu)
    arr = gemm_time_s(np.array([M, 16]), np.array([K, 16]), np.array([N, 16]), dtype, gpu)
    assert arr[0] == pytest.approx(scalar, rel=1e-12)
    if gpu == "H200":  # calibrated: symbols are taken as 8-aligned, so compare on aligned sizes
        K, N = 8 * K, 8 * N
        scalar = gemm_time_s(M, K, N, dtype, gpu)
    m, k, n = sp.symbols("M K N", positive=True, integer=True)
    expr = gemm_time_s(m, k, n, dtype, gpu)
    assert float(expr.subs({m: M, k: K, n: N})) == pytest.approx(scalar, rel=1e-12)
