"""Where a training step's allocated peak is: the CUDA allocations alive at the peak of a warm step.

For each named configuration of :mod:`perfmodel.bench.memory.config` (or a variant with another sequence length,
``NAME@SEQ``), in its own process on one GPU: build the step as ``perfmodel.bench.memory`` does, run two steps (so
the AdamW states exist), record the allocator's history (``torch.cuda.memory._record_memory_history``) over a
third, and replay the trace: allocated bytes = the bytes allocated before the step + allocations - completed frees.
The record holds the replayed peak beside ``torch.cuda.max_memory_allocated`` (they must agree), the event at the
peak (its stack: what was running), and the blocks alive there that the step allocated, largest first, each with
its size and stack (the bytes alive from before the step are one line, by size only).

    python benchmarks/harness/memory_peak.py --out DIR fsdp_70b_L1_s32k_b1_full_v32k fsdp_70b_L1_s32k_b1_full_v32k@24576

A diagnostic, not a fit: it says which tensors make a peak, so that a memory formula can name them.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: frames that say nothing of who asked for the memory (allocator and tensor-factory plumbing)
_PLUMBING = ("CachingAllocator", "c10::", "at::empty", "at::detail::", "allocate", "at::TensorBase", "_ops.py",
             "at::_ops::", "c10::impl", "torch::autograd::VariableType", "at::native::empty", "??")  # fmt: skip


def _where(frames: list[dict[str, Any]], n: int = 4) -> str:
    """The first ``n`` informative frames of a stack, innermost first, as one line."""
    keep = []
    for f in frames:
        name = str(f.get("name", ""))
        if any(p in name or p in str(f.get("filename", "")) for p in _PLUMBING):
            continue
        fn = str(f.get("filename", ""))
        keep.append(f"{name[:90]}" + (f" ({Path(fn).name}:{f.get('line')})" if fn.endswith(".py") else ""))
        if len(keep) == n:
            break
    return " < ".join(keep)


def probe(spec: str) -> dict[str, Any]:
    """The peak record of one ``NAME`` or ``NAME@SEQ`` (module doc)."""
    import torch

    from perfmodel.bench.memory.config import get_config
    from perfmodel.bench.memory.step import _build

    name, _, seq = spec.partition("@")
    cfg = get_config(name)
    if seq:
        cfg = dataclasses.replace(cfg, name=f"{name}@{seq}", seq=int(seq))
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    rec: dict[str, Any] = {"spec": spec, "config": cfg.to_dict(), "shape": cfg.shape()}
    step = _build(torch, cfg, dev, cfg.shape(), {})
    step()
    step()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.memory._record_memory_history(max_entries=400_000, context="all", stacks="all")
    step()
    torch.cuda.synchronize()
    t = time.perf_counter()
    snap = torch.cuda.memory._snapshot()
    rec["snapshot_s"] = time.perf_counter() - t
    torch.cuda.memory._record_memory_history(enabled=None)
    rec["max_memory_allocated"] = torch.cuda.max_memory_allocated()
    rec["allocated_before_step"] = base
    trace = snap["device_traces"][dev.index]
    free_kind = "free_completed" if any(e["action"] == "free_completed" for e in trace) else "free_requested"
    cur, best, best_i = base, base, -1
    for i, e in enumerate(trace):
        if e["action"] == "alloc":
            cur += e["size"]
        elif e["action"] == free_kind:
            cur -= e["size"]
        if cur > best:
            best, best_i = cur, i
    live: dict[int, int] = {}
    old_freed = 0
    for i, e in enumerate(trace[: best_i + 1]):
        if e["action"] == "alloc":
            live[e["addr"]] = i
        elif e["action"] == free_kind:
            if live.pop(e["addr"], None) is None:
                old_freed += e["size"]
    blocks = sorted(((trace[i]["size"], i) for i in live.values()), reverse=True)
    rec.update(
        events=len(trace), free_kind=free_kind, replayed_peak=best, peak_event=best_i,
        at_peak=_where(trace[best_i].get("frames", []), 8) if best_i >= 0 else "",
        from_before_step_alive=base - old_freed,
        step_blocks_alive=sum(s for s, _ in blocks),
        blocks=[{"bytes": s, "event": i, "where": _where(trace[i].get("frames", []))} for s, i in blocks[:40]],
    )  # fmt: skip
    return rec


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("specs", nargs="+", help="configuration names of perfmodel.bench.memory.config, or NAME@SEQ")
    ap.add_argument("--out", required=True, help="folder for memory_peak.json")
    ap.add_argument("--timeout-s", type=float, default=150.0, help="per configuration")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(probe(a.specs[0])))
        return 0
    import torch

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name, *argv]),
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0),
        "gpu_uuid": str(getattr(torch.cuda.get_device_properties(0), "uuid", "")),
    }
    records = []
    for spec in a.specs:
        t = time.perf_counter()
        try:
            p = subprocess.run([sys.executable, __file__, "--child", "--out", a.out, spec], capture_output=True,
                               text=True, timeout=a.timeout_s, env=os.environ)  # fmt: skip
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
            rec = json.loads(lines[-1]) if lines else {"spec": spec, "error": p.stderr[-3000:]}
        except subprocess.TimeoutExpired:
            rec = {"spec": spec, "error": f"timeout after {a.timeout_s} s"}
        rec["seconds"] = time.perf_counter() - t
        records.append(rec)
        (out / "memory_peak.json").write_text(json.dumps({"meta": meta, "records": records}, indent=1))
        g = 2**30
        if "error" in rec:
            print(f"{spec}: ERROR {rec['error'][-500:]}", flush=True)
            continue
        print(f"== {spec}: max_allocated {rec['max_memory_allocated'] / g:.2f} GiB, replayed "
              f"{rec['replayed_peak'] / g:.2f}"
              f", from before the step alive {rec['from_before_step_alive'] / g:.2f}, step blocks "
              f"{rec['step_blocks_alive'] / g:.2f} ({rec['events']} events, {rec['seconds']:.0f} s)\n   at peak: "
              f"{rec['at_peak']}", flush=True)  # fmt: skip
        for b in rec["blocks"][:25]:
            print(f"   {b['bytes'] / 2**20:9.1f} MiB  {b['where']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
