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
    "MoEShape",
    "ModelPreset",
    "UnknownLayerKindError",
    "UnknownPresetError",
    "get_preset",
    "list_presets",
    "moe_presets",
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


#: router score functions of :class:`MoEShape` (``softmax`` over the experts, or a per-expert ``sigmoid``)
ROUTERS: tuple[str, ...] = ("softmax", "sigmoid")


@dataclasses.dataclass(frozen=True, kw_only=True)
class MoEShape:
    """The routed-expert block of one MoE layer, as :mod:`perfmodel.moe` prices it.

    Attributes:
        name: a label (presets: the preset name).
        dim: model width (``hidden_size``).
        moe_inter: one routed expert's intermediate size (``moe_intermediate_size``; Mixtral, Llama 4 and
            gpt-oss call it ``intermediate_size``).
        experts: routed experts of the layer (``n_routed_experts`` / ``num_experts`` / ``num_local_experts``).
        top_k: experts per token (``num_experts_per_tok`` / ``experts_per_token``).
        shared_experts: shared experts (``n_shared_experts``; Llama 4: 1; 0 for none).
        shared_inter: one shared expert's intermediate size (the shared MLP is ``shared_experts * shared_inter``
            wide, as DeepSeek builds it; 0 for none).
        router: ``"softmax"`` or ``"sigmoid"`` (:data:`ROUTERS`; ``scoring_func``).
        dense_layers: layers with a dense MLP instead (DeepSeek ``first_k_dense_replace``; Llama 4 Maverick the
            non-MoE half of ``interleave_moe_layer_step`` 2).
        moe_layers: layers with this MoE block.
        source: where the numbers come from (config.json URL; torchtitan flavour for deepseek-v3-16b).
        router_experts: the router's outputs where they differ from ``experts`` (the experts on one GPU of an
            expert-parallel layer still score all of the model's experts); ``None``: ``experts``.

    Raises:
        InvalidShapeError: a size not a positive int (``shared_*`` and ``dense_layers`` may be 0), ``top_k`` above
            ``experts``, one of ``shared_experts``/``shared_inter`` 0 and the other not, an unknown router, an
            empty source.
    """

    name: str
    dim: int
    moe_inter: int
    experts: int
    top_k: int
    shared_experts: int = 0
    shared_inter: int = 0
    router: str = "softmax"
    dense_layers: int = 0
    moe_layers: int = 1
    source: str = ""
    router_experts: int | None = None

    def __post_init__(self) -> None:
        who = f"MoEShape {self.name!r}"
        if self.router_experts is not None:
            _positive_int(who, "router_experts", self.router_experts, "a positive int or None (= experts)")
        _text(who, "name", self.name, required="a label")
        for field in ("dim", "moe_inter", "experts", "top_k", "moe_layers"):
            _positive_int(who, field, getattr(self, field))
        for field in ("shared_experts", "shared_inter", "dense_layers"):
            v = getattr(self, field)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise InvalidShapeError(f"{who}: {field} must be an int >= 0, got {short_repr(v)}")
        if self.top_k > self.experts:
            raise InvalidShapeError(f"{who}: top_k ({self.top_k}) cannot exceed experts ({self.experts})")
        if (self.shared_experts == 0) != (self.shared_inter == 0):
            raise InvalidShapeError(
                f"{who}: shared_experts ({self.shared_experts}) and shared_inter ({self.shared_inter}) must both be "
                "0 (no shared expert) or both positive"
            )
        if self.router not in ROUTERS:
            raise InvalidShapeError(f"{who}: router must be one of {', '.join(ROUTERS)}, got {short_repr(self.router)}")
        _text(who, "source", self.source, required="cite the config.json the numbers come from")

    @property
    def router_width(self) -> int:
        """The router's outputs: ``router_experts`` or ``experts``."""
        return self.experts if self.router_experts is None else self.router_experts

    @property
    def shared_width(self) -> int:
        """The shared MLP's intermediate width: ``shared_experts * shared_inter`` (0: none)."""
        return self.shared_experts * self.shared_inter

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
        moe: the routed-expert block (:class:`MoEShape`) of an MoE model, priced by :mod:`perfmodel.moe`
            (``None``: a dense model).

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
    moe: MoEShape | None = None

    def __post_init__(self) -> None:
        if self.moe is not None and not isinstance(self.moe, MoEShape):
            raise InvalidShapeError(
                f"ModelPreset {self.name!r}: moe must be a MoEShape or None, got {short_repr(self.moe)}"
            )
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
        moe=MoEShape(
            name="mixtral-8x7b",
            dim=hidden,
            moe_inter=inter,
            experts=experts,
            top_k=top_k,
            router="softmax",
            moe_layers=32,
            source=_hf("mistralai/Mixtral-8x7B-v0.1"),
        ),
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
        # scoring_func sigmoid; n_group 8 / topk_group 4 (group-limited routing) is not priced
        moe=MoEShape(
            name="deepseek-v3",
            dim=hidden,
            moe_inter=moe_inter,
            experts=experts,
            top_k=top_k,
            shared_experts=shared,
            shared_inter=moe_inter,
            router="sigmoid",
            dense_layers=dense,
            moe_layers=moe,
            source=_hf("deepseek-ai/DeepSeek-V3"),
        ),
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


def _moe_model(
    moe: MoEShape,
    *,
    layers: int,
    attention: tuple[tuple[str, int, int], ...],
    vocab: int,
    dense_inter: int = 0,
    fused_gate_up: bool = False,
    notes: str = "",
) -> ModelPreset:
    """An MoE model's Linears: ``attention`` (name, in, out) in every layer, the router, the routed experts
    (``token_fraction`` top_k / experts), the shared expert and the dense MLP of the dense layers, lm_head."""
    d, f, E, k = moe.dim, moe.moe_inter, moe.experts, moe.top_k
    ml = moe.moe_layers if moe.moe_layers < layers else None
    frac = k / E  # balanced routing: each routed expert sees top_k / experts of the tokens
    lins = [LinearShape(name=n, in_features=i, out_features=o) for n, i, o in attention]
    lins.append(LinearShape(name="moe.router.gate", in_features=d, out_features=E, layers=ml))
    if fused_gate_up:  # gpt-oss: gate_up_proj [E, dim, 2 * inter]
        lins.append(
            LinearShape(name="experts.w13", in_features=d, out_features=2 * f, count=E, layers=ml, token_fraction=frac)
        )
    else:
        for n in ("experts.w1", "experts.w3"):
            lins.append(LinearShape(name=n, in_features=d, out_features=f, count=E, layers=ml, token_fraction=frac))
    lins.append(LinearShape(name="experts.w2", in_features=f, out_features=d, count=E, layers=ml, token_fraction=frac))
    if moe.shared_width:
        s = moe.shared_width
        for n, i, o in (("shared_experts.w1", d, s), ("shared_experts.w3", d, s), ("shared_experts.w2", s, d)):
            lins.append(LinearShape(name=n, in_features=i, out_features=o, layers=ml))
    if moe.dense_layers:
        for n, i, o in (("mlp.w1", d, dense_inter), ("mlp.w3", d, dense_inter), ("mlp.w2", dense_inter, d)):
            lins.append(LinearShape(name=n, in_features=i, out_features=o, layers=moe.dense_layers))
    lins.append(LinearShape(name="lm_head", in_features=d, out_features=vocab, layers=1))
    return ModelPreset(
        name=moe.name,
        layers=layers,
        source=moe.source,
        notes=notes,
        layer_note=(
            f"MoE block ({E} routed experts, top-{k}{f', {moe.shared_experts} shared' if moe.shared_experts else ''}): "
            "the dense step model does not price it; perfmodel.moe.expert_block_time prices the routed-expert block "
            "(router, permutation, grouped GEMMs, shared experts) and float8.report the Linears one by one"
        ),
        linears=tuple(lins),
        moe=moe,
    )


def _gqa(d: int, heads: int, kv: int, hd: int) -> tuple[tuple[str, int, int], ...]:
    return (("wq", d, heads * hd), ("wk", d, kv * hd), ("wv", d, kv * hd), ("wo", heads * hd, d))


def _moe_presets() -> tuple[ModelPreset, ...]:
    # torchtitan at commit b5bcd76c66d0acb1a08b176d9639425bc55e0b2a (2026-08-21)
    tt = "https://github.com/pytorch/torchtitan/blob/b5bcd76/torchtitan/models/deepseek_v3/__init__.py"
    # torchtitan deepseek_v3 flavour "16B" (_16b): dim 2048, n_layers 27, n_dense_layers 1, n_heads 16, vocab 102400,
    # moe_hidden_dim 1408, num_experts 64, router_top_k 6, num_shared_experts 2, dense_hidden_dim 10944,
    # router_score_func softmax; MLA q_lora_rank 0, kv_lora_rank 512, qk_nope 128, qk_rope 64, v_head_dim 128.
    # The same MoE as deepseek-ai/DeepSeek-V2-Lite (hidden 2048, moe_intermediate 1408, 64 routed, top-6, 2 shared).
    ds16 = MoEShape(
        name="deepseek-v3-16b",
        dim=2048,
        moe_inter=1408,
        experts=64,
        top_k=6,
        shared_experts=2,
        shared_inter=1408,
        router="softmax",
        dense_layers=1,
        moe_layers=26,
        source=tt + " (flavour '16B')",
    )
    # Qwen/Qwen3-30B-A3B: hidden 2048, 48 layers (all MoE), moe_intermediate_size 768, num_experts 128,
    # num_experts_per_tok 8, 32 heads, 4 KV heads, head_dim 128, vocab 151936, norm_topk_prob true, no shared expert.
    qwen = MoEShape(
        name="qwen3-30b-a3b",
        dim=2048,
        moe_inter=768,
        experts=128,
        top_k=8,
        router="softmax",
        moe_layers=48,
        source=_hf("Qwen/Qwen3-30B-A3B"),
    )
    # meta-llama/Llama-4-Scout-17B-16E text_config: hidden 5120, 48 layers, interleave_moe_layer_step 1 (all MoE),
    # intermediate_size 8192 (expert and shared expert), num_local_experts 16, num_experts_per_tok 1, 40 heads,
    # 8 KV heads, head_dim 128, vocab 202048; sigmoid router, one shared expert.
    scout = MoEShape(
        name="llama4-scout",
        dim=5120,
        moe_inter=8192,
        experts=16,
        top_k=1,
        shared_experts=1,
        shared_inter=8192,
        router="sigmoid",
        moe_layers=48,
        source=_hf("meta-llama/Llama-4-Scout-17B-16E"),
    )
    # meta-llama/Llama-4-Maverick-17B-128E text_config: as Scout but num_local_experts 128 and
    # interleave_moe_layer_step 2 (24 MoE layers, 24 dense layers of intermediate_size_mlp 16384).
    mav = MoEShape(
        name="llama4-maverick",
        dim=5120,
        moe_inter=8192,
        experts=128,
        top_k=1,
        shared_experts=1,
        shared_inter=8192,
        router="sigmoid",
        dense_layers=24,
        moe_layers=24,
        source=_hf("meta-llama/Llama-4-Maverick-17B-128E"),
    )
    # openai/gpt-oss-120b: hidden 2880, 36 layers (all MoE), intermediate_size 2880, num_local_experts 128,
    # experts_per_token 4, 64 heads, 8 KV heads, head_dim 64, vocab 201088; softmax over the top-k router logits;
    # experts carry biases and a clamped SwiGLU (swiglu_limit 7.0), gate_up fused ([E, dim, 2 * inter]).
    oss = MoEShape(
        name="gpt-oss-120b",
        dim=2880,
        moe_inter=2880,
        experts=128,
        top_k=4,
        router="softmax",
        moe_layers=36,
        source=_hf("openai/gpt-oss-120b"),
    )
    mla16 = (("wq", 2048, 16 * 192), ("wkv_a", 2048, 512 + 64), ("wkv_b", 512, 16 * 256), ("wo", 16 * 128, 2048))
    return (
        _moe_model(ds16, layers=27, attention=mla16, vocab=102400, dense_inter=10944,
                   notes="torchtitan's DeepSeek-V3 16B flavour (MLA without q LoRA); not the deepseek-moe-16b weights"),
        _moe_model(qwen, layers=48, attention=_gqa(2048, 32, 4, 128), vocab=151936,
                   notes="QK-norm not priced; no shared expert"),
        _moe_model(scout, layers=48, attention=_gqa(5120, 40, 8, 128), vocab=202048,
                   notes="chunked attention (attention_chunk_size 8192) not modelled; vision encoder left out"),
        _moe_model(mav, layers=48, attention=_gqa(5120, 40, 8, 128), vocab=202048, dense_inter=16384,
                   notes="MoE every 2nd layer; vision encoder left out"),
        _moe_model(oss, layers=36, attention=_gqa(2880, 64, 8, 64), vocab=201088, fused_gate_up=True,
                   notes="expert biases, attention sinks and the clamped SwiGLU are not priced; weights ship in mxfp4"),
    )  # fmt: skip


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
