"""Metadata and the command line."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..dataset import nvidia_smi as _smi
from .config import (
    ALIGN,
    ALL_ROUTINGS,
    EST_FIRST_FP8_S,
    MODEL_BY_NAME,
    RECIPES,
    REP_MS,
    ROUTINGS,
    SKEW_ALPHA,
    TOKENS,
    WARMUP_MS,
    WRITE_NAMES,
)
from .measure import measure_kernels, measure_pieces, measure_time
from .plan import BlockItem, _call_s, _do_bench_wall_s, estimate_item_s, estimate_memory_bytes, fits_memory, plan_items
from .results import Recorder, run_items
from .seed import run_seed, seed_batches
from .selftest import run_selftest

__all__ = [
    "build_parser",
    "collect_meta",
    "main",
]

# ---- metadata, CLI -------------------------------------------------------------------------------------------------


def collect_meta(command: str) -> dict[str, Any]:
    """Date, GPU name / UUID / driver (nvidia-smi), torch / triton / torchao versions, the exact command."""
    from importlib import metadata

    def ver(n: str) -> str | None:
        try:
            return metadata.version(n)
        except metadata.PackageNotFoundError:
            return None

    meta: dict[str, Any] = {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command": command,
        "python": sys.version.split()[0], "torch": ver("torch"), "triton": ver("triton"), "torchao": ver("torchao"),
        "nvidia_smi_L": _smi(["-L"]),
        "gpu": _smi(["--query-gpu=name,uuid,driver_version,clocks.max.sm,power.limit", "--format=csv,noheader"]),
        "warmup_ms": WARMUP_MS, "rep_ms": REP_MS, "align": dict(ALIGN), "skew_alpha": SKEW_ALPHA,
        "compiled": False, "env": {k: v for k, v in os.environ.items() if k.startswith(("TORCH", "TRITON"))},
    }  # fmt: skip
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        meta.update(gpu_name=p.name, sm_count=p.multi_processor_count, gpu_memory_bytes=p.total_memory,
                    cuda=torch.version.cuda)  # fmt: skip
    return meta


def _int_list(text: str) -> list[int]:
    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers like 4096,8192, got {text!r}") from None
    if not vals or min(vals) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return vals


def _name_list(valid: Iterable[str]) -> Callable[[str], list[str]]:
    valid = list(valid)

    def parse(text: str) -> list[str]:
        names = [v.strip() for v in text.split(",") if v.strip()]
        bad = [n for n in names if n not in valid]
        if bad or not names:
            raise argparse.ArgumentTypeError(f"unknown {bad or text!r}; valid: {', '.join(valid)}")
        return names

    return parse


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m perfmodel.bench.moe_block", description=__doc__.split("\n\n")[0])
    p.add_argument("phase", choices=["plan", "time", "kernels", "pieces", "seed", "selftest"])
    p.add_argument("--out", type=Path, default=Path("out"), help="output folder (created)")
    p.add_argument("--budget-s", type=float, default=120.0, help="stop starting items past this (seconds)")
    p.add_argument("--models", type=_name_list(MODEL_BY_NAME), default=None, help="comma list (default: all)")
    p.add_argument("--tokens", type=_int_list, default=list(TOKENS), help="tokens per step, priority order")
    p.add_argument("--routings", type=_name_list(ALL_ROUTINGS), default=list(ROUTINGS))
    p.add_argument("--recipes", type=_name_list(RECIPES), default=list(RECIPES))
    p.add_argument("--resume", action="store_true", help="keep the records already in the phase's file")
    p.add_argument("--min-reps", type=int, default=1, help="time: at least this many timed runs per do_bench "
                   "(default 1: do_bench's own count, one run for any call over 100 ms)")  # fmt: skip
    p.add_argument("--device", default=None, help="selftest: cpu or cuda (default: cuda if available)")
    p.add_argument("--tk-dir", type=Path, default=Path(".tk/triton_kernels"), help="seed: python/triton_kernels")
    p.add_argument("--seed-root", type=Path, default=None, help="seed: profile root (default OUT/seed_logs)")
    p.add_argument("--seed-dtypes", default="fp8-fp8,bf16-mx4", help="seed: x-w pairs")
    p.add_argument("--seed-batches", type=_int_list, default=None, help="seed: total tokens (default ~20)")
    return p


def _log(msg: str) -> None:
    print(msg, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry; exit 0 on success, 1 if a selftest failed, 2 on bad arguments."""
    args = build_parser().parse_args(argv)
    if not args.budget_s > 0:
        print("error: --budget-s must be > 0", file=sys.stderr)
        return 2
    if args.min_reps < 1:
        print(f"error: --min-reps must be an integer >= 1, got {args.min_reps}", file=sys.stderr)
        return 2
    command = "python -m perfmodel.bench.moe_block " + shlex.join(list(sys.argv[1:] if argv is None else argv))
    args.out.mkdir(parents=True, exist_ok=True)
    items = plan_items(args.models, args.tokens, args.routings)
    if args.phase == "plan":
        rows = [{"id": it.id, "est_time_s": estimate_item_s(it, args.recipes, min_reps=args.min_reps),
                 "est_kernels_s": estimate_item_s(it, args.recipes, phase="kernels"),
                 "est_memory_bytes": {r: estimate_memory_bytes(it, r) for r in args.recipes},
                 "fits": {r: fits_memory(it, r) for r in args.recipes}} for it in items]  # fmt: skip
        total, kept = 0.0, 0
        for r in rows:
            if total + r["est_time_s"] <= args.budget_s:
                total, kept = total + r["est_time_s"], kept + 1
        (args.out / WRITE_NAMES["plan"]).write_text(json.dumps({"items": rows, "budget_s": args.budget_s}))
        _log(f"{len(rows)} items; at --budget-s {args.budget_s:.0f}: about {kept} fit ({total:.0f} s estimated)")
        for r in rows[:kept]:
            _log(f"  {r['id']:<40} {r['est_time_s']:6.1f} s")
        return 0
    if args.phase == "selftest":
        res = run_selftest(args.device)
        Recorder(args.out / WRITE_NAMES["selftest"], collect_meta(command)).finish(**res)
        _log(json.dumps(res, indent=1, default=str)[:4000])
        return 0 if res["ok"] else 1
    if args.phase == "seed":
        return _main_seed(args, command)
    from .._device import require_cuda

    require_cuda()
    rec = Recorder(args.out / WRITE_NAMES[args.phase], collect_meta(command) | {"min_reps": args.min_reps},
                   resume=args.resume)  # fmt: skip
    if args.phase == "pieces":
        st = run_items(items, measure_pieces, budget_s=args.budget_s, recorder=rec,
                       estimate=lambda it: 3.0 + 14 * _do_bench_wall_s(_call_s(it, "bf16") / 9), log=_log)  # fmt: skip
    else:
        first: set[tuple[int, int]] = set()

        def est(it: BlockItem) -> float:  # the first fp8 item of each (dim, inter) pays Triton JIT + autotune
            key = (it.cfg.dim, it.cfg.inter)
            extra = EST_FIRST_FP8_S[args.phase] if "fp8_rowwise" in args.recipes and key not in first else 0.0
            return estimate_item_s(it, args.recipes, phase=args.phase, min_reps=args.min_reps) + extra

        def measure(it: BlockItem) -> list[dict[str, Any]]:
            first.add((it.cfg.dim, it.cfg.inter))
            if args.phase == "time":
                return measure_time(it, args.recipes, args.min_reps)
            return measure_kernels(it, args.recipes)

        st = run_items(items, measure, budget_s=args.budget_s, recorder=rec, estimate=est, log=_log)
    _log(f"{args.phase}: {st['ok_items']} ok, {st['error_items']} failed, {len(st['skipped_budget'])} not started "
         f"(budget), {st['elapsed_s']:.0f} s")  # fmt: skip
    if args.phase == "time":
        _print_table(rec.records)
    return 0


def _main_seed(args: argparse.Namespace, command: str) -> int:
    root = args.seed_root or (args.out / "seed_logs")
    batches = args.seed_batches or seed_batches()
    pairs = [tuple(p.split("-")) for p in args.seed_dtypes.split(",") if p]
    rec = Recorder(args.out / WRITE_NAMES["seed"], collect_meta(command))
    t0 = time.monotonic()
    for i, pair in enumerate(pairs):
        left = args.budget_s - (time.monotonic() - t0)
        share = left / (len(pairs) - i)
        try:
            st = run_seed(args.tk_dir, root, pair, batches, budget_s=share, log=_log)  # type: ignore[arg-type]
        except Exception as exc:
            st = {"dtypes": "-".join(pair), "error": f"{type(exc).__name__}: {str(exc)[:1000]}"}
        rec.add(st)
    rec.finish(elapsed_s=time.monotonic() - t0, root=str(root), batches=batches)
    return 0


def _print_table(records: Sequence[Mapping[str, Any]]) -> None:
    by: dict[str, dict[str, Mapping[str, Any]]] = {}
    for r in records:
        if "recipe" in r:
            by.setdefault(r["id"], {})[r["recipe"]] = r
    _log(f"{'item':<40} {'bf16 fb ms':>10} {'fp8 fb ms':>10} {'speedup':>8} {'fp8 err':>8}")
    for k, v in by.items():
        b, f = v.get("bf16", {}), v.get("fp8_rowwise", {})
        tb, tf = b.get("fwd_bwd_s"), f.get("fwd_bwd_s")
        sp = f"{tb / tf:8.2f}" if tb and tf else f"{'-':>8}"
        err = f.get("rel_err_vs_bf16")
        _log(f"{k:<40} {tb * 1e3 if tb else float('nan'):10.3f} {tf * 1e3 if tf else float('nan'):10.3f} {sp} "
             f"{err if err is not None else float('nan'):8.4f} {f.get('status', '')}")  # fmt: skip
