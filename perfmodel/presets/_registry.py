"""The preset table (:data:`PRESETS`, in table order) and its lookup (:func:`get_preset`, :func:`list_presets`,
:func:`moe_presets`)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ..errors import UnknownPresetError, choices_message
from ._dense import _gpt2, _llama_like
from ._moe import _deepseek_v3, _mixtral, _moe_presets
from ._shapes import ModelPreset

__all__ = ["PRESETS", "get_preset", "list_presets", "moe_presets"]

_ALL = (
    # meta-llama/Meta-Llama-3-8B: hidden 4096, intermediate 14336, 32 heads, 8 KV heads, 32 layers, vocab 128256
    _llama_like(
        "llama3-8b",
        repo="meta-llama/Meta-Llama-3-8B",
        hidden=4096,
        intermediate=14336,
        heads=32,
        kv_heads=8,
        layers=32,
        vocab=128256,
    ),
    # meta-llama/Meta-Llama-3-70B: hidden 8192, intermediate 28672, 64 heads, 8 KV heads, 80 layers
    _llama_like(
        "llama3-70b",
        repo="meta-llama/Meta-Llama-3-70B",
        hidden=8192,
        intermediate=28672,
        heads=64,
        kv_heads=8,
        layers=80,
        vocab=128256,
    ),
    # meta-llama/Llama-3.1-405B: hidden 16384, intermediate 53248, 128 heads, 8 KV heads, 126 layers
    _llama_like(
        "llama3-405b",
        repo="meta-llama/Llama-3.1-405B",
        hidden=16384,
        intermediate=53248,
        heads=128,
        kv_heads=8,
        layers=126,
        vocab=128256,
        notes="early copies of the config said num_key_value_heads 16; Meta's config and the "
        "Llama 3 paper (Table 3) say 8",
    ),
    # mistralai/Mistral-7B-v0.1: hidden 4096, intermediate 14336, 32 heads, 8 KV heads, 32 layers, vocab 32000
    _llama_like(
        "mistral-7b",
        repo="mistralai/Mistral-7B-v0.1",
        hidden=4096,
        intermediate=14336,
        heads=32,
        kv_heads=8,
        layers=32,
        vocab=32000,
        layer_note="Llama block; config sliding_window 4096: attention beyond 4096 tokens is priced as full "
        "causal attention (an over-estimate)",
    ),
    _mixtral(),
    # Qwen/Qwen2.5-7B: hidden 3584, intermediate 18944, 28 heads, 4 KV heads, 28 layers, vocab 152064
    _llama_like(
        "qwen2.5-7b",
        repo="Qwen/Qwen2.5-7B",
        hidden=3584,
        intermediate=18944,
        heads=28,
        kv_heads=4,
        layers=28,
        vocab=152064,
        notes="q/k/v carry a bias (costless here)",
    ),
    # Qwen/Qwen3-14B: hidden 5120, intermediate 17408, 40 heads, 8 KV heads, head_dim 128, 40 layers,
    # vocab 151936, tie_word_embeddings false, attention_bias false, hidden_act silu, rms_norm_eps 1e-6.
    # config head_dim is explicit; here 40 * 128 = 5120 = hidden, so q and o are 5120 x 5120 (k, v: 8 * 128 = 1024).
    # Same numbers in torchtitan's Qwen3 "14B" flavour (torchtitan/models/qwen3: dim 5120, n_heads 40,
    # n_kv_heads 8, head_dim 128, hidden_dim 17408, n_layers 40, vocab_size 151936, untied output).
    _llama_like(
        "qwen3-14b",
        repo="Qwen/Qwen3-14B",
        hidden=5120,
        intermediate=17408,
        heads=40,
        kv_heads=8,
        head_dim=128,
        layers=40,
        vocab=151936,
        notes="QK-norm: Qwen3 RMS-normalises every query and key head (q_norm, k_norm over head_dim 128) before "
        "RoPE; these are not Linears, and the step model has no kernel for them: a small memory-bound kernel "
        "(reads and writes q and k, fwd and bwd) left out, so the layer's non-GEMM time is under-estimated; "
        "their 2 x 128 weights per layer are not counted in the parameters. No q/k/v bias; lm_head not tied",
        layer_note="Llama block (RMSNorm, RoPE, GQA causal SDPA, SwiGLU) plus Qwen3's per-head q/k RMSNorm "
        "(QK-norm), which the step model does not price (no kernel for it: a small memory-bound kernel left out)",
        layer_unpriced="Qwen3's per-head q/k RMSNorm (QK-norm, fwd and bwd): no step-model kernel for it",
    ),
    _gpt2(),
    _deepseek_v3(),
    *_moe_presets(),
)

#: name -> :class:`ModelPreset`
PRESETS: Mapping[str, ModelPreset] = MappingProxyType({p.name: p for p in _ALL})


def moe_presets() -> list[str]:
    """Names of the presets with an MoE block (:attr:`ModelPreset.moe`), in table order."""
    return [p.name for p in PRESETS.values() if p.moe is not None]


def list_presets() -> list[str]:
    """Names of the presets, in table order."""
    return list(PRESETS)


def get_preset(name: str | ModelPreset) -> ModelPreset:
    """The preset called ``name`` (case-insensitive; ``_`` and spaces read as ``-``), or ``name`` itself.

    >>> get_preset("Llama3-8B").layers
    32

    Raises:
        UnknownPresetError: naming the value and listing the presets (a ``ValueError``).
    """
    if isinstance(name, ModelPreset):
        return name
    key = name.strip().lower().replace("_", "-").replace(" ", "-") if isinstance(name, str) else None
    if key not in PRESETS:
        raise UnknownPresetError(
            choices_message(
                "model preset",
                name,
                PRESETS,
                "Or pass the shapes yourself (a mapping name -> (K, N), or 'KxN' strings).",
            )
        )
    return PRESETS[key]
