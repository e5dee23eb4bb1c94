"""Peak memory of real training steps on one H200 (2026-12-03/04) against :mod:`perfmodel.train.memory`.

    python -m benchmarks.harness.validate_memory            # the markdown tables of docs/train.md
    python -m benchmarks.harness.validate_memory --fit      # refit the constants on the fit set and print them
    python -m benchmarks.harness.validate_memory --predict ROUND5 --out FILE   # pre-register a round's predictions

Sets, kept apart by when they were measured and by what the model had seen:

* **fit**: ``benchmarks/data/h200_2026-12-03c/memory.json.gz`` (16 configurations: 15 ran, 1 out of memory). The
  constants of :mod:`perfmodel.train.memory` are fitted on these (``--fit``); their figures are **in-sample**.
* **held out, post-selection**: ``h200_2026-12-03d`` (10 other configurations, measured before the fit, read once to
  score it; its one miss made us change the end-of-backward moment on 2026-12-04), ``h200_2026-12-04`` (round 3: nine
  eager AC runs, pre-registered; its one miss, with the allocator traces of ``h200_2026-12-04m``, made us rebuild the
  first layer's recompute moment) and ``h200_2026-12-04r`` (round 4: eight runs, pre-registered; its one miss, with
  that call's 405B trace, added the embedding's-backward moment). Each round's table shows what the model of the
  day predicted before the run (``memory_predictions_before_run.json``) beside what today's model says.
* **round 5** (held out, pre-registered): ``h200_2026-12-04s``, seven runs chosen to test the embedding's-backward
  moment, predicted by today's model and committed before the run, and **round 6** (``h200_2026-12-04v``, seven
  compiled runs chosen to test the compiled-float8 term, pre-registered the same way): the figures the output quotes.

The measured peak is ``torch.cuda.max_memory_allocated`` over steps 1–3 (an OOM record: its peak at the failure).
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from perfmodel.presets import LayerShape
from perfmodel.train import memory as mem
from perfmodel.train.config import model_sizes

DATA = Path(__file__).resolve().parents[1] / "data"
FIT = DATA / "h200_2026-12-03c" / "memory.json.gz"
HELD_OUT = DATA / "h200_2026-12-03d" / "memory.json.gz"
ROUND3 = DATA / "h200_2026-12-04" / "memory.json.gz"
ROUND4 = DATA / "h200_2026-12-04r" / "memory.json.gz"
ROUND5 = DATA / "h200_2026-12-04s" / "memory.json.gz"
ROUND6 = DATA / "h200_2026-12-04v" / "memory.json.gz"
#: the file beside a round's records that holds its predictions, committed before the run
PREDICTIONS = "memory_predictions_before_run.json"
GIB = 2**30
AC = {"none": "none", "sel": "selective", "selective": "selective", "full": "full"}
#: the Linears of a decoder layer (perfmodel.bench.memory converts all of them for a float8 recipe, not the head)
DECODER_LINEARS = ("wq", "wk", "wv", "wo", "w1", "w3", "w2")


def sizes_of(r: dict) -> Any:
    """The model's sizes from the record's own shape (the bench's models include a 1B Llama 3.2 shape no preset has)."""
    s, c = r["shape"], r["config"]
    layer = LayerShape(
        name=c["model"], hidden=s["dim"], ffn=s["ffn"], heads=s["heads"], kv_heads=s["kv_heads"], head_dim=s["head_dim"]
    )
    return model_sizes(layer, layers=c["layers"], vocab=c["vocab"])


def records(path: Path) -> list[dict]:
    """The records that ran (ok) or ran out of memory (oom)."""
    return [r for r in json.load(gzip.open(path))["records"] if r["status"] in ("ok", "oom")]


def predict(r: dict) -> dict:
    """:func:`perfmodel.train.memory.peak_memory` for one record's configuration."""
    c = r["config"]
    sizes = sizes_of(r)
    f8 = DECODER_LINEARS if c.get("recipe", "bf16") != "bf16" else ()  # the bench converts every decoder Linear
    return mem.peak_memory(
        sizes, tokens=c["tokens"], ac=AC[c["ac"]], compile=bool(c["compile"]), mode=c["mode"], float8_linears=f8
    )


def measured_peak(r: dict) -> float | None:
    snap = r.get("after_3_steps") if r["status"] == "ok" else r.get("at_oom")
    return (snap or {}).get("max_memory_allocated")


def rows(path: Path) -> list[dict]:
    out = []
    for r in records(path):
        p = predict(r)
        out.append(
            {
                "name": r["config"]["name"],
                "status": r["status"],
                "peak_gib": (measured_peak(r) or 0) / GIB or None,
                "est_gib": p["peak"] / GIB,
                "moment": p["moment"],
                "fits": mem.fits(p["peak"], r["gpu"]["total_memory"]),
            }
        )
    return out


def predictions(path: Path) -> dict[str, dict] | None:
    """The predictions committed before the round at ``path`` ran (``{name: {"peak_gib", "moment"}}``), or None."""
    f = path.parent / PREDICTIONS
    return json.loads(f.read_text())["predictions"] if f.exists() else None


def within_target(est_gib: float, measured_gib: float) -> bool:
    """Issue 34's target: the estimate within 5 % or 1 GiB (whichever is larger) of the measured peak."""
    return abs(est_gib - measured_gib) <= max(0.05 * measured_gib, 1.0)


def _scores(pairs: list[tuple[float, float]]) -> tuple[float, float, int]:
    """(median %, max %, count :func:`within_target`) of (estimate, measured) pairs in GiB."""
    ape = [abs(e - m) / m * 100 for e, m in pairs]
    return statistics.median(ape), max(ape), sum(within_target(e, m) for e, m in pairs)


def table(path: Path, label: str) -> str:
    """One round's markdown table: measured peak, today's estimate, and (where the round was pre-registered) what
    was predicted before the run, with each column's median and max error."""
    rs = rows(path)
    pred = predictions(path)
    extra = " | predicted before the run GiB" if pred else ""
    lines = [
        f"**{label}**",
        "",
        "| configuration | ran | peak GiB (measured) | estimate GiB | estimate / measured | peak at | est. fits"
        f"{extra} |",
        "|---|---|---|---|---|---|---|" + ("---|" if pred else ""),
    ]
    now, before = [], []
    for r in rs:
        ok = r["status"] == "ok"
        ratio = r["est_gib"] / r["peak_gib"] if ok else None
        if ok:
            now.append((r["est_gib"], r["peak_gib"]))
            if pred:
                before.append((pred[r["name"]]["peak_gib"], r["peak_gib"]))
        shown = f"{ratio:.2f}" if ratio is not None else "— (out of memory)"
        peak = f"{r['peak_gib']:.1f}" if r["peak_gib"] else "—"
        cell = f" | {pred[r['name']]['peak_gib']:.1f}" if pred else ""
        est = f"{r['est_gib']:.1f}"
        lines.append(f"| {r['name']} | {r['status']} | {peak} | {est} | {shown} | {r['moment']} | {r['fits']}{cell} |")
    oom_fit = sum(1 for r in rs if r["status"] == "oom" and r["fits"])
    med, worst, within = _scores(now)
    lines += [
        "",
        f"{len(now)} runs that fit: absolute error median {med:.1f} %, max {worst:.1f} %; "
        f"{within} of {len(now)} within 5 % or 1 GiB; out-of-memory runs called 'fits': {oom_fit}.",
    ]
    if pred:
        med, worst, within = _scores(before)
        lines[-1] += (
            f" As predicted before the run: median {med:.1f} %, max {worst:.1f} %; {within} of {len(before)} within."
        )
    return "\n".join(lines)


def predict_config(name: str) -> dict[str, Any]:
    """Today's prediction for a plan configuration (``perfmodel.bench.memory.config``), without a record: the peak
    in GiB and its moment, as ``--predict`` writes them before a round runs (the config and shape the bench would
    write into the record, :meth:`~perfmodel.bench.memory.config.MemConfig.shape`)."""
    from perfmodel.bench.memory.config import get_config

    c = get_config(name)
    p = predict({"config": c.to_dict(), "shape": c.shape()})
    return {"peak_gib": p["peak"] / GIB, "moment": p["moment"]}


def fit(path: Path = FIT) -> dict[str, float]:
    """Least squares for :data:`~perfmodel.train.memory.ACT_FACTOR` and :data:`~perfmodel.train.memory.LOGIT_BYTES`
    on the eager FSDP2 ``ac=none`` runs, then ``selective``'s factor, then the end-of-backward transient on the compiled
    runs (whose peak is the end of backward): each step holds the earlier constants fixed."""
    rs = [r for r in records(path) if r["status"] == "ok"]

    def base(r: dict) -> tuple[Any, float]:
        return sizes_of(r), float(measured_peak(r))

    rows_a, y_a = [], []
    for r in rs:
        c = r["config"]
        if c["mode"] != "fsdp" or c["compile"] or AC[c["ac"]] != "none":
            continue
        sizes, peak = base(r)
        T = c["tokens"]
        acts = 2 * T * mem.activation_elements(sizes.layer, "none") * sizes.layers
        fixed = 12 * sizes.total_params + 2 * (sizes.output_params + sizes.layer_params)
        rows_a.append([acts, T * sizes.vocab])
        y_a.append(peak - fixed)
    (k_none, logit), *_ = np.linalg.lstsq(np.array(rows_a), np.array(y_a), rcond=None)
    ks = []
    for r in rs:
        c = r["config"]
        if c["mode"] != "fsdp" or c["compile"] or AC[c["ac"]] != "selective":
            continue
        sizes, peak = base(r)
        T = c["tokens"]
        acts = 2 * T * mem.activation_elements(sizes.layer, "selective") * sizes.layers
        fixed = 12 * sizes.total_params + 2 * (sizes.output_params + sizes.layer_params) + logit * T * sizes.vocab
        ks.append((peak - fixed) / acts)
    tb = []
    for r in rs:
        c = r["config"]
        if c["mode"] != "fsdp" or not c["compile"]:
            continue
        sizes, peak = base(r)
        recompute = 0  # ac none / selective compiled runs: selective recomputes, but within the compiled graph
        tb.append((peak - 16 * sizes.total_params - recompute) / sizes.embedding_params)
    return {
        "ACT_FACTOR['none']": float(k_none),
        "LOGIT_BYTES": float(logit),
        "ACT_FACTOR['selective']": float(np.mean(ks)),
        "TRANSIENT_BYTES_PER_EMBEDDING_PARAM": float(np.mean(tb)),
    }


def report() -> str:
    """Every round's table, as docs/train.md holds them between its memory markers (a round not run yet: left out)."""
    sets = (
        (FIT, "Fit set (in-sample): h200_2026-12-03c"),
        (HELD_OUT, "Held out, post-selection since the 2026-12-04 change: h200_2026-12-03d"),
        (ROUND3, "Round 3, pre-registered, post-selection since the recompute-moment change: h200_2026-12-04"),
        (ROUND4, "Round 4, pre-registered, post-selection since the embedding-moment change: h200_2026-12-04r"),
        (ROUND5, "Round 5, held out, pre-registered (predictions committed before the run): h200_2026-12-04s"),
        (ROUND6, "Round 6, compiled, held out, pre-registered (predictions committed before it ran): h200_2026-12-04v"),
    )
    return "\n\n".join(table(path, label) for path, label in sets if path.exists())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", action="store_true", help="refit the constants on the fit set and print them")
    ap.add_argument("--predict", metavar="ROUND", help="a round of perfmodel.bench.memory.config (e.g. ROUND5)")
    ap.add_argument("--out", type=Path, help="with --predict: the JSON file to write")
    ap.add_argument("--made", default="", help="with --predict: when and by which commit, for the file's 'made'")
    args = ap.parse_args()
    if args.fit:
        for k, v in fit().items():
            print(f"{k} = {v:.3f}")
        return
    if args.predict:
        from perfmodel.bench.memory import config

        rounds = [n for n in config.__all__ if n.startswith("ROUND")]
        if args.predict not in rounds:
            ap.error(f"--predict {args.predict!r}: valid rounds are {', '.join(rounds)}")
        names = getattr(config, args.predict)
        out = {"made": args.made, "predictions": {n: predict_config(n) for n in names}}
        text = json.dumps(out, indent=1)
        if args.out:
            args.out.write_text(text + "\n")
        print(text)
        return
    print(report())


if __name__ == "__main__":
    main()
