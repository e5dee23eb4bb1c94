"""The shape classes of the model presets: :class:`LinearShape`, :class:`LayerShape`, :class:`MoEShape`,
:class:`ModelPreset` (validated frozen dataclasses; the counting rules are in :mod:`perfmodel.presets`)."""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Iterable, Mapping

import numpy as np

from .._backend import MAX_SIZE
from .._files import short_repr
from ..errors import InvalidShapeError, UnknownLayerKindError, choices_message

__all__ = ["ACTIVATIONS", "NORMS", "ROUTERS", "LayerShape", "LinearShape", "MoEShape", "ModelPreset"]

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
