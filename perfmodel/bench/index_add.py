"""Time the MoE block's scatter-add (``index_add_``) and score multiply alone, across torch's 32-bit index limit.

The expert block's unpermute adds each routed row back into its token's row, ``zeros(T + 1, d).index_add(0, tok,
y)`` with ``y`` of shape ``[R, d]`` (and the backward of the permute gather does the same). PyTorch's CUDA
``index_add_`` (``index_add_cuda_impl`` in ``aten/src/ATen/native/cuda/Indexing.cu``) launches
``indexFuncLargeIndex`` specialised for 2-D tensors with ``unsigned int`` offsets only when
``canUse32BitIndexMath`` holds for the result, the source and the index -- each with fewer than ``2**31 - 1``
elements (``aten/src/ATen/native/IndexingUtils.cpp``); otherwise it launches the generic instantiation (any rank,
``uint64_t`` offsets, dims ``-1``). Kernel profiles of step35_flash and ling_flash_20 at 131072 tokens (``R x d =
2**32``) showed that second kernel (docs/validation/moe.md, "Round 14"); this bench measures the two paths at equal
bytes, on pairs of row counts one top-k step apart on either side of the limit, and the 32-bit path over sizes.

    python -m perfmodel.bench.index_add --out DIR [--budget-s 60] [--dry-run]

Writes ``DIR/index_add.json``: one record per (kernel, d, rows, top_k) with ``triton.testing.do_bench`` event time
(warmup 25 ms, at least 6 timed runs, L2 flushed; median), the bytes the model prices for it and, from one
torch.profiler pass after all timing, the name of the kernel torch launched. torch and triton are imported inside
the functions.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import PerfModelError
from ..moe.block_constants import INT32_INDEX_LIMIT, index_add_rate
from ._device import select_cases

__all__ = ["CASES", "IndexAddBenchError", "case_bytes", "cases", "main", "run", "uses_64bit_offsets"]

SCHEMA = "perfmodel.bench.index_add/1"
WARMUP_MS = 25.0
MIN_REPS = 6
EXPERTS = 64  # experts the synthetic routing spreads each token's top_k rows over (sorted by expert, as the block)


def _edge_pair(d: int, k: int) -> tuple[int, int]:
    """The largest routed-row count (a multiple of ``k``) whose ``[R, d]`` source is under the limit, and the next."""
    lo = (INT32_INDEX_LIMIT - 1) // d // k * k
    return lo, lo + k


#: (kernel, d, routed rows R, top_k): d from the blocks profiled (2048 qwen3_30b_a3b, 4096 step35_flash /
#: ling_flash_20, 7168 deepseek_v3 / step3); R from 2**16 to 2**20 and the pair on either side of the limit.
CASES: tuple[tuple[str, int, int, int], ...] = tuple(
    (kernel, d, r, k)
    for kernel in ("index_add", "bcast_mul")
    for d in (2048, 4096, 7168)
    for k in (8,)
    for r in sorted({2**16, 2**18, *_edge_pair(d, k), 2**20})
)


class IndexAddBenchError(PerfModelError, ValueError):
    """A bad argument to the index_add bench."""


def uses_64bit_offsets(d: int, rows: int, targets: int) -> bool:
    """Whether ``zeros(targets, d).index_add(0, idx[rows], src[rows, d])`` takes PyTorch's generic 64-bit path
    (the rule's one home: :func:`perfmodel.moe.block_constants.index_add_rate`)."""
    return index_add_rate(d, rows, targets) == "index_add_64bit"


def case_bytes(kernel: str, d: int, rows: int) -> float:
    """The bytes perfmodel.moe.block prices the kernel at (``_unpermute``): index_add reads the source and
    read-modify-writes the target row per add (3 x 2 bytes per element) plus the int64 index; the score
    multiply reads ``[R, d]`` and writes it (2 x 2 bytes per element) plus the bf16 scores."""
    if kernel == "index_add":
        return rows * d * 2 * 3 + rows * 8
    if kernel == "bcast_mul":
        return rows * d * 2 * 2 + rows * 2
    raise IndexAddBenchError(f"unknown kernel {kernel!r}; valid: index_add, bcast_mul")


def cases(kernels: Sequence[str] | None = None) -> list[tuple[str, int, int, int]]:
    """The planned cases, all or those of the kernels named."""
    return select_cases(CASES, kernels, IndexAddBenchError)


def _routing(torch: Any, rows: int, k: int) -> Any:
    """``tok`` as the block builds it: each of ``rows // k`` tokens picks ``k`` distinct experts of ``EXPERTS``
    at random; the routed rows sorted by expert (stable), each holding its token's index (int64, cuda)."""
    tokens = rows // k
    gen = torch.Generator(device="cuda").manual_seed(0)
    scores = torch.rand(tokens, EXPERTS, device="cuda", generator=gen)
    experts = scores.topk(k, dim=1).indices.reshape(-1)
    order = torch.sort(experts, stable=True).indices
    return order // k


def _call(torch: Any, kernel: str, d: int, rows: int, k: int) -> Callable[[], Any]:
    tokens = rows // k
    tok = _routing(torch, rows, k)
    y = torch.randn(rows, d, device="cuda", dtype=torch.bfloat16)
    if kernel == "index_add":
        out = torch.zeros(tokens + 1, d, device="cuda", dtype=torch.bfloat16)
        return lambda: out.index_add_(0, tok, y)
    s = torch.rand(rows, device="cuda", dtype=torch.bfloat16)
    return lambda: y * s[:, None]


def _free(torch: Any) -> None:
    import gc

    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


def _split_at_spins(events: Sequence[tuple[str, float, float]]) -> list[list[tuple[str, float]]]:
    """GPU events (name, start, duration) -> per case (name, duration): the events between the two
    ``torch.cuda._sleep`` spins around each case (the 1st and 2nd spin, the 3rd and 4th, ...)."""
    out: list[list[tuple[str, float]]] = []
    spins = 0
    for name, _, dt in events:
        if "spin_kernel" in name:
            spins += 1
            if spins % 2:
                out.append([])
        elif spins % 2:
            out[-1].append((name, dt))
    return out


def run(out: Path, *, budget_s: float = 60.0, kernels: Sequence[str] | None = None) -> dict[str, Any]:
    """Time every case (in order, stopping after ``budget_s`` seconds), then profile one call of each timed case,
    and write ``out/index_add.json``."""
    from ._device import bench, device_meta, kernel_times_s, require_cuda

    torch = require_cuda()
    import triton

    out.mkdir(parents=True, exist_ok=True)
    records: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for kernel, d, rows, k in cases(kernels):
        rec: dict[str, Any] = {"kernel": kernel, "dim": d, "rows": rows, "top_k": k, "targets": rows // k + 1}
        rec["elements"] = rows * d
        rec["64bit_offsets"] = uses_64bit_offsets(d, rows, rows // k + 1) if kernel == "index_add" else None
        rec["bytes"] = case_bytes(kernel, d, rows)
        if time.perf_counter() - t0 > budget_s:
            records.append(rec | {"skipped": "budget"})
            continue
        try:
            fn = _call(torch, kernel, d, rows, k)
            fn()
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            est_ms = start.elapsed_time(end)
            rec.update(bench(fn, warmup_ms=WARMUP_MS, rep_ms=max(100.0, MIN_REPS * est_ms)))
            rec["bytes_per_s"] = rec["bytes"] / rec["time_s"]
            del fn
        except Exception as exc:  # a case that does not run here (memory) is a result, recorded
            rec["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        _free(torch)
        records.append(rec)
        print(json.dumps(rec), flush=True)
    timed = [r for r in records if "time_s" in r]
    if timed:  # one profiler, after all timing: which kernels each case launched (a spin kernel between cases)
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for r in timed:
                fn = _call(torch, r["kernel"], r["dim"], r["rows"], r["top_k"])
                torch.cuda.synchronize()
                torch.cuda._sleep(1000)
                fn()
                torch.cuda._sleep(1000)
                torch.cuda.synchronize()
                del fn
                _free(torch)
        for r, launched in zip(timed, _split_at_spins(kernel_times_s(prof)), strict=False):
            want = "indexFunc" if r["kernel"] == "index_add" else "BinaryFunctor"
            mine = [(n, dt) for n, dt in launched if want in n]
            r["launched"] = sorted({n[:200] for n, _ in mine})
            r["launches"] = len(mine)
            r["profiled_kernel_time_s"] = sum(dt for _, dt in mine)
    meta = {
        "schema": SCHEMA,
        **device_meta(torch, triton),
        "timing": f"triton.testing.do_bench warmup {WARMUP_MS} ms, at least {MIN_REPS} timed runs, L2 flushed; median",
        "command": " ".join(["python -m perfmodel.bench.index_add", *sys.argv[1:]]),
    }
    doc = {"meta": meta, "records": records}
    (out / "index_add.json").write_text(json.dumps(doc, indent=1))
    return doc


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m perfmodel.bench.index_add", description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument("--budget-s", type=float, default=60.0, help="stop starting cases after this many seconds")
    p.add_argument("--kernels", default=None, help="comma list: index_add, bcast_mul (default: both)")
    p.add_argument("--dry-run", action="store_true", help="print the cases and exit (no GPU needed)")
    args = p.parse_args(argv)
    if not args.budget_s > 0:
        raise IndexAddBenchError(f"--budget-s must be positive, got {args.budget_s}")
    planned = cases(args.kernels.split(",") if args.kernels else None)
    if args.dry_run:
        for kernel, d, rows, k in planned:
            path = (
                ("64-bit" if uses_64bit_offsets(d, rows, rows // k + 1) else "32-bit") if kernel == "index_add" else ""
            )
            print(f"{kernel:10s} d {d:5d} rows {rows:8d} top_k {k} elements {rows * d:11d} {path}")
        return 0
    doc = run(args.out, budget_s=args.budget_s, kernels=sorted({c[0] for c in planned}))
    ok = sum("time_s" in r for r in doc["records"])
    print(f"index_add: {ok}/{len(doc['records'])} timed -> {args.out / 'index_add.json'}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    from perfmodel.bench._device import run_cli

    raise SystemExit(run_cli(main))
