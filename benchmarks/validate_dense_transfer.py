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


def load_boards(folders: list[Path], kind: str) -> list[dict[str, Any]]:
    """:func:`load` of each folder (one board each), pooled; each record tagged with its folder's index as
    ``board`` (a copy: the loaded records are left as they are)."""
    return [{**r, "board": i} for i, f in enumerate(folders) for r in load(f, kind)]


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


def _linear_times(recs: list[dict[str, Any]]) -> dict[tuple[int, int, int, int], dict[str, list[float]]]:
    """The static Linear steps' kernel times by ``(board, M, K, N)`` and recipe (``board``: :func:`load_boards`'
    index, 0 for one folder)."""
    times: dict[tuple[int, int, int, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in recs:
        if r["op"] == "linear" and r.get("dynamic") == "static":
            times[r.get("board", 0), r["M"], r["K"], r["N"]][r["recipe"]].append(r["step_kernel_time_s"])
    return times


def score_linear(recs: list[dict[str, Any]], gpu: str) -> dict[str, dict[str, Any]]:
    """Per recipe, on the static-shape Linear sweep: the float8 speedup's APE statistics, the decisions right where
    the measured speedup is more than :data:`CLOSE_CALL` from 1, and the measured / predicted ranges; per recipe and
    bf16, the fwd+bwd time's APE statistics (the step's kernel time)."""
    times = _linear_times(recs)
    out: dict[str, dict[str, Any]] = {}
    for recipe in ("bf16", *RECIPES):
        shapes = sorted(s for s, v in times.items() if recipe in v)
        if not shapes:  # not measured: no row
            continue
        meas_t = np.array([np.median(times[s][recipe]) for s in shapes])
        pred_t = np.array([float(float8.linear_time(*s[1:], None if recipe == "bf16" else recipe, gpu).total_s)
                           for s in shapes])  # fmt: skip
        row: dict[str, Any] = {"time": ape_stats(pred_t, meas_t)}
        both = [s for s in shapes if "bf16" in times[s]]
        if recipe != "bf16" and both:
            meas = np.array([np.median(times[s]["bf16"]) / np.median(times[s][recipe]) for s in both])
            pred = np.array([float(float8.speedup(*s[1:], recipe, gpu)) for s in both])
            clear = np.abs(meas - 1) > CLOSE_CALL
            right = (pred >= 1) == (meas >= 1)
            flags = zip(both, pred, meas, right, clear, strict=True)
            wrong = [(list(s), round(float(p), 3), round(float(m), 3)) for s, p, m, ok, c in flags if c and not ok]
            # each wrong call: [board, M, K, N], predicted, measured
            row.update(speedup=ape_stats(pred, meas), n_clear=int(clear.sum()), right_clear=int((right & clear).sum()),
                       over=float(np.median(pred / meas)), meas_range=(float(meas.min()), float(meas.max())),
                       pred_range=(float(pred.min()), float(pred.max())), wrong=wrong)  # fmt: skip
        out[recipe] = row
    return out


def ratios(folders: list[Path], gpu: str) -> dict[str, np.ndarray]:
    """measured / predicted on ``folders`` (pooled) per bar quantity: ``gemm_time`` (the GEMMs held out by shape,
    every format, event time), ``linear_time`` (the static Linear steps' kernel time, bf16 and every recipe) and
    ``speedup`` (every recipe's float8 speedup)."""
    out: dict[str, list[float]] = defaultdict(list)
    for r in load_boards(folders, "gemm"):
        if (
            r["op"] == "gemm"
            and (r["dtype"], r.get("scaling")) in GEMM_GROUPS.values()
            and is_heldout(r["M"], r["K"], r["N"], fraction=HELDOUT)
        ):
            pred = float(pm.gemm_time_s(r["M"], r["K"], r["N"], r["dtype"], gpu, r.get("scaling"), timing="event"))
            out["gemm_time"].append(r["time_s"] / pred)
    for key, by in sorted(_linear_times(load_boards(folders, "linear_static")).items()):
        shape = key[1:]
        for recipe, ts in by.items():
            rec = None if recipe == "bf16" else recipe
            out["linear_time"].append(float(np.median(ts)) / float(float8.linear_time(*shape, rec, gpu).total_s))
            if rec is not None and "bf16" in by:
                meas = float(np.median(by["bf16"]) / np.median(ts))
                out["speedup"].append(meas / float(float8.speedup(*shape, rec, gpu)))
    return {k: np.array(v) for k, v in out.items()}


def bars(folders: list[Path], gpu: str) -> dict[str, dict[str, float]]:
    """The error bars of the check (``perfmodel.models.errorbars.TRANSFER_BARS``): p10, median and p90 of
    :func:`ratios` per quantity, and their count."""
    out = {}
    for q, x in ratios(folders, gpu).items():
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


KINDS = ("memory", "gemm", "linear_static", "launch")


def evaluate(folders: list[Path], gpu: str = "H100-SXM") -> dict[str, Any]:
    """Every score on each of ``folders`` (one board of this GPU each), on all of them pooled, and, as the reference,
    on the H200's calibration files."""
    folders = list(folders)
    rep: dict[str, Any] = {"gpu": gpu, "boards": [], "folders": [f.name for f in folders]}
    for f in folders:
        rep["boards"].append(_scores({k: load(f, k) for k in KINDS}, gpu))
    pooled = {k: load_boards(folders, k) for k in KINDS}
    rep["pooled"] = _scores(pooled, gpu)
    rep["h200"] = _scores({k: load(H200_DATA, k) for k in KINDS}, "H200")
    rep["casts_over_h200"] = score_casts(pooled["memory"], load(H200_DATA, "memory"))
    rep["gemm_over_h200"] = gemm_gpu_ratio(pooled["gemm"], load(H200_DATA, "gemm"))
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
