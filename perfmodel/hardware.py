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

from .errors import ProfileError, UnknownGPUError, UnsupportedFormatError, choices_message
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
        raise UnknownGPUError(choices_message(
            "GPU", gpu, GPUS,
            "See perfmodel.list_gpus(); for another GPU build a GPUSpec (dataclasses.replace an entry).",
            candidates=ALIASES,
        ))
    return GPUS[canonical]


# ---------------------------------------------------------------------------------------
# Proton device metadata -> GPUSpec
# ---------------------------------------------------------------------------------------
# Peak formulas of Triton 3.6's triton/profiler/specs.py, re-derived here so that a GPUSpec built
# from a profile reproduces the proton-viewer's `util` without importing triton. Units: clocks in
# kHz as Proton stores them (its docstrings say GHz; the values are CUDA/HIP kHz), widths in bits.
# Each rate is FLOP/s at 8-bit width; a width-w format runs at rate / (w / 8).
_CUDA_FP8_FLOPS = {
    "80": lambda sms, khz: 624e12,  # A100: dense int8 rate (no fp8 on Ampere)
    "89": lambda sms, khz: 330.3e12,  # Ada (RTX 4090 fp8 with fp32 accumulate)
    "90": lambda sms, khz: sms / 114 * khz / 1755e3 * 1513e12,  # scaled from H100 PCIe (114 SMs, 1755 MHz)
    "100": lambda sms, khz: sms * 16384 * khz * 1e3,  # 16384 fp8 FLOP/clk/SM
}
#: HIP: fp8 matrix FLOP per clock per CU (gfx90a: the int8 rate; CDNA 2 has no fp8).
_HIP_FP8_FLOPS_PER_CLK_PER_CU = {"gfx90a": 1024, "gfx942": 4096, "gfx950": 8192}
#: HIP peak bandwidth per arch, B/s (Proton ignores bus width and memory clock on HIP).
_HIP_MEM_BW = {"gfx90a": 3.2e12, "gfx942": 5.3e12, "gfx950": 8.0e12}
#: formats a Proton-derived spec gets when no table entry fits (fp32 is not a Proton width).
_ARCH_FORMATS = {
    "80": ("tf32", "bf16", "fp16", "int8"),
    "89": ("tf32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "int8"),
    "90": ("tf32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "int8"),
    "100": ("tf32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "mxfp8", "mxfp4", "nvfp4", "int8"),
    "gfx90a": ("bf16", "fp16", "int8"),
    "gfx942": ("tf32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "int8"),
    "gfx950": ("bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "mxfp8", "mxfp4", "int8"),
}
_PROTON_SOURCE = "derived from Proton device metadata with triton.profiler.specs formulas (Triton 3.6)"
_PROTON_KEYS = ("arch", "num_sms", "clock_rate", "memory_clock_rate", "bus_width")


def _known_archs(device_type: str) -> list[str]:
    return sorted(_CUDA_FP8_FLOPS if device_type == "CUDA" else _HIP_FP8_FLOPS_PER_CLK_PER_CU)


def _check_arch(device_type: str, arch: str) -> None:
    if device_type not in ("CUDA", "HIP"):
        raise UnknownGPUError(f"unknown Proton device type {device_type!r}; valid: CUDA, HIP.")
    if arch not in _known_archs(device_type):
        raise UnknownGPUError(
            f"no Proton peak formula for {device_type} arch {arch!r}; known {device_type} archs: "
            f"{', '.join(_known_archs(device_type))} (those of triton.profiler.specs in Triton 3.6). "
            "Use get_gpu(<name>) or build a GPUSpec for this GPU."
        )


def proton_peak_flops_per_s(device_type: str, arch: str, width: int, num_sms: int, clock_khz: float) -> float:
    """Proton's peak FLOP/s for ``width``-bit operands, as ``triton.profiler.specs.max_flops``.

    ``clock_khz`` is the SM clock in **kHz** (Proton's ``clock_rate``). CUDA arch "90":
    ``num_sms / 114 * clock_khz / 1755e3 * 1513e12 / (width / 8)``; "100":
    ``num_sms * 16384 * clock_khz * 1e3 / (width / 8)``; HIP:
    ``fp8_flops_per_clk_per_cu[arch] * num_sms * clock_khz * 1e3 / (width / 8)``.

    Raises:
        UnknownGPUError: device type or arch without a formula.
    """
    _check_arch(device_type, arch)
    if device_type == "HIP":
        fp8 = _HIP_FP8_FLOPS_PER_CLK_PER_CU[arch] * num_sms * clock_khz * 1e3
    else:
        fp8 = _CUDA_FP8_FLOPS[arch](num_sms, clock_khz)
    return fp8 / (width / 8)


def proton_mem_bw_bytes_per_s(device_type: str, arch: str, bus_width_bits: int, mem_clock_khz: float) -> float:
    """Proton's peak DRAM bandwidth, B/s, as ``triton.profiler.specs.max_bps``.

    CUDA: ``2 * bus_width_bits * mem_clock_khz * 1e3 / 8`` (double data rate); HIP: a constant per arch.
    """
    _check_arch(device_type, arch)
    if device_type == "HIP":
        return _HIP_MEM_BW[arch]
    return 2 * bus_width_bits * mem_clock_khz * 1e3 / 8


def _parse_device_info(device_type: Any, device_info: Mapping[str, Any]) -> tuple[str, str, dict[str, float]]:
    if not isinstance(device_type, str):
        raise ProfileError(f"Proton device_type must be a string such as 'CUDA' or 'HIP', got {device_type!r}")
    dtype = device_type.strip().upper()
    if not isinstance(device_info, Mapping):
        raise ProfileError(f"Proton device_info must be a mapping, got {type(device_info).__name__}")
    missing = [k for k in _PROTON_KEYS if k not in device_info]
    if missing:
        raise ProfileError(
            f"Proton device_info lacks {', '.join(repr(k) for k in missing)} (has: "
            f"{', '.join(map(repr, device_info)) or 'nothing'}). Pass one device's entry of the profile's "
            "metadata, e.g. meta['CUDA']['0'] = {'arch': '90', 'num_sms': 132, 'clock_rate': ..., "
            "'memory_clock_rate': ..., 'bus_width': ...}."
        )
    arch = device_info["arch"]
    if isinstance(arch, bool) or not isinstance(arch, (str, int)) or not str(arch).strip():
        raise ProfileError(f"Proton device_info 'arch' must be a string like '90' or 'gfx942', got {arch!r}")
    arch = str(arch).strip().split(":")[0].lower()  # "gfx942:sramecc+:xnack-" -> "gfx942"
    numbers: dict[str, float] = {}
    for key in _PROTON_KEYS[1:]:
        value = device_info[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < float("inf")):
            raise ProfileError(f"Proton device_info {key!r} must be a positive number, got {value!r}")
        numbers[key] = value
    if numbers["num_sms"] != int(numbers["num_sms"]):
        raise ProfileError(f"Proton device_info 'num_sms' must be a whole number, got {numbers['num_sms']!r}")
    numbers["num_sms"] = int(numbers["num_sms"])
    _check_arch(dtype, arch)
    return dtype, arch, numbers


def _close(a: float, b: float, rel: float = 5e-3) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b))


def _table_match(device_type: str, arch: str, info: Mapping[str, float]) -> GPUSpec | None:
    """The table entry that fits the metadata best: same device type, arch and SM count; bus width and
    memory clock equal where both know them; the entry that knows more of them wins, then table order."""
    best, best_score = None, -1
    for gpu in TABLE:
        if (gpu.device_type, gpu.arch, gpu.num_sms) != (device_type, arch, info["num_sms"]):
            continue
        score = 0
        if gpu.bus_width_bits is not None:
            if gpu.bus_width_bits != info["bus_width"]:
                continue
            score += 1
        if gpu.mem_clock_hz is not None:
            if not _close(gpu.mem_clock_hz, info["memory_clock_rate"] * 1e3):
                continue
            score += 1
        if score > best_score:
            best, best_score = gpu, score
    return best


def gpu_from_proton(device_type: str, device_info: Mapping[str, Any]) -> GPUSpec:
    """A :class:`GPUSpec` from one device's metadata in a Proton ``.hatchet`` profile.

    ``device_info`` is e.g. ``{"arch": "90", "num_sms": 132, "clock_rate": 1980000,
    "memory_clock_rate": 3201000, "bus_width": 6016}`` (clock rates in kHz, bus width in bits; the
    same keys in every Proton version since Triton 3.0). Peaks and bandwidth come from
    :func:`proton_peak_flops_per_s` / :func:`proton_mem_bw_bytes_per_s`, so the spec reproduces the
    proton-viewer's ``util``; they are *not* the datasheet peaks of :func:`get_gpu`. Proton width 32
    sets tf32, 16 bf16/fp16, 8 fp8/mxfp8/int8, 4 mxfp4/nvfp4; fp32 (CUDA cores) keeps the table value.

    When a table entry fits (device type, arch, SM count, and bus width / memory clock where both
    are known) the result is that entry (name, efficiency, memory size, calibration...) with the
    derived peaks and bandwidth; otherwise a generic spec named like ``"CUDA-sm90-132SM"`` with the
    default efficiency and ``mem_bytes=None``. GPUs that Proton cannot tell apart resolve to the first
    row: H200 NVL -> H200, GB200 -> B200 (``dataclasses.replace`` the result if needed).

    Raises:
        ProfileError: missing keys or non-numeric values (a ``ValueError``).
        UnknownGPUError: a device type or arch without a Proton formula (a ``LookupError``).
    """
    dtype, arch, info = _parse_device_info(device_type, device_info)
    entry = _table_match(dtype, arch, info)
    sms, khz = info["num_sms"], info["clock_rate"]
    names = entry.peaks.supported() if entry is not None else list(_ARCH_FORMATS[arch])
    peaks = {n: proton_peak_flops_per_s(dtype, arch, FORMATS[n].proton_width, sms, khz)
             for n in names if n != "fp32"}
    bw = proton_mem_bw_bytes_per_s(dtype, arch, info["bus_width"], info["memory_clock_rate"])
    bw_how = (f"{_PROTON_SOURCE}: 2 * bus_width * memory_clock_rate * 1e3 / 8" if dtype == "CUDA"
              else f"{_PROTON_SOURCE}: Proton's constant for {arch}")
    derived = {"mem_bw_bytes_per_s": bw_how, "boost_clock_hz": f"Proton clock_rate {khz} kHz",
               "bus_width_bits": f"Proton bus_width {info['bus_width']}",
               "mem_clock_hz": f"Proton memory_clock_rate {info['memory_clock_rate']} kHz"}
    common = dict(mem_bw_bytes_per_s=bw, boost_clock_hz=khz * 1e3, bus_width_bits=int(info["bus_width"]),
                  mem_clock_hz=info["memory_clock_rate"] * 1e3)
    if entry is not None:
        fp32 = {"fp32": entry.peaks.fp32} if entry.peaks.fp32 is not None else {}
        return dataclasses.replace(
            entry, **common,
            peaks=Peaks(**peaks, **fp32, source=f"{_PROTON_SOURCE}; fp32 from the table ({entry.peaks.source})"),
            sources={**entry.sources, **derived},
        )
    name = f"CUDA-sm{arch}-{sms}SM" if dtype == "CUDA" else f"HIP-{arch}-{sms}CU"
    base = NVIDIA_DEFAULT_EFFICIENCY if dtype == "CUDA" else AMD_DEFAULT_EFFICIENCY
    return GPUSpec(
        name=name, vendor="NVIDIA" if dtype == "CUDA" else "AMD", device_type=dtype, arch=arch,
        peaks=Peaks(**peaks, source=f"{_PROTON_SOURCE}; no table entry fits, so no fp32 peak"),
        mem_bytes=None, num_sms=sms, efficiency=default_efficiency(name, base), **common,
        sources={**derived, "num_sms": f"Proton num_sms {sms}",
                 "mem_bytes": "unknown: Proton metadata does not carry the memory size"},
    )
