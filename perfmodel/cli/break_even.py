"""``perfmodel break-even KxN ...``: the smallest token count from which a float8 recipe beats bf16, with the
range the measured speedup spread allows, and the speedups at a few token counts."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import PerfModelError
from .args import _add_calibration, _add_gpu, _add_time_model, _gpu, _positive_float, _positive_int
from .output import _error_bar_line, _heading, _print_json, _provenance_line, _table

__all__ = ["_cmd_break_even", "add_break_even_parser"]


def _cmd_break_even(args: argparse.Namespace) -> int:
    from .. import float8

    spec, recipe = _break_even_target(args)
    bar = float8.speedup_error_bar(spec, time_model=args.time_model)
    records = [_break_even_record(args, text, spec, recipe, bar) for text in args.shapes]
    if args.json:
        _print_json(records)
        return 0
    _print_break_even_table(args, records, spec, recipe, bar)
    return 0


def _break_even_target(args: argparse.Namespace) -> tuple[Any, str]:
    """The GPU spec and the float8 recipe's name the arguments name; a :class:`PerfModelError` for ``bf16``."""
    from .. import float8

    spec = _gpu(args)
    recipe = float8.get_recipe(args.recipe).name
    if recipe == "bf16":
        others = [r for r in float8.supported_recipes(spec) if r != "bf16"]
        raise PerfModelError(
            "--recipe bf16 is the baseline: pass a float8 recipe to compare with it"
            + (f" ({', '.join(others)})" if others else f"; {spec.name} has none (no float8 GEMMs)")
        )
    return spec, recipe


def _break_even_record(args: argparse.Namespace, text: str, spec: Any, recipe: str, bar: Any) -> dict[str, Any]:
    """The JSON record of one ``KxN`` shape: its break-even tokens, their p10-p90 range and speedups."""
    from .. import float8
    from ..models.registry import provenance
    from ..report import parse_shape

    k, n = parse_shape(text)
    ok = bool(float8.eligible(k, n))
    m = (
        float8.break_even_tokens(
            k, n, recipe, spec, min_speedup=args.min_speedup, time_model=args.time_model, max_tokens=args.max_tokens
        )
        if ok
        else None
    )
    s_at = {
        p: float(float8.speedup(p, k, n, recipe, spec, time_model=args.time_model)) if ok else None
        for p in (1024, 4096, 16384, 65536)
    }
    # the break-even the measured spread allows: true speedup = predicted x r, r in [p10, p90]
    spread = None
    if ok and bar is not None:
        spread = [
            float8.break_even_tokens(
                k,
                n,
                recipe,
                spec,
                min_speedup=args.min_speedup / r,
                time_model=args.time_model,
                max_tokens=args.max_tokens,
            )
            for r in (bar.high, bar.low)
        ]
    return {
        "K": k,
        "N": n,
        "recipe": recipe,
        "gpu": spec.name,
        "min_speedup": args.min_speedup,
        "eligible": ok,
        "ineligible_reason": "" if ok else f"K and N must be multiples of {float8.FP8_ALIGN}: keep bf16",
        "break_even_tokens": m,
        "break_even_tokens_p10_p90": spread,
        "speedup_at": s_at,
        "provenance": provenance(spec, args.time_model).to_dict(),
        "speedup_error_bar": None if bar is None else bar.to_dict(),
    }


def _print_break_even_table(
    args: argparse.Namespace, records: list[dict[str, Any]], spec: Any, recipe: str, bar: Any
) -> None:
    """The text output: a heading, the table of ``records``, the provenance and error-bar lines."""
    from .. import float8
    from ..models.registry import provenance

    print(
        f"Smallest tokens per step (M) from which {recipe} is >= {args.min_speedup:g}x faster than bf16 "
        f"(fwd+bwd of nn.Linear(K, N)) on {spec.name}, {_heading(provenance(spec, args.time_model))}:"
    )

    def when(r: dict[str, Any]) -> str:
        if not r["eligible"]:
            return f"no: not /{float8.FP8_ALIGN}"
        return str(r["break_even_tokens"]) if r["break_even_tokens"] is not None else f"never (<= {args.max_tokens})"

    def spread(r: dict[str, Any]) -> str:
        if r["break_even_tokens_p10_p90"] is None:
            return "-"
        lo, hi = ("never" if v is None else str(v) for v in r["break_even_tokens_p10_p90"])
        return "never" if lo == hi == "never" else f"{lo}-{hi}"  # even the bar's optimistic end never breaks even

    rows = [
        (r["K"], r["N"], when(r), spread(r), *("-" if v is None else f"{v:.2f}x" for v in r["speedup_at"].values()))
        for r in records
    ]
    head = ("K", "N", "break-even M", "p10-p90 M", "at M=1024", "4096", "16384", "65536")
    print(_table(head, rows, ">>>>>>>>"))
    print(_provenance_line(provenance(spec, args.time_model)))
    print(_error_bar_line(bar, "the p10-p90 M column: where the break-even lands within it"))


def add_break_even_parser(sub: Any) -> None:
    """``perfmodel break-even``'s subparser, added to ``sub``."""
    p = sub.add_parser("break-even", help="smallest token count from which a recipe beats bf16")
    p.add_argument("shapes", nargs="+", metavar="KxN", help="Linear shape(s), e.g. 4096x14336")
    p.add_argument("--recipe", default="tensorwise", help="float8 recipe (default tensorwise)")
    _add_gpu(p)
    p.add_argument("--min-speedup", type=_positive_float, default=1.0, help="required speedup (default 1)")
    p.add_argument("--max-tokens", type=_positive_int, default=1 << 24, help="search limit (default 2^24)")
    _add_time_model(p)
    _add_calibration(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_break_even)
