"""``perfmodel float8``: which Linear layers to train in float8 — the decision table of a preset or of shapes, the
routed experts of an MoE preset, the per-kernel breakdown (``--kernels``) and the per-shard filter (``--tp N``)."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from ..errors import PerfModelError
from .args import _add_calibration, _add_gpu, _add_time_model, _gpu, _list, _positive_float, _positive_int
from .output import _heading, _print_json, _provenance_line

__all__ = ["_cmd_float8", "_float8_tp", "_kernels_dict", "_routed_experts", "add_float8_parser"]


def _linear_options(args: argparse.Namespace) -> dict[str, Any]:
    """The Linear pricing options the float8 verb passes on (cast caching, fusion, dynamic shapes, time model)."""
    return dict(
        cache_weight_cast=args.cache_weight_cast,
        fuse_input_with_prev=args.fuse_with_prev,
        fuse_grad_output_with_prev=args.fuse_with_prev,
        dynamic_shapes=args.dynamic_shapes,
        time_model=args.time_model,
    )


def _cmd_float8(args: argparse.Namespace) -> int:
    from .. import float8
    from ..report import parse_shape, report

    if args.model is not None and args.shapes is not None:
        raise PerfModelError("pass either --model or --shapes, not both")
    if args.model is None and args.shapes is None:
        raise PerfModelError("pass --model PRESET (see `perfmodel models`) or --shapes KxN[,KxN...]")
    if args.batch != 1 and args.seq_len is None:
        raise PerfModelError(
            f"--batch {args.batch} needs --seq-len (tokens per step = batch x seq-len); with --tokens give the tokens "
            "per step"
        )
    if args.tp > 1:
        return _float8_tp(args)
    shapes = _list("--shapes", args.shapes, "4096x14336,14336x4096")
    what: Any = args.model if shapes is None else [parse_shape(s) for s in shapes]
    opts = _linear_options(args)
    spec = _gpu(args)
    rep = report(
        what,
        tokens=args.tokens if args.tokens is not None or args.seq_len is not None else 8192,
        seq_len=args.seq_len,
        batch=args.batch,
        gpu=spec,
        recipes=_list("--recipes", args.recipes, "tensorwise,rowwise"),
        min_speedup=args.min_speedup,
        **opts,
    )
    if args.calibration is not None:
        rep = dataclasses.replace(rep, calibration_file=args.calibration)
    moe_text, moe_rows = _routed_experts(args, rep, spec)
    if args.json:
        out = rep.to_dict()
        if moe_rows is not None:
            out["routed_experts"] = moe_rows
        if args.kernels:
            out["kernels"] = [
                _kernels_dict(float8.linear_time(row.M, row.K, row.N, r, spec, **opts))
                for row in rep.rows
                for r in ("bf16", *rep.recipes)
            ]
        _print_json(out)
        return 0
    print(rep)  # ends with the provenance line
    if rep.provenance is not None and rep.provenance.kind == "roofline":
        print(_provenance_line(rep.provenance).splitlines()[-1])
    if moe_text:
        print(moe_text)
    if args.kernels:
        for row in rep.rows:
            for r in ("bf16", *rep.recipes):
                print()
                print(float8.linear_time(row.M, row.K, row.N, r, spec, **opts).table())
    return 0


def _routed_experts(args: argparse.Namespace, rep: Any, spec: Any) -> tuple[str, list[dict[str, Any]] | None]:
    """``perfmodel float8 --model MOE``: the routed experts priced as grouped GEMMs (perfmodel.moe), or ("", None)."""
    from ..presets import get_preset

    if args.model is None or get_preset(args.model).moe is None:
        return "", None
    from .. import moe

    tm = args.time_model if args.time_model in (None, "calibrated", "roofline") else None
    recipes = tuple(rep.recipes)
    return moe.routed_experts_section(args.model, tokens=rep.tokens, gpu=spec, recipes=recipes, time_model=tm)


def _float8_tp(args: argparse.Namespace) -> int:
    """``perfmodel float8 --tp N``: the Linear filter of each recipe on the preset's per-rank shards; prints the
    recommended recipe's decisions and the filter to paste."""
    from .. import float8
    from ..models.registry import provenance

    if args.model is None:
        raise PerfModelError(
            "--tp needs --model: a Linear's sharding (column- or row-parallel) is read from its name; for other "
            "models use perfmodel.float8.module_filter(gpu=..., tokens=..., tp=N, "
            "tp_plan={pattern: 'colwise' | 'rowwise'})"
        )
    spec = _gpu(args)
    tokens = args.tokens if args.tokens is not None else (args.seq_len * args.batch if args.seq_len else 8192)
    recipes = _list("--recipes", args.recipes, "tensorwise,rowwise") or [
        r for r in float8.supported_recipes(spec) if float8.RECIPES[r].torchao_name and r != "bf16"
    ]
    opts = _linear_options(args)
    by = float8.preset_filters(
        args.model, gpu=spec, tokens=tokens, recipes=recipes, tp=args.tp, min_speedup=args.min_speedup, **opts
    )
    best, (filt, saved) = next(iter(by.items()))
    if args.json:
        out = {r: {"saved_s": s, "decisions": [d.to_dict() for d in f.decisions]} for r, (f, s) in by.items()}
        _print_json({"tp": args.tp, "tokens": tokens, "gpu": spec.name, "recommendation": best, "recipes": out})
        return 0
    print(
        f"float8 training of {args.model}'s Linears on {spec.name} with TP {args.tp}: each rank runs the shard "
        f"(column-parallel K x N/{args.tp}, row-parallel K/{args.tp} x N; torchtitan's Llama plan), {tokens} tokens "
        f"per step, {_heading(provenance(spec, args.time_model))}, enable from {args.min_speedup:g}x"
    )
    per = ", ".join(f"{r} {s * 1e3:.2f} ms" for r, (_, s) in by.items())
    print(f"  saved per step, one rank (Linears where the recipe pays): {per}")
    print()
    print(filt.table())
    print()
    if saved <= 0:
        print(f"Recommendation: keep bf16 — no recipe pays on any shard at {tokens} tokens.")
    else:
        print(f"Recommended filter (the Linear filter, priced per shard; torchao module_filter_fn, recipe {best}):")
        per = {d.fqn: d.tokens for d in filt.decisions if d.tokens is not None and d.tokens != tokens}
        toks = f"{{{', '.join(f'{k!r}: {v}' for k, v in per.items())}, '*': {tokens}}}" if per else str(tokens)
        print(f"    perfmodel.float8.module_filter(gpu={spec.name!r}, tokens={toks}, recipe={best!r}, tp={args.tp})")
        if per:
            print("  (tokens per layer: routed experts see fewer rows; use your model's module names as the keys)")
        print(f"  kept in bf16: {', '.join(filt.skip_fqns()) or 'none'} (filt.skip_fqns() on your model lists them)")
    from ..presets import get_preset

    dense = get_preset(args.model).layer is not None
    print(
        "  The other filter, perfmodel.step.module_filter (layer groups), prices whole unsharded layers; "
        + (
            f"with TP use `perfmodel train --tp {args.tp} --convert auto`, which prices the sharded layer with its "
            "communication."
            if dense
            else f"it does not price {args.model}'s MoE layers."
        )
    )
    print(f"provenance: {provenance(spec, args.time_model).line()}")
    return 0


def _kernels_dict(lt: Any) -> dict[str, Any]:
    return {
        "recipe": lt.recipe.name,
        "M": int(lt.M),
        "K": int(lt.K),
        "N": int(lt.N),
        "total_s": float(lt.total_s),
        "gemms": [{"name": g.name, "dtype": g.dtype, "time_s": float(g.time_s)} for g in lt.gemms],
        "kernels": [
            {
                "name": k.kernel.name,
                "bytes": float(k.kernel.bytes),
                "launch_only": k.kernel.launch_only,
                "time_s": float(k.time_s),
            }
            for k in lt.kernels
        ],
    }


def add_float8_parser(sub: Any) -> None:
    """``perfmodel float8``'s subparser, added to ``sub``."""
    p = sub.add_parser("float8", help="which Linear layers to train in float8 (the decision table)")
    _add_gpu(p)
    p.add_argument(
        "--tp",
        type=_positive_int,
        default=1,
        help="tensor-parallel degree: price each Linear as one rank's shard (torchtitan's Llama plan; default 1)",
    )
    p.add_argument(
        "--tokens",
        type=_positive_int,
        default=None,
        help="tokens per step, batch x seq (default 8192, or batch x seq-len)",
    )
    p.add_argument(
        "--seq-len",
        type=_positive_int,
        default=None,
        help="sequence length: also price the whole decoder layer (attention, norms, fused casts; dense presets)",
    )
    p.add_argument(
        "--batch", type=_positive_int, default=1, help="sequences per step and GPU, with --seq-len (default 1)"
    )
    p.add_argument("--model", default=None, help="model preset, e.g. llama3-8b (see `perfmodel models`)")
    p.add_argument("--shapes", default=None, help="Linear shapes in_features x out_features: 4096x14336,14336x4096")
    p.add_argument("--recipes", default=None, help="comma-separated (default: the torchao recipes the GPU supports)")
    p.add_argument("--min-speedup", type=_positive_float, default=1.0, help="enable from this speedup (default 1)")
    p.add_argument("--cache-weight-cast", action="store_true", help="weights cast once per step (grad accumulation)")
    p.add_argument("--fuse-with-prev", action="store_true", help="amax of input/grad_output fused into the prev op")
    p.add_argument(
        "--dynamic-shapes",
        action="store_true",
        help="the step is compiled with a dynamic token dimension (slower casts on calibrated GPUs)",
    )
    _add_time_model(p)
    _add_calibration(p)
    p.add_argument("--kernels", action="store_true", help="also print the per-kernel breakdown of each shape")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_float8)
