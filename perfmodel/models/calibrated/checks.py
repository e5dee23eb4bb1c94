"""Range and key checks of calibration parameters and files: every value physical, every key one perfmodel reads."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from ...errors import CalibrationError

__all__ = ["CAST_RECIPES", "FILE_KEYS", "RANGES"]


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


def _finite_positive(owner: str, **values: float) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise CalibrationError(f"{owner}.{name} must be a finite positive number, got {value!r}")


def _finite_nonneg(owner: str, **values: float) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise CalibrationError(f"{owner}.{name} must be a finite number >= 0, got {value!r}")


def _fraction(value: Any, what: str) -> float:
    _finite_positive("calibration", **{what: value})
    if value > 1.2:
        raise CalibrationError(f"{what} = {value!r} is above 1.2 of the HBM bandwidth: not physical")
    _in_range("calibration", what, value, "fraction")
    return float(value)


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
