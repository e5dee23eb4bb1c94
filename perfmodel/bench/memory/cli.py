"""``python -m perfmodel.bench.memory {plan,warm,run,one,selftest}``: the command line (see the package doc)."""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from .config import SELFTEST_SHAPE, MemConfig, get_config, select
from .estimate import estimate_record
from .files import _versions, _Writer, file_meta
from .step import run_one
from .sweep import _expected_s, run_configs, warm

__all__ = ["main"]


def _plan_text(configs: Sequence[MemConfig]) -> str:
    gib = 2.0**30
    lines = [f"{'#':>2} {'name':<36} {'est GiB':>8} {'fits':>5} {'est ms':>7} {'guess s':>7}"]
    total = 0.0
    for i, c in enumerate(configs, 1):
        e = estimate_record(c.to_dict())
        g = _expected_s(c, warmed=True)
        total += g
        mem = (
            f"{e['memory_bytes'] / gib:8.1f} {e['fits']!s:>5} {e['step_s'] * 1e3:7.0f}"
            if "error" not in e
            else "  refused"
        )
        lines.append(f"{i:>2} {c.name:<36} {mem} {g:7.0f}  {c.expect}")
    lines.append(f"total {total:.0f} s guessed with a warm inductor cache (+ ~60 s warm phase)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m perfmodel.bench.memory", description=sys.modules[__package__].__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("command", choices=["plan", "warm", "run", "one", "selftest"])
    p.add_argument("--out", type=Path, default=Path("out"), help="output folder (run: memory.json there)")
    p.add_argument("--deadline-s", type=float, default=200.0, help="run/warm: end before this many seconds")
    p.add_argument("--configs", default="", help="comma-separated names or shell patterns (default: all)")
    p.add_argument("--config", default="", help="one: the configuration's name")
    p.add_argument("--warm-only", action="store_true", help="one: build and run step 1 only")
    p.add_argument("--warmed", action="store_true", help="run: the cache is warm (guess compile at 15 s)")
    p.add_argument("--cap-s", type=float, default=150.0, help="run: kill one configuration after this")
    p.add_argument("--device", default="cuda", help="one/selftest: cuda or cpu")
    a = p.parse_args(argv)
    if a.command in ("run", "warm"):  # a SIGTERM (the shell's timeout) unwinds, so the children are killed
        import signal

        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    command = "python -m perfmodel.bench.memory " + shlex.join(list(sys.argv[1:] if argv is None else argv))
    if a.command == "plan":
        print(_plan_text(select(a.configs)))
        return 0
    if a.command == "one":
        rec = run_one(get_config(a.config), device=a.device, warm_only=a.warm_only)
        rec["versions"] = _versions()
        print(json.dumps(rec, default=str), flush=True)
        with contextlib.suppress(Exception):
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()
        return 0
    if a.command == "selftest":
        return _selftest(a.device, a.out)
    if a.command == "warm":
        res = warm(select(a.configs), deadline_s=a.deadline_s)
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "memory_warm.json").write_text(json.dumps({"meta": file_meta(command), "warm": res}, indent=1))
        print(json.dumps([{k: r.get(k) for k in ("name", "status", "first_step_s")} for r in res]))
        return 0
    writer = _Writer(a.out / "memory.json", file_meta(command))
    run_configs(select(a.configs), deadline_s=a.deadline_s, write=writer, cap_s=a.cap_s, warmed=a.warmed)
    return 0


def _selftest(device: str, out: Path) -> int:
    """A tiny model through each mode and AC mode (float8 only on CUDA with torchao); prints one line each."""
    cfgs = [MemConfig(name=f"selftest_{m}_{ac}", model="llama3-8b", layers=2, seq=32, batch=1, ac=ac, mode=m)
            for m, ac in (("fsdp", "none"), ("amp", "selective"), ("bf16", "full"))]  # fmt: skip
    if device == "cuda":
        cfgs.append(MemConfig(name="selftest_fsdp_tw_fp8ag", model="llama3-8b", layers=2, seq=32, batch=1,
                              recipe="tensorwise", fp8_all_gather=True))  # fmt: skip
    bad = 0
    for c in cfgs:
        rec = run_one(c, device=device, shape=SELFTEST_SHAPE, timed_budget_s=0.05)
        bad += rec["status"] != "ok"
        print(json.dumps({k: rec.get(k) for k in ("name", "status", "step_time_s", "counted", "error")}, default=str))
    return 1 if bad else 0
