"""Dataset files of the GPU sweeps: a ``meta`` block and a list of ``records``, written as JSON.

Layout of every file::

    {"schema": "perfmodel.bench/1",
     "meta": {"date": "2026-11-30", "gpu_name": "NVIDIA H200", "sm_count": 132, "driver": "580.159.04",
              "cuda": "13.0", "torch": "2.11.0+cu130", "triton": "3.6.0", "torchao": "0.17.0",
              "command": "python -m perfmodel.bench gemm --out out", "sections": {...}},
     "records": [{"op": "gemm", "M": 4096, "K": 4096, "N": 4096, "dtype": "bf16", ...}, ...]}

Units are SI and in the field names (``time_s``, ``bytes``). No host names, user names or paths.
:func:`collect_meta` is the only function here that touches torch or the system, and only when called.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata as _metadata
from pathlib import Path
from typing import Any

__all__ = [
    "REQUIRED_FIELDS",
    "SCHEMA",
    "DatasetWriter",
    "collect_meta",
    "command_line",
    "nvidia_smi",
    "validate_dataset",
]

SCHEMA = "perfmodel.bench/1"

META_FIELDS = ("date", "gpu_name", "sm_count", "driver", "cuda", "torch", "triton", "torchao", "command")

# op -> fields every record of that op must carry (values may be null only where noted in README).
REQUIRED_FIELDS: Mapping[str, tuple[str, ...]] = {
    "gemm": ("M", "K", "N", "dtype", "scaling", "layout", "family", "time_s"),
    "linear": ("M", "K", "N", "recipe", "compiled", "step_kernel_time_s", "step_wall_time_s", "kernels"),
    "copy": ("bytes", "time_s"),
    "cast": ("bytes", "elements", "variant", "time_s"),
    "launch": ("kernel", "method", "time_s"),
    # perfmodel.bench.layer: one decoder layer fwd+bwd
    "layer": ("id", "recipe", "converted", "tokens", "step_time_s", "step_kernel_time_s", "kernels"),
    # perfmodel.bench.dist: collectives and multi-GPU training steps
    "collective": ("collective", "dtype", "bytes", "world_size", "time_s", "busbw_bytes_per_s"),
    "train_step": ("config", "status", "parallel", "recipe"),
}


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command as typed: ``python -m perfmodel.bench <args>`` (no paths to the interpreter)."""
    args = list(sys.argv[1:] if argv is None else argv)
    return "python -m perfmodel.bench " + shlex.join(args)


def _version(name: str) -> str | None:
    try:
        return _metadata.version(name)
    except _metadata.PackageNotFoundError:
        return None


def nvidia_smi(args: Sequence[str]) -> str | None:
    """``nvidia-smi`` run with ``args``: its stripped stdout, or ``None`` where it is missing, fails or prints
    nothing (20 s timeout). The one home of the bench's nvidia-smi calls."""
    try:
        out = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=20, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _nvidia_smi(query: str) -> str | None:
    return nvidia_smi([f"--query-gpu={query}", "--format=csv,noheader,nounits", "-i", "0"])


def collect_meta(command: str) -> dict[str, Any]:
    """Describe the machine and software: GPU name and SM count from torch, driver and clocks from
    nvidia-smi, library versions from package metadata. Imports torch; call it on the GPU machine."""
    import torch

    meta: dict[str, Any] = {
        "date": datetime.date.today().isoformat(),
        "command": command,
        "python": ".".join(map(str, sys.version_info[:3])),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "triton": _version("triton"),
        "torchao": _version("torchao"),
        "driver": _nvidia_smi("driver_version"),
        "gpu_name": None,
        "sm_count": None,
    }
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        meta.update(
            gpu_name=props.name,
            sm_count=props.multi_processor_count,
            gpu_memory_bytes=props.total_memory,
            l2_cache_bytes=getattr(props, "L2_cache_size", None),
            compute_capability=f"{props.major}.{props.minor}",
        )
        clocks = _nvidia_smi("clocks.max.sm,clocks.max.mem,power.limit")
        if clocks:
            sm, mem, power = (c.strip() for c in clocks.split(","))
            meta.update(max_sm_clock_mhz=_num(sm), max_mem_clock_mhz=_num(mem), power_limit_w=_num(power))
    meta.update(cpu_model=_cpu_model(), cpu_count=os.cpu_count())
    meta["env"] = {k: os.environ[k] for k in sorted(os.environ) if k.startswith(("TORCHINDUCTOR_", "TRITON_"))}
    return meta


def _cpu_model() -> str | None:
    """The CPU's model name from ``/proc/cpuinfo`` (Linux; ``None`` elsewhere): host-bound timings
    (launch overhead, Python) depend on it."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _num(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def gpu_state() -> dict[str, Any]:
    """SM clock, temperature and power now (nvidia-smi), to log before and after a section."""
    raw = _nvidia_smi("clocks.sm,clocks.mem,temperature.gpu,power.draw")
    if not raw:
        return {}
    sm, mem, temp, power = (c.strip() for c in raw.split(","))
    return {"sm_clock_mhz": _num(sm), "mem_clock_mhz": _num(mem), "temp_c": _num(temp), "power_w": _num(power)}


def _clean(value: Any) -> Any:
    """JSON-safe: NaN/inf become null (json.dump would write invalid JSON), tuples become lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


class DatasetWriter:
    """Collects records and rewrites the whole file after every :meth:`flush` (atomic rename), so a
    sweep killed by a timeout still leaves valid JSON with everything measured so far."""

    def __init__(self, path: str | os.PathLike[str], meta: Mapping[str, Any]) -> None:
        self.path = Path(path)
        self.meta = dict(meta)
        self.records: list[dict[str, Any]] = []

    def add(self, record: Mapping[str, Any], *, flush: bool = False) -> dict[str, Any]:
        """Append a copy of ``record`` and return the stored copy (edit that one to amend it)."""
        if "op" not in record:
            raise ValueError(f"record has no 'op' field: {dict(record)!r}")
        stored = dict(record)
        self.records.append(stored)
        if flush:
            self.flush()
        return stored

    def flush(self) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = _clean({"schema": SCHEMA, "meta": self.meta, "records": self.records})
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
        tmp.replace(self.path)
        return self.path


def validate_dataset(data: Mapping[str, Any]) -> list[str]:
    """Problems found in a dataset (empty list: valid). Checks the schema tag, the meta fields and
    each record's required fields, and that times are positive numbers."""
    problems = []
    if data.get("schema") != SCHEMA:
        problems.append(f"schema is {data.get('schema')!r}, expected {SCHEMA!r}")
    meta = data.get("meta")
    if not isinstance(meta, Mapping):
        return [*problems, "meta block missing"]
    problems += [f"meta.{k} missing" for k in META_FIELDS if k not in meta]
    records = data.get("records")
    if not isinstance(records, list):
        return [*problems, "records list missing"]
    for i, rec in enumerate(records):
        op = rec.get("op")
        if op not in REQUIRED_FIELDS:
            problems.append(f"records[{i}].op is {op!r}; valid: {', '.join(REQUIRED_FIELDS)}")
            continue
        problems += [f"records[{i}] ({op}) lacks {f!r}" for f in REQUIRED_FIELDS[op] if f not in rec]
        if rec.get("errors"):  # a failed config: its times are null by design
            continue
        for f in ("time_s", "step_kernel_time_s"):
            if f in rec and not (isinstance(rec[f], (int, float)) and rec[f] > 0):
                problems.append(f"records[{i}].{f} must be a positive number, got {rec[f]!r}")
    return problems
