"""The dense check of the transferred model on a measured Hopper GPU that is not the H200 (the H100 SXM).

``benchmarks/gpu_dense_check.sh`` ran the H200 calibration's own sweeps (copies and casts, launch floors, the
969 x 3 GEMM sweep, the static float8 Linear sweep) on the lent card; this script scores the shipped model against
them, as it was committed before the run (pre-registered: nothing here is fitted, and the metrics are the ones the
sweep script's header named before it ran). Beside each H100 figure it gives the same score on the H200's own
calibration files (``benchmarks/data/h200_2026-11-30``), which the shipped calibration was fitted on: in-sample
there except the GEMMs held out by shape (a hash of (M, K, N), 30 %, as the calibration's fit split them).

    PYTHONPATH=. python benchmarks/validate_dense_transfer.py benchmarks/data/h100_2026-12-06dense{,-b2}
    PYTHONPATH=. python benchmarks/validate_dense_transfer.py benchmarks/data/h100_2026-12-06dense{,-b2} \
        --docs docs/validation.md        # rewrite the generated section (markers dense-transfer:begin/end)
"""

from __future__ import annotations

import argparse
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
from benchmarks.harness.validate_gemm import CLOSE_CALL, HELDOUT, RECIPES  # noqa: E402
from perfmodel import float8  # noqa: E402
from perfmodel.calibrate import ape_stats, is_heldout, read_data_json  # noqa: E402
from perfmodel.models.registry import calibrated_model  # noqa: E402

H200_DATA = ROOT / "benchmarks" / "data" / "h200_2026-11-30"
BLOCK = "dense-transfer"  # the generated section's markers in docs/validation.md
#: the GEMM formats scored, by the label the tables print (held out by shape as the calibration's fit split them:
#: ``validate_gemm.HELDOUT``; a decision is clear beyond ``validate_gemm.CLOSE_CALL`` from 1)
GEMM_GROUPS = {"bf16": ("bf16", None), "fp8 tensorwise": ("fp8_e4m3", "tensorwise"),
               "fp8 rowwise": ("fp8_e4m3", "rowwise")}  # fmt: skip
#: copies of at least this many bytes moved stream at the bandwidth (the smaller ones show the latency)
STREAM_BYTES = 1 << 28


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
            return read_data_json(p)["records"]
    raise FileNotFoundError(f"no {kind} sweep in {folder} (looked for {mine}[.gz] and {h200})")


KINDS = ("memory", "gemm", "linear_static", "launch")


def pooled(per_board: list[dict[str, list[dict[str, Any]]]]) -> dict[str, list[dict[str, Any]]]:
    """The boards' records (each a :data:`KINDS` -> records mapping, one folder's) pooled per kind, each record
    tagged with its board's index as ``board`` (a copy: the loaded records are left as they are)."""
    return {k: [{**r, "board": i} for i, b in enumerate(per_board) for r in b[k]] for k in KINDS}


def load_boards(folders: list[Path]) -> list[dict[str, list[dict[str, Any]]]]:
    """Every :data:`KINDS` sweep of each folder (one board each), each file read once."""
    return [{k: load(f, k) for k in KINDS} for f in folders]


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


def priced_gemms(recs: list[dict[str, Any]], gpu: str) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per format of :data:`GEMM_GROUPS`: the shipped model's event time (s), the measured time (s) and whether the
    shape is held out by shape, for each GEMM record."""
    out = {}
    for name, (dtype, scaling) in GEMM_GROUPS.items():
        rs = [r for r in recs if r["op"] == "gemm" and r["dtype"] == dtype and r.get("scaling") == scaling]
        M, K, N, t = (np.array([r[f] for r in rs]) for f in ("M", "K", "N", "time_s"))
        pred = np.asarray(pm.gemm_time_s(M, K, N, dtype, gpu, scaling, timing="event"), float)
        held = np.array([is_heldout(int(m), int(k), int(n), fraction=HELDOUT) for m, k, n in zip(M, K, N, strict=True)])
        out[name] = (pred, t, held)
    return out


def score_gemm(recs: list[dict[str, Any]], gpu: str) -> dict[str, dict[str, Any]]:
    """Per format: APE statistics of the shipped model's event time on the GEMMs held out by shape and on those the
    calibration was fitted on (in-sample by shape on any GPU)."""
    return {name: {"held_out": ape_stats(pred[held], t[held]), "in_fit": ape_stats(pred[~held], t[~held]),
                   "ratio": float(np.median(pred / t))}
            for name, (pred, t, held) in priced_gemms(recs, gpu).items()}  # fmt: skip


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


def _linear_times(recs: list[dict[str, Any]]) -> dict[tuple[int, int, int, int], dict[str, list[float]]]:
    """The static Linear steps' kernel times by ``(board, M, K, N)`` and recipe (``board``: :func:`pooled`'s index,
    0 for one folder)."""
    times: dict[tuple[int, int, int, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in recs:
        if r["op"] == "linear" and r.get("dynamic") == "static":
            times[r.get("board", 0), r["M"], r["K"], r["N"]][r["recipe"]].append(r["step_kernel_time_s"])
    return times


def priced_linears(recs: list[dict[str, Any]], gpu: str) -> dict[str, dict[str, Any]]:
    """Per recipe measured (bf16 and :data:`RECIPES`), on the static-shape Linear sweep: the ``(board, M, K, N)`` keys,
    the predicted and measured fwd+bwd kernel times (s, the median of a key's runs), and for a float8 recipe the keys
    bf16 was measured at too (``both``) with the predicted and measured speedups there."""
    times = _linear_times(recs)
    out: dict[str, dict[str, Any]] = {}
    for recipe in ("bf16", *RECIPES):
        keys = sorted(s for s, v in times.items() if recipe in v)
        if not keys:  # not measured: no row
            continue
        rec = None if recipe == "bf16" else recipe
        row: dict[str, Any] = {
            "keys": keys,
            "meas_t": np.array([np.median(times[s][recipe]) for s in keys]),
            "pred_t": np.array([float(float8.linear_time(*s[1:], rec, gpu).total_s) for s in keys]),
        }
        both = [s for s in keys if "bf16" in times[s]]
        if rec is not None and both:
            row["both"] = both
            row["meas"] = np.array([np.median(times[s]["bf16"]) / np.median(times[s][recipe]) for s in both])
            row["pred"] = np.array([float(float8.speedup(*s[1:], recipe, gpu)) for s in both])
        out[recipe] = row
    return out


def score_linear(recs: list[dict[str, Any]], gpu: str) -> dict[str, dict[str, Any]]:
    """Per recipe, on the static-shape Linear sweep: the float8 speedup's APE statistics, the decisions right where
    the measured speedup is more than ``CLOSE_CALL`` from 1, and the measured / predicted ranges; per recipe and
    bf16, the fwd+bwd time's APE statistics (the step's kernel time)."""
    out: dict[str, dict[str, Any]] = {}
    for recipe, pr in priced_linears(recs, gpu).items():
        row: dict[str, Any] = {"time": ape_stats(pr["pred_t"], pr["meas_t"])}
        if "both" in pr:
            pred, meas = pr["pred"], pr["meas"]
            clear = np.abs(meas - 1) > CLOSE_CALL
            right = (pred >= 1) == (meas >= 1)
            flags = zip(pr["both"], pred, meas, right, clear, strict=True)
            wrong = [(list(s), round(float(p), 3), round(float(m), 3)) for s, p, m, ok, c in flags if c and not ok]
            # each wrong call: [board, M, K, N], predicted, measured
            row.update(speedup=ape_stats(pred, meas), n_clear=int(clear.sum()), right_clear=int((right & clear).sum()),
                       over=float(np.median(pred / meas)), meas_range=(float(meas.min()), float(meas.max())),
                       pred_range=(float(pred.min()), float(pred.max())), wrong=wrong)  # fmt: skip
        out[recipe] = row
    return out


def ratios(recs: dict[str, list[dict[str, Any]]], gpu: str) -> dict[str, np.ndarray]:
    """measured / predicted on ``recs`` (:func:`pooled` boards) per bar quantity: ``gemm_time`` (the GEMMs held out
    by shape, every format, event time), ``linear_time`` (the static Linear steps' kernel time, bf16 and every
    recipe) and ``speedup`` (every recipe's float8 speedup)."""
    gemms = priced_gemms(recs["gemm"], gpu).values()
    linears = priced_linears(recs["linear_static"], gpu).values()
    return {
        "gemm_time": np.concatenate([t[held] / pred[held] for pred, t, held in gemms]),
        "linear_time": np.concatenate([pr["meas_t"] / pr["pred_t"] for pr in linears]),
        "speedup": np.concatenate([pr["meas"] / pr["pred"] for pr in linears if "both" in pr]),
    }


def bars(folders: list[Path], gpu: str) -> dict[str, dict[str, float]]:
    """The error bars of the check (``perfmodel.models.errorbars.TRANSFER_BARS``): p10, median and p90 of
    :func:`ratios` per quantity on the boards of ``folders`` pooled, and their count."""
    out = {}
    for q, x in ratios(pooled(load_boards(folders)), gpu).items():
        lo, med, hi = (float(v) for v in np.percentile(x, [10, 50, 90]))
        out[q] = {"low": lo, "median": med, "high": hi, "n": len(x)}
    return out


def score_launch(recs: list[dict[str, Any]], gpu: str) -> dict[str, float]:
    """The measured launch floors (s) by kernel and method, and the model's launch time on ``gpu``."""
    out = {f"{r['kernel']}/{r['method']}": float(r["time_s"]) for r in recs if r["op"] == "launch"}
    spec = pm.get_gpu(gpu)
    out["model launch_s"] = float(calibrated_model(spec).launch_time_s(gpu=spec))
    return out


def _scores(recs: dict[str, list[dict[str, Any]]], gpu: str) -> dict[str, Any]:
    return {
        "copy": score_copy(recs["memory"], gpu),
        "gemm": score_gemm(recs["gemm"], gpu),
        "linear": score_linear(recs["linear_static"], gpu),
        "launch": score_launch(recs["launch"], gpu),
    }


def evaluate(folders: list[Path], gpu: str = "H100-SXM") -> dict[str, Any]:
    """Every score on each of ``folders`` (one board of this GPU each), on all of them pooled, and, as the reference,
    on the H200's calibration files."""
    folders = list(folders)
    boards = load_boards(folders)
    pool, h200 = pooled(boards), {k: load(H200_DATA, k) for k in KINDS}
    rep: dict[str, Any] = {"gpu": gpu, "folders": [f.name for f in folders]}
    rep["boards"] = [_scores(b, gpu) for b in boards]
    rep["pooled"] = _scores(pool, gpu)
    rep["h200"] = _scores(h200, "H200")
    rep["casts_over_h200"] = score_casts(pool["memory"], h200["memory"])
    rep["gemm_over_h200"] = gemm_gpu_ratio(pool["gemm"], h200["gemm"])
    rep["hbm_ratio"] = pm.get_gpu("H200").mem_bw_bytes_per_s / pm.get_gpu(gpu).mem_bw_bytes_per_s
    return rep


def _st(s: dict[str, float]) -> str:
    return f"{s['mdape']:.1f} / {s['p90']:.1f} (n {s['n']})" if s.get("n") else "—"


def markdown(rep: dict[str, Any]) -> str:
    """The generated tables of docs/validation.md's dense-transfer section: a column per board, the boards pooled
    (where there are several), the H200 last."""
    gpu = rep["gpu"]
    cols = [(f"board {i + 1}", b) for i, b in enumerate(rep["boards"])]
    if len(cols) > 1:
        cols.append(("boards pooled", rep["pooled"]))
    ref = rep["h200"]

    def row(label: str, cell: Any, h200: str) -> str:
        return f"| {label} | " + " | ".join(cell(c) for _, c in cols) + f" | {h200} |"

    lines = [
        f"| {gpu} (transferred; pre-registered) | "
        + " | ".join(n for n, _ in cols)
        + " | H200 (its calibration's data) |",
        "|---|" + "---|" * (len(cols) + 1),
        row("streaming copy, measured TB/s", lambda c: f"{c['copy']['measured_bw'] / 1e12:.2f}",
            f"{ref['copy']['measured_bw'] / 1e12:.2f}"),
        row("streaming copy, priced TB/s", lambda c: f"{c['copy']['priced_bw'] / 1e12:.2f}",
            f"{ref['copy']['priced_bw'] / 1e12:.2f}"),
    ]  # fmt: skip
    for name in GEMM_GROUPS:
        h = ref["gemm"][name]
        lines.append(row(f"GEMM {name}, held out by shape: MdAPE / p90 %",
                         lambda c, n=name: _st(c["gemm"][n]["held_out"]), _st(h["held_out"])))  # fmt: skip
        lines.append(row(f"GEMM {name}, shapes in the H200 fit: MdAPE / p90 %",
                         lambda c, n=name: _st(c["gemm"][n]["in_fit"]), _st(h["in_fit"]) + " (in-sample)"))  # fmt: skip
        lines.append(row(f"GEMM {name}, predicted / measured (median)",
                         lambda c, n=name: f"{c['gemm'][n]['ratio']:.3f}", f"{h['ratio']:.3f}"))  # fmt: skip
    for r in RECIPES:
        b = ref["linear"][r]
        lines.append(row(f"float8 Linear speedup, {r}: MdAPE / p90 %", lambda c, r=r: _st(c["linear"][r]["speedup"]),
                         _st(b["speedup"]) + " (in-sample)"))  # fmt: skip
        lines.append(row(f"{r}: clear calls right", lambda c, r=r: f"{c['linear'][r]['right_clear']}/"
                         f"{c['linear'][r]['n_clear']}", f"{b['right_clear']}/{b['n_clear']}"))  # fmt: skip
        lines.append(row(f"{r}: predicted / measured speedup (median)", lambda c, r=r: f"{c['linear'][r]['over']:.3f}",
                         f"{b['over']:.3f}"))  # fmt: skip
        lines.append(row(f"{r}: measured speedups",
                         lambda c, r=r: "{:.2f}-{:.2f}".format(*c["linear"][r]["meas_range"]),
                         "{:.2f}-{:.2f}".format(*b["meas_range"])))  # fmt: skip
    for r in ("bf16", *RECIPES):
        lines.append(row(f"Linear fwd+bwd time, {r}: MdAPE / p90 %", lambda c, r=r: _st(c["linear"][r]["time"]),
                         _st(ref["linear"][r]["time"]) + " (in-sample)"))  # fmt: skip
    lines += ["", f"| measured on both ({len(rep['boards'])} board(s) pooled) | {gpu} / H200 |", "|---|---|"]
    for name, x in rep["gemm_over_h200"].items():
        lines.append(f"| GEMM time, {name} (median over the shapes) | {x:.3f} |")
    for variant, x in rep["casts_over_h200"].items():
        lines.append(f"| cast {variant} (>= 128 MiB moved) | {x:.3f} |")
    lines.append(f"| HBM bandwidth (datasheets) | {rep['hbm_ratio']:.3f} |")
    wrong = [(r, w) for r in RECIPES for w in rep["pooled"]["linear"][r]["wrong"]]
    if wrong:
        calls = [f"{r} M={s[1]} K={s[2]} N={s[3]} on board {s[0] + 1} (predicted {p:.2f}x, measured {m:.2f}x)"
                 for r, (s, p, m) in wrong]  # fmt: skip
        lines += ["", f"Wrong clear calls on the {gpu}: " + "; ".join(calls) + "."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", type=Path, nargs="+", help="dense-check folders, one board each (gpu_dense_check.sh)")
    ap.add_argument("--gpu", default="H100-SXM", help="the GPU it ran on (perfmodel's name; default H100-SXM)")
    ap.add_argument("--docs", type=Path, help="write the tables between the dense-transfer markers of this file")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    args = ap.parse_args(argv)
    rep = evaluate(args.folders, args.gpu)
    text = markdown(rep)
    print(json.dumps(rep, indent=1, default=str) if args.json else text)
    if args.docs:
        tables.write_blocks([tables.Block(doc=args.docs, name=BLOCK, body=text)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
