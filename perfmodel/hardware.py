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
    "AMD_DEFAULT_EFFICIENCY",
    "GPUS",
    "NVIDIA_DEFAULT_EFFICIENCY",
    "ORIGINAL_EFFICIENCY",
    "Efficiency",
    "GPULike",
    "GPUSpec",
    "Peaks",
    "default_efficiency",
    "get_gpu",
    "gpu_from_proton",
    "list_gpus",
    "proton_mem_bw_bytes_per_s",
    "proton_peak_flops_per_s",
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
        calibration: a fitted shape-aware model (see :mod:`perfmodel.calibrate`), or ``None``.
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
    efficiency: Efficiency
    sources: Mapping[str, str]
    calibration: Any = None

    _SOURCED = ("mem_bw_bytes_per_s", "mem_bytes", "num_sms", "boost_clock_hz")

    def __post_init__(self) -> None:
        for field in ("mem_bw_bytes_per_s", "mem_bytes", "boost_clock_hz"):
            value = getattr(self, field)
            if field == "mem_bytes" and value is None:
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

    def ridge_flops_per_byte(self, fmt: FormatLike) -> float:
        """Arithmetic intensity (FLOP/B) where the roofline turns from memory- to compute-bound."""
        return self.peak_flops_per_s(fmt) / self.mem_bw_bytes_per_s

    def with_efficiency(self, **changes: Any) -> GPUSpec:
        """A copy with some :class:`Efficiency` fields replaced (``source`` should say why)."""
        return dataclasses.replace(self, efficiency=dataclasses.replace(self.efficiency, **changes))

    def __str__(self) -> str:
        return self.name


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


# ---------------------------------------------------------------------------------------
# The table (rows live in _gpu_table.py, which imports the classes above)
# ---------------------------------------------------------------------------------------
from ._gpu_table import ALIAS_NAMES, TABLE  # noqa: E402  (needs the classes defined above)


def _normalise(name: str) -> str:
    return re.sub(r"[\s_]+", "-", name.strip().lower())


#: canonical name -> spec
GPUS: Mapping[str, GPUSpec] = MappingProxyType({g.name: g for g in TABLE})


def _build_aliases() -> dict[str, str]:
    out: dict[str, str] = {}
    canonical = {_normalise(n): n for n in GPUS}
    for name, aliases in ALIAS_NAMES.items():
        for alias in aliases:
            key = _normalise(alias)
            if out.get(key, name) != name or canonical.get(key, name) != name:  # pragma: no cover
                raise RuntimeError(f"alias {alias!r} is claimed by two GPUs")
            out[key] = name
    return out


#: normalised alias -> canonical name. Built from real device names (``torch.cuda.get_device_name()``),
#: marketing names and short names; ambiguous short names ("h100", "a100") mean the SXM part.
ALIASES: Mapping[str, str] = MappingProxyType(_build_aliases())

GPULike = Union[str, GPUSpec]  # noqa: UP007  (a runtime alias; kept as written)


def list_gpus() -> list[str]:
    """Canonical names of every GPU in the table."""
    return list(GPUS)


def get_gpu(gpu: GPULike) -> GPUSpec:
    """Resolve a :class:`GPUSpec` from a canonical name, an alias or a device-name string.

    Lookup is exact after normalisation (lower case, runs of spaces/underscores -> ``-``);
    there is no substring or prefix guessing. Ambiguous short names resolve to the SXM part
    (``"h100"`` -> H100-SXM, ``"a100"`` -> A100-SXM-80GB).

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
        raise UnknownGPUError(
            choices_message(
                "GPU",
                gpu,
                GPUS,
                "See perfmodel.list_gpus(); for another GPU build a GPUSpec (dataclasses.replace an entry).",
                candidates=ALIASES,
            )
        )
    return GPUS[canonical]


# Proton device metadata -> GPUSpec lives in its own module; the public names are re-exported here.
from ._proton_specs import (  # noqa: E402  (needs the classes and the table above)
    gpu_from_proton,
    proton_mem_bw_bytes_per_s,
    proton_peak_flops_per_s,
)
