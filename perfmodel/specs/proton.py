"""Proton device metadata -> :class:`~perfmodel.specs.gpu.GPUSpec` (re-exported by :mod:`perfmodel.specs.gpu`).

Split out of :mod:`perfmodel.specs.gpu` to keep each module small; import the public names from there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from .._files import short, short_repr
from ..errors import ProfileError, UnknownGPUError
from ..formats import FORMATS
from .spec import AMD_DEFAULT_EFFICIENCY, NVIDIA_DEFAULT_EFFICIENCY, GPUSpec, Peaks, default_efficiency
from .table import TABLE

__all__ = [
    "DEVICE_RANGES",
    "device_range_applies",
    "gpu_from_proton",
    "proton_mem_bw_bytes_per_s",
    "proton_peak_flops_per_s",
]


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
#: HIP: fp8 matrix FLOP per clock per CU (gfx90a: the int8 rate; CDNA 2 has no fp8, so Proton's
#: 8-bit roof there is int8's and flops8 is placed against it).
_HIP_FP8_FLOPS_PER_CLK_PER_CU = {"gfx90a": 1024, "gfx942": 4096, "gfx950": 8192}
#: HIP peak bandwidth per arch, B/s (Proton ignores bus width and memory clock on HIP).
_HIP_MEM_BW = {"gfx90a": 3.2e12, "gfx942": 5.3e12, "gfx950": 8.0e12}
#: MI300 (CDNA 3) ids of early parts, priced as gfx942. Triton 3.6 lists only gfx942; its earlier viewer
#: treated gfx941 as gfx942 (`elif arch == "gfx941" or arch == "gfx942"`, third_party/proton/proton/viewer.py
#: @ f65efe4f4c2571886e30d7d6c6bb7bd09d53ec22, github.com/triton-lang/triton), and LLVM's AMDGPU processor
#: table (llvm.org/docs/AMDGPUUsage.html) lists gfx940, gfx941 and gfx942 as CDNA 3. The spec keeps its arch.
_HIP_ALIASES = {"gfx940": "gfx942", "gfx941": "gfx942"}
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


#: Physical range of each number of Proton's device metadata (inclusive): (low, high, unit, why). Outside them a
#: profile's metadata is refused (:class:`~perfmodel.errors.ProfileError`) instead of giving an infinite or zero
#: peak (a memory clock of 5e-324 kHz made every util infinite).
DEVICE_RANGES: dict[str, tuple[float, float, str, str]] = {
    "num_sms": (1, 1024, "SMs/CUs", "16-160 on every GPU of the table"),
    "clock_rate": (1e4, 1e7, "kHz", "an SM clock of 10 MHz to 10 GHz; 1.98e6 kHz on the H200"),
    "memory_clock_rate": (1e4, 1e8, "kHz", "a DRAM clock of 10 MHz to 100 GHz; 3.2e6 kHz HBM3e, 1.05e7 GDDR6X"),
    "bus_width": (8, 65536, "bits", "a memory bus of 8 bits to 64 Kibit; 6144 on the H200, 8192 on the MI300X"),
}


def device_range_applies(device_type: str, key: str) -> bool:
    """Whether :data:`DEVICE_RANGES` ``[key]`` is checked for ``device_type``: always, except the memory clock
    and bus width of HIP devices, which Proton's formulas do not use (a constant bandwidth per arch)."""
    return not (str(device_type).strip().upper() == "HIP" and key in ("memory_clock_rate", "bus_width"))


def _known_archs(device_type: str) -> list[str]:
    return sorted(_CUDA_FP8_FLOPS if device_type == "CUDA" else _HIP_FP8_FLOPS_PER_CLK_PER_CU)


def _formula_arch(device_type: str, arch: str) -> str:
    """The arch whose formula prices ``arch`` (itself, or gfx942 for the MI300 ids gfx940 and gfx941)."""
    return _HIP_ALIASES.get(arch, arch) if device_type == "HIP" else arch


def _check_arch(device_type: str, arch: str) -> None:
    if device_type not in ("CUDA", "HIP"):
        raise UnknownGPUError(f"unknown Proton device type {short(repr(device_type))}; valid: CUDA, HIP.")
    if _formula_arch(device_type, arch) not in _known_archs(device_type):
        aliases = " (and gfx940, gfx941: MI300 ids, priced as gfx942)" if device_type == "HIP" else ""
        raise UnknownGPUError(
            f"no Proton peak formula for {device_type} arch {short(repr(arch))}; known {device_type} archs: "
            f"{', '.join(_known_archs(device_type))}{aliases}, those of triton.profiler.specs in Triton 3.6. "
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
        fp8 = _HIP_FP8_FLOPS_PER_CLK_PER_CU[_formula_arch(device_type, arch)] * num_sms * clock_khz * 1e3
    else:
        fp8 = _CUDA_FP8_FLOPS[arch](num_sms, clock_khz)
    return fp8 / (width / 8)


def proton_mem_bw_bytes_per_s(device_type: str, arch: str, bus_width_bits: int, mem_clock_khz: float) -> float:
    """Proton's peak DRAM bandwidth, B/s, as ``triton.profiler.specs.max_bps``.

    CUDA: ``2 * bus_width_bits * mem_clock_khz * 1e3 / 8`` (double data rate); HIP: a constant per arch.
    """
    _check_arch(device_type, arch)
    if device_type == "HIP":
        return _HIP_MEM_BW[_formula_arch(device_type, arch)]
    return 2 * bus_width_bits * mem_clock_khz * 1e3 / 8


def _parse_device_info(device_type: Any, device_info: Mapping[str, Any]) -> tuple[str, str, dict[str, float]]:
    if not isinstance(device_type, str):
        raise ProfileError(
            f"Proton device_type must be a string such as 'CUDA' or 'HIP', got {short_repr(device_type)}"
        )
    dtype = device_type.strip().upper()
    if not isinstance(device_info, Mapping):
        raise ProfileError(f"Proton device_info must be a mapping, got {type(device_info).__name__}")
    missing = [k for k in _PROTON_KEYS if k not in device_info]
    if missing:
        raise ProfileError(
            f"Proton device_info lacks {', '.join(repr(k) for k in missing)} (has: "
            f"{short(', '.join(short(repr(k), 40) for k in list(device_info)[:20])) or 'nothing'}). "
            "Pass one device's entry of the profile's "
            "metadata, e.g. meta['CUDA']['0'] = {'arch': '90', 'num_sms': 132, 'clock_rate': ..., "
            "'memory_clock_rate': ..., 'bus_width': ...}."
        )
    arch = device_info["arch"]
    if isinstance(arch, bool) or not isinstance(arch, (str, int)) or not str(arch).strip():
        raise ProfileError(f"Proton device_info 'arch' must be a string like '90' or 'gfx942', got {short_repr(arch)}")
    arch = str(arch).strip().split(":")[0].lower()  # "gfx942:sramecc+:xnack-" -> "gfx942"
    _check_arch(dtype, arch)
    numbers: dict[str, float] = {}
    for key in _PROTON_KEYS[1:]:
        value = device_info[key]
        lo, hi, unit, why = DEVICE_RANGES[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < float("inf")):
            raise ProfileError(f"Proton device_info {key!r} must be a positive number, got {short_repr(value)}")
        if device_range_applies(dtype, key) and not lo <= value <= hi:
            raise ProfileError(
                f"Proton device_info {key!r} = {short_repr(value)} is outside [{lo:g}, {hi:g}] {unit} ({why}): "
                "not a device Proton can have profiled; check the profile's metadata"
            )
        if key in ("num_sms", "bus_width") and value != int(value):
            raise ProfileError(f"Proton device_info {key!r} must be a whole number, got {value!r}")
        numbers[key] = int(value) if key in ("num_sms", "bus_width") else float(value)
    return dtype, arch, numbers


def _close(a: float, b: float, rel: float = 5e-3) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b))


def _table_match(device_type: str, arch: str, info: Mapping[str, float]) -> GPUSpec | None:
    """The table entry that fits the metadata best: same device type, arch and SM count; bus width and
    memory clock equal where both know them; the entry that knows more of them wins, then table order."""
    best, best_score = None, -1
    for gpu in TABLE:  # table order
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
    are known) the result is that entry (name, efficiency, memory size, power...) with the
    derived peaks and bandwidth; otherwise a generic spec named like ``"CUDA-sm90-132SM"`` with the
    default efficiency and ``mem_bytes=None``. GPUs that Proton cannot tell apart resolve to the first
    row: an H200 NVL profile (132 SMs, no bus width known for the NVL) -> H200 (``dataclasses.replace``
    the result if needed). GB200 (152 SMs) and B200 (148) are told apart by their SM counts.

    Raises:
        ProfileError: missing keys or non-numeric values (a ``ValueError``).
        UnknownGPUError: a device type or arch without a Proton formula (a ``LookupError``).
    """
    dtype, arch, info = _parse_device_info(device_type, device_info)
    entry = _table_match(dtype, arch, info)
    sms, khz = info["num_sms"], info["clock_rate"]
    names = entry.peaks.supported() if entry is not None else list(_ARCH_FORMATS[_formula_arch(dtype, arch)])
    peaks = {n: proton_peak_flops_per_s(dtype, arch, FORMATS[n].proton_width, sms, khz) for n in names if n != "fp32"}
    bw = proton_mem_bw_bytes_per_s(dtype, arch, info["bus_width"], info["memory_clock_rate"])
    bw_how = (
        f"{_PROTON_SOURCE}: 2 * bus_width * memory_clock_rate * 1e3 / 8"
        if dtype == "CUDA"
        else f"{_PROTON_SOURCE}: Proton's constant for {_formula_arch(dtype, arch)}"
        + (f" ({arch}: an MI300 id, priced as gfx942)" if arch in _HIP_ALIASES else "")
    )
    derived = {
        "mem_bw_bytes_per_s": bw_how,
        "boost_clock_hz": f"Proton clock_rate {khz} kHz",
        "bus_width_bits": f"Proton bus_width {info['bus_width']}",
        "mem_clock_hz": f"Proton memory_clock_rate {info['memory_clock_rate']} kHz",
    }
    common = dict(
        mem_bw_bytes_per_s=bw,
        boost_clock_hz=khz * 1e3,
        bus_width_bits=int(info["bus_width"]),
        mem_clock_hz=info["memory_clock_rate"] * 1e3,
    )
    if entry is not None:
        fp32 = {"fp32": entry.peaks.fp32} if entry.peaks.fp32 is not None else {}
        return dataclasses.replace(
            entry,
            **common,
            peaks=Peaks(**peaks, **fp32, source=f"{_PROTON_SOURCE}; fp32 from the table ({entry.peaks.source})"),
            sources={**entry.sources, **derived},
        )
    name = f"CUDA-sm{arch}-{sms}SM" if dtype == "CUDA" else f"HIP-{arch}-{sms}CU"
    base = NVIDIA_DEFAULT_EFFICIENCY if dtype == "CUDA" else AMD_DEFAULT_EFFICIENCY
    return GPUSpec(
        name=name,
        vendor="NVIDIA" if dtype == "CUDA" else "AMD",
        device_type=dtype,
        arch=arch,
        peaks=Peaks(**peaks, source=f"{_PROTON_SOURCE}; no table entry fits, so no fp32 peak"),
        mem_bytes=None,
        num_sms=sms,
        efficiency=default_efficiency(name, base),
        **common,
        sources={
            **derived,
            "num_sms": f"Proton num_sms {sms}",
            "mem_bytes": "unknown: Proton metadata does not carry the memory size",
        },
    )
