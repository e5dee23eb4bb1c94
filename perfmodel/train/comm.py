"""The collectives of one training step and how much of them the compute hides (public face: :mod:`perfmodel.train`).

Per decoder layer, as torchtitan runs FSDP2 (``reshard_after_forward``; the last layer stays gathered) and TP
with sequence parallelism; ``nbytes`` is NCCL's size (the gathered output of an all-gather, the input of a
reduce-scatter)::

    FSDP   all-gather      (Linear weights / tp) x 2 B (float8 all-gather: 1 B) + norm weights x 2 B
                           L times in forward, L - 1 in backward
           reduce-scatter  (layer params / tp) x 4 B (fp32 gradients, torchtitan's default reduce dtype)
           all-reduce      HSDP only: (layer params / tp / dp_shard) x 4 B across the replicas
    TP     all-gather      tokens x hidden x 2 B (tensorwise float8 TP plan: 1 B), 2 per layer forward
           reduce-scatter  tokens x hidden x 2 B, 2 per layer forward; backward mirrors both (bf16);
                           full activation checkpointing re-runs the forward's four
    root   embedding + output layer: gathered once before the forward, reduced once after the backward

Overlap: FSDP2 prefetches the next layer's all-gather while a layer computes, and reduce-scatters the
previous layer's gradients during the next backward; whatever does not fit under the layer's compute is
exposed::

    exposed_fsdp = AG + (L-1)·relu(AG - fwd_l) + (L-1)·relu(AG + RS + AR - bwd_l) + RS + AR + root
    exposed_tp   = every TP collective (vanilla TP: they sit between the GEMMs that need them)
                 = relu(TP_fwd - GEMM_fwd) + relu(TP_bwd - GEMM_bwd)   with async TP

MoE models (``tp = 1``, ``ep`` out of the ``dp_shard`` ranks): the non-expert weights are gathered across the
``dp_shard`` ranks, each MoE layer's ``experts / ep`` experts across the ``dp_shard / ep`` ranks that hold the same
experts (group ``expert_fsdp``); the EP all-to-all is part of the layer's compute (added serially, an estimate).

Communication kernels also take SMs from the GEMMs they overlap; that slowdown is not modeled (no
multi-GPU measurement of ours yet).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .compute import LayerCompute
from .config import Groups, TrainConfig

__all__ = ["CommCall", "CommPlan", "comm_plan"]


def _relu(x: Any) -> Any:
    return (x + abs(x)) / 2  # max(x, 0) on numbers, numpy arrays and sympy alike


@dataclasses.dataclass(frozen=True, kw_only=True)
class CommCall:
    """One kind of collective of the step: what it moves, how often, and its time."""

    name: str
    op: str
    group: str  # "fsdp", "expert_fsdp", "tp" or "replicate"
    group_size: int
    nbytes: Any  # NCCL size of one call, bytes
    calls: int  # per step
    time_s: Any  # one call

    @property
    def total_s(self) -> Any:
        return self.time_s * self.calls

    def to_dict(self) -> dict[str, Any]:
        from ..step.layer import _plain

        return {
            "name": self.name,
            "op": self.op,
            "group": self.group,
            "group_size": self.group_size,
            "nbytes": _plain(self.nbytes),
            "calls": self.calls,
            "time_s": _plain(self.time_s),
            "total_s": _plain(self.total_s),
        }


@dataclasses.dataclass(frozen=True, kw_only=True)
class CommPlan:
    calls: tuple[CommCall, ...]
    exposed_fsdp_s: Any
    exposed_tp_s: Any

    @property
    def total_s(self) -> Any:
        return sum((c.total_s for c in self.calls), 0)

    @property
    def exposed_s(self) -> Any:
        return self.exposed_fsdp_s + self.exposed_tp_s

    @property
    def overlapped_s(self) -> Any:
        return self.total_s - self.exposed_s


def _moe_fsdp_calls(cfg: TrainConfig, call: Any) -> tuple[list[CommCall], Any, Any]:
    """FSDP2's collectives of an MoE model (``tp = 1``; module doc): per layer, the non-expert weights (attention,
    router, shared experts, norms; with dense layers, the mean over the model's layers) across the ``dp_shard``
    ranks, and each MoE layer's ``experts / ep`` experts across the ``dp_shard / ep`` ranks that hold them (none when
    that group is one GPU). Returns the calls and one layer's all-gather and reduce-scatter seconds (the mean
    layer's, for the overlap formula)."""
    s, L = cfg.sizes, cfg.sizes.layers
    f8 = cfg.fp8_gathered_params
    rest = (s.moe_layers * (s.layer_params - s.expert_params) + s.dense_layers * s.dense_layer_params) / L
    mean = " (mean over MoE and dense layers)" if s.dense_layers else ""
    ag_c = call(f"non-expert weights{mean}", "all_gather", "fsdp", cfg.fsdp, (rest - f8) * 2 + f8, 2 * L - 1)
    rs_c = call(f"non-expert gradients{mean}", "reduce_scatter", "fsdp", cfg.fsdp, rest * 4, L)
    out, ag, rs = [ag_c, rs_c], ag_c.time_s, rs_c.time_s
    g = cfg.expert_fsdp
    if g is not None and g.size > 1:
        local = s.expert_params / cfg.ep
        n = s.moe_layers
        e_ag = call(f"expert weights ({s.moe.experts // cfg.ep} experts)", "all_gather", "expert_fsdp", g,
                    local * 2, 2 * n - 1)  # fmt: skip
        e_rs = call("expert gradients", "reduce_scatter", "expert_fsdp", g, local * 4, n)
        out += [e_ag, e_rs]
        ag, rs = ag + e_ag.total_s / (2 * L - 1), rs + e_rs.total_s / L
    return out, ag, rs


def comm_plan(cfg: TrainConfig, layer: LayerCompute, *, network: Any) -> CommPlan:
    """Every collective of one step on one rank, and the exposed part (module doc)."""

    def call(name: str, op: str, group: str, g: Groups, nbytes: Any, calls: int) -> CommCall:
        from ..models.collectives import collective_time_s

        t = collective_time_s(op, nbytes, group_size=g.size, gpus_per_node=g.per_node, gpu=cfg.gpu, network=network)
        return CommCall(name=name, op=op, group=group, group_size=g.size, nbytes=nbytes, calls=calls, time_s=t)

    L = cfg.sizes.layers
    calls, ag, rs = _fsdp_calls(cfg, call)
    hsdp, ar = _hsdp_calls(cfg, call)
    tp_calls, tp_fwd, tp_bwd = _tp_calls(cfg, layer, call)
    calls += hsdp + tp_calls
    fwd_w = layer.fwd_s + tp_fwd
    bwd_w = layer.bwd_s + tp_bwd
    exposed_fsdp: Any = 0
    if cfg.dp_shard > 1 or cfg.dp_replicate > 1:
        exposed_fsdp = ag + (L - 1) * _relu(ag - fwd_w) + (L - 1) * _relu(ag + rs + ar - bwd_w) + rs + ar
        exposed_fsdp = exposed_fsdp + sum((c.total_s for c in calls if c.name.startswith("embedding")), 0)
    exposed_tp = L * (tp_fwd + tp_bwd) + sum((c.total_s for c in calls if c.name.startswith("output-layer")), 0)
    return CommPlan(calls=tuple(calls), exposed_fsdp_s=exposed_fsdp, exposed_tp_s=exposed_tp)


def _fsdp_calls(cfg: TrainConfig, call: Any) -> tuple[list[CommCall], Any, Any]:
    """FSDP2's collectives across the ``dp_shard`` ranks (none for one rank): each layer's weights and gradients
    (MoE models: :func:`_moe_fsdp_calls`), then the embedding and output layer's. Returns the calls and one layer's
    all-gather and reduce-scatter seconds (0 without FSDP)."""
    s, tp, L = cfg.sizes, cfg.tp, cfg.sizes.layers
    calls: list[CommCall] = []
    ag = rs = 0
    if cfg.dp_shard > 1 and s.is_moe:
        ex_calls, ag, rs = _moe_fsdp_calls(cfg, call)
        calls += ex_calls
    elif cfg.dp_shard > 1:
        f8 = cfg.fp8_gathered_params  # float8 all-gather: those weights travel in 1 byte, the rest in bf16
        ag_c = call(
            "layer weights",
            "all_gather",
            "fsdp",
            cfg.fsdp,
            (f8 + (s.layer_linear_params - f8) * 2) / tp + 2 * s.layer.hidden * 2,
            2 * L - 1,
        )
        rs_c = call("layer gradients", "reduce_scatter", "fsdp", cfg.fsdp, s.layer_params / tp * 4, L)
        calls += [ag_c, rs_c]
        ag, rs = ag_c.time_s, rs_c.time_s
    if cfg.dp_shard > 1:
        if s.vocab:
            root = (s.embedding_params + s.output_params) / tp
            calls += [
                call("embedding + output weights", "all_gather", "fsdp", cfg.fsdp, root * 2, 1),
                call("embedding + output gradients", "reduce_scatter", "fsdp", cfg.fsdp, root * 4, 1),
            ]
    return calls, ag, rs


def _hsdp_calls(cfg: TrainConfig, call: Any) -> tuple[list[CommCall], Any]:
    """HSDP's gradient all-reduces across the replicas (none for one replica): each layer's shard (MoE models: the
    mean layer's), then the embedding and output layer's. Returns the calls and one layer's all-reduce seconds."""
    s, tp, L = cfg.sizes, cfg.tp, cfg.sizes.layers
    calls: list[CommCall] = []
    ar: Any = 0
    if cfg.dp_replicate > 1:
        layer_params = s.layer_params if not s.is_moe else (s.non_embedding_params - s.output_params) / L
        ar_c = call(
            "layer gradients (HSDP)",
            "all_reduce",
            "replicate",
            cfg.replicate,
            layer_params / tp / cfg.dp_shard * 4,
            L,
        )
        calls.append(ar_c)
        ar = ar_c.time_s
        if s.vocab:
            root = (s.embedding_params + s.output_params) / tp / cfg.dp_shard
            calls.append(
                call("embedding + output gradients (HSDP)", "all_reduce", "replicate", cfg.replicate, root * 4, 1)
            )
    return calls, ar


def _tp_calls(cfg: TrainConfig, layer: LayerCompute, call: Any) -> tuple[list[CommCall], Any, Any]:
    """Sequence-parallel TP's collectives (none for ``tp = 1``; module doc) and the seconds of them one layer's forward
    and backward expose (all of them with vanilla TP, what its GEMMs do not hide with async TP)."""
    s, tp, L = cfg.sizes, cfg.tp, cfg.sizes.layers
    calls: list[CommCall] = []
    tp_fwd: Any = 0
    tp_bwd: Any = 0
    if tp > 1:
        act = cfg.tokens_per_rank * s.layer.hidden
        # torchao's float8 TP plan gathers a colwise block's input in float8 when its Linears are converted
        tw = cfg.recipe.name == "tensorwise"
        a8 = [1 if tw and set(cols) <= set(cfg.converted) else 2 for cols in (("wq", "wk", "wv"), ("w1", "w3"))]
        redo = 1 if cfg.ac == "full" else 0
        if a8[0] == a8[1]:
            fwd_ags = [
                call("activations (SP all-gather)", "all_gather", "tp", cfg.tp_group, act * a8[0], 2 * L * (1 + redo))
            ]
        else:
            fwd_ags = [
                call(f"activations (SP all-gather, {blk})", "all_gather", "tp", cfg.tp_group, act * b, L * (1 + redo))
                for blk, b in (("attention", a8[0]), ("MLP", a8[1]))
            ]
        fwd_rs = call(
            "activations (SP reduce-scatter)", "reduce_scatter", "tp", cfg.tp_group, act * 2, 2 * L * (1 + redo)
        )
        bwd_rs = call("activation grads (reduce-scatter)", "reduce_scatter", "tp", cfg.tp_group, act * 2, 2 * L)
        bwd_ag = call("activation grads (all-gather)", "all_gather", "tp", cfg.tp_group, act * 2, 2 * L)
        calls += [*fwd_ags, fwd_rs, bwd_rs, bwd_ag]
        per_layer_fwd = sum((c.time_s * (2 if len(fwd_ags) == 1 else 1) for c in fwd_ags), 0) + 2 * fwd_rs.time_s
        per_layer_bwd = 2 * (bwd_ag.time_s + bwd_rs.time_s) + redo * per_layer_fwd
        if s.vocab:  # loss parallel: the final norm's output is gathered for the output layer
            calls += [
                call("output-layer input", "all_gather", "tp", cfg.tp_group, act * 2, 1),
                call("output-layer input grad", "reduce_scatter", "tp", cfg.tp_group, act * 2, 1),
            ]
        if cfg.async_tp:
            tp_fwd = _relu(per_layer_fwd - layer.gemm_fwd_s)
            tp_bwd = _relu(per_layer_bwd - layer.gemm_bwd_s)
        else:
            tp_fwd, tp_bwd = per_layer_fwd, per_layer_bwd
    return calls, tp_fwd, tp_bwd
