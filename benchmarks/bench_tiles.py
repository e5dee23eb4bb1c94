"""Speed of the tile model (``time_model="tiles"``) against the default calibrated model, measured in the same run.

Prices N random GEMMs (seeded; M, K, N multiples of 8 from 8 to 32768, so every one runs the aligned kernels, and
the same count with odd sizes, priced by the fallback kernels) as one array call per model and format, best of
R runs, and prints seconds and the ratio tiles / default.

    python benchmarks/bench_tiles.py [--n 100000] [--runs 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import perfmodel as pm


def best_of(fn, runs: int) -> float:
    """Best wall time of ``fn()`` over ``runs`` calls, seconds."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="GEMMs per call")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    aligned = [rng.integers(1, 4097, args.n) * 8 for _ in range(3)]
    fp8 = [aligned[0], *(-(-d // 16) * 16 for d in aligned[1:])]  # torch._scaled_mm: K and N multiples of 16
    odd = [rng.integers(8, 32768, args.n) | 1 for _ in range(3)]
    print(f"{args.n} GEMMs per call, best of {args.runs}")
    print(f"{'GEMMs':28s} {'default s':>10s} {'tiles s':>10s} {'tiles / default':>16s}")
    cases = (
        ("bf16 rc, aligned", aligned, "bf16", None, "rc"),
        ("bf16 cr, aligned", aligned, "bf16", None, "cr"),
        ("bf16 rr, odd (fallback)", odd, "bf16", None, "rr"),
        ("fp8 tensorwise, aligned", fp8, "fp8_e4m3", "tensorwise", "rc"),
        ("fp8 rowwise, aligned", fp8, "fp8_e4m3", "rowwise", "rc"),
    )
    for label, shapes, dtype, scaling, layout in cases:
        times = {}
        for name, model in (("default", None), ("tiles", "tiles")):
            kw = dict(layout=layout, time_model=model)
            times[name] = best_of(
                lambda kw=kw, a=(*shapes, dtype, "H200", scaling): pm.gemm_time_s(*a, **kw), args.runs
            )
        print(f"{label:28s} {times['default']:10.4f} {times['tiles']:10.4f} {times['tiles'] / times['default']:16.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
