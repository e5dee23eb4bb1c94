"""perfmodel.moe.decide: the block's float8 speedup, enable/skip, break-even tokens and the conversion filters."""

import itertools

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.errors import InvalidShapeError, MoEPresetError, UnsupportedLayerError
from perfmodel.models.base import split_clauses
from perfmodel.moe import decide as dm
from perfmodel.presets import MoEShape


def test_speedup_is_the_ratio_of_block_times():
    for name in ("deepseek-v3-16b", "mixtral-8x7b"):
        b = pm.moe.expert_block_time(name, tokens=16384, recipe="bf16")
        f = pm.moe.expert_block_time(name, tokens=16384, recipe="rowwise")
        assert pm.moe.speedup(name, tokens=16384) == pytest.approx(b.total_s / f.total_s, rel=1e-12)


def test_should_use_follows_min_speedup():
    s = pm.moe.speedup("mixtral-8x7b", tokens=32768)
    assert pm.moe.should_use("mixtral-8x7b", tokens=32768, min_speedup=s * 0.99)
    assert not pm.moe.should_use("mixtral-8x7b", tokens=32768, min_speedup=s * 1.01)
    with pytest.raises(InvalidShapeError):
        pm.moe.should_use("mixtral-8x7b", tokens=32768, min_speedup=0)


def test_decision_reason_names_gemm_savings_and_quant_cost():
    d = pm.moe.block_decision("deepseek-v3-16b", tokens=8192)
    quant = sum(k.seconds for k in d.fp8.kernels if k.kind == "quant")
    assert f"{quant * 1e3:.3f} ms of quantization" in d.reason and d.use == (d.speedup >= 1)


# The crossing logic is tested on the block model without the measured eager rates (measured_eager=False), which
# crosses 1 for Mixtral; with them (the default) eager rowwise never pays on these presets, as measured (0.19-0.91x).
OLD = {"measured_eager": False}


def test_break_even_brackets_the_crossing():
    be = pm.moe.break_even_tokens("mixtral-8x7b", recipe="rowwise", max_tokens=1 << 16, **OLD)
    assert be.tokens is not None and be.tokens % 16 == 0 and be.monotone
    assert pm.moe.speedup("mixtral-8x7b", tokens=be.tokens, **OLD) >= 1.0
    assert pm.moe.speedup("mixtral-8x7b", tokens=be.tokens - 16, **OLD) < 1.0
    assert be.tokens_per_expert == pytest.approx(be.tokens * 2 / 8, rel=1e-12)
    measured = pm.moe.break_even_tokens("mixtral-8x7b", recipe="rowwise", max_tokens=1 << 16)
    assert measured.tokens is None and "stays below" in measured.note


def test_break_even_none_when_it_never_pays():
    be = pm.moe.break_even_tokens("qwen3-30b-a3b", recipe="rowwise", max_tokens=4096)
    assert be.tokens is None and "stays below" in be.note


def test_break_even_experts_override_and_refusals():
    be = pm.moe.break_even_tokens("mixtral-8x7b", experts=4, max_tokens=1 << 16)
    assert be.tokens is None or be.tokens_per_expert == pytest.approx(be.tokens * 2 / 4, rel=1e-12)
    with pytest.raises(InvalidShapeError, match="counts"):
        pm.moe.break_even_tokens("mixtral-8x7b", counts=[1] * 8)
    with pytest.raises(InvalidShapeError, match="top_k"):
        pm.moe.break_even_tokens("mixtral-8x7b", experts=1)


class _Experts:
    def __init__(self, ndim):
        self.w1 = self.w2 = self.w3 = type("P", (), {"ndim": ndim})()


def test_filter_fn_converts_routed_experts_only_when_it_pays():
    yes = pm.moe.filter_fn("mixtral-8x7b", tokens=65536, **OLD)
    no = pm.moe.filter_fn("qwen3-30b-a3b", tokens=1024)
    assert not pm.moe.filter_fn("mixtral-8x7b", tokens=65536).decision.use  # measured eager rates: never pays
    assert yes.decision.use and not no.decision.use
    assert yes(None, "layers.0.moe.experts") and yes(_Experts(3), "layers.0.moe.grouped")
    assert not yes(None, "layers.0.moe.shared_experts") and not yes(_Experts(2), "layers.0.attention.wq")
    assert not yes(None, "layers.0.moe.router.gate")
    assert not no(None, "layers.0.moe.experts")


def test_fqns_all_or_none():
    assert pm.moe.fqns("mixtral-8x7b", tokens=65536, **OLD) == ["experts"]
    assert pm.moe.fqns("mixtral-8x7b", tokens=65536) == []
    assert pm.moe.fqns("qwen3-30b-a3b", tokens=1024) == []


def test_section_text_and_rows():
    text, rows = pm.moe.routed_experts_section("deepseek-v3-16b", tokens=8192, recipes=("tensorwise", "rowwise"))
    assert "Routed experts (grouped GEMMs, perfmodel.moe)" in text and "tensorwise: not a grouped-GEMM" in text
    assert "the block a grouped-GEMM MoE layer runs (torchtitan's GroupedExperts" in text
    (row,) = rows
    assert row["recipe"] == "rowwise" and row["speedup"] == pytest.approx(row["bf16_ms"] / row["recipe_ms"], rel=1e-9)
    assert "filter_fn=" in text and "--quantize.grouped_mm.float8.fqns" in text
    assert row["gemm_dense"] is False and row["close_call"] is False  # a small-expert block, far from 1
    _, (dense,) = pm.moe.routed_experts_section("mixtral-8x7b", tokens=32768, recipes=("rowwise",))
    assert dense["gemm_dense"] is True and "GEMM-dense block" in dense["reason"]
    assert "close call" not in text.split("-> speedup")[1].splitlines()[0]  # the verdict: far from 1
    # a close call says so on the verdict's own line, not only deep in the reason
    close, (row,) = pm.moe.routed_experts_section("mixtral-8x22b", tokens=65536, recipes=("rowwise",), gpu="H100-SXM")
    assert row["close_call"] and row["use"]
    verdict = next(ln for ln in close.splitlines() if "-> speedup" in ln)
    assert verdict.endswith("convert (a close call, within the model's error: measure before deciding)")


def test_split_clauses_by_hand():
    from perfmodel.errors import UnknownOptionError

    assert split_clauses("a (b; c); d [e; f]; g") == ["a (b; c)", "d [e; f]", "g"]
    assert split_clauses("x {y; (z; w)}; v") == ["x {y; (z; w)}", "v"]
    assert split_clauses("open (a; b; c") == ["open (a; b; c"]  # unbalanced: the rest stays one clause
    assert split_clauses("stray) a; b") == ["stray) a", "b"]  # a stray closer does not go below depth 0
    assert split_clauses(" ; a;  ; b ") == ["a", "b"] and split_clauses("") == []
    assert split_clauses("a, b (c, d), e", sep=", ") == ["a", "b (c, d)", "e"]
    for bad in ((None,), (3,), ("a", ""), ("a", None)):
        with pytest.raises(UnknownOptionError, match="split_clauses takes a str"):
            split_clauses(*bad)


def test_section_prints_one_clause_per_line_and_loses_none():
    """The section's provenance and reason, one top-level clause per line: joined back, the lines are the JSON
    row's strings, so the display drops nothing the row says."""
    text, (row,) = pm.moe.routed_experts_section("deepseek-v3-16b", tokens=16384, recipes=("rowwise",), gpu="H100-SXM")
    lines = text.splitlines()
    i = lines.index("    provenance:")
    prov = []
    for ln in lines[i + 1 :]:
        if not ln.startswith("      - "):
            break
        prov.append(ln.removeprefix("      - "))
    assert len(prov) >= 5 and "; ".join(prov) == row["provenance"]
    assert max(len(c) for c in prov) < len(row["provenance"]) / 2  # split, not one long line
    j = next(k for k, ln in enumerate(lines) if ln.startswith("    rowwise saves "))
    first = lines[j].removeprefix("    ").removesuffix(" (eager, as torchao 0.17 runs it without torch.compile)")
    after = itertools.takewhile(lambda ln: ln.startswith("      "), lines[j + 1 :])  # the continuation lines
    rest = [ln.removeprefix("      ") for ln in after]
    assert "; ".join([first, *rest]) == row["reason"]


def test_moe_preset_refused_by_dense_apis_with_a_pointer():
    with pytest.raises(MoEPresetError, match=r"perfmodel\.moe"):
        pm.step.layer_time("deepseek-v3-16b", gpu="H200", seq_len=4096)
    with pytest.raises(UnsupportedLayerError, match=r"perfmodel\.moe"):  # MoEPresetError is one; MLA
        pm.train.estimate("deepseek-v3-16b", gpu="H200", n_gpus=8, seq_len=4096, batch_per_gpu=1)
    # GQA MoE presets are priced by train now (MoE layers from perfmodel.step: tests/test_train_moe.py)
    est = pm.train.estimate("mixtral-8x7b", gpu="H200", n_gpus=8, seq_len=4096, batch_per_gpu=1, ep=2)
    assert est.config.sizes.is_moe and "MoE block" in est.provenance.line()


def test_custom_shape_decisions():
    m = MoEShape(name="x", dim=4096, moe_inter=14336, experts=8, top_k=2, source="test")
    assert np.isfinite(dm.speedup(m, tokens=8192))


def test_ep_all_to_all_is_the_collective_model():
    from perfmodel.errors import InvalidParallelismError
    from perfmodel.models.collectives import collective_time_s

    r = pm.moe.ep_all_to_all("deepseek-v3", tokens=8192, ep=8, gpu="H100-SXM")
    nbytes = 8192 * 8 * 7168 * 2
    assert r.bytes_per_gpu == nbytes
    want = collective_time_s("all_gather", nbytes, group_size=8, gpus_per_node=8, gpu="H100-SXM")
    assert r.dispatch_s == pytest.approx(want, rel=1e-12) and r.total_s == pytest.approx(4 * want, rel=1e-12)
    assert r.provenance.startswith("estimated")
    assert pm.moe.ep_all_to_all("deepseek-v3", tokens=8192, ep=1).total_s == 0.0
    with pytest.raises(InvalidParallelismError, match="does not divide"):
        pm.moe.ep_all_to_all("mixtral-8x7b", tokens=8192, ep=3)
    with pytest.raises(InvalidShapeError):
        pm.moe.ep_all_to_all("mixtral-8x7b", tokens=-1, ep=2)


def test_moe_answers_print_short_and_whole():
    """The MoE results a notebook shows: a one-line repr (no array dumps) that says time, source and error, and a
    ``str`` with every provenance clause, one per line (joined back: the answer's provenance)."""
    from perfmodel.moe.grouped import error_bar_line, provenance_head

    g = pm.moe.grouped_gemm([1024] * 64, 2048, 1408, gpu="H100-SXM")
    b = pm.moe.expert_block_time("qwen3-30b-a3b", tokens=16384, gpu="H100-SXM", recipe="rowwise")
    d = pm.moe.block_decision("qwen3-30b-a3b", tokens=16384, gpu="H100-SXM")
    assert repr(g) == (
        f"GroupedGemmTime(bf16 fwd, G=64, 65536 rows on H100-SXM: {g.time_s * 1e6:.1f} us (event time), "
        f"{g.bound}-bound, {g.kernel}, {g.tiles} tiles in {g.waves} waves; transferred from H200)"
    )
    assert f"fwd {b.fwd_s * 1e3:.3f} + bwd {b.bwd_s * 1e3:.3f} = {b.total_s * 1e3:.3f} ms" in repr(b)
    assert f"MdAPE {b.error_bar['p50']:.1f} %, p90 {b.error_bar['p90']:.1f} %" in repr(b)
    assert repr(d).startswith("BlockDecision(qwen3-30b-a3b on H100-SXM, 16384 tokens: bf16 ")
    assert f"-> {d.speedup:.3f}x: {'convert' if d.use else 'keep bf16'}" in repr(d)
    for r in (repr(g), repr(b), repr(d)):
        assert len(r) < 320 and "array(" not in r and "\n" not in r, r
    for obj in (g, b):
        lines = str(obj).splitlines()
        clauses = [ln.removeprefix("    - ") for ln in lines if ln.startswith("    - ")]
        assert "; ".join(clauses) == obj.provenance
        assert f"  error: {error_bar_line(obj.error_bar)}" in lines
    assert str(d).splitlines()[1:-2] == [f"  {c}" for c in split_clauses(d.reason)]
    # a batch and the estimates say what they are
    batch = pm.moe.grouped_gemm([[1024] * 64, [512] * 64], 2048, 1408, gpu="H200")
    assert "2 vectors on H200" in repr(batch) and "measured-fit" in repr(batch)
    est = pm.moe.grouped_gemm([1024] * 64, 2048, 1408, gpu="B200")
    assert repr(est).endswith("roofline; roofline estimate on B200)") and "tiles" not in repr(est)
    assert error_bar_line(est.error_bar) == "no measured error (a roofline estimate)"
    mx = pm.moe.expert_block_time("qwen3-30b-a3b", tokens=16384, gpu="B200", recipe="mxfp8")
    assert repr(mx).endswith("no measured error for this GPU or recipe (estimate); estimated)")
    assert provenance_head("measured-fit: H200 sweep (a; b); c") == "measured-fit"
    assert provenance_head("") == ""
