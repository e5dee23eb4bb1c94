"""Peak memory of real training steps on one H200 (2026-12-03) against :mod:`perfmodel.train.memory`.

    python -m benchmarks.harness.validate_memory          # the markdown tables of docs/train.md
    python -m benchmarks.harness.validate_memory --fit    # refit the constants on the fit set and print them

Two sets, kept apart by when they were measured and by what the fit saw:

* **fit**: ``benchmarks/data/h200_2026-12-03c/memory.json.gz`` (16 configurations: 15 ran, 1 out of memory). The
  constants of :mod:`perfmodel.train.memory` are fitted on these (``--fit``); their figures are **in-sample**.
* **held out**: ``benchmarks/data/h200_2026-12-03d/memory.json.gz`` (10 other configurations: another vocabulary and
  shape (Qwen2.5-7B), seq 4096, batches near the limit, 70B with two layers, plain-GPU autocast and all-bf16 modes,
  more compiled steps), measured before the fit and read only to score it, once. Since 2026-12-04 its figures are
  **post-selection**: its one miss (70B, one layer, full AC, +2.8 GiB at the end of backward) is what made us drop the
  recomputed layer from the end-of-backward moment (:mod:`perfmodel.train.memory`).
* **round 3** (held out, pre-registered): ``benchmarks/data/h200_2026-12-04/memory.json.gz`` (nine eager AC runs
  chosen to test that change, among them the first ones predicted to peak at the first layer's recompute); the
  predictions were committed before the run (``memory_predictions_before_run.json`` beside it) and scored once.

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
GIB = 2**30
AC = {"none": "none", "sel": "selective", "selective": "selective", "full": "full"}


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
    return mem.peak_memory(sizes, tokens=c["tokens"], ac=AC[c["ac"]], compile=bool(c["compile"]), mode=c["mode"])


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


def table(path: Path, label: str) -> str:
    rs = rows(path)
    lines = [
        f"**{label}**",
        "",
        "| configuration | ran | peak GiB (measured) | estimate GiB | estimate / measured | peak at | est. fits |",
        "|---|---|---|---|---|---|---|",
    ]
    ape, within = [], 0
    for r in rs:
        ok = r["status"] == "ok"
        ratio = r["est_gib"] / r["peak_gib"] if ok else None
        if ok:
            err = abs(r["est_gib"] - r["peak_gib"])
            ape.append(err / r["peak_gib"] * 100)
            within += err <= max(0.05 * r["peak_gib"], 1.0)
        shown = f"{ratio:.2f}" if ratio is not None else "— (out of memory)"
        peak = f"{r['peak_gib']:.1f}" if r["peak_gib"] else "—"
        lines.append(
            f"| {r['name']} | {r['status']} | {peak} | {r['est_gib']:.1f} | {shown} | {r['moment']} | {r['fits']} |"
        )
    oom_fit = sum(1 for r in rs if r["status"] == "oom" and r["fits"])
    lines += [
        "",
        f"{len(ape)} runs that fit: absolute error median {statistics.median(ape):.1f} %, max {max(ape):.1f} %; "
        f"{within} of {len(ape)} within 5 % or 1 GiB; out-of-memory runs called 'fits': {oom_fit}.",
    ]
    return "\n".join(lines)


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
    """Both tables, as docs/train.md holds them between its memory markers."""
    return "\n\n".join(
        (
            table(FIT, "Fit set (in-sample): h200_2026-12-03c"),
            table(HELD_OUT, "Held out, post-selection since the 2026-12-04 change: h200_2026-12-03d"),
            table(ROUND3, "Held out, pre-registered (predictions committed before the run): h200_2026-12-04"),
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", action="store_true", help="refit the constants on the fit set and print them")
    args = ap.parse_args()
    if args.fit:
        for k, v in fit().items():
            print(f"{k} = {v:.3f}")
        return
    print(report())


if __name__ == "__main__":
    main()
