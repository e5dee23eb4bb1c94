"""The dense check of the transferred model on the H100 SXM (benchmarks/validate_dense_transfer.py, the data of
benchmarks/data/h100_2026-12-06dense): its docs table is the script's output, the provenance figures are what it
computes, and its scores are the formulas they say on hand-made records."""

import dataclasses
import gzip
import math

import numpy as np
import pytest
from bench_modules import bench_module
from test_validation import assert_same_text_but_rounding

import perfmodel as pm
from benchmarks.harness import tables
from perfmodel.models.registry import EXPECTED_ERRORS, TRANSFER_CHECKS, calibrated_model

DATA = ("benchmarks/data/h100_2026-12-06dense", "benchmarks/data/h100_2026-12-06dense-b2")  # one board each


@pytest.fixture(scope="module")
def v():
    return bench_module("validate_dense_transfer")


@pytest.fixture(scope="module")
def report(v):
    return v.evaluate([v.ROOT / d for d in DATA], "H100-SXM")


def test_the_docs_table_is_the_script_output(v, report):
    doc = (v.ROOT / "docs" / "validation.md").read_text()
    shipped = tables.block_text(doc, v.BLOCK)
    # stale: PYTHONPATH=. python benchmarks/validate_dense_transfer.py <DATA> --docs docs/validation.md
    assert_same_text_but_rounding(v.markdown(report), shipped)


def test_the_h100_provenance_carries_what_the_check_gives(v, report):
    check = TRANSFER_CHECKS["H100-SXM"]
    me = report["pooled"]
    worst_gemm = max(g["held_out"]["mdape"] for g in me["gemm"].values())
    assert check.gemm_time_pct == pytest.approx(worst_gemm, abs=0.05)
    worst_speedup = max(me["linear"][r]["speedup"]["mdape"] for r in v.RECIPES)
    assert check.speedup_pct == pytest.approx(worst_speedup, abs=0.05)
    right = sum(me["linear"][r]["right_clear"] for r in v.RECIPES)
    clear = sum(me["linear"][r]["n_clear"] for r in v.RECIPES)
    assert (
        check.decisions_pct == pytest.approx(100 * right / clear, abs=0.05) and f"{right}/{clear} clear" in check.basis
    )
    assert f"{len(DATA)} boards" in check.basis.replace("two boards", "2 boards")
    for recipe in ("tensorwise", "rowwise"):  # the direction the basis states
        assert f"{me['linear'][recipe]['over']:.2f}x" in check.basis
    assert "pre-registered" in check.basis and "2026-12-06" in check.basis
    # every record of the check ran on an H100 SXM: the files' own meta
    for folder in DATA:
        for kind in ("gemm", "linear_static_sweep", "memory", "launch"):
            meta = pm.calibrate.load_dataset([v.ROOT / folder / f"{kind}.json.gz"])["meta"]
            assert pm.get_gpu(meta["gpu_name"]).name == "H100-SXM" and meta["date"] == "2026-12-06", kind
    boards = [(v.ROOT / f / "log.txt.gz").read_bytes() for f in DATA]  # two boards, not one measured twice
    uuids = {next(w for w in gzip.decompress(b).decode().split() if w.startswith("GPU-")) for b in boards}
    assert len(uuids) == len(DATA)


def test_only_the_checked_table_gpu_gets_the_check():
    assert pm.provenance("H100").expected_error is TRANSFER_CHECKS["H100-SXM"]
    assert pm.provenance("H100-SXM").kind == "transferred"
    for other in ("H800", "H100-PCIe", "H20"):
        assert pm.provenance(other).expected_error is EXPECTED_ERRORS["transferred"], other
    changed = dataclasses.replace(pm.get_gpu("H100-SXM"), power_w=500.0)  # not the board that was measured
    assert pm.provenance(changed).expected_error is EXPECTED_ERRORS["transferred"]
    assert "over-predicted" in str(pm.provenance("H100-SXM"))


def test_copy_score_by_hand(v):
    spec = pm.get_gpu("H100-SXM")
    k = calibrated_model(spec).kernels
    bw = k.bw_bytes_per_s * spec.mem_bw_bytes_per_s / pm.get_gpu("H200").mem_bw_bytes_per_s
    b = 1 << 30
    recs = [{"op": "copy", "bytes": b, "time_s": 4e-4}, {"op": "copy", "bytes": 1 << 20, "time_s": 9.0},  # too small
            {"op": "cast", "bytes": b, "time_s": 1.0}]  # fmt: skip
    got = v.score_copy(recs, "H100-SXM")
    assert got["n"] == 1 and got["measured_bw"] == pytest.approx(b / 4e-4, rel=1e-12)
    assert got["priced_bw"] == pytest.approx(b / (k.latency_s + b / bw), rel=1e-12)


def test_linear_score_by_hand(v):
    def rec(M, recipe, t):
        return {"op": "linear", "dynamic": "static", "M": M, "K": 4096, "N": 4096, "recipe": recipe,
                "step_kernel_time_s": t}  # fmt: skip

    recs = [rec(1024, "bf16", 1.0), rec(1024, "tensorwise", 2.0), rec(8192, "bf16", 3.0), rec(8192, "tensorwise", 2.0),
            rec(8192, "tensorwise", 4.0), rec(4096, "bf16", 1.0)]  # fmt: skip
    got = v.score_linear(recs, "H100-SXM")["tensorwise"]
    pred = [float(pm.float8.speedup(M, 4096, 4096, "tensorwise", "H100-SXM")) for M in (1024, 8192)]
    meas = [0.5, 1.0]  # 1 / 2; 3 / median(2, 4)
    ape = sorted(abs(p - m) / m * 100 for p, m in zip(pred, meas, strict=True))
    assert got["speedup"]["n"] == 2 and got["speedup"]["mdape"] == pytest.approx(np.mean(ape))
    assert got["n_clear"] == 1  # 1.0 is no clear call
    assert got["right_clear"] == int(pred[0] < 1) and got["meas_range"] == (0.5, 1.0)
    assert math.isclose(got["over"], float(np.median(np.array(pred) / meas)))


def test_the_h100_bars_are_the_checks(v):
    from perfmodel.models.errorbars import TRANSFER_BARS

    got = v.bars([v.ROOT / d for d in DATA], "H100-SXM")
    shipped = {b.quantity: b for b in TRANSFER_BARS["H100-SXM"]}
    assert set(shipped) == set(got) == {"gemm_time", "linear_time", "speedup"}
    for q, b in shipped.items():
        assert (b.low, b.median, b.high) == pytest.approx((got[q]["low"], got[q]["median"], got[q]["high"]), abs=1e-4)
        assert b.n == got[q]["n"] and b.kind == "transferred" and "pre-registered" in b.basis
    assert shipped["speedup"].median < 1 and "over-predicted" in shipped["speedup"].basis  # the direction it states


def test_the_checked_gpu_answers_carry_the_checks_bars():
    from perfmodel.models.errorbars import TRANSFER_BARS

    own = {b.quantity: b for b in TRANSFER_BARS["H100-SXM"]}
    assert pm.provenance("H100").checked_on == "H100-SXM"
    assert pm.float8.speedup_error_bar("H100") is own["speedup"]
    assert pm.float8.linear_time(8192, 4096, 4096, "rowwise", "H100").error_bar is own["linear_time"]
    assert pm.gemm_error_bar(8192, 4096, 4096, "bf16", "H100", timing="event") is own["gemm_time"]
    kernel = pm.gemm_error_bar(8192, 4096, 4096, "bf16", "H100")  # kernel time: no own bar, the measured GPU's
    assert kernel.n != own["gemm_time"].n and "own check of this quantity is by event time" in kernel.borrowed
    for gpu in ("H800", dataclasses.replace(pm.get_gpu("H100-SXM"), power_w=500.0)):
        assert pm.provenance(gpu).checked_on == ""
        assert pm.float8.speedup_error_bar(gpu).n == 216  # the published table's bar
    assert pm.float8.speedup_error_bar("H200").kind == "measured"  # the measured GPU keeps its own


def test_checked_on_must_be_a_gpu_name():
    from perfmodel.errors import PerfModelError
    from perfmodel.models.errorbars import error_bar

    for bad in (None, 5, ["H100-SXM"], float("nan")):
        with pytest.raises(PerfModelError, match="checked_on must be a GPU name"):
            error_bar("speedup", "transferred", checked_on=bad)
    # a name without a check of its own: the class's bar
    assert error_bar("speedup", "transferred", checked_on="H800").n == 216
    assert error_bar("speedup", "measured", checked_on="H100-SXM").kind == "measured"  # only transferred answers
