"""Low-level reading of Proton ``.hatchet`` JSON for :mod:`perfmodel.proton`: the file, metric names
and values. Split out to keep :mod:`perfmodel.proton` small; not a public module.
"""

from __future__ import annotations

import json
import math
import re
import sys
import threading
from typing import Any

from .errors import ProfileError

_NS_PER = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1}  # times are kept in ns and summed exactly
_IGNORE, _FLOPS, _BYTES, _COUNT, _TIME, _DEVICE_TYPE, _DEVICE_ID = range(7)
_TIME_KEY = re.compile(r"time \((s|ms|us|ns)\)")  # after lower-casing: 3.0 "Time (ns)", 3.1+ "time (ns)"
_FLOPS_KEY = re.compile(r"flops(\d*)")
_RENAMED = {"deviceid": "device_id", "devicetype": "device_type"}  # Triton 3.0 -> 3.1+
_MAX_JSON_DEPTH = 200_000  # JSON nesting levels (2 per tree level) we parse in a big-stack thread


def _fail(path: str, problem: str) -> ProfileError:
    return ProfileError(f"{path}: {problem}")


def _load_json(path: str) -> Any:
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise _fail(path, f"cannot read the profile ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(
            path,
            f"not UTF-8 JSON ({exc.reason} at byte {exc.start}); is it a "
            "msgpack or trace profile? Save with data='tree', format 'hatchet'",
        ) from None
    try:
        try:
            return json.loads(text)
        except RecursionError:
            return _loads_deep(text)
    except json.JSONDecodeError as exc:
        hint = " (the file looks truncated)" if exc.pos >= len(text.rstrip()) else ""
        raise _fail(path, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}{hint}") from None
    except RecursionError:
        raise _fail(
            path, f"frames nested deeper than {_MAX_JSON_DEPTH // 2} levels; not a profile this reader supports"
        ) from None


def _loads_deep(text: str) -> Any:
    """``json.loads`` for deep nesting: the C parser recurses, so run it on a 512 MiB stack."""
    out: dict[str, Any] = {}

    def work() -> None:
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, _MAX_JSON_DEPTH))
        try:
            out["value"] = json.loads(text)
        except BaseException as exc:  # re-raised in the caller's thread
            out["error"] = exc
        finally:
            sys.setrecursionlimit(old)

    previous = threading.stack_size(512 * 2**20)
    try:
        thread = threading.Thread(target=work, name="perfmodel-json-deep")
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def _classify(raw_key: str) -> tuple[int, Any]:
    """What a metric name means: (kind, width or time unit)."""
    key = raw_key.lower()
    key = _RENAMED.get(key, key)
    if (m := _FLOPS_KEY.fullmatch(key)) is not None:
        return _FLOPS, int(m.group(1) or 0)
    if (m := _TIME_KEY.fullmatch(key)) is not None:
        return _TIME, m.group(1)
    simple = {"bytes": _BYTES, "count": _COUNT, "device_type": _DEVICE_TYPE, "device_id": _DEVICE_ID}
    return simple.get(key, _IGNORE), None


def _number(value: Any, key: str, where: str) -> float:
    """A metric value as a float; lists (3.8 array metrics) are summed."""
    if type(value) in (int, float):
        total = value
    elif isinstance(value, list) and all(type(v) in (int, float) for v in value):
        total = sum(value)
    else:
        raise ProfileError(f"{where}: metric {key!r} is {value!r}, expected a number or a list of numbers")
    if not math.isfinite(total):
        raise ProfileError(f"{where}: metric {key!r} is {value!r}, expected a finite number")
    return total
