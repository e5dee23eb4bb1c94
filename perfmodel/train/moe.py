"""MoE models in the cluster model: their parameter counts (every expert; the active ones for 6·N), the
expert-parallel layout rule and the MoE checks of a job (public face: :mod:`perfmodel.train`; docs/train.md,
"MoE models"). The MoE layer's time comes from :func:`perfmodel.step.layer_time` (:mod:`perfmodel.train.compute`).

The EP rule implemented is torchtitan's with ``tp = 1``: the EP ranks come out of the FSDP shard ranks
(``dp_shard = (dp_shard / ep) · ep``, EP ranks neighbours); each GPU holds ``experts / ep`` whole experts, sharded by
FSDP over the ``dp_shard / ep`` ranks that hold the same experts. Experts are sharded by EP only (no TP).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .._backend import check_size, is_symbolic, short_repr
from ..errors import InvalidParallelismError, InvalidShapeError, MoEPresetError, UnsupportedLayerError
from ..float8.recipes import Recipe
from ..presets import ModelPreset
from ..step.layer import _plain
from .memory import MOE_NOTE

__all__ = [
    "check_ep",
    "check_moe_job",
    "dense_converted",
    "moe_converted",
    "moe_dict",
    "moe_sizes",
    "moe_table_lines",
    "one_value",
]


def moe_sizes(preset: ModelPreset, *, layers: Any, vocab: int) -> dict[str, Any]:
    """The :class:`~perfmodel.train.config.ModelSizes` fields of a GQA MoE preset
    (:data:`perfmodel.step.moe_layer.MOE_ATTENTION`; ``vocab`` checked already): its MoE layers and, where it has
    them, its dense layers. ``layers=N``: ``N`` MoE layers and no dense layers (a short stack).

    Raises:
        MoEPresetError: a preset whose attention the step model does not price (DeepSeek's MLA), with a pointer.
        InvalidShapeError: ``layers`` not one positive integer (MoE estimates take no arrays or symbols).
    """
    from ..step.moe_layer import resolve_moe_layer

    try:
        lay, _ = resolve_moe_layer(preset)
    except MoEPresetError as exc:
        raise MoEPresetError(
            f"perfmodel.train prices dense decoder layers only, plus MoE layers with GQA attention: {exc}"
        ) from None
    m = lay.moe
    if layers is None:
        moe_n, dense_n = m.moe_layers, m.dense_layers
    else:
        if isinstance(layers, np.ndarray) or is_symbolic(layers):
            raise InvalidShapeError(
                f"{preset.name} is an MoE model: layers must be one positive integer (MoE layers of the stack), got "
                f"{short_repr(layers)}; the expert block takes one integer token count, so MoE estimates take no "
                "arrays or symbols"
            )
        moe_n, dense_n = check_size("layers", layers), 0
    v = vocab
    a = lay.attention
    attn = sum(s.in_features * s.out_features for s in a.linears() if s.name in ("wq", "wk", "wv", "wo"))
    experts = m.experts * 3 * m.dim * m.moe_inter
    shared = 3 * m.dim * m.shared_experts * m.shared_inter
    router = m.dim * m.experts
    per_moe = attn + router + experts + shared + 2 * m.dim
    per_dense = attn + 3 * m.dim * lay.dense_ffn + 2 * m.dim if dense_n else 0
    emb, out = v * m.dim, v * m.dim + m.dim
    return dict(
        name=preset.name,
        layer=a,
        layers=int(moe_n + dense_n),
        vocab=v,
        layer_params=per_moe,
        layer_linear_params=per_moe - 2 * m.dim,
        embedding_params=emb,
        output_params=out,
        total_params=moe_n * per_moe + dense_n * per_dense + emb + out,
        moe=m,
        moe_layers=int(moe_n),
        dense_ffn=lay.dense_ffn,
        attention_linear_params=attn,
        expert_params=experts,
        shared_expert_params=shared,
        router_params=router,
        dense_layer_params=per_dense,
    )


def check_ep(sizes: Any, ep: int, *, tp: int, dp_shard: int) -> int:
    """Check the expert-parallel degree (``ep`` a positive int already). The rule implemented is torchtitan's
    with ``tp = 1``: the EP ranks come out of the FSDP shard ranks (``dp_shard = (dp_shard / ep) · ep``, EP ranks
    neighbours), so ``ep`` must divide ``dp_shard``; each GPU holds ``experts / ep`` whole experts, sharded by FSDP
    over the ``dp_shard / ep`` ranks that hold the same experts. ``ep`` must also divide the routed experts and
    leave at least ``top_k`` per GPU (the block model's rule, :func:`perfmodel.step.layer_time`). Experts are
    sharded by EP only.

    Raises:
        InvalidParallelismError: ``ep > 1`` for a dense model; ``tp > 1`` for an MoE
            model (TP of the experts, and TP of the attention beside EP, are not modeled); ``ep`` not dividing the
            experts or ``dp_shard``; fewer than ``top_k`` experts per GPU.
    """
    e = ep
    if not sizes.is_moe:
        if e != 1:
            raise InvalidParallelismError(f"ep={e}: {sizes.name} is a dense model (no experts); pass ep=1")
        return 1
    m = sizes.moe
    if tp != 1:
        raise InvalidParallelismError(
            f"tp={tp} with the MoE model {sizes.name}: tensor parallelism of the experts is not modeled (experts "
            "are sharded by expert parallelism only), nor is TP of the attention beside EP; pass tp=1 and shard the "
            "experts with ep="
        )
    if m.experts % e:
        raise InvalidParallelismError(
            f"ep={e} does not divide the {m.experts} routed experts of {sizes.name}: use a divisor of {m.experts}"
        )
    if m.experts // e < m.top_k:
        raise InvalidParallelismError(
            f"ep={e} leaves {m.experts // e} experts per GPU, fewer than top_k {m.top_k} of {sizes.name}: use "
            f"ep <= {m.experts // m.top_k}"
        )
    if dp_shard % e:
        raise InvalidParallelismError(
            f"ep={e} does not divide the FSDP shard degree dp_shard={dp_shard}: the EP ranks come out of the "
            "data-parallel shard ranks (torchtitan), so ep must divide n_gpus / (tp · dp_replicate); valid ep: "
            "divisors of both dp_shard and the experts"
        )
    return e


def moe_converted(sizes: Any, rec: Recipe, convert: Any) -> tuple[str, ...]:
    """An MoE layer's converted attention Linears, plus ``"experts"`` when the routed experts run in float8
    (:func:`perfmodel.step.layer_time`'s rules for MoE layers)."""
    from ..step.moe_layer import EXPERTS_GROUP, _split_convert, resolve_moe_layer

    if rec.name == "bf16":
        return ()
    lay, _ = resolve_moe_layer(sizes.name)
    if isinstance(convert, str) and convert.strip().lower() == "none":
        return ()
    lin, experts = _split_convert(lay, rec, convert)
    return (*lin, *((EXPERTS_GROUP,) if experts else ()))


def dense_converted(sizes: Any, rec: Recipe, convert: Any, converted: tuple[str, ...]) -> tuple[str, ...]:
    """An MoE model's dense layers: the attention Linears ``converted`` names, and with ``convert=None`` (every
    eligible Linear) their dense MLP's eligible Linears too; naming groups (qkv, o, experts) converts their
    attention only."""
    if not (sizes.is_moe and sizes.dense_layers) or rec.name == "bf16":
        return ()
    from ..step.layer import converted_linears

    dense = dataclasses.replace(sizes.layer, ffn=sizes.dense_ffn)
    attn = tuple(n for n in converted if n in ("wq", "wk", "wv", "wo"))
    if convert is None:
        return (*attn, *(n for n in converted_linears(dense, None) if n in ("w1", "w3", "w2")))
    return attn


def check_moe_job(sizes: Any, seq: Any, batch: Any, ac: str) -> None:
    """An MoE job: one number each for seq_len and batch_per_gpu, no activation checkpointing.

    Raises:
        InvalidShapeError: an array or symbol (the expert block takes one integer token count; call once per value).
        UnsupportedLayerError: ``ac`` other than ``"none"`` (the block model prices no recomputation).
    """
    for name, v in (("seq_len", seq), ("batch_per_gpu", batch)):
        if isinstance(v, np.ndarray) or is_symbolic(v):
            raise InvalidShapeError(
                f"{sizes.name} is an MoE model: {name} must be one number, got {short_repr(v)} (the expert block "
                "model takes one integer token count; call perfmodel.train.estimate once per value)"
            )
    if float(seq) * float(batch) != int(float(seq) * float(batch)):
        raise InvalidShapeError(f"batch_per_gpu x seq_len must be a whole number of tokens, got {batch} x {seq}")
    if ac != "none":
        raise UnsupportedLayerError(
            f"ac={ac!r}: activation checkpointing of an MoE layer is not priced (the expert block model has no "
            f"recomputation); {sizes.name} needs ac='none' (ac=None picks it for MoE models)"
        )


def moe_dict(est: Any) -> dict[str, Any]:
    """The MoE parts of an MoE model's :class:`~perfmodel.train.TrainEstimate` (plain types)."""
    s, lt = est.config.sizes, est.layer.layer_time
    return {
        "moe_layers": s.moe_layers,
        "dense_layers": s.dense_layers,
        "total_params": s.total_params,
        "active_params": s.active_params,
        "experts_per_gpu": s.moe.experts // est.config.ep,
        "experts_recipe": lt.experts_recipe,
        "moe_layer_s": {k: _plain(v) for k, v in lt.parts.items()},
        "dense_layer_s": None if est.dense_layer is None else _plain(est.dense_layer.step_s),
        "all_to_all": "estimated (collective model), added serially (not overlapped)",
        "memory": MOE_NOTE,
    }


def moe_table_lines(est: Any) -> list[str]:
    """The MoE parts for the table: the MoE layer by part, dense layers, parameters, what is estimated."""
    c, s, lt = est.config, est.config.sizes, est.layer.layer_time
    ms = ", ".join(f"{k} {float(v) * 1e3:.2f}" for k, v in lt.parts.items())
    lines = [
        f"    MoE layer x {s.moe_layers}: {float(est.layer.step_s) * 1e3:.2f} ms ({ms} ms); experts "
        f"{lt.experts_recipe}, {s.moe.experts // c.ep} of {s.moe.experts} per GPU (EP {c.ep}), block "
        f"{'measured-calibrated on the H200' if c.gpu.name == 'H200' else 'transferred/estimated'}"
    ]
    if c.ep > 1:
        lines.append(
            f"    all-to-all (EP {c.ep}): {lt.all_to_all_s * 1e3:.2f} ms per layer, added serially (not "
            "overlapped): an ESTIMATE from the collective model"
        )
    if est.dense_layer is not None:
        lines.append(f"    dense layer x {s.dense_layers}: {float(est.dense_layer.step_s) * 1e3:.2f} ms")
    lines.append(
        f"    parameters: {s.total_params / 1e9:.2f} B total, {s.active_params / 1e9:.2f} B active per token "
        "(MFU's 6·N counts the active ones)"
    )
    return lines


def one_value(model: Any, knobs: dict[str, Any]) -> dict[str, Any]:
    """An MoE model's layout from the grid: its ``seq_len``, ``batch_per_gpu`` and ``layers`` elements as one
    number each.

    Raises:
        InvalidShapeError: elements that differ (an MoE estimate takes one value each: the expert block model
            takes one integer token count)."""
    out = dict(knobs)
    for k in ("seq_len", "batch_per_gpu", "layers"):
        v = knobs.get(k)
        if isinstance(v, np.ndarray):
            values = np.unique(v)
            if values.size != 1:
                raise InvalidShapeError(
                    f"{getattr(model, 'name', model)} is an MoE model: {k} must be one number, got {values.size} "
                    "different values (the expert block model takes one integer token count; call "
                    "perfmodel.train.estimate once per value; arrays of n_gpus or dp_replicate are fine)"
                )
            out[k] = values[0].item()
    return out
