"""CPU tests of perfmodel.bench.memory (the one-GPU memory sweep) and the pure parts of fsdp_pieces."""

from __future__ import annotations

import json
import sys

import pytest

from perfmodel.bench import fsdp_pieces as FP
from perfmodel.bench import memory as M
from perfmodel.errors import PerfModelError

# Llama 3 8B by hand: one layer's Linears 4096·(4096 + 1024 + 1024 + 4096) + 3·4096·14336 = 218 103 808,
# plus two norms 2·4096; embedding and output 128 256 · 4096 each, plus the final norm's 4096
_8B_LAYER = 4096 * (4096 + 1024 + 1024 + 4096) + 3 * 4096 * 14336 + 2 * 4096
_8B_HEAD = 2 * 128256 * 4096 + 4096


def test_plan_covers_the_brief():
    names = [c.name for c in M.PLAN]
    assert len(names) == len(set(names))
    by = {(c.model, c.layers) for c in M.PLAN}
    assert {("llama3-8b", 2), ("llama3-8b", 4), ("llama3-70b", 1), ("llama3.2-1b", 16)} <= by
    assert {c.ac for c in M.PLAN} == set(M.AC_MODES)
    assert {c.mode for c in M.PLAN} == set(M.MODES)
    assert {c.recipe for c in M.PLAN} == set(M.RECIPES)
    assert any(c.fp8_all_gather for c in M.PLAN) and any(c.compile for c in M.PLAN)
    assert sum(c.expect in ("oom", "near") for c in M.PLAN) >= 2
    # the first ten (what one 240 s call reaches) hold the estimate's setup in all three AC modes, float8 with
    # and without float8 all-gather, a config the estimate says does not fit, and compile
    head = M.PLAN[:10]
    assert {c.ac for c in head} == set(M.AC_MODES)
    assert any(c.fp8_all_gather for c in head) and any(c.recipe == "tensorwise" and not c.fp8_all_gather for c in head)
    assert any(c.expect == "oom" for c in head) and any(c.compile for c in head)


def test_memconfig_refuses_bad_input():
    with pytest.raises(PerfModelError, match="ac="):
        M.MemConfig(name="x", model="llama3-8b", layers=1, seq=8, batch=1, ac="some")
    with pytest.raises(PerfModelError, match="tensorwise"):
        M.MemConfig(name="x", model="llama3-8b", layers=1, seq=8, batch=1, recipe="rowwise", fp8_all_gather=True)
    with pytest.raises(PerfModelError, match="positive int"):
        M.MemConfig(name="x", model="llama3-8b", layers=0, seq=8, batch=1)
    with pytest.raises(PerfModelError, match="Llama-style"):
        M.MemConfig(name="x", model="gpt2", layers=1, seq=8, batch=1).shape()
    with pytest.raises(PerfModelError, match="valid:"):
        M.get_config("nope")
    with pytest.raises(PerfModelError, match="matches no"):
        M.select("zzz*")
    assert [c.name for c in M.select("fsdp_70b_*")] == [c.name for c in M.PLAN if c.name.startswith("fsdp_70b_")]


def test_estimate_kwargs_by_hand():
    cfg = M.get_config("fsdp_8b_L4_s8k_b2_none_tw_fp8ag")
    kw = M.estimate_kwargs({"config": cfg.to_dict()})
    assert kw == dict(model="llama3-8b", gpu="H200", n_gpus=1, seq_len=8192, batch_per_gpu=2, recipe="tensorwise",
                      float8_all_gather=True, ac="none", layers=4, vocab=128256)  # fmt: skip
    # a bare MemConfig dict maps the same way
    assert M.estimate_kwargs(cfg.to_dict()) == kw


def test_estimate_accepts_every_plan_config():
    from perfmodel.train import estimate

    for cfg in M.PLAN:
        est = estimate(**M.estimate_kwargs(cfg.to_dict()))
        assert est.config.sizes.layers == cfg.layers and est.config.seq_len == cfg.seq
        assert est.config.float8_all_gather == cfg.fp8_all_gather and est.config.ac == cfg.ac


def test_estimate_counts_the_model_we_build():
    from perfmodel.train import estimate

    est = estimate(**M.estimate_kwargs(M.get_config("fsdp_8b_L2_s8k_b1_none").to_dict()))
    assert est.memory["params"] == pytest.approx(4 * (2 * _8B_LAYER + _8B_HEAD), rel=1e-12)
    one_b = M.estimate_kwargs(M.get_config("fsdp_1b_L16_s8k_b2_sel").to_dict())
    assert one_b["model"].hidden == 2048 and one_b["model"].head_dim == 64 and one_b["vocab"] == 128256


def test_estimate_record_refusal_is_a_record():
    rec = {"config": {**M.get_config("fsdp_8b_L2_s8k_b1_none").to_dict(), "ac": "every-other"}}
    out = M.estimate_record(rec)
    assert "error" in out and "ac" in out["error"]


def _fake_child(kind: str) -> list[str]:
    scripts = {
        "ok": "import json; print('noise'); print(json.dumps({'status': 'ok', 'step_time_s': 0.5, 'tokens_per_s': 2}))",
        "oom": "import json; print(json.dumps({'status': 'oom', 'error': 'CUDA out of memory', "
        "'at_oom': {'max_memory_allocated': 2**37}}))",
        "crash": "import sys; sys.stderr.write('Segmentation fault'); sys.exit(139)",
        "hang": "import time; time.sleep(30)",
    }
    return [sys.executable, "-c", scripts[kind]]


def test_run_configs_records_ok_oom_crash_timeout():
    cfgs = [M.MemConfig(name=k, model="llama3-8b", layers=1, seq=64, batch=1) for k in ("ok", "oom", "crash", "hang")]
    written = []
    out = M.run_configs(cfgs, deadline_s=1000, write=written.append, child_cmd=lambda c: _fake_child(c.name),
                        cap_s=3.0, estimate=False, log=lambda m: None)  # fmt: skip
    assert [r["status"] for r in out] == ["ok", "oom", "crash", "timeout"]
    assert written == out
    assert out[0]["step_time_s"] == 0.5 and out[0]["config"]["seq"] == 64
    assert out[1]["at_oom"]["max_memory_allocated"] == 2**37
    assert out[2]["process"]["rc"] == 139 and "Segmentation" in out[2]["process"]["stderr_tail"]
    assert out[3]["process"]["timeout_s"] == pytest.approx(3.0)


def test_run_configs_deadline_skips_and_estimates():
    cfgs = [M.get_config("fsdp_8b_L2_s8k_b1_none"), M.get_config("fsdp_8b_L2_s8k_b1_full")]
    ticks = iter([0.0, 0.0, 990.0])  # start, first config, second config
    out = M.run_configs(cfgs, deadline_s=1000, write=lambda r: None, child_cmd=lambda c: _fake_child("ok"),
                        clock=lambda: next(ticks), log=lambda m: None)  # fmt: skip
    assert [r["status"] for r in out] == ["ok", "skipped"]
    assert "10 s left" in out[1]["why"]
    assert out[0]["estimate"]["fits"] is True and out[0]["estimate"]["memory_bytes"] > 30 * 2**30


def test_writer_rewrites_valid_json(tmp_path):
    w = M._Writer(tmp_path / "memory.json", {"command": "x"})
    w({"op": "train_memory", "name": "a"})
    w({"op": "train_memory", "name": "b"})
    doc = json.loads((tmp_path / "memory.json").read_text())
    assert [r["name"] for r in doc["records"]] == ["a", "b"] and doc["meta"]["command"] == "x"


def test_run_one_on_cpu_counts_what_estimate_counts():
    pytest.importorskip("torch")
    from perfmodel.presets import LayerShape
    from perfmodel.train.config import model_sizes

    s = M.SELFTEST_SHAPE
    cfg = M.MemConfig(name="t", model="llama3-8b", layers=2, seq=32, batch=1, ac="selective", mode="fsdp")
    rec = M.run_one(cfg, device="cpu", shape=s, timed_budget_s=0.01)
    assert rec["status"] == "ok", rec.get("error")
    lay = LayerShape(name="t", hidden=s["dim"], ffn=s["ffn"], heads=s["heads"], kv_heads=s["kv_heads"],
                     head_dim=s["head_dim"])  # fmt: skip
    n = model_sizes(lay, layers=2, vocab=s["vocab"]).total_params
    assert n == 361088
    c = rec["counted"]
    assert c["param_count"] == n and c["param_bytes"] == 4 * n and c["grad_bytes"] == 4 * n
    # AdamW: exp_avg and exp_avg_sq in fp32 (8 B per element) plus one fp32 step counter per parameter tensor
    n_tensors = 2 + 2 * 9 + 1  # embedding, output; 9 per layer (7 Linears, 2 norms); final norm
    assert c["optimizer_state_bytes"] == 8 * n + 4 * n_tensors
    assert rec["step_time_s"] > 0 and rec["tokens_per_s"] == pytest.approx(32 / rec["step_time_s"], rel=1e-9)


def test_payload_counted():
    recs = {r["model"]: r for r in FP.payload_records()}
    r = recs["llama3-8b"]
    assert r["linear_elements"] == _8B_LAYER - 2 * 4096
    assert r["bf16_bytes"] == 2 * _8B_LAYER and r["float8_bytes"] == _8B_LAYER - 2 * 4096 + 4 * 4096
    assert 0.5 < r["ratio"] < 0.51


def test_warm_runs_only_compile_configs_in_parallel():
    cfgs = [M.get_config("fsdp_8b_L2_s8k_b1_none"), M.get_config("fsdp_8b_L2_s8k_b1_none_compile"),
            M.get_config("fsdp_8b_L2_s8k_b1_sel_compile")]  # fmt: skip
    seen = []

    def child(cfg, extra):
        seen.append((cfg.name, tuple(extra)))
        return _fake_child("ok" if "sel" not in cfg.name else "crash")

    res = M.warm(cfgs, deadline_s=60, child_cmd=child)
    assert seen == [
        ("fsdp_8b_L2_s8k_b1_none_compile", ("--warm-only",)),
        ("fsdp_8b_L2_s8k_b1_sel_compile", ("--warm-only",)),
    ]
    assert [r["status"] for r in res] == ["ok", "crash"] and res[1]["rc"] == 139
