"""One MoE decoder layer's fwd + bwd step: the attention half by the decoder-layer step model, the routed-expert
block by :func:`perfmodel.moe.expert_block_time`, expert parallelism's all-to-all by
:func:`perfmodel.moe.ep_all_to_all` (public face: :func:`perfmodel.step.layer_time`; ``docs/step.md``, "MoE layers")::

    step_s = attention half + expert block + all-to-all
    attention half = layer_time(attention LayerShape, mlp=False)   norms, q/k/v/o, RoPE, SDPA, residual adds; its
                     step factors from the half's own kernel time (the dense model's, fitted on H200 layer steps)
    expert block   = expert_block_time(moe, tokens=batch*seq_len, recipe=..., counts/skew, timing="event").total_s
                     router, permutation, grouped expert GEMMs fwd+bwd, unpermutation, shared experts (bf16), the
                     float8 recipe's quantization kernels, eager host gaps (its own model; no step factor applied)
    all-to-all     = ep_all_to_all(moe, tokens, ep).total_s        (ep > 1 only) dispatch + combine, fwd + bwd:
                     an ESTIMATE from the collective model, never measured

With ``ep`` the block is the one GPU's share: ``experts / ep`` local experts, the router still scoring all experts,
``tokens * top_k`` routed rows arriving under balanced routing. The block model prices eager torch (no
``torch.compile`` unless ``compiled=``); its accuracy is docs/validation/moe.md "Block validation" (carried in each
answer's provenance from :attr:`perfmodel.moe.ExpertBlockTime.error_bar`). No activation checkpointing is priced for the
block, so ``ac`` other than ``"none"`` is refused for MoE layers.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Iterable
from typing import Any

from .._backend import namespace
from ..errors import (
    IneligibleLinearError,
    InvalidParallelismError,
    MoEPresetError,
    PerfModelError,
    UnknownLinearError,
    UnsupportedLayerError,
)
from ..float8.recipes import Recipe, get_recipe
from ..models.base import ExpectedError, Provenance
from ..models.registry import ModelLike
from ..moe import AllToAllTime, ExpertBlockTime, ep_all_to_all, expert_block_time
from ..presets import GQA_ATTENTION, LayerShape, ModelPreset, MoEShape, get_preset
from ..specs.gpu import GPULike
from .layer import MLP_GROUPS, LayerTime, converted_linears, layer_time
from .params import LayerParams

__all__ = [
    "EXPERTS_GROUP",
    "EXPERT_RECIPES",
    "MOE_ATTENTION",
    "MoELayer",
    "MoELayerTime",
    "is_moe",
    "local_moe",
    "moe_eligible_groups",
    "moe_layer_time",
    "resolve_moe_layer",
]

#: the conversion group of an MoE layer's routed experts (it has no dense FFN groups w13 / w2)
EXPERTS_GROUP = "experts"
#: dense float8 recipe -> the expert block's recipe (:data:`perfmodel.moe.block.RECIPES`): torchao's
#: ``moe_training`` has fp8 rowwise grouped GEMMs (Hopper) and mxfp8 (Blackwell) only, so the other dense recipes
#: (tensorwise, blockwise, ...) leave the experts in bf16 under ``convert=None`` and are refused for "experts"
EXPERT_RECIPES: dict[str, str] = {"rowwise": "rowwise", "mxfp8": "mxfp8"}
#: the GQA attention of the MoE presets (heads, kv_heads, head_dim) from their config.json: a copy of
#: ``perfmodel.presets.GQA_ATTENTION``, the one home of these numbers (the presets' q/k/v/o Linears are built from
#: it; the copies checked are cited there next to each preset). DeepSeek's MLA is not here: the step model has no MLA
#: kernel.
MOE_ATTENTION: dict[str, tuple[int, int, int]] = dict(GQA_ATTENTION)
#: the dense MLP's Linears in the MoE presets' dense layers (first names of presets' ``linears``)
_DENSE_MLP = ("mlp.w1", "mlp.gate_proj")


@dataclasses.dataclass(frozen=True, kw_only=True)
class MoELayer:
    """An MoE decoder layer: its attention half (a :class:`~perfmodel.presets.LayerShape` whose MLP is not used,
    except for ``dense_ffn`` layers) and its routed-expert block (:class:`~perfmodel.presets.MoEShape`).

    ``dense_ffn``: the dense MLP width of the model's dense layers (``MoEShape.dense_layers`` of them; 0: none).
    ``attention_note``: what the attention half approximates (e.g. a GQA stand-in for MLA).

    Raises:
        UnsupportedLayerError: ``attention`` not a LayerShape, ``moe`` not a MoEShape, a bad ``dense_ffn``.
    """

    name: str
    attention: LayerShape
    moe: MoEShape
    dense_ffn: int = 0
    attention_note: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.attention, LayerShape):
            raise UnsupportedLayerError(f"MoELayer.attention must be a LayerShape, got {type(self.attention).__name__}")
        if not isinstance(self.moe, MoEShape):
            raise UnsupportedLayerError(f"MoELayer.moe must be a perfmodel.presets.MoEShape, got {self.moe!r}")
        ok = isinstance(self.dense_ffn, int) and not isinstance(self.dense_ffn, bool) and self.dense_ffn >= 0
        if not ok:
            raise UnsupportedLayerError(f"MoELayer.dense_ffn must be an int >= 0, got {self.dense_ffn!r}")

    def to_dict(self) -> dict[str, Any]:
        """Plain types (JSON-ready)."""
        return {
            "name": self.name,
            "attention": self.attention.to_dict(),
            "moe": dataclasses.asdict(self.moe),
            "dense_ffn": self.dense_ffn,
            "attention_note": self.attention_note,
        }

    @property
    def groups(self) -> tuple[str, ...]:
        """Conversion groups of the MoE layer: the attention's (qkv, o) and ``"experts"``."""
        return (*(g for g in self.attention.groups if g not in MLP_GROUPS), EXPERTS_GROUP)


def is_moe(layer: Any) -> bool:
    """Whether ``layer`` is an MoE preset (name or ModelPreset with ``.moe`` and no dense ``.layer``) or MoELayer."""
    if isinstance(layer, MoELayer):
        return True
    if isinstance(layer, (str, ModelPreset)):
        p = get_preset(layer)
        return p.layer is None and p.moe is not None
    return False


def resolve_moe_layer(layer: str | ModelPreset | MoELayer) -> tuple[MoELayer, int]:
    """``(MoELayer, number of MoE layers in the model)`` of an MoE preset (or an MoELayer: 1).

    Raises:
        MoEPresetError (an UnsupportedLayerError): a preset whose attention the step model does not price
            (DeepSeek's MLA): build a
            :class:`MoELayer` with a stand-in attention LayerShape (docs/step.md shows one) — or not an MoE preset.
    """
    if isinstance(layer, MoELayer):
        return layer, 1
    p = get_preset(layer)
    if p.moe is None:
        raise UnsupportedLayerError(f"{p.name} is not an MoE model (no .moe); price it with layer_time as dense")
    if p.name not in MOE_ATTENTION:
        raise MoEPresetError(
            f"{p.name}: its attention is not one the step model prices "
            f"(it knows the GQA attention of {', '.join(MOE_ATTENTION)}; "
            "MLA attention, as DeepSeek's, has no kernel model). "
            f"Price the layer with a stand-in attention of your choosing, labelled as such: "
            f"perfmodel.step.MoELayer(name=..., attention=perfmodel.presets.LayerShape(...), "
            f"moe=perfmodel.presets.get_preset({p.name!r}).moe); its routed experts alone: "
            f"perfmodel.moe.expert_block_time({p.name!r}, tokens=...)"
        )
    heads, kv, hd = MOE_ATTENTION[p.name]
    m = p.moe
    dense = next((lin.out_features for lin in p.linears if lin.name in _DENSE_MLP), 0) if m.dense_layers else 0
    attn = LayerShape(
        name=p.name, hidden=m.dim, ffn=dense or m.moe_inter, heads=heads, kv_heads=kv, head_dim=hd, source=p.source
    )
    return MoELayer(name=p.name, attention=attn, moe=m, dense_ffn=dense), m.moe_layers


def moe_eligible_groups(layer: MoELayer, recipe: str | Recipe) -> tuple[str, ...]:
    """Groups of ``layer`` that ``recipe`` can convert: attention groups with K, N multiples of 16, and
    ``"experts"`` where the recipe has a grouped form (:data:`EXPERT_RECIPES`) and dim, moe_inter are /16."""
    from .layer import eligible_groups

    rec = get_recipe(recipe)
    out = [g for g in eligible_groups(layer.attention) if g not in MLP_GROUPS]
    m = layer.moe
    if rec.name in EXPERT_RECIPES and m.dim % 16 == 0 and m.moe_inter % 16 == 0:
        out.append(EXPERTS_GROUP)
    return tuple(out)


def _split_convert(layer: MoELayer, rec: Recipe, convert: str | Iterable[str] | None) -> tuple[tuple[str, ...], bool]:
    """(attention Linears converted, experts converted) from ``convert`` (module doc of :mod:`perfmodel.step`)."""
    if rec.name == "bf16":
        return (), False
    attn = layer.attention
    mlp_names = {n for g in MLP_GROUPS for n in attn.groups.get(g, ())} | set(MLP_GROUPS)
    if convert is None:
        lin = tuple(n for n in converted_linears(attn, None) if n not in mlp_names)
        return lin, EXPERTS_GROUP in moe_eligible_groups(layer, rec)
    items = [convert] if isinstance(convert, str) else list(convert) if isinstance(convert, Iterable) else None
    if items is None:
        raise UnknownLinearError(f"convert must be None, a group name or an iterable of them, got {convert!r}")
    experts = any(isinstance(i, str) and i.strip() == EXPERTS_GROUP for i in items)
    rest = [i for i in items if not (isinstance(i, str) and i.strip() == EXPERTS_GROUP)]
    lin = converted_linears(attn, rest) if rest else ()
    dense = sorted(set(lin) & mlp_names | {i for i in rest if isinstance(i, str) and i.strip() in mlp_names})
    if dense:
        raise UnknownLinearError(
            f"{layer.name}: {', '.join(dense)} — an MoE layer has no dense FFN group; its groups are "
            f"{', '.join(layer.groups)} (the routed experts and shared experts: {EXPERTS_GROUP!r})"
        )
    if experts and EXPERTS_GROUP not in moe_eligible_groups(layer, rec):
        raise IneligibleLinearError(
            f"{layer.name}: the experts cannot run in {rec.name!r}: the grouped float8 GEMMs are "
            f"{', '.join(EXPERT_RECIPES)} (torchao moe_training), with dim and moe_inter multiples of 16 "
            f"(dim {layer.moe.dim}, moe_inter {layer.moe.moe_inter})"
        )
    return lin, experts


def _check_ep(ep: Any, m: MoEShape) -> int:
    if isinstance(ep, bool) or not isinstance(ep, numbers.Integral) or ep < 1:
        raise InvalidParallelismError(f"ep must be a positive int (the expert-parallel degree), got {ep!r}")
    if m.experts % ep:
        raise InvalidParallelismError(
            f"ep={ep} does not divide the {m.experts} routed experts of {m.name}: use a divisor of {m.experts}"
        )
    if m.experts // ep < m.top_k:
        raise InvalidParallelismError(
            f"ep={ep} leaves {m.experts // ep} experts per GPU, fewer than top_k {m.top_k}: the block model routes "
            f"top_k rows per token into the local experts; use ep <= {m.experts // m.top_k}"
        )
    return int(ep)


def local_moe(m: MoEShape, ep: int) -> MoEShape:
    """The block one GPU runs with expert parallelism ``ep``: ``experts / ep`` local experts, the router still
    scoring all ``experts`` (:attr:`MoEShape.router_experts`)."""
    if ep == 1:
        return m
    return dataclasses.replace(m, name=f"{m.name} (EP{ep})", experts=m.experts // ep, router_experts=m.router_width)


@dataclasses.dataclass(frozen=True, kw_only=True)
class MoELayerTime:
    """Predicted fwd + bwd step of one MoE decoder layer (module doc): ``step_s = attention.step_s +
    block.total_s + all_to_all_s``.

    ``attention``: the attention half (:class:`~perfmodel.step.LayerTime`, ``mlp=False``); ``block``: the
    routed-expert block (:class:`perfmodel.moe.ExpertBlockTime`, the local experts under ``ep``);
    ``all_to_all``: :class:`perfmodel.moe.AllToAllTime` (``None`` for ``ep == 1``), an estimate;
    ``converted`` / ``groups``: attention Linears / groups in ``recipe`` (``"experts"`` in ``groups`` when the
    block runs ``experts_recipe``); ``provenance``: the attention half's, with the block's and the all-to-all's
    sources and the block's measured error appended.
    """

    layer: MoELayer
    gpu: Any
    seq_len: Any
    batch: Any
    tokens: int
    recipe: Recipe
    experts_recipe: str
    converted: tuple[str, ...]
    groups: tuple[str, ...]
    ac: str
    ep: int
    attention: LayerTime
    block: ExpertBlockTime
    all_to_all: AllToAllTime | None
    step_s: float
    time_model: str
    provenance: Provenance

    @property
    def all_to_all_s(self) -> float:
        """Seconds of the four all-to-alls (0 without expert parallelism)."""
        return 0.0 if self.all_to_all is None else float(self.all_to_all.total_s)

    @property
    def parts(self) -> dict[str, Any]:
        """Part -> step seconds (they add up to ``step_s``): the attention half's gemm, cast, attention, other;
        ``experts`` (the whole block); ``all_to_all``."""
        return {**self.attention.parts, "experts": self.block.total_s, "all_to_all": self.all_to_all_s}

    @property
    def kernel_s(self) -> float:
        """The attention half's kernel seconds + the block's + the all-to-alls' (no step factors)."""
        return float(self.attention.kernel_s) + self.block.total_s + self.all_to_all_s

    @property
    def host_bound_risk(self) -> bool:
        """As :attr:`LayerTime.host_bound_risk`, of the whole layer's GPU time."""
        from .layer import HOST_BOUND_KERNEL_S

        return self.kernel_s < HOST_BOUND_KERNEL_S

    def kernel_rows(self) -> list[dict[str, Any]]:
        """Every kernel (attention half, block, all-to-alls) with its part, phase, seconds and ``provenance``."""
        a_src = f"step model ({self.attention.provenance.kind}, {self.time_model})"
        rows = [
            {"name": k.name, "part": k.part, "phase": k.phase, "seconds": k.step_s, "provenance": a_src}
            for k in self.attention.kernels
        ]
        b_src = f"perfmodel.moe.expert_block_time ({self.block.provenance.split(';')[0]})"
        rows += [
            {
                "name": f"experts.{k.name}",
                "part": "experts",
                "phase": k.phase,
                "seconds": k.seconds,
                "provenance": f"{b_src}: {k.note}" if k.note else b_src,
            }
            for k in self.block.kernels
        ]
        b = self.block
        how = "event law's host time (EVENT_LAW, fit families)" if b.event_law else "bincount syncs; measured median"
        rows += [
            {"name": f"experts.host_gap_{ph}", "part": "experts", "phase": ph, "seconds": s,
             "provenance": f"{b_src}: eager host gaps ({how})"}
            for ph, s in (("fwd", b.host_fwd_s), ("bwd", b.host_bwd_s)) if s
        ]  # fmt: skip
        rows += [
            {"name": f"experts.sustained_run_{ph}", "part": "experts", "phase": ph, "seconds": s,
             "provenance": f"{b_src}: the event law's sustained-run term (EVENT_LAW, fit families, H200)"}
            for ph, s in (("fwd", b.sustained_fwd_s), ("bwd", b.sustained_bwd_s)) if s
        ]  # fmt: skip
        extra = b.total_s - sum(k.seconds for k in b.kernels) - b.host_fwd_s - b.host_bwd_s
        extra -= b.sustained_fwd_s + b.sustained_bwd_s
        if abs(extra) > 0:
            rows.append(
                {"name": "experts.event_overhead", "part": "experts", "phase": "fwd", "seconds": extra,
                 "provenance": f"{b_src}: one CUDA-event overhead (timing='event')"}
            )  # fmt: skip
        if self.all_to_all is not None:
            a = self.all_to_all
            for ph in ("fwd", "bwd"):
                for what, s in (("dispatch", a.dispatch_s), ("combine", a.combine_s)):
                    rows.append(
                        {"name": f"all_to_all.{what}", "part": "all_to_all", "phase": ph, "seconds": s,
                         "provenance": a.provenance}
                    )  # fmt: skip
        return rows

    def to_dict(self) -> dict[str, Any]:
        """Plain types (JSON-ready)."""
        return {
            "layer": self.layer.to_dict(),
            "gpu": self.gpu.name,
            "seq_len": float(self.seq_len),
            "batch": float(self.batch),
            "tokens": self.tokens,
            "recipe": self.recipe.name,
            "experts_recipe": self.experts_recipe,
            "converted": list(self.converted),
            "groups": list(self.groups),
            "ac": self.ac,
            "ep": self.ep,
            "step_s": float(self.step_s),
            "parts_s": {k: float(v) for k, v in self.parts.items()},
            "time_model": self.time_model,
            "block_error_bar": dict(self.block.error_bar),
            "provenance": self.provenance.to_dict(),
        }

    def table(self) -> str:
        """A readable breakdown by part, then every kernel with its provenance's head."""
        rows = [
            f"{self.layer.name} MoE layer on {self.gpu.name}: batch {self.batch} x seq {self.seq_len}, "
            f"{self.recipe.name} (attention: {', '.join(self.converted) or 'none'}; experts {self.experts_recipe}), "
            f"EP {self.ep} — step {float(self.step_s) * 1e3:.3f} ms"
        ]
        rows += [f"  {p:<10} {float(t) * 1e3:9.3f} ms" for p, t in self.parts.items()]
        for r in self.kernel_rows():
            rows.append(f"    {r['part']:<10} {r['phase']:<9} {r['name']:<46} {float(r['seconds']) * 1e6:10.1f} us")
        rows.append(f"  provenance: {self.provenance.line()}")
        return "\n".join(rows)

    def __repr__(self) -> str:
        return f"MoELayerTime({self}; {self.provenance.kind})"

    def __str__(self) -> str:
        parts = ", ".join(f"{k} {float(v) * 1e3:.3f}" for k, v in self.parts.items())
        return f"{self.layer.name} MoE layer step {float(self.step_s) * 1e3:.3f} ms ({parts} ms)"


def _block_accuracy(block: ExpertBlockTime) -> str:
    bar = block.error_bar
    if bar.get("p50") is not None:
        return (
            f"expert block fwd+bwd: MdAPE {bar['p50']:.1f} %, p90 {bar['p90']:.1f} % ({bar['basis']}); the first, "
            "unfitted block model was too fast (held-out MdAPE 17.2 % bf16, 30.8 % rowwise: docs/validation/moe.md)"
        )
    return f"expert block: {bar.get('basis', 'not validated')} (docs/validation/moe.md 'Block validation')"


def _provenance(attn: LayerTime, block: ExpertBlockTime, a2a: AllToAllTime | None, note: str = "") -> Provenance:
    p = attn.provenance
    kind = "estimated" if block.recipe == "mxfp8" else p.kind
    status = (
        "mxfp8 experts estimated (no Blackwell measurement)"
        if block.recipe == "mxfp8"
        else ("measured-calibrated on the H200" if block.gpu == "H200" else f"transferred/estimated on {block.gpu}")
    )
    a2a_src = f"; all-to-all: {a2a.provenance}" if a2a is not None else ""
    acc = _block_accuracy(block)
    expected = dataclasses.replace(
        p.expected_error,
        basis=f"attention half: {p.expected_error.basis}; {acc}",
    )
    # the dense figures (Linear GEMM time, layer float8 speedup) are the attention half's: a whole MoE layer's
    # speedup was never measured, so no speedup figure is claimed for it
    if isinstance(expected, ExpectedError):
        expected = dataclasses.replace(expected, speedup_pct=None, decisions_pct=None)
    return dataclasses.replace(
        p,
        kind=kind,
        source=f"attention half: {p.source}; experts: perfmodel.moe.expert_block_time — {block.provenance}{a2a_src}",
        summary=f"{p.summary}; MoE block {status}{'; EP all-to-all estimated' if a2a is not None else ''}",
        assumptions=(
            *p.assumptions,
            *((f"attention: {note}",) if note else ()),
            acc,
            *((a2a.provenance,) if a2a is not None else ()),
        ),
        expected_error=expected,
    )


def moe_layer_time(
    layer: str | ModelPreset | MoELayer,
    *,
    gpu: GPULike,
    seq_len: Any,
    batch: Any = 1,
    recipe: str | Recipe | None = "bf16",
    convert: str | Iterable[str] | None = None,
    ac: str = "none",
    time_model: ModelLike = None,
    layer_params: LayerParams | None = None,
    ep: int = 1,
    counts: Any = None,
    skew: Any = None,
    dense_layer: bool = False,
    fused_gate_up: bool = False,
    compiled: bool = False,
    gpus_per_node: int | None = None,
    network: Any = None,
    mix_order_norm_bwd: bool | None = None,
) -> MoELayerTime | LayerTime:
    """Predicted fwd + bwd step of one MoE decoder layer on ``batch · seq_len`` tokens per GPU (module doc).

    Args:
        layer: an MoE preset with GQA attention (:data:`MOE_ATTENTION`) or a :class:`MoELayer`.
        gpu, seq_len, batch, recipe, time_model, layer_params: as :func:`perfmodel.step.layer_time`; numbers only
            (the expert block takes one integer token count).
        convert: groups in ``recipe``: ``"qkv"``, ``"o"`` (or their Linears' names) and ``"experts"`` (the routed
            experts, in :data:`EXPERT_RECIPES`'s grouped form); ``None``: every eligible group. Shared experts stay
            bf16 (torchao's MoE conversion leaves them).
        ac: ``"none"`` only (the block model prices no recomputation).
        ep: expert-parallel degree (dividing the experts, leaving >= top_k per GPU); > 1 adds the all-to-all
            estimate and prices the block on ``experts / ep`` local experts.
        counts, skew: routing imbalance as :func:`perfmodel.moe.expert_block_time` takes them (counts: rows per
            local expert, summing to ``tokens * top_k``).
        dense_layer: price one of the model's dense layers instead (``MoEShape.dense_layers`` > 0): attention +
            its dense MLP by the dense step model (returns a :class:`LayerTime`).
        fused_gate_up, compiled: passed to the block model.
        gpus_per_node, network: the EP group's layout, passed to :func:`perfmodel.moe.ep_all_to_all`.
        mix_order_norm_bwd: as :func:`perfmodel.step.layer_time` (attention half).

    Raises:
        UnsupportedLayerError (MLA presets; ``dense_layer`` where the model has none; ``ac`` not "none"),
        InvalidParallelismError (``ep``), UnknownLinearError (dense FFN groups named), IneligibleLinearError,
        PerfModelError (arrays or symbols), and what :func:`perfmodel.moe.expert_block_time` raises.
    """
    lay, _ = resolve_moe_layer(layer)
    m = lay.moe
    if not isinstance(dense_layer, bool):
        raise PerfModelError(f"dense_layer must be True or False, got {dense_layer!r}")
    opts = dict(gpu=gpu, seq_len=seq_len, batch=batch, time_model=time_model, layer_params=layer_params)
    opts["mix_order_norm_bwd"] = mix_order_norm_bwd
    if dense_layer:
        if not (m.dense_layers and lay.dense_ffn):
            raise UnsupportedLayerError(f"{lay.name} has no dense layers (MoEShape.dense_layers 0, no dense MLP)")
        if ep != 1 or counts is not None or skew is not None:
            raise InvalidParallelismError("ep, counts and skew are for MoE layers; dense_layer=True has no experts")
        dense = dataclasses.replace(lay.attention, ffn=lay.dense_ffn, name=f"{lay.name} (dense layer)")
        return layer_time(dense, recipe=recipe, convert=convert, ac=ac, **opts)
    if ac != "none":
        raise UnsupportedLayerError(
            f"ac={ac!r}: activation checkpointing of an MoE layer is not priced (the expert block model has no "
            "recomputation); use ac='none'"
        )
    if namespace(seq_len, batch).name == "sympy" or any(getattr(v, "ndim", 0) for v in (seq_len, batch)):
        raise PerfModelError("an MoE layer needs one number each for seq_len and batch (no arrays or symbols)")
    ep = _check_ep(ep, m)
    rec = get_recipe(recipe)
    lin, experts = _split_convert(lay, rec, convert)
    attn = layer_time(lay.attention, recipe=rec if lin else "bf16", convert=lin or None, ac=ac, mlp=False, **opts)
    tokens = attn.tokens
    if float(tokens) != int(tokens):
        raise PerfModelError(f"batch x seq_len must be a whole number of tokens, got {tokens!r}")
    exp_recipe = EXPERT_RECIPES[rec.name] if experts else "bf16"
    block = expert_block_time(
        local_moe(m, ep), tokens=int(tokens), gpu=attn.gpu, recipe=exp_recipe, counts=counts, skew=skew,
        fused_gate_up=fused_gate_up, compiled=compiled, timing="event", time_model=time_model,
    )  # fmt: skip
    a2a = None
    if ep > 1:
        a2a = ep_all_to_all(m, tokens=int(tokens), ep=ep, gpu=attn.gpu, gpus_per_node=gpus_per_node, network=network)
    step_s = float(attn.step_s) + block.total_s + (a2a.total_s if a2a is not None else 0.0)
    return MoELayerTime(
        layer=lay,
        gpu=attn.gpu,
        seq_len=seq_len,
        batch=batch,
        tokens=int(tokens),
        recipe=rec,
        experts_recipe=exp_recipe,
        converted=attn.converted,
        groups=(*attn.groups, *((EXPERTS_GROUP,) if experts else ())),
        ac=ac,
        ep=ep,
        attention=attn,
        block=block,
        all_to_all=a2a,
        step_s=step_s,
        time_model=attn.time_model,
        provenance=_provenance(attn, block, a2a, lay.attention_note),
    )
