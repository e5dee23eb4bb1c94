"""Calibration: fit the shape-aware time model (:mod:`perfmodel.models.calibrated`) to measurements.

``Calibrator(gpu=...).fit(dataset)`` (scikit-learn style: explicit parameters, deterministic,
returns ``self``; fitted attributes end in ``_``) reads datasets written by
``python -m perfmodel.bench`` and fits, per (format, scaling), the GEMM parameters — the tile
shape from a few candidates, the rest by robust least squares on log time (scipy, imported here
only) — then the memory-kernel and launch costs, and per float8 recipe the cast-kernel costs
from measured Linear steps. Shapes are split train / held-out by a hash of the shape; residuals
are absolute percentage errors (MdAPE, p90, max) on both.

Timing conversion: GEMM sweeps time single calls with CUDA events (``do_bench``), which adds the
launch gap of one call to the kernel time; the model predicts kernel time, so the fit subtracts
the gap measured on the same GPU (do_bench of a 1-element kernel minus its profiled duration).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..counting import _gemm_bytes, alignment, resolve_scaling
from ..errors import CalibrationError, PerfModelError, require
from ..formats import get_format
from ..models.calibrated import (
    FALLBACK,
    SCHEMA,
    CalibratedModel,
    CastParams,
    GemmParams,
    KernelParams,
    ReferenceGPU,
    _key,
    fallback_key,
    load_calibration,
)
from ..models.tiles import fallback_mask
from ..specs.gpu import GPULike, GPUSpec, get_gpu

__all__ = [
    "SCHEMA",
    "CalibratedModel",
    "Calibrator",
    "CastParams",
    "GemmParams",
    "KernelParams",
    "ape_stats",
    "fit",
    "is_dynamic",
    "is_gemm_kernel",
    "is_heldout",
    "load_calibration",
    "load_dataset",
    "measured_cast_time_s",
    "read_data_json",
]

#: Output tiles tried for each (format, scaling); the best fit on the training split wins.
TILE_CANDIDATES: tuple[tuple[int, int], ...] = ((128, 128), (128, 256), (256, 128), (64, 256))
#: fewest misaligned 16-bit GEMMs for a fallback group of their own (Calibrator.fallback)
MIN_FALLBACK = 40


# -------------------------------------------------------------------------------------------------
# datasets
# -------------------------------------------------------------------------------------------------
def read_data_json(path: str | Path) -> Any:
    """A committed data file's JSON: ``.json``, or gzip-compressed ``.json.gz`` (the layout sweeps' large files are
    committed compressed, so that the checkout stays within what a device call carries)."""
    from .._files import load_json

    return load_json(path, what="data", error=CalibrationError)


def load_dataset(
    source: str | Path | Mapping[str, Any] | Sequence[str | Path], *, max_bytes: int | None = None
) -> dict[str, Any]:
    """Load one or several bench datasets (``python -m perfmodel.bench``) into one ``{meta, records}``.

    Files: only regular files of at most 64 MiB each (``max_bytes`` or ``$PERFMODEL_MAX_FILE_BYTES``
    override the limit), any nesting depth. The records the calibrator fits are checked here, so a
    bad one is named (file, index, field) instead of failing inside the fit: ``gemm`` needs ``M``,
    ``K``, ``N`` (whole numbers > 0), ``dtype`` (a known format) and ``time_s`` (> 0); ``linear``
    needs ``M``, ``K``, ``N``, and its ``kernels`` (if any) a ``name`` and ``time_s`` >= 0; ``copy``
    and ``cast`` need ``bytes`` >= 0 and ``time_s`` > 0; ``launch`` needs ``time_s`` > 0. Records
    with ``errors`` (failed configurations) and other ops are kept unchecked; the fit skips them.

    Raises:
        FileRefusedError: a path that is not a regular file, or above the size limit.
        CalibrationError: unreadable file, wrong layout, a bad record, or no records.
    """
    from .._files import DATA_MAX_BYTES, load_json

    if isinstance(source, Mapping):
        parts = [("<dict>", source)]
    else:
        paths = [source] if isinstance(source, (str, Path)) else list(source)
        parts = [
            (
                str(p),
                load_json(
                    p,
                    what="dataset",
                    error=CalibrationError,
                    limit_bytes=max_bytes,
                    default_limit_bytes=DATA_MAX_BYTES,
                ),
            )
            for p in paths
        ]
    records: list[dict[str, Any]] = []
    metas = []
    for origin, data in parts:
        if not isinstance(data, Mapping) or not isinstance(data.get("records"), list):
            raise CalibrationError(f"{origin}: expected a JSON object with a 'records' list (perfmodel.bench)")
        meta = data.get("meta", {})
        if not isinstance(meta, Mapping):
            raise CalibrationError(f"{origin}: 'meta' is a {type(meta).__name__}, expected an object")
        metas.append(dict(meta))
        for i, r in enumerate(data["records"]):
            if not isinstance(r, Mapping) or "op" not in r:
                raise CalibrationError(f"{origin}: records[{i}] has no 'op'")
            _check_record(r, f"{origin}: records[{i}]")
            records.append(dict(r))
    if not records:
        raise CalibrationError("the dataset has no records")
    return {"meta": metas[0] if len(metas) == 1 else {"parts": metas}, "records": records}


#: Fields of each op that the calibrator reads: "size" whole > 0, "time" > 0, "nonneg" >= 0, "format".
_FIT_FIELDS: dict[str, dict[str, str]] = {
    "gemm": {"M": "size", "K": "size", "N": "size", "dtype": "format", "time_s": "time"},
    "linear": {"M": "size", "K": "size", "N": "size"},
    "copy": {"bytes": "nonneg", "time_s": "time"},
    "cast": {"bytes": "nonneg", "time_s": "time"},
    "launch": {"time_s": "time"},
}


def _usable(record: Mapping[str, Any]) -> bool:
    """False for a failed configuration (a record with ``errors``): its times are null by design."""
    return not record.get("errors")


def _check_record(r: Mapping[str, Any], where: str) -> None:
    """Raise :class:`CalibrationError` naming ``where`` and the field if ``r`` cannot be fitted."""
    from .._files import short, short_repr

    op = r["op"]
    fields = _FIT_FIELDS.get(op) if isinstance(op, str) else None
    if fields is None or not _usable(r):
        return
    missing = [f for f in fields if f not in r]
    if missing:
        raise CalibrationError(
            f"{where} (op {op!r}) lacks {', '.join(map(repr, missing))}; a {op} record needs "
            f"{', '.join(fields)} (see perfmodel.bench.dataset.REQUIRED_FIELDS)"
        )
    for name, kind in fields.items():
        value = r[name]
        if kind == "format":
            if not isinstance(value, str):
                raise CalibrationError(f"{where}.{name} is {short_repr(value)}, expected a format name such as 'bf16'")
            try:
                fmt = get_format(value)
                if op == "gemm" and (r.get("scaling") is None or isinstance(r.get("scaling"), str)):
                    resolve_scaling(fmt, r.get("scaling"))
            except PerfModelError as exc:
                raise CalibrationError(f"{where}: {short(exc)}") from None
            continue
        number = type(value) in (int, float) and math.isfinite(value)
        if kind == "size":
            ok = number and value > 0 and value == int(value)
            want = "a whole number > 0"
        elif kind == "time":
            ok, want = number and value > 0, "a time in seconds > 0"
        else:
            ok, want = number and value >= 0, "a finite number >= 0"
        if not ok:
            raise CalibrationError(f"{where}.{name} is {short_repr(value)}, expected {want}")
    for name in ("recipe", "scaling", "dynamic", "method"):
        if r.get(name) is not None and not isinstance(r[name], str):
            raise CalibrationError(f"{where}.{name} is {short_repr(r[name])}, expected a string or null")
    kernels = r.get("kernels")
    if op == "linear" and kernels is not None:
        if not isinstance(kernels, list):
            raise CalibrationError(f"{where}.kernels is {short_repr(kernels)}, expected a list")
        for j, k in enumerate(kernels):
            ok = (
                isinstance(k, Mapping)
                and isinstance(k.get("name"), str)
                and type(k.get("time_s")) in (int, float)
                and math.isfinite(k["time_s"])
                and k["time_s"] >= 0
            )
            if not ok:
                raise CalibrationError(
                    f"{where}.kernels[{j}] is {short_repr(k)}, expected {{'name': str, 'time_s': seconds >= 0}}"
                )


def is_heldout(*key: Any, fraction: float = 0.3) -> bool:
    """Deterministic held-out split: hash of the shape (and any other key parts) -> [0, 1) < fraction."""
    digest = hashlib.sha256(repr(tuple(key)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def ape_stats(pred: Iterable[float], meas: Iterable[float]) -> dict[str, float]:
    """Absolute percentage errors ``|pred - meas| / meas``: count, median (MdAPE), p90, max, in %."""
    p, m = np.asarray(list(pred), float), np.asarray(list(meas), float)
    if p.size == 0:
        return {"n": 0}
    ape = np.abs(p - m) / m * 100
    return {
        "n": int(p.size),
        "mdape": float(np.median(ape)),
        "p90": float(np.percentile(ape, 90)),
        "max": float(ape.max()),
    }


# -------------------------------------------------------------------------------------------------
# fitting
# -------------------------------------------------------------------------------------------------
def _nnls(A: np.ndarray, b: np.ndarray, iters: int = 200) -> np.ndarray:
    """Non-negative least squares ``min ||A x - b||, x >= 0`` (Lawson–Hanson active set)."""
    n = A.shape[1]
    x = np.zeros(n)
    passive = np.zeros(n, bool)
    w = A.T @ (b - A @ x)
    for _ in range(iters):
        if passive.all() or w[~passive].max(initial=-np.inf) <= 1e-12 * np.abs(w).max(initial=1.0):
            break
        j = np.argmax(np.where(passive, -np.inf, w))
        passive[j] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(A[:, passive], b, rcond=None)[0]
            if (z[passive] > 0).all():
                x = z
                break
            neg = passive & (z <= 0)
            alpha = np.min(x[neg] / (x[neg] - z[neg]))
            x = x + alpha * (z - x)
            passive &= x > 1e-15
        w = A.T @ (b - A @ x)
    return x


# x = [latency µs, rate 1e14 FLOP/s, k_overhead / 100, bw TB/s, throttle gain, throttle ms, q, f1, f2, f4]
_X0 = np.array([5.0, 8.0, 2.0, 3.0, 0.05, 1.0, 0.2, 4.0, 3.0, 2.0])
_LO = np.array([0.0, 0.5, 0.0, 0.3, 0.0, 0.01, 0.0, 1.0, 1.0, 1.0])
_HI = np.array([50.0, 60.0, 50.0, 10.0, 2.0, 100.0, 1.0, 30.0, 30.0, 30.0])


def _params(x: np.ndarray, tile: tuple[int, int]) -> GemmParams:
    return GemmParams(
        tile_m=tile[0],
        tile_n=tile[1],
        latency_s=float(x[0]) * 1e-6,
        rate_flops_per_s=float(x[1]) * 1e14,
        k_overhead=float(x[2]) * 100,
        mem_bw_bytes_per_s=float(x[3]) * 1e12,
        throttle_gain=float(x[4]),
        throttle_time_s=float(x[5]) * 1e-3,
        wave_quantization=float(x[6]),
        misaligned_factors=(float(x[7]), float(x[8]), float(x[9])),
    )


def _fit_group(
    M,
    K,
    N,
    nbytes,
    t,
    sms: int,
    tiles: Sequence[tuple[int, int]],
    rate0: float,
    *,
    lead: tuple[Any, Any] | None = None,
    fallback_group: bool = False,
    max_bw: float | None = None,
) -> GemmParams:
    """Best :class:`GemmParams` for one (format, scaling, layout): robust least squares on log time. ``lead``:
    the leading dimensions whose alignment picks the kernel (default ``(K, N)``). ``fallback_group``: a
    fallback group, which holds misaligned GEMMs only: its rate is the 2- and 4-aligned kernels' (sm80
    CUTLASS, one class: on the H200 data 19 GEMMs cannot tell them apart), 1-aligned ones (sm75) are
    slowed down from it, and no throttling (too few long fallback GEMMs to identify it: a free throttle
    time would drift between BLAS builds).
    ``max_bw``: upper bound of the memory bandwidth, B/s (a calibration file refuses more than 1.2x
    the GPU's): a fallback group's bound from the start; any other group is fitted again within it where its
    free fit went above."""
    least_squares = require("scipy.optimize", "perfmodel calibrate (the least-squares fit)").least_squares

    lead = lead if lead is not None else (K, N)
    x0 = _X0.copy()
    x0[1] = np.clip(rate0 / 1e14, _LO[1], _HI[1])
    aligned_all = bool((np.minimum(alignment(lead[0]), alignment(lead[1])) >= 8).all())
    best: tuple[float, GemmParams] | None = None
    for tile in tiles:

        def residual(x: np.ndarray, tile: tuple[int, int] = tile) -> np.ndarray:
            return np.log(_params(x, tile).time_s(M, K, N, nbytes, sms, lead) / t)

        lo, hi = _LO.copy(), _HI.copy()
        if fallback_group:  # no throttling: gain 0 (its time scale then has no meaning: 1 ms)
            x0[4:6], lo[4:6], hi[4:6] = (0.0, 1.0), (0.0, 1.0), (1e-12, 1.0 + 1e-9)
        if max_bw is not None and fallback_group:
            hi[3] = min(hi[3], max_bw / 1e12)
            x0[3] = min(x0[3], hi[3] / 2)
        pinned = slice(7, 10) if aligned_all else slice(8, 10) if fallback_group else slice(0, 0)
        x0[pinned], lo[pinned], hi[pinned] = 1.0, 1.0, 1.0 + 1e-9  # nothing to fit them on: 1
        # a small group's flat directions: converge tightly, or the answer drifts with the BLAS build
        tol = {"xtol": 1e-13, "ftol": 1e-13, "gtol": 1e-13, "max_nfev": 2000} if fallback_group else {}
        res = least_squares(residual, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.05, **tol)
        if max_bw is not None and res.x[3] * 1e12 > max_bw:
            # a bandwidth the calibration file would refuse (data with few memory-bound GEMMs leave it free):
            # fit again within it (refitting only then keeps the fits that never reach it as they were)
            hi[3] = max(max_bw / 1e12, lo[3] * (1 + 1e-9))
            x0b = x0.copy()
            x0b[3] = float(np.clip(x0[3], lo[3], hi[3] / 2 if hi[3] / 2 > lo[3] else hi[3]))
            res = least_squares(residual, x0b, bounds=(lo, hi), loss="soft_l1", f_scale=0.05, **tol)
        x = res.x.copy()
        x[pinned] = 1.0
        if fallback_group:
            x[4:6] = 0.0, 1.0
        if best is None or res.cost < best[0]:
            best = (float(res.cost), _params(x, tile))
    assert best is not None  # tiles is never empty (checked by the caller)
    return best[1]


@dataclasses.dataclass(kw_only=True)
class Calibrator:
    """Fit :class:`CalibratedModel` to a bench dataset, scikit-learn style.

    Attributes:
        gpu: the GPU the data was measured on (its SM count enters the wave formula).
        heldout_fraction: share of shapes kept out of the fit (deterministic hash split); 0 fits on all.
        tiles: candidate (tile_m, tile_n) output tiles.
        min_time_s: GEMM records faster than this are ignored (timer noise).
        split_layouts: fit bf16 GEMMs of each operand layout (``rr``, ``rc``, ``cr``) apart. Off by default:
            on the H200 data a per-layout fit did not improve the Linear predictions (docs/validation.md,
            "Operand layouts"); the misalignment rule follows each record's layout either way.
        fallback: also fit the 16-bit GEMMs whose leading dimensions are not multiples of 8 as a group of
            their own (``bf16@fallback``: cuBLAS runs pre-Hopper CUTLASS kernels for them), used for every
            misaligned GEMM of that format; skipped when fewer than :data:`MIN_FALLBACK` such GEMMs are in
            the data (then the main group's ``misaligned_factors`` price them). The main group is fitted on
            all its GEMMs either way.

    Fitted attributes: ``model_`` (:class:`CalibratedModel`), ``gpu_`` (the GPU spec that predicts
    with it), ``residuals_`` (APE statistics per group on the train and held-out split).
    """

    gpu: GPULike
    heldout_fraction: float = 0.3
    tiles: Sequence[tuple[int, int]] = TILE_CANDIDATES
    min_time_s: float = 0.0
    split_layouts: bool = False
    fallback: bool = True

    def fit(self, dataset: Any) -> Calibrator:
        """Fit on ``dataset`` (a path, several paths or a loaded ``{meta, records}`` dict)."""
        if not 0 <= self.heldout_fraction < 1:
            raise CalibrationError(f"heldout_fraction must be in [0, 1), got {self.heldout_fraction!r}")
        if not self.tiles:
            raise CalibrationError("tiles must name at least one (tile_m, tile_n) candidate")
        data = load_dataset(dataset)
        spec = get_gpu(self.gpu)
        kernels = _fit_kernels(data["records"], spec)
        groups: dict[str, list[dict[str, Any]]] = {}
        specs: dict[str, tuple[Any, str | None, str]] = {}
        for r in data["records"]:
            if r["op"] == "gemm" and _usable(r) and r["time_s"] > self.min_time_s:
                fmt = get_format(r["dtype"])
                scaling = resolve_scaling(fmt, r.get("scaling"))
                layout = (r.get("layout") or "rc") if fmt.bits >= 16 else "rc"  # fp8 _scaled_mm runs rc only
                key = _key(fmt, scaling, layout if self.split_layouts else "rc")
                groups.setdefault(key, []).append(r)
                specs[key] = (fmt, scaling, layout if self.split_layouts else "rc")
        if not groups:
            raise CalibrationError("the dataset has no 'gemm' records to fit")
        if self.fallback:
            for key in sorted(groups):
                fmt, _, _ = specs[key]
                if fmt.bits < 16:
                    continue
                mis = [r for r in groups[key] if fallback_mask(r["M"], r["K"], r["N"], r.get("layout") or "rc")]
                fb = fallback_key(fmt.name)
                groups.setdefault(fb, []).extend(mis)
                specs[fb] = (fmt, None, "rc")
            for fb in [k for k in groups if k.endswith("@" + FALLBACK)]:
                if len(groups[fb]) < MIN_FALLBACK:
                    del groups[fb], specs[fb]
        gemm: dict[str, GemmParams] = {}
        residuals: dict[str, Any] = {}
        longest = 0.0
        for key, recs in sorted(groups.items()):
            fmt, scaling, _ = specs[key]
            M, K, N, t = (np.array([r[f] for r in recs], dtype=float) for f in ("M", "K", "N", "time_s"))
            event = np.array([r.get("timing", "event") != "kernel" for r in recs])
            # CUDA-event timings carry the launch gap of one call; the model predicts kernel time
            t = np.where(event, np.maximum(t - kernels.event_overhead_s, 0.5 * t), t)
            longest = max(longest, float(t.max()))
            layouts = np.array([(r.get("layout") or "rc") if fmt.bits >= 16 else "rc" for r in recs])
            # the dimensions whose alignment picks the kernel follow each record's own layout
            lead = (np.where(layouts == "cr", M, K), N)
            test = np.array(
                [
                    is_heldout(int(m), int(k), int(n), fraction=self.heldout_fraction)
                    for m, k, n in zip(M, K, N, strict=True)
                ]
            )
            nbytes = np.asarray(_gemm_bytes(M, K, N, fmt, get_format("bf16"), scaling), float)
            train = ~test
            if train.sum() < 12:
                raise CalibrationError(f"{key}: {int(train.sum())} training GEMMs; at least 12 are needed")
            params = _fit_group(
                M[train],
                K[train],
                N[train],
                nbytes[train],
                t[train],
                spec.num_sms,
                self.tiles,
                spec.achievable_flops_per_s(fmt),
                lead=(lead[0][train], lead[1][train]),
                fallback_group=key.endswith("@" + FALLBACK),
                max_bw=1.2 * spec.mem_bw_bytes_per_s,
            )
            gemm[key] = params
            pred = np.asarray(params.time_s(M, K, N, nbytes, spec.num_sms, lead), float)
            residuals[key] = {"train": ape_stats(pred[train], t[train]), "heldout": ape_stats(pred[test], t[test])}
        # clocks settle: no kernel longer than the longest measured one is priced with a still-growing slowdown
        gemm = {k: dataclasses.replace(p, throttle_settle_s=longest) for k, p in gemm.items()}
        linear = [
            r
            for r in data["records"]
            if r["op"] == "linear"
            and _usable(r)
            and not is_heldout(r["M"], r["K"], r["N"], fraction=self.heldout_fraction)
        ]
        base = CalibratedModel(
            gpu=spec.name,
            gemm=gemm,
            kernels=kernels,
            source=_source(data.get("meta", {}), spec),
            residuals=residuals,
            reference=ReferenceGPU.from_spec(spec),
        )
        casts = _fit_casts(linear, base)
        self.model_ = dataclasses.replace(base, casts=casts, step_gemm_factors=_fit_step_gemm(linear, base, spec))
        self.gpu_ = dataclasses.replace(spec, calibration=self.model_)
        self.residuals_ = residuals
        return self


def _source(meta: Mapping[str, Any], spec: GPUSpec) -> str:
    """``measured: <gpu>, <dates>, torch .., torchao ..`` from the datasets' meta blocks (one or several)."""
    parts = meta.get("parts", [meta])

    def values(key: str) -> str:
        found = sorted({str(p[key]) for p in parts if isinstance(p, Mapping) and p.get(key)})
        return "/".join(found) or "?"

    n = len(parts)
    return (
        f"measured: python -m perfmodel.bench ({n} dataset{'s' * (n > 1)}), {values('gpu_name')}, {values('date')}, "
        f"torch {values('torch')}, torchao {values('torchao')}, CUDA {values('cuda')}"
    )


def _fit_kernels(records: Sequence[Mapping[str, Any]], spec: GPUSpec) -> KernelParams:
    """Memory-kernel latency and bandwidth from copy/cast records; launch cost and the event-timing
    overhead from launch records. Falls back to ``spec.efficiency`` where the dataset has none."""
    records = [r for r in records if _usable(r)]
    pts = [(float(r["bytes"]), float(r["time_s"])) for r in records if r["op"] in ("copy", "cast")]

    def launch(method: str) -> float | None:
        ts = [float(r["time_s"]) for r in records if r["op"] == "launch" and r.get("method") == method]
        return float(np.median(ts)) if ts else None

    kernel = launch("profiler_kernel_duration")  # a tiny kernel's GPU time as a profiler sums it
    event = launch("do_bench")
    launch_s = kernel if kernel is not None else spec.launch_overhead_s
    overhead = max(event - kernel, 0.0) if event is not None and kernel is not None else 0.0
    lat, bw = spec.launch_overhead_s, spec.achievable_mem_bw_bytes_per_s
    if len(pts) >= 2:
        b, t = np.array(pts).T
        theta = _nnls(np.stack([np.ones_like(t), b], axis=1) / t[:, None], np.ones_like(t))
        if theta[1] > 0:
            lat, bw = float(theta[0]), float(1 / theta[1])
    return KernelParams(latency_s=lat, bw_bytes_per_s=bw, launch_s=launch_s, event_overhead_s=overhead)


#: Kernel names of GEMM libraries (cuBLAS nvjet/xmma/gemm, CUTLASS) in profiles. Inductor's own
#: kernels (``triton_*``) are never GEMMs here, even when named after the ``_scaled_mm`` they feed.
GEMM_KERNEL_RE = re.compile(r"nvjet|gemm|xmma|cutlass|cublas|wgmma", re.IGNORECASE)


def is_gemm_kernel(name: str) -> bool:
    """True for a GEMM library kernel name (see :data:`GEMM_KERNEL_RE`)."""
    return not name.startswith("triton") and GEMM_KERNEL_RE.search(name) is not None


def is_dynamic(record: Mapping[str, Any]) -> bool:
    """True for a ``linear`` record compiled with a dynamic token dimension (bench field ``dynamic``:
    ``"m"``; static compiles say ``"static"`` or nothing)."""
    return str(record.get("dynamic", "static")).lower() not in ("static", "off", "false", "none", "0")


def measured_cast_time_s(record: Mapping[str, Any]) -> float:
    """Seconds per step of the non-GEMM kernels of a measured ``linear`` record."""
    return float(sum(k["time_s"] for k in record["kernels"] if not is_gemm_kernel(k["name"])))


def _fit_casts(records: Sequence[Mapping[str, Any]], model: CalibratedModel) -> dict[str, CastParams]:
    """Per recipe: per-kernel latency and activation / weight cast bandwidths, by non-negative least
    squares (relative error) on the measured non-GEMM kernel time of Linear steps."""
    from ..float8.recipes import RECIPES, CastOptions

    out: dict[str, CastParams] = {}
    by_recipe: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        if r.get("recipe") in RECIPES and r["recipe"] != "bf16" and r.get("kernels"):
            key = CastOptions(dynamic_shapes=is_dynamic(r)).cast_key(r["recipe"])
            by_recipe.setdefault(key, []).append(r)
    for key, recs in sorted(by_recipe.items()):
        name = key.split("+")[0]
        rows, target = [], []
        for r in recs:
            ks = RECIPES[name].cast_kernels(r["M"], r["K"], r["N"], CastOptions())
            mem = [k for k in ks if not k.launch_only]
            n_launch = len(ks) - len(mem)
            rows.append(
                (
                    len(mem),
                    float(sum(k.bytes for k in mem if k.tensor != "weight")),
                    float(sum(k.bytes for k in mem if k.tensor == "weight")),
                )
            )
            target.append(max(measured_cast_time_s(r) - n_launch * model.kernels.launch_s, 1e-9))
        if len(rows) < 3:
            continue
        A, t = np.array(rows, float), np.array(target)
        theta = _nnls(A / t[:, None], np.ones_like(t))
        fallback = 1 / model.kernels.bw_bytes_per_s
        act, wgt = (theta[1] or fallback), (theta[2] or fallback)
        out[key] = CastParams(
            latency_s=float(theta[0]), activation_bw_bytes_per_s=float(1 / act), weight_bw_bytes_per_s=float(1 / wgt)
        )
    return out


def _step_gemm_ratio(r: Mapping[str, Any], model: CalibratedModel, spec: GPUSpec) -> tuple[str, float] | None:
    """One Linear step record's GEMM group and measured / predicted GEMM kernel time, or ``None`` where its
    three GEMMs are not all in one group (mixed recipes), it names no recipe or has no kernels."""
    from ..float8 import linear_time
    from ..float8.recipes import RECIPES

    rec = RECIPES.get(r.get("recipe", ""))
    if rec is None or not r.get("kernels"):
        return None
    pred = linear_time(r["M"], r["K"], r["N"], rec, spec, time_model=model)
    groups = {_key(get_format(g.dtype.replace("e5m2", "e4m3")), g.scaling) for g in pred.gemms}
    measured = sum(k["time_s"] for k in r["kernels"] if is_gemm_kernel(k["name"]))
    return (groups.pop(), measured / pred.gemm_s) if len(groups) == 1 and measured > 0 else None


def _fit_step_gemm(
    records: Sequence[Mapping[str, Any]],
    model: CalibratedModel,
    spec: GPUSpec,
    ratio: Callable[[Mapping[str, Any], CalibratedModel, GPUSpec], tuple[str, float] | None] = _step_gemm_ratio,
) -> dict[str, float]:
    """Per GEMM group: median of measured / predicted GEMM kernel time in Linear steps whose three
    GEMMs all fall in that one group (bf16; tensorwise e4m3/e5m2; rowwise). Mixed recipes are skipped.
    ``ratio`` gives one record's (:func:`_step_gemm_ratio`; a caller that refits on many subsets of the same
    records with the same model can pass its own precomputed values)."""
    ratios: dict[str, list[float]] = {}
    for r in records:
        got = ratio(r, model, spec)
        if got is not None:
            ratios.setdefault(got[0], []).append(got[1])
    return {k: float(np.median(v)) for k, v in sorted(ratios.items()) if len(v) >= 3}


def fit(dataset: Any, gpu: GPULike = "H200", *, heldout_fraction: float = 0.3) -> Calibrator:
    """``Calibrator(gpu=gpu, heldout_fraction=...).fit(dataset)``: the fitted calibrator."""
    return Calibrator(gpu=gpu, heldout_fraction=heldout_fraction).fit(dataset)


# -------------------------------------------------------------------------------------------------
# command line: `perfmodel calibrate data.json [...] --gpu h200 -o h200.json`
# -------------------------------------------------------------------------------------------------
def residual_table(residuals: Mapping[str, Any]) -> str:
    """Residuals as an aligned text table (APE in %)."""
    lines = [f"{'group':<22} {'split':<8} {'n':>5} {'MdAPE %':>8} {'p90 %':>8} {'max %':>8}"]
    for group, splits in residuals.items():
        for split, st in splits.items():
            if st.get("n"):
                lines.append(
                    f"{group:<22} {split:<8} {st['n']:>5} {st['mdape']:>8.2f} {st['p90']:>8.2f} {st['max']:>8.1f}"
                )
    return "\n".join(lines)


def add_calibrate_cli(subparsers: Any) -> Any:
    """Register ``perfmodel calibrate`` on an argparse ``subparsers``."""
    p = subparsers.add_parser(
        "calibrate",
        help="fit the shape-aware model to a measured sweep (python -m perfmodel.bench)",
        description="Fit the calibrated GEMM/cast model of one GPU to datasets written by "
        "`python -m perfmodel.bench` and write the calibration JSON.",
    )
    p.add_argument("datasets", nargs="+", help="dataset JSON files (gemm, linear, memory, launch)")
    p.add_argument("--gpu", required=True, help="the GPU the data was measured on (its SM count matters)")
    p.add_argument(
        "-o",
        "--output",
        required=True,
        help="calibration JSON to write ('-': standard output, the report then goes to standard error); "
        "an existing file is replaced only with --force; never one of the datasets",
    )
    p.add_argument("--force", action="store_true", help="replace the output file if it exists")
    p.add_argument(
        "--heldout",
        type=float,
        default=0.3,
        help="share of shapes held out of the fit and reported separately (default 0.3; 0 = fit all)",
    )
    p.add_argument("--json", action="store_true", help="print the residuals as JSON")
    p.set_defaults(func=_run_cli)
    return p


def _run_cli(args: Any) -> int:
    from .._files import check_output, is_stdout

    data = load_dataset(args.datasets)
    check_output(args.output, force=args.force, inputs=args.datasets)  # before the fit, not after
    cal = Calibrator(gpu=args.gpu, heldout_fraction=args.heldout).fit(data)
    path = cal.model_.save(args.output, force=args.force, inputs=tuple(args.datasets))
    out = sys.stderr if is_stdout(args.output) else sys.stdout  # keep standard output pure JSON
    if args.json:
        print(json.dumps(cal.residuals_, indent=1), file=out)
    else:
        where = "standard output" if is_stdout(args.output) else str(path)
        print(f"calibrated {cal.gpu_.name} from {len(args.datasets)} dataset(s) -> {where}", file=out)
        print(
            f"GEMM time errors against kernel time (CUDA-event times minus the "
            f"{cal.model_.kernels.event_overhead_s * 1e6:.1f} us launch gap measured on this GPU):",
            file=out,
        )
        print(residual_table(cal.residuals_), file=out)
        if not is_stdout(args.output):
            print(
                f"use it: dataclasses.replace(perfmodel.get_gpu({cal.gpu_.name!r}), "
                f"calibration=perfmodel.calibrate.load_calibration({str(path)!r}))",
                file=out,
            )
    return 0
