"""Grouped-GEMM sweep: the MoE expert GEMMs (bf16 ``torch._grouped_mm``, fp8 e4m3 rowwise ``torch._scaled_grouped_mm``).

The command line of ``python -m perfmodel.bench.grouped_gemm``: the parser and :func:`main`, which runs one phase.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._device import require_cuda
from ..dataset import DatasetWriter, gpu_state
from ..session import log as _log
from ..session import positive as _positive
from ..session import warm_gpu as _warm_gpu
from .calls import _meta, _op_schemas
from .config import (
    BF16,
    EMPTY_FRACTION,
    FAMILIES,
    FP8,
    FWD_VARIANTS,
    G_SET,
    GPU_WARM_S,
    KERNELS_BUDGET_S,
    KERNELS_FILE,
    MAX_ROWS_PER_GROUP,
    MAX_TOTAL_ROWS,
    MOE_MODELS,
    NB_KERNELS_FILE,
    NB_TIME_FILE,
    PLAN_FILE,
    PROBE_CRASH_EXIT,
    PROBE_FILE,
    PROFILED_CALLS,
    REP_MS,
    SKEW_ALPHAS,
    TIME_BUDGET_S,
    TIME_FILE,
    WARMUP_MS,
    WGRAD_VARIANTS,
    GroupedGemmError,
)
from .items import GroupedItem, NeighbourItem
from .kernels import run_kernels
from .plan import PlanInfo, plan_items, plan_summary
from .probe import probe_cases, run_probes, unsafe_from_probes, wrong_from_probes
from .summary import load, summarize
from .timing import run_time

__all__ = ["build_parser", "main"]


def _families(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in FAMILIES]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"unknown families {bad!r}; valid: {', '.join(FAMILIES)}")
    return names


def _calls(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of calls >= 1, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of calls >= 1, got {text!r}")
    return v


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m perfmodel.bench.grouped_gemm", description=__doc__.split("\n\n")[0])
    p.add_argument("phase", choices=("plan", "probe", "time", "kernels", "summary"))
    p.add_argument("--out", type=Path, default=None, help="output folder (required for probe, time, kernels, summary)")
    p.add_argument("--seed", type=int, default=0, help="seed of the group sizes, random shapes and the run order")
    p.add_argument(
        "--budget-s",
        type=_positive("seconds"),
        default=None,
        help=f"time: plan and stop at this many seconds (default {TIME_BUDGET_S:.0f}); kernels: stop "
        f"starting shapes after it (default {KERNELS_BUDGET_S:.0f})",
    )
    p.add_argument("--warmup-ms", type=_positive("a time in ms"), default=WARMUP_MS, help="do_bench warmup, ms")
    p.add_argument("--rep-ms", type=_positive("a time in ms"), default=REP_MS, help="do_bench rep, ms")
    p.add_argument("--families", type=_families, default=None, help="only these families, e.g. deepseek_v3,random")
    p.add_argument("--quick", action="store_true", help="a smoke test: one cheap shape per family, 4 neighbours")
    p.add_argument("--no-neighbours", action="store_true", help="leave out the dense fp8 neighbour items")
    p.add_argument("--dry-run", action="store_true", help="print the plan and estimated times; no torch, no GPU")
    p.add_argument("--suffix", default="", help="added to the output file names")
    p.add_argument("--calls", type=_calls, default=PROFILED_CALLS, help="kernels: profiled calls per item")
    p.add_argument("--resume", action="store_true", help="probe: keep the probes already in the file, run the rest")
    p.add_argument(
        "--probe-file",
        type=Path,
        default=None,
        help="time/kernels: skip the items whose probe did not pass in this probe file",
    )
    p.add_argument(
        "--only-ids-from",
        type=Path,
        default=None,
        help="kernels: only the items (ids) of this time-phase file, so a cut time phase is matched",
    )
    return p


def _command(argv: Sequence[str]) -> str:
    return "python -m perfmodel.bench.grouped_gemm " + shlex.join(list(argv))


def _plan_meta(args: argparse.Namespace, info: PlanInfo) -> dict[str, Any]:
    return {
        "seed": args.seed,
        "quick": args.quick,
        "families": list(info.candidates),
        "shapes_candidates": info.candidates,
        "shapes_kept": info.kept,
        "plan_budget_s": info.budget_s,
        "plan_estimated_s": info.estimated_s,
        "g_set": list(G_SET),
        "max_rows_per_group": MAX_ROWS_PER_GROUP,
        "max_total_rows": MAX_TOTAL_ROWS,
        "skew_alphas": list(SKEW_ALPHAS),
        "empty_fraction": EMPTY_FRACTION,
        "fwd_variants": [list(v) for v in FWD_VARIANTS],
        "wgrad_variants": [list(v) for v in WGRAD_VARIANTS],
        "models": [dataclasses.asdict(m) for m in MOE_MODELS],
    }


def _write_plan(
    args: argparse.Namespace,
    argv: Sequence[str],
    items: Sequence[GroupedItem],
    neighbours: Sequence[NeighbourItem],
    info: PlanInfo,
) -> None:
    """``plan --out``: the items and neighbours as ``grouped_gemm_plan{suffix}.json``."""
    path = args.out / PLAN_FILE.format(suffix=args.suffix)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {
        "meta": {"command": _command(argv), **_plan_meta(args, info)},
        "items": [i.fields() for i in items],
        "neighbours": [n.fields() for n in neighbours],
    }
    path.write_text(json.dumps(body) + "\n")
    print(f"wrote {path}")


def _probe_sets(args: argparse.Namespace, section: dict[str, Any]) -> tuple[set[Any], set[Any]]:
    """The (unsafe, wrong) variant keys of ``--probe-file`` for the time and kernel phases, noted in ``section``."""
    unsafe: set[tuple[str, str, str, str]] = set()
    wrong: set[tuple[str, str, str, str]] = set()
    if args.probe_file is not None and args.phase in ("time", "kernels"):
        try:
            probe_records = load(args.probe_file).get("records", [])
            unsafe, wrong = unsafe_from_probes(probe_records), wrong_from_probes(probe_records)
        except GroupedGemmError as exc:
            _log(f"{args.phase}: no probe file ({exc}); nothing skipped")
        section["probe_file"] = args.probe_file.name
        section["unsafe_from_probes"] = sorted("_".join(u) for u in unsafe)
        section["wrong_from_probes"] = sorted("_".join(u) for u in wrong)
    return unsafe, wrong


def _probe_phase(args: argparse.Namespace, torch: Any, meta: dict[str, Any]) -> int:
    """``probe``: every probe case (after those done, with ``--resume``) into ``grouped_gemm_probe{suffix}.json``;
    the exit code (PROBE_CRASH_EXIT: the CUDA context died, the process leaves without torch's teardown)."""
    path = args.out / PROBE_FILE.format(suffix=args.suffix)
    w = DatasetWriter(path, meta)
    done: set[str] = set()
    if args.resume and path.exists():
        old = load(path)
        w.records = list(old.get("records", []))
        w.meta.setdefault("sections", old.get("meta", {}).get("sections", {}))
        for r in w.records:
            if r.get("status") == "started":  # the process died inside it
                r.update(status="crashed", error="the process ended during this probe (no Python exception)")
        done = {r["name"] for r in w.records if r.get("op") == "probe"}
    runs = w.meta.setdefault("sections", {}).setdefault("grouped_gemm_probe", {"runs": []})
    runs["op_schemas"] = _op_schemas(torch)
    run_info: dict[str, Any] = {"gpu_state_before": gpu_state(), "resumed_after": len(done)}
    runs["runs"].append(run_info)
    rc = run_probes(w, probe_cases(), done=done, tol={BF16: 1e-2, FP8: 2e-2}, log=_log)
    run_info["gpu_state_after"] = gpu_state()
    run_info["exit"] = rc
    w.flush()
    if rc == PROBE_CRASH_EXIT:  # the CUDA context is dead: leave without torch's teardown (it may abort or hang)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
    return rc


def _only_ids(
    args: argparse.Namespace, items: list[GroupedItem], neighbours: list[NeighbourItem], section: dict[str, Any]
) -> tuple[list[GroupedItem], list[NeighbourItem]]:
    """``kernels --only-ids-from``: the items (and neighbours) that the time phase's files hold."""
    keep = {r.get("id") for r in load(args.only_ids_from).get("records", [])}
    nb_path = args.only_ids_from.parent / NB_TIME_FILE.format(suffix=args.suffix)
    try:
        keep_nb = {r.get("id") for r in load(nb_path).get("records", [])}
    except GroupedGemmError:
        keep_nb = {n.id for n in neighbours}
    section["only_ids_from"] = args.only_ids_from.name
    return [i for i in items if i.id in keep], [n for n in neighbours if n.id in keep_nb]


def _writers(
    args: argparse.Namespace, meta: dict[str, Any], section: dict[str, Any], kind: str
) -> tuple[DatasetWriter, DatasetWriter]:
    """The grouped and the neighbour dataset of phase ``kind`` ("time" or "kernels"), ``section`` in both metas."""
    grouped_file, nb_file = (TIME_FILE, NB_TIME_FILE) if kind == "time" else (KERNELS_FILE, NB_KERNELS_FILE)
    w = DatasetWriter(args.out / grouped_file.format(suffix=args.suffix), meta)
    nw = DatasetWriter(args.out / nb_file.format(suffix=args.suffix), meta)
    w.meta["sections"] = {f"grouped_gemm_{kind}": section}
    nw.meta = {**meta, "sections": {f"grouped_gemm_{kind}": section}}
    return w, nw


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m perfmodel.bench.grouped_gemm {plan,probe,time,kernels,summary}``: the exit code (0: done)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if args.phase == "summary":
        if args.out is None:
            raise SystemExit("summary needs --out DIR (the folder with the datasets)")
        print(summarize(args.out, suffix=args.suffix, families=args.families))
        return 0
    budget = args.budget_s if args.budget_s is not None else TIME_BUDGET_S
    plan_budget: float | None = budget if args.phase in ("plan", "time") else TIME_BUDGET_S
    if args.phase == "kernels" and args.only_ids_from is not None:
        plan_budget = None  # the time file says which items ran
    items, neighbours, info = plan_items(
        seed=args.seed,
        budget_s=plan_budget,
        warmup_ms=args.warmup_ms,
        rep_ms=args.rep_ms,
        quick=args.quick,
        families=args.families,
    )
    if args.no_neighbours:
        neighbours = []
    text = plan_summary(items, neighbours, info, seed=args.seed, warmup_ms=args.warmup_ms, rep_ms=args.rep_ms)
    if args.phase == "plan" or args.dry_run:
        print(text)
        if args.phase == "probe":
            print(f"probes: {len(probe_cases())}")
        if args.phase == "plan" and args.out is not None and not args.dry_run:
            _write_plan(args, argv, items, neighbours, info)
        return 0
    if args.out is None:
        raise SystemExit(f"{args.phase} needs --out DIR")
    require_cuda()
    args.out.mkdir(parents=True, exist_ok=True)
    import torch

    meta = _meta(_command(argv))
    section: dict[str, Any] = {"gpu_state_before": gpu_state(), **_plan_meta(args, info)}
    unsafe, wrong = _probe_sets(args, section)
    if args.phase == "probe":
        return _probe_phase(args, torch, meta)
    if args.phase == "time":
        w, nw = _writers(args, meta, section, "time")
        _warm_gpu(torch, 0.0 if args.quick else GPU_WARM_S)
        section.update(
            run_time(
                w,
                nw,
                items,
                neighbours,
                budget_s=budget,
                warmup_ms=args.warmup_ms,
                rep_ms=args.rep_ms,
                unsafe=unsafe,
                wrong=wrong,
                log=_log,
            )
        )
    else:
        if args.only_ids_from is not None:
            items, neighbours = _only_ids(args, items, neighbours, section)
        w, nw = _writers(args, meta, section, "kernels")
        _warm_gpu(torch, 0.0 if args.quick else GPU_WARM_S)
        kb = KERNELS_BUDGET_S if args.budget_s is None else args.budget_s
        section.update(
            run_kernels(w, nw, items, neighbours, budget_s=kb, calls=args.calls, unsafe=unsafe, wrong=wrong, log=_log)
        )
    section["gpu_state_after"] = gpu_state()
    w.flush()
    nw.flush()
    _log(
        f"{args.phase}: {section['records']}/{len(items)} grouped, {section['neighbour_records']} neighbour records "
        f"in {section['seconds']:.0f} s -> {w.path}"
    )
    return 0
