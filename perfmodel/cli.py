"""The ``perfmodel`` command line (also ``python -m perfmodel``).

Subcommands::

    perfmodel gpus [--json]
    perfmodel gemm M K N [--dtype bf16] [--gpu h100] [--scaling tensorwise] [--layout rc] [--timing kernel]
                   [--time-model roofline] [--calibration FIT.json] [--json]
    perfmodel float8 --gpu h100 (--tokens 8192 | --seq-len 8192 [--batch 1])
                     (--model llama3-8b | --shapes 4096x14336,14336x4096)
                     [--recipes tensorwise,rowwise] [--min-speedup 1.0] [--calibration FIT.json] [--kernels] [--json]
    perfmodel break-even KxN [KxN ...] [--recipe tensorwise] [--gpu h100] [--calibration FIT.json] [--json]
    perfmodel train --model llama3-70b --gpu h100 --gpus 256 [--tp 8] [--seq-len 8192] [--batch 1]
                    [--recipe rowwise] [--convert auto|w13,w2] [--float8-all-gather] [--async-tp] [--ac selective]
                    [--network NAME] [--json]
    perfmodel models [--json]

plus subcommands other modules register (``roofline`` from :mod:`perfmodel.measured.moe_bench`, ``calibrate``
from :mod:`perfmodel.calibrate`). Units at this edge: µs, ms, TFLOP/s, TB/s, GB.

Exit status: 0 ok; 2 a usage or input error (argparse's ``usage: ...`` or ``perfmodel: error: <message>``
naming the bad value, on stderr); 3 an internal error (a bug: one line ``perfmodel: internal error:
...``, never a traceback). Importing this module imports argparse and perfmodel's core only (numpy);
sympy, torch and matplotlib are never imported here.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from . import __version__
from .errors import FileRefusedError, PerfModelError, PerfModelWarning, require

__all__ = ["build_parser", "main"]

_TIME_MODELS = ("roofline", "original", "calibrated", "tiles")


def _positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a positive finite number, got {text!r}")
    return value


def _split(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def _list(flag: str, text: str | None, example: str) -> list[str] | None:
    """A comma-separated option: ``None`` when not given; an empty list is an error naming the flag."""
    if text is None:
        return None
    items = _split(text)
    if not items:
        raise PerfModelError(f"{flag} {text!r} is empty: pass e.g. {flag} {example}")
    return items


def _gpu(args: argparse.Namespace) -> Any:
    """``--gpu``, with ``--calibration FILE`` attached (``dataclasses.replace(gpu, calibration=...)``)."""
    from .specs.gpu import get_gpu

    spec = get_gpu(args.gpu)
    if args.calibration is None:
        return spec
    if args.time_model in ("roofline", "original", "tiles"):
        raise PerfModelError(
            f"--calibration uses your fit, --time-model {args.time_model} ignores it: pass one of them "
            "(or --time-model calibrated)"
        )
    from .models.calibrated import load_calibration  # only here: the CLI's import stays light

    return dataclasses.replace(spec, calibration=load_calibration(args.calibration))


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2))


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str) -> str:
    """Aligned text table; ``align`` has one ``<`` or ``>`` per column."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    fmt = "  ".join(f"{{:{a}{w}}}" for a, w in zip(align, widths, strict=True))
    lines = [fmt.format(*headers), "  ".join("-" * w for w in widths)]
    lines += [fmt.format(*r) for r in cells]
    return "\n".join(line.rstrip() for line in lines)


# ------------------------------------------------------------------------------------------------
# gpus
# ------------------------------------------------------------------------------------------------
def _provenance_line(prov: Any) -> str:
    """The one line printed under every answer: where it comes from and how sure it is."""
    line = f"provenance: {prov.line()}"
    if prov.kind == "roofline":
        line += (
            "\ncaveat: a roofline answer with spec-sheet peaks; where measured it overestimated float8 speedups "
            "(docs/validation.md). Calibrate this GPU: python -m perfmodel.bench all, then perfmodel calibrate."
        )
    return line


def _heading(prov: Any) -> str:
    """The provenance class and time model every header names (:func:`perfmodel.report.text.provenance_heading`)."""
    from .report.text import provenance_heading

    return provenance_heading(prov)


def _error_bar_line(bar: Any, where: str) -> str:
    """The line printed under an answer with its error bar (or that its class has none)."""
    if bar is None:
        return "error bar: not measured for this class of model"
    return f"error bar: {bar} — {where}"


def _cmd_gpus(args: argparse.Namespace) -> int:
    from .models.registry import provenance
    from .specs.gpu import GPUS

    def tflops(gpu, fmt):
        return gpu.peak_flops_per_s(fmt) * 1e-12 if gpu.supports(fmt) else None

    records = [
        {
            "name": g.name,
            "vendor": g.vendor,
            "arch": g.arch,
            "bf16_dense_tflops": tflops(g, "bf16"),
            "fp8_dense_tflops": tflops(g, "fp8_e4m3"),
            "mem_bw_tbps": g.mem_bw_bytes_per_s * 1e-12,
            "mem_gb": g.mem_bytes * 1e-9 if g.mem_bytes is not None else None,
            "num_sms": g.num_sms,
            "power_w": g.power_w,
            "calibrated": provenance(g).kind != "roofline",
            "provenance": provenance(g).to_dict(),
        }
        for g in GPUS.values()
    ]
    if args.json:
        _print_json(records)
        return 0

    def num(v, spec):
        return "-" if v is None else format(v, spec)

    rows = [
        (
            r["name"],
            r["arch"],
            num(r["bf16_dense_tflops"], ".0f"),
            num(r["fp8_dense_tflops"], ".0f"),
            num(r["mem_bw_tbps"], ".2f"),
            num(r["mem_gb"], ".0f"),
            r["num_sms"],
            num(r["power_w"], ".0f"),
            r["provenance"]["kind"],
        )
        for r in records
    ]
    print(
        _table(
            ("gpu", "arch", "bf16 TFLOP/s", "fp8 TFLOP/s", "TB/s", "memory GB", "SMs", "W", "time model"),
            rows,
            "<<>>>>>><",
        )
    )
    print(
        "Dense peaks (no 2:4 sparsity). Aliases and device names are accepted: --gpu h100, "
        "--gpu 'NVIDIA H100 80GB HBM3'.\n"
        "time model: measured (fitted on this GPU), transferred (a measured calibration of the same "
        "architecture, rescaled by this GPU's spec), estimated (nearest measured architecture + published "
        "GEMM and bandwidth figures), roofline (spec-sheet peaks only). Expected errors: docs/validation.md."
    )
    return 0


# ------------------------------------------------------------------------------------------------
# gemm
# ------------------------------------------------------------------------------------------------
def _cmd_gemm(args: argparse.Namespace) -> int:
    from .gemm import gemm_perfdata

    pd = gemm_perfdata(
        args.M,
        args.K,
        args.N,
        args.dtype,
        _gpu(args),
        args.scaling,
        time_model=args.time_model,
        layout=args.layout,
        timing=args.timing,
    )
    bar = pd.meta["error_bar"]
    record = {
        "M": args.M,
        "K": args.K,
        "N": args.N,
        "dtype": pd.dtype.name,
        "scaling": pd.meta["scaling"],
        "layout": args.layout,
        "timing": args.timing,
        "gpu": pd.gpu.name,
        "time_model": pd.meta["provenance"].time_model,
        "time_s": float(pd.time_s),
        "flops": float(pd.flops),
        "bytes": float(pd.bytes),
        "tflops": float(pd.tflops),
        "tbps": float(pd.tbps),
        "opint_flop_per_byte": float(pd.opint),
        "bound": str(pd.bound),
        "util": float(pd.util),
        "provenance": pd.meta["provenance"].to_dict(),
        "error_bar": None if bar is None else bar.to_dict(),
        "time_s_p10_p90": None if bar is None else [float(x) for x in bar.interval(pd.time_s)],
    }
    kern = _gemm_kernel_record(args, pd)
    record["kernel"] = kern
    record["alignment_note"] = _alignment_note(pd.meta["provenance"], args.M, args.K, args.N, args.layout, pd.dtype)
    if args.json:
        _print_json(record)
        return 0
    scaling = f", {record['scaling']} scaling" if record["scaling"] else ""
    layout = "" if args.layout == "rc" else f", layout {args.layout}"
    print(
        f"GEMM [{args.M}, {args.K}] @ [{args.K}, {args.N}] in {record['dtype']}{scaling}{layout} on {record['gpu']} "
        f"({_heading(pd.meta['provenance'])}, {args.timing} time):"
    )
    rng = "" if bar is None else "   ({:.2f}-{:.2f} us, p10-p90)".format(*(x * 1e6 for x in record["time_s_p10_p90"]))
    print(f"  time       {record['time_s'] * 1e6:12.2f} us{rng}")
    print(f"  compute    {record['tflops']:12.1f} TFLOP/s  (peak {pd.max_tflops:.0f})")
    print(f"  memory     {record['tbps']:12.3f} TB/s     (peak {pd.max_tbps:.2f})")
    print(f"  intensity  {record['opint_flop_per_byte']:12.1f} FLOP/B")
    print(f"  bound      {record['bound']:>12}")
    print(f"  util       {record['util']:12.1%}   of the roofline")
    if kern is not None:
        print(f"  kernel     {kern['kernel']:>12}   {kern['line']}")
        if kern["aligned_shape"] is not None:
            m, k, n = kern["aligned_shape"]
            t = kern["aligned_time_s"]
            ratio = record["time_s"] / t
            said = (
                f"{ratio:.2f}x faster, same model"
                if ratio >= 1.05
                else "this model prices the two alike: it does not tell cuBLAS's fallback kernels apart"
            )
            print(f"  aligned    {m} x {k} x {n} runs cuBLAS's Hopper kernels: {t * 1e6:.2f} us ({said})")
        print(f"kernel: {kern['kind']} — {kern['basis']}")
    if record["alignment_note"]:
        print(record["alignment_note"])
    print(_provenance_line(pd.meta["provenance"]))
    print(_error_bar_line(bar, "the time's p10-p90 range above"))
    return 0


def _alignment_note(prov: Any, M: int, K: int, N: int, layout: str, fmt: Any) -> str:
    """The estimate's note that the H200's misalignment rule is not modelled, where this 16-bit GEMM would fall
    under it (:func:`perfmodel.models.estimated.alignment_note`); ``""`` otherwise."""
    from .counting import layout_lead_dims
    from .models.estimated import alignment_note

    if fmt.bits < 16:
        return ""
    return alignment_note(prov, [(M, K, N, *layout_lead_dims(layout, M, K, N))])


def _gemm_kernel_record(args: argparse.Namespace, pd: Any) -> dict[str, Any] | None:
    """The kernel class cuBLAS runs for the GEMM (:func:`perfmodel.gemm_kernel`) and, where it is a fallback, the
    time of the nearest aligned shape under the same model; ``None`` off Hopper GPUs and for formats the rule does not
    cover (not measured)."""
    from .gemm import gemm_time_s
    from .models.kernel_choice import FORMATS, gemm_kernel

    if pd.gpu.arch != "90" or pd.dtype.name not in FORMATS:
        return None
    k = gemm_kernel(args.M, args.K, args.N, args.dtype, pd.gpu, args.scaling, layout=args.layout)
    aligned = None
    if k.aligned_shape is not None:
        aligned = float(
            gemm_time_s(*k.aligned_shape, args.dtype, pd.gpu, args.scaling, time_model=args.time_model,
                        layout=args.layout, timing=args.timing)
        )  # fmt: skip
    return {
        "kernel": k.kernel,
        "description": k.description,
        "reason": k.reason,
        "line": k.line(),
        "alignment": k.alignment,
        "alternative": k.alternative,
        "split_k": k.split_k,
        "aligned_shape": None if k.aligned_shape is None else list(k.aligned_shape),
        "aligned_time_s": aligned,
        "kind": k.kind,
        "basis": k.basis,
    }


# ------------------------------------------------------------------------------------------------
# float8
# ------------------------------------------------------------------------------------------------
def _cmd_float8(args: argparse.Namespace) -> int:
    from . import float8
    from .report import parse_shape, report

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
    opts = dict(
        cache_weight_cast=args.cache_weight_cast,
        fuse_input_with_prev=args.fuse_with_prev,
        fuse_grad_output_with_prev=args.fuse_with_prev,
        dynamic_shapes=args.dynamic_shapes,
        time_model=args.time_model,
    )
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
    from .presets import get_preset

    if args.model is None or get_preset(args.model).moe is None:
        return "", None
    from . import moe

    tm = args.time_model if args.time_model in (None, "calibrated", "roofline") else None
    recipes = tuple(rep.recipes)
    return moe.routed_experts_section(args.model, tokens=rep.tokens, gpu=spec, recipes=recipes, time_model=tm)


def _float8_tp(args: argparse.Namespace) -> int:
    """``perfmodel float8 --tp N``: the Linear filter of each recipe on the preset's per-rank shards; prints the
    recommended recipe's decisions and the filter to paste."""
    from . import float8
    from .models.registry import provenance

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
    opts = dict(
        cache_weight_cast=args.cache_weight_cast,
        fuse_input_with_prev=args.fuse_with_prev,
        fuse_grad_output_with_prev=args.fuse_with_prev,
        dynamic_shapes=args.dynamic_shapes,
        time_model=args.time_model,
    )
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
    from .presets import get_preset

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


def _cmd_models(args: argparse.Namespace) -> int:
    from .presets import PRESETS

    if args.json:
        _print_json(
            [
                {
                    "name": p.name,
                    "layers": p.layers,
                    "source": p.source,
                    "notes": p.notes,
                    "linears": [dataclasses.asdict(lin) for lin in p.linears],
                }
                for p in PRESETS.values()
            ]
        )
        return 0
    rows = [(p.name, p.layers, len(p.linears), p.source) for p in PRESETS.values()]
    print(_table(("preset", "layers", "linears", "source"), rows, "<>><"))
    return 0


# ------------------------------------------------------------------------------------------------
# break-even
# ------------------------------------------------------------------------------------------------
def _cmd_break_even(args: argparse.Namespace) -> int:
    from . import float8
    from .models.registry import provenance
    from .report import parse_shape

    spec = _gpu(args)
    recipe = float8.get_recipe(args.recipe).name
    if recipe == "bf16":
        others = [r for r in float8.supported_recipes(spec) if r != "bf16"]
        raise PerfModelError(
            "--recipe bf16 is the baseline: pass a float8 recipe to compare with it"
            + (f" ({', '.join(others)})" if others else f"; {spec.name} has none (no float8 GEMMs)")
        )
    bar = float8.speedup_error_bar(spec, time_model=args.time_model)
    records = []
    for text in args.shapes:
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
        records.append(
            {
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
        )
    if args.json:
        _print_json(records)
        return 0
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
        return f"{lo}-{hi}"

    rows = [
        (r["K"], r["N"], when(r), spread(r), *("-" if v is None else f"{v:.2f}x" for v in r["speedup_at"].values()))
        for r in records
    ]
    head = ("K", "N", "break-even M", "p10-p90 M", "at M=1024", "4096", "16384", "65536")
    print(_table(head, rows, ">>>>>>>>"))
    print(_provenance_line(provenance(spec, args.time_model)))
    print(_error_bar_line(bar, "the p10-p90 M column: where the break-even lands within it"))
    return 0


# ------------------------------------------------------------------------------------------------
# train
# ------------------------------------------------------------------------------------------------
def _cmd_train(args: argparse.Namespace) -> int:
    from . import train

    kw = dict(
        gpu=_gpu(args),
        n_gpus=args.gpus,
        tp=args.tp,
        seq_len=args.seq_len,
        batch_per_gpu=args.batch,
        ac=args.ac,
        layers=args.layers,
        network=args.network,
        dp_replicate=args.dp_replicate,
        time_model=args.time_model,
        ep=args.ep,
    )
    recipe = args.recipe
    convert = args.convert
    if convert is not None and convert.strip().lower() != "auto":
        convert = [c for c in convert.split(",") if c.strip()] or "none"
    est = train.estimate(
        args.model,
        recipe=recipe,
        convert=convert,
        float8_all_gather=args.float8_all_gather,
        async_tp=args.async_tp,
        **kw,
    )
    base = None
    if est.config.recipe.name != "bf16":
        base = train.estimate(args.model, recipe="bf16", async_tp=args.async_tp, **kw)
    code = est.filter_code()  # the filter for the Linears this estimate converts (convert="auto": its choice)
    if args.json:
        out = {"estimate": est.to_dict()}
        if base is not None:
            out["bf16"] = base.to_dict()
            out["speedup"] = float(base.step_s / est.step_s)
        if code is not None:
            out["filter"] = code
        _print_json(out)
        return 0
    head, _, rest = est.table(baseline=base).partition("\n")
    print(f"{head}; {est.provenance.kind} answer (provenance below)" + (f"\n{rest}" if rest else ""))
    if code is not None:
        conv = ", ".join(est.config.converted) or "no Linear"
        print(f"apply this choice ({est.config.recipe.name} on {conv} of every layer; the output layer stays bf16):")
        print(f"  torchao:    {code['python']}")
        print(f"  torchtitan: {code['torchtitan']}")
        print("              (filter_fqns lists the modules torchtitan SKIPS, matched by substring)")
        print(
            f"  (the other filter, perfmodel.float8.module_filter(..., tp={est.config.tp}), decides each Linear by its "
            f"own shard's speedup, without the layer's casts and communication: perfmodel float8 --model {args.model} "
            f"--tp {est.config.tp})"
        )
    return 0


# ------------------------------------------------------------------------------------------------
# parser
# ------------------------------------------------------------------------------------------------
def _add_gpu(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpu", default="H100", help="GPU name or alias (default: H100 = H100-SXM); see `perfmodel gpus`")


def _add_calibration(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--calibration",
        metavar="FIT.json",
        default=None,
        help="your own calibration (written by `perfmodel calibrate`) attached to --gpu; same architecture only",
    )


def _add_time_model(p: argparse.ArgumentParser, *flags: str) -> None:
    p.add_argument(
        *(flags or ("--time-model",)),
        dest="time_model",
        default=None,
        choices=_TIME_MODELS,
        help="time model (default: the GPU's calibration if it has one, else roofline)",
    )


#: The optional module each verb needs (pyproject extras, named by :func:`perfmodel.errors.require`): checked
#: before the verb does any work, so a missing one is an environment error (exit 2), not an internal error.
_VERB_NEEDS = {
    "roofline": ("matplotlib", "perfmodel roofline (the chart)"),
    "calibrate": ("scipy.optimize", "perfmodel calibrate (the least-squares fit)"),
}


def _check_environment(args: argparse.Namespace) -> None:
    """Before any work: the verb's optional dependency is installed, and its output folder can be written."""
    need = _VERB_NEEDS.get(getattr(args, "command", None) or "")
    if need:
        require(*need)
    out = getattr(args, "output", None)
    if out is None or str(out) == "":
        return
    import os
    import tempfile

    from ._files import is_stdout

    if is_stdout(out):
        return
    folder = os.path.dirname(os.path.abspath(os.fspath(out)))
    if not os.path.isdir(folder):
        return  # the verb's own check names the missing folder
    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".perfmodel-write-check-"):
            pass
    except OSError as exc:
        raise FileRefusedError(
            f"{out}: cannot write into the folder {folder!r} ({exc.strerror or exc}); nothing was computed. "
            "Choose a folder you can write, or '-' for standard output."
        ) from None


def build_parser(*, verb: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every subcommand (including the optional ones that are present).

    ``verb``: the subcommand about to run (``main`` passes its first argument); where it is one of the
    subcommands defined here or one module-owned one, the other module-owned parsers (``roofline``, ``profile``,
    ``calibrate``) and their imports are skipped: an answer does not pay for them (issue #35: < 150 ms)."""
    parser = argparse.ArgumentParser(
        prog="perfmodel",
        description="Predict GPU GEMM and float8-training time.",
        epilog="Main job: perfmodel float8 --gpu h100 --model llama3-8b --tokens 8192",
    )
    parser.add_argument("--version", action="version", version=f"perfmodel {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("gpus", help="the hardware table")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_gpus)

    p = sub.add_parser("gemm", help="predicted time of one GEMM [M, K] @ [K, N]")
    for dim in ("M", "K", "N"):
        p.add_argument(dim, type=_positive_int)
    p.add_argument("--dtype", default="bf16", help="number format (bf16, fp8, mxfp8, ...; default bf16)")
    _add_gpu(p)
    p.add_argument("--scaling", default=None, help="tensorwise | rowwise | blockwise | mx (low-precision formats)")
    p.add_argument(
        "--layout",
        default="rc",
        choices=("rr", "rc", "cr"),
        help="operand layout: rc = x @ W.T (a Linear's forward; default), rr = x @ W (its grad_input), "
        "cr = gO.T @ x (its grad_weight); fp8 runs rc only",
    )
    p.add_argument(
        "--timing",
        default="kernel",
        choices=("kernel", "event"),
        help="kernel = GPU kernel time, what profilers and a training step see (default); "
        "event = one call timed with CUDA events / triton.testing.do_bench (adds the launch gap)",
    )
    _add_time_model(p, "--time-model", "--model")
    _add_calibration(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_gemm)

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

    p = sub.add_parser("models", help="the model presets for `perfmodel float8 --model`")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_models)

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

    p = sub.add_parser("train", help="one training step of an FSDP2 (+TP) job: time, tokens/s, memory, comms")
    p.add_argument("--model", required=True, help="model preset (see `perfmodel models`), e.g. llama3-70b")
    _add_gpu(p)
    p.add_argument("--gpus", type=_positive_int, required=True, help="GPUs in the job")
    p.add_argument("--tp", type=_positive_int, default=1, help="tensor-parallel degree (default 1: FSDP only)")
    p.add_argument("--dp-replicate", type=_positive_int, default=1, help="HSDP replicas (default 1: plain FSDP)")
    p.add_argument("--seq-len", type=_positive_int, default=8192, help="sequence length (default 8192)")
    p.add_argument("--batch", type=_positive_int, default=1, help="sequences per data-parallel rank (default 1)")
    p.add_argument("--recipe", default="bf16", help="bf16 or a float8 recipe (tensorwise, rowwise, ...)")
    p.add_argument(
        "--convert",
        default=None,
        help="the layers' Linears in float8: comma-separated groups or names (w13,w2 or wq,wo), or auto "
        "(the step model's group choice); default every eligible Linear",
    )
    p.add_argument("--float8-all-gather", action="store_true", help="FSDP2 all-gathers weights in float8")
    p.add_argument("--async-tp", action="store_true", help="async TP (overlaps TP collectives with GEMMs)")
    p.add_argument(
        "--ac", default=None, help="activation checkpointing: none | selective | full (default selective; MoE: none)"
    )
    p.add_argument(
        "--ep", type=_positive_int, default=1, help="expert-parallel degree of an MoE model (out of the FSDP ranks)"
    )
    p.add_argument("--layers", type=_positive_int, default=None, help="override the preset's layer count")
    p.add_argument(
        "--network", default=None, help="inter-node network (see perfmodel.models.collectives; default per GPU)"
    )
    _add_time_model(p)
    _add_calibration(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_train)

    # -- subcommands owned by their modules: `perfmodel roofline`, `perfmodel calibrate` -------------
    if verb in sub.choices:  # a subcommand of this module runs: no module-owned parser is needed
        return parser
    every = verb not in ("roofline", "profile", "calibrate")  # else only the one about to run
    if every or verb == "roofline":
        from .measured.moe_bench import add_roofline_cli

        add_roofline_cli(sub)
    if every or verb == "profile":
        from .measured.summary import add_profile_cli

        add_profile_cli(sub)
    if every or verb == "calibrate":
        from .calibrate import add_calibrate_cli

        add_calibrate_cli(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status: 0 ok, 2 a usage or input error, 3 an internal error.

    Input errors print ``perfmodel: error: <message>`` (the message names the bad value and the valid
    choices); anything else is a bug and prints one line ``perfmodel: internal error: ...``: never a
    traceback.
    """
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        parser = build_parser(verb=argv[0] if argv else None)
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # argparse: --help, --version (0) and usage errors (2)
            return exc.code if isinstance(exc.code, int) else 2
        if getattr(args, "func", None) is None:
            parser.print_help(sys.stderr)
            return 2
        _check_environment(args)
        with warnings.catch_warnings():
            # the CLI prints each answer's provenance (and a caveat for roofline answers) itself
            warnings.simplefilter("ignore", PerfModelWarning)
            return int(args.func(args) or 0)
    except PerfModelError as exc:
        print(f"perfmodel: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `perfmodel gpus | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("perfmodel: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: one line, no traceback
        print(
            f"perfmodel: internal error: {type(exc).__name__}: {exc} (a bug in perfmodel {__version__}: please "
            "report it with the command line that shows it)",
            file=sys.stderr,
        )
        return 3


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
