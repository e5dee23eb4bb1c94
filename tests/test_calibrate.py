"""Calibration: the shape-aware model, its fit (recovers known parameters), persistence, errors."""

import dataclasses
import json

import numpy as np
import pytest
import sympy as sp

import perfmodel as pm
from perfmodel import calibrate as cal
from perfmodel.cli import main
from perfmodel.errors import CalibrationError, FileRefusedError

H200 = pm.get_gpu("H200")
BF16 = pm.get_format("bf16")
TRUE = cal.GemmParams(
    tile_m=128,
    tile_n=256,
    wave_quantization=1.0,
    rate_flops_per_s=800e12,
    k_overhead=96.0,
    latency_s=4e-6,
    mem_bw_bytes_per_s=4.2e12,
)
KERNELS = cal.KernelParams(latency_s=2e-6, bw_bytes_per_s=4e12, launch_s=1e-6, event_overhead_s=2e-6)


def truth_model():
    return cal.CalibratedModel(gpu="H200", gemm={"bf16": TRUE}, kernels=KERNELS, source="synthetic")


def synthetic_records(n=300, seed=0):
    rng = np.random.default_rng(seed)

    def draw(lo, hi):
        return (np.exp(rng.uniform(np.log(lo), np.log(hi), n)).astype(int) // 8 + 1) * 8

    M, K, N = draw(16, 32768), draw(256, 28672), draw(256, 28672)
    t = truth_model().gemm_time_s(M, K, N, fmt=BF16, scaling=None, out_fmt=BF16, gpu=H200)
    t = t + KERNELS.event_overhead_s  # the sweep times calls with CUDA events
    recs = [
        dict(op="gemm", M=int(m), K=int(k), N=int(n_), dtype="bf16", scaling=None, time_s=float(x))
        for m, k, n_, x in zip(M, K, N, t, strict=True)
    ]
    recs += [dict(op="copy", bytes=b, time_s=2e-6 + b / 4e12) for b in (1e6, 1e8, 1e9, 4e9)]
    recs += [
        dict(op="launch", kernel="k", method="profiler_kernel_duration", time_s=1e-6),
        dict(op="launch", kernel="k", method="do_bench", time_s=3e-6),
    ]
    return {"meta": {"date": "2026-11-30", "gpu_name": "NVIDIA H200"}, "records": recs}


def test_model_formula_by_hand():
    M, K, N = 1000, 4096, 3000
    tiles = -(-M // 128) * -(-N // 256)  # 8 * 12 = 96 tiles: one whole wave on 132 SMs (q = 1)
    compute = 1 * 2 * 128 * 256 * 132 * (K + 96.0) / 800e12
    memory = ((M * K + K * N) * 2 + M * N * 2) / 4.2e12
    assert tiles == 96
    got = truth_model().gemm_time_s(M, K, N, fmt=BF16, scaling=None, out_fmt=BF16, gpu=H200)
    assert got == pytest.approx(4e-6 + max(compute, memory))


def test_model_on_numpy_and_sympy():
    m = truth_model()
    Ms = np.array([16, 1000, 8192])
    grid = m.gemm_time_s(Ms, 4096, 4096, fmt=BF16, scaling=None, out_fmt=BF16, gpu=H200)
    M = sp.Symbol("M", positive=True, integer=True)
    expr = m.gemm_time_s(M, 4096, 4096, fmt=BF16, scaling=None, out_fmt=BF16, gpu=H200)
    assert expr.has(sp.ceiling) and expr.has(sp.Max)
    for value, mv in zip(grid, Ms, strict=True):
        assert float(expr.subs(M, int(mv))) == pytest.approx(value, rel=1e-12)


def test_fit_recovers_known_parameters():
    fitted = cal.Calibrator(gpu="H200", heldout_fraction=0.3).fit(synthetic_records())
    p = fitted.model_.gemm["bf16"]
    assert (p.tile_m, p.tile_n) == (128, 256)
    assert p.wave_quantization == pytest.approx(1.0, abs=0.02)
    assert p.rate_flops_per_s == pytest.approx(800e12, rel=0.02)
    assert p.k_overhead == pytest.approx(96.0, rel=0.2)
    assert p.latency_s == pytest.approx(4e-6, rel=0.1)
    assert p.throttle_gain < 0.01 and p.misaligned_factors == (1.0, 1.0, 1.0)  # all shapes aligned
    assert fitted.residuals_["bf16"]["heldout"]["mdape"] < 0.5
    assert fitted.residuals_["bf16"]["heldout"]["n"] > 50
    k = fitted.model_.kernels
    assert k.bw_bytes_per_s == pytest.approx(4e12, rel=1e-6) and k.latency_s == pytest.approx(2e-6, rel=1e-6)
    assert k.launch_s == 1e-6 and k.event_overhead_s == pytest.approx(2e-6)
    # deterministic: the same data gives the same model
    again = cal.fit(synthetic_records(), "H200")
    assert again.model_ == fitted.model_


def test_fitted_gpu_predicts_with_the_calibration():
    fitted = cal.fit(synthetic_records(), "H200")
    g = fitted.gpu_
    assert g.calibration is fitted.model_
    assert pm.gemm_time_s(4096, 4096, 4096, "bf16", g) == pytest.approx(
        fitted.model_.gemm_time_s(4096, 4096, 4096, fmt=BF16, scaling=None, out_fmt=BF16, gpu=g)
    )
    # formats without a fit fall back to the roofline (tf32) or borrow a measured path (fp16)
    assert pm.gemm_time_s(4096, 4096, 4096, "fp16", g) == pm.gemm_time_s(4096, 4096, 4096, "bf16", g)
    assert pm.gemm_time_s(4096, 4096, 4096, "tf32", g) == pm.gemm_time_s(
        4096, 4096, 4096, "tf32", g, time_model="roofline"
    )


def test_save_load_roundtrip(tmp_path):
    fitted = cal.fit(synthetic_records(), "H200")
    path = fitted.model_.save(tmp_path / "h200.json")
    loaded = cal.load_calibration(path)
    # bandwidths are stored as fractions of the reference GPU's, so x / ref * ref may come back 1 ulp off
    assert loaded.gemm.keys() == fitted.model_.gemm.keys()
    for key, want in fitted.model_.gemm.items():
        got = dataclasses.asdict(loaded.gemm[key])
        for name, value in dataclasses.asdict(want).items():
            assert got[name] == pytest.approx(value, rel=1e-12, abs=0), (key, name)
    assert loaded.kernels == fitted.model_.kernels
    before = path.read_bytes()
    with pytest.raises(FileRefusedError, match=r"h200\.json: exists; not overwriting it\. Pass force=True"):
        fitted.model_.save(path)  # an existing file, calibration or not, needs force
    assert path.read_bytes() == before
    assert fitted.model_.save(path, force=True) == path
    other = tmp_path / "notes.json"
    other.write_text('{"mine": 1}')
    with pytest.raises(FileRefusedError, match="not overwriting"):
        fitted.model_.save(other)
    assert json.loads(other.read_text()) == {"mine": 1}
    with pytest.raises(FileRefusedError, match=r"the folder .*nowhere.* does not exist"):
        fitted.model_.save(tmp_path / "nowhere" / "c.json")
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize(
    "content,msg",
    [
        ("{", "invalid JSON at line 1 column 2.*truncated"),
        ("[1, 2]", "expected a JSON object"),
        ('{"schema": "other"}', "schema is 'other'"),
        ('{"schema": "perfmodel.calibration/2", "gpu": "H200"}', "no longer read"),
    ],
)
def test_load_calibration_errors(tmp_path, content, msg):
    path = tmp_path / "c.json"
    path.write_text(content)
    with pytest.raises(CalibrationError, match=msg):
        cal.load_calibration(path)


def test_dataset_errors(tmp_path):
    with pytest.raises(CalibrationError, match="no records"):
        cal.load_dataset({"records": []})
    with pytest.raises(CalibrationError, match="'records' list"):
        cal.load_dataset({"rows": []})
    with pytest.raises(CalibrationError, match=r"records\[0\] has no 'op'"):
        cal.load_dataset({"records": [{"M": 1}]})
    with pytest.raises(CalibrationError, match="no 'gemm' records"):
        cal.fit({"records": [{"op": "copy", "bytes": 1, "time_s": 1}]}, "H200")
    with pytest.raises(CalibrationError, match="heldout_fraction"):
        cal.Calibrator(gpu="H200", heldout_fraction=1.0).fit(synthetic_records())
    with pytest.raises(pm.UnknownGPUError):
        cal.fit(synthetic_records(), "H2000")
    with pytest.raises(CalibrationError, match="wave_quantization"):
        dataclasses.replace(TRUE, wave_quantization=1.5)
    with pytest.raises(CalibrationError, match="misaligned_factors"):
        dataclasses.replace(TRUE, misaligned_factors=(0.5, 1, 1))


def test_heldout_split_is_deterministic_and_sized():
    keys = [(m, 4096, 4096) for m in range(1, 2001)]
    share = np.mean([cal.is_heldout(*k) for k in keys])
    assert 0.25 < share < 0.35
    assert [cal.is_heldout(*k) for k in keys[:50]] == [cal.is_heldout(*k) for k in keys[:50]]


def test_ape_stats():
    st = cal.ape_stats([110, 90, 100, 100], [100, 100, 100, 100])
    assert st == {"n": 4, "mdape": 5.0, "p90": pytest.approx(10.0), "max": pytest.approx(10.0)}


def test_cast_fit_from_linear_records():
    from perfmodel.float8.recipes import RECIPES, CastOptions

    recs = []
    for m in (1024, 4096, 16384):
        for k, n in ((4096, 4096), (4096, 14336), (8192, 1024)):
            ks = RECIPES["tensorwise"].cast_kernels(m, k, n, CastOptions())
            mem = [x for x in ks if not x.launch_only]
            t = (
                len(mem) * 3e-6
                + sum(x.bytes for x in mem if x.tensor != "weight") / 2e12
                + sum(x.bytes for x in mem if x.tensor == "weight") / 3e12
                + (len(ks) - len(mem)) * 1e-6
            )
            for dynamic in ("static", "m"):
                recs.append(
                    dict(
                        op="linear",
                        M=m,
                        K=k,
                        N=n,
                        recipe="tensorwise",
                        dynamic=dynamic,
                        kernels=[
                            {"name": "triton_red_fused_abs_max_0", "time_s": t * (2 if dynamic == "m" else 1)},
                            {"name": "nvjet_sm90_qqtst_128x128", "time_s": 1e-3},
                        ],
                    )
                )
    model = cal.CalibratedModel(gpu="H200", gemm={}, kernels=KERNELS, source="t")
    casts = cal._fit_casts(recs, model)
    static, dynamic = casts["tensorwise"], casts["tensorwise+dynamic"]
    assert static.activation_bw_bytes_per_s == pytest.approx(2e12, rel=1e-6)
    assert static.weight_bw_bytes_per_s == pytest.approx(3e12, rel=1e-6)
    assert static.latency_s == pytest.approx(3e-6, rel=1e-6)
    assert dynamic.activation_bw_bytes_per_s < static.activation_bw_bytes_per_s
    only_static = cal.CalibratedModel(gpu="H200", gemm={}, kernels=KERNELS, casts={"tensorwise": static}, source="t")
    assert only_static.memory_kernel_time_s(1e9, gpu=H200, recipe="tensorwise+dynamic", tensor="input") == (
        static.latency_s + 1e9 / static.activation_bw_bytes_per_s
    )
    assert only_static.memory_kernel_time_s(1e9, gpu=H200, recipe="rowwise") == KERNELS.latency_s + 1e9 / 4e12
    assert cal.measured_cast_time_s(recs[0]) == recs[0]["kernels"][0]["time_s"]
    assert cal.is_dynamic(recs[1]) and not cal.is_dynamic(recs[0]) and not cal.is_dynamic({})
    assert not cal.is_gemm_kernel("triton_poi_fused__scaled_mm__to_copy_1")
    assert cal.is_gemm_kernel("nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN")


def test_cli(tmp_path, capsys):
    data = tmp_path / "gemm.json"
    data.write_text(json.dumps(synthetic_records()))
    out = tmp_path / "h200.json"
    assert main(["calibrate", str(data), "--gpu", "h200", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "bf16" in text and "heldout" in text and "MdAPE" in text
    assert cal.load_calibration(out).gpu == "H200"
    assert main(["calibrate", str(tmp_path / "missing.json"), "--gpu", "h200", "-o", str(out)]) == 2
    assert "missing.json: cannot read the dataset (No such file or directory)" in capsys.readouterr().err


def test_cli_output_safety(tmp_path, capsys):
    data = tmp_path / "gemm.json"
    data.write_text(json.dumps(synthetic_records()))
    out = tmp_path / "h200.json"
    out.write_text("{}")
    argv = ["calibrate", str(data), "--gpu", "h200"]
    assert main([*argv, "-o", str(out)]) == 2  # refused before the fit, file untouched
    assert "h200.json: exists; not overwriting it" in capsys.readouterr().err and out.read_text() == "{}"
    assert main([*argv, "-o", str(out), "--force"]) == 0
    assert cal.load_calibration(out).gpu == "H200"
    assert main([*argv, "-o", str(data), "--force"]) == 2  # the input itself: refused even with --force
    assert "this is the input" in capsys.readouterr().err and json.loads(data.read_text())["records"]
    assert main([*argv, "-o", str(tmp_path / "no" / "dir" / "c.json")]) == 2
    assert "does not exist; perfmodel does not create folders" in capsys.readouterr().err
    capsys.readouterr()
    assert main([*argv, "-o", "-"]) == 0  # standard output: pure JSON; the report goes to stderr
    captured = capsys.readouterr()
    assert json.loads(captured.out)["gpu"] == "H200" and "MdAPE" in captured.err


@pytest.mark.parametrize(
    "record,match",
    [
        ({"op": "gemm", "K": 8, "N": 8, "dtype": "bf16", "time_s": 1e-5}, r"records\[300\] \(op 'gemm'\) lacks 'M'"),
        ({"op": "gemm", "M": 0, "K": 8, "N": 8, "dtype": "bf16", "time_s": 1e-5}, r"records\[300\]\.M is 0"),
        ({"op": "gemm", "M": 8, "K": 8, "N": 8, "dtype": "bf99", "time_s": 1e-5}, r"records\[300\]: unknown"),
        ({"op": "gemm", "M": 8, "K": 8, "N": 8, "dtype": "bf16", "time_s": None}, r"\.time_s is None"),
        ({"op": "copy", "bytes": -1, "time_s": 1e-5}, r"records\[300\]\.bytes is -1, expected a finite"),
        ({"op": "linear", "M": 8, "K": 8, "N": 8, "kernels": [{"name": 3}]}, r"\.kernels\[0\] is"),
        ({"op": "linear", "M": 8, "K": 8, "N": 8, "recipe": ["x"]}, r"\.recipe is \['x'\]"),
    ],
)
def test_bad_records_are_named(tmp_path, capsys, record, match):
    data = synthetic_records()
    data["records"].insert(300, record)
    path = tmp_path / "d.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CalibrationError, match=r"d\.json: .*" + match):
        cal.load_dataset(path)
    assert main(["calibrate", str(path), "--gpu", "h200", "-o", str(tmp_path / "c.json")]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_failed_configs_are_skipped():
    data = synthetic_records()
    data["records"].append({"op": "gemm", "M": 8, "K": 8, "N": 8, "dtype": "bf16", "time_s": None, "errors": ["oom"]})
    assert cal.fit(data, "H200").model_.gemm


def test_model_extras_by_hand():
    p = dataclasses.replace(
        TRUE, wave_quantization=0.25, throttle_gain=0.1, throttle_time_s=1e-3, misaligned_factors=(4.0, 3.0, 2.0)
    )
    M, K, N = 1000, 4098, 3000  # K is only 2-aligned
    tiles = 8 * 12
    waves = 0.75 * tiles / 132 + 0.25 * 1
    c = waves * 2 * 128 * 256 * 132 * (K + 96.0) / 800e12 * 3.0
    c = c * (1 + 0.1 * np.log(1 + c / 1e-3))
    assert p.compute_s(M, K, N, 132) == pytest.approx(c)
    assert p.compute_s(M, 4096, N, 132) < p.compute_s(M, K, N, 132) / 2.5
    m = sp.Symbol("M", positive=True)
    assert float(p.compute_s(m, 4096, N, 132).subs(m, M)) == pytest.approx(p.compute_s(M, 4096, N, 132))


def test_fit_keeps_the_bandwidth_a_calibration_file_accepts():
    # compute-bound GEMMs only: the memory bandwidth is free, and a free fit may put it anywhere up to its
    # search bound (10 TB/s) — above the 1.2x of the GPU's that a calibration file refuses; the fit then
    # fits again within the bound given
    from perfmodel.calibrate import _fit_group
    from perfmodel.counting import _gemm_bytes

    M = K = N = np.array([4096.0, 6144, 8192, 12288, 16384] * 4)
    t = truth_model().gemm_time_s(M, K, N, fmt=BF16, scaling=None, out_fmt=BF16, gpu=H200)
    nbytes = np.asarray(_gemm_bytes(M, K, N, BF16, BF16, None), float)
    free = _fit_group(M, K, N, nbytes, t, 132, [(128, 256)], 8e14)
    low = 0.5 * free.mem_bw_bytes_per_s
    bound = _fit_group(M, K, N, nbytes, t, 132, [(128, 256)], 8e14, max_bw=low)
    assert bound.mem_bw_bytes_per_s <= low * (1 + 1e-9)
    # the bound binds the bandwidth only: the compute-bound times are still fitted
    again = bound.time_s(M, K, N, nbytes, 132, (K, N))
    assert np.allclose(again, t, rtol=0.02)
