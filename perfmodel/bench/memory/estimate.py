"""The estimate's side of a memory record (pure): :func:`perfmodel.train.estimate`'s arguments and answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import PerfModelError
from .config import SHAPES

__all__ = ["estimate_kwargs", "estimate_record"]


def estimate_kwargs(record: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments of :func:`perfmodel.train.estimate` for a record (or ``MemConfig.to_dict()``): one
    H200, ``n_gpus=1`` (FSDP2 on a world of 1 is the estimate's own setup; ``amp`` and ``bf16`` runs are
    mapped to the same call, so their gap is what plain single-GPU training changes), the preset or its
    :class:`~perfmodel.presets.LayerShape`, layers, seq_len, batch, recipe, float8 all-gather, AC and vocab."""
    cfg = record.get("config", record)
    model: Any = cfg["model"]
    if model in SHAPES:
        from ...presets import LayerShape

        s = SHAPES[model]
        model = LayerShape(name=model, hidden=s["dim"], ffn=s["ffn"], heads=s["heads"], kv_heads=s["kv_heads"],
                           head_dim=s["head_dim"])  # fmt: skip
    return dict(
        model=model,
        gpu="H200",
        n_gpus=1,
        seq_len=int(cfg["seq"]),
        batch_per_gpu=int(cfg["batch"]),
        recipe=cfg["recipe"],
        float8_all_gather=bool(cfg["fp8_all_gather"]),
        ac=cfg["ac"],
        layers=int(cfg["layers"]),
        vocab=int(cfg["vocab"]),
    )


def estimate_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """What :func:`perfmodel.train.estimate` says for the record (peak bytes by part, fits, step seconds), or
    ``{"error": ...}`` when it refuses the configuration."""
    from ...train import estimate

    try:
        est = estimate(**estimate_kwargs(record))
    except PerfModelError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {
        "memory_bytes": float(est.memory_bytes),
        "memory": {k: float(v) for k, v in est.memory.items()},
        "fits": bool(est.fits),
        "step_s": float(est.step_s),
        "tokens_per_s_per_gpu": float(est.tokens_per_s_per_gpu),
    }
