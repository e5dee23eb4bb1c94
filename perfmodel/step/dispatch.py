""":func:`layer_time` and :func:`best_convert` for any decoder layer: dense ones (a LayerShape, a dense preset) go to
:mod:`perfmodel.step.layer`, MoE ones (an MoE preset, a :class:`~perfmodel.step.moe_layer.MoELayer`) to
:mod:`perfmodel.step.moe_layer` (public face: :mod:`perfmodel.step`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import InvalidParallelismError, PerfModelError
from ..float8.recipes import Recipe
from ..models.registry import ModelLike
from ..presets import LayerShape, ModelPreset
from ..specs.gpu import GPULike
from . import layer as dense
from .layer import LayerTime, choose_groups
from .moe_layer import MoELayer, MoELayerTime, is_moe, moe_eligible_groups, moe_layer_time, resolve_moe_layer
from .params import LayerParams

__all__ = ["MOE_KEYWORDS", "best_convert", "layer_time"]

#: keywords only MoE layers take (:func:`perfmodel.step.moe_layer.moe_layer_time`)
MOE_KEYWORDS: tuple[str, ...] = (
    "ep", "counts", "skew", "dense_layer", "fused_gate_up", "compiled", "gpus_per_node", "network",
)  # fmt: skip


def _refuse_moe_keywords(layer: Any, moe: dict[str, Any]) -> None:
    unknown = sorted(set(moe) - set(MOE_KEYWORDS))
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(unknown)}")
    if moe:
        raise InvalidParallelismError(
            f"{', '.join(sorted(moe))}: MoE keywords ({', '.join(MOE_KEYWORDS)}) need an MoE layer (an MoE preset or "
            f"a perfmodel.step.MoELayer); {getattr(layer, 'name', layer)!r} is dense"
        )


def layer_time(
    layer: str | ModelPreset | LayerShape | MoELayer,
    *,
    gpu: GPULike,
    seq_len: Any,
    batch: Any = 1,
    recipe: str | Recipe | None = "bf16",
    convert: str | Iterable[str] | None = None,
    ac: str = "none",
    time_model: ModelLike = None,
    layer_params: LayerParams | None = None,
    mix_order_norm_bwd: bool | None = None,
    mlp: bool = True,
    **moe: Any,
) -> LayerTime | MoELayerTime:
    """Predicted fwd + bwd step of one decoder layer, seconds, by part.

    Dense layers: :func:`perfmodel.step.layer.layer_time` (its docstring has every argument; returns a
    :class:`LayerTime`). MoE layers (an MoE preset with GQA attention, or a :class:`MoELayer`):
    :func:`perfmodel.step.moe_layer.moe_layer_time` — attention half by the dense model, the routed-expert block by
    :func:`perfmodel.moe.expert_block_time`, ``ep > 1``'s all-to-all as an estimate; returns a
    :class:`MoELayerTime` (a :class:`LayerTime` for ``dense_layer=True``). ``**moe``: ``ep``, ``counts``,
    ``skew``, ``dense_layer``, ``fused_gate_up``, ``compiled``, ``gpus_per_node``, ``network`` (MoE layers only).

    Raises:
        what those two raise; InvalidParallelismError: MoE keywords with a dense layer.
    """
    opts = dict(gpu=gpu, seq_len=seq_len, batch=batch, recipe=recipe, convert=convert, ac=ac,
                time_model=time_model, layer_params=layer_params, mix_order_norm_bwd=mix_order_norm_bwd)  # fmt: skip
    if is_moe(layer):
        if mlp is not True:
            raise PerfModelError("mlp=False is for a dense layer; an MoE layer's attention half is its .attention")
        unknown = sorted(set(moe) - set(MOE_KEYWORDS))
        if unknown:
            raise TypeError(f"unexpected keyword argument(s): {', '.join(unknown)}")
        return moe_layer_time(layer, **opts, **moe)
    _refuse_moe_keywords(layer, moe)
    return dense.layer_time(layer, mlp=mlp, **opts)


def best_convert(
    layer: str | ModelPreset | LayerShape | MoELayer,
    *,
    gpu: GPULike,
    seq_len: Any,
    batch: Any = 1,
    recipe: str | Recipe = "tensorwise",
    ac: str = "none",
    min_gain: float = 0.0,
    candidates: Iterable[Iterable[str]] | None = None,
    time_model: ModelLike = None,
    layer_params: LayerParams | None = None,
    **moe: Any,
) -> tuple[str, ...]:
    """The groups to convert to ``recipe`` (:func:`perfmodel.step.layer.best_convert`: every subset of the
    eligible groups priced as a whole, ``()`` unless one is ``min_gain`` faster than bf16). An MoE layer chooses
    among ``qkv``, ``o`` and ``experts`` (:func:`perfmodel.step.moe_layer.moe_eligible_groups`), priced by
    :func:`layer_time` with ``**moe`` (``ep``, ``counts``, ``skew``, ...)."""
    opts = dict(gpu=gpu, seq_len=seq_len, batch=batch, ac=ac, time_model=time_model, layer_params=layer_params)
    if not is_moe(layer):
        _refuse_moe_keywords(layer, moe)
        return dense.best_convert(layer, recipe=recipe, min_gain=min_gain, candidates=candidates, **opts)
    if moe.get("dense_layer"):
        raise PerfModelError(
            "best_convert prices an MoE layer here; for a dense layer of the model pass its LayerShape"
        )
    lay, _ = resolve_moe_layer(layer)

    def step_of(sub: tuple[str, ...]) -> float:
        if not sub:
            return float(layer_time(lay, recipe="bf16", **opts, **moe).step_s)
        return float(layer_time(lay, recipe=recipe, convert=sub, **opts, **moe).step_s)

    return choose_groups(
        lay.name, lay.groups, moe_eligible_groups(lay, recipe), step_of,
        seq_len=seq_len, batch=batch, min_gain=min_gain, candidates=candidates,
    )  # fmt: skip
