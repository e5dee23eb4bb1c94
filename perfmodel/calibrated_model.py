"""The calibrated, shape-aware time model: formulas and fitted parameters (fitting: :mod:`.calibrate`).

All times are **GPU kernel time** in seconds — what a profiler (Proton, torch.profiler) sums —
so a predicted step adds up like a measured one. Timing a single call with CUDA events or
``triton.testing.do_bench`` adds a launch gap on top (``KernelParams.event_overhead_s``, ~2.4 µs
measured on the H200).

GEMM ``[M, K] @ [K, N]`` in one (format, scaling)::

    tiles    = ⌈M / tile_m⌉ · ⌈N / tile_n⌉                                 tile quantization
    waves    = (1 − q) · tiles / SMs  +  q · ⌈tiles / SMs⌉                   wave quantization, q ∈ [0, 1]
    compute  = waves · 2 · tile_m · tile_n · SMs · (K + k_overhead) / rate · f_align(K, N)
    compute ← compute · (1 + throttle_gain · ln(1 + compute / throttle_time_s))   clocks drop on long runs
    time     = latency + max(compute, gemm_bytes / mem_bw)

``q = 0`` is perfect load balancing (split-K / stream-K), ``q = 1`` whole waves.
``f_align`` is 1 when K and N are multiples of 8 elements (16-byte rows for bf16), else the
fitted slowdown for the largest power of two (1, 2 or 4) dividing both; on sympy symbols the
shapes are taken as aligned. Memory-bound kernels cost ``latency + bytes / bw``, per recipe and
per tensor kind for float8 casts (activations and weights run different kernels); a launch-only
kernel costs ``launch_s``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ._backend import namespace
from .errors import CalibrationError
from .formats import Format, get_format

__all__ = [
    "SCHEMA",
    "CalibratedModel",
    "CastParams",
    "GemmParams",
    "KernelParams",
    "alignment",
    "load_calibration",
]

SCHEMA = "perfmodel.calibration/2"
ALIGN = 8  # elements: cuBLAS's fast (TMA) paths need 16-byte rows for 2-byte elements


def alignment(x: Any) -> Any:
    """Largest power of two (1, 2, 4, 8) dividing ``x`` (elementwise on arrays)."""
    x = np.asarray(x).astype(np.int64)
    out = np.ones_like(x)
    for p in (2, 4, 8):
        out = np.where(x % p == 0, p, out)
    return out


@dataclasses.dataclass(frozen=True, kw_only=True)
class GemmParams:
    """Fitted GEMM parameters for one (format, scaling) on one GPU (formula in the module doc).

    Attributes:
        tile_m, tile_n: output tile, elements.
        rate_flops_per_s: steady-state rate of the whole GPU, FLOP/s.
        k_overhead: per-tile prologue/epilogue cost in units of K (elements).
        latency_s: fixed cost per GEMM (pipeline fill and drain), seconds.
        mem_bw_bytes_per_s: bandwidth of memory-bound (skinny) GEMMs, B/s.
        wave_quantization: q in [0, 1] (0: fractional waves, 1: whole waves).
        throttle_gain, throttle_time_s: clock drop on long kernels (0 gain: none).
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
    misaligned_factors: tuple[float, float, float] = (1.0, 1.0, 1.0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "misaligned_factors", tuple(float(f) for f in self.misaligned_factors))
        for name in ("tile_m", "tile_n", "rate_flops_per_s", "mem_bw_bytes_per_s", "throttle_time_s"):
            if not getattr(self, name) > 0:
                raise CalibrationError(f"GemmParams.{name} must be positive, got {getattr(self, name)!r}")
        if self.k_overhead < 0 or self.latency_s < 0 or self.throttle_gain < 0:
            raise CalibrationError("GemmParams.k_overhead, latency_s and throttle_gain must be >= 0")
        if not 0 <= self.wave_quantization <= 1:
            raise CalibrationError(f"GemmParams.wave_quantization must be in [0, 1], got {self.wave_quantization!r}")
        if len(self.misaligned_factors) != 3 or min(self.misaligned_factors) < 1:
            raise CalibrationError(
                f"GemmParams.misaligned_factors must be 3 values >= 1, got {self.misaligned_factors!r}"
            )

    def compute_s(self, M: Any, K: Any, N: Any, sms: int, lead_dims: tuple[Any, Any] | None = None) -> Any:
        """The compute term (before the memory max and the latency), seconds. ``lead_dims``: the
        operands' leading dimensions that decide alignment (default ``(K, N)``, row-major A and B)."""
        xp = namespace(M, K, N)
        tiles = xp.cdiv(M, self.tile_m) * xp.cdiv(N, self.tile_n)
        q = self.wave_quantization
        waves = (1 - q) * tiles / sms + q * xp.cdiv(tiles, sms)
        t = waves * (2 * self.tile_m * self.tile_n * sms) * (K + self.k_overhead) / self.rate_flops_per_s
        if xp.name != "sympy" and self.misaligned_factors != (1.0, 1.0, 1.0):
            a = np.minimum(*(alignment(d) for d in (lead_dims or (K, N))))
            f1, f2, f4 = self.misaligned_factors
            factor = np.select([a == 1, a == 2, a == 4], [f1, f2, f4], 1.0)
            t = t * (factor if xp.name == "numpy" else float(factor))
        if self.throttle_gain:
            t = t * (1 + self.throttle_gain * xp.log(1 + t / self.throttle_time_s))
        return t

    def time_s(
        self, M: Any, K: Any, N: Any, gemm_bytes: Any, sms: int, lead_dims: tuple[Any, Any] | None = None
    ) -> Any:
        """Kernel time of one GEMM moving ``gemm_bytes``, seconds."""
        xp = namespace(M, K, N)
        compute = self.compute_s(M, K, N, sms, lead_dims)
        return self.latency_s + xp.max(compute, gemm_bytes / self.mem_bw_bytes_per_s)


@dataclasses.dataclass(frozen=True, kw_only=True)
class KernelParams:
    """Memory-bound kernels: ``latency_s + bytes / bw_bytes_per_s``; a tiny kernel ``launch_s``;
    ``event_overhead_s``: what CUDA-event timing of one call adds to its kernel time."""

    latency_s: float
    bw_bytes_per_s: float
    launch_s: float
    event_overhead_s: float = 0.0


@dataclasses.dataclass(frozen=True, kw_only=True)
class CastParams:
    """The cast kernels of one float8 recipe as torch.compile + torchao run them, fitted on measured
    Linear steps: ``latency_s`` per kernel plus bytes over ``activation_bw_bytes_per_s`` (input,
    grad_output) or ``weight_bw_bytes_per_s`` (weight)."""

    latency_s: float
    activation_bw_bytes_per_s: float
    weight_bw_bytes_per_s: float


def _key(fmt: Format, scaling: str | None) -> str:
    return fmt.name if scaling is None else f"{fmt.name}/{scaling}"


# Formats and scalings without their own fit borrow a measured one (same tensor-core path).
_BORROW = {"fp16": "bf16", "fp8_e5m2": "fp8_e4m3"}
_BORROW_SCALING = {"blockwise": "rowwise"}


@dataclasses.dataclass(frozen=True, kw_only=True)
class CalibratedModel:
    """A :class:`perfmodel.gemm.TimeModel` with fitted parameters for one GPU.

    Attributes:
        gpu: the GPU name it was fitted on.
        gemm: ``"bf16"``, ``"fp8_e4m3/tensorwise"``, ``"fp8_e4m3/rowwise"``… -> :class:`GemmParams`.
        kernels: memory-bound and launch-only kernel costs.
        casts: recipe name -> :class:`CastParams` (recipes without one use ``kernels``).
        step_gemm_factors: GEMM group -> measured / predicted GEMM kernel time inside profiled Linear
            training steps (below 1: GEMMs ran faster there than back-to-back in the GEMM sweep, whose
            sustained load lowers clocks); applied by :func:`perfmodel.float8.linear_time` only.
        source: where the measurements come from (script, GPU, date, versions).
        residuals: error statistics of the fit, per group (train and held-out).
    """

    gpu: str
    gemm: Mapping[str, GemmParams]
    kernels: KernelParams
    casts: Mapping[str, CastParams] = dataclasses.field(default_factory=dict)
    step_gemm_factors: Mapping[str, float] = dataclasses.field(default_factory=dict)
    source: str
    residuals: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    name: str = "calibrated"

    def params_for(self, fmt: Format, scaling: str | None) -> GemmParams | None:
        """The fitted parameters used for (``fmt``, ``scaling``), or ``None`` (roofline fallback)."""
        name = _BORROW.get(fmt.name, fmt.name)
        sc = _BORROW_SCALING.get(scaling, scaling) if scaling else None
        return self.gemm.get(_key(get_format(name), sc))

    def gemm_time_s(self, M, K, N, *, fmt, scaling, out_fmt, gpu, lead_dims=None):
        from .gemm import ROOFLINE, _gemm_bytes

        p = self.params_for(fmt, scaling)
        if p is None:  # e.g. tf32 on a GPU calibrated for bf16/fp8 only
            return ROOFLINE.gemm_time_s(M, K, N, fmt=fmt, scaling=scaling, out_fmt=out_fmt, gpu=gpu)
        return p.time_s(M, K, N, _gemm_bytes(M, K, N, fmt, out_fmt, scaling), gpu.num_sms, lead_dims)

    def step_gemm_factor(self, fmt: Format, scaling: str | None) -> float:
        """The in-step factor for a GEMM group (1.0 when not measured)."""
        name = _BORROW.get(fmt.name, fmt.name)
        sc = _BORROW_SCALING.get(scaling, scaling) if scaling else None
        return float(self.step_gemm_factors.get(_key(get_format(name), sc), 1.0))

    def memory_kernel_time_s(self, bytes_moved, *, gpu, recipe=None, tensor=None):
        # "rowwise+dynamic" falls back to the static fit of "rowwise" when only that was measured
        p = (self.casts.get(recipe) or self.casts.get(recipe.split("+")[0])) if recipe is not None else None
        if p is not None:
            bw = p.weight_bw_bytes_per_s if tensor == "weight" else p.activation_bw_bytes_per_s
            return p.latency_s + bytes_moved / bw
        return self.kernels.latency_s + bytes_moved / self.kernels.bw_bytes_per_s

    def launch_time_s(self, *, gpu):
        return self.kernels.launch_s

    # -- persistence ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (schema :data:`SCHEMA`)."""
        return {
            "schema": SCHEMA,
            "gpu": self.gpu,
            "source": self.source,
            "gemm": {k: dataclasses.asdict(v) for k, v in self.gemm.items()},
            "kernels": dataclasses.asdict(self.kernels),
            "casts": {k: dataclasses.asdict(v) for k, v in self.casts.items()},
            "step_gemm_factors": dict(self.step_gemm_factors),
            "residuals": dict(self.residuals),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, origin: str = "<dict>") -> CalibratedModel:
        """Inverse of :meth:`to_dict`; raises :class:`CalibrationError` naming ``origin``."""
        try:
            if data.get("schema") != SCHEMA:
                raise CalibrationError(f"{origin}: schema is {data.get('schema')!r}, expected {SCHEMA!r}")
            return cls(
                gpu=str(data["gpu"]),
                source=str(data["source"]),
                gemm={
                    k: GemmParams(**{**v, "misaligned_factors": tuple(v.get("misaligned_factors", (1, 1, 1)))})
                    for k, v in data["gemm"].items()
                },
                kernels=KernelParams(**data["kernels"]),
                casts={k: CastParams(**v) for k, v in data.get("casts", {}).items()},
                step_gemm_factors={k: float(v) for k, v in data.get("step_gemm_factors", {}).items()},
                residuals=data.get("residuals", {}),
            )
        except CalibrationError:
            raise
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise CalibrationError(f"{origin}: not a perfmodel calibration ({type(exc).__name__}: {exc})") from None

    def save(self, path: str | Path) -> Path:
        """Write the JSON file (refuses to overwrite an existing file that is not a calibration)."""
        path = Path(path)
        if path.exists():
            try:
                old = json.loads(path.read_text())
            except (OSError, ValueError):
                old = None
            if not (isinstance(old, dict) and str(old.get("schema", "")).startswith("perfmodel.calibration/")):
                raise CalibrationError(f"{path} exists and is not a perfmodel calibration; not overwriting it")
        path.write_text(json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n")
        return path


def load_calibration(path: str | Path) -> CalibratedModel:
    """Read a calibration JSON written by :meth:`CalibratedModel.save`."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise CalibrationError(f"{path}: cannot read calibration ({exc})") from None
    if not isinstance(data, dict):
        raise CalibrationError(f"{path}: expected a JSON object")
    return CalibratedModel.from_dict(data, origin=str(path))
