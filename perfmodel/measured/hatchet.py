"""Low-level reading of Proton ``.hatchet`` JSON for :mod:`perfmodel.measured.proton`: the file, metric names
and values. Split out to keep :mod:`perfmodel.measured.proton` small; not a public module.
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any

from .._files import PROFILE_MAX_BYTES, loads_json, read_bytes, short, short_repr
from ..errors import FileRefusedError, ProfileError

_NS_PER = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1}  # times are kept in ns and summed exactly
_IGNORE, _FLOPS, _BYTES, _COUNT, _TIME, _DEVICE_TYPE, _DEVICE_ID = range(7)  # device codes last (>= test)
_TIME_KEY = re.compile(r"time \((s|ms|us|ns)\)")  # after lower-casing: 3.0 "Time (ns)", 3.1+ "time (ns)"
_FLOPS_KEY = re.compile(r"flops(\d{0,4})")  # longer digit runs: not a width
_RENAMED = {"deviceid": "device_id", "devicetype": "device_type"}  # Triton 3.0 -> 3.1+
#: Largest metric value accepted (FLOP, bytes, ns, launches): far above any measurement, and small
#: enough that sums over millions of nodes stay finite floats.
_MAX_METRIC = 1e30


def _fail(path: str, problem: str) -> ProfileError:
    return ProfileError(f"{path}: {problem}")


def _load_json(path: str, max_bytes: int | None = None) -> Any:
    """The parsed JSON of a profile (any nesting depth; see :func:`perfmodel._files.loads_json`).

    Raises:
        FileRefusedError: not a regular file, or above the size limit (1 GiB by default).
        ProfileError: unreadable, not UTF-8, or not JSON (the message names the file).
    """
    try:
        raw = read_bytes(path, what="profile", limit_bytes=max_bytes, default_limit_bytes=PROFILE_MAX_BYTES)
    except FileRefusedError:
        raise
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
    del raw
    try:
        return loads_json(text)
    except json.JSONDecodeError as exc:
        hint = " (the file looks truncated)" if exc.pos >= len(text.rstrip()) else ""
        raise _fail(path, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}{hint}") from None
    except ValueError as exc:  # an integer longer than sys.get_int_max_str_digits()
        raise _fail(path, f"not a valid JSON profile ({short(exc)})") from None
    except MemoryError:
        raise _fail(path, f"out of memory parsing the profile ({os.path.getsize(path)} bytes)") from None


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


def _metric_value(value: Any) -> float:
    """A metric value as a number in [0, 1e30]; lists (3.8 array metrics) are summed.

    Raises:
        ValueError: the reason, worded for a message (the caller adds the file, node and metric).
    """
    if type(value) is int or type(value) is float:
        total = value
    elif type(value) is list and all(type(v) is int or type(v) is float for v in value):
        if any(not 0 <= v <= _MAX_METRIC for v in value):
            raise ValueError(f"is {short_repr(value)}, expected finite numbers >= 0")
        total = sum(value)
    else:
        raise ValueError(f"is {short_repr(value)}, expected a number or a list of numbers")
    if not 0 <= total <= _MAX_METRIC:
        what = "a finite number" if not math.isfinite(total) else "a number >= 0" if total < 0 else "at most 1e30"
        raise ValueError(f"is {short_repr(value)}, expected {what}")
    return total


def _node_where(names: list[str], parents: list[int], parent: int, name: str) -> str:
    """``frame 'a / b / name'`` for messages: up to 4 names from below ROOT, each and all shortened."""
    parts = [short(name, 60)]
    i = parent
    while i >= 0 and len(parts) < 4:
        if not (parents[i] < 0 and names[i] == "ROOT"):
            parts.append(short(names[i], 60))
        i = parents[i]
    prefix = "… / " if i >= 0 and not (parents[i] < 0 and names[i] == "ROOT") else ""
    return f"frame {short(prefix + ' / '.join(reversed(parts)))!r}"
