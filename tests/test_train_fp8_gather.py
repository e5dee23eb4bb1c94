"""perfmodel.train's float8 all-gather price (perfmodel.train.fp8_gather: shard casts and precomputed scales from the
pieces measured on one H200) and the ``compile`` knob of ``train.estimate``."""

import pathlib

import numpy as np
import pytest

import perfmodel as pm
from perfmodel import train
from perfmodel.errors import PerfModelError
from perfmodel.train import fp8_gather as fg
from perfmodel.train import memory as mem

ROOT = pathlib.Path(__file__).resolve().parent.parent
JOB = dict(gpu="H200", n_gpus=1, seq_len=8192, batch_per_gpu=1, ac="none", layers=4, vocab=128256)
LLAMA3_8B_LINEAR = 4096 * (4096 + 1024 + 1024 + 4096) + 3 * 4096 * 14336  # one layer's Linear weights


def test_constants_are_what_the_pieces_file_gives():
    got = fg.fit_pieces(ROOT / fg.PIECES_FILE)
    assert got["cast_bytes_per_s"] == pytest.approx(fg.SHARD_CAST_BYTES_PER_S_H200, rel=1e-5)
    assert got["precompute_fixed_s"] == pytest.approx(fg.PRECOMPUTE_FIXED_S, rel=1e-4)
    assert got["precompute_bytes_per_s"] == pytest.approx(fg.PRECOMPUTE_BYTES_PER_S_H200, rel=1e-5)
    # the line's per-layer part for one Llama 3 8B layer (4 B per element read): 0.26 ms, the docs' figure
    assert 4 * LLAMA3_8B_LINEAR / fg.PRECOMPUTE_BYTES_PER_S_H200 == pytest.approx(0.262e-3, rel=0.01)


def test_float8_gather_cost_by_hand():
    est = train.estimate("llama3-8b", recipe="tensorwise", float8_all_gather=True, **JOB)
    cost = fg.float8_gather_cost(est.config)
    shard = 4 * LLAMA3_8B_LINEAR  # one GPU: the shard is every layer's float8 weights
    assert cost.shard_elements == pytest.approx(shard, rel=1e-12)
    cast = (2 - 1 / 4) * 5 * shard / 825.773e9  # 7 gathers of 4 layers, 5 B per element at the measured rate
    pre = 0.96883e-3 + 4 * shard / 3.33163e12
    assert cost.shard_cast_s == pytest.approx(cast, rel=1e-9)
    assert cost.precompute_s == pytest.approx(pre, rel=1e-9)
    assert est.compute_s["float8_gather"] == pytest.approx(cast + pre, rel=1e-9)
    assert est.step_s == pytest.approx(sum(est.compute_s.values()) + est.exposed_comm_s, rel=1e-12)
    assert "fsdp_pieces.json.gz" in est.provenance.summary
    assert any("post-selection" in a for a in est.provenance.assumptions)


def test_float8_gather_is_absent_without_it_and_scales_with_the_gpus_bandwidth():
    off = train.estimate("llama3-8b", recipe="tensorwise", **JOB)
    assert "float8_gather" not in off.compute_s and "fsdp_pieces" not in off.provenance.summary
    assert fg.float8_gather_cost(off.config).total_s == 0
    h100 = train.estimate("llama3-8b", recipe="tensorwise", float8_all_gather=True, **{**JOB, "gpu": "H100"})
    h200 = train.estimate("llama3-8b", recipe="tensorwise", float8_all_gather=True, **JOB)
    c100, c200 = fg.float8_gather_cost(h100.config), fg.float8_gather_cost(h200.config)
    ratio = pm.get_gpu("H200").mem_bw_bytes_per_s / pm.get_gpu("H100").mem_bw_bytes_per_s
    assert c100.shard_cast_s == pytest.approx(c200.shard_cast_s * ratio, rel=1e-9)  # same share of HBM bandwidth
    fixed = fg.PRECOMPUTE_FIXED_S  # the fixed part is the same seconds
    assert c100.precompute_s - fixed == pytest.approx((c200.precompute_s - fixed) * ratio, rel=1e-9)
    assert "transferred to H100" in h100.provenance.summary


def test_sharding_divides_the_cast():
    one = train.estimate("llama3-8b", recipe="tensorwise", float8_all_gather=True, gpu="H100", n_gpus=8, tp=1,
                         seq_len=8192, batch_per_gpu=1)  # fmt: skip
    c = fg.float8_gather_cost(one.config)
    assert c.shard_elements == pytest.approx(32 * LLAMA3_8B_LINEAR / 8, rel=1e-12)


def test_compile_changes_the_memory_only():
    eager = train.estimate("llama3-8b", recipe="tensorwise", **JOB)
    comp = train.estimate("llama3-8b", recipe="tensorwise", compile=True, **JOB)
    assert comp.config.compile is True and eager.config.compile is False
    f8 = comp.config.converted  # every decoder Linear: compiled float8 saves no bf16 copy of their inputs
    want = mem.peak_memory(comp.config.sizes, tokens=8192, ac="none", compile=True, float8_linears=f8)
    assert want["peak"] < mem.peak_memory(comp.config.sizes, tokens=8192, ac="none", compile=True)["peak"]
    assert comp.memory_bytes == pytest.approx(want["peak"], rel=1e-12)
    assert comp.memory_bytes < eager.memory_bytes  # 4 B per logit instead of 12.8
    assert comp.step_s == pytest.approx(eager.step_s, rel=1e-12)
    assert comp.to_dict()["compile"] is True and ", compiled" in comp.table()
    assert any("compile=False" in a for a in eager.provenance.assumptions)


def test_compile_reaches_every_path():
    grid = train.estimate("llama3-8b", recipe="tensorwise", compile=True, **{**JOB, "n_gpus": np.array([1, 2])})
    assert grid.at(0).config.compile is True
    auto = train.estimate("llama3-8b", recipe="tensorwise", convert="auto", compile=True, **JOB)
    assert auto.config.compile is True


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_compile_must_be_a_bool(bad):
    with pytest.raises(PerfModelError, match="compile must be True or False"):
        train.estimate("llama3-8b", compile=bad, **JOB)


def test_float8_all_gather_benefit_pre_registered_within_two_points():
    """h200_2026-12-04w: the bench's trios at batch 2 (again) and batch 1, predicted before the run: the benefit of
    float8 all-gather within 2 points of the bf16 step (recorded: 0.15 and 0.11 points off); torchtitan's batch-1 run
    (+0.15 points measured against our bench's -3.47 at the same batch) is not."""
    import importlib

    vt = importlib.import_module("benchmarks.harness.validate_train")
    rows = vt.score_fp8_all_gather()
    pre = [r for r in rows if r["pre_registered"]]
    assert [(r["run"], r["batch"]) for r in pre] == [("bench, again", 2), ("bench", 1)]
    for r in pre:
        assert r["predicted_pts"] == pytest.approx(r["predicted_before_pts"], abs=1e-9)  # the model is unchanged
        assert abs(r["measured_pts"] - r["predicted_pts"]) < 0.5
    tt = next(r for r in rows if r["run"] == "torchtitan")
    assert tt["measured_pts"] > 0 > pre[1]["measured_pts"] and abs(tt["measured_pts"] - tt["predicted_pts"]) > 3
