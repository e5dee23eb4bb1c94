"""Score perfmodel.moe.expert_block_time and speedup against measured MoE blocks (perfmodel.bench.moe_block records).

    python benchmarks/validate_moe_block.py DIR      # DIR holds moe_block_results.tar.gz or moe_block_time.json

The split is fixed here, before any block measurement was looked at (2026-12-03):

* fit families (the grouped-GEMM fit's): deepseek_v3, deepseek_v3_ep8, qwen3_30b_a3b, llama4_maverick;
* held-out families: deepseek_v3_16b, llama4_scout, mixtral_8x7b, gpt_oss_120b.

Two variants are scored: ``as-is`` (no block-level parameter: the kernel sum plus one event overhead) and
``host-floor`` (one free parameter ``h``, seconds of host time per launched kernel of the eager block: time =
max(kernel sum, kernels x h) + event overhead; ``h`` is chosen on the fit families only, by a grid minimising the
median APE of fwd+bwd time over both recipes). Printed: MdAPE / p90 of fwd and fwd+bwd time per recipe and split, the
speedup MdAPE, and the enable/skip call on configs whose measured speedup is more than 5 % from 1.
"""

from __future__ import annotations

import io
import json
import sys
import tarfile
from pathlib import Path
from typing import Any

import numpy as np

import perfmodel as pm
from perfmodel.models.base import EVENT_OVERHEAD_S

FIT = {"deepseek_v3", "deepseek_v3_ep8", "qwen3_30b_a3b", "llama4_maverick"}
HELD = {"deepseek_v3_16b", "llama4_scout", "mixtral_8x7b", "gpt_oss_120b"}
RECIPE = {"bf16": "bf16", "fp8_rowwise": "rowwise"}


def load(folder: Path) -> list[dict[str, Any]]:
    """Every record with status ok from the JSON files in ``folder`` (or inside its tarball)."""
    out: list[dict[str, Any]] = []
    for p in sorted(folder.glob("*.json")):
        out += json.loads(p.read_text()).get("records", [])
    for t in sorted(folder.glob("*.tar.gz")):
        with tarfile.open(t) as tf:
            for m in tf.getmembers():
                if m.isfile() and m.name.endswith(".json"):
                    data = json.load(io.TextIOWrapper(tf.extractfile(m)))
                    recs = data.get("records", data if isinstance(data, list) else [])
                    out += [r for r in recs if isinstance(r, dict)]
    return [r for r in out if r.get("status") == "ok" and r.get("fwd_bwd_s") and r.get("recipe") in RECIPE]


def predict(r: dict[str, Any]) -> Any:
    cfg = {
        "name": r["model"], "dim": r["dim"], "inter": r["inter"], "experts": r["experts"], "top_k": r["top_k"],
        "shared_inter": r.get("shared_inter", 0), "score_func": r.get("score_func", "softmax"),
        "router_experts": r.get("router_experts"),
    }  # fmt: skip
    return pm.moe.expert_block_time(
        cfg, tokens=r["tokens"], recipe=RECIPE[r["recipe"]], counts=r["counts"], timing="kernel"
    )


def timed(b: Any, h: float, phase: str) -> float:
    ks = [k for k in b.kernels if phase == "fwd_bwd" or k.phase == "fwd"]
    return max(sum(k.seconds for k in ks), len(ks) * h) + EVENT_OVERHEAD_S


def ape(p: float, m: float) -> float:
    return abs(p / m - 1) * 100


def score(recs: list[dict[str, Any]], h: float, label: str) -> None:
    pred = {id(r): predict(r) for r in recs}
    print(f"\n== {label} (h = {h * 1e6:.2f} us per kernel)")
    print("| split | recipe | phase | n | MdAPE % | p90 % |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    for split, fams in (("fit", FIT), ("held-out", HELD)):
        for rec in RECIPE:
            for phase, key in (("fwd", "fwd_s"), ("fwd_bwd", "fwd_bwd_s")):
                e = [
                    ape(timed(pred[id(r)], h, phase), r[key]) for r in recs if r["model"] in fams and r["recipe"] == rec
                ]
                if e:
                    print(f"| {split} | {rec} | {phase} | {len(e)} | {np.median(e):.1f} | {np.percentile(e, 90):.1f} |")
    by: dict[str, dict[str, Any]] = {}
    for r in recs:
        by.setdefault(r["id"], {})[r["recipe"]] = r
    print("\n| split | model | tokens | routing | measured speedup | predicted | call right |")
    print("| --- | --- | ---: | --- | ---: | ---: | --- |")
    errs: dict[str, list[float]] = {"fit": [], "held-out": []}
    calls: dict[str, list[bool]] = {"fit": [], "held-out": []}
    for pair in by.values():
        if set(pair) != set(RECIPE):
            continue
        b, f = pair["bf16"], pair["fp8_rowwise"]
        split = "fit" if b["model"] in FIT else "held-out"
        ms = b["fwd_bwd_s"] / f["fwd_bwd_s"]
        ps = timed(pred[id(b)], h, "fwd_bwd") / timed(pred[id(f)], h, "fwd_bwd")
        errs[split].append(ape(ps, ms))
        right = (ps >= 1) == (ms >= 1)
        if abs(ms - 1) > 0.05:
            calls[split].append(right)
        print(f"| {split} | {b['model']} | {b['tokens']} | {b['routing']} | {ms:.3f} | {ps:.3f} | {right} |")
    for split in errs:
        if errs[split]:
            c = calls[split]
            print(f"{split}: speedup MdAPE {np.median(errs[split]):.1f} % (n={len(errs[split])}); clear calls right "
                  f"{sum(c)}/{len(c)}")  # fmt: skip


def main(argv: list[str]) -> int:
    recs = load(Path(argv[1]))
    if not recs:
        print("no ok records")
        return 1
    score(recs, 0.0, "as-is")
    fit = [r for r in recs if r["model"] in FIT]
    if fit:
        grid = np.concatenate(([0.0], np.geomspace(1e-6, 40e-6, 60)))
        pred = {id(r): predict(r) for r in fit}
        med = [np.median([ape(timed(pred[id(r)], h, "fwd_bwd"), r["fwd_bwd_s"]) for r in fit]) for h in grid]
        score(recs, float(grid[int(np.argmin(med))]), "host-floor, h fitted on the fit families")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
