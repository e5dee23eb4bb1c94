"""Model presets: shapes follow from each config.json by arithmetic, errors list the choices."""

from __future__ import annotations

import dataclasses

import pytest

from perfmodel.errors import PerfModelError
from perfmodel.presets import PRESETS, LinearShape, ModelPreset, UnknownPresetError, get_preset, list_presets

REQUIRED = (
    "llama3-8b",
    "llama3-70b",
    "llama3-405b",
    "mistral-7b",
    "mixtral-8x7b",
    "qwen2.5-7b",
    "qwen3-14b",
    "gpt2",
    "deepseek-v3",
)


def shapes(preset: ModelPreset) -> dict[str, tuple[int, int]]:
    return {lin.name: (lin.in_features, lin.out_features) for lin in preset.linears}


def test_all_required_presets_are_listed():
    assert set(REQUIRED) <= set(list_presets())
    assert list_presets() == list(PRESETS)


@pytest.mark.parametrize(
    "name, hidden, inter, heads, kv_heads, head_dim, layers, vocab",
    [
        ("llama3-8b", 4096, 14336, 32, 8, 128, 32, 128256),
        ("llama3-70b", 8192, 28672, 64, 8, 128, 80, 128256),
        ("llama3-405b", 16384, 53248, 128, 8, 128, 126, 128256),
        ("mistral-7b", 4096, 14336, 32, 8, 128, 32, 32000),
        ("qwen2.5-7b", 3584, 18944, 28, 4, 128, 28, 152064),
        ("qwen3-14b", 5120, 17408, 40, 8, 128, 40, 151936),
    ],
)
def test_llama_like_shapes_from_config(name, hidden, inter, heads, kv_heads, head_dim, layers, vocab):
    p = get_preset(name)
    assert p.layers == layers
    assert shapes(p) == {
        "q_proj": (hidden, heads * head_dim),
        "k_proj": (hidden, kv_heads * head_dim),
        "v_proj": (hidden, kv_heads * head_dim),
        "o_proj": (heads * head_dim, hidden),
        "gate_proj": (hidden, inter),
        "up_proj": (hidden, inter),
        "down_proj": (inter, hidden),
        "lm_head": (hidden, vocab),
    }
    lm_head = next(lin for lin in p.linears if lin.name == "lm_head")
    assert p.total_count(lm_head) == 1
    assert all(p.total_count(lin) == layers for lin in p.linears if lin.name != "lm_head")
    assert "huggingface.co" in p.source and "config.json" in p.source


def test_llama3_8b_k_proj_is_8_kv_heads_of_128():
    assert shapes(get_preset("llama3-8b"))["k_proj"] == (4096, 8 * 128)


def test_qwen3_14b_shapes_by_hand():
    # Qwen/Qwen3-14B config.json: hidden 5120, intermediate 17408, 40 heads, 8 KV heads, head_dim 128 (40 * 128 =
    # 5120 = hidden), 40 layers, vocab 151936, untied lm_head
    p = get_preset("Qwen3 14B")  # the published runs' spelling
    assert p is PRESETS["qwen3-14b"] and p.layers == 40
    assert p.source == "https://huggingface.co/Qwen/Qwen3-14B/blob/main/config.json"
    assert shapes(p) == {
        "q_proj": (5120, 5120),
        "k_proj": (5120, 1024),
        "v_proj": (5120, 1024),
        "o_proj": (5120, 5120),
        "gate_proj": (5120, 17408),
        "up_proj": (5120, 17408),
        "down_proj": (17408, 5120),
        "lm_head": (5120, 151936),
    }
    assert {lin.name: (lin.in_features, lin.out_features) for lin in p.layer.linears()} == {
        "wq": (5120, 5120),
        "wk": (5120, 1024),
        "wv": (5120, 1024),
        "wo": (5120, 5120),
        "w1": (5120, 17408),
        "w3": (5120, 17408),
        "w2": (17408, 5120),
    }
    # 14.8B parameters, 13.2B without the embedding and the (untied) lm_head, as Qwen's model card says
    per_layer = 5120 * (5120 + 1024 + 1024 + 5120) + 3 * 5120 * 17408
    total = 40 * per_layer + 2 * 5120 * 151936
    assert per_layer == 330_301_440 and round(total / 1e9, 1) == 14.8 and round(40 * per_layer / 1e9, 1) == 13.2
    # QK-norm is not a Linear and the step model has no kernel for it: the preset says so
    assert "QK-norm" in p.notes and "QK-norm" in p.layer_note and "not price" in p.layer_note
    assert "QK-norm" in p.layer_unpriced and get_preset("llama3-8b").layer_unpriced == ""


def test_mixtral_experts_see_a_quarter_of_the_tokens():
    p = get_preset("mixtral-8x7b")
    w1 = next(lin for lin in p.linears if lin.name == "experts.w1")
    assert (w1.in_features, w1.out_features, w1.count) == (4096, 14336, 8)
    assert w1.token_fraction == pytest.approx(2 / 8)
    assert w1.tokens(8192) == 2048
    assert p.total_count(w1) == 8 * 32
    assert shapes(p)["block_sparse_moe.gate"] == (4096, 8)


def test_deepseek_v3_mla_and_moe_arithmetic():
    p = get_preset("deepseek-v3")
    s = shapes(p)
    assert s["q_b_proj"] == (1536, 128 * (128 + 64))
    assert s["kv_a_proj_with_mqa"] == (7168, 512 + 64)
    assert s["kv_b_proj"] == (512, 128 * (128 + 128))
    assert s["o_proj"] == (128 * 128, 7168)
    experts = next(lin for lin in p.linears if lin.name == "experts.gate_proj")
    assert p.total_count(experts) == 256 * (61 - 3)
    assert experts.tokens(8192) == 8192 * 8 // 256
    dense = next(lin for lin in p.linears if lin.name == "mlp.gate_proj")
    assert p.total_count(dense) == 3


def test_gpt2_lm_head_is_not_a_multiple_of_16():
    s = shapes(get_preset("gpt2"))
    assert s["lm_head"] == (768, 50257) and 50257 % 16
    assert s["mlp.c_fc"] == (768, 4 * 768)


def test_lookup_is_case_and_separator_insensitive():
    assert get_preset("Llama3_8B") is PRESETS["llama3-8b"]
    p = get_preset("gpt2")
    assert get_preset(p) is p


def test_unknown_preset_names_value_and_choices():
    with pytest.raises(
        UnknownPresetError,
        match=r"unknown model preset 'llama3-7b'.*did you mean.*llama3-8b.*"
        r"Valid choices: .*mixtral-8x7b",
    ):
        get_preset("llama3-7b")
    assert issubclass(UnknownPresetError, PerfModelError) and issubclass(UnknownPresetError, ValueError)
    with pytest.raises(UnknownPresetError, match="unknown model preset '42'"):
        get_preset(42)


def test_validation_and_frozen():
    with pytest.raises(ValueError, match="in_features must be a positive int"):
        LinearShape(name="x", in_features=0, out_features=4)
    with pytest.raises(ValueError, match="token_fraction"):
        LinearShape(name="x", in_features=4, out_features=4, token_fraction=0)
    with pytest.raises(ValueError, match="source is required"):
        ModelPreset(name="m", layers=1, linears=(LinearShape(name="x", in_features=4, out_features=4),), source="")
    with pytest.raises(dataclasses.FrozenInstanceError):
        get_preset("gpt2").layers = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    "name, hidden, ffn, heads, kv_heads, head_dim",
    [
        ("llama3-8b", 4096, 14336, 32, 8, 128),
        ("llama3-70b", 8192, 28672, 64, 8, 128),
        ("llama3-405b", 16384, 53248, 128, 8, 128),
        ("mistral-7b", 4096, 14336, 32, 8, 128),
        ("qwen2.5-7b", 3584, 18944, 28, 4, 128),
        ("qwen3-14b", 5120, 17408, 40, 8, 128),
    ],
)
def test_dense_presets_carry_their_layer_shape(name, hidden, ffn, heads, kv_heads, head_dim):
    p = get_preset(name)
    lay = p.layer
    assert (lay.hidden, lay.ffn, lay.heads, lay.kv_heads, lay.head_dim) == (hidden, ffn, heads, kv_heads, head_dim)
    assert (lay.norm, lay.activation, lay.rope) == ("rmsnorm", "swiglu", True)
    assert lay.source == p.source and "config.json" in lay.source and lay.name == name
    # the layer's Linears are the preset's, by the HF names
    hf = {"wq": "q_proj", "wk": "k_proj", "wv": "v_proj", "wo": "o_proj", "w1": "gate_proj", "w3": "up_proj"}
    hf["w2"] = "down_proj"
    assert {hf[lin.name]: (lin.in_features, lin.out_features) for lin in lay.linears()} == {
        k: v for k, v in shapes(p).items() if k != "lm_head"
    }
    assert lay.groups == {"qkv": ("wq", "wk", "wv"), "o": ("wo",), "w13": ("w1", "w3"), "w2": ("w2",)}


def test_gpt2_layer_is_layernorm_gelu_mha_without_rope():
    lay = get_preset("gpt2").layer
    assert (lay.hidden, lay.ffn, lay.heads, lay.kv_heads, lay.head_dim) == (768, 3072, 12, 12, 64)
    assert (lay.norm, lay.activation, lay.rope) == ("layernorm", "gelu", False)
    assert [lin.name for lin in lay.linears()] == ["wq", "wk", "wv", "wo", "w1", "w2"]
    assert "Conv1D" in get_preset("gpt2").layer_note


@pytest.mark.parametrize("name, says", [("mixtral-8x7b", "routing"), ("deepseek-v3", "MLA attention")])
def test_moe_presets_have_no_layer_but_say_why(name, says):
    p = get_preset(name)
    assert p.layer is None and says in p.layer_note
    assert p.linears  # the per-expert Linear report still works from these


def test_layer_must_be_a_layer_shape():
    lin = (LinearShape(name="x", in_features=4, out_features=4),)
    with pytest.raises(ValueError, match="layer must be a LayerShape"):
        ModelPreset(name="m", layers=1, linears=lin, source="s", layer="llama")
    assert ModelPreset(name="m", layers=1, linears=lin, source="s").layer is None  # still optional


def test_whole_layer_answers_say_what_the_step_model_leaves_out():
    from perfmodel import float8

    rep = float8.report("qwen3-14b", tokens=4096, gpu="H200", seq_len=4096, batch=1)
    assert rep.step is not None and "QK-norm" in rep.step_unpriced
    assert any(line.startswith("  not in these times: Qwen3") for line in str(rep).splitlines())
    assert rep.to_dict()["step_unpriced"] == rep.step_unpriced
    llama = float8.report("llama3-8b", tokens=4096, gpu="H200", seq_len=4096, batch=1)
    assert llama.step_unpriced == "" and "not in these times" not in str(llama)
