"""Decoder-layer fwd+bwd sweep: bf16 against torchao float8 with all, one group or a subset of the Linears converted.

The command line of ``python -m perfmodel.bench.layer``: the parser and :func:`main` (``plan``, ``run``, ``table``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..session import log as _log
from .estimate import PROFILE_STEPS, TIMED_STEPS, WARMUP_STEPS, _available_cpus, _cpu_split, default_workers, plan_text
from .plan import (
    EXTRA_SIZES,
    LAYER_SIZES,
    PLANS,
    PRIORITIES,
    LayerSpec,
    done_ids,
    layer_plan,
    layer_size,
    named_plan,
    select,
)
from .record import COMPILE_MODES, format_table
from .sweep import run_sweep

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m perfmodel.bench.layer", description=(__doc__ or "").split("\n\n", 1)[0])
    p.add_argument(
        "command",
        choices=("plan", "run", "table"),
        help="plan: print the configs and estimated time (no GPU); run: measure; table: print DIR/layer*.json",
    )
    p.add_argument("--out", type=Path, default=None, help="output folder (run, table)")
    p.add_argument("--quick", action="store_true", help="bf16 + tensorwise-all of a small layer (< 60 s)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and estimated time; no GPU")
    p.add_argument("--budget-s", type=float, default=None, help="no config starts after this (default 500; quick 30)")
    p.add_argument(
        "--deadline-s", type=float, default=None, help="the run ends by this, killing what runs (default 550; quick 58)"
    )
    p.add_argument("--workers", type=int, default=None, help="compile worker processes (default min(12, cores - 2))")
    p.add_argument("--compile-threads", type=int, default=None, help="TORCHINDUCTOR_COMPILE_THREADS per worker")
    p.add_argument("--cpus", type=int, default=None, help="CPU cores to plan for (default: plan 16, run: this machine)")
    p.add_argument(
        "--quiet",
        action="store_true",
        help="measure only while no worker compiles (batches compile, then measure one by one; slower)",
    )
    p.add_argument(
        "--sizes",
        default=",".join(s.key for s in LAYER_SIZES),
        help="comma-separated layer sizes to plan: the sweep's "
        f"{', '.join(s.key for s in LAYER_SIZES)} (default) and {', '.join(s.key for s in EXTRA_SIZES)}",
    )
    p.add_argument(
        "--plan",
        default="sweep",
        choices=PLANS,
        help="sweep: the layer sweep of --sizes (default); mix_order: the configs that test the mix-order norm "
        "backward rule (MIX_ORDER_CASES); filter: the step model's picks where it fires (FILTER_CASES); --sizes "
        "ignored by both",
    )
    p.add_argument(
        "--compile-mode",
        default="default",
        choices=COMPILE_MODES,
        help="torch.compile mode of every config: default (the host launches every kernel) or reduce-overhead "
        "(CUDA graphs)",
    )
    p.add_argument("--only", default="", help="comma-separated fnmatch patterns of config ids, e.g. 'd2048-*'")
    p.add_argument("--priority-max", type=int, default=None, help="only configs of priority <= this")
    p.add_argument(
        "--skip-from", type=Path, action="append", default=[], help="skip ids measured in this dataset (repeatable)"
    )
    p.add_argument("--suffix", default="", help="output file DIR/layer{suffix}.json")
    p.add_argument("--timed-steps", type=int, default=TIMED_STEPS)
    p.add_argument("--warmup-steps", type=int, default=WARMUP_STEPS)
    p.add_argument("--profile-steps", type=int, default=PROFILE_STEPS)
    return p


def _command_line(argv: Sequence[str]) -> str:
    return "python -m perfmodel.bench.layer " + shlex.join(list(argv))


def _table(out: Path | None) -> int:
    """``table``: the text table of every ``layer*.json`` in ``out``."""
    if out is None:
        raise SystemExit("table needs --out DIR")
    paths = sorted(out.glob("layer*.json"))
    if not paths:
        print(f"no layer*.json in {out}")
    for path in paths:
        print(f"== {path.name}")
        print(format_table(json.loads(path.read_text()).get("records", [])))
    return 0


def _specs(args: argparse.Namespace) -> list[LayerSpec]:
    """The configs the arguments select: the named plan or the sweep of ``--sizes``, filtered."""
    try:
        sizes = [layer_size(k.strip()) for k in args.sizes.split(",") if k.strip()]
    except ValueError as exc:
        raise SystemExit(f"--sizes: {exc}") from None
    return select(
        named_plan(args.plan) if args.plan != "sweep" and not args.quick else layer_plan(quick=args.quick, sizes=sizes),
        only=[p for p in args.only.split(",") if p.strip()],
        priority_max=args.priority_max,
        skip_ids=done_ids(args.skip_from),
    )


def _run(args: argparse.Namespace, argv: Sequence[str], specs: Sequence[LayerSpec], plan: Mapping[str, Any]) -> int:
    """``run`` on the GPU: the sweep, its dataset ``layer{suffix}.json`` and the table. ``plan``: ``t_start``,
    ``budget_s``, ``deadline_s``, ``workers``, ``compile_cores`` as :func:`main` worked them out."""
    from .._device import require_cuda
    from ..dataset import DatasetWriter, collect_meta, gpu_state

    torch = require_cuda()
    # `timeout` sends SIGTERM: exit through the finally blocks (kill the workers, keep the records)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    gpu_mem_bytes = float(torch.cuda.get_device_properties(0).total_memory)
    workers = plan["workers"]
    compile_threads = args.compile_threads or max(1, plan["compile_cores"] // workers)
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = str(compile_threads)
    args.out.mkdir(parents=True, exist_ok=True)
    section: dict[str, Any] = {"priorities": dict(PRIORITIES), "plan": [s.id for s in specs]}
    writer = DatasetWriter(args.out / f"layer{args.suffix}.json", {"sections": {"layer": section}})

    def started() -> None:  # runs while the workers import torch
        writer.meta = {**collect_meta(_command_line(argv)), "sections": {"layer": section}}
        section["gpu_state_before"] = gpu_state()
        writer.flush()

    section.update(
        run_sweep(
            writer,
            specs,
            workers=workers,
            budget_s=plan["budget_s"],
            deadline_s=plan["deadline_s"],
            compile_threads=compile_threads,
            gpu_mem_bytes=gpu_mem_bytes,
            warmup_steps=args.warmup_steps,
            timed_steps=args.timed_steps,
            profile_steps=args.profile_steps,
            start=plan["t_start"],
            on_started=started,
            eta_check=not args.quick,  # the smoke test starts both configs; the deadline still holds
            quiet=args.quiet,
            compile_mode=args.compile_mode,
            log=_log,
        )
    )
    section["gpu_state_after"] = gpu_state()
    writer.flush()
    _log(
        f"layer: {len(section['done'])} measured, {len(section['errors'])} failed, "
        f"{len(section['skipped']) + len(section['not_started'])} not run, {section['seconds_total']:.0f} s "
        f"-> {writer.path}"
    )
    print(format_table(writer.records), flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m perfmodel.bench.layer {plan,run,table}``: the exit code (0: done)."""
    t_start = time.monotonic()  # the budget and the deadline count from here
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if args.command == "table":
        return _table(args.out)
    budget_s = args.budget_s if args.budget_s is not None else (30.0 if args.quick else 500.0)
    deadline_s = args.deadline_s if args.deadline_s is not None else (58.0 if args.quick else 550.0)
    specs = _specs(args)
    dry = args.command == "plan" or args.dry_run
    # a plan is made on a laptop for the GPU machine: estimate for its 16 cores unless told otherwise
    cpus = list(range(args.cpus)) if args.cpus else list(range(16)) if dry else _available_cpus()
    workers = max(1, min(args.workers or default_workers(len(cpus)), len(specs) or 1))
    compile_cores = len(_cpu_split(cpus)[1])
    if dry:
        print(f"(estimates for {len(cpus)} CPU cores)")
        print(
            plan_text(
                specs,
                workers=workers,
                compile_cores=compile_cores,
                budget_s=budget_s,
                deadline_s=deadline_s,
                eta_check=not args.quick,
            )
        )
        return 0
    if args.out is None:
        raise SystemExit("run needs --out DIR")
    if not specs:
        print("layer: no configs selected")
        return 0
    plan = {
        "t_start": t_start,
        "budget_s": budget_s,
        "deadline_s": deadline_s,
        "workers": workers,
        "compile_cores": compile_cores,
    }
    return _run(args, argv, specs, plan)
