"""Fit the decoder-layer step model's parameters (:class:`perfmodel.step.LayerParams`) on measured layer steps.

``python -m perfmodel.calibrate.layer (--data DIR | DATA.json ...) [-o perfmodel/calibrations/h200_layer.json]``
fits on the layer sweep of ``python -m perfmodel.bench.layer`` (records ``op: "layer"``): the files named, or with
``--data DIR`` the quiet H200 sweep's files in ``DIR`` (:data:`DEFAULT_FILES`; a checkout keeps them in
:data:`REPO_DATA`, the wheel does not ship them), and writes the JSON the step model ships. The package never looks
for data by itself: with neither, or a folder without the files, it stops with a :class:`MissingDataError` that
names them. Progress (a line per stage, with the elapsed seconds) goes to standard error. Nothing in the package
imports this module (floor 5).

Each parameter is fitted on the kernels it describes, read off the records' kernel lists (GEMMs, cuDNN's
SDPA kernels and everything else are told apart by kernel name), in this order:

1. ``gemm_factors[g]``: median over records of measured GEMM kernel time of group ``g`` (bf16; fp8
   tensorwise; fp8 rowwise) over the calibrated model's prediction for the same GEMMs.
2. ``elementwise_latency_s``, ``elementwise_bw_fraction``: non-negative least squares on the bf16 steps'
   non-GEMM, non-SDPA kernel time = ``n_kernels · latency + bytes / (fraction · HBM)`` (the model's kernel list).
3. ``attention_{fwd,bwd}_fraction``, ``attention_{fwd,bwd}_row_s``: non-negative least squares of cuDNN's flash
   fprop / bprop kernel time ``t − latency = FLOP / (fraction · peak_bf16) + rows · row_s`` (rows: batch · heads
   · seq_len), relative to ``t``.
4. ``cast_factors[recipe/group]`` (tensorwise, rowwise; ``[recipe]`` for the others), ``fused_amax_cost``,
   ``norm_bwd_cast_cost``, ``mix_order_cast_cost``: non-negative least squares on the float8 steps' non-GEMM,
   non-SDPA kernel time minus the bf16 step's of the same layer and tokens (``mix_order_cast_cost`` is ``None``
   when no fitted step ran inductor's mix-order variant).
5. ``step_factors``, ``boost_window_s``: the CUDA-event step time as the profiled kernel time ``K`` plus
   ``min(1, window / K) · Σ_kind (factor − 1) · K_kind`` over the kernel kinds (bf16 tensor-core work — bf16
   GEMMs and SDPA —, float8 GEMMs, memory-bound kernels): non-negative least squares for the factors on a
   grid of windows, on the GPU-bound steps only (kernel time >= :data:`GPU_BOUND_KERNEL_S`);
   ``in_step_factor``: the median event / kernel ratio of the same steps. The profiled steps each follow a
   synchronize and a 20 ms sleep, the event-timed ones run back to back: the first ``window`` seconds of a
   profiled step run at clocks that sustained steps do not hold, which slows tensor-core kernels and not
   memory-bound ones.

``fit(records, exclude_dims=(4096,))`` leaves a layer size out (the held-out validation of ``docs/step.md``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._files import check_output, load_json
from ..errors import CalibrationError, MissingDataError, PerfModelError, require
from ..float8.recipes import get_recipe
from ..models.calibrated import ReferenceGPU
from ..models.registry import resolve
from ..presets import LayerShape
from ..specs.gpu import get_gpu
from ..step import layer_time
from ..step.kernels import price, raw_kernels, step_kind
from ..step.names import canonical
from ..step.params import SHIPPED_LAYER_FILE, STEP_FACTOR_KINDS, LayerParams

__all__ = [
    "DEFAULT_FILES",
    "FIT_GPU",
    "GPU_BOUND_KERNEL_S",
    "REPO_DATA",
    "LayerCase",
    "case_of",
    "default_paths",
    "fit",
    "fit_with_residuals",
    "load_records",
    "main",
    "measured_parts",
    "reusing_raw_kernels",
]

#: the GPU the shipped layer data was measured on
FIT_GPU = "H200"
#: steps with at least this much kernel time are GPU-bound and fit the step factors: the host (Python and
#: launch) time of a compiled layer step measured 2.0-5.6 ms per step on the H200 machine, bf16 and float8
#: alike (``host_step_s`` of benchmarks/data/h200_2026-12-01/h200_layer_host_2026-12-01.json), so a step of
#: 7 ms of kernels or more is not waiting for its launches
GPU_BOUND_KERNEL_S = 7e-3
#: the shipped fit's data (benchmarks/data/h200_2026-12-01/h200_layer_<part>_2026-12-01.json): all 164 configs of the
#: sweep, the 28 of a fourth layer size (dim 5120) and the 21 of the mix_order plan (dims 2048, 3072, 4096 at 4096
#: to 16384 tokens), measured with no compile beside the measurement (``--quiet``)
DEFAULT_PARTS = ("quiet", "quiet_part2", "quiet_large", "fresh_d5120", "mix_order")
#: the files of :data:`DEFAULT_PARTS` that ``--data DIR`` looks for (each may also be gzip-compressed, ``.json.gz``)
DEFAULT_FILES = tuple(f"h200_layer_{part}_2026-12-01.json" for part in DEFAULT_PARTS)
#: where a checkout of the perfmodel repository keeps :data:`DEFAULT_FILES` (named in errors; never read by default)
REPO_DATA = "benchmarks/data/h200_2026-12-01"
_GEMM_PREFIXES = ("nvjet", "sm90_xmma", "sm90_gemm", "cutlass", "ampere_", "sm80_")


def load_records(paths: str | Path | Iterable[str | Path]) -> list[dict[str, Any]]:
    """The successful ``layer`` records of one or more ``perfmodel.bench/1`` files."""
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    out = []
    for p in paths:
        data = load_json(p, what="layer dataset", error=CalibrationError)
        if not isinstance(data, dict):
            raise CalibrationError(f"{p}: expected a JSON object with a 'records' list (perfmodel.bench)")
        for r in data.get("records", []):
            if r.get("op") == "layer" and r.get("step_time_s") and not r.get("errors") and r.get("kernels"):
                out.append(r)
    if not out:
        raise CalibrationError(f"no layer records in {', '.join(map(str, paths))}")
    return out


def default_paths(folder: str | Path) -> list[Path]:
    """The files of the shipped fit (:data:`DEFAULT_FILES`, each ``.json`` or ``.json.gz``) in ``folder``.

    Raises:
        MissingDataError: ``folder`` is not a folder, or lacks some of the files (the message lists them and
            says where a checkout keeps them, :data:`REPO_DATA`).
    """
    folder = Path(folder)
    where = f"a checkout of the perfmodel repository keeps them in {REPO_DATA}/ (the wheel does not ship raw sweeps)"
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise MissingDataError(
            f"--data {folder}: {what}; the layer fit needs a folder with {', '.join(DEFAULT_FILES)} "
            f"(python -m perfmodel.bench.layer's sweep); {where}. Or name the files themselves."
        )
    paths, missing = [], []
    for name in DEFAULT_FILES:
        found = [p for p in (folder / name, folder / f"{name}.gz") if p.is_file()]
        (paths if found else missing).append(found[0] if found else name)
    if missing:
        empty = " (the folder is empty)" if not any(folder.iterdir()) else ""
        raise MissingDataError(
            f"--data {folder}: {len(missing)} of the {len(DEFAULT_FILES)} layer sweep files are missing{empty}: "
            f"{', '.join(missing)} (or .json.gz); {where}."
        )
    return paths


class LayerCase:
    """A record as the step model's arguments: ``layer``, ``batch``, ``seq_len``, ``recipe``, ``convert``."""

    def __init__(self, record: Mapping[str, Any]) -> None:
        self.record = record
        self.layer = LayerShape(
            name=f"d{record['dim']}",
            hidden=int(record["dim"]),
            ffn=int(record["ffn"]),
            heads=int(record["heads"]),
            kv_heads=int(record["kv_heads"]),
            head_dim=int(record["head_dim"]),
        )
        self.batch, self.seq_len = int(record["batch"]), int(record["seq_len"])
        self.recipe = str(record["recipe"])
        conv = [canonical(n) for n in record.get("converted", [])]
        if any(c is None for c in conv):
            raise CalibrationError(f"{record['id']}: unknown Linear names {record['converted']}")
        self.convert = tuple(c for c in conv if c)
        self.case = str(record["case"])

    def predict(self, params: LayerParams, **kw: Any) -> Any:
        """The step model's :class:`~perfmodel.step.LayerTime` for this record."""
        return layer_time(
            self.layer,
            gpu=kw.pop("gpu", FIT_GPU),
            seq_len=self.seq_len,
            batch=self.batch,
            recipe=self.recipe,
            convert=self.convert or None,
            layer_params=params,
            **kw,
        )


def case_of(record: Mapping[str, Any]) -> LayerCase:
    """:class:`LayerCase` of a record."""
    return LayerCase(record)


def _is_gemm(name: str) -> bool:
    low = name.lower()
    return low.startswith(_GEMM_PREFIXES) or "gemm" in low


def _is_fp8_gemm(name: str) -> bool:
    # cuBLAS nvjet kernels name their operand types: q = fp8 (e4m3/e5m2), r = fp8 with row scales
    low = name.lower()
    return _is_gemm(name) and (low.startswith(("nvjet_sm90_qq", "nvjet_sm90_qr", "nvjet_sm90_rq")) or "f8" in low)


def measured_parts(record: Mapping[str, Any]) -> dict[str, float]:
    """Kernel seconds per step by part: ``gemm_bf16``, ``gemm_fp8``, ``attention_fwd``, ``attention_bwd``
    (cuDNN's generated flash fprop / bprop kernels), ``other`` (everything else: norms, RoPE, activation,
    residual, casts, cuDNN's helper kernels, memsets)."""
    out = {"gemm_bf16": 0.0, "gemm_fp8": 0.0, "attention_fwd": 0.0, "attention_bwd": 0.0, "other": 0.0}
    for k in record["kernels"]:
        name, t = k["name"], float(k["time_s"])
        if "cudnn_generated" in name and "fprop" in name:
            out["attention_fwd"] += t
        elif "cudnn_generated" in name and "bprop" in name:
            out["attention_bwd"] += t
        elif _is_gemm(name):
            out["gemm_fp8" if _is_fp8_gemm(name) else "gemm_bf16"] += t
        else:
            out["other"] += t
    return out


#: inside :func:`reusing_raw_kernels`: each layer case's raw kernels, with the GPU and time model they were priced on
_RAW_CACHE: dict[tuple[Any, ...], tuple[Any, Any, list[Any]]] | None = None


@contextlib.contextmanager
def reusing_raw_kernels() -> Iterator[None]:
    """Within the block, :func:`fit` prices each layer case's raw kernels (the step model's kernels before the fitted
    factors, which no fit changes) once, not once per fit: :func:`fit_with_residuals` and the held-out rotation of
    ``benchmarks/harness/validate_step.py`` fit the same records six times. A case is priced again if the GPU or
    the time model it was priced on is not the one now registered; the block must not change anything else the step
    model reads. Nested blocks share the outer one's cache."""
    global _RAW_CACHE
    outer = _RAW_CACHE
    if outer is None:
        _RAW_CACHE = {}
    try:
        yield
    finally:
        if outer is None:
            _RAW_CACHE = None


def _raw(case: LayerCase) -> list[Any]:
    spec = get_gpu(FIT_GPU)
    tm, _ = resolve(spec)
    rec = get_recipe(case.recipe)
    conv = frozenset(case.convert) if rec.name != "bf16" else frozenset()
    key = (case.layer, case.batch, case.seq_len, rec.name, conv)
    cache = _RAW_CACHE
    if cache is not None and key in cache and cache[key][0] is spec and cache[key][1] is tm:
        return cache[key][2]
    got = raw_kernels(
        case.layer, batch=case.batch, seq_len=case.seq_len, recipe=rec, converted=conv, spec=spec, time_model=tm
    )
    if cache is not None:
        cache[key] = (spec, tm, got)
    return got


#: recipes whose cast factor is fitted per group of Linears (their single-group configs identify it); the others
#: (rowwise_with_gw_hp: measured with every Linear converted only) get one factor per recipe
PER_GROUP_CASTS: tuple[str, ...] = ("tensorwise", "rowwise")


def _fit_key(key: str) -> str:
    """The cast factor a kernel of cast key ``recipe/group`` is fitted under (:data:`PER_GROUP_CASTS`)."""
    recipe = key.split("/")[0]
    return key if recipe in PER_GROUP_CASTS else recipe


def _nnls(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    nnls = require("scipy.optimize", "the layer calibration's non-negative least squares").nnls

    scale = np.maximum(np.abs(X).max(axis=0), 1e-30)
    coef, _ = nnls(X / scale, y)
    return coef / scale


def fit(
    records: Sequence[Mapping[str, Any]],
    *,
    exclude_dims: Iterable[int] = (),
    source: str = "",
) -> LayerParams:
    """Fit :class:`LayerParams` on ``records`` (``layer`` records of one GPU) without the layer sizes
    ``exclude_dims``. The GPU is the shipped calibration's reference (the H200)."""
    skip = set(int(d) for d in exclude_dims)
    recs = [r for r in records if int(r["dim"]) not in skip]
    if not recs:
        raise CalibrationError("no records left to fit")
    spec = get_gpu(FIT_GPU)
    bw, peak = spec.mem_bw_bytes_per_s, spec.peak_flops_per_s("bf16")
    cases = [LayerCase(r) for r in recs]
    raws = {r["id"]: _raw(c) for r, c in zip(recs, cases, strict=True)}
    meas = {r["id"]: measured_parts(r) for r in recs}

    # 1. GEMM factors
    gemm_factors = _fit_gemm_factors(recs, raws, meas)
    # 2. elementwise latency and bandwidth (bf16 steps)
    bf16 = [r for r in recs if r["recipe"] == "bf16"]
    latency, ew_fraction = _fit_elementwise(bf16, raws, meas, bw)
    # 3. attention
    att = _fit_attention(recs, raws, meas, latency, peak)
    (fwd_fraction, fwd_row_s), (bwd_fraction, bwd_row_s) = att["attention_fwd"], att["attention_bwd"]
    # 4. casts
    cast_factors, fused_amax_cost, norm_bwd_cast_cost, mix_order_cast_cost = _fit_cast_costs(recs, bf16, raws, meas, bw)
    # 5. step factors and boost window
    gpu_bound, in_step = _gpu_bound_steps(recs)
    dims = sorted({int(r["dim"]) for r in recs})
    params = LayerParams(
        attention_fwd_fraction=fwd_fraction,
        attention_bwd_fraction=bwd_fraction,
        attention_fwd_row_s=fwd_row_s,
        attention_bwd_row_s=bwd_row_s,
        elementwise_bw_fraction=ew_fraction,
        elementwise_latency_s=float(latency),
        fused_amax_cost=fused_amax_cost,
        norm_bwd_cast_cost=norm_bwd_cast_cost,
        mix_order_cast_cost=mix_order_cast_cost,
        gemm_factors=gemm_factors,
        cast_factors=cast_factors,
        in_step_factor=in_step,
        source=source or f"{len(recs)} layer steps, dims {', '.join(map(str, dims))}",
        reference=ReferenceGPU.from_spec(spec),
    )
    return _with_step_factors(params, gpu_bound, raws, spec)


def _fit_gemm_factors(
    recs: Sequence[Mapping[str, Any]], raws: Mapping[str, list[Any]], meas: Mapping[str, dict[str, float]]
) -> dict[str, float]:
    """Stage 1: ``gemm_factors``, measured over predicted GEMM time per group (a ratio, median over records)."""
    ratios: dict[str, list[float]] = {}
    for r in recs:
        base: dict[str, float] = {}
        for k in raws[r["id"]]:
            if k.kind == "gemm":
                key = k.key.replace("fp8_e5m2", "fp8_e4m3")
                base[key] = base.get(key, 0.0) + float(k.base_s)
        for key, pred in base.items():
            got = meas[r["id"]]["gemm_bf16" if key == "bf16" else "gemm_fp8"]
            if key != "bf16" and len([b for b in base if b != "bf16"]) > 1:
                continue  # fp8 time of two scalings in one record cannot be told apart
            if pred > 0 and got > 0:
                ratios.setdefault(key, []).append(got / pred)
    return {k: float(np.median(v)) for k, v in sorted(ratios.items())}


def _fit_elementwise(
    bf16: Sequence[Mapping[str, Any]], raws: Mapping[str, list[Any]], meas: Mapping[str, dict[str, float]], bw: float
) -> tuple[Any, Any]:
    """Stage 2: ``(elementwise_latency_s, elementwise_bw_fraction)`` (seconds per kernel; a fraction of HBM)."""
    if len(bf16) < 2:
        raise CalibrationError("the elementwise fit needs at least two bf16 layer steps")
    X = np.array(
        [
            [
                sum(k.kind == "memory" for k in raws[r["id"]]),
                sum(float(k.bytes) for k in raws[r["id"]] if k.kind == "memory") / bw,
            ]
            for r in bf16
        ]
    )
    y = np.array([meas[r["id"]]["other"] for r in bf16])
    latency, inv_fraction = _nnls(X, y)
    if inv_fraction <= 0:
        raise CalibrationError(
            "elementwise fit: no bandwidth term (the bf16 steps' other time does not grow with bytes)"
        )
    return latency, 1.0 / inv_fraction


def _fit_attention(
    recs: Sequence[Mapping[str, Any]],
    raws: Mapping[str, list[Any]],
    meas: Mapping[str, dict[str, float]],
    latency: Any,
    peak: float,
) -> dict[str, tuple[float, float]]:
    """Stage 3: ``{kind: (fraction, row_s)}`` for ``attention_fwd`` / ``attention_bwd`` (a fraction of the bf16
    peak; seconds per row)."""
    # t - latency = FLOP / (fraction · peak) + rows · row_s, non-negative least squares in relative terms (each
    # step's SDPA kernel weighted by 1 / its time)
    att: dict[str, tuple[float, float]] = {}
    for kind in ("attention_fwd", "attention_bwd"):
        X, y = [], []
        for r in recs:
            t = meas[r["id"]][kind] - latency
            for k in raws[r["id"]]:
                if k.kind == kind and t > 0:
                    X.append([float(k.flops) / peak / t, float(k.rows) / t])
                    y.append(1.0)
        if not X:
            raise CalibrationError(f"no measured {kind} kernel time to fit the attention rate on")
        inv_rate, row_s = _nnls(np.array(X), np.array(y))
        if not inv_rate > 0:
            raise CalibrationError(f"{kind}: the fit found no FLOP-proportional time (a rate of infinity)")
        att[kind] = (1.0 / float(inv_rate), float(row_s))
    return att


def _fit_cast_costs(
    recs: Sequence[Mapping[str, Any]],
    bf16: Sequence[Mapping[str, Any]],
    raws: Mapping[str, list[Any]],
    meas: Mapping[str, dict[str, float]],
    bw: float,
) -> tuple[dict[str, float], float, float, float | None]:
    """Stage 4: ``(cast_factors, fused_amax_cost, norm_bwd_cast_cost, mix_order_cast_cost)`` (factors on the
    casts' base seconds; costs as multiples of their bytes' HBM seconds; ``mix_order_cast_cost`` ``None`` unless
    a fitted step ran the mix-order variant)."""
    # float8 step minus the bf16 step of the same case, other time only
    other_bf16 = {r["case"]: meas[r["id"]]["other"] for r in bf16}
    f8 = [r for r in recs if r["recipe"] != "bf16" and r["case"] in other_bf16]
    recipes = sorted({_fit_key(k.key) for r in f8 for k in raws[r["id"]] if k.kind == "cast"})  # cast factor keys
    rows, ys = [], []
    for r in f8:
        ks = raws[r["id"]]
        row = [sum(float(k.base_s) for k in ks if k.kind == "cast" and _fit_key(k.key) == rc) for rc in recipes]
        row += [
            sum(float(k.bytes) for k in ks if k.kind == kind) / bw
            for kind in ("fused_amax", "norm_bwd_cast", "mix_order_cast")
        ]
        rows.append(row)
        ys.append(
            meas[r["id"]]["other"] - other_bf16[r["case"]] - sum(float(k.base_s) for k in ks if k.kind == "launch")
        )
    X = np.array(rows)
    coef = _nnls(X, np.array(ys)) if rows else np.zeros(len(recipes) + 3)
    cast_factors = {rc: float(c) for rc, c in zip(recipes, coef[: len(recipes)], strict=True) if c > 0}
    fused_amax_cost, norm_bwd_cast_cost = float(coef[-3]), float(coef[-2])
    # the mix-order variant's cost, only where a fitted step ran it (else None: priced as norm_bwd_cast)
    mix_order_cast_cost = float(coef[-1]) if rows and bool(np.any(X[:, -1] > 0)) else None
    return cast_factors, fused_amax_cost, norm_bwd_cast_cost, mix_order_cast_cost


def _gpu_bound_steps(recs: Sequence[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], float]:
    """Stage 5, first part: the GPU-bound records and ``in_step_factor`` (their median event / kernel time ratio)."""
    # the steps whose GPU time is well above their host (launch) time
    gpu_bound = [r for r in recs if float(r["step_kernel_time_s"]) >= GPU_BOUND_KERNEL_S]
    if not gpu_bound:
        raise CalibrationError(
            f"the step factors need GPU-bound layer steps (kernel time >= {GPU_BOUND_KERNEL_S * 1e3:.0f} ms); "
            "none given"
        )
    in_step = float(statistics.median(float(r["step_time_s"]) / float(r["step_kernel_time_s"]) for r in gpu_bound))
    return gpu_bound, in_step


def _with_step_factors(
    params: LayerParams, gpu_bound: Sequence[Mapping[str, Any]], raws: Mapping[str, list[Any]], spec: Any
) -> LayerParams:
    """Stage 5: ``params`` with ``step_factors`` (ratios per kind) and ``boost_window_s`` (seconds) fitted."""
    # the kernel prices do not depend on the step factors, so the parameters fitted so far price them
    X = np.array([_kind_times(raws[r["id"]], params, spec) for r in gpu_bound])
    factors, window = _fit_step_factors(X, np.array([float(r["step_time_s"]) for r in gpu_bound]))
    return dataclasses.replace(params, step_factors=factors, boost_window_s=window)


#: boost windows tried by the step-factor fit, seconds (a grid: the fit's one nonlinear parameter)
BOOST_WINDOWS_S = tuple(round(2.5e-3 * i, 4) for i in range(2, 81))  # 5 ms .. 200 ms


def _fit_step_factors(X: np.ndarray, event_s: np.ndarray) -> tuple[dict[str, float], float]:
    """Step factors per kind and the boost window (:class:`LayerParams`): for each window on the grid
    :data:`BOOST_WINDOWS_S`, non-negative least squares of ``event − K`` on ``K_kind · min(1, window / K)``
    (coefficients: ``factor − 1 >= 0``); the window whose fit has the least squared log error wins.
    ``X``: predicted kernel seconds per kind (rows: steps, columns :data:`STEP_FACTOR_KINDS`)."""
    used = X.sum(axis=0) > 0  # kinds the steps ran (a sweep without float8 has no fp8 tensor-core time)
    K = X.sum(axis=1)
    best: tuple[float, float, np.ndarray] | None = None
    for window in BOOST_WINDOWS_S:
        A = X[:, used] * np.minimum(1.0, window / K)[:, None]
        coef = _nnls(A, event_s - K)
        err = float(np.sum(np.log((K + A @ coef) / event_s) ** 2))
        if best is None or err < best[0]:
            best = (err, window, coef)
    assert best is not None
    kinds = [k for k, u in zip(STEP_FACTOR_KINDS, used, strict=True) if u]
    return {k: 1.0 + float(c) for k, c in zip(kinds, best[2], strict=True)}, best[1]


def _kind_times(raw: Sequence[Any], params: LayerParams, spec: Any) -> list[float]:
    """Predicted kernel seconds of a step per step-factor kind (:data:`STEP_FACTOR_KINDS` order)."""
    out = dict.fromkeys(STEP_FACTOR_KINDS, 0.0)
    for k in raw:
        out[step_kind(k)] += float(price(k, params, spec, calibrated=True))
    return [out[k] for k in STEP_FACTOR_KINDS]


def _ape(pred: float, meas: float) -> float:
    return abs(pred / meas - 1) * 100


def residuals(params: LayerParams, records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Error of ``params`` on ``records``: step time and kernel time MdAPE (%), float8 speedup MdAPE (%)."""
    pred = {r["id"]: LayerCase(r).predict(params) for r in records}
    bf16 = {r["case"]: r for r in records if r["recipe"] == "bf16"}
    step = [_ape(float(pred[r["id"]].step_s), r["step_time_s"]) for r in records]
    kern = [_ape(float(pred[r["id"]].kernel_s), r["step_kernel_time_s"]) for r in records]
    speed = []
    for r in records:
        b = bf16.get(r["case"])
        if r["recipe"] != "bf16" and b is not None:
            ps = float(pred[b["id"]].step_s) / float(pred[r["id"]].step_s)
            speed.append(_ape(ps, b["step_time_s"] / r["step_time_s"]))
    return {
        "n": len(records),
        "step_mdape_pct": round(float(np.median(step)), 2),
        "kernel_mdape_pct": round(float(np.median(kern)), 2),
        "speedup_mdape_pct": round(float(np.median(speed)), 2) if speed else None,
    }


def fit_with_residuals(
    records: Sequence[Mapping[str, Any]], *, source: str, progress: Callable[[str], None] | None = None
) -> LayerParams:
    """:func:`fit` on all records, with in-sample residuals and the held-out rotation (each layer size
    predicted by a fit on the others) recorded in ``residuals``; ``progress`` (if given) gets a line per stage."""
    with reusing_raw_kernels():  # the same records fitted 1 + (layer sizes) times
        return _fit_with_residuals(records, source=source, say=progress or (lambda _msg: None))


def _fit_with_residuals(
    records: Sequence[Mapping[str, Any]], *, source: str, say: Callable[[str], None]
) -> LayerParams:
    say(f"fit on all {len(records)} records")
    params = fit(records, source=source)
    rotation = {}
    speed, step = [], []
    dims = sorted({int(r["dim"]) for r in records})
    for i, d in enumerate(dims, 1):
        n = sum(int(r["dim"]) == d for r in records)
        say(f"held-out rotation {i}/{len(dims)}: fit without dim {d}, predict its {n} records")
        sub = fit(records, exclude_dims=(d,))
        res = residuals(sub, [r for r in records if int(r["dim"]) == d])
        rotation[str(d)] = res
        speed.append(res["speedup_mdape_pct"])
        step.append(res["step_mdape_pct"])
    held = {
        "rotations": rotation,
        "speedup_mdape_pct": round(float(np.median([s for s in speed if s is not None])), 2),
        "step_mdape_pct": round(float(np.median(step)), 2),
    }
    say("in-sample residuals")
    return dataclasses.replace(params, residuals={"in_sample": residuals(params, records), "heldout": held})


def _progress() -> Callable[[str], None]:
    """A progress printer: each line to standard error with the seconds since it was made."""
    start = time.monotonic()

    def say(msg: str) -> None:
        print(f"[{time.monotonic() - start:7.1f} s] {msg}", file=sys.stderr, flush=True)

    return say


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: fit on the layer sweep files and write the layer calibration JSON. Exit status 0, or 2 with a
    one-line error (a :class:`~perfmodel.errors.PerfModelError`: missing data, a bad file, an output that exists)."""
    ap = argparse.ArgumentParser(prog="python -m perfmodel.calibrate.layer", description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="*", help="perfmodel.bench/1 files with layer records (or --data DIR)")
    ap.add_argument(
        "--data",
        dest="folder",
        metavar="DIR",
        help=f"folder with the shipped fit's files ({', '.join(DEFAULT_FILES)}; a checkout keeps them in {REPO_DATA})",
    )
    ap.add_argument("-o", "--out", default=str(SHIPPED_LAYER_FILE), help="output JSON (default: the shipped file)")
    ap.add_argument("--force", action="store_true", help="replace the output file if it exists")
    args = ap.parse_args(argv)
    try:
        return _run(args, _progress())
    except PerfModelError as exc:
        print(f"{ap.prog}: error: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    if args.data and args.folder:
        raise CalibrationError("name the layer files or give --data DIR, not both")
    if not args.data and not args.folder:
        raise MissingDataError(
            f"no data: the layer fit needs the layer sweep's files — --data DIR with {', '.join(DEFAULT_FILES)} "
            f"(a checkout of the perfmodel repository keeps them in {REPO_DATA}/; the wheel does not ship raw "
            "sweeps), or name perfmodel.bench/1 files with layer records"
        )
    paths = [Path(p) for p in args.data] if args.data else default_paths(args.folder)
    for p in paths:
        if not p.exists():
            raise MissingDataError(f"{p}: no such file; a checkout keeps the layer sweep in {REPO_DATA}/")
    check_output(args.out, force=args.force, inputs=paths)  # before the fit, not after it
    say(f"reading {len(paths)} files")
    records = load_records(paths)
    meta = load_json(paths[0], what="layer dataset", error=CalibrationError).get("meta", {})
    source = (
        f"measured: python -m perfmodel.bench.layer ({', '.join(p.name for p in paths)}: {len(records)} "
        f"decoder-layer steps), {meta.get('gpu_name', FIT_GPU)}, {meta.get('date', '?')}, "
        f"torch {meta.get('torch', '?')}, "
        f"torchao {meta.get('torchao', '?')}"
    )
    params = fit_with_residuals(records, source=source, progress=say)
    params.save(args.out, force=args.force)
    say(f"wrote {args.out}")
    print(f"wrote {args.out}: {json.dumps(params.to_dict()['params'], indent=1)}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
