"""GPU spec classes: peak dense FLOP/s per number format, memory bandwidth, achievable fractions,
power, and the source of every number (the rows are in :mod:`perfmodel.specs.table`, the lookup in
:mod:`perfmodel.specs.gpu`, where every public name of this module is imported from).

Counting rules for the whole table:
* Peaks are **dense** (no 2:4 structured sparsity). Datasheets often print sparse figures;
  we store them as arithmetic, ``1979e12 / 2``, with the reason on the line.
* 1 FMA = 2 FLOP. Integer TOPS are stored in the same fields as FLOP/s.
* Bandwidths are bytes per second (1 TB/s = 1e12 B/s); memory sizes are bytes (1 GB = 1e9 B).
* Peaks (:class:`Peaks`) and what real kernels reach (:class:`Efficiency`) are separate objects.

Specs are plain data: nothing here knows a time model (see :mod:`perfmodel.models.registry`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

from ..errors import UnknownGPUError, UnsupportedFormatError, choices_message
from ..formats import FORMATS, Format, FormatLike, get_format

__all__ = [
    "AMD_DEFAULT_EFFICIENCY",
    "NVIDIA_DEFAULT_EFFICIENCY",
    "ORIGINAL_EFFICIENCY",
    "Efficiency",
    "GPUSpec",
    "Interconnect",
    "Peaks",
    "attached_time_model",
    "default_efficiency",
]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Peaks:
    """Dense peak rate per number format, FLOP/s (int8: OP/s). ``None``: no such tensor-core path.

    One field per format of :data:`perfmodel.formats.FORMATS`; ``source`` says where they come from.
    """

    fp32: float | None = None
    tf32: float | None = None
    bf16: float | None = None
    fp16: float | None = None
    fp8_e4m3: float | None = None
    fp8_e5m2: float | None = None
    mxfp8: float | None = None
    mxfp4: float | None = None
    nvfp4: float | None = None
    int8: float | None = None
    source: str

    def __post_init__(self) -> None:
        for name in FORMATS:
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"Peaks.{name} must be positive FLOP/s or None, got {value!r}")
        if not self.source:
            raise ValueError("Peaks.source is required: cite the datasheet or measurement")

    def get(self, fmt: Format) -> float | None:
        """The dense peak of ``fmt`` in FLOP/s, or ``None``."""
        return getattr(self, fmt.name)

    def supported(self) -> list[str]:
        """Names of the formats with a peak."""
        return [name for name in FORMATS if getattr(self, name) is not None]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Efficiency:
    """What real kernels reach, as fractions of the peaks, plus the fixed cost of a launch.

    Attributes:
        gemm_fraction: achievable share of the dense peak for large GEMMs (0-1], any format.
        gemm_fraction_by_format: per-format overrides of ``gemm_fraction`` (format name -> fraction).
        mem_bw_fraction: achievable share of the memory bandwidth for large streaming kernels.
        launch_overhead_s: GPU time of a kernel that moves one element, seconds.
        source: where these came from (a measurement with date, or "copied from <GPU>").
    """

    gemm_fraction: float
    gemm_fraction_by_format: Mapping[str, float] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    mem_bw_fraction: float
    launch_overhead_s: float
    source: str

    def __post_init__(self) -> None:
        for label, value in (
            ("gemm_fraction", self.gemm_fraction),
            ("mem_bw_fraction", self.mem_bw_fraction),
            *((f"gemm_fraction_by_format[{k!r}]", v) for k, v in self.gemm_fraction_by_format.items()),
        ):
            if not 0 < value <= 1:
                raise ValueError(f"Efficiency.{label} must be in (0, 1], got {value!r}")
        for key in self.gemm_fraction_by_format:
            if key not in FORMATS:
                raise ValueError(choices_message("format in gemm_fraction_by_format", key, FORMATS))
        if not self.launch_overhead_s >= 0:
            raise ValueError(f"Efficiency.launch_overhead_s must be >= 0 s, got {self.launch_overhead_s!r}")
        if not self.source:
            raise ValueError("Efficiency.source is required")
        object.__setattr__(self, "gemm_fraction_by_format", MappingProxyType(dict(self.gemm_fraction_by_format)))

    def gemm(self, fmt: FormatLike) -> float:
        """Achievable GEMM fraction for ``fmt``."""
        return self.gemm_fraction_by_format.get(get_format(fmt).name, self.gemm_fraction)


def attached_time_model(spec: GPUSpec) -> Any:
    """The time model the user attached to ``spec`` (``calibration=``), or ``None``; never a lookup."""
    return spec.calibration


@dataclasses.dataclass(frozen=True, kw_only=True)
class Interconnect:
    """The GPU-to-GPU links inside one node (or one NVLink domain), per GPU.

    Attributes:
        kind: ``"nvswitch"`` (every GPU reaches every other at full rate through switches),
            ``"mesh"`` (point-to-point links to each peer, no switch: AMD Infinity Fabric),
            ``"bridge"`` (NVLink bridges join groups of ``domain_gpus`` GPUs; other traffic crosses PCIe),
            ``"pcie"`` (no GPU-to-GPU fabric).
        bw_bytes_per_s: one direction, from one GPU to all its peers together, B/s (vendor "bidirectional"
            figures are halved, as arithmetic, where the rows are written).
        peer_bw_bytes_per_s: one direction, to one peer (``mesh``: one link), B/s; ``None``: as ``bw``.
        gpus_per_node: GPUs on this fabric in the usual server (HGX: 8).
        domain_gpus: GPUs one fabric joins when it is not the node (NVL72: 72; a bridge: 2 or 4).
        pcie_bw_bytes_per_s: one direction, the PCIe link of one GPU (``bridge`` and ``pcie`` traffic), B/s.
        source: where these come from.
    """

    kind: Literal["nvswitch", "mesh", "bridge", "pcie"]
    bw_bytes_per_s: float
    peer_bw_bytes_per_s: float | None = None
    gpus_per_node: int
    domain_gpus: int | None = None
    pcie_bw_bytes_per_s: float | None = None
    source: str

    def __post_init__(self) -> None:
        if self.kind not in ("nvswitch", "mesh", "bridge", "pcie"):
            raise ValueError(f"Interconnect.kind must be nvswitch, mesh, bridge or pcie, got {self.kind!r}")
        for name in ("bw_bytes_per_s", "peer_bw_bytes_per_s", "pcie_bw_bytes_per_s"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float)) and value > 0):
                raise ValueError(f"Interconnect.{name} must be positive B/s, got {value!r}")
        for name in ("gpus_per_node", "domain_gpus"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, int) and value > 0):
                raise ValueError(f"Interconnect.{name} must be a positive int, got {value!r}")
        if not self.source:
            raise ValueError("Interconnect.source is required")

    @property
    def fabric_gpus(self) -> int:
        """GPUs that reach each other over the fast fabric (a node, an NVL domain, or a bridged group)."""
        return self.domain_gpus or self.gpus_per_node


@dataclasses.dataclass(frozen=True, kw_only=True)
class GPUSpec:
    """One GPU: peaks, memory, SMs, clocks, efficiency, and the source of every number.

    Override any field for what-if studies with :func:`dataclasses.replace`, e.g.
    ``dataclasses.replace(get_gpu("H100"), mem_bw_bytes_per_s=4.0e12)``.

    Attributes:
        name: canonical short name (``"H100-SXM"``), the key in :data:`GPUS`.
        vendor: ``"NVIDIA"`` or ``"AMD"``.
        device_type: Proton's device type, ``"CUDA"`` or ``"HIP"``.
        arch: Proton's ``arch`` string (``"90"`` for sm_90, ``"gfx942"``).
        peaks: dense FLOP/s per format.
        mem_bw_bytes_per_s: peak DRAM bandwidth, B/s.
        mem_bytes: DRAM capacity, bytes (``None`` only for specs built from Proton metadata, which
            does not carry it).
        num_sms: streaming multiprocessors (NVIDIA) or compute units (AMD).
        boost_clock_hz: max boost clock of the SMs, Hz.
        l2_bytes: last-level cache, bytes (``None`` when unknown).
        bus_width_bits, mem_clock_hz: memory interface, as Proton reports it (``None`` when unknown).
        efficiency: achievable fractions and launch cost.
        sources: field name -> where its number comes from.
        interconnect: the GPU-to-GPU fabric inside a node (:class:`Interconnect`), ``None`` when unknown.
        power_w: the board's power limit (TDP), watts (``None`` when unknown). Long GEMMs slow down
            as clocks drop under it; a transferred calibration scales its throttle term with it.
        calibration: a time model *you* attach (your own ``perfmodel calibrate`` fit, or any object
            with the :class:`perfmodel.models.base.TimeModel` methods): ``dataclasses.replace(gpu,
            calibration=model)``; ``None`` (the default) when nothing is attached. The model a GPU predicts
            with, attached or not: :func:`perfmodel.time_model` and :func:`perfmodel.provenance`.
    """

    name: str
    vendor: Literal["NVIDIA", "AMD"]
    device_type: Literal["CUDA", "HIP"]
    arch: str
    peaks: Peaks
    mem_bw_bytes_per_s: float
    mem_bytes: float | None
    num_sms: int
    boost_clock_hz: float
    l2_bytes: float | None = None
    bus_width_bits: int | None = None
    mem_clock_hz: float | None = None
    power_w: float | None = None
    interconnect: Interconnect | None = None
    efficiency: Efficiency
    sources: Mapping[str, str]
    calibration: Any = dataclasses.field(default=None, compare=False, repr=False)

    _SOURCED = ("mem_bw_bytes_per_s", "mem_bytes", "num_sms", "boost_clock_hz")

    def __post_init__(self) -> None:
        for field in ("mem_bw_bytes_per_s", "mem_bytes", "boost_clock_hz", "power_w"):
            value = getattr(self, field)
            if field in ("mem_bytes", "power_w") and value is None:
                continue
            if not (isinstance(value, (int, float)) and value > 0):
                raise ValueError(f"GPUSpec {self.name!r}: {field} must be positive, got {value!r}")
        if not (isinstance(self.num_sms, int) and self.num_sms > 0):
            raise ValueError(f"GPUSpec {self.name!r}: num_sms must be a positive int, got {self.num_sms!r}")
        missing = [f for f in self._SOURCED if f not in self.sources]
        if missing:
            raise ValueError(f"GPUSpec {self.name!r}: no source for {', '.join(missing)}")
        object.__setattr__(self, "sources", MappingProxyType(dict(self.sources)))

    # -- the public vocabulary -------------------------------------------------------------
    def peak_flops_per_s(self, fmt: FormatLike) -> float:
        """Dense peak of ``fmt`` in FLOP/s.

        Raises:
            UnsupportedFormatError: the GPU has no tensor-core path for ``fmt``.
        """
        f = get_format(fmt)
        value = self.peaks.get(f)
        if value is None:
            raise UnsupportedFormatError(
                f"{self.name} has no {f.name} peak (no native tensor-core path). "
                f"Formats with a peak on {self.name}: {', '.join(self.peaks.supported())}."
            )
        return value

    def supports(self, fmt: FormatLike) -> bool:
        """True when ``fmt`` has a peak on this GPU."""
        return self.peaks.get(get_format(fmt)) is not None

    @property
    def launch_overhead_s(self) -> float:
        """GPU time of a minimal kernel launch, seconds."""
        return self.efficiency.launch_overhead_s

    def achievable_flops_per_s(self, fmt: FormatLike) -> float:
        """``peak_flops_per_s(fmt) * efficiency.gemm(fmt)``, FLOP/s."""
        return self.peak_flops_per_s(fmt) * self.efficiency.gemm(fmt)

    @property
    def achievable_mem_bw_bytes_per_s(self) -> float:
        """``mem_bw_bytes_per_s * efficiency.mem_bw_fraction``, B/s."""
        return self.mem_bw_bytes_per_s * self.efficiency.mem_bw_fraction

    def sm_throughput_ratio(self, ref: Any) -> float:
        """This GPU's throughput of non-tensor SM work (SMs x boost clock) over ``ref``'s, dimensionless: the factor a
        kernel bound by its SMs rather than by HBM (casts, reductions, atomics) runs faster by here than on ``ref``.
        ``ref``: a :class:`GPUSpec`, or any object with ``num_sms`` and ``boost_clock_hz`` (a calibration's
        reference GPU); where its clock is unknown (None), the SM counts alone.

        Raises:
            UnknownGPUError: ``ref`` is not such an object (a name: look it up with ``perfmodel.get_gpu`` first).
        """
        if not (hasattr(ref, "num_sms") and hasattr(ref, "boost_clock_hz")):
            raise UnknownGPUError(
                f"sm_throughput_ratio needs a GPUSpec (for a name: perfmodel.get_gpu({ref!r})) or an object with "
                f"num_sms and boost_clock_hz; got {type(ref).__name__} {ref!r}"
            )
        ratio = self.num_sms / ref.num_sms
        return ratio * self.boost_clock_hz / ref.boost_clock_hz if ref.boost_clock_hz else ratio

    def ridge_flops_per_byte(self, fmt: FormatLike) -> float:
        """Arithmetic intensity (FLOP/B) where the roofline turns from memory- to compute-bound."""
        return self.peak_flops_per_s(fmt) / self.mem_bw_bytes_per_s

    def with_efficiency(self, **changes: Any) -> GPUSpec:
        """A copy with some :class:`Efficiency` fields replaced (``source`` should say why)."""
        return dataclasses.replace(self, efficiency=dataclasses.replace(self.efficiency, **changes))

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        """One line: the name and the figures most answers rest on (every field: ``dataclasses.asdict``)."""
        try:
            bf16 = f"{self.peak_flops_per_s('bf16') / 1e12:,.0f} TFLOP/s bf16 dense, "
        except (UnsupportedFormatError, TypeError, ValueError):  # a spec without a bf16 peak
            bf16 = ""
        mem = f"{self.mem_bytes / 1e9:.0f} GB, " if self.mem_bytes else ""  # None: not in the sources
        return (
            f"GPUSpec({self.name}: {bf16}{self.mem_bw_bytes_per_s / 1e12:.2f} TB/s HBM, {mem}{self.num_sms} SMs, "
            f"{self.boost_clock_hz / 1e6:.0f} MHz boost)"
        )


# ---------------------------------------------------------------------------------------
# Efficiency presets: one named constant per default, so a calibration replaces exactly one
# ---------------------------------------------------------------------------------------
_TORCHAO_H100_SOURCE = (
    "torchao float8 roofline_utils.py (original model): 60% of peak GEMM 'based on quick experimental "
    "observation with sample large inputs', 92% of memory bandwidth from Triton pointwise kernels "
    "(~2.2 TB/s on a 2.4 TB/s H100), 2 us for a 1-element Triton kernel, measured on an H100"
)
ORIGINAL_EFFICIENCY = Efficiency(
    gemm_fraction=0.6, mem_bw_fraction=0.92, launch_overhead_s=0.002 * 0.001, source=_TORCHAO_H100_SOURCE
)
_DEFAULT_SOURCE = "default: copied from the original torchao H100 model (60 %/92 %/2 µs); not measured on {}"
#: Default for NVIDIA GPUs without a measurement (every NVIDIA row but the H100 variants).
NVIDIA_DEFAULT_EFFICIENCY = dataclasses.replace(ORIGINAL_EFFICIENCY, source=_DEFAULT_SOURCE.format("this GPU"))
#: Default for AMD GPUs: the same numbers, nothing measured on AMD yet.
AMD_DEFAULT_EFFICIENCY = dataclasses.replace(ORIGINAL_EFFICIENCY, source=_DEFAULT_SOURCE.format("any AMD GPU"))


def default_efficiency(gpu_name: str, base: Efficiency = NVIDIA_DEFAULT_EFFICIENCY) -> Efficiency:
    """``base`` with a source that names the GPU it was *not* measured on."""
    return dataclasses.replace(base, source=_DEFAULT_SOURCE.format(gpu_name))
