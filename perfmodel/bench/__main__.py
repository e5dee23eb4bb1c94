"""``python -m perfmodel.bench {gemm,linear,memory,launch,fixtures,all,report} --out DIR [--quick] [--dry-run]``.

Writes one JSON dataset per section into DIR (``gemm.json``, ``linear.json``, ``memory.json``,
``launch.json``) and Proton fixtures into ``DIR/fixtures/``. ``--dry-run`` prints the plan and its
estimated time without touching torch or a GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import plan as P
from .dataset import DatasetWriter, command_line

__all__ = ["build_parser", "main"]

SECTIONS = ("gemm", "linear", "memory", "launch", "fixtures")


def _int_list(text: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers like 1024,4096, got {text!r}") from None


def _shape_list(text: str) -> list[tuple[int, int]]:
    out = []
    for item in text.split(","):
        try:
            k, n = item.lower().split("x")
            out.append((int(k), int(n)))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected KxN pairs like 4096x4096,8192x1024, got {item!r}") from None
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m perfmodel.bench", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "section",
        choices=[*SECTIONS, "all", "report"],
        help="what to measure; report: print a summary of the datasets in --out (no GPU)",
    )
    p.add_argument("--out", required=True, type=Path, help="output folder (created)")
    p.add_argument("--quick", action="store_true", help="a tiny version of each sweep (smoke test)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and estimated time; no GPU")
    p.add_argument("--seed", type=int, default=0, help="seed of the random shape family")
    p.add_argument("--suffix", default="", help="added to output file names, e.g. _static")
    g = p.add_argument_group("gemm")
    g.add_argument("--n-random", type=int, default=250, help="random held-out-style shapes (all formats)")
    g.add_argument("--random-only", action="store_true", help="only the random family (with --seed: a fresh set)")
    g.add_argument("--gemm-budget-s", type=float, default=240.0, help="stop starting shapes after this")
    g.add_argument("--warmup-ms", type=float, default=1.0)
    g.add_argument("--rep-ms", type=float, default=10.0, help="do_bench rep; raised to min-reps × kernel")
    g.add_argument("--min-reps", type=int, default=10)
    g.add_argument("--kernel-names", type=int, default=80, help="shapes to profile once for kernel names")
    lin = p.add_argument_group("linear")
    lin.add_argument("--linear-budget-s", type=float, default=300.0, help="stop starting groups after this")
    lin.add_argument(
        "--linear-dynamic",
        choices=("m", "auto", "static", "all"),
        default="m",
        help="m: mark M dynamic (one compile per K,N,recipe); auto: torch.compile default; "
        "static: dynamic=False (a compile per record); all: dynamic=True",
    )
    lin.add_argument("--linear-shapes", type=_shape_list, default=None, help="KxN pairs, e.g. 4096x4096")
    lin.add_argument("--linear-m", type=_int_list, default=None, help="token counts, e.g. 1024,4096")
    lin.add_argument(
        "--recipes", default=",".join(P.LINEAR_RECIPES), help=f"comma-separated, from {', '.join(P.LINEAR_RECIPES)}"
    )
    return p


def _recipes(text: str) -> list[str]:
    recipes = [r.strip() for r in text.split(",") if r.strip()]
    bad = [r for r in recipes if r not in P.LINEAR_RECIPES]
    if bad:
        raise SystemExit(f"unknown recipe(s) {', '.join(bad)}; valid: {', '.join(P.LINEAR_RECIPES)}")
    return recipes


def _plans(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "gemm": P.gemm_plan(quick=args.quick, seed=args.seed, n_random=args.n_random, random_only=args.random_only),
        "linear": P.linear_plan(
            quick=args.quick, shapes=args.linear_shapes, ms=args.linear_m, recipes=_recipes(args.recipes)
        ),
        "memory": P.memory_sizes(quick=args.quick),
    }


def dry_run(args: argparse.Namespace, sections: Sequence[str]) -> str:
    """The plan as text: counts per family/format and estimated seconds per section."""
    plans = _plans(args)
    lines = []
    if "gemm" in sections:
        specs = plans["gemm"]
        est = P.estimate_gemm_sweep_s(specs, warmup_ms=args.warmup_ms, rep_ms=args.rep_ms, min_reps=args.min_reps)
        fam = Counter(s.family for s in specs)
        lines.append(
            f"gemm: {len(specs)} shapes x {len(P.GEMM_FORMATS)} formats = "
            f"{len(specs) * len(P.GEMM_FORMATS)} records ({dict(fam)}); estimated {est:.0f} s "
            f"(budget {args.gemm_budget_s:.0f} s)"
        )
    if "linear" in sections:
        specs = plans["linear"]
        groups = len({(s.K, s.N, s.recipe) for s in specs})
        est = P.estimate_linear_sweep_s(specs)
        lines.append(
            f"linear: {len(specs)} records in {groups} compile groups (dynamic={args.linear_dynamic}); "
            f"estimated {est:.0f} s at 5 s/compile (budget {args.linear_budget_s:.0f} s)"
        )
    if "memory" in sections:
        sizes = plans["memory"]
        lines.append(f"memory: copies {len(sizes)} sizes {sizes[0]}..{sizes[-1]} B, casts 4 variants")
    if "launch" in sections:
        lines.append("launch: torch add and Triton 1-element kernels x 4 methods")
    if "fixtures" in sections:
        lines.append("fixtures: triton_matmul, vector_add, cublas_scope, float8_linear (.hatchet)")
    return "\n".join(lines)


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.section == "report":
        from .report import summarize

        print(summarize(args.out))
        return 0
    sections = list(SECTIONS) if args.section == "all" else [args.section]
    if args.dry_run:
        print(dry_run(args, sections))
        return 0
    from ._device import require_cuda
    from .dataset import collect_meta, gpu_state

    require_cuda()
    args.out.mkdir(parents=True, exist_ok=True)
    meta = collect_meta(command_line(sys.argv[1:] if argv is None else argv))
    plans = _plans(args)
    for section in sections:
        t0 = time.perf_counter()
        section_meta: dict[str, Any] = {"gpu_state_before": gpu_state()}
        if section == "gemm":
            from .kernels import check_gemm_accuracy, run_gemm

            w = DatasetWriter(args.out / f"gemm{args.suffix}.json", meta)
            section_meta["accuracy_rel_error_1024"] = check_gemm_accuracy()
            w.meta["sections"] = {"gemm": section_meta}
            section_meta.update(
                run_gemm(
                    w,
                    plans["gemm"],
                    warmup_ms=args.warmup_ms,
                    rep_ms=args.rep_ms,
                    min_reps=args.min_reps,
                    budget_s=args.gemm_budget_s,
                    kernel_name_specs=args.kernel_names,
                    log=_log,
                )
            )
        elif section == "linear":
            from .linear import run_linear

            w = DatasetWriter(args.out / f"linear{args.suffix}.json", meta)
            w.meta["sections"] = {"linear": section_meta}
            section_meta.update(
                run_linear(w, plans["linear"], dynamic=args.linear_dynamic, budget_s=args.linear_budget_s, log=_log)
            )
        elif section == "memory":
            from .kernels import run_cast, run_copy

            w = DatasetWriter(args.out / f"memory{args.suffix}.json", meta)
            w.meta["sections"] = {"memory": section_meta}
            run_copy(w, plans["memory"], log=_log)
            run_cast(
                w,
                [1 << 24, 1 << 26, 1 << 28] if args.quick else [1 << 22, 1 << 24, 1 << 26, 1 << 28, 1 << 30],
                log=_log,
            )
        elif section == "launch":
            from .kernels import run_launch

            w = DatasetWriter(args.out / f"launch{args.suffix}.json", meta)
            w.meta["sections"] = {"launch": section_meta}
            run_launch(w, log=_log)
        else:
            from .fixtures import write_fixtures

            fixtures = write_fixtures(args.out / "fixtures", log=_log)
            (args.out / "fixtures" / "fixtures.json").write_text(
                json.dumps({"meta": meta, "fixtures": fixtures}, indent=1) + "\n"
            )
            _log(f"fixtures: {time.perf_counter() - t0:.0f} s")
            continue
        section_meta["gpu_state_after"] = gpu_state()
        section_meta["seconds"] = time.perf_counter() - t0
        w.flush()
        _log(f"{section}: {len(w.records)} records in {section_meta['seconds']:.0f} s -> {w.path}")
    return 0


if __name__ == "__main__":
    from perfmodel.bench._device import run_cli

    raise SystemExit(run_cli(main))
