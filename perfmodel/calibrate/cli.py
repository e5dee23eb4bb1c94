"""Command line: ``perfmodel calibrate data.json [...] --gpu h200 -o h200.json``."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from .calibrator import Calibrator
from .data import load_dataset

__all__ = ["add_calibrate_cli", "residual_table"]


def residual_table(residuals: Mapping[str, Any]) -> str:
    """Residuals as an aligned text table (APE in %)."""
    lines = [f"{'group':<22} {'split':<8} {'n':>5} {'MdAPE %':>8} {'p90 %':>8} {'max %':>8}"]
    for group, splits in residuals.items():
        for split, st in splits.items():
            if st.get("n"):
                lines.append(
                    f"{group:<22} {split:<8} {st['n']:>5} {st['mdape']:>8.2f} {st['p90']:>8.2f} {st['max']:>8.1f}"
                )
    return "\n".join(lines)


def add_calibrate_cli(subparsers: Any) -> Any:
    """Register ``perfmodel calibrate`` on an argparse ``subparsers``."""
    p = subparsers.add_parser(
        "calibrate",
        help="fit the shape-aware model to a measured sweep (python -m perfmodel.bench)",
        description="Fit the calibrated GEMM/cast model of one GPU to datasets written by "
        "`python -m perfmodel.bench` and write the calibration JSON.",
    )
    p.add_argument("datasets", nargs="+", help="dataset JSON files (gemm, linear, memory, launch)")
    p.add_argument("--gpu", required=True, help="the GPU the data was measured on (its SM count matters)")
    p.add_argument(
        "-o",
        "--output",
        required=True,
        help="calibration JSON to write ('-': standard output, the report then goes to standard error); "
        "an existing file is replaced only with --force; never one of the datasets",
    )
    p.add_argument("--force", action="store_true", help="replace the output file if it exists")
    p.add_argument(
        "--heldout",
        type=float,
        default=0.3,
        help="share of shapes held out of the fit and reported separately (default 0.3; 0 = fit all)",
    )
    p.add_argument("--json", action="store_true", help="print the residuals as JSON")
    p.set_defaults(func=_run_cli)
    return p


def _run_cli(args: Any) -> int:
    from .._files import check_output, is_stdout

    data = load_dataset(args.datasets)
    check_output(args.output, force=args.force, inputs=args.datasets)  # before the fit, not after
    cal = Calibrator(gpu=args.gpu, heldout_fraction=args.heldout).fit(data)
    path = cal.model_.save(args.output, force=args.force, inputs=tuple(args.datasets))
    out = sys.stderr if is_stdout(args.output) else sys.stdout  # keep standard output pure JSON
    if args.json:
        print(json.dumps(cal.residuals_, indent=1), file=out)
    else:
        where = "standard output" if is_stdout(args.output) else str(path)
        print(f"calibrated {cal.gpu_.name} from {len(args.datasets)} dataset(s) -> {where}", file=out)
        print(
            f"GEMM time errors against kernel time (CUDA-event times minus the "
            f"{cal.model_.kernels.event_overhead_s * 1e6:.1f} us launch gap measured on this GPU):",
            file=out,
        )
        print(residual_table(cal.residuals_), file=out)
        if not is_stdout(args.output):
            print(
                f"use it: dataclasses.replace(perfmodel.get_gpu({cal.gpu_.name!r}), "
                f"calibration=perfmodel.calibrate.load_calibration({str(path)!r}))",
                file=out,
            )
    return 0
