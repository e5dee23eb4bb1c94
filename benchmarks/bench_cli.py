"""Wall time of CLI answers in fresh processes against ``python -c pass`` (interpreter start), the same run.

Each figure is the best of N fresh processes; the commands take turns (one run of each, N times), so that load
from other processes falls on all of them alike. Bytecode is compiled once before timing (a warm-up process with
``PYTHONDONTWRITEBYTECODE`` unset), as an installed wheel has it. The CLI runs as the ``perfmodel`` console script
does (``perfmodel.cli:main``). Target (issue #35 item 9): every answer within 150 ms of interpreter start.

    python benchmarks/bench_cli.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_MS = 150.0
ENTRY = "import sys; from perfmodel.cli import main; sys.exit(main(sys.argv[1:]))"  # the console script's body
PROFILE = "tests/data/h200_proton_triton_matmul.hatchet"
COMMANDS: dict[str, list[str]] = {
    "gemm 8192^3 --gpu h100": ["gemm", "8192", "8192", "8192", "--gpu", "h100"],
    "gemm 8192^3 --gpu h200": ["gemm", "8192", "8192", "8192", "--gpu", "h200"],
    "float8 llama3-8b --gpu h100": ["float8", "--gpu", "h100", "--model", "llama3-8b", "--tokens", "8192"],
    f"profile {Path(PROFILE).name}": ["profile", PROFILE],
    "gpus": ["gpus"],
}


def _once(argv: list[str], env: dict[str, str] | None = None) -> float:
    """Wall seconds of one fresh process running ``argv`` (it must exit 0)."""
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()[:500]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    py = sys.executable
    runs: dict[str, list[str]] = {
        "python -c pass": [py, "-c", "pass"],
        "python -c 'import numpy'": [py, "-c", "import numpy"],
        **{f"perfmodel {name}": [py, "-c", ENTRY, *argv] for name, argv in COMMANDS.items()},
    }
    warm = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for argv in runs.values():
        _once(argv, env=warm)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.runs):
        for name, argv in runs.items():
            times[name].append(_once(argv))
    best = {name: min(ts) for name, ts in times.items()}
    start, numpy_s = best["python -c pass"], best["python -c 'import numpy'"]
    print(
        f"best of {args.runs} fresh processes, runs interleaved; beyond start = minus `python -c pass`; "
        "beyond numpy = minus `python -c 'import numpy'` (what perfmodel itself adds)"
    )
    worst = 0.0
    for name, t in best.items():
        beyond = (t - start) * 1e3
        if name.startswith("perfmodel"):
            worst = max(worst, beyond)
        print(
            f"  {name:44s} {t * 1e3:8.1f} ms   beyond start {beyond:7.1f} ms   beyond numpy "
            f"{(t - numpy_s) * 1e3:7.1f} ms   ratio to start {t / start:5.2f}x"
        )
    print(f"target: every answer < {TARGET_MS:.0f} ms beyond start: {'met' if worst < TARGET_MS else 'MISSED'} "
          f"(slowest {worst:.1f} ms)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
