"""The calibrated, shape-aware time model: formulas, fitted parameters in units that travel, JSON files.

Fitting lives in :mod:`perfmodel.calibrate` (nothing here imports it); which GPU gets which model is
decided by :mod:`perfmodel.models.registry`.

All times are **GPU kernel time** in seconds — what a profiler (Proton, torch.profiler) sums —
so a predicted step adds up like a measured one. Timing a single call with CUDA events or
``triton.testing.do_bench`` adds a launch gap on top (``KernelParams.event_overhead_s``, ~2.9 µs
measured on the H200).

GEMM ``[M, K] @ [K, N]`` in one (format, scaling)::

    tiles    = ⌈M / tile_m⌉ · ⌈N / tile_n⌉                                 tile quantization
    waves    = (1 − q) · tiles / SMs  +  q · ⌈tiles / SMs⌉                   wave quantization, q ∈ [0, 1]
    compute  = waves · 2 · tile_m · tile_n · SMs · (K + k_overhead) / rate · f_align(K, N)
    compute ← compute · (1 + throttle_gain · ln(1 + min(compute, settle) / throttle_time_s))   clocks drop on
                                                                                 long runs, then settle
    time     = latency + max(compute, gemm_bytes / mem_bw)

``q = 0`` is perfect load balancing (split-K / stream-K), ``q = 1`` whole waves.
``f_align`` is 1 when the layout's leading dimensions (K and N; M and N for ``cr``) are multiples of
8 elements (16-byte rows for bf16), else the fitted slowdown for the largest power of two (1, 2 or 4)
dividing both; on sympy symbols it is a ``Piecewise`` over ``Mod(·, 2|4|8)``, so symbolic and numeric
answers agree. Misaligned 16-bit GEMMs of more than one row, and those with K < 8, run cuBLAS's pre-Hopper
fallback kernels (:func:`fallback_kernels`; one row runs Hopper or gemv kernels): where the calibration
has a fallback group (``bf16@fallback``, :data:`FALLBACK`) they are priced by that group's own
parameters (its ``f_align`` then relative to 2- and 4-aligned dimensions) and the main group prices the
others; without one, the main group's ``f_align`` prices them. Memory-bound kernels
cost ``latency + bytes / bw``, per recipe and per tensor kind for float8 casts (activations and
weights run different kernels); a launch-only kernel costs ``launch_s``.

Units that travel
-----------------
A calibration is fitted on one GPU (its :class:`ReferenceGPU`) and written in units that hold for
every GPU of the same architecture; on another GPU (``gpu=`` of a call) the model is rescaled by
that GPU's spec:

* GEMM ``rate`` is a fraction of the dense peak of the format (``rate_fraction``): on the target,
  ``rate_fraction × peak(fmt)`` — so SM count and clock enter through the peak;
* bandwidths (skinny GEMMs, memory kernels, casts) are fractions of the HBM bandwidth;
* latencies and launch costs are seconds; tiles, ``k_overhead``, ``q`` and the misalignment
  factors are the architecture's kernels and stay as they are; SMs come from the target's spec;
* ``throttle_gain`` scales with the *power pressure* ``peak_bf16 / power_w`` (dense tensor FLOP/s
  per watt of board power) relative to the reference — an **assumption**: one GPU cannot show how
  throttling depends on power headroom (:data:`ASSUMPTIONS` lists every one);
* the model has no L2 term (the sweeps flush L2 between calls), so the L2 size does not enter.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .._backend import namespace
from ..counting import ALIGN, _gemm_bytes, _off_sym, alignment, layout_lead_dims, misaligned
from ..errors import CalibrationError, UnknownGPUError
from ..formats import FORMATS, Format, get_format
from ..specs.gpu import GPUSpec, get_gpu

__all__ = [
    "ASSUMPTIONS",
    "CAST_LIKE",
    "CAST_RECIPES",
    "FALLBACK",
    "FILE_KEYS",
    "RANGES",
    "SCHEMA",
    "CalibratedModel",
    "CastParams",
    "GemmParams",
    "KernelParams",
    "ReferenceGPU",
    "fallback_kernels",
    "fallback_key",
    "load_calibration",
]

SCHEMA = "perfmodel.calibration/3"
#: the schema before fractions of the reference GPU (absolute units): no longer read; a file in it is named as such
_OLD_SCHEMA = "perfmodel.calibration/2"

#: What a transferred calibration assumes (no measurement of one GPU can identify these).
ASSUMPTIONS: tuple[str, ...] = (
    "GEMM rates scale with the dense peak of the format (SM count x clock), at the fitted fraction of it",
    "streaming kernels (copies, skinny GEMMs) reach the fitted fraction of the HBM bandwidth",
    "float8 cast kernels, which reached 25-65 % of the copy bandwidth where fitted, are limited by SM work: "
    "their rate scales with SMs x clock, capped by the target's copy bandwidth",
    "latencies and launch costs in seconds, tiles, per-tile K overhead, wave quantization and the "
    "misalignment slowdowns are the architecture's (same cuBLAS and inductor kernels)",
    "the throttle gain of long GEMMs scales with dense bf16 FLOP/s per watt of board power (power pressure)",
    "the in-step GEMM factors (GEMMs inside a training step vs. timed back to back) are the architecture's",
    "recipes whose casts were not measured (mxfp8, blockwise) cost what the measured rowwise casts cost per byte",
)


#: Physical range of each calibration parameter (inclusive), and why: a file outside them is refused
#: (:class:`~perfmodel.errors.CalibrationError`) instead of pricing GEMMs in days or in zero time. Wide on
#: purpose: every fit perfmodel's own fitter can produce (its bounds, :mod:`perfmodel.calibrate`) lies inside.
RANGES: dict[str, tuple[float, float, str]] = {
    "latency_s": (0.0, 1e-3, "a kernel's fixed cost: 1-11 us measured on the H200; 1 ms is 100x any measured one"),
    "launch_s": (0.0, 1e-3, "a launch-only kernel: 0.8 us measured on the H200"),
    "event_overhead_s": (0.0, 1e-3, "the CUDA-event launch gap: 2.9 us measured on the H200"),
    "k_overhead": (0.0, 1e5, "per-tile prologue/epilogue in elements of K: 160-500 measured, fitter bound 5000"),
    "throttle_gain": (0.0, 5.0, "clock drop of long GEMMs: 0.06-0.11 measured, fitter bound 2"),
    "throttle_time_s": (1e-9, 10.0, "time scale of the clock drop: 0.4-1.1 ms measured, fitter bound 0.1 s"),
    "throttle_settle_s": (1e-9, 3600.0, "kernel time after which clocks settle: 73 ms measured (or null: never)"),
    "misaligned_factor": (1.0, 100.0, "slowdown of misaligned GEMMs: up to 5.3x measured, fitter bound 30"),
    "fraction": (1e-3, 1.2, "a rate or bandwidth as a fraction of the GPU's peak: 0.15-0.85 measured on the H200"),
    "step_gemm_factor": (0.25, 4.0, "GEMMs inside a step vs. timed alone: 0.86-0.94 measured on the H200"),
    "num_sms": (1, 1024, "streaming multiprocessors / CUs: 16-160 on every GPU of the table"),
    "mem_bw_bytes_per_s": (1e9, 1e14, "HBM bandwidth: 0.3-8 TB/s on every GPU of the table"),
    "peak_flops_per_s": (1e9, 1e17, "a dense tensor peak: 100 PFLOP/s is 10x the fastest of the table"),
    "boost_clock_hz": (1e8, 1e10, "an SM clock: 1-2.6 GHz on every GPU of the table"),
    "power_w": (1.0, 1e4, "a board power limit: 70-1200 W on every GPU of the table"),
}


def _in_range(owner: str, name: str, value: Any, kind: str | None = None) -> None:
    """A named error unless ``value`` lies in :data:`RANGES` ``[kind or name]`` (finite numbers only)."""
    lo, hi, why = RANGES[kind or name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise CalibrationError(f"{owner}.{name} must be a finite number in [{lo:g}, {hi:g}], got {value!r}")
    if not lo <= value <= hi:
        raise CalibrationError(f"{owner}.{name} = {value!r} is outside [{lo:g}, {hi:g}] ({why}): not physical")


def _known_keys(owner: str, data: Mapping[str, Any], valid: Iterable[str]) -> None:
    """A named error for keys of a calibration file's object ``owner`` that perfmodel does not read."""
    if not isinstance(data, Mapping):
        raise CalibrationError(f"{owner} must be a JSON object, got {type(data).__name__}")
    valid = sorted(valid)
    unknown = sorted(str(k) for k in data if k not in valid)
    if unknown:
        raise CalibrationError(
            f"{owner}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown[:5]))}"
            f"{' ...' if len(unknown) > 5 else ''}; valid keys: {', '.join(valid)}"
        )


#: The keys a calibration file (schema 3) may hold, per object; any other is refused with these named.
FILE_KEYS: dict[str, tuple[str, ...]] = {
    "top": (
        "assumptions", "casts", "gemm", "gemm_aliases", "gpu", "kernels", "reference", "residuals", "schema",
        "source", "step_gemm_factors",
    ),
    "gemm": (
        "k_overhead", "latency_s", "mem_bw_fraction", "misaligned_factors", "rate_fraction", "throttle_gain",
        "throttle_settle_s", "throttle_time_s", "tile_m", "tile_n", "wave_quantization",
    ),
    "kernels": ("bw_fraction", "event_overhead_s", "latency_s", "launch_s"),
    "casts": ("activation_bw_fraction", "latency_s", "weight_bw_fraction"),
    "reference": ("arch", "boost_clock_hz", "mem_bw_bytes_per_s", "name", "num_sms", "peaks_flops_per_s", "power_w"),
}  # fmt: skip
#: Recipes whose casts a calibration may price (``casts`` keys: a name, or ``name+dynamic``): the float8 recipes
#: of :data:`perfmodel.float8.RECIPES` (this layer sits below it; ``tests/test_fuzz_inputs.py`` checks the list).
CAST_RECIPES: tuple[str, ...] = (
    "blockwise",
    "delayed",
    "dynamic",
    "mxfp8",
    "rowwise",
    "rowwise_with_gw_hp",
    "tensorwise",
)


def _check_file_keys(data: Mapping[str, Any]) -> None:
    """Unknown keys anywhere a schema-3 file has fixed keys, and cast names that are no recipe: named errors."""
    _known_keys("calibration", data, FILE_KEYS["top"])
    _known_keys("reference", data.get("reference", {}), FILE_KEYS["reference"])
    _known_keys("kernels", data.get("kernels", {}), FILE_KEYS["kernels"])
    for key, v in _mapping("gemm", data.get("gemm", {})).items():
        _known_keys(f"gemm[{key!r}]", v, FILE_KEYS["gemm"])
    valid_casts = [*CAST_RECIPES, *(f"{r}+dynamic" for r in CAST_RECIPES)]
    for key, v in _mapping("casts", data.get("casts", {})).items():
        if key not in valid_casts:
            raise CalibrationError(
                f"casts: unknown recipe {key!r}; valid keys: a float8 recipe ({', '.join(CAST_RECIPES)}), "
                "optionally with '+dynamic'"
            )
        _known_keys(f"casts[{key!r}]", v, FILE_KEYS["casts"])
    for name in ("step_gemm_factors", "gemm_aliases", "residuals"):
        _mapping(name, data.get(name, {}))


def _mapping(owner: str, value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise CalibrationError(f"{owner} must be a JSON object, got {type(value).__name__}")
    return value


def _check_label(label: Any, ref: ReferenceGPU) -> None:
    """The file's ``gpu`` label names the GPU its ``reference`` facts are of (a table name or alias of it)."""
    if not isinstance(label, str) or not label:
        raise CalibrationError(f"gpu must be the name of the GPU the calibration was fitted on, got {label!r}")
    try:
        name = get_gpu(label).name
    except UnknownGPUError:
        name = label  # a GPU outside the table: the reference block carries its facts
    if name != ref.name:
        raise CalibrationError(
            f"the file says gpu {label!r} but its reference facts are those of {ref.name!r}: one calibration is "
            f"fitted on one GPU; set gpu to {ref.name!r} (or refit on {label})"
        )


def _finite_positive(owner: str, **values: float) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise CalibrationError(f"{owner}.{name} must be a finite positive number, got {value!r}")


def _finite_nonneg(owner: str, **values: float) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise CalibrationError(f"{owner}.{name} must be a finite number >= 0, got {value!r}")


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
        operands' leading dimensions that decide alignment (default ``(K, N)``, row-major A and B)."""
        if _same_float_arrays(M, K, N):
            return self._compute_s_inplace(M, K, N, sms, lead_dims)
        xp = namespace(M, K, N)
        tiles = xp.cdiv(M, self.tile_m) * xp.cdiv(N, self.tile_n)
        q = self.wave_quantization
        waves = (1 - q) * tiles / sms + q * xp.cdiv(tiles, sms)
        t = waves * (2 * self.tile_m * self.tile_n * sms) * (K + self.k_overhead) / self.rate_flops_per_s
        if self.misaligned_factors != (1.0, 1.0, 1.0):
            t = t * self.misalignment(*(lead_dims or (K, N)))
        if self.throttle_gain:
            settled = t if self.throttle_settle_s == math.inf else xp.min(t, self.throttle_settle_s)
            t = t * (1 + self.throttle_gain * xp.log(1 + settled / self.throttle_time_s))
        return t

    def _compute_s_inplace(self, M: np.ndarray, K: np.ndarray, N: np.ndarray, sms: int, lead_dims: Any) -> np.ndarray:
        """:meth:`compute_s` on float64 arrays of one shape in two buffers instead of ~20 temporaries: the same
        operations in the same order, so the same floats (a grid of 10**6 shapes prices ~20 % faster)."""
        q = self.wave_quantization
        t = np.divide(M, self.tile_m)
        np.ceil(t, out=t)
        w = np.divide(N, self.tile_n)
        np.ceil(w, out=w)
        t *= w  # tiles
        np.divide(t, sms, out=w)
        np.ceil(w, out=w)
        w *= q
        t *= 1 - q
        t /= sms
        t += w  # waves
        t *= 2 * self.tile_m * self.tile_n * sms
        np.add(K, self.k_overhead, out=w)
        t *= w
        t /= self.rate_flops_per_s
        if self.misaligned_factors != (1.0, 1.0, 1.0):
            t *= self.misalignment(*(lead_dims or (K, N)))
        if self.throttle_gain:
            if self.throttle_settle_s == math.inf:
                w[...] = t
            else:
                np.minimum(t, self.throttle_settle_s, out=w)
            w /= self.throttle_time_s
            w += 1
            np.log(w, out=w)
            w *= self.throttle_gain
            w += 1
            t *= w
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


def _key(fmt: Format, scaling: str | None, layout: str = "rc") -> str:
    """Group key: ``bf16``, ``fp8_e4m3/rowwise``; a layout other than ``rc`` adds ``@rr`` / ``@cr``."""
    base = fmt.name if scaling is None else f"{fmt.name}/{scaling}"
    return base if layout == "rc" else f"{base}@{layout}"


def _fmt_of(key: str) -> str:
    """The format name of a group key (``bf16@rr`` -> ``bf16``; ``fp8_e4m3/rowwise`` -> ``fp8_e4m3``)."""
    return key.split("@")[0].split("/")[0]


#: Group-key suffix of the kernels cuBLAS falls back to when a 16-bit GEMM's leading dimensions are not
#: multiples of 8 (:data:`ALIGN`): pre-Hopper CUTLASS kernels (sm75 ``align1``, sm80 ``align2``/``align4``),
#: a different kernel class with its own rate, tile and latency (``bf16@fallback``).
FALLBACK = "fallback"


def fallback_key(fmt_name: str) -> str:
    """The fallback group of a 16-bit format: ``bf16@fallback``."""
    return f"{fmt_name}@{FALLBACK}"


def fallback_kernels(M: Any, K: Any, a: Any, b: Any) -> Any:
    """Whether cuBLAS runs its pre-Hopper fallback kernels for a 16-bit GEMM of ``M`` rows and reduction ``K``
    whose layout's leading dimensions are ``a``, ``b``: they are :func:`misaligned` and the GEMM has more than one
    row (one row runs cuBLAS's Hopper or gemv kernels), or K < :data:`ALIGN` — measured on every H200 layout sweep
    of 2026-12-01 (``python benchmarks/validate.py kernel-choice``). A bool, a bool array, or a sympy condition."""
    if namespace(M, K, a, b).name == "sympy":
        import sympy

        return sympy.Or(sympy.And(misaligned(a, b), sympy.Ne(M, 1)), sympy.Lt(K, ALIGN))
    out = (np.asarray(misaligned(a, b)) & (np.asarray(M) != 1)) | (np.asarray(K) < ALIGN)
    return out if any(isinstance(x, np.ndarray) for x in (M, K, a, b)) else bool(out)


def _select(cond: Any, if_true: Any, if_false: Any) -> Any:
    """``if_true`` where ``cond`` holds, else ``if_false``: numbers, arrays, or a sympy ``Piecewise``."""
    if namespace(if_true, if_false).name == "sympy" or type(cond).__module__.startswith("sympy"):
        import sympy

        return sympy.Piecewise((if_true, cond), (if_false, True))
    if isinstance(cond, np.ndarray):
        return np.where(cond, if_true, if_false)
    return if_true if cond else if_false


#: Recipes without a cast fit borrow the fit of the measured recipe whose kernels do the same work:
#: per-group amax and cast along rows and along columns (with a transposed copy), bf16 in, fp8 out.
CAST_LIKE: dict[str, str] = {"mxfp8": "rowwise", "blockwise": "rowwise"}

# Formats and scalings without their own fit borrow a measured one (same tensor-core path).
_BORROW = {"fp16": "bf16", "fp8_e5m2": "fp8_e4m3"}
_BORROW_SCALING = {"blockwise": "rowwise"}


@dataclasses.dataclass(frozen=True, kw_only=True)
class CalibratedModel:
    """A :class:`perfmodel.models.base.TimeModel` with parameters fitted on one GPU, usable on every GPU
    of its architecture (see "Units that travel" in the module doc).

    Attributes:
        gpu: the GPU name it was fitted on.
        gemm: ``"bf16"``, ``"fp8_e4m3/tensorwise"``, ``"fp8_e4m3/rowwise"``… -> :class:`GemmParams`,
            in absolute units of the reference GPU.
        kernels: memory-bound and launch-only kernel costs (reference GPU).
        casts: recipe name -> :class:`CastParams` (recipes without one use ``kernels``).
        step_gemm_factors: GEMM group -> measured / predicted GEMM kernel time inside profiled Linear
            training steps (below 1: GEMMs ran faster there than back-to-back in the GEMM sweep, whose
            sustained load lowers clocks); applied by :func:`perfmodel.float8.linear_time` only.
        source: where the measurements come from (script, GPU, date, versions).
        residuals: error statistics of the fit, per group (train and held-out).
        reference: the spec facts of the fitted GPU (default: the table entry named ``gpu``).
        gemm_aliases: ``"mxfp8/mx"`` -> ``"fp8_e4m3/tensorwise"``: groups priced with another group's
            parameters at their own peak (used by estimates for formats the reference GPU lacks).
    """

    gpu: str
    gemm: Mapping[str, GemmParams]
    kernels: KernelParams
    casts: Mapping[str, CastParams] = dataclasses.field(default_factory=dict)
    step_gemm_factors: Mapping[str, float] = dataclasses.field(default_factory=dict)
    source: str
    residuals: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    reference: ReferenceGPU | None = None
    gemm_aliases: Mapping[str, str] = dataclasses.field(default_factory=dict)
    name: str = "calibrated"

    def __post_init__(self) -> None:
        if self.reference is None:
            try:
                ref = ReferenceGPU.from_spec(get_gpu(self.gpu))
            except UnknownGPUError:
                raise CalibrationError(
                    f"calibration of {self.gpu!r}: not a GPU of the table, so pass reference=ReferenceGPU(...) "
                    "with the facts of the GPU it was fitted on"
                ) from None
            object.__setattr__(self, "reference", ref)
        for key, factor in self.step_gemm_factors.items():
            _finite_positive("CalibratedModel", **{f"step_gemm_factors[{key!r}]": factor})
            _in_range("CalibratedModel", f"step_gemm_factors[{key!r}]", factor, "step_gemm_factor")

    # -- which parameters, rescaled to which GPU ----------------------------------------------------
    def _group(self, fmt: Format, scaling: str | None, layout: str = "rc") -> str:
        """The group key whose parameters price (``fmt``, ``scaling``, ``layout``): its own fit, else the
        same format's ``rc`` fit, else the format it borrows (fp16 -> bf16, e5m2 -> e4m3, blockwise -> rowwise)."""
        for key in (_key(fmt, scaling, layout), _key(fmt, scaling)):
            if key in self.gemm or key in self.gemm_aliases:
                return key
        name = _BORROW.get(fmt.name, fmt.name)
        sc = _BORROW_SCALING.get(scaling, scaling) if scaling else None
        borrowed = _key(get_format(name), sc, layout)
        return borrowed if borrowed in self.gemm else _key(get_format(name), sc)

    def params_for(self, fmt: Format, scaling: str | None, layout: str = "rc") -> GemmParams | None:
        """The fitted parameters used for (``fmt``, ``scaling``, ``layout``) on the reference GPU, or ``None``."""
        key = self._group(fmt, scaling, layout)
        return self.gemm.get(self.gemm_aliases.get(key, key))

    def transfer_factors(self, gpu: GPUSpec, fmt: Format, scaling: str | None, layout: str = "rc") -> dict[str, float]:
        """How (``fmt``, ``scaling``) GEMMs rescale from the reference GPU to ``gpu``: rate, bandwidth
        and throttle multipliers (all 1.0 on the reference GPU itself)."""
        ref = self.reference
        assert ref is not None  # set in __post_init__
        key = self._group(fmt, scaling, layout)
        fitted_fmt = _fmt_of(self.gemm_aliases.get(key, key))
        ref_peak = ref.peaks_flops_per_s.get(fitted_fmt)
        rate = gpu.peak_flops_per_s(fmt) / ref_peak if ref_peak else 1.0
        f = self._memory_and_power(gpu)
        return {"rate": rate, "bandwidth": f["bandwidth"], "throttle": f["throttle"]}

    def _memory_and_power(self, gpu: GPUSpec) -> dict[str, float]:
        ref = self.reference
        assert ref is not None
        bandwidth = gpu.mem_bw_bytes_per_s / ref.mem_bw_bytes_per_s
        # SM throughput of non-tensor work (reductions, casts, transposes): SMs x clock
        sm_throughput = gpu.num_sms / ref.num_sms
        if ref.boost_clock_hz is not None:
            sm_throughput *= gpu.boost_clock_hz / ref.boost_clock_hz
        throttle = 1.0
        if gpu.supports("bf16") and "bf16" in ref.peaks_flops_per_s:
            mine = power_pressure(gpu.peak_flops_per_s("bf16"), gpu.power_w)
            theirs = power_pressure(ref.peaks_flops_per_s["bf16"], ref.power_w)
            if mine is not None and theirs is not None:
                throttle = mine / theirs
        return {"bandwidth": bandwidth, "throttle": throttle, "sm_throughput": sm_throughput}

    # -- the TimeModel protocol -----------------------------------------------------------------------
    def gemm_time_s(self, M, K, N, *, fmt, scaling, out_fmt, gpu, lead_dims=None, layout="rc"):
        from .base import ROOFLINE

        p = self.params_for(fmt, scaling, layout)
        if p is None:  # e.g. tf32 on a GPU calibrated for bf16/fp8 only
            return ROOFLINE.gemm_time_s(M, K, N, fmt=fmt, scaling=scaling, out_fmt=out_fmt, gpu=gpu)
        p = p.rescaled(**self.transfer_factors(gpu, fmt, scaling, layout))
        dims = lead_dims if lead_dims is not None else layout_lead_dims(layout, M, K, N)
        nbytes = _gemm_bytes(M, K, N, fmt, out_fmt, scaling)
        fb = self.fallback_params(fmt)
        if fb is None:
            return p.time_s(M, K, N, nbytes, gpu.num_sms, dims)
        # misaligned leading dimensions: cuBLAS's fallback kernels, priced by their own fit
        fb = fb.rescaled(**self.transfer_factors(gpu, fmt, scaling))
        aligned = _without_misalignment(p)
        cond = fallback_kernels(M, K, *dims)
        if isinstance(cond, np.ndarray) and not cond.any():  # a grid of aligned shapes: no fallback kernel to price
            t = aligned.time_s(M, K, N, nbytes, gpu.num_sms, dims)
            return t if np.shape(t) == cond.shape else np.broadcast_to(t, cond.shape).copy()
        return _select(
            cond,
            fb.time_s(M, K, N, nbytes, gpu.num_sms, dims),
            aligned.time_s(M, K, N, nbytes, gpu.num_sms, dims),
        )

    def fallback_params(self, fmt: Format) -> GemmParams | None:
        """The fitted fallback-kernel parameters of a 16-bit format (its own, else bf16's for fp16), or ``None``: then
        misaligned GEMMs are priced by the main group times its ``misaligned_factors``."""
        if fmt.bits < 16:
            return None
        own = self.gemm.get(fallback_key(fmt.name))
        return own if own is not None else self.gemm.get(fallback_key(_BORROW.get(fmt.name, fmt.name)))

    def event_overhead_s(self) -> float:
        """What timing one call with CUDA events (``do_bench``) adds to its kernel time, seconds (measured)."""
        return self.kernels.event_overhead_s

    def step_gemm_factor(self, fmt: Format, scaling: str | None) -> float:
        """The in-step factor for a GEMM group (1.0 when not measured)."""
        key = self._group(fmt, scaling)
        return float(self.step_gemm_factors.get(self.gemm_aliases.get(key, key), 1.0))

    def memory_kernel_time_s(self, bytes_moved, *, gpu, recipe=None, tensor=None):
        factors = self._memory_and_power(gpu)
        copy_bw = self.kernels.bw_bytes_per_s * factors["bandwidth"]  # streaming copies: HBM-bound
        p = self.cast_params(recipe) if recipe is not None else None
        if p is None:
            return self.kernels.latency_s + bytes_moved / copy_bw
        bw = p.weight_bw_bytes_per_s if tensor == "weight" else p.activation_bw_bytes_per_s
        # Casts ran at 25-65 % of the copy bandwidth on the reference GPU: not HBM-bound, so they keep
        # their rate scaled by SM throughput, up to the target's copy bandwidth (a roofline: the slower
        # of the kernel's own work and its HBM traffic).
        return p.latency_s + bytes_moved / min(bw * factors["sm_throughput"], copy_bw)

    def launch_time_s(self, *, gpu):
        return self.kernels.launch_s

    def cast_params(self, recipe: str) -> CastParams | None:
        """The cast costs used for ``recipe`` (a cast key: ``"rowwise"``, ``"rowwise+dynamic"``), or ``None``.

        A dynamic-shape key without its own fit falls back to the static fit of its recipe; a recipe
        without any fit borrows the measured recipe whose cast kernels do the same work
        (:data:`CAST_LIKE`: mxfp8 and blockwise cast per group along rows and columns, as rowwise does).
        """
        name, _, mode = recipe.partition("+")
        for key in (recipe, name):
            if key in self.casts:
                return self.casts[key]
        like = CAST_LIKE.get(name)
        if like is None:
            return None
        return self.casts.get(f"{like}+{mode}" if mode else like) or self.casts.get(like)

    # -- persistence ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (schema :data:`SCHEMA`): every rate and bandwidth as a fraction of the
        reference GPU's peak or HBM bandwidth, times in seconds."""
        ref = self.reference
        assert ref is not None
        bw = ref.mem_bw_bytes_per_s
        gemm = {}
        for key, p in self.gemm.items():
            d = dataclasses.asdict(p)
            d["rate_fraction"] = d.pop("rate_flops_per_s") / ref.peaks_flops_per_s[_fmt_of(key)]
            d["mem_bw_fraction"] = d.pop("mem_bw_bytes_per_s") / bw
            d["misaligned_factors"] = list(p.misaligned_factors)
            d["throttle_settle_s"] = None if p.throttle_settle_s == math.inf else p.throttle_settle_s
            gemm[key] = d
        k = self.kernels
        return {
            "schema": SCHEMA,
            "gpu": self.gpu,
            "source": self.source,
            "reference": ref.to_dict(),
            "assumptions": list(ASSUMPTIONS),
            "gemm": gemm,
            "gemm_aliases": dict(self.gemm_aliases),
            "kernels": {
                "latency_s": k.latency_s,
                "bw_fraction": k.bw_bytes_per_s / bw,
                "launch_s": k.launch_s,
                "event_overhead_s": k.event_overhead_s,
            },
            "casts": {
                key: {
                    "latency_s": c.latency_s,
                    "activation_bw_fraction": c.activation_bw_bytes_per_s / bw,
                    "weight_bw_fraction": c.weight_bw_bytes_per_s / bw,
                }
                for key, c in self.casts.items()
            },
            "step_gemm_factors": dict(self.step_gemm_factors),
            "residuals": dict(self.residuals),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, origin: str = "<dict>") -> CalibratedModel:
        """Inverse of :meth:`to_dict`; raises :class:`CalibrationError` naming ``origin``."""
        try:
            schema = data.get("schema")
            if schema == _OLD_SCHEMA:
                raise CalibrationError(
                    f"schema {_OLD_SCHEMA!r} (absolute units, written by perfmodel before schema 3) is no longer "
                    f"read: fit the GPU again with `perfmodel calibrate` to write {SCHEMA!r}"
                )
            if schema != SCHEMA:
                raise CalibrationError(f"schema is {schema!r}, expected {SCHEMA!r}")
            _check_file_keys(data)
            ref = ReferenceGPU(**data["reference"])
            _check_label(data["gpu"], ref)
            bw = ref.mem_bw_bytes_per_s
            gemm = {}
            for key, v in data["gemm"].items():
                v = dict(v)
                fmt = _fmt_of(key)
                if fmt not in ref.peaks_flops_per_s:
                    raise CalibrationError(f"gemm group {key!r}: the reference GPU has no {fmt} peak")
                for frac, limit in (("rate_fraction", 1.2), ("mem_bw_fraction", 1.2)):
                    _finite_positive("calibration", **{f"gemm[{key!r}].{frac}": v[frac]})
                    if v[frac] > limit:
                        raise CalibrationError(
                            f"gemm[{key!r}].{frac} = {v[frac]!r} is above {limit}: faster than the GPU's peak"
                        )
                    _in_range("calibration", f"gemm[{key!r}].{frac}", v[frac], "fraction")
                if v.get("throttle_settle_s", 0) is None:
                    v["throttle_settle_s"] = math.inf
                gemm[key] = GemmParams(
                    rate_flops_per_s=v.pop("rate_fraction") * ref.peaks_flops_per_s[fmt],
                    mem_bw_bytes_per_s=v.pop("mem_bw_fraction") * bw,
                    **{**v, "misaligned_factors": tuple(v.get("misaligned_factors", (1, 1, 1)))},
                )
            k = dict(data["kernels"])
            kernels = KernelParams(bw_bytes_per_s=_fraction(k.pop("bw_fraction"), "kernels.bw_fraction") * bw, **k)
            casts = {
                key: CastParams(
                    latency_s=c["latency_s"],
                    activation_bw_bytes_per_s=_fraction(c["activation_bw_fraction"], f"casts[{key!r}]") * bw,
                    weight_bw_bytes_per_s=_fraction(c["weight_bw_fraction"], f"casts[{key!r}]") * bw,
                )
                for key, c in data.get("casts", {}).items()
            }
            aliases = {str(a): str(b) for a, b in data.get("gemm_aliases", {}).items()}
            for alias, target in aliases.items():
                if target not in gemm:
                    raise CalibrationError(f"gemm_aliases[{alias!r}] names {target!r}, which has no parameters")
            return cls(
                gpu=str(data["gpu"]),
                source=str(data["source"]),
                reference=ref,
                gemm=gemm,
                gemm_aliases=aliases,
                kernels=kernels,
                casts=casts,
                step_gemm_factors={k: float(v) for k, v in data.get("step_gemm_factors", {}).items()},
                residuals=data.get("residuals", {}),
            )
        except CalibrationError as exc:
            raise CalibrationError(f"{origin}: {_short(str(exc))}") from None
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise CalibrationError(
                f"{origin}: not a perfmodel calibration ({type(exc).__name__}: {_short(str(exc))})"
            ) from None

    def save(self, path: str | Path, *, force: bool = False, inputs: tuple[str | Path, ...] = ()) -> Path:
        """Write the calibration JSON to ``path`` atomically; returns the path written.

        ``"-"`` (or ``/dev/stdout``) writes to standard output. An existing file is replaced only with
        ``force=True`` (it is never read first); a path that is one of ``inputs`` (the datasets) is
        refused; a missing folder is an error. A failed write leaves the old file intact.

        Raises:
            FileRefusedError: the file exists (without ``force``), is an input, or its folder is missing.
        """
        from .._files import write_atomic

        text = json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n"
        return write_atomic(path, text, force=force, inputs=inputs)


def _fraction(value: Any, what: str) -> float:
    _finite_positive("calibration", **{what: value})
    if value > 1.2:
        raise CalibrationError(f"{what} = {value!r} is above 1.2 of the HBM bandwidth: not physical")
    _in_range("calibration", what, value, "fraction")
    return float(value)


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def load_calibration(path: str | Path, *, max_bytes: int | None = None) -> CalibratedModel:
    """Read a calibration JSON written by :meth:`CalibratedModel.save` (schema 3).

    Only a regular file of at most 64 MiB is read (``max_bytes`` or ``$PERFMODEL_MAX_FILE_BYTES``
    override the limit); any nesting depth parses without recursion. Every parameter is range-checked.

    Raises:
        FileRefusedError: not a regular file (FIFO, device, folder), or above the size limit.
        CalibrationError: unreadable, not JSON, or not a valid calibration (the message names the file).
    """
    from .._files import DATA_MAX_BYTES, load_json, short

    path = Path(path)
    data = load_json(
        path, what="calibration", error=CalibrationError, limit_bytes=max_bytes, default_limit_bytes=DATA_MAX_BYTES
    )
    if not isinstance(data, dict):
        raise CalibrationError(f"{path}: expected a JSON object, got a {type(data).__name__}")
    try:
        return CalibratedModel.from_dict(data, origin=str(path))
    except CalibrationError:
        raise
    except (ArithmeticError, LookupError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        # values from_dict does not expect (e.g. an integer too large for a float, a deep structure)
        raise CalibrationError(f"{path}: not a perfmodel calibration ({type(exc).__name__}: {short(exc)})") from None
