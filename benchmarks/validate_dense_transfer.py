"""The dense check of the transferred model on a measured Hopper GPU that is not the H200 (the H100 SXM).

``benchmarks/gpu_dense_check.sh`` ran the H200 calibration's own sweeps (copies and casts, launch floors, the
969 x 3 GEMM sweep, the static float8 Linear sweep) on the lent card; this script scores the shipped model against
them, as it was committed before the run (pre-registered: nothing here is fitted, and the metrics are the ones the
sweep script's header named before it ran). Beside each H100 figure it gives the same score on the H200's own
calibration files (``benchmarks/data/h200_2026-11-30``), which the shipped calibration was fitted on: in-sample
there except the GEMMs held out by shape (a hash of (M, K, N), 30 %, as the calibration's fit split them).

    PYTHONPATH=. python benchmarks/validate_dense_transfer.py benchmarks/data/h100_2026-12-06dense
    PYTHONPATH=. python benchmarks/validate_dense_transfer.py benchmarks/data/h100_2026-12-06dense \
        --docs docs/validation.md        # rewrite the generated section (markers dense-transfer:begin/end)
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import perfmodel as pm  # noqa: E402
from benchmarks.harness import tables  # noqa: E402
from perfmodel import float8  # noqa: E402
from perfmodel.calibrate import ape_stats, is_heldout  # noqa: E402
from perfmodel.models.registry import calibrated_model  # noqa: E402

H200_DATA = ROOT / "benchmarks" / "data" / "h200_2026-11-30"
BLOCK = "dense-transfer"  # the generated section's markers in docs/validation.md
#: the calibration's held-out fraction of GEMM shapes (benchmarks/harness/validate_gemm.py HELDOUT)
HELDOUT = 0.3
GEMM_GROUPS = {"bf16": ("bf16", None), "fp8 tensorwise": ("fp8_e4m3", "tensorwise"),
               "fp8 rowwise": ("fp8_e4m3", "rowwise")}  # fmt: skip
RECIPES = ("tensorwise", "rowwise", "rowwise_with_gw_hp")
#: a decision is "clear" where the measured speedup is more than this far from 1 (the project's close-call band)
CLOSE_CALL = 0.05
#: copies of at least this many bytes moved stream at the bandwidth (the smaller ones show the latency)
STREAM_BYTES = 1 << 28


def _records(path: Path) -> list[dict[str, Any]]:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)["records"]


def load(folder: Path, kind: str) -> list[dict[str, Any]]:
    """The records of one sweep (``kind``: gemm, memory, launch, linear_static) of a dense-check folder
    (``data/<kind>.json``, gzipped or not) or of the H200's calibration folder (``h200_<kind>_2026-11-30.json.gz``)."""
    names = {"linear_static": ("linear_static_sweep.json", "h200_linear_static_2026-11-30.json.gz")}
    mine, h200 = names.get(kind, (f"{kind}.json", f"h200_{kind}_2026-11-30.json.gz"))
    for p in (
        folder / "data" / mine,
        folder / mine,
        folder / (mine + ".gz"),
        folder / "data" / (mine + ".gz"),
        folder / h200,
    ):
        if p.exists():
            return _records(p)
    raise FileNotFoundError(f"no {kind} sweep in {folder} (looked for {mine}[.gz] and {h200})")


def score_copy(recs: list[dict[str, Any]], gpu: str) -> dict[str, Any]:
    """Streaming device-to-device copies: measured and priced bandwidth (bytes read + written per second)."""
    spec = pm.get_gpu(gpu)
    model = calibrated_model(spec)
    rows = [r for r in recs if r["op"] == "copy" and r["bytes"] >= STREAM_BYTES]
    meas = np.array([r["bytes"] / r["time_s"] for r in rows])
    pred = np.array([r["bytes"] / model.memory_kernel_time_s(r["bytes"], gpu=spec) for r in rows])
    return {"n": len(rows), "measured_bw": float(np.median(meas)), "priced_bw": float(np.median(pred)),
            "priced_over_measured_time": float(np.median(meas / pred))}  # fmt: skip


def score_casts(mine: list[dict[str, Any]], h200: list[dict[str, Any]]) -> dict[str, float]:
    """Each cast variant's time on this GPU over the H200's, median over the sizes both timed."""
    ref = {(r["variant"], r["bytes"]): r["time_s"] for r in h200 if r["op"] == "cast"}
    by: dict[str, list[float]] = defaultdict(list)
    for r in mine:
        if r["op"] == "cast" and (r["variant"], r["bytes"]) in ref and r["bytes"] >= STREAM_BYTES // 2:
            by[r["variant"]].append(r["time_s"] / ref[r["variant"], r["bytes"]])
    return {v: float(np.median(x)) for v, x in sorted(by.items())}


def score_gemm(recs: list[dict[str, Any]], gpu: str) -> dict[str, dict[str, Any]]:
    """Per format: APE statistics of the shipped model's event time on the GEMMs held out by shape and on those the
    calibration was fitted on (in-sample by shape on any GPU)."""
    out: dict[str, dict[str, Any]] = {}
    for name, (dtype, scaling) in GEMM_GROUPS.items():
        rs = [r for r in recs if r["op"] == "gemm" and r["dtype"] == dtype and r.get("scaling") == scaling]
        M, K, N, t = (np.array([r[f] for r in rs]) for f in ("M", "K", "N", "time_s"))
        pred = np.asarray(pm.gemm_time_s(M, K, N, dtype, gpu, scaling, timing="event"), float)
        held = np.array([is_heldout(int(m), int(k), int(n), fraction=HELDOUT) for m, k, n in zip(M, K, N, strict=True)])
        out[name] = {"held_out": ape_stats(pred[held], t[held]), "in_fit": ape_stats(pred[~held], t[~held]),
                     "ratio": float(np.median(pred / t))}  # fmt: skip
    return out


def gemm_gpu_ratio(mine: list[dict[str, Any]], h200: list[dict[str, Any]]) -> dict[str, float]:
    """Per format: this GPU's GEMM time over the H200's, median over the shapes both timed."""
    ref = {(r["M"], r["K"], r["N"], r["dtype"], r.get("scaling")): r["time_s"] for r in h200 if r["op"] == "gemm"}
    out = {}
    for name, (dtype, scaling) in GEMM_GROUPS.items():
        x = [r["time_s"] / ref[k] for r in mine if r["op"] == "gemm"
             and (k := (r["M"], r["K"], r["N"], r["dtype"], r.get("scaling"))) in ref and k[3] == dtype
             and k[4] == scaling]  # fmt: skip
        out[name] = float(np.median(x)) if x else float("nan")
    return out


def score_linear(recs: list[dict[str, Any]], gpu: str) -> dict[str, dict[str, Any]]:
    """Per recipe, on the static-shape Linear sweep: the float8 speedup's APE statistics, the decisions right where
    the measured speedup is more than :data:`CLOSE_CALL` from 1, and the measured / predicted ranges; per recipe and
    bf16, the fwd+bwd time's APE statistics (the step's kernel time)."""
    times: dict[tuple[int, int, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in recs:
        if r["op"] == "linear" and r.get("dynamic") == "static":
            times[r["M"], r["K"], r["N"]][r["recipe"]].append(r["step_kernel_time_s"])
    out: dict[str, dict[str, Any]] = {}
    for recipe in ("bf16", *RECIPES):
        shapes = sorted(s for s, v in times.items() if recipe in v)
        if not shapes:  # not measured: no row
            continue
        meas_t = np.array([np.median(times[s][recipe]) for s in shapes])
        pred_t = np.array([float(float8.linear_time(*s, None if recipe == "bf16" else recipe, gpu).total_s)
                           for s in shapes])  # fmt: skip
        row: dict[str, Any] = {"time": ape_stats(pred_t, meas_t)}
        both = [s for s in shapes if "bf16" in times[s]]
        if recipe != "bf16" and both:
            meas = np.array([np.median(times[s]["bf16"]) / np.median(times[s][recipe]) for s in both])
            pred = np.array([float(float8.speedup(*s, recipe, gpu)) for s in both])
            clear = np.abs(meas - 1) > CLOSE_CALL
            right = (pred >= 1) == (meas >= 1)
            flags = zip(both, pred, meas, right, clear, strict=True)
            wrong = [(list(s), round(float(p), 3), round(float(m), 3)) for s, p, m, ok, c in flags if c and not ok]
            row.update(speedup=ape_stats(pred, meas), n_clear=int(clear.sum()), right_clear=int((right & clear).sum()),
                       over=float(np.median(pred / meas)), meas_range=(float(meas.min()), float(meas.max())),
                       pred_range=(float(pred.min()), float(pred.max())), wrong=wrong)  # fmt: skip
        out[recipe] = row
    return out


def ratios(folder: Path, gpu: str) -> dict[str, np.ndarray]:
    """measured / predicted on ``folder`` per bar quantity: ``gemm_time`` (the GEMMs held out by shape, every format,
    event time), ``linear_time`` (the static Linear steps' kernel time, bf16 and every recipe) and ``speedup`` (every
    recipe's float8 speedup)."""
    out: dict[str, list[float]] = defaultdict(list)
    for r in load(folder, "gemm"):
        if (
            r["op"] == "gemm"
            and (r["dtype"], r.get("scaling")) in GEMM_GROUPS.values()
            and is_heldout(r["M"], r["K"], r["N"], fraction=HELDOUT)
        ):
            pred = float(pm.gemm_time_s(r["M"], r["K"], r["N"], r["dtype"], gpu, r.get("scaling"), timing="event"))
            out["gemm_time"].append(r["time_s"] / pred)
    times: dict[tuple[int, int, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in load(folder, "linear_static"):
        if r["op"] == "linear" and r.get("dynamic") == "static":
            times[r["M"], r["K"], r["N"]][r["recipe"]].append(r["step_kernel_time_s"])
    for s, by in sorted(times.items()):
        for recipe, ts in by.items():
            rec = None if recipe == "bf16" else recipe
            out["linear_time"].append(float(np.median(ts)) / float(float8.linear_time(*s, rec, gpu).total_s))
            if rec is not None and "bf16" in by:
                meas = float(np.median(by["bf16"]) / np.median(ts))
                out["speedup"].append(meas / float(float8.speedup(*s, rec, gpu)))
    return {k: np.array(v) for k, v in out.items()}


def bars(folder: Path, gpu: str) -> dict[str, dict[str, float]]:
    """The error bars of the check (``perfmodel.models.errorbars.TRANSFER_BARS``): p10, median and p90 of
    :func:`ratios` per quantity, and their count."""
    out = {}
    for q, x in ratios(folder, gpu).items():
        lo, med, hi = (float(v) for v in np.percentile(x, [10, 50, 90]))
        out[q] = {"low": lo, "median": med, "high": hi, "n": len(x)}
    return out


def score_launch(recs: list[dict[str, Any]], gpu: str) -> dict[str, float]:
    """The measured launch floors (s) by kernel and method, and the model's launch time on ``gpu``."""
    out = {f"{r['kernel']}/{r['method']}": float(r["time_s"]) for r in recs if r["op"] == "launch"}
    spec = pm.get_gpu(gpu)
    out["model launch_s"] = float(calibrated_model(spec).launch_time_s(gpu=spec))
    return out


def evaluate(folder: Path, gpu: str = "H100-SXM") -> dict[str, Any]:
    """Every score on ``folder`` (this GPU) and, as the reference, on the H200's calibration files."""
    rep: dict[str, Any] = {}
    for where, f, g in (("mine", folder, gpu), ("h200", H200_DATA, "H200")):
        rep[where] = {
            "copy": score_copy(load(f, "memory"), g),
            "gemm": score_gemm(load(f, "gemm"), g),
            "linear": score_linear(load(f, "linear_static"), g),
            "launch": score_launch(load(f, "launch"), g),
        }
    rep["casts_over_h200"] = score_casts(load(folder, "memory"), load(H200_DATA, "memory"))
    rep["gemm_over_h200"] = gemm_gpu_ratio(load(folder, "gemm"), load(H200_DATA, "gemm"))
    rep["hbm_ratio"] = pm.get_gpu("H200").mem_bw_bytes_per_s / pm.get_gpu(gpu).mem_bw_bytes_per_s
    rep["gpu"] = gpu
    return rep


def _st(s: dict[str, float]) -> str:
    return f"{s['mdape']:.1f} / {s['p90']:.1f} (n {s['n']})" if s.get("n") else "—"


def markdown(rep: dict[str, Any]) -> str:
    """The generated tables of docs/validation.md's dense-transfer section."""
    me, ref, gpu = rep["mine"], rep["h200"], rep["gpu"]
    lines = [
        f"| quantity | {gpu} (transferred; pre-registered) | H200 (its calibration's own data) |",
        "|---|---|---|",
        f"| streaming copy, measured TB/s | {me['copy']['measured_bw'] / 1e12:.2f} | "
        f"{ref['copy']['measured_bw'] / 1e12:.2f} |",
        f"| streaming copy, priced TB/s | {me['copy']['priced_bw'] / 1e12:.2f} | "
        f"{ref['copy']['priced_bw'] / 1e12:.2f} |",
    ]
    for name in GEMM_GROUPS:
        g, h = me["gemm"][name], ref["gemm"][name]
        lines.append(f"| GEMM {name}, held out by shape: MdAPE / p90 % | {_st(g['held_out'])} | {_st(h['held_out'])} |")
        lines.append(f"| GEMM {name}, shapes in the H200 fit: MdAPE / p90 % | {_st(g['in_fit'])} | "
                     f"{_st(h['in_fit'])} (in-sample) |")  # fmt: skip
        lines.append(f"| GEMM {name}, predicted / measured (median) | {g['ratio']:.3f} | {h['ratio']:.3f} |")
    for recipe in RECIPES:
        a, b = me["linear"][recipe], ref["linear"][recipe]
        lines.append(f"| float8 Linear speedup, {recipe}: MdAPE / p90 % | {_st(a['speedup'])} | "
                     f"{_st(b['speedup'])} (in-sample) |")  # fmt: skip
        lines.append(f"| {recipe}: clear calls right | {a['right_clear']}/{a['n_clear']} | "
                     f"{b['right_clear']}/{b['n_clear']} |")  # fmt: skip
        lines.append(f"| {recipe}: predicted / measured speedup (median) | {a['over']:.3f} | {b['over']:.3f} |")
        lines.append(f"| {recipe}: measured speedups | {a['meas_range'][0]:.2f}-{a['meas_range'][1]:.2f} | "
                     f"{b['meas_range'][0]:.2f}-{b['meas_range'][1]:.2f} |")  # fmt: skip
    for recipe in ("bf16", *RECIPES):
        lines.append(f"| Linear fwd+bwd time, {recipe}: MdAPE / p90 % | {_st(me['linear'][recipe]['time'])} | "
                     f"{_st(ref['linear'][recipe]['time'])} (in-sample) |")  # fmt: skip
    lines += ["", f"| measured on both | {gpu} / H200 |", "|---|---|"]
    for name, x in rep["gemm_over_h200"].items():
        lines.append(f"| GEMM time, {name} (median over the shapes) | {x:.3f} |")
    for variant, x in rep["casts_over_h200"].items():
        lines.append(f"| cast {variant} (>= 128 MiB moved) | {x:.3f} |")
    lines.append(f"| HBM bandwidth (datasheets) | {rep['hbm_ratio']:.3f} |")
    wrong = [(r, w) for r in RECIPES for w in me["linear"][r]["wrong"]]
    if wrong:
        calls = [f"{r} M={s[0]} K={s[1]} N={s[2]} (predicted {p:.2f}x, measured {m:.2f}x)" for r, (s, p, m) in wrong]
        lines += ["", f"Wrong clear calls on the {gpu}: " + "; ".join(calls)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="a dense-check folder (benchmarks/gpu_dense_check.sh's data)")
    ap.add_argument("--gpu", default="H100-SXM", help="the GPU it ran on (perfmodel's name; default H100-SXM)")
    ap.add_argument("--docs", type=Path, help="write the tables between the dense-transfer markers of this file")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    args = ap.parse_args(argv)
    rep = evaluate(args.folder, args.gpu)
    text = markdown(rep)
    print(json.dumps(rep, indent=1, default=str) if args.json else text)
    if args.docs:
        tables.write_blocks([tables.Block(doc=args.docs, name=BLOCK, body=text)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
