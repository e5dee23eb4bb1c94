"""GEMM operand layouts and timing semantics: gemm_time_s(layout=, timing=), the Linear's three layouts,
the per-layout alignment rule, the fit per layout, and the CLI flags."""

import dataclasses
import json

import numpy as np
import pytest

import perfmodel as pm
from perfmodel import calibrate as cal
from perfmodel import float8
from perfmodel.cli import main
from perfmodel.counting import LAYOUTS, layout_lead_dims
from perfmodel.errors import PerfModelError, UnsupportedFormatError
from perfmodel.gemm import EVENT_OVERHEAD_S
from perfmodel.models.base import ROOFLINE, gemm_kernel_time_s

H200 = pm.get_gpu("H200")
BF16 = pm.get_format("bf16")


def test_layout_lead_dims_by_hand():
    assert LAYOUTS == ("rr", "rc", "cr")
    assert layout_lead_dims("rr", 3, 5, 7) == (5, 7)
    assert layout_lead_dims("rc", 3, 5, 7) == (5, 7)
    assert layout_lead_dims("cr", 3, 5, 7) == (3, 7)


@pytest.mark.parametrize("bad", ["RC", "cc", "", None, 3])
def test_invalid_layout_is_a_named_error_listing_the_valid_ones(bad):
    with pytest.raises(PerfModelError, match=r"layout.*Valid choices: cr, rc, rr"):
        pm.gemm_time_s(64, 64, 64, "bf16", "H200", layout=bad)


@pytest.mark.parametrize("bad", ["Kernel", "wall", None])
def test_invalid_timing_is_a_named_error_listing_the_valid_ones(bad):
    with pytest.raises(PerfModelError, match=r"timing.*Valid choices: event, kernel"):
        pm.gemm_time_s(64, 64, 64, "bf16", "H200", timing=bad)


def test_fp8_runs_rc_only():
    with pytest.raises(UnsupportedFormatError, match=r"layout 'rc' only.*not 'rr'"):
        pm.gemm_time_s(64, 64, 64, "fp8_e4m3", "H200", "tensorwise", layout="rr")
    assert pm.gemm_time_s(64, 64, 64, "fp8_e4m3", "H200", "tensorwise", layout="rc") > 0


def test_misalignment_follows_the_layouts_leading_dimensions():
    """Measured on the H200: K misaligned slows rr and rc but not cr; M misaligned slows cr only."""
    aligned = pm.gemm_time_s(4096, 4096, 4096, "bf16", H200)
    t = {lay: pm.gemm_time_s(4096, 4095, 4096, "bf16", H200, layout=lay) for lay in LAYOUTS}
    assert t["rr"] > 3 * aligned and t["rc"] > 3 * aligned
    assert t["cr"] < 1.1 * aligned
    m = {lay: pm.gemm_time_s(4095, 4096, 4096, "bf16", H200, layout=lay) for lay in LAYOUTS}
    assert m["cr"] > 3 * aligned
    assert m["rr"] < 1.1 * aligned and m["rc"] < 1.1 * aligned


def test_the_roofline_ignores_layout():
    for lay in LAYOUTS:
        assert pm.gemm_time_s(4095, 4095, 4096, "bf16", H200, time_model="roofline", layout=lay) == pytest.approx(
            pm.gemm_time_s(4095, 4095, 4096, "bf16", H200, time_model="roofline"), rel=1e-15
        )


def test_event_time_is_kernel_time_plus_the_measured_gap():
    kernel = pm.gemm_time_s(1024, 1024, 1024, "bf16", H200)
    event = pm.gemm_time_s(1024, 1024, 1024, "bf16", H200, timing="event")
    gap = pm.registry.time_model(H200).event_overhead_s()
    assert 1e-6 < gap < 1e-5
    assert event - kernel == pytest.approx(gap, rel=1e-12)
    # a model without a measured gap adds the documented default
    roof = pm.gemm_time_s(1024, 1024, 1024, "bf16", H200, time_model="roofline", timing="event")
    assert roof - pm.gemm_time_s(1024, 1024, 1024, "bf16", H200, time_model="roofline") == pytest.approx(
        EVENT_OVERHEAD_S
    )
    # numpy arrays: elementwise
    Ms = np.array([16, 1024, 8192])
    ev = pm.gemm_time_s(Ms, 1024, 1024, "bf16", H200, timing="event")
    assert np.allclose(ev - pm.gemm_time_s(Ms, 1024, 1024, "bf16", H200), gap, rtol=1e-9)


def test_perfdata_meta_records_layout_and_timing():
    pd = pm.gemm_perfdata(512, 1024, 2048, "bf16", H200, layout="cr", timing="event")
    assert pd.meta["layout"] == "cr" and pd.meta["timing"] == "event"
    assert pd.time_s == pm.gemm_time_s(512, 1024, 2048, "bf16", H200, layout="cr", timing="event")


def test_a_linear_prices_its_three_gemms_in_their_own_layouts():
    bf16 = float8.linear_time(8192, 4096, 4096, None, H200)
    assert [(g.name, g.layout) for g in bf16.gemms] == [("output", "rc"), ("grad_input", "rr"), ("grad_weight", "cr")]
    tm = pm.registry.time_model(H200)
    for g in bf16.gemms:
        want = gemm_kernel_time_s(
            tm,
            g.M,
            g.K,
            g.N,
            fmt=BF16,
            scaling=None,
            out_fmt=BF16,
            gpu=H200,
            layout=g.layout,
        )
        assert float(g.time_s) == pytest.approx(float(want) * tm.step_gemm_factor(BF16, None))
    fp8 = float8.linear_time(8192, 4096, 4096, "tensorwise", H200)
    assert {g.layout for g in fp8.gemms} == {"rc"}  # torchao's casts hand _scaled_mm rc operands
    # a token count that is not a multiple of 8 leads no GEMM of a Linear: no misalignment slowdown
    odd_m = float8.linear_time(8191, 4096, 4096, None, H200)
    assert float(odd_m.total_s) < 1.01 * float(bf16.total_s)


class _OldStyleModel:
    """A user time model written before ``layout`` existed."""

    name = "old"

    def gemm_time_s(self, M, K, N, *, fmt, scaling, out_fmt, gpu, lead_dims=None):
        return ROOFLINE.gemm_time_s(M, K, N, fmt=fmt, scaling=scaling, out_fmt=out_fmt, gpu=gpu)

    def memory_kernel_time_s(self, bytes_moved, *, gpu, recipe=None, tensor=None):
        return ROOFLINE.memory_kernel_time_s(bytes_moved, gpu=gpu)

    def launch_time_s(self, *, gpu):
        return ROOFLINE.launch_time_s(gpu=gpu)

    def step_gemm_factor(self, fmt, scaling):
        return 1.0


def test_time_models_without_a_layout_parameter_get_a_named_error():
    old = _OldStyleModel()  # the TimeModel protocol's gemm_time_s takes layout=; no signature-inspecting shim
    with pytest.raises(PerfModelError, match="takes no layout="):
        pm.gemm_time_s(4096, 4095, 4096, "bf16", H200, time_model=old, layout="rr")
    with pytest.raises(PerfModelError, match="add layout: str = 'rc'"):
        float8.linear_time(4096, 4096, 4096, "tensorwise", "H100", time_model=old)


def _layout_records(n=240, seed=1):
    """Synthetic bf16 GEMMs in rr and rc: rr runs 30 % slower (a known per-layout difference)."""
    truth = cal.CalibratedModel(
        gpu="H200",
        gemm={
            "bf16": cal.GemmParams(
                tile_m=128,
                tile_n=256,
                wave_quantization=1.0,
                rate_flops_per_s=800e12,
                k_overhead=96.0,
                latency_s=4e-6,
                mem_bw_bytes_per_s=4.2e12,
            )
        },
        kernels=cal.KernelParams(latency_s=2e-6, bw_bytes_per_s=4e12, launch_s=1e-6, event_overhead_s=2e-6),
        source="synthetic",
    )
    rng = np.random.default_rng(seed)
    recs = []
    for layout, slow in (("rc", 1.0), ("rr", 1.3)):
        M, K, N = ((np.exp(rng.uniform(np.log(256), np.log(16384), n)).astype(int) // 64 + 1) * 64 for _ in range(3))
        t = truth.gemm_time_s(M, K, N, fmt=BF16, scaling=None, out_fmt=BF16, gpu=H200) * slow
        recs += [
            dict(op="gemm", M=int(m), K=int(k), N=int(x), dtype="bf16", layout=layout, timing="kernel", time_s=float(y))
            for m, k, x, y in zip(M, K, N, t, strict=True)
        ]
    recs += [dict(op="copy", bytes=b, time_s=2e-6 + b / 4e12) for b in (1e6, 1e8, 1e9, 4e9)]
    recs += [
        dict(op="launch", kernel="k", method="profiler_kernel_duration", time_s=1e-6),
        dict(op="launch", kernel="k", method="do_bench", time_s=3e-6),
    ]
    return {"meta": {"date": "2026-12-01", "gpu_name": "NVIDIA H200"}, "records": recs}


def test_split_layouts_fits_each_layout_apart():
    data = _layout_records()
    split = cal.Calibrator(gpu="H200", heldout_fraction=0.0, split_layouts=True).fit(data).model_
    assert {"bf16", "bf16@rr"} <= set(split.gemm)
    rc = split.params_for(BF16, None, "rc").rate_flops_per_s
    rr = split.params_for(BF16, None, "rr").rate_flops_per_s
    assert rc / rr == pytest.approx(1.3, rel=0.05)
    t_rc = split.gemm_time_s(8192, 8192, 8192, fmt=BF16, scaling=None, out_fmt=BF16, gpu=H200, layout="rc")
    t_rr = split.gemm_time_s(8192, 8192, 8192, fmt=BF16, scaling=None, out_fmt=BF16, gpu=H200, layout="rr")
    assert t_rr / t_rc == pytest.approx(1.3, rel=0.05)
    # cr has no fit of its own: it uses the rc fit
    t_cr = split.gemm_time_s(8192, 8192, 8192, fmt=BF16, scaling=None, out_fmt=BF16, gpu=H200, layout="cr")
    assert t_cr == pytest.approx(t_rc, rel=1e-12)
    pooled = cal.Calibrator(gpu="H200", heldout_fraction=0.0).fit(data).model_
    assert set(pooled.gemm) == {"bf16"}
    # a split calibration survives a JSON round trip with its layout groups
    back = cal.CalibratedModel.from_dict(json.loads(json.dumps(split.to_dict())))
    assert set(back.gemm) == set(split.gemm)


def test_kernel_timed_records_are_not_event_corrected():
    data = _layout_records()
    fit = cal.Calibrator(gpu="H200", heldout_fraction=0.0).fit(
        {**data, "records": [r for r in data["records"] if r.get("layout", "rc") == "rc"]}
    )
    # the synthetic kernel times carry no event gap; correcting them would bias latency by ~2 us
    assert fit.model_.gemm["bf16"].latency_s == pytest.approx(4e-6, abs=0.5e-6)


def test_cli_gemm_layout_and_timing(capsys):
    assert main(["gemm", "4096", "4095", "4096", "--gpu", "h200", "--layout", "rr", "--timing", "event", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert (rec["layout"], rec["timing"]) == ("rr", "event")
    assert rec["time_s"] == pytest.approx(pm.gemm_time_s(4096, 4095, 4096, "bf16", "H200", layout="rr", timing="event"))
    assert main(["gemm", "64", "64", "64", "--gpu", "h200", "--layout", "cr"]) == 0
    out = capsys.readouterr().out
    assert "layout cr" in out and "kernel time" in out
    assert main(["gemm", "64", "64", "64", "--layout", "cc"]) == 2
    assert "invalid choice: 'cc'" in capsys.readouterr().err
    assert main(["gemm", "64", "64", "64", "--dtype", "fp8", "--gpu", "h200", "--layout", "rr"]) == 2
    assert "layout 'rc' only" in capsys.readouterr().err


# ---- cuBLAS's fallback kernels for misaligned 16-bit GEMMs ----------------------------------------


def _fallback_truth():
    main = cal.GemmParams(
        tile_m=128, tile_n=256, wave_quantization=1.0, rate_flops_per_s=800e12, k_overhead=96.0, latency_s=4e-6,
        mem_bw_bytes_per_s=4.2e12,
    )  # fmt: skip
    fallback = cal.GemmParams(
        tile_m=128, tile_n=128, wave_quantization=0.0, rate_flops_per_s=300e12, k_overhead=150.0, latency_s=10e-6,
        mem_bw_bytes_per_s=2.0e12, misaligned_factors=(2.5, 1.0, 1.0),
    )  # fmt: skip
    kernels = cal.KernelParams(latency_s=2e-6, bw_bytes_per_s=4e12, launch_s=1e-6, event_overhead_s=2e-6)
    return cal.CalibratedModel(gpu="H200", gemm={"bf16": main, "bf16@fallback": fallback}, kernels=kernels, source="t")


def test_misaligned_16bit_gemms_are_priced_by_the_fallback_group_by_hand():
    m = _fallback_truth()
    fb = m.gemm["bf16@fallback"]
    # 1000 x 4097 x 2000 rc: K is 1-aligned -> fallback, rate 300 TF / 2.5; tiles 8 x 16 = 128 on 132 SMs (q = 0)
    M, K, N = 1000, 4097, 2000
    compute = (128 / 132) * 2 * 128 * 128 * 132 * (K + 150.0) / (300e12 / 2.5)
    memory = 2 * (M * K + K * N + M * N) / 2.0e12
    want = 10e-6 + max(compute, memory)
    got = m.gemm_time_s(M, K, N, fmt=BF16, scaling=None, out_fmt=BF16, gpu=H200)
    assert got == pytest.approx(want, rel=1e-12)
    assert got == pytest.approx(fb.time_s(M, K, N, 2 * (M * K + K * N + M * N), 132, (K, N)), rel=1e-12)
    # aligned: the main group, without its misalignment factors
    aligned = m.gemm_time_s(1000, 4096, 2000, fmt=BF16, scaling=None, out_fmt=BF16, gpu=H200)
    assert aligned == pytest.approx(
        m.gemm["bf16"].time_s(1000, 4096, 2000, 2 * (1000 * 4096 + 4096 * 2000 + 2000000), 132)
    )
    # cr: M is the leading dimension; fp16 borrows bf16's fallback; arrays pick element by element
    assert m.gemm_time_s(1001, 4096, 2000, fmt=BF16, scaling=None, out_fmt=BF16, gpu=H200, layout="cr") > 2 * aligned
    fp16 = pm.get_format("fp16")
    assert m.gemm_time_s(M, K, N, fmt=fp16, scaling=None, out_fmt=fp16, gpu=H200) == pytest.approx(got, rel=1e-12)
    slower = dataclasses.replace(fb, latency_s=1e-3)  # an fp16 fallback fit of its own is preferred
    own = dataclasses.replace(m, gemm={**m.gemm, "fp16@fallback": slower})
    assert own.gemm_time_s(M, K, N, fmt=fp16, scaling=None, out_fmt=fp16, gpu=H200) > got + 0.9e-3
    arr = m.gemm_time_s(np.array([1000, 1000]), np.array([4096, 4097]), np.array([2000, 2000]), fmt=BF16,
                        scaling=None, out_fmt=BF16, gpu=H200)  # fmt: skip
    assert arr == pytest.approx([aligned, got], rel=1e-12)


def test_the_fallback_is_closed_form_for_sympy():
    import sympy

    m = _fallback_truth()
    Ms, Ks, Ns = sympy.symbols("M K N", positive=True, integer=True)
    expr = m.gemm_time_s(Ms, Ks, Ns, fmt=BF16, scaling=None, out_fmt=BF16, gpu=H200)
    assert isinstance(expr, sympy.Expr) and expr.has(sympy.Piecewise)
    for shape in ((1000, 4097, 2000), (1000, 4096, 2000), (1000, 4098, 2000), (1000, 4100, 2002)):
        num = m.gemm_time_s(*shape, fmt=BF16, scaling=None, out_fmt=BF16, gpu=H200)
        assert float(expr.subs(dict(zip((Ms, Ks, Ns), shape, strict=True)))) == pytest.approx(num, rel=1e-9)


def test_calibrator_fits_the_fallback_group_from_misaligned_gemms():
    truth = _fallback_truth()
    rng = np.random.default_rng(3)
    recs = []
    for i in range(300):
        M, N = (int(x) for x in (np.exp(rng.uniform(np.log(256), np.log(16384), 2)).astype(int) // 64 + 1) * 64)
        K = int(np.exp(rng.uniform(np.log(512), np.log(16384))))
        K = K if i % 3 else (K // 8 + 1) * 8  # a third aligned, the rest as they fall (mostly misaligned)
        t = truth.gemm_time_s(M, K, N, fmt=BF16, scaling=None, out_fmt=BF16, gpu=H200)
        recs.append(dict(op="gemm", M=M, K=K, N=N, dtype="bf16", layout="rr", timing="kernel", time_s=float(t)))
    recs += [dict(op="copy", bytes=b, time_s=2e-6 + b / 4e12) for b in (1e6, 1e8, 1e9, 4e9)]
    data = {"meta": {"date": "t", "gpu_name": "H200"}, "records": recs}
    tiles = ((128, 128), (128, 256))  # the two tiles of the truth (the default four only take longer)
    fit = cal.Calibrator(gpu="H200", heldout_fraction=0.0, tiles=tiles).fit(data).model_
    fb = fit.gemm["bf16@fallback"]
    assert fb.misaligned_factors[1:] == (1.0, 1.0)  # 2- and 4-aligned: the fallback's own rate (one class)
    assert fb.misaligned_factors[0] == pytest.approx(2.5, rel=0.1)
    for shape in ((4096, 4097, 4096), (2048, 3001, 8192), (8192, 1234, 1024)):
        want = truth.gemm_time_s(*shape, fmt=BF16, scaling=None, out_fmt=BF16, gpu=H200)
        assert fit.gemm_time_s(*shape, fmt=BF16, scaling=None, out_fmt=BF16, gpu=H200) == pytest.approx(want, rel=0.1)
    # off, or too few misaligned GEMMs: no fallback group (the main group's factors price them)
    off = cal.Calibrator(gpu="H200", heldout_fraction=0.0, fallback=False, tiles=tiles).fit(data).model_
    assert "bf16@fallback" not in off.gemm
    few = {**data, "records": [r for r in recs if r["op"] != "gemm" or r["K"] % 8 == 0 or r["M"] < 600][:200]}
    assert sum(1 for r in few["records"] if r["op"] == "gemm" and r["K"] % 8) < cal.MIN_FALLBACK
    assert "bf16@fallback" not in cal.Calibrator(gpu="H200", heldout_fraction=0.0, tiles=tiles).fit(few).model_.gemm
    # the group survives a JSON round trip
    back = cal.CalibratedModel.from_dict(json.loads(json.dumps(fit.to_dict())))
    assert set(back.gemm) == set(fit.gemm)
    assert back.gemm["bf16@fallback"].rate_flops_per_s == pytest.approx(fb.rate_flops_per_s, rel=1e-12)
    assert back.gemm["bf16@fallback"].misaligned_factors == pytest.approx(fb.misaligned_factors, rel=1e-12)


def test_the_shipped_h200_calibration_has_a_fallback_group():
    shipped = pm.time_model("H200").load()
    fb = shipped.fallback_params(BF16)
    assert fb is not None and fb.misaligned_factors[1:] == (1.0, 1.0) and fb.misaligned_factors[0] > 1.5
    assert fb.throttle_gain == 0.0
    assert shipped.fallback_params(pm.get_format("fp8_e4m3")) is None
