"""Which time model each GPU gets, the transfer rules of the calibrated model, and provenance."""

import dataclasses
import json
import warnings

import numpy as np
import pytest
import sympy as sp

import perfmodel as pm
from perfmodel import float8 as f8
from perfmodel.errors import CalibrationError, PerfModelError, PerfModelWarning
from perfmodel.formats import get_format
from perfmodel.models import registry
from perfmodel.models.calibrated import CalibratedModel, load_calibration
from perfmodel.models.estimated import ESTIMATES
from perfmodel.models.shipped import DIR

H200, H100 = pm.get_gpu("H200"), pm.get_gpu("H100")
SHIPPED = load_calibration(DIR / "h200.json")
BF16, FP8 = get_format("bf16"), get_format("fp8_e4m3")


def test_every_gpu_answers_with_a_provenance():
    kinds = {name: pm.provenance(name).kind for name in pm.list_gpus()}
    assert kinds["H200"] == "measured"
    hopper = [g.name for g in pm.GPUS.values() if g.arch == "90" and g.name != "H200"]
    assert len(hopper) >= 10 and all(kinds[g] == "transferred" for g in hopper)
    others = [g.name for g in pm.GPUS.values() if g.arch != "90"]
    assert all(kinds[g] == "estimated" for g in others), kinds
    for name in pm.list_gpus():
        prov = pm.provenance(name)
        assert prov.gpu == name and prov.expected_error.basis and prov.line().startswith(prov.kind)
        json.dumps(prov.to_dict())  # plain types only


def test_new_sm90_rows_have_sources_and_device_names():
    for name, device in [
        ("H100-NVL", "NVIDIA H100 NVL"),
        ("H800", "NVIDIA H800"),
        ("H800-PCIe", "NVIDIA H800 PCIe"),
        ("H20", "NVIDIA H20"),
        ("GH200", "NVIDIA GH200 480GB"),
        ("GH200-144GB", "NVIDIA GH200 144G HBM3e"),
    ]:
        spec = pm.get_gpu(device)
        assert spec.name == name and spec.arch == "90"
        assert {"mem_bw_bytes_per_s", "num_sms", "boost_clock_hz", "power_w"} <= set(spec.sources)
        assert spec.peaks.source
    assert pm.get_gpu("H20").peak_flops_per_s("bf16") == 148e12  # dense: NVIDIA never quoted a sparse figure


def test_a_transfer_rescales_rates_by_peak_and_memory_by_bandwidth():
    pcie = pm.get_gpu("H100-PCIe")
    p = SHIPPED.gemm["bf16"]
    ref = SHIPPED.reference
    rate = p.rate_flops_per_s * pcie.peak_flops_per_s("bf16") / ref.peaks_flops_per_s["bf16"]
    bw = p.mem_bw_bytes_per_s * pcie.mem_bw_bytes_per_s / ref.mem_bw_bytes_per_s
    pressure = (pcie.peak_flops_per_s("bf16") / 350.0) / (H200.peak_flops_per_s("bf16") / 700.0)
    gain = p.throttle_gain * pressure
    # by hand, the module doc's formula on 114 SMs
    M = K = N = 8192
    tiles = -(-M // p.tile_m) * -(-N // p.tile_n)
    q = p.wave_quantization
    waves = (1 - q) * tiles / 114 + q * -(-tiles // 114)
    compute = waves * 2 * p.tile_m * p.tile_n * 114 * (K + p.k_overhead) / rate
    compute *= 1 + gain * np.log(1 + compute / p.throttle_time_s)
    nbytes = (M * K + K * N + M * N) * 2
    expected = p.latency_s + max(compute, nbytes / bw)
    assert pm.gemm_time_s(M, K, N, "bf16", pcie) == pytest.approx(expected, rel=1e-12)
    # on the H200 itself, nothing is rescaled
    assert SHIPPED.transfer_factors(H200, BF16, None) == {"rate": 1.0, "bandwidth": 1.0, "throttle": 1.0}
    f = SHIPPED.transfer_factors(pcie, FP8, "rowwise")
    assert f["rate"] == pytest.approx(1513 / 1979) and f["bandwidth"] == pytest.approx(2.0 / 4.8)


def test_casts_transfer_as_sm_bound_kernels_capped_by_the_copy_bandwidth():
    cast = SHIPPED.casts["rowwise"]
    nbytes = 1e9
    # H100 SXM: same SMs and clock, so the rowwise cast runs as on the H200 (it stays under the copy roof)
    copy_h100 = SHIPPED.kernels.bw_bytes_per_s * 3.35 / 4.8
    assert cast.activation_bw_bytes_per_s < copy_h100
    assert SHIPPED.memory_kernel_time_s(nbytes, gpu=H100, recipe="rowwise", tensor="input") == pytest.approx(
        cast.latency_s + nbytes / cast.activation_bw_bytes_per_s
    )
    # a GPU with little bandwidth: capped at its copy bandwidth
    slow = dataclasses.replace(H100, mem_bw_bytes_per_s=1.0e12)
    copy_slow = SHIPPED.kernels.bw_bytes_per_s * 1.0 / 4.8
    assert SHIPPED.memory_kernel_time_s(nbytes, gpu=slow, recipe="rowwise", tensor="input") == pytest.approx(
        cast.latency_s + nbytes / copy_slow
    )
    # fewer SMs at a lower clock: slower in proportion
    pcie = pm.get_gpu("H100-PCIe")
    sm = 114 * 1755e6 / (132 * 1980e6)
    assert SHIPPED.memory_kernel_time_s(nbytes, gpu=pcie, recipe="rowwise", tensor="weight") == pytest.approx(
        cast.latency_s + nbytes / min(cast.weight_bw_bytes_per_s * sm, SHIPPED.kernels.bw_bytes_per_s * 2.0 / 4.8)
    )
    # recipes without a fit borrow the rowwise casts
    assert (
        SHIPPED.cast_params("mxfp8") == cast
        and SHIPPED.cast_params("blockwise+dynamic") == SHIPPED.casts["rowwise+dynamic"]
    )


def test_specs_built_by_replace_or_from_proton_get_their_architectures_model():
    same = dataclasses.replace(H200)
    assert pm.provenance(same).kind == "measured"
    wider = dataclasses.replace(H200, mem_bw_bytes_per_s=6e12)
    prov = pm.provenance(wider)
    assert prov.kind == "transferred" and "rescaled" in prov.source
    assert pm.gemm_time_s(16, 8192, 8192, "bf16", wider) < pm.gemm_time_s(16, 8192, 8192, "bf16", H200)
    proton = pm.gpu_from_proton(
        "CUDA", {"arch": "90", "num_sms": 132, "clock_rate": 1980000, "memory_clock_rate": 3201000, "bus_width": 6016}
    )
    assert proton.name == "H200" and pm.provenance(proton).kind in ("measured", "transferred")
    assert pm.gemm_time_s(4096, 4096, 4096, "bf16", proton) == pytest.approx(
        pm.gemm_time_s(4096, 4096, 4096, "bf16", H200), rel=0.01
    )


def test_roofline_only_gpus_warn_once_and_say_so():
    t4 = dataclasses.replace(H100, name="T4-like", arch="75", power_w=None)
    registry._warned.discard("T4-like")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert pm.provenance(t4).kind == "roofline"
        pm.gemm_time_s(4096, 4096, 4096, "bf16", t4)
    assert [w.category for w in caught] == [PerfModelWarning]
    assert "no calibrated or estimated time model for arch '75'" in str(caught[0].message)
    assert pm.time_model(t4) is pm.gemm.ROOFLINE
    # asking for the roofline explicitly is not a surprise: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pm.provenance(H100, "roofline").kind == "roofline"
    with pytest.raises(PerfModelError, match="T4-like has no calibration"):
        pm.time_model(t4, "calibrated")


def test_attached_and_explicit_calibrations():
    mine = dataclasses.replace(SHIPPED, residuals={"bf16": {"heldout": {"mdape": 3.0}}}, source="my sweep 2027-01-01")
    spec = dataclasses.replace(H200, calibration=mine)
    prov = pm.provenance(spec)
    assert prov.kind == "measured" and "your H200 calibration (measured 2027-01-01)" in prov.summary
    assert prov.expected_error.gemm_time_pct == 3.0
    assert pm.time_model(dataclasses.replace(spec, mem_bw_bytes_per_s=5e12)) is mine  # replace keeps what you attached
    blackwell = dataclasses.replace(pm.get_gpu("B200"), calibration=mine)
    with pytest.raises(CalibrationError, match="transfers within one architecture"):
        pm.gemm_time_s(4096, 4096, 4096, "bf16", blackwell)
    # per call, an explicit transfer across architectures is allowed and labelled
    prov = pm.provenance("B200", mine)
    assert prov.kind == "transferred" and "across architectures, by your choice" in prov.assumptions
    assert pm.provenance(H100, pm.gemm.ORIGINAL).kind == "roofline"


def test_calibration_field_holds_only_what_was_attached():
    assert H100.calibration is None  # nothing attached: the registry's model is pm.time_model(gpu)
    mine = dataclasses.replace(H100, calibration=pm.gemm.ORIGINAL)
    assert mine.calibration is pm.gemm.ORIGINAL and pm.time_model(mine) is pm.gemm.ORIGINAL
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dataclasses.replace(H100, num_sms=100)


def test_schema_2_files_are_refused_by_name(tmp_path):
    d = SHIPPED.to_dict()
    v2 = {
        "schema": "perfmodel.calibration/2",
        "gpu": "H200",
        "source": "old",
        "gemm": {k: dataclasses.asdict(v) for k, v in SHIPPED.gemm.items()},
        "kernels": dataclasses.asdict(SHIPPED.kernels),
        "casts": {k: dataclasses.asdict(v) for k, v in SHIPPED.casts.items()},
        "step_gemm_factors": d["step_gemm_factors"],
    }
    path = tmp_path / "old.json"
    path.write_text(text := json.dumps(v2))
    with pytest.raises(CalibrationError, match=r"no longer read: fit the GPU again with `perfmodel calibrate`"):
        load_calibration(path)
    assert path.read_text() == text  # the user's file is untouched


def test_schema_3_round_trips_in_fractions_that_travel():
    d = SHIPPED.to_dict()
    assert 0.5 < d["gemm"]["bf16"]["rate_fraction"] < 1 and 0 < d["casts"]["rowwise"]["activation_bw_fraction"] < 1
    assert CalibratedModel.from_dict(d).to_dict() == d


@pytest.mark.parametrize(
    "path, value, message",
    [
        (("gemm", "bf16", "rate_fraction"), 3.0, "faster than the GPU's peak"),
        (("gemm", "bf16", "latency_s"), -1e-6, "must be a finite number >= 0"),
        (("kernels", "bw_fraction"), float("nan"), "finite positive"),
        (("casts", "rowwise", "weight_bw_fraction"), 0.0, "finite positive"),
        (("gemm", "bf16", "tile_m"), 0, "tile_m must be an int"),
        (("reference", "mem_bw_bytes_per_s"), -4.8e12, "finite positive"),
    ],
)
def test_damaged_calibrations_are_refused(tmp_path, path, value, message):
    d = json.loads(json.dumps(SHIPPED.to_dict()))
    node = d
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(d))
    with pytest.raises(CalibrationError, match=message):
        load_calibration(bad)


def test_symbolic_equals_numeric_including_misaligned_shapes():
    M, K, N = sp.symbols("M K N", positive=True, integer=True)
    for gpu in ("H200", "H100-PCIe", "B200"):
        expr = pm.gemm_time_s(M, K, N, "bf16", gpu)
        for shape in [(1, 1, 1), (100, 4097, 5000), (4096, 4100, 4096), (8192, 8192, 8192)]:
            got = float(expr.subs(dict(zip((M, K, N), shape, strict=True))))
            assert got == pytest.approx(pm.gemm_time_s(*shape, "bf16", gpu), rel=1e-12)


def test_estimates_use_published_gemm_ratios_and_keep_formats_apart():
    b200 = pm.get_gpu("B200")
    est = ESTIMATES["100"]
    model = pm.time_model(b200)
    assert model.estimate is est and model.reference.name == "B200"
    ratio = (3432.5 / 4500) / (1402.6 / 1979)  # published B200 over H100, same benchmark
    fitted = SHIPPED.gemm["fp8_e4m3/tensorwise"].rate_flops_per_s / SHIPPED.reference.peaks_flops_per_s["fp8_e4m3"]
    assert model.gemm["fp8_e4m3/tensorwise"].rate_flops_per_s == pytest.approx(fitted * ratio * 4.5e15)
    assert "mxfp8/mx" in model.gemm and "fp8_e4m3/rowwise" in model.gemm
    assert all("GEMM" in s or "HBM" in s for s in est.sources())
    a100 = pm.time_model("A100")
    assert not any(k.startswith("fp8") for k in a100.gemm)  # no fp8 path on Ampere
    # the recipe order torchao measured on B200 (tensorwise > mxfp8 > rowwise): not fitted, checked
    s = {r: float(f8.speedup(16384, 4096, 14336, r, "B200")) for r in ("tensorwise", "mxfp8", "rowwise")}
    assert s["tensorwise"] > s["mxfp8"] > s["rowwise"]


def test_answers_carry_their_provenance():
    lt = f8.linear_time(8192, 4096, 4096, "rowwise", "H100")
    assert lt.provenance.kind == "transferred" and lt.perfdata().meta["provenance"] is lt.provenance
    rep = f8.report("llama3-8b", tokens=8192, gpu="H100")
    assert rep.provenance.kind == "transferred" and rep.to_dict()["provenance"]["kind"] == "transferred"
    assert str(rep).splitlines()[-2].startswith("provenance: transferred")
    assert str(rep).splitlines()[-1] == f"error bar: {f8.speedup_error_bar('H100')}"


def test_expected_errors_match_the_validation_report():
    """The numbers every answer quotes are the ones docs/validation.md reports (validate.py gemm)."""
    from bench_modules import bench_module

    validate = bench_module("validate")
    pub = validate.score_published_float8()["torchao_h100_rowwise_ln_linear_sigmoid"]
    ours = pub["perfmodel (transferred, H100-SXM)"]
    err = registry.EXPECTED_ERRORS
    assert err["transferred"].speedup_pct == pytest.approx(ours["mdape"], abs=0.05)
    assert err["transferred"].decisions_pct == pytest.approx(100 * ours["agree_clear"] / ours["n_clear"], abs=0.5)
    roof = pub["roofline (H100-SXM)"]
    assert err["roofline"].speedup_pct == pytest.approx(roof["mdape"], abs=0.05)
    assert err["estimated"].gemm_time_pct == pytest.approx(validate.score_published_gemm()["_all"]["mdape"], abs=0.05)
    # the done criteria of the portable-calibration work, on the published H100 table
    assert ours["mdape"] <= 15 and ours["agree_clear"] / ours["n_clear"] >= 0.9
