"""Import cost of perfmodel against numpy alone, measured in the same run.

Each figure is the best of N fresh interpreters (``python -X importtime`` is not used: it slows
imports down). Target (issue #2): ``import perfmodel`` costs at most 50 ms more than ``import numpy``.

    python benchmarks/bench_import.py [--runs 15]
"""

from __future__ import annotations

import argparse
import subprocess
import sys

TIMER = "import time; t = time.perf_counter(); {stmt}; print(time.perf_counter() - t)"


def best_of(stmt: str, runs: int) -> float:
    """Best wall time of ``stmt`` in ``runs`` fresh interpreters, seconds."""
    times = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", TIMER.format(stmt=stmt)], check=True, capture_output=True, text=True
        ).stdout
        times.append(float(out))
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    numpy_s = best_of("import numpy", args.runs)
    ours_s = best_of("import perfmodel", args.runs)
    cli_s = best_of("import perfmodel.cli", args.runs)
    extra_ms = (ours_s - numpy_s) * 1e3
    print(f"import numpy          : {numpy_s * 1e3:7.1f} ms (best of {args.runs})")
    print(f"import perfmodel      : {ours_s * 1e3:7.1f} ms  (+{extra_ms:.1f} ms over numpy)")
    print(f"import perfmodel.cli  : {cli_s * 1e3:7.1f} ms")
    print(f"ratio perfmodel/numpy : {ours_s / numpy_s:.2f}x")
    print(f"target +50 ms         : {'met' if extra_ms <= 50 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
