"""perfmodel.train.memory: the peak of a training step by moment, against hand counts and the H200 runs."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import numpy as np
import pytest

from perfmodel.bench.memory.config import ROUND3, ROUND4, ROUND5, ROUND6
from perfmodel.errors import PerfModelError
from perfmodel.presets import get_preset
from perfmodel.train import memory as mem
from perfmodel.train.config import model_sizes

ROOT = Path(__file__).resolve().parents[1]


def test_llama3_8b_two_layers_by_hand():
    s = model_sizes("llama3-8b", layers=2, vocab=None)
    P = 2 * 218_112_000 + 128256 * 4096 + (4096 * 128256 + 4096)
    assert s.total_params == P == 1_486_901_248
    full = 4096 + 4096 + (4096 + 2 * 1024) + 4096 + 4096 + 4096 + 3 * 14336  # elements per token, ac none
    assert mem.activation_elements(s.layer, "none") == full == 69_632
    T = 8192
    loss = 4 * P + 8 * P + 1.32 * (2 * T * full * 2) + 12.8 * T * 128256 + 2 * ((4096 * 128256 + 4096) + 218_112_000)
    end = 16 * P + 4.3 * 128256 * 4096
    out = mem.peak_memory(s, tokens=T, ac="none")
    assert out["peak"] == pytest.approx(max(loss, end), rel=1e-12)
    assert out["moment"] == "loss" and loss > end
    assert sum(out["parts"].values()) == pytest.approx(out["peak"], rel=1e-12)
    assert out["parts"]["grads"] == 0  # zero_grad(set_to_none=True): no gradients while the forward runs


def test_compiled_float8_saves_no_bf16_copy_of_float8_only_inputs():
    s = model_sizes("llama3-8b", layers=4, vocab=None)
    all7 = ("wq", "wk", "wv", "wo", "w1", "w3", "w2")
    # by hand: the two norm outputs (hidden 4096 each) and the down projection's input (ffn 14336)
    assert mem.float8_compiled_unsaved(s.layer, all7) == 2 * 4096 + 14336
    assert mem.float8_compiled_unsaved(s.layer, ("w1", "w2")) == 14336  # w3 stays bf16: the MLP norm's output saved
    assert mem.float8_compiled_unsaved(s.layer, ("wq", "wk", "wv"), tp=2) == 4096
    assert mem.float8_compiled_unsaved(s.layer, ()) == 0
    T = 16384
    bf = mem.peak_memory(s, tokens=T, ac="none", compile=True)
    f8 = mem.peak_memory(s, tokens=T, ac="none", compile=True, float8_linears=all7)
    # the 8B 4-layer compiled step (h200_2026-12-04u): 2.75 GiB fewer activations at the loss
    assert bf["parts"]["activations"] - f8["parts"]["activations"] == pytest.approx(4 * 22528 * 2 * T, rel=1e-12)
    assert (bf["peak"] - f8["peak"]) / 2**30 == pytest.approx(2.75, abs=1e-9)
    # eager and activation-checkpointed steps: unchanged (eager float8 measured the bf16 peak)
    for kw in ({"ac": "none"}, {"ac": "selective", "compile": True}):
        assert mem.peak_memory(s, tokens=T, float8_linears=all7, **kw) == mem.peak_memory(s, tokens=T, **kw), kw
    for bad in (("q_proj",), "w1"):
        for kw in ({"compile": True}, {}):  # checked whether or not the term applies
            with pytest.raises(PerfModelError, match="float8_linears"):
                mem.peak_memory(s, tokens=T, ac="none", float8_linears=bad, **kw)


def test_compiled_short_stack_peaks_at_the_end_of_backward():
    s = model_sizes("llama3-8b", layers=2, vocab=None)
    out = mem.peak_memory(s, tokens=8192, ac="selective", compile=True)
    assert out["moment"] == "end of backward"
    assert out["parts"]["grads"] == pytest.approx(4 * s.total_params)


def test_modes_tp_and_arrays():
    s = model_sizes("llama3-8b", layers=4, vocab=None)
    T = np.array([8192, 16384, 49152])
    arr = mem.peak_memory(s, tokens=T, ac="none")
    for i, t in enumerate(T):
        one = mem.peak_memory(s, tokens=int(t), ac="none")
        assert arr["peak"][i] == pytest.approx(one["peak"], rel=1e-12)
        assert arr["moment"][i] == one["moment"]
    bf16 = mem.peak_memory(s, tokens=16384, ac="none", mode="bf16")
    assert bf16["parts"]["params"] == pytest.approx(2 * s.total_params)
    tp = mem.peak_memory(s, tokens=16384, ac="none", tp=2)
    assert tp["parts"]["params"] == pytest.approx(2 * s.total_params)
    with pytest.raises(PerfModelError, match="valid modes are fsdp, amp, bf16"):
        mem.peak_memory(s, tokens=1, ac="none", mode="ddp")
    with pytest.raises(PerfModelError, match="plain single-GPU"):
        mem.peak_memory(s, tokens=1, ac="none", mode="amp", tp=2)
    with pytest.raises(PerfModelError, match="valid activation-checkpointing modes"):
        mem.activation_elements(get_preset("llama3-8b").layer, "some")


def test_memory_tables_in_the_docs_are_what_the_data_gives():
    vm = importlib.import_module("benchmarks.harness.validate_memory")
    doc = (ROOT / "docs" / "train.md").read_text()
    block = re.search(r"<!-- memory:begin -->\n(.*)\n<!-- memory:end -->", doc, re.S).group(1)
    assert block == vm.report()


def test_held_out_runs_and_the_fit():
    vm = importlib.import_module("benchmarks.harness.validate_memory")
    held = vm.rows(vm.HELD_OUT)
    assert len(held) == 10 and all(r["status"] == "ok" for r in held)
    errs = [abs(r["est_gib"] - r["peak_gib"]) / r["peak_gib"] for r in held]
    # post-selection since the end-of-backward change (2026-12-04): median 1.2 %, max 3.5 % (was 5.8 % before it)
    assert np.median(errs) < 0.02 and max(errs) < 0.04
    for rs in (held, vm.rows(vm.FIT)):
        assert all(not r["fits"] for r in rs if r["status"] == "oom")  # never "fits" for a run that ran out
    fitted = vm.fit()
    assert fitted["ACT_FACTOR['none']"] == pytest.approx(mem.ACT_FACTOR["none"], abs=0.005)
    assert fitted["LOGIT_BYTES"] == pytest.approx(mem.LOGIT_BYTES, abs=0.05)
    assert fitted["ACT_FACTOR['selective']"] == pytest.approx(mem.ACT_FACTOR["selective"], abs=0.005)
    assert fitted["TRANSIENT_BYTES_PER_EMBEDDING_PARAM"] == pytest.approx(
        mem.TRANSIENT_BYTES_PER_EMBEDDING_PARAM, abs=0.05
    )


def _errors(rows, estimates):
    """|estimate / measured - 1| per row and how many are within the target (5 % or 1 GiB)."""
    vm = importlib.import_module("benchmarks.harness.validate_memory")
    pairs = list(zip(estimates, (r["peak_gib"] for r in rows), strict=True))
    return [abs(e - m) / m for e, m in pairs], sum(vm.within_target(e, m) for e, m in pairs)


def _round(vm, path, names):
    import json

    pred = json.loads((path.parent / vm.PREDICTIONS).read_text())
    assert "before the run" in pred["made"]
    rows = vm.rows(path)
    assert [r["name"] for r in rows] == list(names) and all(r["status"] == "ok" for r in rows)
    return rows, pred["predictions"]


def test_rounds_3_and_4_as_predicted_and_as_scored_today():
    """Rounds 3 and 4 were pre-registered; each one's miss changed a moment afterwards, so today's figures on them are
    post-selection, and what the model of the day predicted is kept beside them (the docs' tables show both)."""
    vm = importlib.import_module("benchmarks.harness.validate_memory")
    rows, pred = _round(vm, vm.ROUND3, ROUND3)
    before, within = _errors(rows, [pred[r["name"]]["peak_gib"] for r in rows])
    # recorded before the change: median 1.8 %, max 6.4 % (70B, one layer, 32k tokens, full AC), 8 of 9 within
    assert within == 8 and max(before) == pytest.approx(0.064, abs=0.0005)
    now, within = _errors(rows, [r["est_gib"] for r in rows])
    assert within == 9 and max(now) < 0.045  # post-selection: 1.6 %, 4.2 %
    rows, pred = _round(vm, vm.ROUND4, ROUND4)
    before, within = _errors(rows, [pred[r["name"]]["peak_gib"] for r in rows])
    worst = rows[int(np.argmax(before))]["name"]
    # recorded: median 1.2 %, 7 of 8 within; the miss is 405B with selective AC, 12.4 % low
    assert within == 7 and worst == "fsdp_405b_L1_s8k_b1_sel_v32k" and max(before) == pytest.approx(0.124, abs=0.0005)
    now, within = _errors(rows, [r["est_gib"] for r in rows])
    assert within == 8 and max(now) < 0.03  # post-selection: median 1.1 %, max 2.6 %
    assert [r["moment"] for r in rows[:2]] == [mem.EMBEDDING_MOMENT] * 2  # the moment the 405B trace showed


def test_round5_predicted_before_it_ran():
    """Round 5 (h200_2026-12-04s): predicted by today's model, committed before the run, scored once; the figures the
    output quotes (CHECKED) are this round's."""
    vm = importlib.import_module("benchmarks.harness.validate_memory")
    rows, pred = _round(vm, vm.ROUND5, ROUND5)
    for r in rows:  # the model that scores them is the one that predicted them
        assert r["est_gib"] == pytest.approx(pred[r["name"]]["peak_gib"], rel=1e-6), r["name"]
        assert r["moment"] == pred[r["name"]]["moment"], r["name"]
    errs, within = _errors(rows, [r["est_gib"] for r in rows])
    assert within == 7 and max(errs) < 0.02  # recorded: median 0.7 %, max 1.3 %
    assert sum(r["moment"] == mem.EMBEDDING_MOMENT for r in rows) == 5


def test_round6_predicted_before_it_ran():
    """Round 6 (h200_2026-12-04v): seven compiled runs chosen to test the compiled-float8 term, predicted by today's
    model and committed before the run; with round 5, the figures the output quotes (CHECKED)."""
    vm = importlib.import_module("benchmarks.harness.validate_memory")
    rows, pred = _round(vm, vm.ROUND6, ROUND6)
    for r in rows:
        assert r["est_gib"] == pytest.approx(pred[r["name"]]["peak_gib"], rel=1e-6), r["name"]
        assert r["moment"] == pred[r["name"]]["moment"], r["name"]
    errs, within = _errors(rows, [r["est_gib"] for r in rows])
    assert within == 7 and max(errs) < 0.035  # recorded: median 1.6 %, max 3.0 %, every run a little low
    assert all(r["est_gib"] < r["peak_gib"] for r in rows)
    r5, _ = _round(vm, vm.ROUND5, ROUND5)
    both, _ = _errors(r5 + rows, [r["est_gib"] for r in r5 + rows])
    assert f"median error {100 * np.median(both):.1f} %, max {100 * max(both):.1f} % (14 runs)" in mem.CHECKED


def test_max_held_out_error_is_the_worst_of_every_held_out_run():
    vm = importlib.import_module("benchmarks.harness.validate_memory")
    sets = (vm.HELD_OUT, vm.ROUND3, vm.ROUND4, vm.ROUND5, vm.ROUND6, vm.DATA / "h200_2026-12-03e" / "memory.json.gz")
    rows = [r for p in sets for r in vm.rows(p) if r["status"] == "ok"]
    errs, _ = _errors(rows, [r["est_gib"] for r in rows])
    assert len(rows) == 45
    assert max(errs) == pytest.approx(mem.MAX_HELD_OUT_ERROR, abs=0.0005)
    assert f"max {100 * max(errs):.1f} % over all {len(rows)} held-out runs" in mem.CHECKED


def test_the_embeddings_backward_by_hand():
    """Llama 3 405B, one layer, a 32k vocabulary, 4096 tokens, full AC, FSDP2 on one GPU: the first layer's fp32
    reduce-scatter input (4 B per parameter) is alive while the embedding's backward runs."""
    s = model_sizes("llama3-405b", layers=1, vocab=32000)
    h, f = 16384, 53248
    layer = h * (h + 2 * 1024) + h * h + 3 * h * f + 2 * h  # q, k, v (8 KV heads of 128), o, MLP, two norms
    emb, head = 32000 * h, h * 32000 + h
    assert s.layer_params == layer and s.embedding_params == emb and s.output_params == head
    P = layer + emb + head
    end = 16 * P + 4.3 * emb
    by_hand = end - 4 * emb + 4 * layer
    out = mem.peak_memory(s, tokens=4096, ac="full")
    assert out["moment"] == mem.EMBEDDING_MOMENT and out["peak"] == pytest.approx(by_hand, rel=1e-12)
    assert out["peak"] - end == pytest.approx(4 * (layer - emb)) and (out["peak"] - end) / 2**30 == pytest.approx(
        9.92, abs=0.01
    )
    bf16 = mem.peak_memory(s, tokens=4096, ac="full", mode="bf16")  # no FSDP2: no reduce-scatter buffers
    assert bf16["moment"] != mem.EMBEDDING_MOMENT
    tp2 = mem.peak_memory(s, tokens=4096, ac="full", tp=2, dp_shard=4)
    grads = 4 * P / 8 - 4 * emb / 8 + 4 * layer / 2  # sharded gradients, the layer's reduce input split by tp only
    assert tp2["moment"] == mem.EMBEDDING_MOMENT and tp2["parts"]["grads"] == pytest.approx(grads, rel=1e-12)


def test_compiled_runs_predicted_before_they_were_measured():
    import gzip
    import json

    d = ROOT / "benchmarks" / "data" / "h200_2026-12-03e"
    pred = json.loads((d / "memory_predictions_before_run.json").read_text())
    assert "before the run" in pred["made"]
    recs = json.load(gzip.open(d / "memory.json.gz"))["records"]
    assert len(recs) == 4 and all(r["status"] == "ok" and r["config"]["compile"] for r in recs)
    vm = importlib.import_module("benchmarks.harness.validate_memory")
    before, now = {}, {}
    for r in recs:
        measured = r["after_3_steps"]["max_memory_allocated"] / 2**30
        before[r["name"]] = pred["predictions"][r["name"]]["peak_gib"] / measured - 1
        now[r["name"]] = vm.predict(r)["peak"] / 2**30 / measured - 1
        if r["config"]["recipe"] == "bf16":  # the bf16 ones: the model that predicted them is unchanged
            assert now[r["name"]] == pytest.approx(before[r["name"]], abs=1e-9)
    # recorded before the runs: -1.5 %, +5.9 %, +4.6 %, -1.3 %; the float8 ones since the compiled-float8 term
    # (post-selection): -1.6 %, -2.8 %
    assert [round(100 * v, 1) for v in before.values()] == [-1.5, 5.9, 4.6, -1.3]
    assert [round(100 * v, 1) for v in now.values()] == [-1.5, -1.6, -2.8, -1.3]


def test_torchtitan_run_against_the_estimate():
    import json

    st = importlib.import_module("benchmarks.harness.score_torchtitan")
    summary = json.loads((ROOT / "benchmarks/data/h200_2026-12-03e/torchtitan/summary.json").read_text())
    rows = {r["run"]: r for r in st.score_summary(summary)}
    assert set(rows) == {"bf16", "fp8_tensorwise", "fp8_tensorwise_ag"}
    assert all(r["rc"] == "0" and r["steps_used"] == 15 for r in rows.values())  # steps 6-20 of 20
    tps = {k: (rows[k]["tps_measured"], rows[k]["tps_estimated"]) for k in rows}
    meas_speedup = tps["fp8_tensorwise"][0] / tps["bf16"][0]
    est_speedup = tps["fp8_tensorwise"][1] / tps["bf16"][1]
    assert meas_speedup == pytest.approx(1.095, abs=0.001) and abs(est_speedup / meas_speedup - 1) < 0.03
    assert all(1.0 < est / meas < 1.10 for meas, est in tps.values())  # recorded 1.03, 1.04, 1.07
