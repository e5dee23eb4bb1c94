"""Decoder-layer training step: time of one fwd + bwd step of a transformer layer, bf16 or float8, and which
groups of Linears to convert.

A layer is not the sum of its Linears: attention, norms, RoPE, the activation and residual adds run
between them, a float8 cast can fuse into the kernel that produces its input (or not), Linears that share
an input share its cast, and the whole runs inside one compiled graph. :func:`layer_time` adds up every
kernel of the step (:mod:`perfmodel.step.kernels` lists them with their byte and FLOP counts)::

    step_s     = kernel_s + min(1, boost_window / kernel_s) x sum over kinds of (step_factor(kind) - 1) x kernel_s(kind)
                 CUDA-event time of back-to-back steps; kind: bf16 tensor-core work (bf16 GEMMs, SDPA) | float8
                 GEMMs | memory-bound (everything else)
    kernel_s   = gemm + cast + attention + other               (+ the forward re-run by activation checkpointing)
    gemm       = sum over the 3 GEMMs of every Linear of float8.linear_time(...) x gemm_factor(format)
    attention  = 2 latency + 2·b·s²·H·hd / (f_fwd · peak_bf16) + 2.5 · 2·b·s²·H·hd / (f_bwd · peak_bf16)
                 + cuDNN's helper kernels (memory-bound)
    other      = sum over norm, RoPE, activation, residual kernels of latency + bytes / (f_mem · HBM bandwidth)
    cast       = the recipe's cast kernels per group of Linears that share an input (input cast once per
                 group), amaxes fused into their producer where inductor fuses them, priced by the GPU's
                 calibrated cast model x cast_factor(recipe)

Every part is reported in step seconds (its kernels' time x their step factors), so the parts add up to
``step_s``; ``in_step_factor = step_s / kernel_s``. The step factors say how much slower each kind of kernel runs
in sustained back-to-back steps than in a step that starts from idle, as the sweep's profiled ones do (each
follows a 20 ms sleep), for the first ``boost_window`` seconds of it: tensor-core kernels lose clock,
memory-bound ones do not. The model prices the GPU: a step whose host (Python and
launch) time exceeds its GPU time — small layers in float8, where torchao's Linears add launches and host
work — takes longer than predicted (``docs/step.md``, host time). GEMMs and casts use the GPU's time model
(:func:`perfmodel.models.registry.time_model`); the layer parameters (fractions of peak and of HBM bandwidth,
latencies, factors) come from ``perfmodel/calibrations/h200_layer.json``, fitted on the H200 layer sweep
(``docs/step.md``).

Activation checkpointing (``ac``): ``"none"``; ``"full"`` re-runs the forward in backward — every forward
kernel but the last Linear's output GEMM and the residual add after it, which backward does not read (the
8B FSDP measurement checks it); ``"selective"`` follows torchtitan's op-level policy — SDPA outputs and
every other Linear output saved, norms, RoPE, activations, casts and the other Linears re-run (an
assumption; not measured).

MoE layers (an MoE preset with GQA attention, or a :class:`MoELayer`): :func:`layer_time` prices the attention
half as above (``mlp=False``), the routed-expert block by :func:`perfmodel.moe.expert_block_time` and, with
``ep > 1``, expert parallelism's all-to-all as an estimate (:mod:`perfmodel.step.moe_layer`, ``docs/step.md``). Layers
the model does not price (MLA attention) raise :class:`UnsupportedLayerError` naming what is missing; their
Linears are still priced one by one by :func:`perfmodel.float8.report`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import IneligibleLinearError, ModuleShapeError, UnknownLinearError, UnsupportedLayerError
from ..float8.recipes import Recipe, get_recipe
from ..models.registry import ModelLike
from ..presets import LayerShape, ModelPreset
from ..specs.gpu import GPULike
from .dispatch import best_convert, layer_time
from .filter import (
    UNMATCHED_WARN_AFTER,
    GroupFilter,
    LayerGroupFilter,
    layer_filter,
    module_filter,
    torchtitan_filter_fqns,
)
from .kernels import StepKernel
from .layer import AC_MODES, FP8_ALIGN, LayerTime, eligible_groups, resolve_layer
from .moe_layer import EXPERTS_GROUP, MoELayer, MoELayerTime, is_moe, moe_eligible_groups, resolve_moe_layer
from .names import CONVENTIONS
from .params import LayerParams

__all__ = [
    "AC_MODES",
    "CONVENTIONS",
    "EXPERTS_GROUP",
    "FP8_ALIGN",
    "UNMATCHED_WARN_AFTER",
    "GroupFilter",
    "IneligibleLinearError",
    "LayerGroupFilter",
    "LayerParams",
    "LayerTime",
    "MoELayer",
    "MoELayerTime",
    "ModuleShapeError",
    "StepKernel",
    "StepReport",
    "UnknownLinearError",
    "UnsupportedLayerError",
    "best_convert",
    "eligible_groups",
    "layer_filter",
    "layer_time",
    "module_filter",
    "moe_eligible_groups",
    "resolve_layer",
    "step_report",
    "torchtitan_filter_fqns",
]


@dataclasses.dataclass(frozen=True, kw_only=True)
class StepReport:
    """bf16, every eligible Linear in ``recipe``, and the chosen groups, for one layer and the model's stack
    of ``layers`` such layers (decoder layers only: embedding, final norm and output head are not in it)."""

    layer: LayerShape | MoELayer
    layers: int
    recipe: str
    chosen: tuple[str, ...]
    bf16: LayerTime | MoELayerTime
    all_converted: LayerTime | MoELayerTime
    best: LayerTime | MoELayerTime

    @property
    def speedup_all(self) -> float:
        """bf16 step / step with every eligible Linear converted."""
        return float(self.bf16.step_s) / float(self.all_converted.step_s)

    @property
    def speedup_best(self) -> float:
        """bf16 step / step with the chosen groups converted."""
        return float(self.bf16.step_s) / float(self.best.step_s)

    def to_dict(self) -> dict[str, Any]:
        """Plain types (JSON-ready)."""
        return {
            "layer": self.layer.to_dict(),
            "layers": self.layers,
            "recipe": self.recipe,
            "chosen_groups": list(self.chosen),
            "speedup_all": self.speedup_all,
            "speedup_best": self.speedup_best,
            "stack_step_s": {
                "bf16": float(self.bf16.step_s) * self.layers,
                "all": float(self.all_converted.step_s) * self.layers,
                "best": float(self.best.step_s) * self.layers,
            },
            "bf16": self.bf16.to_dict(),
            "all": self.all_converted.to_dict(),
            "best": self.best.to_dict(),
        }

    def __str__(self) -> str:
        rows = [f"{self.layer.name} x {self.layers} layers on {self.bf16.gpu.name}, {self.recipe}:"]
        for label, lt in (("bf16", self.bf16), ("all", self.all_converted), ("best", self.best)):
            parts = " ".join(f"{k} {float(v) * 1e3:.3f}" for k, v in lt.parts.items())
            rows.append(
                f"  {label:<5} {float(lt.step_s) * 1e3:9.3f} ms/layer  ({parts} ms)  "
                f"groups: {', '.join(lt.groups) or '-'}"
            )
        rows.append(f"  speedup: all {self.speedup_all:.3f}x, chosen {self.speedup_best:.3f}x")
        rows.append(f"  provenance: {self.bf16.provenance.line()}")
        return "\n".join(rows)


def step_report(
    model: str | ModelPreset | LayerShape,
    *,
    gpu: GPULike,
    seq_len: Any,
    batch: Any = 1,
    recipe: str | Recipe = "tensorwise",
    ac: str = "none",
    min_gain: float = 0.0,
    time_model: ModelLike = None,
    layer_params: LayerParams | None = None,
    **moe: Any,
) -> StepReport:
    """Price ``model``'s decoder layer in bf16, with every eligible Linear in ``recipe``, and with the groups
    :func:`best_convert` chooses; totals for the model's ``layers`` layers (a LayerShape counts as 1).

    An MoE preset (or :class:`MoELayer`) reports its MoE layer (:class:`MoELayerTime` in ``bf16`` / ``all`` /
    ``best``; groups qkv, o, experts) and ``layers`` = its MoE layers only (``MoEShape.moe_layers``: the dense
    layers, if any, are priced with ``layer_time(..., dense_layer=True)``); ``**moe`` (``ep``, ``counts``,
    ``skew``, ...) as :func:`layer_time` takes them.
    """
    if isinstance(model, MoELayer) or is_moe(model):
        lay, n = resolve_moe_layer(model)
    else:
        lay, n = resolve_layer(model)
    opts = dict(gpu=gpu, seq_len=seq_len, batch=batch, ac=ac, time_model=time_model, layer_params=layer_params, **moe)
    rec = get_recipe(recipe)
    chosen = best_convert(lay, recipe=rec, min_gain=min_gain, **opts)
    return StepReport(
        layer=lay,
        layers=n,
        recipe=rec.name,
        chosen=chosen,
        bf16=layer_time(lay, recipe="bf16", **opts),
        all_converted=layer_time(lay, recipe=rec, convert=None, **opts),
        best=layer_time(lay, recipe=rec if chosen else "bf16", convert=chosen or None, **opts),
    )
