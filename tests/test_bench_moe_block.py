"""perfmodel.bench.moe_block: config table, shape rules, permutation, the block's math on CPU, the deadline and
partial-output logic, the selftest path and the seed driver (CPU only; torch CPU build)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from perfmodel.bench import moe_block as MB

ROOT = Path(__file__).resolve().parents[1]


def test_import_does_not_import_torch_triton_torchao():
    code = (
        "import sys, perfmodel.bench.moe_block;"
        "print(sorted(m for m in ('torch', 'triton', 'torchao') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


# ---- the config table against the cited config.json values ------------------------------------------------------

EXPECTED = {  # name: (hidden, expert inter, experts on GPU, top_k, shared inter, score, router outputs)
    "deepseek_v3_16b": (2048, 1408, 64, 6, 2816, "softmax", 64),  # n_shared_experts 2 x 1408
    "deepseek_v3": (7168, 2048, 256, 8, 2048, "sigmoid", 256),
    "deepseek_v3_ep8": (7168, 2048, 32, 8, 2048, "sigmoid", 256),  # 256 / EP 8
    "qwen3_30b_a3b": (2048, 768, 128, 8, 0, "softmax", 128),
    "llama4_scout": (5120, 8192, 16, 1, 8192, "sigmoid", 16),
    "llama4_maverick": (5120, 8192, 128, 1, 8192, "sigmoid", 128),
    "mixtral_8x7b": (4096, 14336, 8, 2, 0, "softmax", 8),
    "gpt_oss_120b": (2880, 2880, 128, 4, 0, "softmax", 128),
    "qwen3_235b_a22b": (4096, 1536, 128, 8, 0, "softmax", 128),  # the fresh families (2026-12-03)
    "olmoe_1b_7b": (2048, 1024, 64, 8, 0, "softmax", 64),
    "dbrx": (6144, 10752, 16, 4, 0, "softmax", 16),
    "phi35_moe": (4096, 6400, 16, 2, 0, "softmax", 16),
    "granite_3b_a800m": (1536, 512, 40, 8, 0, "softmax", 40),  # fresh round 2 (2026-12-04)
    "ernie45_21b_a3b": (2560, 1536, 64, 6, 3072, "softmax", 64),  # moe_num_shared_experts 2 x 1536
    "qwen2_57b_a14b": (3584, 2560, 64, 8, 20480, "softmax", 64),  # shared_expert_intermediate_size
    "minimax_m1": (6144, 9216, 32, 2, 0, "softmax", 32),
    "glm45_air": (4096, 1408, 128, 8, 1408, "sigmoid", 128),  # fresh round 3 (2026-12-04, evening)
    "glm45": (5120, 1536, 160, 8, 1536, "sigmoid", 160),
    "mixtral_8x22b": (6144, 16384, 8, 2, 0, "softmax", 8),
    "hunyuan_large": (6400, 18304, 16, 1, 18304, "softmax", 16),  # num_shared_expert 1 x intermediate_size
    "minimax_m2": (3072, 1536, 256, 8, 0, "sigmoid", 256),  # fresh round 4 (2026-12-04, night)
    "qwen3_coder_480b": (6144, 2560, 160, 8, 0, "softmax", 160),
    "arctic": (7168, 4864, 128, 2, 0, "softmax", 128),  # its residual dense MLP is outside the block
    "grok1": (6144, 32768, 8, 2, 0, "softmax", 8),  # round 5, blocks only: ffn_size(6144, 8) = 49152 * 2 // 3
    "skywork_moe": (4608, 12288, 16, 2, 0, "softmax", 16),  # round 6, blocks only
    "llama4_maverick_ep16": (5120, 8192, 8, 1, 8192, "sigmoid", 128),  # round 6's in-shape check (EP16)
    "synth_a": (3328, 11776, 8, 2, 0, "softmax", 8),  # synthetic fit shapes (GEMM-dense regime), not models
    "synth_b": (5632, 14848, 8, 2, 0, "softmax", 8),
    "synth_c": (4352, 20480, 16, 2, 0, "softmax", 16),
    "synth_d": (7680, 10240, 8, 1, 0, "softmax", 8),
    "synth_e": (6656, 28672, 8, 2, 0, "softmax", 8),
    "ernie45_300b_a47b": (8192, 3584, 64, 8, 0, "softmax", 64),  # round 11 (H100, 2026-12-07)
    "hunyuan_a13b": (4096, 3072, 64, 8, 3072, "softmax", 64),  # num_shared_expert 1 x 3072
    "grok2": (8192, 16384, 8, 2, 0, "softmax", 8),  # its residual dense MLP is outside the block
    "qwen3_next_80b_a3b": (2048, 512, 512, 10, 512, "softmax", 512),
    "yuan2_m32": (2048, 8192, 32, 2, 0, "softmax", 32),
    "jamba15_large_ep2": (8192, 24576, 8, 2, 0, "softmax", 16),  # round 12 (H100, 2026-12-07): 16 experts / EP 2
    "step3": (7168, 5120, 48, 3, 5120, "softmax", 48),  # share_expert_dim 5120 (one shared expert)
    "step35_flash": (4096, 1280, 288, 8, 1280, "sigmoid", 288),  # share_expert_dims 1280
    "ling_flash_20": (4096, 1024, 256, 8, 1024, "sigmoid", 256),  # n-shared-experts 1 x 1024
    "minicpm_moe_8x2b": (2304, 5760, 8, 2, 0, "softmax", 8),
}
FRESH2 = ("granite_3b_a800m", "ernie45_21b_a3b", "qwen2_57b_a14b", "minimax_m1")


def test_config_table_matches_cited_values():
    assert set(MB.MODEL_BY_NAME) == set(EXPECTED)
    for name, exp in EXPECTED.items():
        c = MB.MODEL_BY_NAME[name]
        assert (c.dim, c.inter, c.experts, c.top_k, c.shared_inter, c.score_func, c.router_experts) == exp, name
        # a released config (or its model-code defaults, Megatron-Bridge's docs), or the model's own launch script
        cited = ("config.json", "Megatron-Bridge", "Config defaults", "pretrain_")
        assert any(m in c.source for m in cited) or c.source.startswith("synthetic"), name
        # fp8 rowwise needs K and N multiples of 16 in every expert GEMM
        assert c.dim % 16 == 0 and c.inter % 16 == 0


def test_synthetic_fit_shapes_are_no_named_familys():
    synth = {n: c for n, c in MB.MODEL_BY_NAME.items() if n.startswith("synth_")}
    named = {(c.dim, c.inter) for n, c in MB.MODEL_BY_NAME.items() if n not in synth}
    dims = {d for pair in named for d in pair}
    assert len(synth) == 5
    for n, c in synth.items():
        assert c.source.startswith("synthetic") and (c.dim, c.inter) not in named, n
        assert c.dim not in dims and c.inter not in dims, n  # no K or N of any named family's expert GEMMs


def test_expert_params_by_hand():
    assert MB.MODEL_BY_NAME["mixtral_8x7b"].expert_params == 3 * 8 * 4096 * 14336


# ---- shape rules by hand ---------------------------------------------------------------------------------------------


def test_max_rows_by_hand():
    assert MB.max_rows(8192, 8, 256, 16) == 8192 * 8 + 256 * 16  # already a multiple of 16
    assert MB.max_rows(10, 3, 4, 8) == 64  # 30 + 32 = 62 -> 64
    assert MB.max_rows(5, 1, 2, 1) == 7
    with pytest.raises(MB.MoEBlockError, match="top_k"):
        MB.max_rows(8, 0, 4, 8)


def test_padded_group_sizes_by_hand():
    # counts 3, 0, 17 with align 8: 8, 8 (empty -> align), 24; total 48 leaves 8 for the last group
    assert MB.padded_group_sizes([3, 0, 17], 8, 48) == [8, 8, 32]
    assert MB.padded_group_sizes([16, 16], 16, 32) == [16, 16]
    with pytest.raises(MB.MoEBlockError, match="total rows"):
        MB.padded_group_sizes([17], 16, 16)


def test_balanced_counts_round_robin():
    assert MB.balanced_counts(8, 2, 4) == [4, 4, 4, 4]
    assert MB.balanced_counts(5, 1, 3) == [2, 2, 1]
    assert sum(MB.balanced_counts(8192, 6, 64)) == 8192 * 6


def test_dirichlet_weights_deterministic_and_normalised():
    w = MB.dirichlet_weights(64, 1.0, 3)
    assert w == MB.dirichlet_weights(64, 1.0, 3)
    assert w != MB.dirichlet_weights(64, 1.0, 4)
    assert sum(w) == pytest.approx(1.0, rel=1e-12)
    assert max(w) > 2 / 64  # skewed: alpha 1 over 64 experts puts well over twice the mean on the top one
    with pytest.raises(MB.MoEBlockError):
        MB.dirichlet_weights(4, 0.0, 0)


def test_permutation_reference_by_hand():
    idx = [[1, 0], [1, 2], [0, 1]]  # T=3, k=2; flat 1,0,1,2,0,1
    tok, pos, sizes = MB.permutation_reference(idx, 3, 2, 12)
    assert sizes == [2, 4, 6]  # counts 2, 3, 1 -> 2, 4, 2; the last takes 12 - 8
    assert pos == [1, 4, 0, 2, 5, 6, 3, 6, 6, 6, 6, 6]  # expert 0: flat 1, 4; expert 1: 0, 2, 5, pad; expert 2: 3
    assert tok == [0, 2, 0, 1, 2, 3, 1, 3, 3, 3, 3, 3]


# ---- plan ---------------------------------------------------------------------------------------------------------


def test_plan_order_covers_every_model_first():
    items = MB.plan_items()
    n = len(MB.MODELS)
    assert len(items) == n * len(MB.TOKENS) * len(MB.ROUTINGS)
    assert {it.model for it in items[:n]} == set(MB.MODEL_BY_NAME)
    assert {(it.tokens, it.routing) for it in items[:n]} == {(8192, "balanced")}
    assert len({it.id for it in items}) == len(items)


def test_bad_items_raise_named_errors():
    with pytest.raises(MB.MoEBlockError, match="valid:"):
        MB.BlockItem("nope", 8192, "balanced")
    with pytest.raises(MB.MoEBlockError, match="routing"):
        MB.BlockItem("mixtral_8x7b", 8192, "uniform")
    with pytest.raises(MB.MoEBlockError, match="tokens"):
        MB.BlockItem("mixtral_8x7b", 0, "balanced")


def test_memory_estimate_skips_only_the_largest():
    it = MB.BlockItem("llama4_maverick", 8192, "balanced")
    assert MB.fits_memory(it, "bf16")
    assert not MB.fits_memory(it, "fp8_rowwise")  # 128 x 5120 x 8192 experts: fp32 cast temporaries
    for name in ("deepseek_v3_16b", "qwen3_30b_a3b", "mixtral_8x7b", "deepseek_v3_ep8"):
        assert MB.fits_memory(MB.BlockItem(name, 32768, "skewed"), "fp8_rowwise")


def test_fresh_round2_fits_one_gpu_with_every_expert():
    """Round 2 keeps every routed expert of a layer on the GPU (no EP variant): each fits at the largest item."""
    for name in FRESH2:
        c = MB.MODEL_BY_NAME[name]
        assert c.experts == c.router_experts, name
        assert MB.fits_memory(MB.BlockItem(name, 32768, "skewed"), "fp8_rowwise"), name
    # minimax_m1, the largest: 32 x 3 x 6144 x 9216 routed parameters
    assert MB.MODEL_BY_NAME["minimax_m1"].expert_params == 3 * 32 * 6144 * 9216
    items = MB.plan_items(list(FRESH2))
    assert len(items) == 4 * len(MB.TOKENS) * len(MB.ROUTINGS) and {it.model for it in items[:4]} == set(FRESH2)


def test_expert_flops_by_hand():
    it = MB.BlockItem("mixtral_8x7b", 4096, "balanced")
    rows = 4096 * 2 + 8 * 16
    assert it.expert_flops_fwd("fp8_rowwise") == 2 * rows * 4096 * 14336 * 3
    assert it.shared_flops_fwd() == 0


def test_estimates_positive_and_grow_with_tokens():
    a = MB.estimate_item_s(MB.BlockItem("deepseek_v3", 4096, "balanced"))
    b = MB.estimate_item_s(MB.BlockItem("deepseek_v3", 32768, "balanced"))
    assert 0 < a < b


# ---- the block on CPU (torch CPU build) -----------------------------------------------------------------------------

torch = pytest.importorskip("torch")


def test_permute_plan_matches_reference():
    g = torch.Generator().manual_seed(0)
    for T, k, E, a in ((37, 3, 5, 8), (16, 1, 4, 16), (9, 2, 8, 1)):
        idx = torch.stack([torch.randperm(E, generator=g)[:k] for _ in range(T)])
        idx[: T // 2, 0] = 0  # skew onto expert 0
        tok, pos, offs = MB.permute_plan(torch, idx, E, a)
        rt, rp, sizes = MB.permutation_reference(idx.tolist(), E, a, MB.max_rows(T, k, E, a))
        assert tok.tolist() == rt and pos.tolist() == rp
        assert offs.dtype == torch.int32
        assert torch.diff(torch.cat([torch.zeros(1, dtype=torch.int32), offs])).tolist() == sizes
        assert all(s % a == 0 for s in sizes)


def test_routing_indices_balanced_and_skewed():
    cfg = MB.MODEL_BY_NAME["deepseek_v3_16b"]
    bal = MB.routing_indices(torch, cfg, 1024, "balanced")
    assert torch.bincount(bal.reshape(-1), minlength=64).tolist() == MB.balanced_counts(1024, 6, 64)
    sk = MB.routing_indices(torch, cfg, 1024, "skewed")
    assert sk.shape == (1024, 6)
    assert all(len(set(r)) == 6 for r in sk.tolist())  # distinct experts per token
    counts = torch.bincount(sk.reshape(-1), minlength=64)
    assert counts.sum().item() == 1024 * 6 and counts.max().item() > 2 * 96  # max well over the mean (96)
    assert torch.equal(sk, MB.routing_indices(torch, cfg, 1024, "skewed"))  # seeded
    assert MB.routing_indices(torch, cfg, 8, "natural") is None


@pytest.mark.parametrize("loop", [False, True])
@pytest.mark.parametrize("routing", ["balanced", "skewed", "natural"])
def test_block_matches_float64_reference(routing, loop):
    if not loop and not MB._grouped_mm_runs(torch, "cpu", torch.float32):
        pytest.skip("torch._grouped_mm does not run on this CPU build")
    cfg = MB.SELFTEST_CFG if routing != "natural" else MB.SELFTEST_CFG_SIGMOID
    r = MB.selftest_case(torch, cfg, routing, "cpu", tokens=24, loop=loop)
    assert r["loop"] is loop
    for key in ("out_rel_err", "x_grad_rel_err", "w1_grad_rel_err"):
        assert r[key] < 1e-5, (key, r)


def test_block_output_changes_with_routing():
    """Wrong indexing would hide behind a reference with the same bug; the routing must change the output."""
    cfg = MB.SELFTEST_CFG
    blk = MB.build_block(torch, cfg, "bf16", device="cpu", dtype=torch.float32, loop=True)
    x = torch.randn(16, cfg.dim, generator=torch.Generator().manual_seed(1))
    blk.forced = MB.routing_indices(torch, cfg, 16, "balanced")
    a = blk(x)
    blk.forced = MB.routing_indices(torch, cfg, 16, "skewed")
    b = blk(x)
    assert (a - b).norm() > 1e-3 * a.norm()
    assert blk.experts.w1.shape == (cfg.experts, cfg.inter, cfg.dim)  # torchtitan's GroupedExperts layout
    assert blk.experts.w2.shape == (cfg.experts, cfg.dim, cfg.inter)


@pytest.mark.parametrize("routing", ["balanced", "skewed"])
def test_piece_fns_run_and_their_gemms_are_the_shapes_the_record_names(routing, monkeypatch):
    """The pieces phase's callables on CPU: each runs; each grouped GEMM's output is the per-group product of the
    shape its record names in perfmodel.moe's convention (fwd ``[R, N]``, dgrad ``[R, K]``, wgrad ``[G, N, K]``), so
    the scorer prices the GEMM that was timed."""
    if not MB._grouped_mm_runs(torch, "cpu", torch.bfloat16):
        pytest.skip("torch._grouped_mm does not run on this CPU build")
    monkeypatch.setitem(MB.MODEL_BY_NAME, MB.SELFTEST_CFG.name, MB.SELFTEST_CFG)
    item = MB.BlockItem(MB.SELFTEST_CFG.name, 40, routing)
    pieces, rec = MB.piece_fns(torch, item, device="cpu")
    c = MB.SELFTEST_CFG
    want = {"router_fwd", "router_fwd_bwd", "permute", "permute_plan", "swiglu_fwd", "unpermute", "shared_fwd",
            "shared_fwd_bwd", *MB.PIECE_GEMMS}  # fmt: skip
    assert set(pieces) == want
    widths = {"dim": c.dim, "inter": c.inter}
    assert rec["gemm_shapes"] == {n: [op, widths[k], widths[v]] for n, (op, k, v) in MB.PIECE_GEMMS.items()}
    rows = rec["group_rows"]
    assert len(rows) == c.experts and sum(rows) == rec["rows"] and sum(rec["counts"]) == 40 * c.top_k
    assert (max(rec["counts"]) > 2 * min(rec["counts"])) is (routing == "skewed")
    R = rec["rows"]
    real = torch._grouped_mm
    seen: list[tuple] = []

    def spy(a, b, offs):  # the operands each piece hands torch
        seen.append((a, b, offs))
        return real(a, b, offs=offs)

    monkeypatch.setattr(torch, "_grouped_mm", lambda a, b, offs: spy(a, b, offs))
    for name in MB.PIECE_GEMMS:
        op, K, N = rec["gemm_shapes"][name]
        seen.clear()
        out = pieces[name]().float()
        ((A, B, offs),) = seen
        assert offs.tolist() == [sum(rows[: i + 1]) for i in range(len(rows))], name
        shapes = {"fwd": ((R, K), (c.experts, K, N), (R, N)), "dgrad": ((R, N), (c.experts, N, K), (R, K)),
                  "wgrad": ((N, R), (R, K), (c.experts, N, K))}[op]  # fmt: skip
        assert (tuple(A.shape), tuple(B.shape), tuple(out.shape)) == shapes, name
        s0 = 0
        for g, n in enumerate(rows):  # each group's product, in float32
            if op == "wgrad":
                ref = A[:, s0 : s0 + n].float() @ B[s0 : s0 + n].float()
                got = out[g]
            else:
                ref = A[s0 : s0 + n].float() @ B[g].float()
                got = out[s0 : s0 + n]
            assert torch.allclose(got, ref, rtol=2e-2, atol=2e-2 * (1 + float(ref.abs().max()))), (name, g)
            s0 += n
    for name in want - set(MB.PIECE_GEMMS):
        pieces[name]()  # runs


def test_selftest_cli_on_cpu(tmp_path):
    rc = MB.main(["selftest", "--device", "cpu", "--out", str(tmp_path)])
    assert rc == 0
    data = json.loads((tmp_path / "moe_block_selftest.json").read_text())
    assert data["status"]["ok"] is True and data["status"]["finished"] is True
    assert len(data["status"]["cases"]) == 3


# ---- deadline and partial output ------------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _items(n: int) -> list[MB.BlockItem]:
    return MB.plan_items(tokens=[4096])[:n]


def test_run_items_stops_at_budget_and_records_errors(tmp_path):
    clock = FakeClock()
    items = _items(6)
    path = tmp_path / "t.json"
    rec = MB.Recorder(path, {"command": "x"})
    seen_sizes = []

    def measure(it):
        seen_sizes.append(len(json.loads(path.read_text())["records"]))  # file valid while measuring
        clock.t += 10.0
        if it is items[1]:
            raise RuntimeError("CUDA out of memory (simulated)")
        return [{"id": it.id, "status": "ok", "recipe": "bf16"}]

    st = MB.run_items(items, measure, budget_s=35.0, recorder=rec, estimate=lambda it: 10.0, clock=clock,
                      log=lambda m: None)  # fmt: skip
    data = json.loads(path.read_text())
    assert [r["status"] for r in data["records"]] == ["ok", "error", "ok"]  # 0, 10, 20 start; 30 + 10 > 35
    assert data["records"][1]["error_type"] == "RuntimeError" and "simulated" in data["records"][1]["error"]
    assert st["skipped_budget"] == [it.id for it in items[3:]]
    assert data["status"]["finished"] is True and data["status"]["ok_items"] == 2
    assert seen_sizes == [0, 1, 2]


def test_resume_skips_done_and_marks_a_dead_process(tmp_path):
    path = tmp_path / "t.json"
    items = _items(3)
    rec = MB.Recorder(path, {})
    rec.add({"id": items[0].id, "status": "ok"})
    rec.status["current"] = items[1].id  # as if the process died inside item 1
    rec.flush()
    rec2 = MB.Recorder(path, {}, resume=True)
    assert rec2.records[-1] == {"id": items[1].id, "status": "error", "error_type": "ProcessDied",
                                "error": "the process ended while measuring this item"}  # fmt: skip
    ran = []
    MB.run_items(items, lambda it: ran.append(it.id) or [{"id": it.id, "status": "ok"}], budget_s=100,
                 recorder=rec2, estimate=lambda it: 1.0, log=lambda m: None)  # fmt: skip
    assert ran == [items[2].id]


def test_partial_file_survives_a_kill(tmp_path):
    """A phase killed mid-item leaves valid JSON with every finished record (subprocess killed by timeout)."""
    code = (
        "import time, perfmodel.bench.moe_block as MB\n"
        f"rec = MB.Recorder({str(tmp_path / 'k.json')!r}, {{}})\n"
        "items = MB.plan_items(tokens=[4096])[:3]\n"
        "def m(it):\n"
        "    if it is items[1]: time.sleep(60)\n"
        "    return [{'id': it.id, 'status': 'ok'}]\n"
        "MB.run_items(items, m, budget_s=100, recorder=rec, estimate=lambda it: 0.1)\n"
    )
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, timeout=8, capture_output=True)
    data = json.loads((tmp_path / "k.json").read_text())
    assert [r["status"] for r in data["records"]] == ["ok"]
    assert data["status"]["current"] == MB.plan_items(tokens=[4096])[1].id and not data["status"]["finished"]


def test_cli_rejects_bad_arguments(tmp_path, capsys):
    assert MB.main(["plan", "--budget-s", "0", "--out", str(tmp_path)]) == 2
    with pytest.raises(SystemExit) as e:
        MB.main(["plan", "--models", "gpt5", "--out", str(tmp_path)])
    assert e.value.code == 2
    assert "valid:" in capsys.readouterr().err


def test_rep_ms_for_times_at_least_min_reps_runs():
    # do_bench times max(1, int(rep / estimate)) runs: a 0.4 s call under the default 100 ms rep is timed once
    assert MB.rep_ms_for(0.4) == MB.REP_MS == 100.0
    assert MB.rep_ms_for(0.4, 3) == pytest.approx(3 * 400 * 1.05)  # 1260 ms: int(1260 / 400) = 3 runs
    assert int(MB.rep_ms_for(0.4, 3) / 400) == 3 and int(MB.rep_ms_for(0.01, 3) / 10) == 10  # short calls keep REP_MS
    for bad in (0, -1, 2.5, True, "3"):
        with pytest.raises(MB.MoEBlockError, match="min_reps"):
            MB.rep_ms_for(0.4, bad)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(MB.MoEBlockError, match="call_s"):
            MB.rep_ms_for(bad, 3)


def test_min_reps_raises_the_plan_estimate_and_is_refused_below_one(tmp_path, capsys):
    it = MB.plan_items(["mixtral_8x22b"], [131072], ["balanced"])[0]
    assert MB.estimate_item_s(it, min_reps=3) > MB.estimate_item_s(it) > 0
    assert MB.main(["plan", "--min-reps", "0", "--out", str(tmp_path)]) == 2
    assert "--min-reps must be an integer >= 1" in capsys.readouterr().err


def test_plan_cli_writes_items(tmp_path):
    assert MB.main(["plan", "--budget-s", "30", "--out", str(tmp_path), "--models", "mixtral_8x7b"]) == 0
    data = json.loads((tmp_path / "moe_block_plan.json").read_text())
    ids = [r["id"] for r in data["items"]][:2]
    assert ids == ["mixtral_8x7b-T8192-balanced", "mixtral_8x7b-T8192-skewed"]


# ---- seed driver ---------------------------------------------------------------------------------------------------


def test_seed_batches_in_the_seeds_set():
    bs = MB.seed_batches()
    allowed = set(range(128, 512, 32)) | set(range(512, 32000, 128))
    assert 18 <= len(bs) <= 21 and len(set(bs)) == len(bs)
    assert set(bs) <= allowed and min(bs) == 128 and max(bs) == 8192
    assert all(b % 32 == 0 for b in bs)  # batch_per_expt = batch * 4 / 128 is an integer
    assert set(bs[:3]) >= {128, 8192}  # a budget cut keeps the span


FAKE_BENCH = """
import tempfile
from pathlib import Path
class _R:
    @staticmethod
    def parse_profile(*a, **k):
        raise AssertionError("parse_profile must be skipped")
roofline = _R()
CALLS = []
def bench_mlp(batch_per_expt, dim1, dim2, n_expts_tot, n_expts_act, x_dtype, w_dtype, TP, EP):
    CALLS.append((batch_per_expt, dim1, dim2, n_expts_tot, n_expts_act, x_dtype, w_dtype, TP, EP))
    fpath = Path(tempfile.mktemp())
    fpath.with_suffix(".hatchet").write_text("{}")
    return roofline.parse_profile(fpath.with_suffix(".hatchet"))
"""


def test_run_seed_writes_the_seed_layout(tmp_path, monkeypatch):
    tk = tmp_path / "tk"
    (tk / "bench").mkdir(parents=True)
    (tk / "bench" / "bench_mlp.py").write_text(FAKE_BENCH)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "bench_mlp", raising=False)
    st = MB.run_seed(tk, tmp_path / "logs", ("fp8", "fp8"), [128, 8192], budget_s=60, log=lambda m: None)
    base = tmp_path / "logs" / "llama4-maverick" / "fp8-fp8-TP1-EP1" / "profiles"
    assert sorted(p.name for p in base.iterdir()) == ["batch-128.hatchet", "batch-8192.hatchet"]
    assert st["done"] == [128, 8192] and not st["errors"]
    calls = sys.modules["bench_mlp"].CALLS
    assert calls[0] == (4, 5120, 8192, 128, 4, "fp8", "fp8", 1, 1)  # 128 tokens x 4 / 128 experts
    assert calls[1][0] == 256
    st2 = MB.run_seed(tk, tmp_path / "logs", ("fp8", "fp8"), [128], budget_s=60, log=lambda m: None)
    assert st2["done"] == [128] and len(calls) == 2  # resume: an existing profile is kept


def test_shell_scripts_parse():
    for name in ("gpu_moe_block.sh", "gpu_moe_seed.sh", "gpu_fresh_moe.sh", "_gpu_env.sh", "gpu_registered_round.sh",
                 "gpu_block_pieces.sh"):  # fmt: skip
        subprocess.run(["bash", "-n", str(ROOT / "benchmarks" / name)], check=True)


def _stub_bin(tmp_path: Path) -> Path:
    """A bin folder whose nvidia-smi and python echo their arguments (no GPU, no torch)."""
    b = tmp_path / "bin"
    b.mkdir()
    for name in ("nvidia-smi", "py"):
        (b / name).write_text('#!/bin/sh\necho "' + name + ' $*"\n')
        (b / name).chmod(0o755)
    return b


def test_fresh_script_families_and_mx_switch(tmp_path):
    """gpu_fresh_moe.sh through _gpu_env.sh with stub commands: FAMILIES reaches every bench, MX_S=0 drops the
    mxfp8 phases, the default keeps them, and the tarball is packed."""
    b = _stub_bin(tmp_path)
    fams = ",".join(FRESH2)
    env = {"PATH": f"{b}:/usr/bin:/bin", "PYTHON": str(b / "py"), "HOME": str(tmp_path)}
    runs = {}
    for mx in ("0", "45"):
        out, work = tmp_path / f"out{mx}", tmp_path / f"work{mx}"
        e = {**env, "OUT": str(out), "WORK": str(work), "FAMILIES": fams, "MX_S": mx}
        r = subprocess.run(
            ["bash", "benchmarks/gpu_fresh_moe.sh"], cwd=ROOT, env=e, capture_output=True, text=True, timeout=60
        )
        assert r.returncode == 0, r.stderr
        runs[mx] = r.stdout
        assert (out / "fresh_moe.tar.gz").is_file()
    calls = [ln for ln in runs["0"].splitlines() if ln.startswith("py -m perfmodel.bench.")]
    assert [c.split()[2:4] for c in calls] == [
        ["perfmodel.bench.grouped_gemm", "plan"],
        ["perfmodel.bench.grouped_gemm", "time"],
        ["perfmodel.bench.grouped_gemm", "kernels"],
        ["perfmodel.bench.moe_block", "time"],
    ]
    assert all(fams in c for c in calls)
    assert "mxfp8 phases skipped (MX_S=0)" in runs["0"]
    assert runs["45"].count("py -m perfmodel.bench.mxfp8_kernels") == 2


def _registered_round_calls(tmp_path: Path, rounds: str, device: str) -> tuple[list[str], Path, str]:
    """gpu_registered_round.sh with stub commands on a device named ``device``: its bench calls, WORK and stdout."""
    b = _stub_bin(tmp_path)
    out, work = tmp_path / "out", tmp_path / "work"
    env = {"PATH": f"{b}:/usr/bin:/bin", "PYTHON": str(b / "py"), "HOME": str(tmp_path), "OUT": str(out),
           "WORK": str(work), "ROUNDS": rounds, "PARSE_PY": sys.executable, "DEVICE_NAME": device}  # fmt: skip
    r = subprocess.run(["bash", "benchmarks/gpu_registered_round.sh"], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert (out / "registered_round.tar.gz").is_file()
    return [ln for ln in r.stdout.splitlines() if ln.startswith("py -m perfmodel.bench.")], work, r.stdout


def test_registered_round_script_runs_the_registered_commands(tmp_path):
    """gpu_registered_round.sh with stub commands: every registered command of each round runs, in order, into the
    round's folder (the first fresh, the rest --resume), and the tarball is packed; on an H200 the H100
    registrations named beside them are skipped."""
    calls, work, stdout = _registered_round_calls(tmp_path, "round8 repeat2 round8_h100 repeat2_h100", "NVIDIA H200")
    regs = [json.loads((ROOT / "benchmarks" / "registered" / f"{n}.json").read_text()) for n in ("round8", "repeat2")]
    # every round's scored commands first (round 8's, then repeat 2's), then round 8's two diagnostics (added
    # 2026-12-08, before its H200 run): a diagnostic never takes time from a scored command of a later round
    want = [(reg["folder"], c, False) for reg in regs for c in reg["commands"]]
    want += [(regs[0]["folder"], c, True) for c in regs[0]["diagnostics"]]
    assert len(calls) == len(want) == 7 and "diagnostics" not in regs[1]
    for i, (call, (folder, cmd, diag)) in enumerate(zip(calls, want, strict=True)):
        assert call.startswith("py " + cmd.removeprefix("python3 ")) and f"--out {work / folder} " in call
        first = diag or i == 0 or want[i - 1][0] != folder  # a diagnostic's phase differs from the time commands'
        assert call.endswith("--resume") != first, call
    assert [c.split()[2:4] for c in calls[5:]] == [["perfmodel.bench.moe_block", "pieces"],
                                                 ["perfmodel.bench.moe_block", "kernels"]]  # fmt: skip
    assert "round8_h100: registered for another GPU than NVIDIA H200, skipped" in stdout


def test_block_pieces_script_runs_the_pieces_phase(tmp_path):
    """gpu_block_pieces.sh with stub commands: one pieces call with the models, tokens and routings asked (round 8's
    large-expert blocks by default), into WORK, under the deadline, and the tarball is packed."""
    b = _stub_bin(tmp_path)
    out, work = tmp_path / "out", tmp_path / "work"
    env = {"PATH": f"{b}:/usr/bin:/bin", "PYTHON": str(b / "py"), "HOME": str(tmp_path), "OUT": str(out),
           "WORK": str(work), "DEADLINE_S": "120"}  # fmt: skip
    for extra, models in (({}, "mixtral_8x22b,dbrx"), ({"MODELS": "grok1", "TOKENS": "24576"}, "grok1")):
        r = subprocess.run(["bash", "benchmarks/gpu_block_pieces.sh"], cwd=ROOT, env={**env, **extra},
                           capture_output=True, text=True, timeout=60)  # fmt: skip
        assert r.returncode == 0, r.stderr
        calls = [ln for ln in r.stdout.splitlines() if ln.startswith("py -m perfmodel.bench.")]
        assert len(calls) == 1 and calls[0].split()[2:4] == ["perfmodel.bench.moe_block", "pieces"]
        assert f"--out {work} " in calls[0] and f"--models {models} " in calls[0]
        assert f"--tokens {extra.get('TOKENS', '49152')} " in calls[0] and calls[0].endswith(
            "--routings balanced,skewed"
        )
        assert (out / "block_pieces.tar.gz").is_file()


def test_registered_round_script_runs_the_h100_twins_and_their_diagnostics_on_an_h100(tmp_path):
    """On an H100 the H200 registrations are skipped and the H100 twins run: the same bench commands into the H100
    folders, then, after every round's scored commands, the rounds' diagnostics (not --resume, with the budget
    left)."""
    calls, work, stdout = _registered_round_calls(
        tmp_path, "round8 repeat2 round8_h100 repeat2_h100", "NVIDIA H100 80GB HBM3"
    )
    regs = {n: json.loads((ROOT / "benchmarks" / "registered" / f"{n}.json").read_text())
            for n in ("round8", "round8_h100", "repeat2_h100")}  # fmt: skip
    assert regs["round8_h100"]["commands"] == regs["round8"]["commands"] and regs["round8_h100"]["gpu"] == "H100"
    names = ("round8_h100", "repeat2_h100")
    want = [(regs[n]["folder"], c) for n in names for c in regs[n]["commands"]]  # scored commands first
    want += [(regs[n]["folder"], c) for n in names for c in regs[n]["diagnostics"]]
    assert len(calls) == len(want) == 7
    for call, (folder, cmd) in zip(calls, want, strict=True):
        assert call.startswith("py " + cmd.removeprefix("python3 ")) and f"--out {work / folder} " in call
    assert [c.split()[2:4] for c in calls[5:7]] == [["perfmodel.bench.moe_block", "kernels"],
                                                  ["perfmodel.bench.grouped_gemm", "time"]]  # fmt: skip
    assert not calls[5].endswith("--resume") and not calls[6].endswith("--resume")
    assert "round8: registered for another GPU than NVIDIA H100 80GB HBM3, skipped" in stdout


def test_registered_round_script_resumes_a_repeated_diagnostic_phase(tmp_path):
    """Round 11's two kernels diagnostics write one file: the second resumes it (round 11's first run on the H100
    lost the first profiles to the second's fresh file)."""
    calls, work, _ = _registered_round_calls(tmp_path, "round11_h100", "NVIDIA H100 80GB HBM3")
    reg = json.loads((ROOT / "benchmarks" / "registered" / "round11_h100.json").read_text())
    assert len(calls) == len(reg["commands"]) + len(reg["diagnostics"]) == 6
    diag = calls[len(reg["commands"]) :]
    assert [c.split()[2:4] for c in diag] == [["perfmodel.bench.moe_block", "kernels"]] * 2
    assert not diag[0].endswith("--resume") and diag[1].endswith("--resume")
    assert all(f"--out {work / reg['folder']} " in c for c in diag)


def test_counts_helper_on_skewed_vector():
    c = Counter(MB.routing_indices(torch, MB.MODEL_BY_NAME["mixtral_8x7b"], 512, "skewed").reshape(-1).tolist())
    assert sum(c.values()) == 1024 and len(c) <= 8


def test_fp8_conversion_targets_only_the_routed_experts():
    """torchao's converter (0.17 API, also in 0.18) wraps experts.w1/w2/w3 and leaves router and shared expert."""
    pytest.importorskip("torchao.prototype.moe_training.config")
    blk = MB.build_block(torch, MB.SELFTEST_CFG, "bf16", device="cpu", dtype=torch.bfloat16)
    assert blk.align == 8
    conv = MB.convert_fp8(torch, blk)
    assert sorted(conv) == ["experts.w1", "experts.w2", "experts.w3"]
    assert blk.align == 16
    assert type(blk.gate.weight).__name__ == "Parameter"
    assert type(blk.shared_experts.w1.weight).__name__ == "Parameter"
