"""Peak memory of real training steps on one H200 (2026-12-03) against ``perfmodel.train.estimate``'s memory.

    python -m benchmarks.harness.validate_memory          # prints the markdown table of docs/train.md

The records (``benchmarks/data/h200_2026-12-03c/memory.json.gz``, ``perfmodel.bench.memory``) carry the estimate
made for the same configuration before the run; the peak is ``torch.cuda.max_memory_allocated`` over steps 1-3
(an OOM record: the peak when it ran out). Nothing is fitted on them.
"""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "h200_2026-12-03c" / "memory.json.gz"
GIB = 2**30


def rows(path: Path = DATA) -> list[dict]:
    """One row per configuration that ran (ok) or ran out of memory (oom)."""
    out = []
    for r in json.load(gzip.open(path))["records"]:
        if r["status"] not in ("ok", "oom"):
            continue
        snap = r.get("after_3_steps") if r["status"] == "ok" else r.get("at_oom")
        peak = (snap or {}).get("max_memory_allocated")
        est = r["estimate"]
        out.append(
            {
                "name": r["config"]["name"],
                "status": r["status"],
                "peak_gib": peak / GIB if peak else None,
                "est_gib": est["memory_bytes"] / GIB,
                "fits": bool(est["fits"]),
            }
        )
    return out


def table(path: Path = DATA) -> str:
    rs = rows(path)
    lines = [
        "| configuration | ran | peak GiB (measured) | estimate GiB | estimate / measured | est. fits |",
        "|---|---|---|---|---|---|",
    ]
    ratios = []
    for r in rs:
        ratio = r["est_gib"] / r["peak_gib"] if r["status"] == "ok" else None
        if ratio is not None:
            ratios.append(ratio)
        shown = f"{ratio:.2f}" if ratio is not None else "— (out of memory)"
        peak = f"{r['peak_gib']:.1f}" if r["peak_gib"] else "—"
        lines.append(f"| {r['name']} | {r['status']} | {peak} | {r['est_gib']:.1f} | {shown} | {r['fits']} |")
    ape = sorted(abs(x - 1) * 100 for x in ratios)
    lines.append("")
    lines.append(
        f"{len(ratios)} runs that fit: estimate/measured median {statistics.median(ratios):.2f}, range "
        f"{min(ratios):.2f}–{max(ratios):.2f}; absolute error median {statistics.median(ape):.1f} %, "
        f"max {max(ape):.1f} %."
    )
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
