"""Build synthetic Proton ``.hatchet`` profiles for tests, in the layout of each Triton version.

Layout facts (from Proton's TreeData JSON writer and the viewer, Triton 3.0 ... 3.8):
* top level ``[ROOT tree, device metadata]``; metadata may be absent or ``{}`` (3.8);
* kernel metrics: 3.0 ``Time (ns)``, ``Count``, ``DeviceId``, ``DeviceType``; 3.1+ lower case
  ``time (ns)``, ``count``, ``device_id``, ``device_type``; device ids are strings;
* 3.6 writes zero "hint" metrics on ROOT for every metric name it saw;
* 3.8 flexible metrics may be arrays.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

H200_INFO = {"arch": "90", "bus_width": 6016, "clock_rate": 1980000, "memory_clock_rate": 3201000, "num_sms": 132}
H200_DEVICES = {"CUDA": {"0": H200_INFO}}


def frame(name: str, metrics: dict[str, Any] | None = None, *children: dict[str, Any]) -> dict[str, Any]:
    """A scope (or any) frame."""
    return {"frame": {"name": name, "type": "function"}, "metrics": dict(metrics or {}), "children": list(children)}


def kernel(
    name: str,
    time_ns: float,
    *,
    count: int = 1,
    flops: dict[int, float] | None = None,
    nbytes: float | None = None,
    device_id: str = "0",
    device_type: str = "CUDA",
    version: str = "3.6",
    children: tuple[dict[str, Any], ...] = (),
) -> dict[str, Any]:
    """A kernel frame with the metric names of Triton ``version`` ("3.0" or later)."""
    if version == "3.0":
        m: dict[str, Any] = {"Time (ns)": time_ns, "Count": count, "DeviceId": device_id, "DeviceType": device_type}
    else:
        m = {"time (ns)": time_ns, "count": count, "device_id": device_id, "device_type": device_type}
    for width, value in (flops or {}).items():
        m[f"flops{width}" if width else "flops"] = value
    if nbytes is not None:
        m["bytes"] = nbytes
    return frame(name, m, *children)


def profile(
    *children: dict[str, Any],
    devices: dict[str, Any] | None = H200_DEVICES,
    hints: bool = True,
    omit_devices: bool = False,
) -> list[Any]:
    """``[ROOT, devices]``; ``hints`` adds 3.6's zero metrics on ROOT; ``omit_devices`` drops the
    metadata element altogether (``devices=None`` writes ``{}``)."""
    root_metrics = {"bytes": 0, "count": 0, "flops16": 0, "flops8": 0, "time (ns)": 0} if hints else {}
    out: list[Any] = [frame("ROOT", root_metrics, *children)]
    if not omit_devices:
        out.append(devices if devices is not None else {})
    return out


def write(path: Path, data: Any) -> Path:
    """Write ``data`` as JSON to ``path``; return the path."""
    path.write_text(json.dumps(data))
    return path


def big_profile(n_kernels: int = 100_000, *, seed: int = 0) -> tuple[list[Any], dict[str, float]]:
    """A deterministic profile of ``n_kernels`` kernel nodes under 3 levels of scopes, with
    launch-metadata frames; returns it and the exact totals over ``.*matmul.*`` leaves."""
    rng = random.Random(seed)
    totals = {"time_ns": 0, "flops": 0, "bytes": 0, "n": 0}
    layers = []
    per_scope = 100
    n_scopes = max(1, n_kernels // per_scope)
    for s in range(n_scopes):
        kernels = []
        for k in range(per_scope if s < n_scopes - 1 else n_kernels - per_scope * (n_scopes - 1)):
            is_mm = k % 2 == 0
            name = f"_matmul_ogs_NNT_bf16xbf16_{k % 7}" if is_mm else f"_reduce_{k % 5}"
            t = rng.randrange(1_000, 100_000)
            f = rng.randrange(1, 1 << 40)
            b = rng.randrange(1, 1 << 30)
            kernels.append(kernel(name, t, count=rng.randrange(1, 9), flops={16: f}, nbytes=b, device_id=str(s % 8)))
            if is_mm:
                totals["time_ns"] += t
                totals["flops"] += f
                totals["bytes"] += b
                totals["n"] += 1
        kernels.append(frame("__proton_launch_metadata", {}, kernel("_matmul_meta", 5, flops={16: 7})))
        layers.append(frame(f"layer_{s // 10}", {}, frame(f"block_{s}", {}, *kernels)))
    devices = {"CUDA": {str(i): H200_INFO for i in range(8)}}
    return profile(frame("model", {}, *layers), devices=devices), totals
