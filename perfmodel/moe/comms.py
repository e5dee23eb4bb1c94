"""Expert parallelism's all-to-all dispatch and combine, as a labelled estimate from the collective model.

With the routed experts split over ``ep`` GPUs, each MoE layer sends every routed row to the GPU of its expert
(dispatch) and back (combine), in the forward pass and again (their gradients) in the backward pass: four
all-to-alls per layer and step. Per GPU and direction the buffer is ``tokens * top_k * dim * 2`` bytes (bf16 rows;
torchtitan's token dispatcher sends bf16 — an fp8 dispatch, as torchao's mxfp8 expert-parallel path offers, is
not modelled), of which ``(ep - 1) / ep`` leaves the GPU under balanced routing.

Priced with :func:`perfmodel.models.collectives.collective_time_s` as an ``all_gather`` of that buffer: a ring
all-gather moves the same ``nbytes * (n-1)/n`` through each rank's link as an all-to-all of ``nbytes`` per rank.
**Estimate**: NCCL's all-to-all is ``n - 1`` peer sends, not a ring (its latency differs), imbalance makes the
busiest GPU send more, and none of it was measured here.
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any

from ..errors import InvalidParallelismError
from ..models.collectives import collective_time_s
from ..specs.gpu import get_gpu
from .routing import as_moe_shape, check_tokens

__all__ = ["AllToAllTime", "ep_all_to_all"]


@dataclasses.dataclass(frozen=True)
class AllToAllTime:
    """One MoE layer's expert-parallel all-to-alls per step, seconds: ``dispatch_s`` and ``combine_s`` (each one
    call, forward), ``total_s`` (fwd + bwd: 2 x (dispatch + combine)), ``bytes_per_gpu`` (one call's buffer),
    ``provenance`` (a sentence: an estimate, and from what)."""

    dispatch_s: float
    combine_s: float
    total_s: float
    bytes_per_gpu: float
    ep: int
    provenance: str


def ep_all_to_all(
    config_or_preset: Any,
    *,
    tokens: Any,
    ep: int,
    gpu: Any = "H200",
    gpus_per_node: int | None = None,
    network: Any = None,
) -> AllToAllTime:
    """The all-to-all dispatch and combine of one MoE layer with expert parallelism ``ep`` (module doc).

    Args:
        config_or_preset: as :func:`perfmodel.moe.expert_block_time` (dim and top_k are used).
        tokens: tokens per GPU per step.
        ep: expert-parallel degree (GPUs the experts are split over); 1 gives zeros.
        gpus_per_node: the EP group's GPUs per node (default: ``min(ep, the GPU's node size)``).
        network: the inter-node network when the group spans nodes (see :mod:`perfmodel.models.collectives`).

    Raises:
        InvalidParallelismError: ``ep`` not a positive int, or not dividing the experts; what the collective model
            refuses (a group spread unevenly, no network for several nodes).
    """
    m = as_moe_shape(config_or_preset)
    if isinstance(ep, bool) or not isinstance(ep, numbers.Integral) or ep < 1:
        raise InvalidParallelismError(f"ep must be a positive int (the expert-parallel degree), got {ep!r}")
    if m.experts % ep:
        raise InvalidParallelismError(f"ep={ep} does not divide the {m.experts} routed experts of {m.name}")
    spec = get_gpu(gpu)
    node = spec.interconnect.gpus_per_node if spec.interconnect is not None else 1
    per_node = gpus_per_node if gpus_per_node is not None else min(int(ep), node)
    nbytes = float(check_tokens(tokens)) * m.top_k * m.dim * 2.0
    t = float(
        collective_time_s("all_gather", nbytes, group_size=int(ep), gpus_per_node=per_node, gpu=spec, network=network)
    )
    prov = (
        f"estimated: all-to-all of {nbytes / 1e6:.1f} MB per GPU over EP={ep} priced as a ring all-gather by "
        "perfmodel.models.collectives (same bytes per link; NCCL all-to-all latency and routing imbalance not "
        "modelled; not measured)"
    )
    return AllToAllTime(dispatch_s=t, combine_s=t, total_s=4 * t, bytes_per_gpu=nbytes, ep=int(ep), provenance=prov)
