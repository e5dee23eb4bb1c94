"""The dense decoder presets' builders: Llama-like blocks (Llama 3, Mistral, Qwen) and GPT-2, from their
Hugging Face ``config.json`` (the table of rows is in :mod:`perfmodel.presets._registry`)."""

from __future__ import annotations

from ._shapes import LayerShape, LinearShape, ModelPreset

__all__: list[str] = []


def _hf(repo: str) -> str:
    return f"https://huggingface.co/{repo}/blob/main/config.json"


def _llama_like(
    name: str,
    *,
    repo: str,
    hidden: int,
    intermediate: int,
    heads: int,
    kv_heads: int,
    layers: int,
    vocab: int,
    head_dim: int | None = None,
    notes: str = "",
    layer_note: str = "",
    layer_unpriced: str = "",
) -> ModelPreset:
    """Llama-style block: GQA attention (q, k, v, o) and a SwiGLU MLP (gate, up, down), plus lm_head.

    The block is pre-norm RMSNorm -> attention with RoPE on q and k -> residual add -> RMSNorm -> SwiGLU
    -> residual add (config.json: ``hidden_act`` "silu", ``rms_norm_eps``, ``rope_theta``)."""
    hd = head_dim if head_dim is not None else hidden // heads  # config head_dim, else hidden / heads
    return ModelPreset(
        name=name,
        layers=layers,
        source=_hf(repo),
        notes=notes,
        layer=LayerShape(
            name=name,
            hidden=hidden,
            ffn=intermediate,
            heads=heads,
            kv_heads=kv_heads,
            head_dim=hd,
            norm="rmsnorm",
            activation="swiglu",
            rope=True,
            source=_hf(repo),
        ),
        layer_note=layer_note or "torchtitan/Hugging Face Llama block: RMSNorm, RoPE, GQA causal SDPA, SwiGLU",
        layer_unpriced=layer_unpriced,
        linears=(
            LinearShape(name="q_proj", in_features=hidden, out_features=heads * hd),
            LinearShape(name="k_proj", in_features=hidden, out_features=kv_heads * hd),
            LinearShape(name="v_proj", in_features=hidden, out_features=kv_heads * hd),
            LinearShape(name="o_proj", in_features=heads * hd, out_features=hidden),
            LinearShape(name="gate_proj", in_features=hidden, out_features=intermediate),
            LinearShape(name="up_proj", in_features=hidden, out_features=intermediate),
            LinearShape(name="down_proj", in_features=intermediate, out_features=hidden),
            LinearShape(name="lm_head", in_features=hidden, out_features=vocab, layers=1),
        ),
    )


def _gpt2() -> ModelPreset:
    # openai-community/gpt2: n_embd 768, n_layer 12, n_head 12, n_inner null (= 4 * n_embd), vocab 50257.
    # GPT-2 runs q, k, v as one fused Conv1D (768 -> 3 * 768); listed here as three 768 x 768 parts.
    d = 768
    return ModelPreset(
        name="gpt2",
        layers=12,
        source=_hf("openai-community/gpt2"),
        notes="Conv1D layers counted as Linears; lm_head is tied to wte but still a 768 x 50257 GEMM",
        # n_head 12 -> head_dim 768 / 12 = 64; MHA (no GQA); LayerNorm; gelu_new MLP; learned positions (no RoPE)
        layer=LayerShape(
            name="gpt2",
            hidden=d,
            ffn=4 * d,
            heads=12,
            kv_heads=12,
            head_dim=d // 12,
            norm="layernorm",
            activation="gelu",
            rope=False,
            source=_hf("openai-community/gpt2"),
        ),
        layer_note=(
            "LayerNorm, GeLU MLP, learned absolute positions (no RoPE), 12 heads of 64; Hugging Face runs q, k, v "
            "as one fused Conv1D (not an nn.Linear: torchao converts nn.Linear only)"
        ),
        linears=(
            LinearShape(name="attn.q", in_features=d, out_features=d),
            LinearShape(name="attn.k", in_features=d, out_features=d),
            LinearShape(name="attn.v", in_features=d, out_features=d),
            LinearShape(name="attn.c_proj", in_features=d, out_features=d),
            LinearShape(name="mlp.c_fc", in_features=d, out_features=4 * d),
            LinearShape(name="mlp.c_proj", in_features=4 * d, out_features=d),
            LinearShape(name="lm_head", in_features=d, out_features=50257, layers=1),
        ),
    )
