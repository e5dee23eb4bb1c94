"""Files and meta of the sweep: package versions, ``nvidia-smi``, the file meta block, the atomic writer."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["file_meta"]


def _versions() -> dict[str, Any]:
    """torch / triton / torchao as this process imported them (torchao: its import error, if any)."""
    import torch

    out: dict[str, Any] = {"torch": torch.__version__, "cuda": torch.version.cuda}
    for name in ("triton", "torchao"):
        try:
            out[name] = getattr(__import__(name), "__version__", "?")
        except Exception as exc:
            out[name] = f"import failed: {type(exc).__name__}: {exc}"[:300]
    return out


def _smi() -> str | None:
    try:
        q = "--query-gpu=name,uuid,driver_version,memory.total,clocks.max.sm,power.limit"
        p = subprocess.run(["nvidia-smi", q, "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
        return p.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def file_meta(command: str) -> dict[str, Any]:
    """Date (UTC), the command, GPU name / UUID / driver / memory (nvidia-smi), package versions (read from
    package metadata: this process never initialises CUDA, so the children have the GPU to themselves)."""
    import datetime
    import platform
    from importlib import metadata

    def ver(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": command,
        "script_command": os.environ.get("PERFMODEL_BENCH_COMMAND"),  # set by benchmarks/gpu_memory.sh
        "gpu": _smi(),
        "python": platform.python_version(),
        "torch": ver("torch"),
        "triton": ver("triton"),
        "torchao": ver("torchao"),
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
        "env": {k: v for k, v in os.environ.items() if k.startswith(("TORCHINDUCTOR_", "PYTORCH_", "NCCL_"))},
    }


class _Writer:
    """``{"schema", "meta", "records"}`` rewritten atomically after every record."""

    def __init__(self, path: Path, meta: dict[str, Any]) -> None:
        self.path, self.doc = path, {"schema": "perfmodel.bench.memory/1", "meta": meta, "records": []}

    def __call__(self, rec: dict[str, Any]) -> None:
        self.doc["records"].append(rec)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.doc, indent=1, default=str) + "\n")
        tmp.replace(self.path)
