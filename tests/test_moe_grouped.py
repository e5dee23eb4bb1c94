"""perfmodel.moe.grouped: the grouped-GEMM time model, its calibration and its held-out score."""

import json
import pathlib
import re

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.errors import (
    IneligibleShapeError,
    InvalidShapeError,
    UnknownOptionError,
    UnknownRecipeError,
    UnsupportedFormatError,
)
from perfmodel.moe import grouped as gm

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data" / "h200_2026-12-03"
CAL = json.loads((ROOT / "perfmodel" / "calibrations" / "h200_grouped.json").read_text())
H200 = pm.get_gpu("H200")


# ------------------------------------------------------------------ tiles and waves, by hand
def test_fwd_tiles_round_robin_by_hand():
    cfg = gm.KernelConfig("t", "pingpong", 64, 128, 128)
    # group tiles: ceil(100/64)*ceil(384/128) = 6, 0, ceil(65/64)*3 = 6 -> 12 tiles of ceil(256/128) = 2 k-blocks
    D, C = gm.sm_loads(np.array([100, 0, 65]), 256, 384, "fwd", cfg, 4)
    assert C.tolist() == [3, 3, 3, 3] and D.tolist() == [6, 6, 6, 6]
    D, C = gm.sm_loads(np.array([100, 0, 65]), 256, 384, "fwd", cfg, 5)  # 12 tiles over 5 SMs: 3,3,2,2,2
    assert C.tolist() == [3, 3, 2, 2, 2] and D.tolist() == [6, 6, 4, 4, 4]


def test_wgrad_tiles_round_robin_by_hand():
    cfg = gm.KernelConfig("t", "cooperative", 128, 256, 64)
    # every group: ceil(N=256/128) * ceil(K=512/256) = 4 tiles; k-blocks ceil(130/64) = 3 and ceil(10/64) = 1
    # tiles 0-3 cost 3, tiles 4-7 cost 1; SM0 gets 0,3,6 (7), SM1 1,4,7 (5), SM2 2,5 (4)
    D, C = gm.sm_loads(np.array([130, 10]), 512, 256, "wgrad", cfg, 3)
    assert D.tolist() == [7, 5, 4] and C.tolist() == [3, 3, 2]


def test_model_time_by_hand():
    cfg = gm.KERNELS[("bf16", "fwd", "small")]
    p = {
        "tiles": {cfg.name: {"t_kb_s": 1e-6, "c0": 1.0}},
        "mem_eff": 0.5,
        "t0_s": 1e-5,
        "t_group_s": 1e-7,
        "p": 1.0,
        "throttle": 0.0,
        "throttle_tau_s": 1e-3,
        "sm_weight": 1.0,
        "sm_norm": 8.0,  # ~max(busiest, mean): every SM equally loaded here, the load is 2 * 2^(1/8)
    }
    # two groups of 64 rows, K = N = 128: 1 M-tile each, rounded up to the 2x1 cluster -> 2 tiles per group of
    # 1 k-block, 4 tiles on 4 SMs -> busiest SM (1 + c0) = 2 k-blocks
    t, info = gm.model_time_s(np.array([64, 64]), 128, 128, "fwd", "bf16", p, H200, H200)
    # 4 tiles on 132 SMs: busiest 2 k-blocks, mean 4 * 2 / 132; ((1 * 2)^8 + (8/132)^8)^(1/8)
    compute = 1e-6 * ((2.0**8 + (8 / 132) ** 8) ** (1 / 8))
    nbytes = 2 * 128 * 128 * 2 + 128 * 128 * 2 + 128 * 128 * 2  # 2 weights + x + out, bf16
    assert info["bytes"] == nbytes and info["tiles"] == 4 and info["waves"] == 1
    assert t == pytest.approx(1e-5 + 2 * 1e-7 + compute + nbytes / (0.5 * 4.8e12), rel=1e-12)
    # power cap a = 0.5, tau = 2 us: compute 2 us -> 2 * (1 + 0.5 * 2 / (2 + 2)) = 2.5 us; p = 2: a 2-norm with memory
    t2, _ = gm.model_time_s(
        np.array([64, 64]),
        128,
        128,
        "fwd",
        "bf16",
        {**p, "throttle": 0.5, "throttle_tau_s": 2e-6, "p": 2.0, "sm_norm": 1.0, "sm_weight": 0.5},
        H200,
        H200,
    )
    # load 0.5 * 2 + 8/132 k-blocks; compute c = 1e-6 * load, throttled c * (1 + 0.5 c / (c + 2 us))
    c = 1e-6 * (1.0 + 8 / 132)
    c *= 1 + 0.5 * c / (c + 2e-6)
    assert t2 == pytest.approx(1e-5 + 2e-7 + np.hypot(c, nbytes / (0.5 * 4.8e12)), rel=1e-12)


def test_size_classes_are_torchs_rule_by_hand():
    # fwd (M, K, N) = (total // G, K, N): small at M <= 128 (integer division, as torch's int32 M / group_count)
    assert gm.size_class("fwd", 129 * 8 - 1, 8, 4096, 4096) == "small"  # floor(1031 / 8) = 128
    assert gm.size_class("fwd", 129 * 8, 8, 4096, 4096) == "large"  # M 129, K and N >= 2048
    assert gm.size_class("fwd", 1000 * 8, 8, 4096, 1536) == "mid"  # only K >= 2048
    assert gm.size_class("fwd", 2048 * 8, 8, 4096, 1536) == "large"  # M and K >= 2048
    assert gm.size_class("fwd", 4096, 1, 1024, 96) == "small"  # N <= 128
    # wgrad (M, K, N) = (N, total // G, K)
    assert gm.size_class("wgrad", 8 * 100, 8, 4096, 4096) == "large"  # M = 4096, N = 4096
    assert gm.size_class("wgrad", 8 * 100, 8, 1536, 4096) == "mid"  # M = 4096 only
    assert gm.size_class("wgrad", 8 * 2048, 8, 1536, 4096) == "large"  # M and K = 2048
    assert gm.size_class("wgrad", 8 * 100, 8, 1536, 128) == "small"
    assert gm.size_class("dgrad", 1000 * 8, 8, 1536, 4096) == gm.size_class("fwd", 1000 * 8, 8, 4096, 1536) == "mid"
    assert pm.moe.size_class("fwd", np.int32(8000), np.int64(8), 4096.0, 1536) == "mid"  # whole numbers of any type
    for args, err in (
        (("bwd", 8000, 8, 4096, 1536), UnknownOptionError),
        (("fwd", 8000, 0, 4096, 1536), InvalidShapeError),  # G = 0
        (("fwd", -1, 8, 4096, 1536), InvalidShapeError),
        (("fwd", 8000.5, 8, 4096, 1536), InvalidShapeError),
        (("fwd", 8000, 8, float("nan"), 1536), InvalidShapeError),
        (("fwd", 8000, 8, 4096, True), InvalidShapeError),
        (("fwd", "8000", 8, 4096, 1536), InvalidShapeError),
        (("fwd", 8000, 8, np.ma.masked, 1536), InvalidShapeError),
    ):
        with pytest.raises(err):
            gm.size_class(*args)


def test_kernel_switch_and_fp8_padding():
    assert gm.kernel_config("bf16", "fwd", 128 * 8, 8, 4096, 4096).schedule == "pingpong"
    assert gm.kernel_config("bf16", "fwd", 129 * 8, 8, 4096, 4096).name == "bf16_cooperative_128x256"
    assert gm.kernel_config("bf16", "fwd", 129 * 8, 8, 4096, 1536).name == "bf16_cooperative_128x256"
    assert gm.kernel_config("bf16", "wgrad", 8, 8, 4096, 4096).schedule == "cooperative"
    # fp8: the three kernels of ScaledGroupMM.cu
    assert gm.kernel_config("fp8", "fwd", 64 * 8, 8, 4096, 1536).name == "fp8_pingpong_64x128"
    assert gm.kernel_config("fp8", "fwd", 1000 * 8, 8, 4096, 1536).name == "fp8_cooperative_128x256"
    assert gm.kernel_config("fp8", "fwd", 1000 * 8, 8, 4096, 4096).name == "fp8_cooperative_256x128"
    assert gm.kernel_config("fp8", "wgrad", 1000 * 8, 8, 1536, 4096).name == "fp8_cooperative_128x256"
    mid = gm.KERNELS[("fp8", "fwd", "mid")]
    assert (mid.bm, mid.bn, mid.bk, mid.schedule) == (128, 256, 64, "cooperative")
    # a calibration whose class never saw the kernel torch picks: a named error, not another kernel's numbers
    one = {**CAL["params"]["event/fp8/fwd"], "tiles": {"fp8_pingpong_64x128": {"t_kb_s": 1e-7, "c0": 1.0}}}
    with pytest.raises(IneligibleShapeError, match="fp8_cooperative_128x256 kernel, which this calibration"):
        gm.model_time_s(np.full(8, 1000), 4096, 1536, "fwd", "fp8", one, H200, H200)
    # the old four-argument form still answers, with a DeprecationWarning
    with pytest.warns(DeprecationWarning, match="pass K=..., N=..."):
        assert gm.kernel_config("fp8", "fwd", 1000 * 8, 8).name == "fp8_cooperative_256x128"
    assert gm.pad_group_sizes([0, 5, 17, 32], "fp8").tolist() == [16, 16, 32, 32]
    assert gm.pad_group_sizes([0, 5, 17], "bf16").tolist() == [0, 5, 17]
    r = pm.moe.grouped_gemm([0, 5, 17, 32], 256, 512, dtype="fp8", op="wgrad")
    assert r.rows.tolist() == [16, 16, 32, 32] and r.flops == 2 * 96 * 256 * 512


def test_roofline_by_hand():
    t = pm.moe.roofline_grouped_gemm_time_s([100, 28], 1024, 2048, dtype="bf16", gpu="H200")
    assert t == pytest.approx(2 * 128 * 1024 * 2048 / (989.5e12 * 0.6), rel=1e-12)
    t8 = pm.moe.roofline_grouped_gemm_time_s([[100, 28], [0, 0]], 1024, 2048, dtype="fp8", gpu="H200")
    assert t8.tolist() == pytest.approx([2 * 128 * 1024 * 2048 / (1979e12 * 0.6), 0.0], rel=1e-12)


# ------------------------------------------------------------------ API shape
def test_balanced_group_sizes():
    g = pm.moe.balanced_group_sizes(10, 4, 3)
    assert g.tolist() == [8, 8, 7, 7] and g.dtype.kind == "i"
    for tokens, e, k in [(4096, 64, 8), (1, 256, 8), (0, 8, 2), (12345, 128, 6)]:
        g = pm.moe.balanced_group_sizes(tokens, e, k)
        assert g.sum() == tokens * k and g.max() - g.min() <= 1 and np.all(np.diff(g) <= 0)


def test_batch_equals_rows():
    g = np.array([[512, 0, 300, 7], [1, 2, 3, 4], [0, 0, 0, 1000]])
    for kw in ({}, {"dtype": "fp8", "op": "wgrad"}, {"op": "dgrad", "timing": "kernel"}, {"gpu": "B200"}):
        batch = pm.moe.grouped_gemm_time_s(g, 2048, 1408, **kw)
        assert isinstance(batch, np.ndarray) and batch.shape == (3,)
        for row, t in zip(g, batch, strict=True):
            assert pm.moe.grouped_gemm_time_s(row, 2048, 1408, **kw) == pytest.approx(t, rel=1e-12)


def test_dgrad_is_fwd_with_k_and_n_swapped():
    g = [300, 20, 0, 999]
    assert pm.moe.grouped_gemm_time_s(g, 2048, 7168, op="dgrad") == pytest.approx(
        pm.moe.grouped_gemm_time_s(g, 7168, 2048, op="fwd"), rel=1e-12
    )


def test_result_fields_and_perfdata():
    r = pm.moe.grouped_gemm(pm.moe.balanced_group_sizes(4096, 64, 8), 7168, 2048)
    assert r.G == 64 and r.rows.sum() == 32768 and r.bound in ("compute", "memory", "launch")
    assert r.tiles == 64 * 4 * 8 and r.waves == -(-r.tiles // 132)  # Cooperative 128x256: 512/128 * 2048/256
    assert r.provenance.startswith("measured-fit: H200") and r.error_bar["p90"] > r.error_bar["p50"] > 0
    pdata = r.perfdata()
    assert pdata.source == "predicted" and pdata.time_s == r.time_s and pdata.flops == 2 * 32768 * 7168 * 2048


def test_provenance_by_gpu():
    g = [512] * 8
    assert pm.moe.grouped_gemm(g, 2048, 1408, gpu="H100-SXM").provenance.startswith("transferred from H200")
    b = pm.moe.grouped_gemm(g, 2048, 1408, gpu="B200")
    assert "roofline estimate" in b.provenance and "not assumed" in b.provenance and b.error_bar is None
    with pytest.raises(UnknownOptionError, match="architecture"):
        pm.moe.grouped_gemm_time_s(g, 2048, 1408, gpu="B200", time_model="calibrated")
    # H100 SXM has the H200's 132 SMs and dense peaks but 3.35 TB/s against 4.8: the transferred compute part is the
    # same, the memory part slower -> never faster
    for shape in ((g, 2048, 1408), ([4096] * 8, 4096, 4096), ([1] * 64, 7168, 2048)):
        h200 = pm.moe.grouped_gemm_time_s(*shape, gpu="H200")
        assert pm.moe.grouped_gemm_time_s(*shape, gpu="H100-SXM") >= h200 * (1 - 1e-12)


def test_memory_rate_off_the_h200_by_hand():
    from perfmodel.moe.grouped_kernel import memory_rate_bytes_per_s

    p = CAL["params"]
    fp8_wgrad, bf16_wgrad, fwd = p["event/fp8/wgrad"], p["event/bf16/wgrad"], p["event/bf16/fwd"]
    sxm, pcie = pm.get_gpu("H100-SXM"), pm.get_gpu("H100-PCIe")
    # on the H200 every class streams at mem_eff x 4.8 TB/s, as fitted
    for q in (fp8_wgrad, bf16_wgrad, fwd):
        assert memory_rate_bytes_per_s(q, H200, H200) == pytest.approx(q["mem_eff"] * 4.8e12, rel=1e-12)
    # fwd (mem_eff 1.0: 4.8 TB/s, above the H200's 4.27 TB/s copy) is HBM-bound: 1.0 x 3.35 TB/s on the H100 SXM
    assert fwd["mem_eff"] == 1.0 and memory_rate_bytes_per_s(fwd, sxm, H200) == pytest.approx(3.35e12, rel=1e-12)
    # fp8 wgrad streams at 0.5648 x 4.8 = 2.711 TB/s on the H200, below its copy speed: SM-bound. The H100 SXM has
    # the same 132 SMs at 1980 MHz and a 3.35 x 0.92 = 3.082 TB/s copy: 2.711 TB/s, not 0.5648 x 3.35 = 1.892
    assert fp8_wgrad["mem_eff"] == pytest.approx(0.5648, abs=1e-4)
    assert memory_rate_bytes_per_s(fp8_wgrad, sxm, H200) == pytest.approx(fp8_wgrad["mem_eff"] * 4.8e12, rel=1e-12)
    # bf16 wgrad: 0.8233 x 4.8 = 3.952 TB/s, SM-bound too, capped at the H100 SXM's 3.082 TB/s copy
    assert memory_rate_bytes_per_s(bf16_wgrad, sxm, H200) == pytest.approx(3.35e12 * 0.92, rel=1e-12)
    # the H100 PCIe: 114 SMs at 1755 MHz, (114 x 1755) / (132 x 1980) = 0.7655 of the H200's SM throughput:
    # 2.711 x 0.7655 = 2.075 TB/s, above its 2.0 x 0.92 = 1.84 TB/s copy -> 1.84
    assert memory_rate_bytes_per_s(fp8_wgrad, pcie, H200) == pytest.approx(1.84e12, rel=1e-12)
    wide = pcie.with_efficiency(mem_bw_fraction=0.99)  # a 1.98 TB/s copy: still under 2.075
    assert memory_rate_bytes_per_s(fp8_wgrad, wide, H200) == pytest.approx(1.98e12, rel=1e-12)
    low = dict(fp8_wgrad, mem_eff=0.3)  # 1.44 TB/s on the H200 -> 1.44 x 0.7655 = 1.102 TB/s on the PCIe card
    assert memory_rate_bytes_per_s(low, pcie, H200) == pytest.approx(0.3 * 4.8e12 * 114 * 1755 / (132 * 1980))


def test_memory_rate_bad_input_is_named():
    from perfmodel.errors import CalibrationError, UnknownGPUError
    from perfmodel.moe.grouped_kernel import memory_rate_bytes_per_s

    p = CAL["params"]["event/fp8/wgrad"]
    for spec, ref in (("H100-SXM", H200), (pm.get_gpu("H100-SXM"), "H200"), (None, H200)):
        with pytest.raises(UnknownGPUError, match="must be a GPUSpec"):
            memory_rate_bytes_per_s(p, spec, ref)
    for eff in (0.0, -0.5, 1.5, float("nan"), True, "0.5", None):
        with pytest.raises(CalibrationError, match=r"mem_eff must be a fraction in \(0, 1\]"):
            memory_rate_bytes_per_s(dict(p, mem_eff=eff), pm.get_gpu("H100-SXM"), H200)
    with pytest.raises(CalibrationError, match="mem_eff"):
        memory_rate_bytes_per_s({}, pm.get_gpu("H100-SXM"), H200)


def test_fp8_wgrad_costs_on_the_h100_sxm_what_it_costs_on_the_h200():
    # same SMs, clock and dense peaks: tiles, compute and the SM-bound memory term are the same, so every fp8 wgrad
    # call takes the H200's time; bf16 wgrad (capped at the H100's copy) and fwd (HBM-bound) do not
    for g, K, N in (([64] * 64, 2048, 1024), ([300] * 128, 4096, 1536), ([4096] * 8, 4096, 14336)):
        for timing in ("event", "kernel"):
            kw = {"op": "wgrad", "dtype": "fp8", "scaling": "rowwise", "timing": timing}
            h200 = pm.moe.grouped_gemm_time_s(g, K, N, gpu="H200", **kw)
            assert pm.moe.grouped_gemm_time_s(g, K, N, gpu="H100-SXM", **kw) == pytest.approx(h200, rel=1e-12)
    g = [64] * 64
    assert pm.moe.grouped_gemm_time_s(g, 2048, 1024, op="wgrad", gpu="H100-SXM") > pm.moe.grouped_gemm_time_s(
        g, 2048, 1024, op="wgrad", gpu="H200"
    )
    assert pm.moe.grouped_gemm_time_s(g, 2048, 1024, gpu="H100-SXM") > pm.moe.grouped_gemm_time_s(g, 2048, 1024)
    assert "by SM throughput" in pm.moe.grouped_gemm(g, 2048, 1024, gpu="H100-SXM").provenance


def test_symbolic_balanced_equals_numeric_off_the_h200():
    sp = pytest.importorskip("sympy")
    T = sp.Symbol("T", integer=True, positive=True)
    for gpu, op, dtype in (("H100-SXM", "wgrad", "fp8"), ("H100-PCIe", "wgrad", "bf16"), ("H100-SXM", "fwd", "bf16")):
        expr = pm.moe.grouped_gemm_time_s_balanced(T, 64, 8, 2048, 1024, op=op, dtype=dtype, gpu=gpu)
        for tokens in (17, 4096, 65536):
            num = pm.moe.grouped_gemm_time_s_balanced(tokens, 64, 8, 2048, 1024, op=op, dtype=dtype, gpu=gpu)
            assert float(expr.subs(T, tokens)) == pytest.approx(num, rel=1e-9), (gpu, op, dtype, tokens)


def test_symbolic_balanced_equals_numeric():
    sp = pytest.importorskip("sympy")
    T = sp.Symbol("T", integer=True, positive=True)
    # (128, 8, 2048, 768): a shape where sympy's own ceiling() of a sum would drop the ceiling (kept unevaluated)
    cases = [(64, 8, 7168, 2048, op, dt) for op in ("fwd", "wgrad", "dgrad") for dt in ("bf16", "fp8")]
    cases += [(8, 2, 4096, 14336, "wgrad", "bf16"), (128, 8, 2048, 768, "fwd", "bf16")]
    # fp8 through all three of torch's classes (mean rows 16 .. 16384: small, mid, large), fwd and wgrad
    cases += [(8, 2, 4096, 1536, op, "fp8") for op in ("fwd", "wgrad")] + [(8, 2, 1536, 1024, "fwd", "fp8")]
    for E, k, K, N, op, dtype in cases:
        expr = pm.moe.grouped_gemm_time_s_balanced(T, E, k, K, N, op=op, dtype=dtype, timing="kernel")
        for tokens in (1, 17, 1000, 4096, 4097, 8192, 65536):
            num = pm.moe.grouped_gemm_time_s(
                pm.moe.balanced_group_sizes(tokens, E, k), K, N, op=op, dtype=dtype, timing="kernel"
            )
            assert float(expr.subs(T, tokens)) == pytest.approx(num, rel=1e-9), (E, K, N, op, dtype, tokens)


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    "args, kw, err, match",
    [
        (([4, -1], 256, 256), {}, InvalidShapeError, ">= 0"),
        (([4, 1.5], 256, 256), {}, InvalidShapeError, "whole"),
        (([], 256, 256), {}, InvalidShapeError, "G = 0"),
        (([[1, 2], [3]], 256, 256), {}, InvalidShapeError, "ragged"),
        (([4], 0, 256), {}, InvalidShapeError, "K"),
        (([4], 256, -3), {}, InvalidShapeError, "N"),
        (([4], 264, 256), {"dtype": "fp8"}, IneligibleShapeError, "multiples of 16"),
        (([4], 256, 256), {"dtype": "fp4"}, pm.PerfModelError, None),
        (([4], 256, 256), {"dtype": "fp32"}, UnsupportedFormatError, "bf16"),
        (([4], 256, 256), {"op": "bwd"}, UnknownOptionError, "fwd, dgrad, wgrad"),
        (([4], 256, 256), {"timing": "wall"}, UnknownOptionError, "kernel, event"),
        (([4], 256, 256), {"dtype": "fp8", "scaling": "tensorwise"}, UnknownOptionError, "rowwise"),
        (([4], 256, 256), {"dtype": "fp8", "scaling": "blockwise_nope"}, UnknownRecipeError, None),
        (([4], 256, 256), {"scaling": "rowwise"}, UnknownOptionError, "bf16"),
        (([4], 256, 256), {"time_model": "tiles"}, UnknownOptionError, "roofline"),
    ],
)
def test_bad_input_is_a_named_error(args, kw, err, match):
    with pytest.raises(err, match=match):
        pm.moe.grouped_gemm_time_s(*args, **kw)


def test_symbols_need_the_balanced_path():
    sp = pytest.importorskip("sympy")
    with pytest.raises(InvalidShapeError, match="balanced"):
        pm.moe.grouped_gemm_time_s([sp.Symbol("n"), 4], 256, 256)
    with pytest.raises(InvalidShapeError, match="balanced"):
        pm.moe.balanced_group_sizes(sp.Symbol("T"), 8, 2)


def test_old_bench_names_say_where_they_went():
    from perfmodel.measured import moe_bench

    for name in ("batch_series", "MOE_BATCH_RANGES", "read_log_metadata"):
        with pytest.raises(AttributeError, match=rf"perfmodel\.measured\.moe_bench\.{name}"):
            getattr(pm.moe, name)
        assert hasattr(moe_bench, name)
    with pytest.raises(AttributeError, match="no attribute"):
        pm.moe.no_such_name  # noqa: B018


# ------------------------------------------------------------------ the calibration
def test_calibration_file():
    assert CAL["schema"] == gm.SCHEMA == 2 and CAL["gpu"] == "H200"
    assert set(CAL["fit_families"]).isdisjoint(CAL["validation_families"] + CAL["test_families"])
    assert set(CAL["params"]) == {
        f"{t}/{d}/{o}" for t in ("event", "kernel") for d in ("bf16", "fp8") for o in ("fwd", "wgrad")
    }
    for v in CAL["data"].values():
        assert len(v["sha256"]) == 64


needs_data = pytest.mark.skipif(not DATA.is_dir(), reason="the H200 sweep of 2026-12-03 is not in this checkout")


@needs_data
def test_data_files_match_the_shipped_hashes():
    from perfmodel.calibrate import grouped as cg

    for name, v in CAL["data"].items():
        assert cg._sha256(DATA / name) == v["sha256"], name


@needs_data
def test_the_shipped_parameters_are_the_fit():
    # a full refit takes ~30 s (four starts x eight classes): instead, every shipped class must be a fixed point of
    # the fitter on its fit records (3 more Levenberg-Marquardt steps lower the cost by < 1e-6 relative), and the
    # fitted vector must round-trip through the JSON's parameter names
    from perfmodel.calibrate import grouped as cg

    recs = [r for r in cg.load_records(DATA) if r["family"] in cg.FIT_FAMILIES]
    for key in ("kernel/bf16/wgrad", "event/fp8/fwd"):
        timing, dtype, op = key.split("/")
        one = [r for r in recs if r["timing"] == timing and cg._dtype(r) == dtype and r["op"] == op]
        before, after = cg.class_cost(one, CAL["params"][key], lm_iters=3)
        assert after >= before * (1 - 1e-6), (key, before, after)
        names = sorted(CAL["params"][key]["tiles"])
        back = cg._unpack(cg._pack(CAL["params"][key], names), names)
        assert back["mem_eff"] == pytest.approx(CAL["params"][key]["mem_eff"], rel=1e-9)
        assert back["throttle_tau_s"] == pytest.approx(CAL["params"][key]["throttle_tau_s"], rel=1e-6)


@needs_data
def test_held_out_scores_agree_with_the_data():
    from perfmodel.calibrate import grouped as cg

    recs = cg.load_records(DATA)
    held = [r for r in recs if r["family"] in cg.VALIDATION_FAMILIES + cg.TEST_FAMILIES]
    rows = cg.score(held, cg.predict_records(held, CAL["params"]))
    shipped = {(r["timing"], r["dtype"], r["op"], r["dist"]): r for r in CAL["scores"]["held_out"]}
    for r in rows:
        s = shipped[(r["timing"], r["dtype"], r["op"], r["dist"])]
        assert r["mdape"] == pytest.approx(s["mdape"], abs=1e-9) and r["p90"] == pytest.approx(s["p90"], abs=1e-9)


#: the held-out event-time figures docs/validation/moe.md states (validation + test families, all ops), % — (MdAPE,
#: p90);
#: post-selection since the schema-2 form (2026-12-04), which was chosen after these families were seen
DOCUMENTED = {
    ("bf16", "balanced"): (3.5, 9.0),
    ("bf16", "skewed"): (4.0, 8.9),
    ("fp8", "balanced"): (4.2, 10.0),
    ("fp8", "skewed"): (3.7, 9.8),
}
TARGET = (5.0, 15.0)


@needs_data
def test_held_out_event_error_against_the_targets():
    from perfmodel.calibrate import grouped as cg

    recs = cg.load_records(DATA)
    held = [r for r in recs if r["family"] in cg.VALIDATION_FAMILIES + cg.TEST_FAMILIES and r["timing"] == "event"]
    rows = {
        (r["dtype"], r["dist"]): r for r in cg.score(held, cg.predict_records(held, CAL["params"])) if r["op"] == "all"
    }
    for key, (mdape, p90) in DOCUMENTED.items():
        got = rows[key]
        for name, value, documented, target in (
            ("MdAPE", got["mdape"], mdape, TARGET[0]),
            ("p90", got["p90"], p90, TARGET[1]),
        ):
            if documented <= target:  # met: it must stay met
                assert value <= target, (key, name, value)
            else:  # missed (fp8 balanced MdAPE): the documented figure, honestly
                assert value == pytest.approx(documented, abs=0.5), (key, name, value)


def test_the_fitter_names_a_missing_data_folder(tmp_path, capsys):
    from perfmodel.calibrate import grouped as cg
    from perfmodel.errors import MissingDataError as CalibrationError

    with pytest.raises(CalibrationError, match="no such data folder"):
        cg.load_records(tmp_path / "nope")
    with pytest.raises(CalibrationError, match=r"grouped_gemm_time\.json\.gz"):
        cg.load_records(tmp_path)  # a folder without the sweep files
    assert cg.main(["--data", str(tmp_path / "nope"), "--out", str(tmp_path / "cal.json")]) == 2
    assert "no such data folder" in capsys.readouterr().err and not (tmp_path / "cal.json").exists()


@needs_data
def test_the_grouped_tables_in_the_docs_are_the_script_output():
    import importlib.util

    spec = importlib.util.spec_from_file_location("validate_grouped", ROOT / "benchmarks" / "validate_grouped.py")
    vg = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(vg)
    from benchmarks.harness.tables import block_text

    text = (ROOT / "docs" / "validation" / "moe.md").read_text()
    blocks = vg.docs_blocks()
    assert set(blocks) >= {"params", "held-out", "fresh4"}
    for name, body in blocks.items():
        stale = (
            f"docs/validation/moe.md grouped-{name} is stale: python benchmarks/validate_grouped.py --docs "
            "docs/validation/moe.md"
        )
        assert block_text(text, f"grouped-{name}", doc="docs/validation/moe.md") == body, stale
    # the round-4 event cells meet the targets (MdAPE <= 5 %, p90 <= 15 %): the figures docs/validation/moe.md states
    for row in blocks["fresh4"].split("\n")[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        if cells[0] == "event":
            assert float(cells[5]) <= 5.0 and float(cells[6]) <= 15.0, cells


def test_the_preset_table_in_the_docs_is_the_script_output():
    import importlib.util

    spec = importlib.util.spec_from_file_location("moe_preset_table", ROOT / "benchmarks" / "moe_preset_table.py")
    mt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mt)
    from benchmarks.harness.tables import block_text

    got = block_text((ROOT / "docs" / "moe.md").read_text(), mt.BLOCK, doc="docs/moe.md")
    assert got == mt.table(), "stale: python benchmarks/moe_preset_table.py --docs docs/moe.md"
    ex = block_text((ROOT / "docs" / "moe.md").read_text(), mt.EXAMPLE_BLOCK, doc="docs/moe.md")
    assert ex == mt.worked_example(), "stale: python benchmarks/moe_preset_table.py --docs docs/moe.md"
    assert "| rowwise (eager) |" in ex and "The fp8 GEMMs save" in ex


def test_uneven_groups_by_hand():
    from perfmodel.moe.grouped import uneven_groups

    assert not uneven_groups([4096] * 8) and not uneven_groups([0, 0, 0])
    assert uneven_groups([4, 4, 4, 5])  # 5 / 4.25 = 1.18
    assert not uneven_groups([100, 100, 100, 104])  # 104 / 101 = 1.03
    assert uneven_groups([1024, 0, 1024, 1024])  # an empty group: 1024 / 768 = 1.33
    assert uneven_groups(np.array([4, 4, 4, 5], dtype=np.int32)) is True
    assert uneven_groups(np.array([[4, 4, 4, 4], [4, 4, 4, 5]])).tolist() == [False, True]  # a batch: one per row
    for bad in ([], [1.5, 2], [1, float("nan")], [-1, 4], ["a", "b"], [[1, 2], [3]], 2**70, True, None):
        with pytest.raises(InvalidShapeError):
            uneven_groups(bad)


def test_uneven_large_calls_say_how_they_are_priced():
    """A call of >= 1 TFLOP with uneven groups carries the measured lean of such calls: on the H200 'known wrong in
    direction: likely slower' (74 % of 142 bf16 calls priced fast), on a transferred GPU the H100 SXM's figures, no
    direction (61 %); even, small and roofline calls carry nothing."""
    from perfmodel.moe import block as bm

    skew = [957, 10646, 503, 4222, 315, 1067, 14203, 855]
    h200 = pm.moe.grouped_gemm(skew, 6144, 16384, gpu="H200")
    assert h200.flops >= gm.UNEVEN_MIN_FLOPS and h200.provenance.endswith(
        "; known wrong in direction for uneven groups (largest >= 1.05x the mean) in a call of >= 1 TFLOP: likely "
        "slower than this (predicted / measured median 0.975, priced fast in 74% of 142 such calls of held-out "
        "families on our H200 (even calls 0.994); post-hoc, not corrected)"
    )
    fp8 = pm.moe.grouped_gemm(skew, 6144, 16384, dtype="fp8", scaling="rowwise", gpu="H200")
    assert "likely slower than this (predicted / measured median 0.977, priced fast in 68% of 145" in fp8.provenance
    twin = pm.moe.grouped_gemm(skew, 6144, 16384, gpu="H100-SXM")
    assert "1 TFLOP: no direction known on H100-SXM (predicted / measured median 0.989, priced fast in 61% of 112" in (
        twin.provenance
    )
    assert "known wrong" not in twin.provenance and "on our H200 (even calls 0.994)" in twin.provenance
    for quiet in (
        pm.moe.grouped_gemm([4096] * 8, 6144, 16384, gpu="H200"),  # even
        pm.moe.grouped_gemm(skew, 1024, 512, gpu="H200"),  # 0.03 TFLOP
        pm.moe.grouped_gemm(skew, 6144, 16384, gpu="B200"),  # the roofline estimate
    ):
        assert "uneven groups" not in quiet.provenance
    batch = pm.moe.grouped_gemm([[4096] * 8, skew], 6144, 16384, gpu="H200")
    assert batch.provenance.endswith("post-hoc, not corrected) (rows 1 of the batch)")
    assert gm.UNEVEN_DIRECTION_SHARE == bm.TWIN_DIRECTION_SHARE  # one rule for naming a direction


def test_uneven_groups_error_is_what_the_sweeps_give():
    from benchmarks import validate_grouped as vg

    got = vg.uneven_error()
    for gpu, by in gm.UNEVEN_GROUPS_ERROR.items():
        for dt, want in by.items():
            assert got[gpu][dt]["n"] == want["n"], (gpu, dt)
            for k in ("median_ratio", "under", "even_median"):
                assert got[gpu][dt][k] == pytest.approx(want[k], abs=5e-4), (gpu, dt, k)
    assert got["H200"]["bf16"]["median_ratio"] < got["H200"]["bf16"]["even_median"]  # the lean the note states


def test_dgrad_layout_figures_in_the_docs_are_what_the_sweeps_give():
    """docs/moe.md "Limits": the fwd model on the bf16 calls timed in the dgrad layout (a_row_b_row)."""
    from benchmarks import validate_grouped as vg

    got = vg.dgrad_layout_error()
    want = {"<1T": (847, 4.4, 10.5, 1.013), ">=1T": (125, 2.2, 6.2, 0.985)}
    doc = (ROOT / "docs" / "moe.md").read_text()
    for band, (n, p50, p90, med) in want.items():
        g = got[band]
        assert g["n"] == n and round(g["p50"], 1) == p50 and round(g["p90"], 1) == p90, band
        assert round(g["median_ratio"], 3) == med, band
        assert f"{p50} / {p90} % (median {med}, {n} calls" in " ".join(doc.split()), band


def test_uneven_figures_in_the_docs_are_the_constants():
    """Each GPU's and dtype's median and share as the docs state them: ``0.975 ... (74 % of 142``."""
    e = gm.UNEVEN_GROUPS_ERROR
    for path in ("docs/moe.md", "docs/validation/moe.md"):
        doc = " ".join((ROOT / path).read_text().split())
        for gpu, dt in (("H200", "bf16"), ("H200", "fp8"), ("H100", "bf16"), ("H100", "fp8")):
            v = e[gpu][dt]
            pat = rf"{v['median_ratio']:.3f}[^()]{{0,40}}\({v['under'] * 100:.0f} % of {v['n']}\b"
            assert re.search(pat, doc), (path, gpu, dt, pat)
