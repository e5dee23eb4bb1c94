"""The inter-node networks: the :class:`Network` class, its sourced presets and their lookup (the collective
cost model is in :mod:`perfmodel.models.collectives`, where every public name of this module is imported from).

Counting rules: bandwidths are **per GPU, one direction**, bytes per second (a 400 Gb/s NIC is
``400e9 / 8`` = 50e9 B/s); a node-total figure is divided by the node's GPUs as arithmetic on the line.
``latency_s`` is what one ring step across the network costs NCCL (software, proxy, NIC and switches),
not the wire latency alone.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Union

from .._backend import short_repr
from ..errors import InvalidParallelismError, UnknownNetworkError, choices_message
from .gpu import GPULike, get_gpu

__all__ = [
    "ALIASES",
    "NETWORKS",
    "NO_NETWORK",
    "Network",
    "NetworkLike",
    "default_network",
    "get_network",
    "list_networks",
]

# NCCL's own cost model (src/graph/tuning.cc, hwLatencies[NET][RING][SIMPLE]): 14 us per inter-node ring step.
_NCCL_TUNING = (
    "NCCL src/graph/tuning.cc at 5067397c2676d5aed50042fc39e5c8ee96eb0027 (2026-06-11), "
    "https://github.com/NVIDIA/nccl/blob/5067397c2676d5aed50042fc39e5c8ee96eb0027/src/graph/tuning.cc"
)
_NET_STEP_LATENCY_S = 14.0e-6  # NCCL's hwLatencies[NET][RING][SIMPLE], the same for every network
_LAT = f"latency: {_NCCL_TUNING}, hwLatencies NET/Ring/Simple 14 us per inter-node step (any network)"
_MLE_NET = (
    "S. Bekman, Machine Learning Engineering, network/README.md inter-node table, "
    "https://github.com/stas00/ml-engineering/blob/744d01e18b79512572f64a6bbd8b5f4a725203a7/network/README.md"
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Network:
    """The inter-node network of a cluster, as one GPU sees it.

    Attributes:
        name: short name, the key in :data:`NETWORKS` for the presets.
        bw_bytes_per_s: inter-node bandwidth per GPU, one direction, B/s (one 400 Gb/s NIC per GPU:
            ``400e9 / 8``); ``None`` only for :data:`NO_NETWORK`.
        latency_s: cost of one ring step across the network as NCCL pays it, s; ``None`` only for
            :data:`NO_NETWORK`.
        nics_per_node: network cards of one node (what the bandwidth figure is made of; informational).
        source: where the figures come from (URL and what the figure is).

    Build your own or vary a preset: ``dataclasses.replace(get_network("ib-ndr"), bw_bytes_per_s=25e9)``.
    """

    name: str
    bw_bytes_per_s: float | None
    latency_s: float | None
    nics_per_node: int | None = None
    source: str

    def __post_init__(self) -> None:
        if not (isinstance(self.name, str) and self.name.strip()):
            raise InvalidParallelismError(f"Network.name must be a non-empty string, got {self.name!r}")
        if (self.bw_bytes_per_s is None) != (self.latency_s is None):
            raise InvalidParallelismError(
                f"Network {self.name!r}: bw_bytes_per_s and latency_s are both None (no inter-node network) "
                f"or both numbers, got {self.bw_bytes_per_s!r} and {self.latency_s!r}"
            )
        for field, low in (("bw_bytes_per_s", "positive"), ("latency_s", "non-negative")):
            value = getattr(self, field)
            if value is None:
                continue
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            if not (ok and (value > 0 if low == "positive" else value >= 0)):
                raise InvalidParallelismError(
                    f"Network {self.name!r}: {field} must be a {low} finite number (SI units), got {value!r}"
                )
        n = self.nics_per_node
        if n is not None and not (isinstance(n, int) and not isinstance(n, bool) and n > 0):
            raise InvalidParallelismError(f"Network {self.name!r}: nics_per_node must be a positive int, got {n!r}")
        if not (isinstance(self.source, str) and self.source.strip()):
            raise InvalidParallelismError(f"Network {self.name!r}: source is required (URL and what the figure is)")

    @property
    def exists(self) -> bool:
        """False for :data:`NO_NETWORK` (single node: no inter-node fabric)."""
        return self.bw_bytes_per_s is not None


NO_NETWORK = Network(
    name="none",
    bw_bytes_per_s=None,
    latency_s=None,
    source="no inter-node network: every collective must stay inside one node (or one NVLink domain)",
)

_PRESETS = (
    Network(
        name="ib-ndr",
        bw_bytes_per_s=400e9 / 8,  # one ConnectX-7 at NDR 400 Gb/s per GPU
        latency_s=_NET_STEP_LATENCY_S,
        nics_per_node=8,
        source="NVIDIA DGX H100/H200 user guide, https://docs.nvidia.com/dgx/dgxh100-user-guide/"
        "introduction-to-dgxh100.html: eight single-port ConnectX-7 at 400 Gb/s InfiniBand NDR for the compute "
        f"fabric, one per GPU (as tabulated in {_MLE_NET}: 'NVIDIA DGX H100 NDR, 8 x 400 Gbps'); {_LAT}",
    ),
    Network(
        name="roce-400",
        bw_bytes_per_s=400e9 / 8,  # 400 Gb/s RDMA endpoint per GPU
        latency_s=_NET_STEP_LATENCY_S,
        nics_per_node=8,
        source="Meta, 'Building Meta's GenAI Infrastructure' (2024-03-12), https://engineering.fb.com/2024/03/12/"
        "data-center-engineering/building-metas-genai-infrastructure/: the RoCE (Arista 7800, Wedge400, "
        "Minipack2) and InfiniBand 24k-GPU clusters both interconnect 400 Gbps endpoints, Grand Teton nodes of "
        f"8 H100 (400 Gb/s RDMA per GPU); {_LAT}",
    ),
    Network(
        name="efa-v2",
        bw_bytes_per_s=3200e9 / 8 / 8,  # 3200 Gbps per p5.48xlarge, 8 H100 per instance
        latency_s=_NET_STEP_LATENCY_S,
        nics_per_node=32,
        source="AWS EC2 accelerated-computing network specifications, https://docs.aws.amazon.com/ec2/latest/"
        "instancetypes/ac.html: p5.48xlarge (8 H100) 3200 Gbps over 32 EFA interfaces (EFA v2, Nitro v4; "
        f"{_MLE_NET}); {_LAT} (no EFA-specific figure found)",
    ),
    Network(
        name="efa-v4",
        bw_bytes_per_s=3200e9 / 8 / 8,  # 3200 Gbps per p6-b200.48xlarge, 8 B200 per instance
        latency_s=_NET_STEP_LATENCY_S,
        nics_per_node=8,
        source="AWS EC2 accelerated-computing network specifications, https://docs.aws.amazon.com/ec2/latest/"
        f"instancetypes/ac.html: p6-b200.48xlarge (8 B200) 3200 Gbps over 8 EFA interfaces of 400 Gbps ({_MLE_NET}, "
        f"note 30); {_LAT} (no EFA-specific figure found)",
    ),
    Network(
        name="ib-hdr",
        bw_bytes_per_s=200e9 / 8,  # one ConnectX-6 at HDR 200 Gb/s per GPU
        latency_s=_NET_STEP_LATENCY_S,
        nics_per_node=8,
        source="NVIDIA DGX A100 datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/"
        "nvidia-dgx-a100-datasheet.pdf: 8x single-port ConnectX-6 VPI 200 Gb/s HDR InfiniBand (compute), one "
        f"per GPU; {_LAT}",
    ),
    Network(
        name="ib-xdr",
        bw_bytes_per_s=800e9 / 8,  # one ConnectX-8 at XDR 800 Gb/s per GPU
        latency_s=_NET_STEP_LATENCY_S,
        nics_per_node=8,
        source="NVIDIA DGX B300, https://www.nvidia.com/en-us/data-center/dgx-b300/: eight ConnectX-8 at up to "
        f"800 Gb/s (Quantum-X800 XDR compute fabric in the SuperPOD design; {_MLE_NET}); {_LAT}",
    ),
    NO_NETWORK,
)

#: canonical name -> preset
NETWORKS: Mapping[str, Network] = MappingProxyType({n.name: n for n in _PRESETS})

#: canonical name -> other names it is known by
_ALIAS_NAMES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "ib-ndr": ("ndr", "ndr400", "ib-ndr-400", "infiniband-ndr", "infiniband", "dgx-h100", "dgx-h200"),
        "roce-400": ("roce", "roce400", "rocev2", "grand-teton", "meta-roce"),
        "efa-v2": ("efa", "efa2", "aws-efa", "p5", "p5.48xlarge", "aws-p5"),
        "efa-v4": ("efa4", "p6-b200", "p6-b200.48xlarge", "aws-p6-b200"),
        "ib-hdr": ("hdr", "hdr200", "ib-hdr-200", "infiniband-hdr", "dgx-a100"),
        "ib-xdr": ("xdr", "xdr800", "ib-xdr-800", "infiniband-xdr", "connectx-8", "cx8", "dgx-b300"),
        "none": ("single-node", "no-network", "intra-node"),
    }
)


NetworkLike = Union[str, Network]  # noqa: UP007  (a runtime alias, as hardware.GPULike)


def _normalise(name: str) -> str:
    return re.sub(r"[\s_]+", "-", name.strip().lower())


#: normalised alias -> canonical network name
ALIASES: Mapping[str, str] = MappingProxyType({_normalise(a): k for k, names in _ALIAS_NAMES.items() for a in names})


def list_networks() -> list[str]:
    """Canonical names of the network presets."""
    return list(NETWORKS)


def get_network(network: NetworkLike | None = None, *, gpu: GPULike | None = None) -> Network:
    """A :class:`Network` from a preset name or alias, a :class:`Network` (returned as is), or ``None``: the
    default of ``gpu`` (:func:`default_network`).

    Raises:
        UnknownNetworkError: an unknown name (close matches and the valid names), or ``None`` without ``gpu``.
    """
    if isinstance(network, Network):
        return network
    if network is None:
        if gpu is None:
            raise UnknownNetworkError(choices_message("network", None, NETWORKS, "Pass a name, a Network, or gpu=."))
        return default_network(gpu)
    hint = (
        "See perfmodel.models.collectives.list_networks(); for another fabric build a Network "
        "(dataclasses.replace a preset)."
    )
    if not isinstance(network, str):
        raise UnknownNetworkError(choices_message("network", short_repr(network), NETWORKS, hint))
    key = _normalise(network)
    name = ALIASES.get(key) or (key if key in NETWORKS else None)
    if name is None:
        raise UnknownNetworkError(choices_message("network", network, NETWORKS, hint, candidates=ALIASES))
    return NETWORKS[name]


def default_network(gpu: GPULike) -> Network:
    """The network a GPU's usual multi-node system ships with (each choice sourced on its line).

    * sm_80 (A100): ``ib-hdr``, DGX A100's 8 × ConnectX-6 HDR 200 Gb/s.
    * sm_90 (H100, H200, H800, H20) and sm_100 (B200, GB200): ``ib-ndr``, 400 Gb/s per GPU: DGX H100/H200 and
      DGX B200 (8 × ConnectX-7), GB200 NVL72 compute trays (4 × ConnectX-7 for 4 GPUs).
    * sm_103 (B300): ``ib-xdr``, DGX B300's 8 × ConnectX-8 at 800 Gb/s.
    * AMD MI300X, MI325X, MI355X: ``ib-ndr``, Azure ND MI300X v5's '8x400 Gigabit NDR'.
    * PCIe cards and NVLink-bridge parts, and GPUs without an interconnect: ``none`` (no standard node
      design; pass ``network=`` for a multi-node group).
    """
    spec = get_gpu(gpu)
    ic = spec.interconnect
    if ic is None or ic.kind in ("bridge", "pcie"):
        return NO_NETWORK
    if spec.vendor == "AMD":
        # https://github.com/MicrosoftDocs/azure-docs/blob/main/articles/virtual-machines/sizes/gpu-accelerated/
        # nd-mi300x-v5-series.md: "Infiniband: Supported, GPUDirect RDMA, 8x400 Gigabit NDR"
        return NETWORKS["ib-ndr"]
    arch = int(spec.arch) if spec.arch.isdigit() else 0
    if arch >= 103:
        return NETWORKS["ib-xdr"]  # https://www.nvidia.com/en-us/data-center/dgx-b300/: 8x ConnectX-8, 800 Gb/s
    if arch >= 90:
        # DGX H100/H200 user guide: 8x ConnectX-7 400 Gb/s; DGX B200 datasheet: 8x single-port ConnectX-7 up to
        # 400 Gb/s; https://docs.nvidia.com/dgx/dgxgb200-user-guide/networking.html: 4x ConnectX-7 per tray of 4
        return NETWORKS["ib-ndr"]
    if arch >= 80:
        return NETWORKS["ib-hdr"]  # DGX A100 datasheet: 8x single-port ConnectX-6 200 Gb/s HDR
    return NO_NETWORK
