"""Fit the cluster model's own parameter (:class:`perfmodel.train.TrainParams`) on measured training steps.

The decoder layers are priced by the step model (fitted on its own sweep); what is left of a measured
one-GPU FSDP2 step is the optimizer step and FSDP2's copies, whose HBM bytes :mod:`perfmodel.train.compute`
counts. The fit is the median, over the bf16 steps, of::

    overhead_bw_fraction = overhead_bytes / (HBM bandwidth · (measured step - predicted layers))

bf16 steps only: the float8 steps are kept out and scored (``python benchmarks/validate.py train``). The shipped
``perfmodel/calibrations/h200_train.json`` is this fit on
``benchmarks/data/h200_2026-12-01/h200_train_fsdp_1gpu_2026-12-01.json``::

    python -m perfmodel.calibrate.train benchmarks/data/h200_2026-12-01/h200_train_fsdp_1gpu_2026-12-01.json
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .._files import load_json
from ..errors import CalibrationError, PerfModelError
from ..specs.gpu import get_gpu
from ..train.compute import SHIPPED_TRAIN_FILE, TrainParams, overhead_bytes

__all__ = ["fit_train_params", "layer_name", "main", "predict_record"]

_LAYERS = {"llama3_8b": "llama3-8b", "llama3_70b": "llama3-70b"}


def layer_name(record: Mapping[str, Any]) -> str:
    """The preset a ``train_step`` record's layer stack is built from."""
    try:
        return _LAYERS[record["layer"]]
    except KeyError:
        raise CalibrationError(
            f"train_step record {record.get('config')!r}: unknown layer {record.get('layer')!r} "
            f"(known: {', '.join(_LAYERS)})"
        ) from None


def predict_record(record: Mapping[str, Any], params: TrainParams, gpu: Any = "H200") -> Any:
    """The cluster model's estimate for one measured ``train_step`` record (a stack without embedding)."""
    from ..train import estimate

    return estimate(
        layer_name(record),
        gpu=gpu,
        n_gpus=record["world_size"],
        tp=record.get("tp_degree", 1),
        seq_len=record["seq"],
        batch_per_gpu=record["batch"],
        recipe=record["recipe"],
        float8_all_gather=bool(record.get("fp8_all_gather", False)),
        async_tp=bool(record.get("async_tp", False)),
        ac=record["ac"],
        layers=record["n_layers"],
        vocab=0,
        train_params=params,
    )


def fit_train_params(records: Iterable[Mapping[str, Any]], *, gpu: Any = "H200", source: str = "") -> TrainParams:
    """:class:`TrainParams` from one-GPU ``train_step`` records (bf16 ones; module doc)."""
    spec = get_gpu(gpu)
    recs = [r for r in records if r.get("op") == "train_step" and r.get("status", "ok") == "ok"]
    bf16 = [r for r in recs if r["recipe"] == "bf16" and r["world_size"] == 1]
    if not bf16:
        raise CalibrationError("no one-GPU bf16 train_step records to fit the optimizer/FSDP overhead on")
    unit = TrainParams(overhead_bw_fraction=1.0, source="unit")
    fractions = []
    for r in bf16:
        est = predict_record(r, unit, spec)
        rest = r["step_time_s"] - (est.step_s - est.compute_s["overhead"])
        if rest <= 0:
            raise CalibrationError(
                f"{r['config']}: the predicted layers ({float(est.step_s) * 1e3:.1f} ms) already exceed the measured "
                f"step ({r['step_time_s'] * 1e3:.1f} ms): nothing left for the optimizer step"
            )
        fractions.append(overhead_bytes(est.config) / (spec.mem_bw_bytes_per_s * rest))
    return TrainParams(
        overhead_bw_fraction=float(np.median(fractions)),
        source=source or f"fitted on {len(bf16)} one-GPU bf16 FSDP2 steps ({', '.join(r['config'] for r in bf16)})",
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m perfmodel.calibrate.train", description=__doc__.splitlines()[0])
    p.add_argument("data", type=Path, help="a train_step JSON file (perfmodel.bench.dist train)")
    p.add_argument("-o", "--output", type=Path, default=SHIPPED_TRAIN_FILE)
    p.add_argument("--force", action="store_true", help="replace the output file")
    args = p.parse_args(argv)
    try:
        return _run(args)
    except PerfModelError as exc:
        print(f"python -m perfmodel.calibrate.train: error: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    from .._files import check_output

    check_output(args.output, force=args.force, inputs=[args.data])  # before any work
    data = load_json(args.data, what="train_step data", error=CalibrationError)
    meta = data.get("meta", {}) if isinstance(data, dict) else {}
    gpu = meta.get("gpu_name", "H200")
    src = (
        f"measured: one-GPU FSDP2 steps (bf16; fp32 master weights, fused AdamW), {meta.get('gpu_name', '?')}, "
        f"{meta.get('date', '?')}, {args.data.name}"
    )
    params = fit_train_params(data.get("records", []), gpu=gpu, source=src)
    params.save(args.output, force=args.force)
    print(f"overhead_bw_fraction = {params.overhead_bw_fraction:.4f} -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
