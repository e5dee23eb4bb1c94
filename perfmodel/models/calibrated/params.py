"""Fitted parameters of one calibration in absolute units of one GPU: GEMM groups, memory-bound kernels, casts, and
the facts of the GPU they were fitted on (the formulas: :mod:`perfmodel.models.calibrated`)."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..._backend import namespace
from ...counting import ALIGN, _off_sym, alignment
from ...errors import CalibrationError
from ...formats import FORMATS
from ...specs.gpu import GPUSpec
from .checks import _finite_nonneg, _finite_positive, _in_range
from .ops import FUNCTIONAL, INPLACE

__all__ = ["CastParams", "GemmParams", "KernelParams", "ReferenceGPU", "power_pressure"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class GemmParams:
    """GEMM parameters for one (format, scaling) on one GPU, absolute units (formula in the module doc).

    Attributes:
        tile_m, tile_n: output tile, elements.
        rate_flops_per_s: steady-state rate of the whole GPU, FLOP/s.
        k_overhead: per-tile prologue/epilogue cost in units of K (elements).
        latency_s: fixed cost per GEMM (pipeline fill and drain), seconds.
        mem_bw_bytes_per_s: bandwidth of memory-bound (skinny) GEMMs, B/s.
        wave_quantization: q in [0, 1] (0: fractional waves, 1: whole waves).
        throttle_gain, throttle_time_s: clock drop on long kernels (0 gain: none).
        throttle_settle_s: kernel time after which clocks have settled (the slowdown stops growing): the
            longest GEMM the calibration measured; a kernel longer than any measured one is not
            extrapolated into an ever-slower clock.
        misaligned_factors: compute slowdown when K, N are only 1-, 2- or 4-aligned (each >= 1).
    """

    tile_m: int
    tile_n: int
    rate_flops_per_s: float
    k_overhead: float
    latency_s: float
    mem_bw_bytes_per_s: float
    wave_quantization: float = 1.0
    throttle_gain: float = 0.0
    throttle_time_s: float = 1e-3
    throttle_settle_s: float = math.inf
    misaligned_factors: tuple[float, float, float] = (1.0, 1.0, 1.0)

    def __post_init__(self) -> None:
        try:
            factors = tuple(float(f) for f in self.misaligned_factors)
        except (TypeError, ValueError):
            raise CalibrationError(
                f"GemmParams.misaligned_factors must be 3 numbers >= 1, got {self.misaligned_factors!r}"
            ) from None
        object.__setattr__(self, "misaligned_factors", factors)
        for name in ("tile_m", "tile_n"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 4096:
                raise CalibrationError(f"GemmParams.{name} must be an int in 1..4096 elements, got {value!r}")
        _finite_positive(
            "GemmParams",
            rate_flops_per_s=self.rate_flops_per_s,
            mem_bw_bytes_per_s=self.mem_bw_bytes_per_s,
            throttle_time_s=self.throttle_time_s,
        )
        _finite_nonneg(
            "GemmParams", k_overhead=self.k_overhead, latency_s=self.latency_s, throttle_gain=self.throttle_gain
        )
        if not (isinstance(self.throttle_settle_s, (int, float)) and self.throttle_settle_s > 0):
            raise CalibrationError(f"GemmParams.throttle_settle_s must be > 0 s, got {self.throttle_settle_s!r}")
        for name in ("latency_s", "k_overhead", "throttle_gain", "throttle_time_s"):
            _in_range("GemmParams", name, getattr(self, name))
        if self.throttle_settle_s != math.inf:
            _in_range("GemmParams", "throttle_settle_s", self.throttle_settle_s)
        for i, f in enumerate(factors):
            _in_range("GemmParams", f"misaligned_factors[{i}]", f, "misaligned_factor")
        if not 0 <= self.wave_quantization <= 1:
            raise CalibrationError(f"GemmParams.wave_quantization must be in [0, 1], got {self.wave_quantization!r}")
        if len(factors) != 3 or not all(math.isfinite(f) and f >= 1 for f in factors):
            raise CalibrationError(f"GemmParams.misaligned_factors must be 3 finite values >= 1, got {factors!r}")

    def compute_s(self, M: Any, K: Any, N: Any, sms: int, lead_dims: tuple[Any, Any] | None = None) -> Any:
        """The compute term (before the memory max and the latency), seconds. ``lead_dims``: the
        operands' leading dimensions that decide alignment (default ``(K, N)``, row-major A and B).

        The formula of the module doc, written once in the operations of :mod:`.ops`: float64 arrays of one shape
        (a checked grid) are priced in two buffers (:data:`~.ops.INPLACE`), anything else value by value."""
        ops = INPLACE if _same_float_arrays(M, K, N) else FUNCTIONAL
        q = self.wave_quantization
        per_wave = 2 * self.tile_m * self.tile_n * sms / self.rate_flops_per_s  # s per wave and element of K
        t = ops.cdiv(M, self.tile_m)
        w = ops.cdiv(N, self.tile_n)
        t = ops.mul(t, w)  # tiles
        w = ops.mul(ops.cdiv(t, sms, into=w), q * per_wave)  # whole waves
        t = ops.add(ops.mul(t, (1 - q) * per_wave / sms), w)  # waves, in seconds per element of K
        t = ops.mul(t, ops.add(K, self.k_overhead, into=w))
        if self.misaligned_factors != (1.0, 1.0, 1.0):
            t = ops.mul(t, self.misalignment(*(lead_dims or (K, N))))
        if self.throttle_gain:
            w = ops.min(t, self.throttle_settle_s, into=w)
            w = ops.add(ops.mul(w, 1 / self.throttle_time_s), 1)
            t = ops.mul(t, ops.add(ops.times_log(w, self.throttle_gain), 1))
        return t

    def misalignment(self, a: Any, b: Any) -> Any:
        """The compute slowdown for leading dimensions ``a``, ``b``: ``misaligned_factors[0|1|2]`` when the
        largest power of two dividing both is 1, 2 or 4 elements, else 1. On sympy values it is a
        ``Piecewise`` over ``Mod`` (closed form; equal to the numeric value once the symbols are numbers)."""
        f1, f2, f4 = self.misaligned_factors
        if namespace(a, b).name == "sympy":
            import sympy

            return sympy.Piecewise(
                (f1, _off_sym(a, b, 2)), (f2, _off_sym(a, b, 4)), (f4, _off_sym(a, b, ALIGN)), (1.0, True)
            )
        al = np.minimum(alignment(a), alignment(b))
        factor = np.select([al == 1, al == 2, al == 4], [f1, f2, f4], 1.0)
        return factor if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else float(factor)

    def time_s(
        self, M: Any, K: Any, N: Any, gemm_bytes: Any, sms: int, lead_dims: tuple[Any, Any] | None = None
    ) -> Any:
        """Kernel time of one GEMM moving ``gemm_bytes``, seconds."""
        xp = namespace(M, K, N)
        compute = self.compute_s(M, K, N, sms, lead_dims)
        if _same_float_arrays(M, K, N) and np.shape(gemm_bytes) == compute.shape:  # compute is a buffer of ours
            np.maximum(compute, gemm_bytes / self.mem_bw_bytes_per_s, out=compute)
            compute += self.latency_s
            return compute
        return self.latency_s + xp.max(compute, gemm_bytes / self.mem_bw_bytes_per_s)

    def rescaled(self, *, rate: float = 1.0, bandwidth: float = 1.0, throttle: float = 1.0) -> GemmParams:
        """These parameters on another GPU: rate, bandwidth and throttle gain multiplied by the factors."""
        if rate == bandwidth == throttle == 1.0:
            return self
        return _rescaled(self, rate, bandwidth, throttle)


@dataclasses.dataclass(frozen=True, kw_only=True)
class KernelParams:
    """Memory-bound kernels: ``latency_s + bytes / bw_bytes_per_s``; a tiny kernel ``launch_s``;
    ``event_overhead_s``: what CUDA-event timing of one call adds to its kernel time. Seconds, B/s."""

    latency_s: float
    bw_bytes_per_s: float
    launch_s: float
    event_overhead_s: float = 0.0

    def __post_init__(self) -> None:
        _finite_positive("KernelParams", bw_bytes_per_s=self.bw_bytes_per_s)
        _finite_nonneg(
            "KernelParams", latency_s=self.latency_s, launch_s=self.launch_s, event_overhead_s=self.event_overhead_s
        )
        for name in ("latency_s", "launch_s", "event_overhead_s"):
            _in_range("KernelParams", name, getattr(self, name))


@dataclasses.dataclass(frozen=True, kw_only=True)
class CastParams:
    """The cast kernels of one float8 recipe as torch.compile + torchao run them, fitted on measured
    Linear steps: ``latency_s`` per kernel plus bytes over ``activation_bw_bytes_per_s`` (input,
    grad_output) or ``weight_bw_bytes_per_s`` (weight). Seconds, B/s."""

    latency_s: float
    activation_bw_bytes_per_s: float
    weight_bw_bytes_per_s: float

    def __post_init__(self) -> None:
        _finite_positive(
            "CastParams",
            activation_bw_bytes_per_s=self.activation_bw_bytes_per_s,
            weight_bw_bytes_per_s=self.weight_bw_bytes_per_s,
        )
        _finite_nonneg("CastParams", latency_s=self.latency_s)
        _in_range("CastParams", "latency_s", self.latency_s)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReferenceGPU:
    """The spec facts of the GPU a calibration was fitted on: what its fractions are fractions of.

    Attributes:
        name, arch: as in :class:`~perfmodel.specs.gpu.GPUSpec`.
        peaks_flops_per_s: format name -> dense peak, FLOP/s.
        mem_bw_bytes_per_s: HBM bandwidth, B/s.
        num_sms: SMs (CUs).
        boost_clock_hz: max SM clock, Hz (``None``: unknown; SM throughput then scales with SMs only).
        power_w: board power limit, W (``None``: unknown; the throttle term is then not rescaled).
    """

    name: str
    arch: str
    peaks_flops_per_s: Mapping[str, float]
    mem_bw_bytes_per_s: float
    num_sms: int
    boost_clock_hz: float | None = None
    power_w: float | None = None

    def __post_init__(self) -> None:
        peaks = {}
        for fmt, value in dict(self.peaks_flops_per_s).items():
            if fmt not in FORMATS:
                raise CalibrationError(f"ReferenceGPU.peaks_flops_per_s: unknown format {fmt!r}")
            _finite_positive("ReferenceGPU", **{f"peak[{fmt}]": value})
            _in_range("ReferenceGPU", f"peaks_flops_per_s[{fmt!r}]", value, "peak_flops_per_s")
            peaks[fmt] = float(value)
        object.__setattr__(self, "peaks_flops_per_s", peaks)
        _finite_positive("ReferenceGPU", mem_bw_bytes_per_s=self.mem_bw_bytes_per_s, num_sms=self.num_sms)
        if isinstance(self.num_sms, bool) or not isinstance(self.num_sms, int):
            raise CalibrationError(f"ReferenceGPU.num_sms must be a whole number, got {self.num_sms!r}")
        _in_range("ReferenceGPU", "num_sms", self.num_sms)
        _in_range("ReferenceGPU", "mem_bw_bytes_per_s", self.mem_bw_bytes_per_s)
        for name in ("boost_clock_hz", "power_w"):
            if getattr(self, name) is not None:
                _finite_positive("ReferenceGPU", **{name: getattr(self, name)})
                _in_range("ReferenceGPU", name, getattr(self, name))

    @classmethod
    def from_spec(cls, spec: GPUSpec) -> ReferenceGPU:
        """The facts of ``spec`` that a transfer rescales by."""
        return cls(
            name=spec.name,
            arch=spec.arch,
            peaks_flops_per_s={f: spec.peak_flops_per_s(f) for f in spec.peaks.supported()},
            mem_bw_bytes_per_s=spec.mem_bw_bytes_per_s,
            num_sms=spec.num_sms,
            boost_clock_hz=spec.boost_clock_hz,
            power_w=spec.power_w,
        )

    def matches(self, spec: GPUSpec) -> bool:
        """True when ``spec`` has exactly these facts (a prediction for it is not a transfer)."""
        try:
            return self == ReferenceGPU.from_spec(spec)
        except CalibrationError:
            return False

    def to_dict(self) -> dict[str, Any]:
        """Plain types (JSON-ready)."""
        return dataclasses.asdict(self)


@functools.lru_cache(maxsize=512)
def _rescaled(p: GemmParams, rate: float, bandwidth: float, throttle: float) -> GemmParams:
    """:meth:`GemmParams.rescaled`, built (and range-checked) once per parameters and factors: a grid priced block
    by block asks for the same few every block."""
    return dataclasses.replace(
        p,
        rate_flops_per_s=p.rate_flops_per_s * rate,
        mem_bw_bytes_per_s=p.mem_bw_bytes_per_s * bandwidth,
        throttle_gain=p.throttle_gain * throttle,
    )


@functools.lru_cache(maxsize=512)
def _without_misalignment(p: GemmParams) -> GemmParams:
    """``p`` with misalignment factors 1 (the main group beside a fallback group), built once per parameters."""
    return dataclasses.replace(p, misaligned_factors=(1.0, 1.0, 1.0))


def _same_float_arrays(*xs: Any) -> bool:
    """Whether ``xs`` are float64 numpy arrays of one shape (a checked grid): :meth:`GemmParams.compute_s` then
    computes in place."""
    first = xs[0]
    return all(isinstance(x, np.ndarray) and x.dtype == np.float64 and x.shape == first.shape for x in xs)


def power_pressure(peak_bf16_flops_per_s: float, power_w: float | None) -> float | None:
    """Dense bf16 FLOP/s per watt of board power (``None`` when the power is unknown)."""
    return None if power_w is None else peak_bf16_flops_per_s / power_w
