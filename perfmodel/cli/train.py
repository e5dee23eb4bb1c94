"""``perfmodel train``: one training step of an FSDP2 (+TP, +EP) job — time, tokens/s, memory, communication — and
the Linear filter to paste where float8 pays."""

from __future__ import annotations

import argparse
from typing import Any

from .args import _add_calibration, _add_gpu, _add_time_model, _gpu, _positive_int
from .output import _print_json

__all__ = ["_cmd_train", "add_train_parser"]


def _cmd_train(args: argparse.Namespace) -> int:
    from .. import train

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
        compile=args.compile,
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


def add_train_parser(sub: Any) -> None:
    """``perfmodel train``'s subparser, added to ``sub``."""
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
    p.add_argument("--compile", action="store_true", help="layers and loss under torch.compile (changes the memory)")
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
