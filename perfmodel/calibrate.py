"""Calibration: fit the shape-aware time model to measurements of one GPU.

The model (:class:`CalibratedModel`, a :class:`perfmodel.gemm.TimeModel`) is analytic and
symbolic-friendly (``ceiling``/``Max`` on sympy); its parameters live in a JSON file per GPU,
not in code. For one GEMM ``[M, K] @ [K, N]`` in a given (format, scaling)::

    tiles   = ⌈M / tile_m⌉ · ⌈N / tile_n⌉                       (tile quantization)
    waves   = ⌈tiles / SMs⌉   or   tiles / SMs                  (wave quantization; "ceil"/"fractional")
    compute = waves · 2·tile_m·tile_n·(K + k_overhead) / (rate / SMs)
    memory  = gemm_bytes / mem_bw
    time    = latency + max(compute, memory) · (misaligned_factor if K or N is not a multiple of 8)

``rate`` is the steady-state FLOP/s of the whole GPU, ``k_overhead`` the per-tile prologue and
epilogue cost in units of K, ``latency`` the launch and pipeline-fill floor. Memory-bound casts
cost ``kernel_latency + bytes / kernel_bw``; a launch-only kernel ``launch``.

:func:`fit` chooses the tile shape and wave mode per (format, scaling) from a small set of
candidates and solves the rest by non-negative least squares on relative error; it is
deterministic. Residuals are reported as absolute percentage errors (MdAPE, p90, max).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._backend import namespace
from .errors import CalibrationError
from .formats import Format, get_format
from .hardware import GPULike, GPUSpec, get_gpu

__all__ = [
    "SCHEMA",
    "CalibratedModel",
    "Calibrator",
    "CastParams",
    "GemmParams",
    "KernelParams",
    "ape_stats",
    "fit",
    "is_heldout",
    "load_calibration",
    "load_dataset",
]

SCHEMA = "perfmodel.calibration/1"
TILE_CANDIDATES: tuple[tuple[int, int], ...] = (
    (64, 128), (128, 64), (128, 128), (128, 256), (256, 128), (64, 256), (256, 64),
)
WAVE_MODES = ("ceil", "fractional")
_ALIGN = 8  # elements: 16-byte rows for bf16; cuBLAS fast paths need it


@dataclasses.dataclass(frozen=True, kw_only=True)
class GemmParams:
    """Fitted GEMM parameters for one (format, scaling) on one GPU (see module docstring)."""

    tile_m: int
    tile_n: int
    wave_mode: str
    rate_flops_per_s: float
    k_overhead: float
    latency_s: float
    mem_bw_bytes_per_s: float
    misaligned_factor: float = 1.0

    def __post_init__(self) -> None:
        if self.wave_mode not in WAVE_MODES:
            raise CalibrationError(f"wave_mode must be one of {WAVE_MODES}, got {self.wave_mode!r}")
        for name in ("tile_m", "tile_n", "rate_flops_per_s", "mem_bw_bytes_per_s", "misaligned_factor"):
            if not getattr(self, name) > 0:
                raise CalibrationError(f"GemmParams.{name} must be positive, got {getattr(self, name)!r}")
        if self.k_overhead < 0 or self.latency_s < 0:
            raise CalibrationError("GemmParams.k_overhead and latency_s must be >= 0")


@dataclasses.dataclass(frozen=True, kw_only=True)
class KernelParams:
    """Memory-bound kernel cost ``latency_s + bytes / bw_bytes_per_s``; tiny kernels ``launch_s``."""

    latency_s: float
    bw_bytes_per_s: float
    launch_s: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class CastParams:
    """Cast kernels of one float8 recipe as torch.compile + torchao really run them:
    ``latency_s + bytes / bw_bytes_per_s`` per kernel, fitted on measured Linear fwd+bwd steps."""

    latency_s: float
    bw_bytes_per_s: float


def _key(fmt: Format, scaling: str | None) -> str:
    return fmt.name if scaling is None else f"{fmt.name}/{scaling}"


# Formats and scalings without their own fit borrow a measured one (same tensor-core path).
_BORROW = {"fp16": "bf16", "fp8_e5m2": "fp8_e4m3"}
_BORROW_SCALING = {"blockwise": "rowwise"}


def _gemm_terms(p: GemmParams, M, K, N, sms: int, gemm_bytes):
    """(compute seconds per unit rate-inverse pieces) shared by prediction and fitting."""
    xp = namespace(M, K, N)
    tiles = xp.cdiv(M, p.tile_m) * xp.cdiv(N, p.tile_n)
    waves = xp.cdiv(tiles, sms) if p.wave_mode == "ceil" else tiles / sms
    work = waves * (2 * p.tile_m * p.tile_n * sms)  # FLOP-equivalents per unit of K
    return work, gemm_bytes


@dataclasses.dataclass(frozen=True, kw_only=True)
class CalibratedModel:
    """A :class:`perfmodel.gemm.TimeModel` with fitted parameters for one GPU.

    Attributes:
        gpu: the GPU name it was fitted on.
        gemm: ``"bf16"``, ``"fp8_e4m3/tensorwise"``, ``"fp8_e4m3/rowwise"``… -> :class:`GemmParams`.
        kernels: memory-bound and launch-only kernel costs.
        casts: recipe name -> :class:`CastParams` for the cast kernels of that recipe (else ``kernels``).
        source: where the measurements come from (script, GPU, date, versions).
        residuals: error statistics of the fit, per group (train and held-out).
    """

    gpu: str
    gemm: Mapping[str, GemmParams]
    kernels: KernelParams
    casts: Mapping[str, CastParams] = dataclasses.field(default_factory=dict)
    source: str
    residuals: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    name: str = "calibrated"

    def params_for(self, fmt: Format, scaling: str | None) -> GemmParams | None:
        """The fitted parameters used for (``fmt``, ``scaling``), or ``None`` (roofline fallback)."""
        name = _BORROW.get(fmt.name, fmt.name)
        sc = _BORROW_SCALING.get(scaling, scaling) if scaling else None
        return self.gemm.get(_key(get_format(name), sc))

    def gemm_time_s(self, M, K, N, *, fmt, scaling, out_fmt, gpu):
        from .gemm import ROOFLINE, _gemm_bytes

        p = self.params_for(fmt, scaling)
        if p is None:  # e.g. tf32 on a GPU calibrated for bf16/fp8 only
            return ROOFLINE.gemm_time_s(M, K, N, fmt=fmt, scaling=scaling, out_fmt=out_fmt, gpu=gpu)
        xp = namespace(M, K, N)
        work, nbytes = _gemm_terms(p, M, K, N, gpu.num_sms, _gemm_bytes(M, K, N, fmt, out_fmt, scaling))
        compute = work * (K + p.k_overhead) / p.rate_flops_per_s
        t = xp.max(compute, nbytes / p.mem_bw_bytes_per_s)
        if p.misaligned_factor != 1.0 and xp.name != "sympy":
            aligned = ((np.asarray(K) % _ALIGN) == 0) & ((np.asarray(N) % _ALIGN) == 0)
            t = t * xp.where(aligned, 1.0, p.misaligned_factor) if xp.name == "numpy" else (
                t if aligned else t * p.misaligned_factor)
        return p.latency_s + t

    def memory_kernel_time_s(self, bytes_moved, *, gpu, recipe=None):
        p = self.casts.get(recipe) if recipe is not None else None
        if p is not None:
            return p.latency_s + bytes_moved / p.bw_bytes_per_s
        return self.kernels.latency_s + bytes_moved / self.kernels.bw_bytes_per_s

    def launch_time_s(self, *, gpu):
        return self.kernels.launch_s

    # -- persistence ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (schema :data:`SCHEMA`)."""
        return {"schema": SCHEMA, "gpu": self.gpu, "source": self.source,
                "gemm": {k: dataclasses.asdict(v) for k, v in self.gemm.items()},
                "kernels": dataclasses.asdict(self.kernels),
                "casts": {k: dataclasses.asdict(v) for k, v in self.casts.items()},
                "residuals": dict(self.residuals)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, origin: str = "<dict>") -> CalibratedModel:
        """Inverse of :meth:`to_dict`; raises :class:`CalibrationError` naming ``origin``."""
        try:
            if data.get("schema") != SCHEMA:
                raise CalibrationError(f"{origin}: schema is {data.get('schema')!r}, expected {SCHEMA!r}")
            return cls(gpu=str(data["gpu"]), source=str(data["source"]),
                       gemm={k: GemmParams(**v) for k, v in data["gemm"].items()},
                       kernels=KernelParams(**data["kernels"]),
                       casts={k: CastParams(**v) for k, v in data.get("casts", {}).items()},
                       residuals=data.get("residuals", {}))
        except CalibrationError:
            raise
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise CalibrationError(f"{origin}: not a perfmodel calibration ({type(exc).__name__}: {exc})") from None

    def save(self, path: str | Path) -> Path:
        """Write the JSON file (refuses to overwrite an existing file of another kind)."""
        path = Path(path)
        if path.exists():
            try:
                old = json.loads(path.read_text())
            except (OSError, ValueError):
                old = None
            if not (isinstance(old, dict) and old.get("schema") == SCHEMA):
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


# -------------------------------------------------------------------------------------------------
# datasets
# -------------------------------------------------------------------------------------------------
def load_dataset(source: str | Path | Mapping[str, Any] | Sequence[str | Path]) -> dict[str, Any]:
    """Load one or several bench datasets (``python -m perfmodel.bench``) into one ``{meta, records}``.

    Raises:
        CalibrationError: unreadable file, wrong layout, or no records.
    """
    if isinstance(source, Mapping):
        parts = [("<dict>", source)]
    else:
        paths = [source] if isinstance(source, (str, Path)) else list(source)
        parts = []
        for p in paths:
            try:
                parts.append((str(p), json.loads(Path(p).read_text())))
            except (OSError, ValueError) as exc:
                raise CalibrationError(f"{p}: cannot read dataset ({exc})") from None
    records: list[dict[str, Any]] = []
    metas = []
    for origin, data in parts:
        if not isinstance(data, Mapping) or not isinstance(data.get("records"), list):
            raise CalibrationError(f"{origin}: expected a JSON object with a 'records' list (perfmodel.bench)")
        metas.append(dict(data.get("meta", {})))
        for i, r in enumerate(data["records"]):
            if not isinstance(r, Mapping) or "op" not in r:
                raise CalibrationError(f"{origin}: records[{i}] has no 'op'")
            records.append(dict(r))
    if not records:
        raise CalibrationError("the dataset has no records")
    return {"meta": metas[0] if len(metas) == 1 else {"parts": metas}, "records": records}


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
    return {"n": int(p.size), "mdape": float(np.median(ape)), "p90": float(np.percentile(ape, 90)),
            "max": float(ape.max())}


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


def _fit_group(M, K, N, nbytes, t, sms: int, tiles, wave_modes, rate0: float, bw0: float
               ) -> tuple[GemmParams, float]:
    """Best :class:`GemmParams` for one (format, scaling) group; returns (params, train MdAPE %)."""
    best: tuple[float, GemmParams] | None = None
    aligned = ((K % _ALIGN) == 0) & ((N % _ALIGN) == 0)
    for tm, tn in tiles:
        for mode in wave_modes:
            probe = GemmParams(tile_m=tm, tile_n=tn, wave_mode=mode, rate_flops_per_s=1.0, k_overhead=0.0,
                               latency_s=0.0, mem_bw_bytes_per_s=1.0)
            work, _ = _gemm_terms(probe, M, K, N, sms, nbytes)
            work = np.asarray(work, float)
            # t ≈ L + max(work·(K + k0)/rate, bytes/bw), misaligned shapes × f. Fit in relative error:
            # alternate (1) regime assignment and the alignment factor, (2) NNLS for L, 1/rate, k0/rate, 1/bw.
            compute_bound = work * K / rate0 >= nbytes / bw0  # start from the spec roofline
            factor = 1.0
            theta = np.zeros(4)
            for _ in range(30):
                scale = np.where(aligned, 1.0, factor)
                cols = np.stack([np.ones_like(t), np.where(compute_bound, work * K * scale, 0.0),
                                 np.where(compute_bound, work * scale, 0.0),
                                 np.where(compute_bound, 0.0, nbytes * scale)], axis=1)
                theta = _nnls(cols / t[:, None], np.ones_like(t))
                L, inv_rate, k0_rate, inv_bw = theta
                comp = work * (K * inv_rate + k0_rate)
                mem = nbytes * inv_bw if inv_bw > 0 else np.zeros_like(t)
                new_bound = comp >= mem
                if (~aligned).any():  # the factor that best explains misaligned shapes (median ratio)
                    core = np.maximum(comp, mem)[~aligned]
                    factor = float(max(1.0, np.median((t[~aligned] - L) / np.maximum(core, 1e-12))))
                if (new_bound == compute_bound).all() and _ > 2:
                    break
                compute_bound = new_bound
            L, inv_rate, k0_rate, inv_bw = theta
            if inv_rate <= 0:
                continue
            params = GemmParams(
                tile_m=tm, tile_n=tn, wave_mode=mode, rate_flops_per_s=float(1.0 / inv_rate),
                k_overhead=float(k0_rate / inv_rate), latency_s=float(L),
                mem_bw_bytes_per_s=float(1.0 / inv_bw) if inv_bw > 0 else bw0, misaligned_factor=factor)
            comp = work * (K + params.k_overhead) / params.rate_flops_per_s
            pred = L + np.maximum(comp, nbytes / params.mem_bw_bytes_per_s) * np.where(aligned, 1.0, factor)
            score = float(np.mean(np.log(pred / t) ** 2))
            if best is None or score < best[0]:
                best = (score, params)
    if best is None:
        raise CalibrationError("no model structure fits this group (all rates came out non-positive)")
    return best[1], best[0]


@dataclasses.dataclass(kw_only=True)
class Calibrator:
    """Fit :class:`CalibratedModel` to a bench dataset, scikit-learn style.

    Parameters are explicit; :meth:`fit` is deterministic and returns ``self``. Fitted attributes
    end in ``_``: ``model_`` (the :class:`CalibratedModel`), ``gpu_`` (the GPU spec using it),
    ``residuals_`` (APE statistics per group on the train and held-out split).

    Attributes:
        gpu: the GPU the data was measured on (its SM count enters the wave formula).
        heldout_fraction: share of shapes kept out of the fit (deterministic hash split); 0 fits on all.
        tiles: candidate (tile_m, tile_n) shapes; wave_modes: ``"ceil"`` and/or ``"fractional"``.
        min_time_s: records faster than this are ignored (timer noise).
    """

    gpu: GPULike
    heldout_fraction: float = 0.3
    tiles: Sequence[tuple[int, int]] = TILE_CANDIDATES
    wave_modes: Sequence[str] = WAVE_MODES
    min_time_s: float = 0.0

    def fit(self, dataset: Any) -> Calibrator:
        """Fit on ``dataset`` (a path, several paths or a loaded ``{meta, records}`` dict)."""
        from .gemm import _gemm_bytes, resolve_scaling

        if not 0 <= self.heldout_fraction < 1:
            raise CalibrationError(f"heldout_fraction must be in [0, 1), got {self.heldout_fraction!r}")
        data = load_dataset(dataset)
        spec = get_gpu(self.gpu)
        groups: dict[str, list[dict[str, Any]]] = {}
        for r in data["records"]:
            if r["op"] == "gemm" and r.get("time_s", 0) > self.min_time_s:
                fmt = get_format(r["dtype"])
                groups.setdefault(_key(fmt, resolve_scaling(fmt, r.get("scaling"))), []).append(r)
        if not groups:
            raise CalibrationError("the dataset has no 'gemm' records to fit")
        gemm: dict[str, GemmParams] = {}
        residuals: dict[str, Any] = {}
        for key, recs in sorted(groups.items()):
            fmt = get_format(key.split("/")[0])
            scaling = key.split("/")[1] if "/" in key else None
            M, K, N, t = (np.array([r[f] for r in recs], dtype=float) for f in ("M", "K", "N", "time_s"))
            test = np.array([is_heldout(int(m), int(k), int(n), fraction=self.heldout_fraction)
                             for m, k, n in zip(M, K, N, strict=True)])
            nbytes = np.asarray(_gemm_bytes(M, K, N, fmt, get_format("bf16"), scaling), float)
            train = ~test
            params, _ = _fit_group(M[train], K[train], N[train], nbytes[train], t[train], spec.num_sms,
                                   self.tiles, self.wave_modes, spec.achievable_flops_per_s(fmt),
                                   spec.achievable_mem_bw_bytes_per_s)
            gemm[key] = params
            probe = CalibratedModel(gpu=spec.name, gemm={key: params}, kernels=KernelParams(
                latency_s=0.0, bw_bytes_per_s=1.0, launch_s=0.0), source="")
            pred = np.asarray(probe.gemm_time_s(M, K, N, fmt=fmt, scaling=scaling, out_fmt=get_format("bf16"),
                                                gpu=spec), float)
            residuals[key] = {"train": ape_stats(pred[train], t[train]), "heldout": ape_stats(pred[test], t[test])}
        kernels = _fit_kernels(data["records"], spec)
        linear = [r for r in data["records"] if r["op"] == "linear"
                  and not is_heldout(r["M"], r["K"], r["N"], fraction=self.heldout_fraction)]
        casts = _fit_casts(linear, kernels)
        meta = data.get("meta", {})
        source = (f"measured: {meta.get('command', 'python -m perfmodel.bench')}, {meta.get('gpu_name', spec.name)}, "
                  f"{meta.get('date', '?')}, torch {meta.get('torch', '?')}")
        self.model_ = CalibratedModel(gpu=spec.name, gemm=gemm, kernels=kernels, casts=casts, source=source,
                                      residuals=residuals)
        self.gpu_ = dataclasses.replace(spec, calibration=self.model_)
        self.residuals_ = residuals
        return self


def _fit_kernels(records: Sequence[Mapping[str, Any]], spec: GPUSpec) -> KernelParams:
    """Memory-kernel latency and bandwidth from copy/cast records; the launch cost from launch records.

    Falls back to the GPU's :class:`~perfmodel.hardware.Efficiency` where the dataset has none.
    """
    pts = [(float(r["bytes"]), float(r["time_s"])) for r in records if r["op"] in ("copy", "cast")]
    # a tiny kernel's GPU time as a profiler sums it (launch gaps are not kernel time)
    launches = [float(r["time_s"]) for r in records
                if r["op"] == "launch" and r.get("method") == "profiler_kernel_duration"]
    launch = float(np.median(launches)) if launches else spec.launch_overhead_s
    if len(pts) >= 2:
        b, t = np.array(pts).T
        theta = _nnls(np.stack([np.ones_like(t), b], axis=1) / t[:, None], np.ones_like(t))
        if theta[1] > 0:
            return KernelParams(latency_s=float(theta[0]), bw_bytes_per_s=float(1 / theta[1]), launch_s=launch)
    return KernelParams(latency_s=spec.launch_overhead_s, bw_bytes_per_s=spec.achievable_mem_bw_bytes_per_s,
                        launch_s=launch)


#: Kernel names of GEMM libraries (cuBLAS nvjet/xmma/gemm, CUTLASS) in profiles. Inductor's own
#: kernels (``triton_*``) are never GEMMs here, even when named after the ``_scaled_mm`` they feed.
GEMM_KERNEL_RE = re.compile(r"nvjet|gemm|xmma|cutlass|cublas|wgmma", re.IGNORECASE)


def is_gemm_kernel(name: str) -> bool:
    """True for a GEMM library kernel name (see :data:`GEMM_KERNEL_RE`)."""
    return not name.startswith("triton") and GEMM_KERNEL_RE.search(name) is not None


def measured_cast_time_s(record: Mapping[str, Any]) -> float:
    """Seconds per step of the non-GEMM kernels of a measured ``linear`` record."""
    return float(sum(k["time_s"] for k in record["kernels"] if not is_gemm_kernel(k["name"])))


def _fit_casts(records: Sequence[Mapping[str, Any]], kernels: KernelParams) -> dict[str, CastParams]:
    """Per recipe, ``latency + bytes / bw`` per cast kernel, fitted on the measured non-GEMM time."""
    from .recipes import RECIPES, CastOptions

    out: dict[str, CastParams] = {}
    by_recipe: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        if r.get("recipe") in RECIPES and r["recipe"] != "bf16" and r.get("kernels"):
            by_recipe.setdefault(r["recipe"], []).append(r)
    for name, recs in sorted(by_recipe.items()):
        rows, target = [], []
        for r in recs:
            ks = RECIPES[name].cast_kernels(r["M"], r["K"], r["N"], CastOptions())
            mem = [k for k in ks if not k.launch_only]
            n_launch = len(ks) - len(mem)
            t = measured_cast_time_s(r) - n_launch * kernels.launch_s
            rows.append((len(mem), float(sum(k.bytes for k in mem))))
            target.append(max(t, 1e-9))
        if len(rows) < 2:
            continue
        A, t = np.array(rows, float), np.array(target)
        theta = _nnls(A / t[:, None], np.ones_like(t))
        if theta[1] > 0:
            out[name] = CastParams(latency_s=float(theta[0]), bw_bytes_per_s=float(1 / theta[1]))
    return out


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
                lines.append(f"{group:<22} {split:<8} {st['n']:>5} {st['mdape']:>8.2f} {st['p90']:>8.2f} "
                             f"{st['max']:>8.1f}")
    return "\n".join(lines)


def add_calibrate_cli(subparsers: Any) -> Any:
    """Register ``perfmodel calibrate`` on an argparse ``subparsers``."""
    p = subparsers.add_parser(
        "calibrate", help="fit the shape-aware model to a measured sweep (python -m perfmodel.bench)",
        description="Fit the calibrated GEMM/cast model of one GPU to datasets written by "
                    "`python -m perfmodel.bench` and write the calibration JSON.")
    p.add_argument("datasets", nargs="+", help="dataset JSON files (gemm, linear, memory, launch)")
    p.add_argument("--gpu", required=True, help="the GPU the data was measured on (its SM count matters)")
    p.add_argument("-o", "--output", required=True, help="calibration JSON to write")
    p.add_argument("--heldout", type=float, default=0.3,
                   help="share of shapes held out of the fit and reported separately (default 0.3; 0 = fit all)")
    p.add_argument("--json", action="store_true", help="print the residuals as JSON")
    p.set_defaults(func=_run_cli)
    return p


def _run_cli(args: Any) -> int:
    cal = Calibrator(gpu=args.gpu, heldout_fraction=args.heldout).fit(args.datasets)
    path = cal.model_.save(args.output)
    if args.json:
        print(json.dumps(cal.residuals_, indent=1))
    else:
        print(f"calibrated {cal.gpu_.name} from {len(args.datasets)} dataset(s) -> {path}")
        print(residual_table(cal.residuals_))
        print(f"use it: dataclasses.replace(perfmodel.get_gpu({cal.gpu_.name!r}), "
              f"calibration=perfmodel.calibrate.load_calibration({str(path)!r}))")
    return 0
