"""The seed's chart, predicted: Triton's own MoE bench (``triton_kernels`` ``bench_mlp``) on one H200 against
:func:`perfmodel.measured.moe_bench.predicted_series` and a plain roofline.

    python benchmarks/validate_moe_seed.py            # prints the markdown table of docs/moe.md ("The seed's chart")
    python benchmarks/validate_moe_seed.py --png DIR  # also draws the two charts with perfmodel's roofline plot

The profiles (``benchmarks/data/h200_2026-12-03d/moe_seed_profiles.tar.gz``: llama4-maverick experts, dim 5120 /
8192, 128 experts, 4 active, TP1 EP1; fp8 x fp8 and bf16 x mx4; 21 batches 128..8192, 100 repetitions each) were
never used to fit anything: the grouped-GEMM model was fitted on ``torch._grouped_mm`` / ``torch._scaled_grouped_mm``
sweeps, so every figure here is out of sample for the kernel itself (``matmul_ogs`` is not the kernel the model
prices). Compared per batch by achieved rate (FLOP/s), which needs no repetition count: predicted time / measured
time = measured rate / predicted rate.
"""

from __future__ import annotations

import argparse
import statistics
import tarfile
import tempfile
from pathlib import Path

import numpy as np

from perfmodel.measured.moe_bench import _W_BYTES

DATA = Path(__file__).resolve().parent / "data" / "h200_2026-12-03d" / "moe_seed_profiles.tar.gz"
BATCHES = (128, 160, 192, 224, 288, 352, 448, 512, 640, 896, 1024, 1280, 1536, 1920, 2304, 2944, 3584, 4352, 5376,
           6656, 8192)  # fmt: skip
DTYPES = (("fp8", "fp8"), ("bf16", "mx4"))
#: stored bytes per weight element (mx4: 4 bits + one e8m0 scale per 32 = 4.25 bits): the predicted series' own table
W_BYTES = _W_BYTES


def extract(dest: Path, path: Path = DATA) -> Path:
    """Unpack the profiles under ``dest``; returns the log root (``{root}/llama4-maverick/{x}-{w}-TP1-EP1/...``)."""
    with tarfile.open(path) as tar:
        tar.extractall(dest, filter="data")
    return dest / "seed_logs"


def roofline_s(batch: int, x: str, w: str, gpu) -> float:
    """max(weight + activation bytes / HBM bandwidth, FLOPs / dense peak) of the two matmuls (no efficiency)."""
    rows = batch * 4  # routed rows over all 128 experts
    elems_w = 128 * (5120 * 8192 + 4096 * 5120)
    flops = 2.0 * rows * (5120 * 8192 + 4096 * 5120)
    xb = W_BYTES[x]
    nbytes = elems_w * W_BYTES[w] + rows * (5120 + 8192 + 4096 + 5120) * xb
    return max(nbytes / gpu.mem_bw_bytes_per_s, flops / gpu.peak_flops_per_s(x))


def rows(root: Path) -> list[dict]:
    from perfmodel.measured import moe_bench as mb

    out = []
    for x, w in DTYPES:
        meas = mb.batch_series(root, "llama4-maverick", x, w, list(BATCHES), n_expts_tot=128, n_expts_act=4)
        pred = mb.predicted_series(list(BATCHES), x_dtype=x, w_dtype=w, gpu=meas[0].gpu)
        gpu = meas[0].gpu  # the profiles' own device (a GPUSpec)
        for m, p in zip(meas, pred, strict=True):
            reps = m.flops / p.flops  # the profile sums every repetition; rates need no count
            per_call = m.time_s / reps
            out.append(
                {
                    "dtypes": f"{x} x {w}",
                    "batch": p.meta["batch"],
                    "x": p.meta["x"],
                    "measured_tflops": m.flops / m.time_s / 1e12,
                    "measured_us": per_call * 1e6,
                    "predicted_us": p.time_s * 1e6,
                    "roofline_us": roofline_s(p.meta["batch"], x, w, gpu) * 1e6,
                }
            )
    return out


def table(rs: list[dict]) -> str:
    lines = [
        "| x x w | batch | tokens/expert | measured µs/call | measured TFLOP/s | predicted µs | predicted / measured "
        "| roofline µs | roofline / measured |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rs:
        lines.append(
            f"| {r['dtypes']} | {r['batch']} | {r['x']:g} | {r['measured_us']:.0f} | {r['measured_tflops']:.0f} "
            f"| {r['predicted_us']:.0f} | {r['predicted_us'] / r['measured_us']:.2f} | {r['roofline_us']:.0f} "
            f"| {r['roofline_us'] / r['measured_us']:.2f} |"
        )
    lines.append("")
    for d in sorted({r["dtypes"] for r in rs}):
        sel = [r for r in rs if r["dtypes"] == d]
        pr = np.array([r["predicted_us"] / r["measured_us"] for r in sel])
        rr = np.array([r["roofline_us"] / r["measured_us"] for r in sel])
        ape = np.abs(pr - 1) * 100
        lines.append(
            f"{d}: predicted / measured median {statistics.median(pr):.2f} (range {pr.min():.2f}–{pr.max():.2f}; "
            f"MdAPE {np.median(ape):.0f} %, p90 {np.percentile(ape, 90):.0f} %); roofline / measured median "
            f"{statistics.median(rr):.2f} (range {rr.min():.2f}–{rr.max():.2f})."
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--png", type=Path, help="also draw the charts into this folder")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = extract(Path(tmp))
        print(table(rows(root)))
        if args.png:
            import json
            import subprocess
            import sys

            args.png.mkdir(parents=True, exist_ok=True)
            meta = Path(tmp) / "meta.json"
            meta.write_text(json.dumps([["H200 triton_kernels bench_mlp 2026-12-03", str(root), True]]))
            br = ",".join(f"{b}:{b + 1}:1" for b in BATCHES)
            for flag, name in (("fp8fp8", "seed_fp8fp8.png"), ("fp8mx4", "seed_bf16mx4.png")):
                cmd = [sys.executable, "-m", "perfmodel", "roofline", "-m", str(meta), "-d", flag, "--predict", "-q"]
                cmd += ["--batch-ranges", br, "-o", str(args.png / name), "--force"]
                subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
