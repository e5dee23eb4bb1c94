"""MoE decoder layers in the step model: attention half + expert block + all-to-all, each checked against the piece
computed directly (perfmodel.step.moe_layer; docs/step.md "MoE layers")."""

import dataclasses

import numpy as np
import pytest

import perfmodel as pm
from perfmodel import step
from perfmodel.errors import (
    IneligibleLinearError,
    InvalidParallelismError,
    MoEPresetError,
    PerfModelError,
    UnknownLinearError,
    UnsupportedLayerError,
)
from perfmodel.presets import LayerShape, get_preset
from perfmodel.step.moe_layer import local_moe

QWEN = "qwen3-30b-a3b"


def _attn(name=QWEN):
    lay, _ = step.moe_layer.resolve_moe_layer(name)
    return lay


def test_attention_shape_from_the_config():
    lay = _attn()
    a = lay.attention
    # Qwen3-30B-A3B config.json: hidden 2048, 32 heads, 4 KV heads, head_dim 128
    assert (a.hidden, a.heads, a.kv_heads, a.head_dim) == (2048, 32, 4, 128)
    assert lay.moe is get_preset(QWEN).moe and lay.groups == ("qkv", "o", "experts")


def test_moe_layer_is_attention_plus_block_bf16():
    r = step.layer_time(QWEN, gpu="H200", seq_len=4096, batch=2)
    assert isinstance(r, step.MoELayerTime) and r.tokens == 8192 and r.experts_recipe == "bf16"
    attn = step.layer_time(_attn().attention, gpu="H200", seq_len=4096, batch=2, mlp=False)
    blk = pm.moe.expert_block_time(QWEN, tokens=8192, gpu="H200", recipe="bf16")
    assert r.step_s == pytest.approx(float(attn.step_s) + blk.total_s, rel=1e-9)
    assert r.attention.step_s == pytest.approx(float(attn.step_s), rel=1e-9)
    assert sum(float(v) for v in r.parts.values()) == pytest.approx(r.step_s, rel=1e-9)
    assert r.all_to_all is None and r.parts["all_to_all"] == 0.0
    # the attention half has no MLP kernels; the dense layer of the same shape has more
    names = {k.name for k in attn.kernels}
    assert not any(n.startswith(("w1.", "w2.", "w3.")) or n.startswith("activation") for n in names)
    assert "sdpa_fwd" in names and "wq.output" in names and "ffn_norm" in names and "residual" in names
    full = step.layer_time(_attn().attention, gpu="H200", seq_len=4096, batch=2)
    assert float(full.step_s) > float(attn.step_s)


def test_rowwise_experts_with_ep_add_the_all_to_all_estimate():
    kw = dict(gpu="H200", seq_len=4096, batch=1)
    r = step.layer_time(QWEN, recipe="rowwise", convert=["qkv", "experts"], ep=8, **kw)
    lay = _attn()
    attn = step.layer_time(lay.attention, recipe="rowwise", convert=["qkv"], mlp=False, **kw)
    local = local_moe(lay.moe, 8)
    assert (local.experts, local.router_width, local.top_k) == (16, 128, 8)
    blk = pm.moe.expert_block_time(local, tokens=4096, gpu="H200", recipe="rowwise")
    a2a = pm.moe.ep_all_to_all(QWEN, tokens=4096, ep=8, gpu="H200")
    assert r.step_s == pytest.approx(float(attn.step_s) + blk.total_s + a2a.total_s, rel=1e-9)
    assert r.groups == ("qkv", "experts") and r.converted == ("wq", "wk", "wv") and r.experts_recipe == "rowwise"
    # hand check of the all-to-all buffer: tokens * top_k * dim * 2 bytes, four calls per step
    assert r.all_to_all.bytes_per_gpu == pytest.approx(4096 * 8 * 2048 * 2, rel=1e-9)
    assert r.all_to_all_s == pytest.approx(4 * a2a.dispatch_s, rel=1e-9)
    line = r.provenance.line()
    assert "EP all-to-all estimated" in line and "MdAPE" in line and "17.2" in line
    rows = r.kernel_rows()
    assert sum(x["seconds"] for x in rows) == pytest.approx(r.step_s, rel=1e-9)
    assert all(x["provenance"] for x in rows)
    assert any(x["part"] == "all_to_all" and "estimated" in x["provenance"] for x in rows)


def test_imbalance_passes_through():
    kw = dict(gpu="H200", seq_len=2048, batch=1)
    skew = ("zipf", 1.0)
    r = step.layer_time(QWEN, skew=skew, **kw)
    blk = pm.moe.expert_block_time(QWEN, tokens=2048, gpu="H200", skew=skew)
    assert r.block.total_s == pytest.approx(blk.total_s, rel=1e-9)
    assert r.block.total_s > step.layer_time(QWEN, **kw).block.total_s  # skew costs time
    counts = np.zeros(128, dtype=int)
    counts[:8] = 2048  # every token to the same 8 experts
    rc = step.layer_time(QWEN, counts=counts, **kw)
    assert np.array_equal(rc.block.counts, counts)


def test_dense_layers_of_an_moe_model_are_priced_dense():
    # Llama 4 Maverick: 24 dense layers of intermediate_size_mlp 16384
    r = step.layer_time("llama4-maverick", gpu="H200", seq_len=4096, dense_layer=True)
    assert isinstance(r, step.LayerTime) and r.layer.ffn == 16384
    direct = step.layer_time(
        LayerShape(name="x", hidden=5120, ffn=16384, heads=40, kv_heads=8, head_dim=128), gpu="H200", seq_len=4096
    )
    assert float(r.step_s) == pytest.approx(float(direct.step_s), rel=1e-9)
    with pytest.raises(UnsupportedLayerError, match="no dense layers"):
        step.layer_time(QWEN, gpu="H200", seq_len=4096, dense_layer=True)


def test_named_errors():
    kw = dict(gpu="H200", seq_len=4096)
    with pytest.raises(InvalidParallelismError, match=r"ep=3 does not divide the 128"):
        step.layer_time(QWEN, ep=3, **kw)
    with pytest.raises(InvalidParallelismError, match=r"fewer than top_k 8"):
        step.layer_time(QWEN, ep=32, **kw)
    with pytest.raises(InvalidParallelismError, match="positive int"):
        step.layer_time(QWEN, ep=0, **kw)
    with pytest.raises(InvalidParallelismError, match=r"ep: MoE keywords .*llama3-8b.*dense"):
        step.layer_time("llama3-8b", ep=8, **kw)
    with pytest.raises(InvalidParallelismError, match="dense"):
        step.best_convert("llama3-8b", skew=("zipf", 1.0), **kw)
    with pytest.raises(UnknownLinearError, match=r"no dense FFN group.*'experts'"):
        step.layer_time(QWEN, recipe="rowwise", convert=["w13"], **kw)
    with pytest.raises(IneligibleLinearError, match=r"experts cannot run in 'tensorwise'.*rowwise"):
        step.layer_time(QWEN, recipe="tensorwise", convert="experts", **kw)
    with pytest.raises(UnsupportedLayerError, match="activation checkpointing"):
        step.layer_time(QWEN, ac="full", **kw)
    with pytest.raises(PerfModelError, match="one number each"):
        step.layer_time(QWEN, gpu="H200", seq_len=np.array([1024, 2048]))
    with pytest.raises(MoEPresetError, match=r"deepseek-v3-16b.*MLA.*MoELayer"):
        step.layer_time("deepseek-v3-16b", **kw)
    with pytest.raises(TypeError, match="unexpected keyword"):
        step.layer_time(QWEN, epp=2, **kw)


def test_tensorwise_default_leaves_the_experts_bf16():
    r = step.layer_time(QWEN, gpu="H200", seq_len=4096, recipe="tensorwise")
    assert r.experts_recipe == "bf16" and r.groups == ("qkv", "o")
    assert step.moe_eligible_groups(_attn(), "tensorwise") == ("qkv", "o")
    assert step.moe_eligible_groups(_attn(), "rowwise") == ("qkv", "o", "experts")


def test_best_convert_and_report_on_an_moe_preset():
    kw = dict(gpu="H200", seq_len=4096, recipe="rowwise")
    best = step.best_convert("llama4-scout", **kw)
    rep = step.step_report("llama4-scout", **kw)
    assert rep.chosen == best and rep.layers == 48
    assert set(best) <= {"qkv", "o", "experts"}
    # the chosen subset is no slower than bf16 and than every other subset priced directly
    t = {
        sub: float(step.layer_time("llama4-scout", convert=list(sub), **kw).step_s)
        for sub in [("qkv",), ("o",), ("experts",), ("qkv", "o"), ("qkv", "o", "experts")]
    }
    bf16 = float(step.layer_time("llama4-scout", gpu="H200", seq_len=4096).step_s)
    chosen = float(rep.best.step_s)
    assert chosen <= bf16 * (1 + 1e-9) and all(chosen <= v * (1 + 1e-9) for v in t.values())
    d = rep.to_dict()
    assert d["stack_step_s"]["bf16"] == pytest.approx(48 * float(rep.bf16.step_s), rel=1e-9)
    assert "experts" in str(rep)


def test_mla_stand_in_via_moe_layer():
    m = get_preset("deepseek-v3-16b").moe
    # stand-in for MLA: 16 heads of 192 (q/k head width of MLA), labelled as such
    lay = step.MoELayer(
        name="ds16 (GQA stand-in)",
        attention=LayerShape(name="ds16-attn", hidden=2048, ffn=10944, heads=16, head_dim=192),
        moe=m,
        dense_ffn=10944,
        attention_note="MHA stand-in for MLA",
    )
    r = step.layer_time(lay, gpu="H200", seq_len=4096)
    blk = pm.moe.expert_block_time(m, tokens=4096, gpu="H200")
    assert r.block.total_s == pytest.approx(blk.total_s, rel=1e-9)
    assert "attention: MHA stand-in for MLA" in r.provenance.assumptions
    with pytest.raises(UnsupportedLayerError, match="attention must be a LayerShape"):
        step.MoELayer(name="x", attention=m, moe=m)
    d = dataclasses.replace(lay)
    assert d == lay


def test_mxfp8_experts_labelled_estimated():
    r = step.layer_time(QWEN, gpu="B200", seq_len=4096, recipe="mxfp8", convert="experts")
    assert r.experts_recipe == "mxfp8" and r.provenance.kind == "estimated"
    assert "mxfp8 experts estimated" in r.provenance.line()
