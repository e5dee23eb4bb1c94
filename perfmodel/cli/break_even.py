"""``perfmodel break-even KxN ... | --model PRESET``: the smallest token count from which a float8 recipe beats bf16,
with the range the measured speedup spread allows, and the speedups at a few token counts. With ``--model``: the
preset's Linears (its dense ones; an MoE preset's routed experts as one grouped-GEMM block, :mod:`perfmodel.moe`)."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import PerfModelError, UnsupportedFormatError
from .args import _add_calibration, _add_gpu, _add_time_model, _gpu, _positive_float, _positive_int
from .output import _error_bar_line, _heading, _print_json, _provenance_line, _table

__all__ = ["_cmd_break_even", "add_break_even_parser"]


def _cmd_break_even(args: argparse.Namespace) -> int:
    from .. import float8

    shapes, preset = _break_even_shapes(args)
    spec, recipe = _break_even_target(args)
    bar = float8.speedup_error_bar(spec, time_model=args.time_model)
    records = [_break_even_record(args, text, spec, recipe, bar) for text in shapes]
    experts = _experts_record(args, preset, spec) if preset is not None and preset.moe is not None else None
    if args.json:
        _print_json(records if args.model is None else {"model": preset.name, "linears": records,
                                                          "routed_experts": experts})  # fmt: skip
        return 0
    if records:
        _print_break_even_table(args, records, spec, recipe, bar, preset)
    if experts is not None:
        if records:
            print()
        _print_experts(args, experts)
    return 0


def _break_even_shapes(args: argparse.Namespace) -> tuple[list[str], Any]:
    """The ``KxN`` texts to search and the preset ``--model`` names (None without it): the shapes given, else the
    preset's distinct Linear shapes that every token reaches (an MoE preset's routed experts, which see a share of the
    tokens, are its block, priced apart). Neither: a :class:`PerfModelError` that says what to give."""
    if args.model is None:
        if not args.shapes:
            raise PerfModelError("give Linear shapes (KxN, e.g. 4096x14336) or --model PRESET (see `perfmodel models`)")
    elif args.shapes:
        raise PerfModelError("give either Linear shapes (KxN) or --model PRESET, not both")
    from ..presets import get_preset

    preset = None if args.model is None else get_preset(args.model)
    if (args.experts is not None or args.compiled) and (preset is None or preset.moe is None):
        raise PerfModelError(
            "--experts and --compiled price an MoE preset's routed experts: give --model with an MoE preset "
            "(see `perfmodel models`)"
        )
    if preset is None:
        return list(args.shapes), None
    seen: list[str] = []
    for lin in preset.linears:
        text = f"{lin.in_features}x{lin.out_features}"
        if lin.token_fraction == 1.0 and text not in seen:
            seen.append(text)
    return seen, preset


def _experts_record(args: argparse.Namespace, preset: Any, spec: Any) -> dict[str, Any]:
    """The JSON record of an MoE preset's routed-experts block: its break-even tokens per step (and per expert), the
    range the block's measured speedup error allows, and the speedups at a few token counts
    (:func:`perfmodel.moe.break_even_tokens`, :func:`perfmodel.moe.block_decision`)."""
    from .. import moe
    from ..moe.block import RECIPES

    recipe = args.recipe or "rowwise"
    m = preset.moe
    out: dict[str, Any] = {"preset": preset.name, "recipe": recipe, "gpu": spec.name,
                           "experts": args.experts or m.experts, "top_k": m.top_k, "min_speedup": args.min_speedup,
                           "compiled": args.compiled}  # fmt: skip
    if recipe not in RECIPES or recipe == "bf16":
        return {**out, "skipped": f"{recipe} is not a grouped-GEMM recipe of torchao's moe_training (rowwise, mxfp8)"}
    tm = args.time_model if args.time_model in (None, "calibrated", "roofline") else None
    kw: dict[str, Any] = {"gpu": spec, "recipe": recipe, "experts": args.experts, "compiled": args.compiled,
                          "time_model": tm}  # fmt: skip
    limit = min(args.max_tokens, 1 << 20)
    try:  # a recipe this GPU cannot run is skipped, as in `perfmodel float8 --model`; bad input is an error
        b = moe.break_even_tokens(preset, min_speedup=args.min_speedup, max_tokens=limit, **kw)
        at = {t: moe.block_decision(preset, tokens=t, min_speedup=args.min_speedup, **kw) for t in _EXPERT_TOKENS}
    except UnsupportedFormatError as e:
        return {**out, "skipped": str(e)}
    ref = moe.block_decision(preset, tokens=b.tokens or limit, min_speedup=args.min_speedup, **kw)
    spread = None
    if ref.speedup_p90 is not None:  # true = predicted / r with |r - 1| <= p90: predicted must reach ms * r
        spread = [
            moe.break_even_tokens(preset, min_speedup=args.min_speedup * r, max_tokens=limit, **kw).tokens
            for r in (1 - ref.speedup_p90, 1 + ref.speedup_p90)
        ]
    return {
        **out,
        "max_tokens": limit,
        "break_even_tokens": b.tokens,
        "tokens_per_expert": b.tokens_per_expert,
        "speedup": b.speedup,
        "monotone": b.monotone,
        "crossings": [list(c) for c in b.crossings],
        "note": b.note,
        "break_even_tokens_p90_range": spread,
        "speedup_p90": ref.speedup_p90,
        "speedup_at": {t: d.speedup for t, d in at.items()},
        "close_call_at": {t: d.close_call for t, d in at.items()},
        "provenance": ref.fp8.provenance,
    }


#: the token counts per step the routed-experts block's speedup is shown at
_EXPERT_TOKENS = (4096, 16384, 65536, 131072)


def _print_experts(args: argparse.Namespace, r: dict[str, Any]) -> None:
    """The text output of :func:`_experts_record`."""
    how = "torch.compile (an estimate)" if r["compiled"] else "eager, as torchao 0.17 runs it"
    print(
        f"Routed experts of {r['preset']} ({r['experts']} experts on this GPU, top-{r['top_k']}), one grouped-GEMM "
        f"block (perfmodel.moe): smallest tokens per step from which {r['recipe']} is >= {r['min_speedup']:g}x "
        f"faster than bf16 (fwd+bwd, {how}) on {r['gpu']}:"
    )
    if "skipped" in r:
        print(f"  skipped: {r['skipped']}; give --recipe rowwise")
        return
    t = r["break_even_tokens"]
    print(f"  break-even: {t} tokens per step ({r['tokens_per_expert']:.1f} rows per expert)" if t is not None
          else f"  break-even: never (<= {r['max_tokens']} tokens per step)")  # fmt: skip
    if not r["monotone"]:
        ups = ", ".join(f"{a}-{b}" for a, b in r["crossings"])
        print(f"  not monotone: above the break-even the speedup falls below {r['min_speedup']:g} again on the "
              f"doubling grid (upward crossings between {ups} tokens)")  # fmt: skip
    if r["break_even_tokens_p90_range"] is not None:
        lo, hi = (f"{v} tokens" if v is not None else f"never (<= {r['max_tokens']})"
                  for v in r["break_even_tokens_p90_range"])  # fmt: skip
        p90 = f"within the model's speedup error (p90 {r['speedup_p90'] * 100:.0f} %)"
        print(f"  {p90}: never either" if lo == hi and lo.startswith("never") else f"  {p90}: from {lo} to {hi}")
    cells = "  ".join(
        f"{t}: {s:.3f}x" + (" (close call)" if r["close_call_at"][t] else "") for t, s in r["speedup_at"].items()
    )
    print(f"  speedup by tokens per step: {cells}")
    rest = r["note"].split("; ", 1)[1] if "; " in r["note"] else ""  # its first clause is the break-even line above
    rest = rest.replace("not monotone: it falls below again above that on the doubling grid (see crossings); ", "")
    if rest:
        print(f"  note: {rest}")
    print(f"provenance: {r['provenance']}")


def _break_even_target(args: argparse.Namespace) -> tuple[Any, str]:
    """The GPU spec and the float8 recipe's name the arguments name; a :class:`PerfModelError` for ``bf16``."""
    from .. import float8

    spec = _gpu(args)
    recipe = float8.get_recipe(args.recipe or "tensorwise").name
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
    args: argparse.Namespace, records: list[dict[str, Any]], spec: Any, recipe: str, bar: Any, preset: Any = None
) -> None:
    """The text output: a heading, the table of ``records``, the provenance and error-bar lines."""
    from .. import float8
    from ..models.registry import provenance

    whose = "" if preset is None else f" of the Linears of {preset.name} that see every token"
    print(
        f"Smallest tokens per step (M) from which {recipe} is >= {args.min_speedup:g}x faster than bf16 "
        f"(fwd+bwd of nn.Linear(K, N)){whose} on {spec.name}, {_heading(provenance(spec, args.time_model))}:"
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
    p.add_argument("shapes", nargs="*", metavar="KxN", help="Linear shape(s), e.g. 4096x14336")
    p.add_argument("--model", default=None, metavar="PRESET", help="a preset's Linears instead of shapes (an MoE "
                   "preset's routed experts as one grouped-GEMM block); see `perfmodel models`")  # fmt: skip
    p.add_argument("--recipe", default=None, help="float8 recipe (default tensorwise; rowwise for routed experts)")
    p.add_argument("--experts", type=_positive_int, default=None, help="routed experts on this GPU (expert "
                   "parallelism; default the preset's)")  # fmt: skip
    p.add_argument("--compiled", action="store_true", help="routed experts under torch.compile (an estimate)")
    _add_gpu(p)
    p.add_argument("--min-speedup", type=_positive_float, default=1.0, help="required speedup (default 1)")
    p.add_argument("--max-tokens", type=_positive_int, default=1 << 24, help="search limit (default 2^24)")
    _add_time_model(p)
    _add_calibration(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_break_even)
