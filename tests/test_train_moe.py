"""perfmodel.train.estimate on MoE presets: the MoE layer is the step model's, parameters counted by hand, EP rules
named, MFU over the active parameters, memory and collectives of the local experts (docs/train.md, "MoE models")."""

import numpy as np
import pytest

import perfmodel.train as train
from perfmodel import step
from perfmodel.errors import InvalidParallelismError, InvalidShapeError, MoEPresetError, UnsupportedLayerError
from perfmodel.train.config import model_sizes

KW = dict(gpu="H200", seq_len=4096, batch_per_gpu=1)

# Mixtral 8x7B by hand (config.json: hidden 4096, 32 heads x 128, 8 KV heads, intermediate 14336, 8 experts, top-2,
# 32 layers, vocab 32000)
MIX_ATTN = 4096 * 4096 * 2 + 4096 * 1024 * 2  # wq, wo; wk, wv
MIX_EXPERTS = 8 * 3 * 4096 * 14336
MIX_ROUTER = 4096 * 8
MIX_LAYER = MIX_ATTN + MIX_EXPERTS + MIX_ROUTER + 2 * 4096
MIX_TOTAL = 32 * MIX_LAYER + 32000 * 4096 + (32000 * 4096 + 4096)
MIX_ACTIVE_LAYER = MIX_ATTN + 2 * 3 * 4096 * 14336 + MIX_ROUTER + 2 * 4096


@pytest.fixture(scope="module")
def mix_ep1():
    return train.estimate("mixtral-8x7b", n_gpus=8, ep=1, **KW)


@pytest.fixture(scope="module")
def qwen_ep8():
    return train.estimate("qwen3-30b-a3b", n_gpus=8, ep=8, recipe="rowwise", **KW)


def test_mixtral_parameter_counts_by_hand():
    s = model_sizes("mixtral-8x7b", layers=None, vocab=None)
    assert s.is_moe and s.moe_layers == 32 and s.dense_layers == 0
    assert s.layer_params == MIX_LAYER and s.expert_params == MIX_EXPERTS and s.router_params == MIX_ROUTER
    assert s.total_params == MIX_TOTAL
    assert s.active_non_embedding_params == 32 * MIX_ACTIVE_LAYER + 32000 * 4096 + 4096
    # published (Mistral's model card): 46.7 B total, 12.9 B active
    assert s.total_params == pytest.approx(46.7e9, rel=5e-3)
    assert s.active_params == pytest.approx(12.9e9, rel=5e-3)


@pytest.mark.parametrize("which", ["mix_ep1", "qwen_ep8"])
def test_layer_compute_is_the_step_models_moe_layer(which, request):
    est = request.getfixturevalue(which)
    c = est.config
    lt = step.layer_time(c.sizes.name, gpu="H200", seq_len=4096, batch=1, recipe=c.recipe, ac="none", ep=c.ep)
    assert isinstance(lt, step.MoELayerTime) and lt.ep == c.ep
    assert est.layer.step_s == pytest.approx(lt.step_s, rel=1e-9)
    blk = lt.block
    attn_fwd = sum(k.step_s for k in lt.attention.kernels if k.phase == "fwd")
    assert est.layer.fwd_s == pytest.approx(attn_fwd + blk.fwd_s + lt.all_to_all_s / 2, rel=1e-9)
    assert est.compute_s["layers"] == pytest.approx(c.sizes.moe_layers * lt.step_s, rel=1e-9)
    assert est.layer.parts["experts"] == pytest.approx(blk.total_s, rel=1e-9)
    assert (lt.all_to_all_s > 0) == (c.ep > 1)
    if c.ep > 1:
        assert c.ep_group.size == 8 and c.expert_fsdp.size == 1
        assert est.layer.parts["all_to_all"] == pytest.approx(lt.all_to_all_s, rel=1e-9)


def test_qwen_ep8_experts_converted_and_local(qwen_ep8):
    c = qwen_ep8.config
    assert "experts" in c.converted
    assert qwen_ep8.layer.layer_time.block.config.experts == 128 // 8
    # dp_shard / ep = 1: no expert all-gather across ranks
    assert not [x for x in qwen_ep8.comm if x.group == "expert_fsdp"]


def test_dense_layers_of_maverick_are_priced_as_dense():
    est = train.estimate("llama4-maverick", n_gpus=64, ep=8, layers=None, **KW)
    s = est.config.sizes
    assert s.moe_layers == 24 and s.dense_layers == 24 and est.dense_layer is not None
    dense = step.layer_time("llama4-maverick", gpu="H200", seq_len=4096, batch=1, ac="none", dense_layer=True)
    assert est.dense_layer.step_s == pytest.approx(dense.step_s, rel=1e-9)
    want = 24 * est.layer.step_s + 24 * dense.step_s
    assert est.compute_s["layers"] == pytest.approx(want, rel=1e-9)
    assert s.total_params == pytest.approx(400e9, rel=0.01)  # published: 400 B total, 17 B active
    assert s.active_params == pytest.approx(17e9, rel=0.02)


def test_model_flops_count_active_parameters(mix_ep1):
    per_token = 6 * (32 * MIX_ACTIVE_LAYER + 32000 * 4096 + 4096) + 12 * 32 * 32 * 128 * 4096
    assert mix_ep1.model_flops_per_step == pytest.approx(per_token * 4096, rel=1e-9)
    assert mix_ep1.mfu_report.flops.total_per_token == pytest.approx(per_token, rel=1e-9)
    assert 0 < float(mix_ep1.mfu) < 1


def test_memory_of_local_experts_by_hand():
    est = train.estimate("mixtral-8x7b", n_gpus=8, ep=4, **KW)
    m = est.memory
    assert m["params"] == pytest.approx(4 * MIX_TOTAL / 8, rel=1e-9)  # experts / ep over dp_shard / ep ranks
    assert m["optimizer"] == pytest.approx(8 * MIX_TOTAL / 8, rel=1e-9)
    last = MIX_LAYER - MIX_EXPERTS * (1 - 1 / 4)
    assert m["gathered_weights"] == pytest.approx(2 * (32000 * 4096 + 4096 + last), rel=1e-9)
    attn = 4096 * 4 + (4096 + 2 * 1024) + 4096  # norm inputs/outputs, q k v, attention output
    per_token = attn + 8 + 2 * (4096 + 3 * 14336)  # router scores, routed rows and the expert MLP's three tensors
    assert m["activations"] == pytest.approx(2 * 4096 * per_token * 32 * 1.32, rel=1e-9)
    assert "MoE memory estimated" in est.table()


def test_expert_collectives_move_the_local_experts():
    est = train.estimate("mixtral-8x7b", n_gpus=8, ep=2, **KW)
    ex = {x.op: x for x in est.comm if x.group == "expert_fsdp"}
    assert ex["all_gather"].group_size == 4 and ex["all_gather"].calls == 63
    assert ex["all_gather"].nbytes == pytest.approx(MIX_EXPERTS / 2 * 2, rel=1e-12)
    assert ex["reduce_scatter"].nbytes == pytest.approx(MIX_EXPERTS / 2 * 4, rel=1e-12)
    rest = {x.op: x for x in est.comm if x.name.startswith("non-expert")}
    assert rest["all_gather"].nbytes == pytest.approx((MIX_LAYER - MIX_EXPERTS) * 2, rel=1e-12)


def test_provenance_names_the_moe_parts():
    est = train.estimate("qwen3-30b-a3b", n_gpus=8, ep=4, **KW)
    line = est.provenance.line()
    for part in ("MoE block measured-calibrated on the H200", "EP all-to-all estimated", "MoE memory estimated",
                 "added serially"):  # fmt: skip
        assert part in line
    assert est.provenance.expected_error.speedup_pct is None  # no MoE step speedup was ever measured
    h100 = train.estimate("qwen3-30b-a3b", n_gpus=8, ep=4, gpu="H100", seq_len=4096, batch_per_gpu=1)
    assert "transferred/estimated" in h100.provenance.line()


@pytest.mark.parametrize(
    "kw, error, match",
    [
        (dict(n_gpus=8, ep=3), InvalidParallelismError, "does not divide the 8 routed experts"),
        (dict(n_gpus=2, ep=4), InvalidParallelismError, "dp_shard=2"),
        (dict(n_gpus=8, ep=8), InvalidParallelismError, "fewer than top_k"),
        (dict(n_gpus=8, tp=2), InvalidParallelismError, "tensor parallelism of the experts"),
        (dict(n_gpus=8, ac="full"), UnsupportedLayerError, "activation checkpointing of an MoE layer"),
        (dict(n_gpus=8, ep=0), InvalidParallelismError, "ep must be"),
    ],
)
def test_bad_moe_jobs_are_named(kw, error, match):
    args = {**KW, **kw}
    with pytest.raises(error, match=match):
        train.estimate("mixtral-8x7b", **args)


def test_arrays_mla_and_dense_ep_are_refused():
    with pytest.raises(InvalidShapeError, match="MoE model: seq_len must be one number"):
        train.estimate("mixtral-8x7b", gpu="H200", n_gpus=8, seq_len=np.array([2048, 4096]), batch_per_gpu=1)
    with pytest.raises(InvalidShapeError, match="layers must be one positive integer"):
        train.estimate("mixtral-8x7b", n_gpus=8, layers=np.array([2, 4]), **KW)
    with pytest.raises(MoEPresetError, match="MoELayer"):
        train.estimate("deepseek-v3", n_gpus=8, **KW)
    with pytest.raises(InvalidParallelismError, match="dense model"):
        train.estimate("llama3-8b", n_gpus=8, ep=2, **KW)


def test_grid_over_gpus_prices_each_moe_layout():
    grid = train.estimate("mixtral-8x7b", gpu="H200", n_gpus=np.array([8, 16]), seq_len=4096, batch_per_gpu=1, ep=4)
    one = train.estimate("mixtral-8x7b", n_gpus=16, ep=4, **KW)
    assert grid.step_s[1] == pytest.approx(float(one.step_s), rel=1e-9)


def test_short_stack_and_auto_convert():
    short = train.estimate("mixtral-8x7b", n_gpus=8, ep=4, layers=2, **KW)
    assert short.config.sizes.moe_layers == 2 and short.config.sizes.layers == 2
    auto = train.estimate("qwen3-30b-a3b", n_gpus=8, ep=8, layers=2, recipe="rowwise", convert="auto", **KW)
    for conv in ("none", ["experts"], ["qkv", "o", "experts"]):
        other = train.estimate("qwen3-30b-a3b", n_gpus=8, ep=8, layers=2, recipe="rowwise", convert=conv, **KW)
        assert float(auto.step_s) <= float(other.step_s) * (1 + 1e-9)


def test_cli_prints_the_moe_parts(capsys):
    from perfmodel.cli import main

    rc = main(["train", "--model", "mixtral-8x7b", "--gpu", "h200", "--gpus", "8", "--ep", "4", "--seq-len", "4096"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "MoE layer x 32" in out and "all-to-all (EP 4)" in out and "ESTIMATE" in out
    assert "46.70 B total, 12.88 B active" in out and "MoE memory estimated" in out
