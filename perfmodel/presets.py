"""The ``nn.Linear`` shapes of common model architectures, as data.

Each :class:`ModelPreset` lists the linear layers of one transformer block (and the output head),
derived from the model's published Hugging Face ``config.json`` by the arithmetic written next to
each row, and — for dense decoders — the whole block's shape as a :class:`LayerShape` (hidden size,
FFN size, attention heads, KV heads, head dim, norm, activation), which the decoder-layer step model
(:mod:`perfmodel.step`) prices. MoE and MLA presets have no :class:`LayerShape`; their
:attr:`ModelPreset.layer_note` says what the step model does not cover. Fused projections are *not*
assumed: q, k, v, o, gate, up and down are separate Linears, as in the Hugging Face implementations
(GPT-2's fused ``c_attn`` is listed as its q, k, v parts).

Counting rules:
* ``in_features`` = ``K`` and ``out_features`` = ``N`` of ``nn.Linear(K, N)``; a Linear run on ``M``
  tokens is the GEMM ``[M, K] @ [K, N]``.
* :attr:`LinearShape.count` is the number of such Linears in one layer that has it;
  :attr:`LinearShape.layers` the number of layers that have it (``None``: all of the model's).
* :attr:`LinearShape.token_fraction` is the share of the step's tokens one instance sees: 1 for
  dense layers, ``top_k / num_experts`` for a routed MoE expert under perfectly balanced routing
  (Mixtral: 2 / 8, so each expert sees a quarter of the tokens; DeepSeek-V3: 8 / 256).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Iterable, Mapping
from types import MappingProxyType

import numpy as np

from ._backend import MAX_SIZE
from ._files import short_repr
from .errors import InvalidShapeError, UnknownLayerKindError, UnknownPresetError, choices_message

__all__ = [
    "ACTIVATIONS",
    "NORMS",
    "PRESETS",
    "LayerShape",
    "LinearShape",
    "ModelPreset",
    "UnknownLayerKindError",
    "UnknownPresetError",
    "get_preset",
    "list_presets",
]

#: norms the step model prices (both: one reduction over ``hidden`` per token, fwd and bwd)
NORMS: tuple[str, ...] = ("rmsnorm", "layernorm")
#: MLP activations: ``swiglu`` (gated: ``w2(silu(w1 x) * w3 x)``, Llama) or ``gelu`` (``w2(gelu(w1 x))``, GPT-2)
ACTIVATIONS: tuple[str, ...] = ("swiglu", "gelu")


@dataclasses.dataclass(frozen=True, kw_only=True)
class LinearShape:
    """One kind of ``nn.Linear(in_features, out_features)`` in a model.

    Attributes:
        name: the module's name in the Hugging Face implementation (``"q_proj"``, ``"experts.w1"``).
        in_features: ``K``, elements.
        out_features: ``N``, elements.
        count: how many of these one layer holds (8 experts: 8).
        layers: how many layers hold it; ``None`` means every layer of the model (lm_head: 1).
        token_fraction: share of the step's tokens each instance sees (routed experts: top_k / experts), a
            number in ``(0, 1]``.

    Raises:
        InvalidShapeError: an empty or non-string name; ``in_features``, ``out_features``, ``count`` or
            ``layers`` not a positive int (bools refused); ``token_fraction`` not a finite number in ``(0, 1]``.
    """

    name: str
    in_features: int
    out_features: int
    count: int = 1
    layers: int | None = None
    token_fraction: float = 1.0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidShapeError(f"LinearShape needs a name (a non-empty string), got {short_repr(self.name)}")
        who = f"LinearShape {self.name!r}"
        for field in ("in_features", "out_features", "count"):
            _positive_int(who, field, getattr(self, field))
        if self.layers is not None:
            _positive_int(who, "layers", self.layers, "a positive int or None (every layer of the model)")
        frac = self.token_fraction
        if isinstance(frac, (bool, np.bool_)) or not isinstance(frac, numbers.Real) or not 0 < frac <= 1:
            raise InvalidShapeError(
                f"{who}: token_fraction must be a number in (0, 1] (the share of the step's tokens one instance "
                f"sees: 1 for dense Linears, top_k / experts for routed experts), got {short_repr(frac)}"
            )
        object.__setattr__(self, "token_fraction", float(frac))

    def tokens(self, tokens: int) -> int:
        """Rows ``M`` one instance sees when the step has ``tokens`` tokens (at least 1).

        Raises:
            InvalidShapeError: ``tokens`` not a positive finite number (up to 2**40).
        """
        ok = not isinstance(tokens, (bool, np.bool_)) and isinstance(tokens, numbers.Real)
        if not ok or not 0 < tokens <= MAX_SIZE or not math.isfinite(tokens):
            raise InvalidShapeError(
                f"LinearShape {self.name!r}: tokens must be a positive number up to 2**40 (the step's tokens, "
                f"batch x seq_len), got {short_repr(tokens)}"
            )
        return max(1, round(tokens * self.token_fraction))


def _positive_int(owner: str, field: str, value: object, valid: str = "a positive int") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidShapeError(f"{owner}: {field} must be {valid}, got {short_repr(value)}")
    return value


def _text(owner: str, field: str, value: object, *, required: str = "") -> None:
    """``value`` must be a string; non-empty when ``required`` (which says what it should hold)."""
    if not isinstance(value, str) or (required and not value):
        what = f"is required, a non-empty string ({required})" if required else "must be a string"
        raise InvalidShapeError(f"{owner}: {field} {what}; got {short_repr(value)}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class LayerShape:
    """One transformer decoder layer (attention block + MLP block, pre-norm), as the step model sees it.

    Build one directly, or take a preset's (``get_preset("llama3-8b").layer``)::

        LayerShape(name="my-1b", hidden=2048, ffn=8192, heads=16, kv_heads=8)

    Attributes:
        name: a label (presets: the preset name).
        hidden: model width ``d`` (``hidden_size``).
        ffn: MLP width (``intermediate_size``).
        heads: query heads (``num_attention_heads``).
        kv_heads: key/value heads (``num_key_value_heads``; ``None``: ``heads``, plain multi-head attention).
        head_dim: per-head width (``None``: ``hidden / heads``, which must then divide exactly).
        norm: ``"rmsnorm"`` or ``"layernorm"`` (:data:`NORMS`).
        activation: ``"swiglu"`` (three MLP Linears: w1, w3, w2) or ``"gelu"`` (two: w1, w2) (:data:`ACTIVATIONS`).
        rope: rotary position embeddings applied to q and k inside the layer (GPT-2: ``False``).
        source: where the numbers come from (a ``config.json`` URL for presets).

    The Linears (bias-free ``nn.Linear(in, out)``), canonical names and the groups that share an input::

        group qkv: wq (hidden -> heads*head_dim), wk, wv (hidden -> kv_heads*head_dim)   input: attention-norm output
        group o:   wo (heads*head_dim -> hidden)                                          input: attention output
        group w13: w1, w3 (hidden -> ffn) [swiglu] | group w1: w1 (hidden -> ffn) [gelu]   input: ffn-norm output
        group w2:  w2 (ffn -> hidden)                                                       input: activation output

    Raises:
        InvalidShapeError: a size that is not a positive int, ``heads`` not a multiple of ``kv_heads``,
            ``hidden`` not divisible by ``heads`` without an explicit ``head_dim``, an odd ``head_dim`` with RoPE.
        UnknownLayerKindError: a norm or activation not in :data:`NORMS` / :data:`ACTIVATIONS`.
    """

    name: str
    hidden: int
    ffn: int
    heads: int
    kv_heads: int | None = None
    head_dim: int | None = None
    norm: str = "rmsnorm"
    activation: str = "swiglu"
    rope: bool = True
    source: str = ""

    def __post_init__(self) -> None:
        who = f"LayerShape {self.name!r}"
        if not isinstance(self.name, str) or not self.name:
            raise InvalidShapeError(f"LayerShape needs a name (a non-empty string), got {self.name!r}")
        for field in ("hidden", "ffn", "heads"):
            _positive_int(who, field, getattr(self, field))
        kv = self.heads if self.kv_heads is None else _positive_int(who, "kv_heads", self.kv_heads)
        if self.heads % kv:
            raise InvalidShapeError(
                f"{who}: heads ({self.heads}) must be a multiple of kv_heads ({kv}); each KV head serves "
                "heads / kv_heads query heads"
            )
        if self.head_dim is None:
            if self.hidden % self.heads:
                raise InvalidShapeError(
                    f"{who}: heads ({self.heads}) does not divide hidden ({self.hidden}); pass head_dim= "
                    "explicitly (config.json 'head_dim') if the model's heads are not hidden / heads wide"
                )
            hd = self.hidden // self.heads
        else:
            hd = _positive_int(who, "head_dim", self.head_dim)
        _text(who, "source", self.source)
        if not isinstance(self.rope, bool):
            raise InvalidShapeError(f"{who}: rope must be True or False, got {self.rope!r}")
        if self.rope and hd % 2:
            raise InvalidShapeError(f"{who}: RoPE rotates pairs of channels, so head_dim must be even, got {hd}")
        for field, choices in (("norm", NORMS), ("activation", ACTIVATIONS)):
            value = getattr(self, field)
            key = value.strip().lower() if isinstance(value, str) else value
            if key not in choices:
                raise UnknownLayerKindError(
                    choices_message(
                        f"{field} kind",
                        value,
                        choices,
                        "MoE and MLA blocks are not decoder layers the step model prices (see ModelPreset.layer_note).",
                    )
                )
            object.__setattr__(self, field, key)
        object.__setattr__(self, "kv_heads", kv)
        object.__setattr__(self, "head_dim", hd)

    @property
    def q_dim(self) -> int:
        """``heads · head_dim``: width of the query projection (and of the attention output)."""
        return self.heads * self.head_dim  # type: ignore[operator]

    @property
    def kv_dim(self) -> int:
        """``kv_heads · head_dim``: width of the key and of the value projection."""
        return self.kv_heads * self.head_dim  # type: ignore[operator]

    @property
    def groups(self) -> dict[str, tuple[str, ...]]:
        """Group name -> the canonical names of its Linears (Linears of a group share one input)."""
        mlp_in = ("w13", ("w1", "w3")) if self.activation == "swiglu" else ("w1", ("w1",))
        return {"qkv": ("wq", "wk", "wv"), "o": ("wo",), mlp_in[0]: mlp_in[1], "w2": ("w2",)}

    def linears(self) -> tuple[LinearShape, ...]:
        """The layer's Linears in execution order, canonical names (``wq`` ... ``w2``), ``(in, out)`` features."""
        d, q, kv, f = self.hidden, self.q_dim, self.kv_dim, self.ffn
        shapes = {"wq": (d, q), "wk": (d, kv), "wv": (d, kv), "wo": (q, d), "w1": (d, f), "w3": (d, f), "w2": (f, d)}
        names = [n for g in self.groups.values() for n in g]
        return tuple(LinearShape(name=n, in_features=shapes[n][0], out_features=shapes[n][1]) for n in names)

    def to_dict(self) -> dict[str, object]:
        """Plain types (JSON-ready)."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ModelPreset:
    """The Linear layers of a model architecture.

    Attributes:
        name: registry key (lower case, e.g. ``"llama3-8b"``).
        layers: transformer blocks (``num_hidden_layers``).
        linears: the Linear kinds, see :class:`LinearShape`.
        source: the ``config.json`` the numbers come from.
        notes: what is left out or assumed.
        layer: the decoder block as a :class:`LayerShape` (``None``: not a dense decoder the step model
            prices — MoE, MLA).
        layer_note: what the step model assumes for this model, or why it has no ``layer``.
        layer_unpriced: work of this model's decoder layer the step model has no kernel for (left out of its
            time, so the layer step is under-estimated by it); printed with every whole-layer answer.

    Raises:
        InvalidShapeError: an empty name or source, ``layers`` not a positive int, ``linears`` empty or not all
            :class:`LinearShape` (or one in more layers than the model has), ``layer`` not a :class:`LayerShape`.
    """

    name: str
    layers: int
    linears: tuple[LinearShape, ...]
    source: str
    notes: str = ""
    layer: LayerShape | None = None
    layer_note: str = ""
    layer_unpriced: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidShapeError(f"ModelPreset needs a name (a non-empty string), got {short_repr(self.name)}")
        who = f"ModelPreset {self.name!r}"
        _positive_int(who, "layers", self.layers)
        linears = self.linears
        if isinstance(linears, (str, bytes, Mapping)) or not isinstance(linears, Iterable):
            raise InvalidShapeError(f"{who}: linears must be a sequence of LinearShape, got {short_repr(linears)}")
        linears = tuple(linears)
        if not linears:
            raise InvalidShapeError(f"{who}: no linears (give at least one LinearShape)")
        for lin in linears:
            if not isinstance(lin, LinearShape):
                raise InvalidShapeError(f"{who}: linears must all be LinearShape, got {short_repr(lin)}")
            if lin.layers is not None and lin.layers > self.layers:
                raise InvalidShapeError(
                    f"{who}: {lin.name!r} is in {lin.layers} layers, but the model has only {self.layers}"
                )
        _text(who, "source", self.source, required="cite the config.json the numbers come from")
        for field in ("notes", "layer_note", "layer_unpriced"):
            _text(who, field, getattr(self, field))
        if self.layer is not None and not isinstance(self.layer, LayerShape):
            raise InvalidShapeError(f"{who}: layer must be a LayerShape or None, got {short_repr(self.layer)}")
        object.__setattr__(self, "linears", linears)

    def total_count(self, linear: LinearShape) -> int:
        """Instances of ``linear`` in the whole model: ``count · (layers or self.layers)``."""
        return linear.count * (linear.layers if linear.layers is not None else self.layers)

    def shapes(self) -> list[tuple[int, int]]:
        """``(in_features, out_features)`` of every Linear kind, in order (duplicates kept)."""
        return [(lin.in_features, lin.out_features) for lin in self.linears]


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


def _mixtral() -> ModelPreset:
    # mistralai/Mixtral-8x7B-v0.1: hidden 4096, intermediate 14336, 32 heads, 8 KV heads, 32 layers,
    # vocab 32000, num_local_experts 8, num_experts_per_tok 2.
    hidden, inter, heads, kv, hd, experts, top_k = 4096, 14336, 32, 8, 4096 // 32, 8, 2
    routed = top_k / experts  # each expert sees 2/8 of the tokens under balanced routing
    return ModelPreset(
        name="mixtral-8x7b",
        layers=32,
        source=_hf("mistralai/Mixtral-8x7B-v0.1"),
        notes="experts see tokens * 2 / 8 each (balanced top-2 routing); the router is a Linear(4096, 8)",
        layer_note=(
            "MoE block (8 experts, top-2): the step model does not price routing (router softmax/top-k, token "
            "permutation and its all-to-all), per-expert token imbalance or grouped expert GEMMs; the attention "
            "half is a Llama block (32 heads, 8 KV heads, head_dim 128). float8.report prices the per-expert Linears"
        ),
        linears=(
            LinearShape(name="q_proj", in_features=hidden, out_features=heads * hd),
            LinearShape(name="k_proj", in_features=hidden, out_features=kv * hd),
            LinearShape(name="v_proj", in_features=hidden, out_features=kv * hd),
            LinearShape(name="o_proj", in_features=heads * hd, out_features=hidden),
            LinearShape(name="block_sparse_moe.gate", in_features=hidden, out_features=experts),
            LinearShape(
                name="experts.w1", in_features=hidden, out_features=inter, count=experts, token_fraction=routed
            ),  # gate
            LinearShape(
                name="experts.w3", in_features=hidden, out_features=inter, count=experts, token_fraction=routed
            ),  # up
            LinearShape(
                name="experts.w2", in_features=inter, out_features=hidden, count=experts, token_fraction=routed
            ),  # down
            LinearShape(name="lm_head", in_features=hidden, out_features=32000, layers=1),
        ),
    )


def _deepseek_v3() -> ModelPreset:
    # deepseek-ai/DeepSeek-V3: hidden 7168, 61 layers (first_k_dense_replace 3 dense, 58 MoE),
    # intermediate 18432 (dense MLP), moe_intermediate 2048, n_routed_experts 256,
    # num_experts_per_tok 8, n_shared_experts 1, 128 heads, MLA: q_lora_rank 1536,
    # kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128, vocab 129280.
    hidden, layers, dense, heads = 7168, 61, 3, 128
    q_rank, kv_rank, nope, rope, v_dim = 1536, 512, 128, 64, 128
    inter, moe_inter, experts, top_k, shared = 18432, 2048, 256, 8, 1
    moe = layers - dense
    routed = top_k / experts  # each routed expert sees 8/256 of the tokens under balanced routing
    return ModelPreset(
        name="deepseek-v3",
        layers=layers,
        source=_hf("deepseek-ai/DeepSeek-V3"),
        notes=(
            "MLA attention; 3 dense layers then 58 MoE layers; routed experts see tokens * 8 / 256 each; "
            "the router (a bare matmul, not an nn.Linear) and the MTP module are left out"
        ),
        layer_note=(
            "MLA attention (low-rank q and kv projections, decoupled RoPE) and MoE blocks (256 routed experts, "
            "top-8, 1 shared): the step model prices neither MLA attention nor routing; float8.report prices "
            "the Linears one by one"
        ),
        linears=(
            LinearShape(name="q_a_proj", in_features=hidden, out_features=q_rank),
            LinearShape(name="q_b_proj", in_features=q_rank, out_features=heads * (nope + rope)),
            LinearShape(name="kv_a_proj_with_mqa", in_features=hidden, out_features=kv_rank + rope),
            LinearShape(name="kv_b_proj", in_features=kv_rank, out_features=heads * (nope + v_dim)),
            LinearShape(name="o_proj", in_features=heads * v_dim, out_features=hidden),
            LinearShape(name="mlp.gate_proj", in_features=hidden, out_features=inter, layers=dense),
            LinearShape(name="mlp.up_proj", in_features=hidden, out_features=inter, layers=dense),
            LinearShape(name="mlp.down_proj", in_features=inter, out_features=hidden, layers=dense),
            LinearShape(
                name="shared_experts.gate_proj", in_features=hidden, out_features=moe_inter * shared, layers=moe
            ),
            LinearShape(name="shared_experts.up_proj", in_features=hidden, out_features=moe_inter * shared, layers=moe),
            LinearShape(
                name="shared_experts.down_proj", in_features=moe_inter * shared, out_features=hidden, layers=moe
            ),
            LinearShape(
                name="experts.gate_proj",
                in_features=hidden,
                out_features=moe_inter,
                count=experts,
                layers=moe,
                token_fraction=routed,
            ),
            LinearShape(
                name="experts.up_proj",
                in_features=hidden,
                out_features=moe_inter,
                count=experts,
                layers=moe,
                token_fraction=routed,
            ),
            LinearShape(
                name="experts.down_proj",
                in_features=moe_inter,
                out_features=hidden,
                count=experts,
                layers=moe,
                token_fraction=routed,
            ),
            LinearShape(name="lm_head", in_features=hidden, out_features=129280, layers=1),
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
)

#: name -> :class:`ModelPreset`
PRESETS: Mapping[str, ModelPreset] = MappingProxyType({p.name: p for p in _ALL})


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
