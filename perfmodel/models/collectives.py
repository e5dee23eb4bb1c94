"""Inter-node networks, and what NCCL's all-gather, reduce-scatter and all-reduce cost on a GPU's fabric.

**Size convention** (NCCL-tests' ``size``): ``nbytes`` is the full, unsharded tensor: the *output* of an
all-gather, the *input* of a reduce-scatter, the buffer of an all-reduce. Each rank holds ``nbytes / n``
before an all-gather and after a reduce-scatter.

**Bus bandwidth** (nccl-tests doc/PERFORMANCE.md, https://github.com/NVIDIA/nccl-tests/blob/
a0b82b2260cf5152b9f8c061bbf7eaf0ba096432/doc/PERFORMANCE.md): a ring over ``n`` ranks moves
``nbytes · (n-1)/n`` through every rank's link for an all-gather or a reduce-scatter and
``nbytes · 2(n-1)/n`` for an all-reduce, so with a per-rank link of ``B`` bytes/s::

    time_s = latency_s + nbytes · factor / bus_bw         factor = (n-1)/n  or  2(n-1)/n
    busbw  = nbytes · factor / time_s                     (what nccl-tests prints)

**Which bandwidth** (per GPU, one direction, B/s). The group of ``n`` GPUs has ``local`` of them on each
node (``gpus_per_node``; a node is the NVLink domain where one spans nodes, as GB200 NVL72):

* one node: the fabric, ``gpu.interconnect.bw_bytes_per_s × efficiency`` (``mesh``: a group of ``k`` GPUs
  uses its ``k-1`` links, ``min(bw, (k-1)·peer_bw)``; ``bridge``: beyond the bridged pair traffic crosses PCIe).
* several nodes, one NIC per GPU, rail-optimised (the DGX/HGX design): NCCL runs one ring per channel
  and lays each ring out so that it leaves a node through a different GPU's NIC. Every GPU still sends
  ``nbytes · factor`` in total, mostly over NVLink; the ring's network hop, per node and direction, is
  spread over the ``local`` NICs the group has there. Hence the per-rank bottleneck::

      bus_bw = min(fabric_bw × eff, local × network.bw_bytes_per_s × network_efficiency)

  E.g. 8 H100 per node on 8 × 400 Gb/s: min(450 × 0.822, 8 × 50 × 0.94) GB/s = 370 GB/s, the NVLink side;
  a data-parallel group with one GPU per node (``local = 1``) gets one NIC: 47 GB/s.
* NVLink SHARP: on NVSwitch systems of Hopper and later, NCCL runs a single-node all-reduce with NVLS
  by default (``NCCL_NVLS_ENABLE`` defaults to 2, on where multicast is supported: NCCL src/transport/nvls.cc),
  whose busbw exceeds the link rate (~480 GB/s on 8 H100: nccl-tests issue #212). Modelled as its own
  efficiency over the link (``CollectiveParams.nvls_all_reduce_efficiency``; ``None``: ring, as with
  ``NCCL_NVLS_ENABLE=0``). Multi-node all-reduce stays a ring.

**Latency** (NCCL's own cost model, src/graph/tuning.cc, Simple protocol, ring): a base latency plus one
step latency per ring step, ``n-1`` steps for all-gather / reduce-scatter and ``2(n-1)`` for all-reduce, of
which ``nodes-1`` (``2(nodes-1)``) cross the network at ``network.latency_s``; NVLS: one fixed latency.

**Scope.** A ring-only, Simple-protocol model for large messages. NCCL picks LL/LL128 (lower latency)
below a few MB and tree / NVLS-tree all-reduce on two nodes; there it is faster than this model says.
The efficiencies are *estimates* from published nccl-tests figures; a disjoint set of published figures
validates them (``benchmarks/published/nccl_collectives.json``, docs/network.md).
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import numpy as np

from .._backend import check_nonnegative, check_size, is_symbolic, namespace, short_repr
from ..errors import InvalidParallelismError, InvalidShapeError, choices_message
from ..specs.gpu import GPULike, get_gpu
from ..specs.network import (
    ALIASES,
    NETWORKS,
    NO_NETWORK,
    Network,
    NetworkLike,
    default_network,
    get_network,
    list_networks,
)
from ..specs.spec import GPUSpec

__all__ = [
    "ALIASES",
    "DEFAULT_COLLECTIVE_PARAMS",
    "NETWORKS",
    "NO_NETWORK",
    "OPS",
    "CollectiveParams",
    "Network",
    "NetworkLike",
    "bus_bandwidth_bytes_per_s",
    "collective_time_s",
    "default_network",
    "get_network",
    "list_networks",
]

#: The collectives priced here (torch's ``all_gather_into_tensor`` / ``reduce_scatter_tensor`` and NCCL's
#: ``AllGather`` ... spellings are accepted too).
OPS: tuple[str, ...] = ("all_gather", "reduce_scatter", "all_reduce")
#: ring traffic factor: bytes through each rank's link per byte of ``nbytes`` (nccl-tests PERFORMANCE.md)
_FACTOR = {
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_reduce": lambda n: 2 * (n - 1) / n,
}
_OP_ALIASES = {
    "allgather": "all_gather",
    "all_gather_into_tensor": "all_gather",
    "reducescatter": "reduce_scatter",
    "reduce_scatter_tensor": "reduce_scatter",
    "allreduce": "all_reduce",
}


# ---------------------------------------------------------------------------------------------------------
# the cost model's parameters
# ---------------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True, kw_only=True)
class CollectiveParams:
    """What NCCL reaches: fractions of the link bandwidth per fabric kind, and NCCL's latencies.

    Attributes:
        nvswitch_efficiency, mesh_efficiency, bridge_efficiency, pcie_efficiency: busbw of a large ring
            collective over the link's one-direction bandwidth, per ``Interconnect.kind`` (0-1].
        network_efficiency: busbw per NIC over the NIC's rate, large ring collectives across nodes (0-1].
        nvls_all_reduce_efficiency: busbw of a single-node NVLink SHARP all-reduce over the NVLink rate
            (above 1: the switch reduces); ``None``: NVLS off (``NCCL_NVLS_ENABLE=0``), all-reduce is a ring.
        base_latency_s: fixed cost of one ring collective, s.
        nvlink_step_latency_s, pcie_step_latency_s: cost of one ring step over NVLink (also Infinity
            Fabric) or PCIe, s. The network's step is :attr:`Network.latency_s`.
        nvls_latency_s: fixed cost of one NVLS all-reduce, s.
        source: where these come from ("estimated: ...", "measured: <script>, <GPU>, <date>").
    """

    nvswitch_efficiency: float
    mesh_efficiency: float
    bridge_efficiency: float
    pcie_efficiency: float
    network_efficiency: float
    nvls_all_reduce_efficiency: float | None
    base_latency_s: float
    nvlink_step_latency_s: float
    pcie_step_latency_s: float
    nvls_latency_s: float
    source: str

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "source" or (f.name == "nvls_all_reduce_efficiency" and value is None):
                continue
            real = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            if f.name.endswith("_latency_s"):
                ok, valid = real and value >= 0, "a finite number of seconds >= 0"
            elif f.name == "nvls_all_reduce_efficiency":
                ok, valid = real and 0 < value <= 2, "in (0, 2] (the switch reduces, so above 1 is possible) or None"
            else:
                ok, valid = real and 0 < value <= 1, "in (0, 1]"
            if not ok:
                raise InvalidParallelismError(f"CollectiveParams.{f.name} must be {valid}, got {value!r}")
        if not (isinstance(self.source, str) and self.source.strip()):
            raise InvalidParallelismError("CollectiveParams.source is required: say where the numbers come from")


_PUB = "benchmarks/published/nccl_collectives.json"
_TUNING = "NCCL src/graph/tuning.cc @5067397c (ring, Simple protocol)"
#: Estimated from published figures (the "estimate" datasets of nccl_collectives.json); never fitted.
DEFAULT_COLLECTIVE_PARAMS = CollectiveParams(
    nvswitch_efficiency=370e9 / 450e9,  # nccl-tests #212, NCCL maintainer: H100 ring busbw ~370 GB/s of 450
    mesh_efficiency=316.82e9 / 448e9,  # Azure ND MI300X v5: RCCL all_reduce busbw 316.82 GB/s at 8 GiB, 7 x 64 GB/s
    bridge_efficiency=370e9 / 450e9,  # copied from nvswitch (same NVLink protocol); no bridge figure used
    pcie_efficiency=370e9 / 450e9,  # copied from nvswitch; no PCIe figure used
    network_efficiency=47e9 / 50e9,  # nccl-tests #290, NCCL maintainer: "46-48GB/s per NIC" at NDR 400 Gb/s
    nvls_all_reduce_efficiency=478.87e9 / 450e9,  # Azure ND H100 v5: NVLS all_reduce busbw 478.87 GB/s at 8 GiB
    base_latency_s=8.4e-6,  # tuning.cc baseLatencies[RING][SIMPLE]
    nvlink_step_latency_s=3.4e-6,  # tuning.cc hwLatencies[NVLINK][RING][SIMPLE]
    pcie_step_latency_s=5.7e-6,  # tuning.cc hwLatencies[PCI][RING][SIMPLE]
    nvls_latency_s=25e-6,  # tuning.cc hwLatencies[NVLINK][NVLS][SIMPLE], the whole NVLS latency
    source=f"estimated: efficiencies from published nccl-tests figures (the 'estimate' datasets of {_PUB}); "
    f"latencies from {_TUNING}; busbw error on the disjoint 'validation' datasets at >= 1 GiB: median 9.6 %, "
    "p90 26 %, max 48 % (256 MiB-1 GiB: median 18 %, max 58 %; mostly optimistic; docs/network.md)",
)


# ---------------------------------------------------------------------------------------------------------
# the cost model
# ---------------------------------------------------------------------------------------------------------
def _op(op: Any) -> str:
    key = re.sub(r"[\s-]+", "_", op.strip().lower()) if isinstance(op, str) else None
    key = _OP_ALIASES.get(key, key) if key is not None else None
    if key not in OPS:
        raise InvalidParallelismError(choices_message("collective", op, OPS, "torch and NCCL spellings work too."))
    return key


def _any(x: Any) -> bool:
    return bool(np.any(x))


def _nvls(spec: GPUSpec) -> bool:
    """NVLink SHARP needs third-generation NVSwitch and Hopper or later (multicast objects, sm_90+)."""
    ic = spec.interconnect
    return (
        spec.vendor == "NVIDIA"
        and ic is not None
        and ic.kind == "nvswitch"
        and spec.arch.isdigit()
        and int(spec.arch) >= 90
    )


def _even(n: Any, per: Any, what: str, fix: str) -> None:
    bad = (n % per) != 0
    if _any(bad):
        first = np.asarray(n).reshape(-1)[np.flatnonzero(np.reshape(bad, -1))[0]]
        raise InvalidParallelismError(
            f"group_size={int(first)} cannot be spread evenly over {what}: the model needs the same number of "
            f"the group's GPUs on each; {fix}"
        )


def _plan(op: str, n: Any, gpus_per_node: Any, spec: GPUSpec, network: NetworkLike | None, p: CollectiveParams):
    """(latency_s, bus_bw_bytes_per_s) of a ring over ``n`` ranks (python floats or numpy arrays)."""
    ic = spec.interconnect
    if ic is None:
        raise InvalidParallelismError(
            f"{spec.name} has no known interconnect (GPUSpec.interconnect is None), so a collective over "
            f"{int(np.max(n))} GPUs cannot be priced; pass a spec with one: dataclasses.replace(gpu, "
            "interconnect=perfmodel.specs.gpu.Interconnect(kind=..., bw_bytes_per_s=..., gpus_per_node=..., "
            "source=...))"
        )
    xp = namespace(n)
    nvl_domain = (ic.domain_gpus or 0) > ic.gpus_per_node  # an NVLink domain of several nodes (GB200 NVL72)
    unit = ic.domain_gpus if nvl_domain else ic.gpus_per_node
    g = gpus_per_node
    if g > unit:
        raise InvalidParallelismError(
            f"gpus_per_node must be one int from 1 to {unit} (the GPUs of one "
            f"{'NVLink domain' if nvl_domain else 'node'} of {spec.name}) that the group has on each node, "
            f"got {short_repr(gpus_per_node)}"
        )
    local = xp.min(n, g)
    _even(n, local, f"nodes with {g} of its GPUs", "pass a group_size that is a multiple of gpus_per_node")
    per_unit = xp.min(xp.min(n, local * (unit // ic.gpus_per_node if nvl_domain else 1)), unit)
    _even(n, per_unit, f"NVLink domains of {unit} GPUs of {spec.name}", f"use whole domains ({unit} GPUs each)")
    units = n / per_unit  # nodes (or NVLink domains) the group spans
    k = 2 if op == "all_reduce" else 1
    steps = k * (n - 1)
    # the fabric inside one node/domain, for the `per_unit` GPUs of the group there
    nvlink, pcie_lat = p.nvlink_step_latency_s, p.pcie_step_latency_s
    if ic.kind == "nvswitch":
        bw, lat = ic.bw_bytes_per_s * p.nvswitch_efficiency, nvlink
    elif ic.kind == "mesh":
        links = xp.max(per_unit - 1, 1)
        bw, lat = (
            xp.min(ic.bw_bytes_per_s, links * (ic.peer_bw_bytes_per_s or ic.bw_bytes_per_s)) * p.mesh_efficiency,
            nvlink,
        )
    elif ic.kind == "bridge":
        inside = per_unit <= ic.fabric_gpus
        if ic.pcie_bw_bytes_per_s is None and not bool(np.all(inside)):
            raise InvalidParallelismError(
                f"{spec.name}: a group beyond its {ic.fabric_gpus} bridged GPUs crosses PCIe, but the interconnect "
                "has no pcie_bw_bytes_per_s; dataclasses.replace(gpu.interconnect, pcie_bw_bytes_per_s=...)"
            )
        pcie_bw = (ic.pcie_bw_bytes_per_s or 0.0) * p.pcie_efficiency
        bw = xp.where(inside, ic.bw_bytes_per_s * p.bridge_efficiency, pcie_bw)
        lat = xp.where(inside, nvlink, pcie_lat)
    else:  # pcie
        bw, lat = ic.bw_bytes_per_s * p.pcie_efficiency, pcie_lat
    one_bw, one_lat = bw, p.base_latency_s + steps * lat
    if op == "all_reduce" and p.nvls_all_reduce_efficiency is not None and _nvls(spec):
        one_bw, one_lat = ic.bw_bytes_per_s * p.nvls_all_reduce_efficiency, p.nvls_latency_s
    if not _any(units > 1):
        return one_lat, one_bw
    net = get_network(network, gpu=spec)
    if not net.exists:
        raise InvalidParallelismError(
            f"a group of {int(np.max(n))} GPUs with {g} per node spans nodes of {spec.name}, but network "
            f"{net.name!r} has no inter-node fabric; pass network= (one of {', '.join(NETWORKS)}, or a Network)"
        )
    net_bw = per_unit * net.bw_bytes_per_s * p.network_efficiency  # one NIC per GPU, one ring hop per NIC
    inter_steps = k * (units - 1)
    many_lat = p.base_latency_s + (steps - inter_steps) * lat + inter_steps * net.latency_s
    multi = units > 1
    return xp.where(multi, many_lat, one_lat), xp.where(multi, xp.min(bw, net_bw), one_bw)


def _prepare(op, nbytes, group_size, gpus_per_node, gpu, network, params):
    key = _op(op)
    nbytes = check_nonnegative("nbytes", nbytes)
    if is_symbolic(group_size):
        raise InvalidShapeError(
            f"group_size must be an int or an array of ints, not symbolic: {short_repr(group_size)}"
        )
    n = check_size("group_size", group_size)
    n = n if isinstance(n, np.ndarray) else int(n)
    g = check_size("gpus_per_node", gpus_per_node)
    if isinstance(g, np.ndarray):
        raise InvalidShapeError(f"gpus_per_node must be one int, got an array {short_repr(gpus_per_node)}")
    gpus_per_node = int(g)
    if is_symbolic(nbytes) and isinstance(n, np.ndarray):
        raise InvalidShapeError("a symbolic nbytes needs a single group_size (an int), not an array")
    spec = get_gpu(gpu)
    p = DEFAULT_COLLECTIVE_PARAMS if params is None else params
    if not isinstance(p, CollectiveParams):
        raise InvalidParallelismError(f"params must be a CollectiveParams or None, got {type(p).__name__}")
    factor = _FACTOR[key](n)
    if not _any(n > 1):
        return nbytes, n, factor, None, None
    lat, bw = _plan(key, n, gpus_per_node, spec, network, p)
    return nbytes, n, factor, lat, bw


def collective_time_s(
    op: str,
    nbytes: Any,
    *,
    group_size: Any,
    gpus_per_node: int,
    gpu: GPULike,
    network: NetworkLike | None = None,
    params: CollectiveParams | None = None,
) -> Any:
    """Seconds one NCCL ``op`` of ``nbytes`` takes over ``group_size`` GPUs (module doc for the model).

    ``time_s = latency_s + nbytes · factor / bus_bw``, factor ``(n-1)/n`` (all-gather, reduce-scatter) or
    ``2(n-1)/n`` (all-reduce); 0 for ``group_size`` 1.

    Args:
        op: ``"all_gather"``, ``"reduce_scatter"`` or ``"all_reduce"`` (torch's ``all_gather_into_tensor``,
            ``reduce_scatter_tensor`` and NCCL's ``AllGather`` ... are accepted).
        nbytes: the full, unsharded tensor in bytes (all-gather output, reduce-scatter input, all-reduce
            buffer); ``>= 0``; number, numpy array or sympy expression.
        group_size: ranks in the group; an int or a numpy array of ints (broadcast against ``nbytes``).
        gpus_per_node: how many of the group's GPUs share a node (HGX: up to 8; a data-parallel group
            beside 8-way TP inside nodes: 1). ``group_size`` must be a multiple of it when larger.
        gpu: a name or a :class:`GPUSpec` with an ``interconnect``.
        network: a preset name, a :class:`Network`, or ``None`` (``default_network(gpu)``); used only
            when the group spans nodes.
        params: efficiencies and latencies; ``None``: :data:`DEFAULT_COLLECTIVE_PARAMS` (estimated).

    Raises:
        InvalidParallelismError: unknown ``op`` (lists the valid ones); a multi-GPU group on a GPU without
            an interconnect; ``gpus_per_node`` above the node; a group spread unevenly; a multi-node group
            without a network.
        InvalidShapeError: ``nbytes`` negative, NaN or not a number; ``group_size`` < 1 or not an integer.
    """
    nbytes, n, factor, lat, bw = _prepare(op, nbytes, group_size, gpus_per_node, gpu, network, params)
    if lat is None:
        return nbytes * 0.0
    t = lat + nbytes * factor / bw
    if isinstance(n, np.ndarray):
        return np.where(n > 1, t, 0.0)
    return t


def bus_bandwidth_bytes_per_s(
    op: str,
    nbytes: Any,
    *,
    group_size: Any,
    gpus_per_node: int,
    gpu: GPULike,
    network: NetworkLike | None = None,
    params: CollectiveParams | None = None,
) -> Any:
    """The busbw nccl-tests would print for this collective, B/s: ``nbytes · factor / collective_time_s``
    (arguments as :func:`collective_time_s`; 0 for ``group_size`` 1). Compare with your nccl-tests run's
    ``busbw`` column (GB/s = 1e9 B/s) at the same ``size`` and rank count."""
    nbytes, n, factor, lat, bw = _prepare(op, nbytes, group_size, gpus_per_node, gpu, network, params)
    if lat is None:
        return nbytes * 0.0
    moved = nbytes * factor
    t = lat + moved / bw
    if isinstance(n, np.ndarray):
        return np.where(n > 1, moved / np.where(n > 1, t, 1.0), 0.0)
    return moved / t
