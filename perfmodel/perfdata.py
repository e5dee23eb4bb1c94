"""``PerfData``: one roofline point, predicted or measured.

A point is time, FLOPs and bytes of some GPU work, the number format its FLOPs run in and the
GPU it ran (or would run) on. Everything else is derived: achieved TFLOP/s and TB/s, arithmetic
intensity, the roofs, utilisation and which roof bounds it. Fields may be numbers, numpy arrays
(a whole sweep as one object) or sympy expressions; properties evaluate on the same backend.

Units: ``time_s`` seconds, ``flops`` FLOP (1 FMA = 2 FLOP), ``bytes`` bytes of device memory
read + written. ``tflops``/``tbps`` are the only places that convert (1e12).
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

import numpy as np

from ._backend import check_compatible, check_nonnegative, check_positive, is_symbolic, namespace, short_repr
from .errors import PerfModelError
from .formats import Format, get_format
from .specs.gpu import GPUSpec, get_gpu

__all__ = ["MIN_TIME_S", "PerfData", "bitwidth_format"]

_BITWIDTH_FORMATS = {32: "tf32", 16: "bf16", 8: "fp8_e4m3", 4: "mxfp4"}
#: The shortest duration a point may have, seconds: one clock of a 1 THz device. GPU kernels take at least a
#: microsecond; below this FLOP/s overflow to infinity (1 FLOP in 5e-324 s) long before anything physical.
MIN_TIME_S = 1e-12


def bitwidth_format(bitwidth: int) -> Format:
    """The format Proton means by a bit width (``flops16`` -> bf16; 32 -> tf32; 8 -> fp8_e4m3; 4 -> mxfp4).

    Proton's ``specs.max_flops`` only knows widths; for 16 bits bf16 and fp16 share a peak, for 8
    bits E4M3 and E5M2 do, and for 32 bits Proton's formula gives the tf32 tensor-core rate.
    """
    whole = isinstance(bitwidth, numbers.Integral) and not isinstance(bitwidth, bool)
    if not whole or int(bitwidth) not in _BITWIDTH_FORMATS:
        raise PerfModelError(
            f"unknown bit width {short_repr(bitwidth)}; valid: {', '.join(str(b) for b in _BITWIDTH_FORMATS)} "
            "(Proton's flops4/8/16/32 metrics)"
        )
    return get_format(_BITWIDTH_FORMATS[int(bitwidth)])


@dataclasses.dataclass(frozen=True, kw_only=True)
class PerfData:
    """A roofline point.

    Attributes:
        time_s: duration, seconds (> 0).
        flops: floating-point operations (>= 0).
        bytes: device-memory bytes read + written (>= 0).
        dtype: the number format the FLOPs run in (selects the compute roof).
        gpu: the GPU (name or :class:`GPUSpec`; stored as a spec).
        label: a name for legends and tables.
        source: ``"predicted"`` or ``"measured"``.
        meta: free-form extras (shape, batch, kernel names...), read-only.
    """

    time_s: Any
    flops: Any
    bytes: Any
    dtype: Format
    gpu: GPUSpec
    label: str = ""
    source: Literal["predicted", "measured"] = "predicted"
    meta: Mapping[str, Any] = dataclasses.field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", get_format(self.dtype))
        object.__setattr__(self, "gpu", get_gpu(self.gpu))
        if self.source not in ("predicted", "measured"):
            raise PerfModelError(f"PerfData.source must be 'predicted' or 'measured', got {self.source!r}")
        time_s = check_positive("PerfData.time_s", self.time_s)
        if not is_symbolic(time_s) and bool(np.any(np.asarray(time_s) < MIN_TIME_S)):
            raise PerfModelError(
                f"PerfData.time_s must be at least {MIN_TIME_S:g} s (a picosecond; GPU kernels take microseconds), "
                f"got {short_repr(self.time_s)}"
            )
        object.__setattr__(self, "time_s", time_s)
        for name in ("flops", "bytes"):
            object.__setattr__(self, name, check_nonnegative(f"PerfData.{name}", getattr(self, name)))
        check_compatible(**{f"PerfData.{k}": getattr(self, k) for k in ("time_s", "flops", "bytes")})
        if not isinstance(self.label, str):
            raise PerfModelError(
                f"PerfData.label must be a string, got {type(self.label).__name__} {short_repr(self.label)}"
            )
        if not isinstance(self.meta, Mapping):
            raise PerfModelError(
                f"PerfData.meta must be a mapping (a dict of extras), got {type(self.meta).__name__} "
                f"{short_repr(self.meta)}"
            )
        object.__setattr__(self, "meta", MappingProxyType(dict(self.meta)))

    # -- construction from the seed's fields --------------------------------------------------
    @classmethod
    def from_proton_fields(
        cls,
        *,
        time: float,
        flops: float,
        bytes: float,
        bitwidth: int,
        device_type: str,
        device_info: Mapping[str, Any],
        label: str = "",
    ) -> PerfData:
        """Build from the fields of the Proton roofline script's ``PerfData`` (``time`` in **ns**,
        ``bitwidth`` 4/8/16/32, Proton ``device_type`` and ``device_info``); ``source="measured"``."""
        from .specs.gpu import gpu_from_proton

        gpu = gpu_from_proton(device_type, device_info)
        dtype = bitwidth_format(bitwidth)
        time = check_positive("PerfData.from_proton_fields: time (ns)", time)
        if dtype.bits == 8 and not gpu.supports(dtype) and gpu.supports("int8"):
            # Proton's flops8 on a GPU without fp8 (MI200: gfx90a, A100) is placed against the int8 roof,
            # as Triton 3.6's specs.py does ("For gfx90a we use the performance of INT8")
            dtype = get_format("int8")
        return cls(
            time_s=time / 1e9,
            flops=flops,
            bytes=bytes,
            dtype=dtype,
            gpu=gpu,
            label=label,
            source="measured",
        )

    # -- derived quantities ---------------------------------------------------------------------
    @property
    def flops_per_s(self) -> Any:
        """Achieved FLOP/s."""
        return self.flops / self.time_s

    @property
    def bytes_per_s(self) -> Any:
        """Achieved B/s."""
        return self.bytes / self.time_s

    @property
    def tflops(self) -> Any:
        """Achieved TFLOP/s (1e12 FLOP/s)."""
        return self.flops_per_s * 1e-12

    @property
    def tbps(self) -> Any:
        """Achieved TB/s (1e12 B/s)."""
        return self.bytes_per_s * 1e-12

    @property
    def opint(self) -> Any:
        """Arithmetic (operational) intensity, FLOP per byte.

        Raises:
            PerfModelError: when ``bytes`` is 0 (the intensity is undefined).
        """
        if not is_symbolic(self.bytes):
            import numpy as np

            if np.any(np.asarray(self.bytes) == 0):
                raise PerfModelError(f"PerfData {self.label!r}: bytes is 0, so the arithmetic intensity is undefined")
        return self.flops / self.bytes

    @property
    def peak_flops_per_s(self) -> float:
        """The GPU's dense peak for :attr:`dtype`, FLOP/s."""
        return self.gpu.peak_flops_per_s(self.dtype)

    @property
    def max_tflops(self) -> float:
        """Compute roof, TFLOP/s."""
        return self.peak_flops_per_s * 1e-12

    @property
    def max_tbps(self) -> float:
        """Memory roof, TB/s."""
        return self.gpu.mem_bw_bytes_per_s * 1e-12

    @property
    def min_compute_time_s(self) -> Any:
        """Time at the compute roof, seconds."""
        return self.flops / self.peak_flops_per_s

    @property
    def min_memory_time_s(self) -> Any:
        """Time at the memory roof, seconds."""
        return self.bytes / self.gpu.mem_bw_bytes_per_s

    @property
    def roof_time_s(self) -> Any:
        """The roofline's lower bound on the time: ``max(flops/peak, bytes/bw)``, seconds."""
        xp = namespace(self.flops, self.bytes)
        return xp.max(self.min_compute_time_s, self.min_memory_time_s)

    @property
    def roof_tflops(self) -> Any:
        """The roofline at this point's intensity, TFLOP/s: ``min(peak, opint * bw)``."""
        xp = namespace(self.flops, self.bytes)
        return xp.min(self.max_tflops, self.opint * self.max_tbps)

    @property
    def util(self) -> Any:
        """Roofline utilisation: ``max(flops/peak, bytes/bw) / time`` (1.0 = on the roof)."""
        return self.roof_time_s / self.time_s

    @property
    def bound(self) -> Any:
        """``"compute"`` or ``"memory"``: which roof is the binding one (ties go to compute)."""
        xp = namespace(self.flops, self.bytes)
        if xp.name == "sympy":
            raise PerfModelError("PerfData.bound needs numbers; substitute the symbols first")
        return xp.where(self.min_compute_time_s >= self.min_memory_time_s, "compute", "memory")

    def __repr__(self) -> str:
        text = str(self)
        return text if text.startswith("PerfData(") else f"PerfData({text})"

    def __str__(self) -> str:
        if namespace(self.time_s, self.flops, self.bytes).name != "python":
            return f"PerfData({self.label or 'unnamed'}, {self.source}, {self.dtype}, {self.gpu})"
        return (
            f"{self.label or 'PerfData'} [{self.source}, {self.dtype}, {self.gpu}]: "
            f"{self.time_s * 1e6:.2f} us, {self.tflops:.1f} TFLOP/s, {self.tbps:.2f} TB/s, "
            f"util {self.util:.1%} ({self.bound}-bound)"
        )
