"""``perfmodel gpus`` (the hardware table) and ``perfmodel models`` (the model presets)."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from .output import _print_json, _table

__all__ = ["_cmd_gpus", "_cmd_models", "add_gpus_parser", "add_models_parser"]


def _cmd_gpus(args: argparse.Namespace) -> int:
    from ..models.registry import provenance
    from ..specs.gpu import GPUS

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


def _cmd_models(args: argparse.Namespace) -> int:
    from ..presets import PRESETS

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


def add_gpus_parser(sub: Any) -> None:
    """``perfmodel gpus``'s subparser, added to ``sub`` (argparse's subparsers action)."""
    p = sub.add_parser("gpus", help="the hardware table")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_gpus)


def add_models_parser(sub: Any) -> None:
    """``perfmodel models``'s subparser, added to ``sub``."""
    p = sub.add_parser("models", help="the model presets for `perfmodel float8 --model`")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_models)
