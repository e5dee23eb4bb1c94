"""Fit the grouped-GEMM time model (:mod:`perfmodel.moe.grouped`) on grouped-GEMM sweep records.

``fit(records, gpu)`` fits, per timing (event, kernel), dtype (bf16, fp8) and op (fwd, wgrad), the parameters of
:func:`perfmodel.moe.grouped.model_time_s` by Levenberg-Marquardt (Gauss-Newton with damping, numpy only) on
``log(predicted) - log(measured)``; every parameter is positive and fitted as its logarithm.

Command line::

    python -m perfmodel.calibrate.grouped --data benchmarks/data/h200_2026-12-03 --out h200_grouped.json

The data folder is an argument (nothing here defaults to the repository's ``benchmarks/``); it must hold
``grouped_gemm_time.json.gz`` (event times) and ``grouped_gemm_kernels.json.gz`` (kernel times) as written by
``python -m perfmodel.bench.grouped_gemm``. Only the layouts torch uses in training are fitted (:data:`LAYOUTS`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._files import load_json, read_bytes, write_atomic
from ..errors import CalibrationError, MissingDataError
from ..moe import grouped as gm
from ..moe.grouped_kernel import _sm_bound_load
from ..specs.gpu import get_gpu

__all__ = [
    "FILES",
    "FIT_FAMILIES",
    "LAYOUTS",
    "TEST_FAMILIES",
    "VALIDATION_FAMILIES",
    "calibration",
    "class_cost",
    "fit",
    "in_training_layout",
    "load_records",
    "main",
    "predict_records",
    "score",
]

#: the sweep files read from ``--data``, per timing
FILES = {"event": "grouped_gemm_time.json.gz", "kernel": "grouped_gemm_kernels.json.gz"}
#: (op, dtype) -> the layout torch uses in training (fwd: x row-major, w column-major; bf16 wgrad: plain
#: transposes; fp8 wgrad: the only layout _scaled_grouped_mm takes, groups padded)
LAYOUTS = {
    ("fwd", "bf16"): "a_row_b_col",
    ("fwd", "fp8"): "a_row_b_col",
    ("wgrad", "bf16"): "a_col_b_row",
    ("wgrad", "fp8"): "a_row_b_col",
}
#: split by model family, chosen before any score was computed: the fit families span the smallest (qwen3) to
#: the largest (llama4_maverick) expert shapes plus the random shapes; validation = looked at while choosing the
#: model form; test = looked at once, at the end. llama4_scout has the very (K, N) of llama4_maverick (only G
#: differs): held out by family, not by shape; the other held-out families share no (K, N) with a fit family.
FIT_FAMILIES = ("deepseek_v3", "qwen3_30b_a3b", "llama4_maverick", "random")
VALIDATION_FAMILIES = ("deepseek_v3_16b", "llama4_scout")
TEST_FAMILIES = ("gpt_oss_120b", "mixtral_8x7b")
_GPU = "H200"


def _dtype(rec: dict[str, Any]) -> str:
    return "bf16" if rec["dtype"] == "bf16" else "fp8"


def in_training_layout(rec: dict[str, Any]) -> bool:
    """Whether a sweep record (``op``, ``dtype``, ``layout``) is a fwd or wgrad call in the layout training runs
    (:data:`LAYOUTS`): the records the model is fitted and scored on."""
    return rec.get("op") in ("fwd", "wgrad") and LAYOUTS.get((rec["op"], _dtype(rec))) == rec.get("layout")


def load_records(data: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of both timings in folder ``data`` with the training layouts (:data:`LAYOUTS`).

    Raises:
        MissingDataError: the folder or one of :data:`FILES` is missing (a :class:`CalibrationError`).
        CalibrationError: a file is malformed or holds no grouped records.
    """
    folder = Path(data)
    if not folder.is_dir():
        raise MissingDataError(
            f"{folder}: no such data folder; pass --data with the folder of {' and '.join(FILES.values())} (the "
            "repository keeps the H200 sweep in benchmarks/data/h200_2026-12-03; the wheel ships the fit only)"
        )
    out = []
    for timing, name in FILES.items():
        path = folder / name
        if not path.is_file():
            raise MissingDataError(f"{path}: missing; the data folder must hold {' and '.join(FILES.values())}")
        recs = load_json(path, what="grouped-GEMM sweep", error=CalibrationError).get("records", [])
        for r in recs:
            if in_training_layout(r):
                out.append({**r, "timing": timing})
    if not out:
        raise CalibrationError(f"{folder}: no grouped fwd/wgrad records in the training layouts")
    return out


def _features(rec: dict[str, Any], sms: int) -> dict[str, Any]:
    dtype, op = _dtype(rec), rec["op"]
    rows = gm.pad_group_sizes(np.asarray(rec.get("rows_requested") or rec["rows"]), dtype)
    cfg = gm.kernel_config(dtype, op, int(rows.sum()), rows.size, rec["K"], rec["N"])
    D, C = gm.sm_loads(rows, rec["K"], rec["N"], op, cfg, sms)
    nbytes = gm._bytes(rows, rec["K"], rec["N"], op, 1.0 if dtype == "fp8" else 2.0)
    return {"cfg": cfg.name, "D": D.astype(float), "C": C.astype(float), "bytes": nbytes, "G": rows.size}


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -60.0, 60.0)))


def _unpack(theta: np.ndarray, names: Sequence[str]) -> dict[str, Any]:
    v = np.exp(np.clip(theta, -60.0, 30.0))  # bounded: a parameter driven to 0 stays finite
    p: dict[str, Any] = {"tiles": {}}
    for i, cfg in enumerate(names):
        p["tiles"][cfg] = {"t_kb_s": float(v[2 * i]), "c0": float(v[2 * i + 1])}
    k = 2 * len(names)
    # mem_eff in (0, 1): the kernel cannot stream faster than the spec HBM bandwidth (the L2 is flushed)
    p["mem_eff"], p["t0_s"], p["t_group_s"], p["p"] = (
        float(_sigmoid(theta[k])),
        float(v[k + 1]),
        float(v[k + 2]),
        1.0 + float(v[k + 3]),
    )
    # bounded: the slow-down at full duty in (0, 1), its time scale in (10 us, 100 ms)
    p["throttle"] = float(_sigmoid(theta[k + 4]))
    p["throttle_tau_s"] = float(np.exp(np.log(1e-5) + np.log(1e4) * _sigmoid(theta[k + 5])))
    # the busiest SM's weight against the mean SM load, and the norm between them in (1, 8)
    p["sm_weight"] = float(np.exp(np.clip(theta[k + 6], -20.0, 5.0)))
    p["sm_norm"] = 1.0 + 7.0 * float(_sigmoid(theta[k + 7]))
    return p


def _pack(p: dict[str, Any], names: Sequence[str]) -> np.ndarray:
    """The inverse of :func:`_unpack`: parameters of one class -> the fitted vector."""

    def logit(x: float) -> float:
        x = min(max(x, 1e-12), 1 - 1e-12)
        return float(np.log(x / (1 - x)))

    v = [np.log(max(p["tiles"][n][k], 1e-300)) for n in names for k in ("t_kb_s", "c0")]
    v += [
        logit(p["mem_eff"]),
        np.log(max(p["t0_s"], 1e-300)),
        np.log(max(p["t_group_s"], 1e-300)),
        np.log(max(p["p"] - 1.0, 1e-300)),
    ]
    v += [logit(p["throttle"]), logit((np.log(p["throttle_tau_s"]) - np.log(1e-5)) / np.log(1e4))]
    v += [np.log(p["sm_weight"]), logit((p["sm_norm"] - 1.0) / 7.0)]
    return np.array(v)


def class_cost(
    records: Sequence[dict[str, Any]], params: dict[str, Any], gpu: str = _GPU, lm_iters: int = 0
) -> tuple[float, float]:
    """Sum of squared log residuals of one class's ``records`` at ``params`` and after ``lm_iters`` more
    Levenberg-Marquardt steps from there (a shipped fit is a fixed point: the second is not lower)."""
    spec = get_gpu(gpu)
    feats = [_features(r, spec.num_sms) for r in records]
    y = np.log([r["time_s"] for r in records])
    names = sorted(params["tiles"])

    def resid(th: np.ndarray) -> np.ndarray:
        return np.log(_predict(th, names, feats, spec.mem_bw_bytes_per_s)) - y

    th0 = _pack(params, names)
    r0 = resid(th0)
    r1 = resid(_lm(th0, resid, iters=lm_iters)) if lm_iters else r0
    return float(r0 @ r0), float(r1 @ r1)


def _predict(theta: np.ndarray, names: Sequence[str], feats: list[dict[str, Any]], bw: float) -> np.ndarray:
    p = _unpack(theta, names)
    out = np.empty(len(feats))
    for i, f in enumerate(feats):
        tile = p["tiles"][f["cfg"]]
        L = f["D"] + tile["c0"] * f["C"]
        compute = gm._throttled(tile["t_kb_s"] * _sm_bound_load(float(L.max()), float(L.mean()), p), p)
        memory = f["bytes"] / (p["mem_eff"] * bw)
        q = p["p"]
        out[i] = p["t0_s"] + p["t_group_s"] * f["G"] + (compute**q + memory**q) ** (1 / q)
    return out


def _lm(theta: np.ndarray, resid: Any, iters: int = 60) -> np.ndarray:
    """Levenberg-Marquardt on ``resid(theta)`` (numeric Jacobian, forward differences)."""
    lam, r = 1e-2, resid(theta)
    cost = float(r @ r)
    for _ in range(iters):
        J = np.empty((r.size, theta.size))
        for j in range(theta.size):
            d = np.zeros_like(theta)
            d[j] = 1e-6
            J[:, j] = (resid(theta + d) - r) / 1e-6
        A, g = J.T @ J, J.T @ r
        while True:
            step = np.linalg.solve(A + lam * np.diag(np.diag(A) + 1e-12), -g)
            new = theta + step
            rn = resid(new)
            cn = float(rn @ rn)
            if cn < cost:
                theta, r, lam = new, rn, lam / 3
                improved = cost - cn
                cost = cn
                break
            lam *= 4
            if lam > 1e8:
                return theta
        if improved < 1e-10 * max(cost, 1e-30):
            break
    return theta


def _start(names: Sequence[str], spec: Any) -> list[float]:
    """Starting point per kernel: a k-block at 80 % of the per-SM dense peak, 1 k-block of per-tile overhead."""
    cfgs = {c.name: c for c in gm.KERNELS.values()}
    out = []
    for n in names:
        c = cfgs[n]
        peak = spec.peak_flops_per_s("bf16" if n.startswith("bf16") else "fp8_e4m3") / spec.num_sms
        out += [2.0 * c.bm * c.bn * c.bk / (0.8 * peak), 1.0]
    return out


def fit(records: Iterable[dict[str, Any]], gpu: str = _GPU) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Fit every class ``timing/dtype/op`` on ``records`` (already the fit split). Returns (params per class,
    log residuals per class: ``log(pred / measured)``, in record order of that class)."""
    spec = get_gpu(gpu)
    classes: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        classes.setdefault(gm._class_key(r["timing"], _dtype(r), r["op"]), []).append(r)
    params, residuals = {}, {}
    for key in sorted(classes):
        recs = classes[key]
        feats = [_features(r, spec.num_sms) for r in recs]
        y = np.log([r["time_s"] for r in recs])
        names = sorted({f["cfg"] for f in feats})

        def resid(th: np.ndarray, feats=feats, y=y, names=names) -> np.ndarray:
            return np.log(_predict(th, names, feats, spec.mem_bw_bytes_per_s)) - y

        # a few starts of the throttle (a, tau): 0.1 or 0.3 at full duty, tau 0.3 ms or 3 ms; and of the busiest
        # SM's weight (0.37 or 1); the norm starts at 1.8; keep the best
        best = None
        for w0 in (-1.0, 0.0):
            for a0, tau0 in ((-2.2, 0.26), (-0.85, 0.26), (-2.2, 0.5), (-0.85, 0.5)):
                th0 = np.array([*np.log(_start(names, spec)), 1.4, *np.log([5e-6, 5e-8, 3.0]), a0, tau0, w0, -2.0])
                th = _lm(th0, resid)
                r = resid(th)
                if best is None or float(r @ r) < best[0] - 1e-12:
                    best = (float(r @ r), th)
        theta = best[1]
        params[key] = _unpack(theta, names)
        residuals[key] = resid(theta)
    return params, residuals


def predict_records(records: Sequence[dict[str, Any]], params: dict[str, Any], gpu: str = _GPU) -> np.ndarray:
    """The model's time for each record (its class's parameters), seconds."""
    spec = get_gpu(gpu)
    out = []
    for r in records:
        dtype = _dtype(r)
        rows = gm.pad_group_sizes(np.asarray(r.get("rows_requested") or r["rows"]), dtype)
        p = params[gm._class_key(r["timing"], dtype, r["op"])]
        out.append(gm.model_time_s(rows, r["K"], r["N"], r["op"], dtype, p, spec, spec)[0])
    return np.array(out)


def _dist(r: dict[str, Any]) -> str:
    return "balanced" if r["dist"] == "balanced" else "skewed"


def score(records: Sequence[dict[str, Any]], pred: np.ndarray, roof: np.ndarray | None = None) -> list[dict[str, Any]]:
    """MdAPE / p90 of |pred/measured - 1| (%) per timing, dtype, op and dist (balanced; skewed = skewed + empty)."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, r in enumerate(records):
        for key in ((r["timing"], _dtype(r), "all", _dist(r)), (r["timing"], _dtype(r), r["op"], _dist(r))):
            groups.setdefault(key, []).append(i)
    meas = np.array([r["time_s"] for r in records])
    rows = []
    for key in sorted(groups):
        idx = np.array(groups[key])
        e = np.abs(pred[idx] / meas[idx] - 1) * 100
        row = {
            "timing": key[0],
            "dtype": key[1],
            "op": key[2],
            "dist": key[3],
            "n": int(idx.size),
            "mdape": float(np.median(e)),
            "p90": float(np.percentile(e, 90)),
        }
        if roof is not None:
            er = np.abs(roof[idx] / meas[idx] - 1) * 100
            row["roof_mdape"], row["roof_p90"] = float(np.median(er)), float(np.percentile(er, 90))
        rows.append(row)
    return rows


def _error_bars(recs: Sequence[dict[str, Any]], params: dict[str, Any], gpu: str) -> dict[str, Any]:
    """Held-out (validation + test families) |pred/measured - 1| p50 / p90 per class, %."""
    held = [r for r in recs if r["family"] in VALIDATION_FAMILIES + TEST_FAMILIES]
    pred = predict_records(held, params, gpu)
    out = {}
    for key in sorted(params):
        idx = [i for i, r in enumerate(held) if gm._class_key(r["timing"], _dtype(r), r["op"]) == key]
        e = np.abs(pred[idx] / np.array([held[i]["time_s"] for i in idx]) - 1) * 100
        out[key] = {
            "p50": round(float(np.median(e)), 2),
            "p90": round(float(np.percentile(e, 90)), 2),
            "n": len(idx),
            "basis": f"held-out families {', '.join(VALIDATION_FAMILIES + TEST_FAMILIES)}, {gpu}, 2026-12-03 sweep",
        }
    return out


def _sha256(path: Path) -> str:
    return hashlib.sha256(read_bytes(path, what="grouped-GEMM sweep")).hexdigest()


def calibration(data: str | os.PathLike[str], gpu: str = _GPU) -> dict[str, Any]:
    """Fit on :data:`FIT_FAMILIES` of ``data`` and score on the validation and test families: the JSON object
    shipped as ``perfmodel/calibrations/h200_grouped.json``."""
    recs = load_records(data)
    fit_recs = [r for r in recs if r["family"] in FIT_FAMILIES]
    params, _ = fit(fit_recs, gpu)
    scores = {}
    for split, fams in (
        ("fit", FIT_FAMILIES),
        ("validation", VALIDATION_FAMILIES),
        ("test", TEST_FAMILIES),
        ("held_out", VALIDATION_FAMILIES + TEST_FAMILIES),
    ):
        sub = [r for r in recs if r["family"] in fams]
        pred = predict_records(sub, params, gpu)
        roof = np.array(
            [
                gm.roofline_grouped_gemm_time_s(
                    gm.pad_group_sizes(np.asarray(r.get("rows_requested") or r["rows"]), _dtype(r)),
                    r["K"],
                    r["N"],
                    dtype=r["dtype"],
                    gpu=gpu,
                )
                for r in sub
            ]
        )
        scores[split] = score(sub, pred, roof)
    folder = Path(data)
    meta = load_json(folder / FILES["event"], what="grouped-GEMM sweep", error=CalibrationError).get("meta", {})
    return {
        "schema": gm.SCHEMA,
        "gpu": gpu,
        "date": str(meta.get("date", ""))[:10] or "2026-12-03",
        "data": {name: {"file": f"{folder.name}/{name}", "sha256": _sha256(folder / name)} for name in FILES.values()},
        "fitted_by": "python -m perfmodel.calibrate.grouped",
        "layouts": {f"{op}/{dt}": lay for (op, dt), lay in LAYOUTS.items()},
        "fit_families": list(FIT_FAMILIES),
        "validation_families": list(VALIDATION_FAMILIES),
        "test_families": list(TEST_FAMILIES),
        "params": params,
        "error_bars": _error_bars(recs, params, gpu),
        "scores": scores,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m perfmodel.calibrate.grouped --data DIR --out FILE [--force]``."""
    ap = argparse.ArgumentParser(prog="python -m perfmodel.calibrate.grouped", description=__doc__.split("\n")[0])
    ap.add_argument(
        "--data", required=True, help="folder with grouped_gemm_time.json.gz and grouped_gemm_kernels.json.gz"
    )
    ap.add_argument("--out", required=True, help="calibration JSON to write ('-': standard output)")
    ap.add_argument("--gpu", default=_GPU, help="the GPU the data was measured on (default H200)")
    ap.add_argument("--force", action="store_true", help="replace an existing --out")
    args = ap.parse_args(argv)
    try:
        cal = calibration(args.data, args.gpu)
        write_atomic(args.out, json.dumps(cal, indent=1, sort_keys=True) + "\n", force=args.force)
    except CalibrationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
