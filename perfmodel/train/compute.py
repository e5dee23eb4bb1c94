"""Compute of one training step on one GPU of a sharded job, and its memory (public face: :mod:`perfmodel.train`).

* **Decoder layers**: :func:`perfmodel.step.layer_time` on the layer as one TP rank holds it (heads, KV heads
  and FFN width divided by ``tp``; hidden size whole), then adjusted for what TP and FSDP change:

  - sequence parallelism: norms and residual adds run on ``tokens / tp`` rows (their kernels scale by ``1/tp``);
  - torchao's float8 TP plan (tensorwise): the inputs of column-parallel Linears and the output gradients of
    row-parallel ones are cast before their all-gather, on ``1/tp`` of the rows;
  - float8 all-gather (FSDP2 + tensorwise): weights arrive as float8, so the layer's weight casts go; the
    cast of each rank's shard and the precomputed scales are priced from measured pieces
    (:mod:`perfmodel.train.fp8_gather`);
  - async TP: each TP GEMM runs as ``tp`` chunks of ``tokens / tp`` rows (priced by the GEMM model).

* **MoE models** (GQA MoE presets, ``tp = 1``): one MoE layer is :func:`perfmodel.step.layer_time` with ``ep``
  (attention half + routed-expert block + EP all-to-all, the all-to-all added serially, not overlapped: an
  estimate); the float8 all-gather adjustment applies to the attention half only. fwd / bwd come from the attention
  kernels' phases, the block's ``fwd_s`` / ``bwd_s`` and the all-to-all's dispatch + combine per phase. The
  model's dense layers (``dense_layer=True``) are a second :class:`LayerCompute` (:func:`dense_layer_compute`).

* **Output layer and loss**: the bf16 output Linear ``hidden -> vocab / tp`` (torchtitan keeps it out of
  float8) and a compiled cross-entropy that reads the logits twice and writes their gradient
  (:data:`LOSS_BYTES_PER_LOGIT`); the embedding's gradient is written once, densely.

* **Per-step overhead** (optimizer and FSDP2's copies), HBM traffic per parameter at a fitted fraction of the
  HBM bandwidth (:class:`TrainParams`, fitted on one-GPU FSDP2 steps measured on an H200)::

      AdamW (fused, fp32 master, grads, exp_avg, exp_avg_sq)  28 B x shard
      gradient into the fp32 shard                              8 B x shard
      all-gather copy-in: fp32 shard -> bf16                    6 B x shard   x 2 (forward and backward)
      all-gather copy-out into the parameters                   4 B x full    x 2   (fp8: 2 B)
      reduce-scatter copy-in: bf16 grads -> fp32                6 B x full

  where ``shard = params / (dp_shard · tp)`` and ``full = params / tp`` (what a rank gathers; MoE models with
  ``ep``: every parameter but ``1 - 1/ep`` of the routed experts. ``shard`` is the same with or without EP: each
  GPU's ``experts / ep`` experts are sharded over ``dp_shard / ep`` ranks).

  With float8 all-gather the float8 Linears' weights have no bf16 copy-in: their shard cast and the precomputed
  scales are priced apart, from measured pieces (:mod:`perfmodel.train.fp8_gather`), not at the fitted fraction.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path
from typing import Any

from .._files import CALIBRATIONS, load_json, write_atomic
from ..errors import CalibrationError
from .config import TrainConfig, shard_layer

__all__ = [
    "LOSS_BYTES_PER_LOGIT",
    "SHIPPED_TRAIN_FILE",
    "TRAIN_SCHEMA",
    "LayerCompute",
    "TrainParams",
    "dense_layer_compute",
    "layer_compute",
    "mean_layer_compute",
    "memory_bytes",
    "other_compute",
    "overhead_bytes",
    "shard_layer",
    "shipped_train_params",
]

TRAIN_SCHEMA = "perfmodel.train_calibration/1"
SHIPPED_TRAIN_FILE = CALIBRATIONS / "h200_train.json"
#: compiled cross-entropy: the forward reads the bf16 logits (2 B), the backward reads them again and writes
#: their gradient (2 + 2 B). An assumption (torchtitan compiles the loss since 2025; eager upcasts cost ~3x).
LOSS_BYTES_PER_LOGIT = 6
_SP_KERNELS = ("attention_norm", "ffn_norm", "residual", "attention_norm_bwd", "ffn_norm_bwd", "norm_weight_grad")
_COLWISE = ("wq.", "wk.", "wv.", "w1.", "w3.", "qkv.", "w13.")
_ROWWISE = ("wo.", "w2.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainParams:
    """What the cluster model fits on measurements of its own (the rest comes from the step and GEMM models).

    Attributes:
        overhead_bw_fraction: the share of the HBM bandwidth the optimizer step and FSDP2's copies reach
            (their bytes are listed in the module doc).
        source: what it was fitted on.
    """

    overhead_bw_fraction: float
    source: str

    def __post_init__(self) -> None:
        v = self.overhead_bw_fraction
        if not (isinstance(v, (int, float)) and 0.05 <= v <= 1.2):
            raise CalibrationError(f"TrainParams.overhead_bw_fraction must be in [0.05, 1.2], got {v!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"schema": TRAIN_SCHEMA, **dataclasses.asdict(self)}

    def save(self, path: str | Path, *, force: bool = False) -> Path:
        """Write the JSON atomically (refuses to replace a file unless ``force``)."""
        return write_atomic(path, json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n", force=force)

    @classmethod
    def load(cls, path: str | Path) -> TrainParams:
        data = load_json(Path(path), what="train calibration", error=CalibrationError)
        if not isinstance(data, dict) or data.get("schema") != TRAIN_SCHEMA:
            raise CalibrationError(f"{path}: not a perfmodel train calibration (schema {TRAIN_SCHEMA})")
        try:
            return cls(overhead_bw_fraction=data["overhead_bw_fraction"], source=data["source"])
        except KeyError as exc:
            raise CalibrationError(f"{path}: missing {exc.args[0]!r}") from None


@functools.lru_cache(maxsize=1)
def shipped_train_params() -> TrainParams:
    """The shipped parameters (fitted on the H200's one-GPU FSDP2 steps of 2026-12-01)."""
    return TrainParams.load(SHIPPED_TRAIN_FILE)


@dataclasses.dataclass(frozen=True, kw_only=True)
class LayerCompute:
    """One decoder layer's step on one rank, seconds (CUDA-event step time), by phase and part."""

    fwd_s: Any
    bwd_s: Any  # backward, with what activation checkpointing re-runs
    parts: dict[str, Any]
    gemm_fwd_s: Any  # the GEMMs async TP can hide the forward collectives behind
    gemm_bwd_s: Any  # backward's, with the recomputed forward's
    async_tp_extra_s: Any
    layer_time: Any  # the step model's LayerTime of the TP-sharded layer (MoE: its MoELayerTime), before adjustments

    @property
    def step_s(self) -> Any:
        return self.fwd_s + self.bwd_s


def _scale(cfg: TrainConfig, name: str) -> float:
    """How much of a kernel of the whole-sequence layer one TP rank runs, and whether it runs at all."""
    tp, fp8_tp = cfg.tp, cfg.recipe.name == "tensorwise"
    if cfg.float8_all_gather and ".weight." in name:
        return 0.0  # the weight arrives in float8 from the all-gather
    if tp > 1 and name in _SP_KERNELS:
        return 1.0 / tp
    if tp > 1 and fp8_tp:
        if name.startswith(_COLWISE) and ".input." in name:
            return 1.0 / tp
        if name.startswith(_ROWWISE) and ".grad_output." in name:
            return 1.0 / tp
    return 1.0


def _layer_opts(cfg: TrainConfig, time_model: Any) -> dict[str, Any]:
    return dict(
        gpu=cfg.gpu,
        seq_len=cfg.seq_len,
        batch=cfg.batch_per_gpu,
        recipe=cfg.recipe,
        convert=cfg.converted if cfg.recipe.name != "bf16" else None,
        ac=cfg.ac,
        time_model=time_model,
        mix_order_norm_bwd=cfg.mix_order_norm_bwd,
    )


def _moe_layer_compute(cfg: TrainConfig, time_model: Any, network: Any) -> LayerCompute:
    """One MoE layer on one GPU (module doc): the attention half's kernels (float8 all-gather drops its weight
    casts), then the expert block and the all-to-all, serially."""
    from ..step import layer_time

    g = cfg.ep_group
    moe_kw = dict(ep=cfg.ep, gpus_per_node=g.per_node if g is not None else None, network=network)
    lt = layer_time(cfg.sizes.name, **_layer_opts(cfg, time_model), **moe_kw)
    att = _adjusted(cfg, lt.attention)
    blk, a2a = lt.block, lt.all_to_all_s / 2  # dispatch + combine once in each phase
    parts = {**att["parts"], "experts": blk.total_s, "all_to_all": lt.all_to_all_s}
    return LayerCompute(
        fwd_s=att["fwd"] + blk.fwd_s + a2a,
        bwd_s=att["bwd"] + blk.bwd_s + a2a,
        parts=parts,
        gemm_fwd_s=att["gemm_fwd"],
        gemm_bwd_s=att["gemm_bwd"],
        async_tp_extra_s=0,
        layer_time=lt,
    )


def dense_layer_compute(cfg: TrainConfig, *, time_model: Any = None) -> LayerCompute | None:
    """One of an MoE model's dense layers (``layer_time(..., dense_layer=True)``, adjusted as a dense layer);
    ``None`` for a dense model or an MoE model without dense layers."""
    from ..step import layer_time

    if not cfg.sizes.is_moe or not cfg.sizes.dense_layers:
        return None
    opts = {**_layer_opts(cfg, time_model), "convert": cfg.dense_converted or "none"}
    lt = layer_time(cfg.sizes.name, **opts, dense_layer=True)
    att = _adjusted(cfg, lt)
    return LayerCompute(
        fwd_s=att["fwd"],
        bwd_s=att["bwd"],
        parts=att["parts"],
        gemm_fwd_s=att["gemm_fwd"],
        gemm_bwd_s=att["gemm_bwd"],
        async_tp_extra_s=0,
        layer_time=lt,
    )


def mean_layer_compute(cfg: TrainConfig, moe: LayerCompute, dense: LayerCompute | None) -> LayerCompute:
    """The average decoder layer of an MoE model with dense layers (``moe_layers`` of ``moe``, the rest of
    ``dense``), which the FSDP overlap formula of :mod:`perfmodel.train.comm` takes as its layer; ``moe`` itself when
    there are no dense layers."""
    if dense is None:
        return moe
    a, b = cfg.sizes.moe_layers / cfg.sizes.layers, cfg.sizes.dense_layers / cfg.sizes.layers
    parts = {k: a * moe.parts.get(k, 0) + b * dense.parts.get(k, 0) for k in {**moe.parts, **dense.parts}}
    return LayerCompute(
        fwd_s=a * moe.fwd_s + b * dense.fwd_s,
        bwd_s=a * moe.bwd_s + b * dense.bwd_s,
        parts=parts,
        gemm_fwd_s=a * moe.gemm_fwd_s + b * dense.gemm_fwd_s,
        gemm_bwd_s=a * moe.gemm_bwd_s + b * dense.gemm_bwd_s,
        async_tp_extra_s=0,
        layer_time=moe.layer_time,
    )


def _adjusted(cfg: TrainConfig, lt: Any) -> dict[str, Any]:
    """A LayerTime's kernels summed by phase and part after :func:`_scale` (SP, float8 TP plan, float8 all-gather)."""
    fwd: Any = 0
    bwd: Any = 0
    parts: dict[str, Any] = {"gemm": 0, "cast": 0, "attention": 0, "other": 0}
    gemm = {"fwd": 0, "bwd": 0}
    for k in lt.kernels:
        t = k.step_s * _scale(cfg, k.name)
        if k.phase == "fwd":
            fwd = fwd + t
        else:
            bwd = bwd + t
        parts[k.part] = parts[k.part] + t
        if k.part == "gemm":
            key = "fwd" if k.phase == "fwd" else "bwd"  # recomputed GEMMs run during backward
            gemm[key] = gemm[key] + t
    return {"fwd": fwd, "bwd": bwd, "parts": parts, "gemm_fwd": gemm["fwd"], "gemm_bwd": gemm["bwd"]}


def layer_compute(cfg: TrainConfig, *, time_model: Any = None, network: Any = None) -> LayerCompute:
    """One TP rank's decoder-layer step, adjusted for sequence parallelism, the float8 TP plan, float8
    all-gather and async TP (module doc). An MoE model: its MoE layer (``network``: the EP all-to-all's
    inter-node network)."""
    from .. import float8
    from ..step import layer_time

    if cfg.sizes.is_moe:
        return _moe_layer_compute(cfg, time_model, network)
    lay = cfg.sharded_layer
    lt = layer_time(lay, **_layer_opts(cfg, time_model))
    adj = _adjusted(cfg, lt)
    fwd, bwd, parts = adj["fwd"], adj["bwd"], adj["parts"]
    gemm = {"fwd": adj["gemm_fwd"], "bwd": adj["gemm_bwd"]}
    extra: Any = 0
    if cfg.async_tp:
        # each TP GEMM decomposed into tp chunks of tokens/tp rows (torch's micro-pipelined async TP)
        T, tp = cfg.tokens_per_rank, cfg.tp
        for lin in lay.linears():
            rec = cfg.recipe if lin.name in cfg.converted else None
            whole = float8.linear_time(T, lin.in_features, lin.out_features, rec, cfg.gpu, time_model=time_model).gemm_s
            chunk = float8.linear_time(T / tp, lin.in_features, lin.out_features, rec, cfg.gpu, time_model=time_model)
            kind = "bf16_tensor_core" if rec is None else "fp8_tensor_core"
            extra = extra + (tp * chunk.gemm_s - whole) * lt.step_factors[kind]  # this step's factor of its kind
        extra = (extra + abs(extra)) / 2  # never a gain
        parts["gemm"] = parts["gemm"] + extra
        bwd = bwd + extra * 2 / 3  # two of a Linear's three GEMMs run in backward
        fwd = fwd + extra / 3
    return LayerCompute(
        fwd_s=fwd,
        bwd_s=bwd,
        parts=parts,
        gemm_fwd_s=gemm["fwd"],
        gemm_bwd_s=gemm["bwd"],
        async_tp_extra_s=extra,
        layer_time=lt,
    )


def other_compute(cfg: TrainConfig, *, time_model: Any = None) -> dict[str, Any]:
    """Seconds of the output layer (bf16), the loss and the embedding's gradient on one rank."""
    from .. import float8
    from ..models.registry import time_model as resolve_time_model

    V, h, tp, T = cfg.sizes.vocab, cfg.sizes.layer.hidden, cfg.tp, cfg.tokens_per_rank
    if V == 0:
        return {"output": 0, "loss": 0, "embedding": 0}
    tm = resolve_time_model(cfg.gpu, time_model)
    out = float8.linear_time(T, h, V // tp, None, cfg.gpu, time_model=time_model).total_s
    loss = tm.memory_kernel_time_s(T * (V // tp) * LOSS_BYTES_PER_LOGIT, gpu=cfg.gpu)
    emb = tm.memory_kernel_time_s(cfg.sizes.embedding_params // tp * 2, gpu=cfg.gpu)
    return {"output": out, "loss": loss, "embedding": emb}


def overhead_bytes(cfg: TrainConfig) -> float:
    """HBM bytes one rank moves per step for the optimizer and FSDP2's copies, priced at the fitted fraction of the
    HBM bandwidth (module doc; float8 all-gather's shard casts and scales are not in it:
    :func:`perfmodel.train.fp8_gather.float8_gather_cost`)."""
    P = cfg.sizes.total_params
    full = P / cfg.tp
    if cfg.sizes.is_moe:  # a rank gathers its experts / ep experts of each MoE layer (and everything else)
        full = P - cfg.sizes.moe_layers * cfg.sizes.expert_params * (1 - 1 / cfg.ep)
    shard = full / cfg.dp_shard
    fp8 = cfg.float8_all_gather
    lin = cfg.sizes.layers * cfg.fp8_gathered_params / cfg.tp  # what float8 all-gather gathers in fp8
    copy_out = 4 * full if not fp8 else 4 * (full - lin) + 2 * lin
    copy_in = 6 * shard if not fp8 else 6 * (shard - lin / cfg.dp_shard)  # float8 weights: cast apart (fp8_gather)
    return 28 * shard + 8 * shard + 2 * copy_in + 2 * copy_out + 6 * full


def memory_bytes(cfg: TrainConfig) -> dict[str, Any]:
    """Peak allocated memory of one rank by part at its peak moment, bytes (:func:`perfmodel.train.memory.peak_memory`:
    FSDP2 with fp32 masters, eager or, with ``cfg.compile``, under torch.compile; checked on H200 single-GPU steps,
    docs/train.md "Memory")."""
    from .memory import peak_memory

    shards = dict(tp=cfg.tp, dp_shard=cfg.dp_shard, ep=cfg.ep)
    # the decoder Linears in float8 (an MoE model's are not priced here: its memory is an estimate, no MoE step ran)
    f8 = cfg.converted if cfg.recipe.name != "bf16" and not cfg.sizes.is_moe else ()
    out = peak_memory(
        cfg.sizes, tokens=cfg.tokens_per_rank, ac=cfg.ac, compile=cfg.compile, float8_linears=f8, **shards
    )
    return out["parts"]
