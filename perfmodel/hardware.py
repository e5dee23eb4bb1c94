"""Hardware spec tables: peak dense FLOP/s per number format, memory bandwidth, achievable
fractions and kernel-launch cost, each with its unit (in the name) and its source.

Counting rules for the whole module:
* Peaks are **dense** (no 2:4 structured sparsity). Datasheets often print sparse figures;
  we store them as arithmetic, ``1979e12 / 2``, with the reason on the line.
* 1 FMA = 2 FLOP. Integer TOPS are stored in the same fields as FLOP/s.
* Bandwidths are bytes per second (1 TB/s = 1e12 B/s); memory sizes are bytes (1 GB = 1e9 B).
* Peaks (:class:`Peaks`) and what real kernels reach (:class:`Efficiency`) are separate objects.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal, Union

from .errors import UnknownGPUError, UnsupportedFormatError, choices_message
from .formats import FORMATS, Format, FormatLike, get_format

__all__ = [
    "ALIASES",
    "GPUS",
    "Efficiency",
    "GPUSpec",
    "GPULike",
    "Peaks",
    "get_gpu",
    "list_gpus",
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
    gemm_fraction_by_format: Mapping[str, float] = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )
    mem_bw_fraction: float
    launch_overhead_s: float
    source: str

    def __post_init__(self) -> None:
        for label, value in (("gemm_fraction", self.gemm_fraction), ("mem_bw_fraction", self.mem_bw_fraction),
                             *((f"gemm_fraction_by_format[{k!r}]", v)
                               for k, v in self.gemm_fraction_by_format.items())):
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
        mem_bytes: DRAM capacity, bytes.
        num_sms: streaming multiprocessors (NVIDIA) or compute units (AMD).
        boost_clock_hz: max boost clock of the SMs, Hz.
        l2_bytes: last-level cache, bytes (``None`` when unknown).
        bus_width_bits, mem_clock_hz: memory interface, as Proton reports it (``None`` when unknown).
        efficiency: achievable fractions and launch cost.
        sources: field name -> where its number comes from.
        calibration: a fitted shape-aware model (see :mod:`perfmodel.calibrate`), or ``None``.
    """

    name: str
    vendor: Literal["NVIDIA", "AMD"]
    device_type: Literal["CUDA", "HIP"]
    arch: str
    peaks: Peaks
    mem_bw_bytes_per_s: float
    mem_bytes: float
    num_sms: int
    boost_clock_hz: float
    l2_bytes: float | None = None
    bus_width_bits: int | None = None
    mem_clock_hz: float | None = None
    efficiency: Efficiency
    sources: Mapping[str, str]
    calibration: Any = None

    _SOURCED = ("mem_bw_bytes_per_s", "mem_bytes", "num_sms", "boost_clock_hz")

    def __post_init__(self) -> None:
        for field in ("mem_bw_bytes_per_s", "mem_bytes", "boost_clock_hz"):
            value = getattr(self, field)
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

    def ridge_flops_per_byte(self, fmt: FormatLike) -> float:
        """Arithmetic intensity (FLOP/B) where the roofline turns from memory- to compute-bound."""
        return self.peak_flops_per_s(fmt) / self.mem_bw_bytes_per_s

    def with_efficiency(self, **changes: Any) -> GPUSpec:
        """A copy with some :class:`Efficiency` fields replaced (``source`` should say why)."""
        return dataclasses.replace(self, efficiency=dataclasses.replace(self.efficiency, **changes))

    def __str__(self) -> str:
        return self.name


# ---------------------------------------------------------------------------------------
# Efficiency presets
# ---------------------------------------------------------------------------------------
_TORCHAO_H100_SOURCE = (
    "torchao float8 roofline_utils.py (original model): 60% of peak GEMM 'based on quick experimental "
    "observation with sample large inputs', 92% of memory bandwidth from Triton pointwise kernels "
    "(~2.2 TB/s on a 2.4 TB/s H100), 2 us for a 1-element Triton kernel, measured on an H100"
)
ORIGINAL_EFFICIENCY = Efficiency(
    gemm_fraction=0.6, mem_bw_fraction=0.92, launch_overhead_s=0.002 * 0.001, source=_TORCHAO_H100_SOURCE
)

_H100_SXM_DATASHEET = "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100), SXM5 column"
_H100_SXM_PEAKS = Peaks(
    fp32=67e12,
    tf32=989e12 / 2,  # datasheet 989 TFLOPS assumes 2:4 sparsity
    bf16=1979e12 / 2,  # datasheet figure assumes 2:4 sparsity
    fp16=1979e12 / 2,  # datasheet figure assumes 2:4 sparsity
    fp8_e4m3=3958e12 / 2,  # datasheet figure assumes 2:4 sparsity
    fp8_e5m2=3958e12 / 2,  # same tensor-core rate as E4M3
    int8=3958e12 / 2,  # datasheet TOPS assume 2:4 sparsity
    source=_H100_SXM_DATASHEET,
)

_TABLE: tuple[GPUSpec, ...] = (
    GPUSpec(
        name="H100-SXM", vendor="NVIDIA", device_type="CUDA", arch="90",
        peaks=_H100_SXM_PEAKS,
        mem_bw_bytes_per_s=3.35e12, mem_bytes=80e9, num_sms=132, boost_clock_hz=1.98e9,
        l2_bytes=50 * 2**20, bus_width_bits=5120, mem_clock_hz=2.619e9,
        efficiency=ORIGINAL_EFFICIENCY,
        sources={
            "mem_bw_bytes_per_s": _H100_SXM_DATASHEET, "mem_bytes": _H100_SXM_DATASHEET,
            "num_sms": "NVIDIA H100 whitepaper (Hopper architecture in depth), 132 SMs on SXM5",
            "boost_clock_hz": "NVIDIA H100 whitepaper: 1980 MHz max boost (SXM5)",
        },
    ),
    GPUSpec(
        name="H100-2.4TB", vendor="NVIDIA", device_type="CUDA", arch="90",
        peaks=Peaks(
            fp32=67e12, tf32=989e12 / 2, bf16=989e12, fp16=989e12, fp8_e4m3=1979e12, fp8_e5m2=1979e12,
            int8=3958e12 / 2,
            source="torchao float8 roofline_utils.py: H100 bf16 989e12, fp8 1979e12 "
                   "('divide by 2 because no sparsity' of the H100 datasheet)",
        ),
        mem_bw_bytes_per_s=2.4e12, mem_bytes=80e9, num_sms=132, boost_clock_hz=1.98e9,
        l2_bytes=50 * 2**20,
        efficiency=ORIGINAL_EFFICIENCY,
        sources={
            "mem_bw_bytes_per_s": "torchao float8 roofline_utils.py: '2.4 TB per second, custom to "
                                  "Meta's H100 variant'",
            "mem_bytes": _H100_SXM_DATASHEET, "num_sms": "as H100-SXM", "boost_clock_hz": "as H100-SXM",
        },
    ),
    GPUSpec(
        name="H200", vendor="NVIDIA", device_type="CUDA", arch="90",
        peaks=dataclasses.replace(
            _H100_SXM_PEAKS,
            source="NVIDIA H200 datasheet (nvidia.com/en-us/data-center/h200), SXM column: the same "
                   "tensor-core rates as H100 SXM (sparse figures halved)",
        ),
        mem_bw_bytes_per_s=4.8e12, mem_bytes=141e9, num_sms=132, boost_clock_hz=1.98e9,
        l2_bytes=50 * 2**20, bus_width_bits=6016, mem_clock_hz=3.201e9,
        efficiency=ORIGINAL_EFFICIENCY,
        sources={
            "mem_bw_bytes_per_s": "NVIDIA H200 datasheet: 4.8 TB/s HBM3e",
            "mem_bytes": "NVIDIA H200 datasheet: 141 GB HBM3e",
            "num_sms": "measured: torch.cuda.get_device_properties on an H200, 2026-10-28 (132 SMs)",
            "boost_clock_hz": "measured: nvidia-smi on an H200, 2026-10-28 (1980 MHz under load)",
            "bus_width_bits": "Proton device metadata of an H200 profile (tests/data)",
        },
    ),
)

#: canonical name -> spec
GPUS: Mapping[str, GPUSpec] = MappingProxyType({g.name: g for g in _TABLE})

#: normalised alias -> canonical name. Built from real device names
#: (``torch.cuda.get_device_name()``), marketing names and short names.
ALIASES: Mapping[str, str] = MappingProxyType({
    "h100": "H100-SXM",
    "h100-sxm": "H100-SXM",
    "h100-sxm5": "H100-SXM",
    "nvidia-h100-80gb-hbm3": "H100-SXM",  # torch.cuda.get_device_name() on H100 SXM5
    "h100-2.4tb": "H100-2.4TB",
    "h100-2.4tbps": "H100-2.4TB",
    "h200": "H200",
    "nvidia-h200": "H200",  # torch.cuda.get_device_name() on H200 SXM (seen 2026-10-28)
    "h200-sxm": "H200",
})

GPULike = Union[str, GPUSpec]


def _normalise(name: str) -> str:
    return re.sub(r"[\s_]+", "-", name.strip().lower())


def list_gpus() -> list[str]:
    """Canonical names of every GPU in the table."""
    return list(GPUS)


def get_gpu(gpu: GPULike) -> GPUSpec:
    """Resolve a :class:`GPUSpec` from a canonical name, an alias or a device-name string.

    Lookup is exact after normalisation (lower case, runs of spaces/underscores -> ``-``);
    there is no substring or prefix guessing.

    >>> get_gpu("NVIDIA H100 80GB HBM3").name
    'H100-SXM'

    Raises:
        UnknownGPUError: with close matches and the valid names (a ``LookupError``).
    """
    if isinstance(gpu, GPUSpec):
        return gpu
    if not isinstance(gpu, str):
        raise UnknownGPUError(choices_message("GPU", gpu, GPUS, "Pass a name (str) or a GPUSpec."))
    key = _normalise(gpu)
    canonical = ALIASES.get(key) or {k.lower(): k for k in GPUS}.get(key)
    if canonical is None:
        raise UnknownGPUError(choices_message(
            "GPU", gpu, GPUS,
            "See perfmodel.list_gpus(); for another GPU build a GPUSpec (dataclasses.replace an entry).",
            candidates=ALIASES,
        ))
    return GPUS[canonical]


def gpu_from_proton(device_type: str, device_info: Mapping[str, Any]) -> GPUSpec:
    """Placeholder (being written): GPUSpec from Proton device metadata."""
    raise NotImplementedError
