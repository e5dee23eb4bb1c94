"""Score ``perfmodel.train.estimate`` against torchtitan's own logged metrics (issue 34 item 6).

Reads the ``summary.json`` written by ``benchmarks/gpu_torchtitan.sh`` and prints, per run, the
steady-state median (steps after ``--warmup``) of torchtitan's logged tokens/s, MFU and memory
beside the estimate for the same configuration.

Units: tokens/s per GPU; MFU in percent; memory in GiB (2**30 bytes). torchtitan's ``memory`` is
``torch.cuda.max_memory_reserved`` (reserved, not allocated; source: torchtitan 0.2.2
``components/metrics.py``), and its MFU divides its own FLOP count (6N + attention per token) by one
bf16 dense peak, so it is compared with ``est.mfu_bf16``, the bf16-peak MFU, labelled as such.
Provenance: torchtitan columns are measured; perfmodel columns are estimated.

Usage: ``python benchmarks/harness/score_torchtitan.py SUMMARY.json [--warmup 5] [--gpu H200]``;
``--self-check`` scores a small synthetic summary (no GPU needed).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

__all__ = ["main", "score_summary", "steady_median"]


def steady_median(rows: list[dict[str, Any]], key: str, warmup: int) -> float | None:
    """Median of ``key`` over steps numbered above ``warmup`` (None when nothing was logged)."""
    vals = [r[key] for r in rows if r.get(key) is not None and r["step"] > warmup]
    return statistics.median(vals) if vals else None


def score_summary(summary: dict[str, Any], *, warmup: int = 5, gpu: str = "H200") -> list[dict[str, Any]]:
    """Return one dict per run: measured medians, the estimate and their ratios."""
    from perfmodel import train

    out = []
    for run in summary["runs"]:
        rows = run.get("steps", [])
        est = train.estimate(
            summary["model"]["preset"],
            gpu=gpu,
            n_gpus=summary["n_gpus"],
            seq_len=summary["seq_len"],
            batch_per_gpu=summary["local_batch_size"],
            recipe=run["recipe"],
            float8_all_gather=run["name"].endswith("_ag"),
            ac=summary.get("ac", "none"),
            layers=summary["model"]["layers"],
            vocab=summary["model"]["vocab"],
            compile=bool(summary.get("compile", False)),  # memory under torch.compile (docs/train.md)
        )
        meas_tps = steady_median(rows, "tps", warmup)
        meas_mfu = steady_median(rows, "mfu_pct", warmup)
        meas_mem = steady_median(rows, "memory_gib", warmup)
        est_tps = float(est.tokens_per_s_per_gpu)
        est_mem = float(est.memory_bytes) / 2**30
        out.append(
            {
                "run": run["name"],
                "rc": run.get("rc"),
                "steps_used": sum(1 for r in rows if r["step"] > warmup),
                "tps_measured": meas_tps,
                "tps_estimated": est_tps,
                "tps_ratio_est_over_meas": est_tps / meas_tps if meas_tps else None,
                "mfu_bf16_pct_measured": meas_mfu,
                "mfu_bf16_pct_estimated": 100 * float(est.mfu_bf16),
                "mfu_pct_estimated_per_format": 100 * float(est.mfu),
                "mem_reserved_gib_measured": meas_mem,
                "mem_gib_estimated": est_mem,
                "mem_ratio_est_over_meas": est_mem / meas_mem if meas_mem else None,
                "fits_estimated": bool(est.fits),
            }
        )
    return out


def _fmt(x: Any, spec: str = ".3g") -> str:
    return "-" if x is None else (format(x, spec) if isinstance(x, float) else str(x))


def _print(rows: list[dict[str, Any]]) -> None:
    head = "run             rc  n   tps meas  tps est  est/meas  MFUbf16 meas  est   MFU(fmt) est"
    print(head + "  mem meas GiB  est   est/meas")
    for r in rows:
        print(
            f"{r['run']:<15} {_fmt(r['rc']):>3} {r['steps_used']:>2} {_fmt(r['tps_measured'], '.0f'):>9} "
            f"{_fmt(r['tps_estimated'], '.0f'):>8} {_fmt(r['tps_ratio_est_over_meas']):>8} "
            f"{_fmt(r['mfu_bf16_pct_measured'], '.1f'):>12} {_fmt(r['mfu_bf16_pct_estimated'], '.1f'):>5} "
            f"{_fmt(r['mfu_pct_estimated_per_format'], '.1f'):>12} {_fmt(r['mem_reserved_gib_measured'], '.2f'):>13} "
            f"{_fmt(r['mem_gib_estimated'], '.2f'):>5} {_fmt(r['mem_ratio_est_over_meas']):>9}"
        )
    print("measured: torchtitan's log (memory = max reserved); estimated: perfmodel.train.estimate")


def _synthetic() -> dict[str, Any]:
    steps = [{"step": s, "tps": 1000.0 + s, "mfu_pct": 40.0, "memory_gib": 50.0} for s in range(1, 11)]
    return {
        "model": {"preset": "llama3-8b", "layers": 4, "vocab": 128256},
        "seq_len": 8192,
        "local_batch_size": 1,
        "n_gpus": 1,
        "ac": "none",
        "runs": [
            {"name": "bf16", "recipe": "bf16", "rc": "0", "steps": steps},
            {"name": "fp8_rowwise", "recipe": "rowwise", "rc": "0", "steps": steps},
        ],
    }


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the process exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("summary", nargs="?")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--gpu", default="H200")
    ap.add_argument("--self-check", action="store_true")
    a = ap.parse_args(argv)
    if a.self_check:
        rows = score_summary(_synthetic(), warmup=5, gpu=a.gpu)
        # steps 6..10 -> tps median 1008 (hand-computed); 5 steps used.
        assert abs(rows[0]["tps_measured"] - 1008.0) < 1e-9 and rows[0]["steps_used"] == 5
        assert abs(rows[0]["tps_ratio_est_over_meas"] * 1008.0 - rows[0]["tps_estimated"]) < 1e-6
        _print(rows)
        print("self-check OK")
        return 0
    if not a.summary:
        ap.error("give SUMMARY.json or --self-check")
    with open(a.summary) as f:
        _print(score_summary(json.load(f), warmup=a.warmup, gpu=a.gpu))
    return 0


if __name__ == "__main__":
    sys.exit(main())
