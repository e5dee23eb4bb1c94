"""Import cost of perfmodel against numpy alone, measured in the same run.

Each figure is the best of N fresh interpreters (``python -X importtime`` is not used: it slows
imports down). Target (issue #35 item 9): ``import perfmodel`` costs at most 30 ms more than ``import numpy``
(``perfmodel.models.tiles`` and its trees, sympy and matplotlib load on first use). Bytecode is compiled once
before timing (a warm-up interpreter with ``PYTHONDONTWRITEBYTECODE`` unset), as an installed wheel has it.

    python benchmarks/bench_import.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

TIMER = "import time; t = time.perf_counter(); {stmt}; print(time.perf_counter() - t)"


TARGET_MS = 30.0


def warm_bytecode(stmt: str) -> None:
    """Run ``stmt`` once with bytecode writing on, so that timed runs do not recompile stale ``.pyc`` files."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-c", stmt], check=True, capture_output=True, env=env)


def best_of(stmts: dict[str, str], runs: int) -> dict[str, float]:
    """Best wall time of each statement in ``runs`` fresh interpreters, seconds; the statements take turns
    (one run of each, ``runs`` times), so that load from other processes falls on all of them alike.
    A statement ``"setup;;timed"`` runs ``setup`` before the clock starts."""
    times: dict[str, list[float]] = {name: [] for name in stmts}
    for _ in range(runs):
        for name, stmt in stmts.items():
            setup, _, timed = stmt.rpartition(";;")
            code = (setup + "; " if setup else "") + TIMER.format(stmt=timed)
            out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
            times[name].append(float(out))
    return {name: min(ts) for name, ts in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    warm_bytecode("import perfmodel.cli")
    best = best_of(
        {
            "numpy": "import numpy",
            "perfmodel": "import perfmodel",
            "after_numpy": "import numpy;;import perfmodel",
            "cli": "import perfmodel.cli",
        },
        args.runs,
    )
    numpy_s, ours_s = best["numpy"], best["perfmodel"]
    extra_ms = (ours_s - numpy_s) * 1e3
    after_ms = best["after_numpy"] * 1e3
    print(f"import numpy                     : {numpy_s * 1e3:7.1f} ms (best of {args.runs}, runs interleaved)")
    print(f"import perfmodel                 : {ours_s * 1e3:7.1f} ms  (+{extra_ms:.1f} ms over numpy)")
    print(f"import perfmodel, numpy imported : {after_ms:7.1f} ms  (the cost beyond numpy, timed alone)")
    print(f"import perfmodel.cli             : {best['cli'] * 1e3:7.1f} ms")
    print(f"ratio perfmodel/numpy            : {ours_s / numpy_s:.2f}x")
    worst = max(extra_ms, after_ms)
    print(
        f"target +{TARGET_MS:.0f} ms                    : {'met' if worst <= TARGET_MS else 'MISSED'} "
        f"(worse of the two figures: {worst:.1f} ms)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
