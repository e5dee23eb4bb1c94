"""Seed: Triton's bench_mlp for the seed's case."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "SEED_CASE",
    "SEED_DTYPES",
    "run_seed",
    "seed_batches",
]

# ---- seed: Triton's bench_mlp -----------------------------------------------------------------------------------

# The seed (shared/seeds/000_*.txt, parse_moe_kernel_perf.py): roofline_mlp(..., 5120, 8192, 128, 4, x, w, TP=1,
# EP=1, name="llama4-maverick") for x-w in fp8-fp8 and (no native mx4 on Hopper) bf16-mx4, batches from
# range(128, 512, 32) + range(512, 32000, 128);
# profiles at {root}/{name}/{x}-{w}-TP{TP}-EP{EP}/profiles/batch-{batch}.hatchet
SEED_CASE = {"name": "llama4-maverick", "dim1": 5120, "dim2": 8192, "n_expts_tot": 128, "n_expts_act": 4,
             "TP": 1, "EP": 1}  # fmt: skip
SEED_DTYPES: tuple[tuple[str, str], ...] = (("fp8", "fp8"), ("bf16", "mx4"))


def seed_batches(lo: int = 128, hi: int = 8192) -> list[int]:
    """~20 total-token batches from the seed's set, spread log-uniformly from ``lo`` to ``hi``; each is in
    ``range(128, 512, 32)`` or ``range(512, 32000, 128)`` and a multiple of ``n_expts_tot / n_expts_act = 32``
    (bench_mlp takes ``batch_per_expt = batch * 4 / 128``). Ordered so a budget cut keeps the span."""
    allowed = set(range(128, 512, 32)) | set(range(512, 32000, 128))
    picks = sorted({min(allowed, key=lambda b: abs(math.log(b / (lo * (hi / lo) ** (i / 20))))) for i in range(21)})
    order, seen = [], set()
    for step in (20, 10, 5, 2, 1):  # coarse first: a cut keeps the ends and the middle
        for i in range(0, len(picks), step):
            if picks[i] not in seen:
                seen.add(picks[i])
                order.append(picks[i])
    if picks[-1] not in seen:
        order.insert(1, picks[-1])
    return order


def run_seed(tk_dir: Path, root: Path, dtypes: tuple[str, str], batches: Sequence[int], *, budget_s: float,
             log: Callable[[str], None] = print) -> dict[str, Any]:  # fmt: skip
    """Run Triton's ``bench/bench_mlp.py::bench_mlp`` (the 3.6-era bench with upstream #8860 + #8877) for the seed's
    case at each total-token ``batch``: its Proton profile is written to the seed's layout instead of a temporary
    file, and ``roofline.parse_profile`` (needs llnl-hatchet, absent on the device) is skipped. Existing profiles
    are kept (resume). Stops starting batches past ``budget_s``."""
    sys.path[:0] = [str(tk_dir), str(tk_dir / "bench")]
    import bench_mlp  # type: ignore[import-not-found]

    c = SEED_CASE
    x, w = dtypes
    folder = root / c["name"] / f"{x}-{w}-TP{c['TP']}-EP{c['EP']}" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    target: dict[str, Path] = {}
    saved = (bench_mlp.tempfile.mktemp, bench_mlp.roofline.parse_profile)
    bench_mlp.tempfile.mktemp = lambda *a, **k: str(target["path"])  # proton appends ".hatchet"
    bench_mlp.roofline.parse_profile = lambda *a, **k: None
    try:
        return _seed_loop(bench_mlp, folder, dtypes, batches, target, budget_s, log)
    finally:
        bench_mlp.tempfile.mktemp, bench_mlp.roofline.parse_profile = saved


def _seed_loop(bench_mlp: Any, folder: Path, dtypes: tuple[str, str], batches: Sequence[int],
               target: dict[str, Path], budget_s: float, log: Callable[[str], None]) -> dict[str, Any]:  # fmt: skip
    c = SEED_CASE
    x, w = dtypes
    t0 = time.monotonic()
    status: dict[str, Any] = {"dtypes": f"{x}-{w}", "done": [], "errors": {}, "skipped_budget": []}
    last = 0.0
    for b in batches:
        out = folder / f"batch-{b}.hatchet"
        if out.exists():
            status["done"].append(b)
            continue
        if time.monotonic() - t0 + 1.5 * last > budget_s:
            status["skipped_budget"].append(b)
            continue
        target["path"] = folder / f"batch-{b}"
        bpe = b * c["n_expts_act"] // c["n_expts_tot"]
        t1 = time.monotonic()
        try:
            bench_mlp.bench_mlp(bpe, c["dim1"], c["dim2"], c["n_expts_tot"], c["n_expts_act"], x, w, c["TP"], c["EP"])
            status["done"].append(b)
        except Exception as exc:
            status["errors"][str(b)] = f"{type(exc).__name__}: {str(exc)[:500]}"
            _proton_finalize()
        last = time.monotonic() - t1
        log(f"seed {x}-{w} batch {b}: {last:.1f} s")
    status["elapsed_s"] = time.monotonic() - t0
    return status


def _proton_finalize() -> None:
    """Close a Proton session a failed batch left open (else the next ``proton.start`` fails)."""
    try:
        import triton.profiler as proton

        proton.finalize()
    except Exception:
        pass
