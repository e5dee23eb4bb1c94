"""The MoE presets added from published configs (Mixtral 8x22B, Qwen3-235B-A22B, Qwen3-Coder-480B-A35B, DBRX, OLMoE,
gpt-oss-20b, GLM-4.5-Air): shapes by hand from each config.json (copies cited in perfmodel/presets/_moe.py), the
bench's table row, the published parameter counts, and that every public face prices them."""

from __future__ import annotations

import math

import pytest

import perfmodel as pm
import perfmodel.train as train
from perfmodel import cli, step
from perfmodel.bench.moe_block.config import MODEL_BY_NAME
from perfmodel.presets import GQA_ATTENTION, PRESETS, get_preset, moe_presets
from perfmodel.step.moe_layer import MOE_ATTENTION, resolve_moe_layer
from perfmodel.train.config import model_sizes

# name: (dim, layers, heads, kv_heads, head_dim, vocab, moe_inter, experts, top_k, shared_inter, dense_layers,
#        dense_inter, router, fused gate_up), each from the model's config.json
CONFIG = {
    "mixtral-8x22b": (6144, 56, 48, 8, 128, 32000, 16384, 8, 2, 0, 0, 0, "softmax", False),
    "qwen3-235b-a22b": (4096, 94, 64, 4, 128, 151936, 1536, 128, 8, 0, 0, 0, "softmax", False),
    "qwen3-coder-480b-a35b": (6144, 62, 96, 8, 128, 151936, 2560, 160, 8, 0, 0, 0, "softmax", False),
    "dbrx": (6144, 40, 48, 8, 128, 100352, 10752, 16, 4, 0, 0, 0, "softmax", False),
    "olmoe-1b-7b": (2048, 16, 16, 16, 128, 50304, 1024, 64, 8, 0, 0, 0, "softmax", False),
    "gpt-oss-20b": (2880, 24, 64, 8, 64, 201088, 2880, 32, 4, 0, 0, 0, "softmax", True),
    "glm-4.5-air": (4096, 46, 96, 8, 128, 151552, 1408, 128, 8, 1408, 1, 10944, "sigmoid", False),
}
NEW = tuple(CONFIG)
#: the bench's table rows (perfmodel/bench/moe_block/config.py) of the same routed-expert blocks
BENCH_ROW = {
    "mixtral-8x22b": "mixtral_8x22b",
    "qwen3-235b-a22b": "qwen3_235b_a22b",
    "qwen3-coder-480b-a35b": "qwen3_coder_480b",
    "dbrx": "dbrx",
    "olmoe-1b-7b": "olmoe_1b_7b",
    "glm-4.5-air": "glm45_air",
}

# Published parameter counts (total, active), from the model's own release:
#   mixtral-8x22b: Mistral AI's release post (mistral.ai/news/mixtral-8x22b): "39B active parameters out of 141B"
#   qwen3-235b-a22b, qwen3-coder-480b-a35b: the names and Qwen's model cards (235B total / 22B activated,
#       480B total / 35B activated)
#   dbrx: databricks/dbrx MODEL_CARD_dbrx_base.md: "132B total parameters of which 36B parameters are active"
#   olmoe-1b-7b: allenai/OLMoE README.md: "1.3 billion active and 6.9 billion total parameters"
#   gpt-oss-20b: OpenAI's gpt-oss-120b & gpt-oss-20b model card: 20.9B total; the Hugging Face model card: "21B
#       parameters with 3.6B active"
#   glm-4.5-air: Zhipu's GLM-4.5-Air (as NVIDIA-NeMo/Megatron-Bridge docs/models/glm/glm45.md quotes it): "106B total
#       parameters, 12B active per token"
# What "active" counts differs by publisher: the Linears a token runs through (routed experts at top_k / experts),
# plus "emb" = the input embedding table, "none" = no embedding table, "unemb" = lm_head but not the input table.
PUBLISHED = {
    "mixtral-8x22b": (141e9, 39e9, "emb"),
    "qwen3-235b-a22b": (235e9, 22e9, "emb"),
    "qwen3-coder-480b-a35b": (480e9, 35e9, "emb"),
    "dbrx": (132e9, 36e9, "emb"),
    "olmoe-1b-7b": (6.9e9, 1.3e9, "emb"),
    "gpt-oss-20b": (20.9e9, 3.6e9, "unemb"),  # OpenAI counts the unembedding as active, not the embedding
    "glm-4.5-air": (106e9, 12e9, "none"),  # Zhipu's 12B counts neither embedding table
}
#: the published counts are rounded to 2-3 significant digits ("39B" is 38.5-39.5B, +-1.3 %; "1.3B" +-3.8 %) and
#: the presets leave out norms, biases and the router's score bias (< 0.1 % of any of these models): 3 % holds every
#: model and would catch one wrong config number (a wrong intermediate size, expert count or layer count moves the
#: count by far more: DBRX's 3584 instead of 10752 gives 47B, not 132B)
REL = 0.03


def _lin(p, name):
    return next(lin for lin in p.linears if lin.name == name)


def _params(p):
    """(all Linears, the Linears one token runs through, input-embedding table) parameters of preset ``p``."""
    total = sum(lin.in_features * lin.out_features * p.total_count(lin) for lin in p.linears)
    active = sum(lin.in_features * lin.out_features * p.total_count(lin) * lin.token_fraction for lin in p.linears)
    return total, active, _lin(p, "lm_head").out_features * p.moe.dim


def test_the_new_presets_are_registered_as_moe_presets():
    names = moe_presets()
    assert all(n in names and n in PRESETS for n in NEW)
    assert len(set(PRESETS)) == len(PRESETS)


@pytest.mark.parametrize("name", NEW)
def test_shapes_by_hand_from_the_config(name):
    d, layers, heads, kv, hd, vocab, f, E, k, s, dense, dense_f, router, fused = CONFIG[name]
    p = get_preset(name)
    m = p.moe
    assert p.layers == layers and p.layer is None and m.name == name
    assert (m.dim, m.moe_inter, m.experts, m.top_k, m.router) == (d, f, E, k, router)
    assert m.shared_width == s and m.dense_layers == dense and m.moe_layers == layers - dense
    assert "huggingface.co" in m.source and m.source == p.source
    # attention: wq out = heads * head_dim, wk / wv out = kv_heads * head_dim, wo back to dim, in every layer
    assert (_lin(p, "wq").in_features, _lin(p, "wq").out_features) == (d, heads * hd)
    assert (_lin(p, "wk").in_features, _lin(p, "wk").out_features) == (d, kv * hd)
    assert (_lin(p, "wv").in_features, _lin(p, "wv").out_features) == (d, kv * hd)
    assert (_lin(p, "wo").in_features, _lin(p, "wo").out_features) == (heads * hd, d)
    assert all(p.total_count(_lin(p, n)) == layers for n in ("wq", "wk", "wv", "wo"))
    # router: dim -> experts, once per MoE layer; lm_head: dim -> vocab, once
    router_lin = _lin(p, "moe.router.gate")
    assert (router_lin.in_features, router_lin.out_features, p.total_count(router_lin)) == (d, E, layers - dense)
    lm = _lin(p, "lm_head")
    assert (lm.in_features, lm.out_features, p.total_count(lm)) == (d, vocab, 1)
    # routed experts: each sees top_k / experts of the tokens; total parameters by hand
    experts = [lin for lin in p.linears if lin.name.startswith("experts.")]
    assert all(lin.token_fraction == pytest.approx(k / E) and lin.count == E for lin in experts)
    routed = sum(lin.in_features * lin.out_features * p.total_count(lin) for lin in experts)
    if fused:  # gpt-oss: gate_up_proj [E, dim, 2 * inter] and down_proj
        assert [lin.name for lin in experts] == ["experts.w13", "experts.w2"]
        assert routed == (layers - dense) * E * (2 * d * f + f * d)
    else:
        assert [lin.name for lin in experts] == ["experts.w1", "experts.w3", "experts.w2"]
        assert routed == (layers - dense) * E * 3 * d * f
    assert routed == (layers - dense) * E * 3 * d * f  # the same count either way
    # shared expert and dense MLP, where the model has them
    shared = [lin for lin in p.linears if lin.name.startswith("shared_experts.")]
    assert sum(lin.in_features * lin.out_features * p.total_count(lin) for lin in shared) == (
        (layers - dense) * 3 * d * s
    )
    mlp = [lin for lin in p.linears if lin.name.startswith("mlp.")]
    assert sum(lin.in_features * lin.out_features * p.total_count(lin) for lin in mlp) == dense * 3 * d * dense_f


@pytest.mark.parametrize("name", sorted(BENCH_ROW))
def test_the_routed_block_is_the_bench_tables_row(name):
    m, b = get_preset(name).moe, MODEL_BY_NAME[BENCH_ROW[name]]
    assert (m.dim, m.moe_inter, m.experts, m.top_k, m.shared_width, m.router, m.router_width) == (
        b.dim,
        b.inter,
        b.experts,
        b.top_k,
        b.shared_inter,
        b.score_func,
        b.router_experts,
    )
    assert m.moe_layers * b.expert_params == sum(
        lin.in_features * lin.out_features * get_preset(name).total_count(lin)
        for lin in get_preset(name).linears
        if lin.name.startswith("experts.")
    )


@pytest.mark.parametrize("name", NEW)
def test_published_parameter_counts(name):
    p = get_preset(name)
    total, active, emb = _params(p)
    lm_head = emb  # untied: lm_head is another vocab x dim table
    pub_total, pub_active, counts = PUBLISHED[name]
    assert total + emb == pytest.approx(pub_total, rel=REL)
    got = {"emb": active + emb, "none": active - lm_head, "unemb": active}[counts]
    assert got == pytest.approx(pub_active, rel=REL)


def test_parameter_counts_by_hand():
    # Mixtral 8x22B: per layer q, o 6144 x 6144, k, v 6144 x 1024, 8 experts x 3 x 6144 x 16384, router 6144 x 8
    layer = 2 * 6144 * 6144 + 2 * 6144 * 1024 + 8 * 3 * 6144 * 16384 + 6144 * 8
    total, _, emb = _params(get_preset("mixtral-8x22b"))
    assert total + emb == 56 * layer + 2 * 32000 * 6144 == 140_619_939_840
    # GLM-4.5-Air: 1 dense layer (MLP 3 x 4096 x 10944) + 45 MoE layers (128 routed + 1 shared expert of 1408)
    attn = 2 * 4096 * 96 * 128 + 2 * 4096 * 8 * 128
    moe = 128 * 3 * 4096 * 1408 + 3 * 4096 * 1408 + 4096 * 128
    total, _, emb = _params(get_preset("glm-4.5-air"))
    assert total + emb == 46 * attn + 3 * 4096 * 10944 + 45 * moe + 2 * 151552 * 4096 == 106_851_205_120


@pytest.mark.parametrize("name", NEW)
def test_train_counts_the_same_parameters(name):
    # perfmodel.train's own count (every Linear, both embedding tables, norms) agrees with the Linears + embedding
    total, active, emb = _params(get_preset(name))
    s = model_sizes(name, layers=None, vocab=None)
    assert s.is_moe and s.moe_layers + s.dense_layers == get_preset(name).layers
    assert s.total_params == pytest.approx(total + emb, rel=1e-4)  # the difference is the norms
    assert s.active_params == pytest.approx(active + emb, rel=1e-4)


def test_moe_attention_has_one_home():
    assert isinstance(MOE_ATTENTION, dict) and MOE_ATTENTION == dict(GQA_ATTENTION)
    for name in NEW:
        _, _, heads, kv, hd, *_ = CONFIG[name]
        assert MOE_ATTENTION[name] == (heads, kv, hd)
    # the earlier GQA MoE presets kept their numbers
    assert MOE_ATTENTION["mixtral-8x7b"] == (32, 8, 128) and MOE_ATTENTION["gpt-oss-120b"] == (64, 8, 64)
    for name, (heads, kv, hd) in MOE_ATTENTION.items():
        p = get_preset(name)
        q, k = (_lin(p, n) for n in (("q_proj", "k_proj") if name == "mixtral-8x7b" else ("wq", "wk")))
        assert (q.out_features, k.out_features) == (heads * hd, kv * hd)


@pytest.mark.parametrize("name", NEW)
def test_speedup_is_a_finite_positive_number(name):
    s = pm.moe.speedup(name, tokens=8192, gpu="H200", recipe="rowwise")
    assert isinstance(s, float) and math.isfinite(s) and s > 0


@pytest.mark.parametrize("name", NEW)
def test_step_prices_the_moe_layer(name):
    lay, n = resolve_moe_layer(name)
    d, layers, heads, kv, hd, *_, dense, dense_f, _, _ = CONFIG[name]
    a = lay.attention
    assert (a.hidden, a.heads, a.kv_heads, a.head_dim) == (d, heads, kv, hd)
    assert n == layers - dense and lay.dense_ffn == dense_f
    r = step.layer_time(name, gpu="H200", seq_len=4096, batch=1)
    assert isinstance(r, step.MoELayerTime) and r.tokens == 4096 and math.isfinite(r.step_s) and r.step_s > 0
    blk = pm.moe.expert_block_time(name, tokens=4096, gpu="H200", recipe="bf16")
    assert r.block.total_s == pytest.approx(blk.total_s, rel=1e-9)


#: expert-parallel degrees the models allow on 8 GPUs (at least top_k experts per GPU)
EP = {"mixtral-8x22b": 4, "dbrx": 4}


@pytest.mark.parametrize("name", NEW)
def test_train_estimates_them(name):
    ep = EP.get(name, 8)
    est = train.estimate(name, gpu="H200", n_gpus=8, seq_len=4096, batch_per_gpu=1, ep=ep, layers=2)
    assert math.isfinite(float(est.step_s)) and float(est.step_s) > 0
    assert est.config.sizes.moe_layers == 2 and est.config.ep == ep


def test_cli_float8_mixtral_8x22b(capsys):
    code = cli.main(["float8", "--model", "mixtral-8x22b"])
    out, err = capsys.readouterr()
    assert code == 0 and not err
    assert "mixtral-8x22b (56 layers)" in out
    assert "experts.w1, experts.w3   6144  16384" in out and "lm_head                  6144  32000" in out
    assert "Routed experts (grouped GEMMs, perfmodel.moe):" in out
    assert "mixtral-8x22b: 8 experts, top-2, dim 6144, moe_inter 16384, shared width 0" in out


def test_cli_models_lists_them(capsys):
    code = cli.main(["models"])
    out, _ = capsys.readouterr()
    assert code == 0 and all(f"\n{n} " in out for n in NEW)
