"""The tree walk of :mod:`perfmodel.measured.proton`: a parsed ``.hatchet`` tree -> flat per-node columns.

Two walks give the same :class:`Tree` (the counting rules are :mod:`perfmodel.measured.proton`'s):

* :func:`_walk_fast` handles the usual profile a column at a time: it walks the tree without recursion,
  takes a scope's leaf children in one batch, then checks and converts each metric column of the nodes
  sharing one set of metric names with C-level ``map``/``min``/``max``/``sum``. It never raises a
  :class:`ProfileError`: on anything it does not cover plainly (a bad value, a list metric, a repeated
  metric kind, a malformed node) it gives up (``None``).
* :func:`_walk_exact` is the node-at-a-time walk, which words every error; it runs when the fast walk
  gives up, so that a bad file gets the same message, for the first bad node in file order.

Issue #35 (``benchmarks/bench_proton.py``, 100 000 kernels, one loaded 2-core machine, same run as
``json.load``): read + perfdata went from 2.35x to 1.91x ``json.load`` with the collector paused. Not a public module.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from itertools import compress, repeat
from operator import itemgetter, methodcaller, mul
from typing import Any

import numpy as np

from .._files import short, short_repr
from ..errors import ProfileError
from .hatchet import (
    _BYTES,
    _COUNT,
    _DEVICE_ID,
    _DEVICE_TYPE,
    _FLOPS,
    _IGNORE,
    _MAX_METRIC,
    _NS_PER,
    _TIME,
    _classify,
    _fail,
    _metric_value,
    _node_where,
)

__all__ = ["LAUNCH_METADATA_FRAME", "Tree", "walk"]

#: The frame Proton's launch hook opens while it computes ``launch_metadata`` (ignored).
LAUNCH_METADATA_FRAME = "__proton_launch_metadata"


@dataclasses.dataclass(slots=True)
class Tree:
    """Per-node columns in pre-order (parents precede children; launch-metadata subtrees left out).

    ``time`` is device time in ns (0 for scopes), ``flops`` a ``{width: FLOP}`` dict or ``None``, ``bytes``
    bytes; ``kernel_nodes`` the kernels' indices (ascending), and per kernel, in that order, its launch
    ``counts``, ``device_types`` and ``device_ids``.
    """

    names: list[str]
    parents: list[int]
    n_children: list[int]
    time: list[Any]
    flops: list[dict[int, Any] | None]
    bytes: list[Any]
    kernel_nodes: list[int]
    counts: list[int]
    device_types: list[str | None]
    device_ids: list[str | None]


def walk(path: str, roots: list[Any]) -> Tree:
    """The :class:`Tree` of ``roots`` (the file's tree roots).

    Raises:
        ProfileError: a malformed node or a bad metric value (the first in file order; message names the file).
    """
    try:
        tree = _walk_fast(roots)
    except (TypeError, KeyError, AttributeError, ValueError, OverflowError, ProfileError):
        tree = None
    return tree if tree is not None else _walk_exact(path, roots)


def _node_metrics(path: str, metrics: dict[str, Any], hint_root: bool, where: Any, key_kinds: dict) -> tuple:
    """One node's metrics -> ``(time_ns, is_kernel, flops, bytes, count, device_type, device_id)``; ``where()``
    describes the node for a message."""
    time_raw = 0
    is_kernel = False
    flops: dict[int, float] | None = None
    nbytes = 0
    count, dtype, did = 0, None, None
    for raw_key, value in metrics.items():
        kind = key_kinds.get(raw_key)
        if kind is None:
            kind = key_kinds[raw_key] = _classify(raw_key)
        code = kind[0]
        if code == _IGNORE:
            continue
        tv = type(value)
        if code >= _DEVICE_TYPE:  # device_type or device_id: a string (or a 3.0 integer)
            if tv is not str:
                if tv is not int:
                    raise _fail(
                        path,
                        f"{where()}: metric {short(raw_key, 60)!r} is {short_repr(value)}, "
                        "expected a string or an integer",
                    )
                value = str(value)
            if code == _DEVICE_TYPE:
                dtype = value
            else:
                did = value
            continue
        if (tv is not int and tv is not float) or not 0 <= value <= _MAX_METRIC:
            try:  # lists (3.8 array metrics), or a bad value
                value = _metric_value(value)
            except ValueError as exc:
                raise _fail(path, f"{where()}: metric {short(raw_key, 60)!r} {exc}") from None
            except OverflowError:  # an integer too large for a float (JSON has no size limit)
                raise _fail(
                    path,
                    f"{where()}: metric {short(raw_key, 60)!r} is {short_repr(value)}, expected at most 1e30",
                ) from None
        if code == _FLOPS:
            if hint_root and value == 0:
                continue
            if flops is None:
                flops = {}
            flops[kind[1]] = flops.get(kind[1], 0) + value
        elif code == _BYTES:
            nbytes = value
        elif code == _COUNT:
            if tv is not int and value != int(value):
                raise _fail(path, f"{where()}: metric {short(raw_key, 60)!r} is {value!r}, expected a whole number")
            count = int(value)
        elif code == _TIME:
            if hint_root and value == 0:
                continue
            if value <= 0:
                raise _fail(
                    path,
                    f"{where()}: metric {short(raw_key, 60)!r} is {value!r}, expected a device time > 0 "
                    "(Proton overflowed a counter?)",
                )
            if kind[1] != "ns":
                value = value * _NS_PER[kind[1]]
            time_raw = value
            is_kernel = True
    return time_raw, is_kernel, flops, nbytes, count, dtype, did


def _walk_exact(path: str, roots: list[Any]) -> Tree:
    """Iterative pre-order walk, a node at a time, every check worded (the reader before issue #35's speed-up)."""
    names: list[str] = []
    parents: list[int] = []
    n_children: list[int] = []
    node_time: list[Any] = []
    node_flops: list[dict[int, Any] | None] = []
    node_bytes: list[Any] = []
    kernel_nodes: list[int] = []
    key_kinds: dict[str, tuple[int, Any]] = {}  # metric name -> meaning, classified once
    extras: tuple[list[Any], list[Any], list[Any]] = ([], [], [])
    stack: list[tuple[Any, int, int]] = [(r, -1, 0) for r in reversed(roots)]
    while stack:
        node, parent, depth = stack.pop()
        if not isinstance(node, dict):
            raise _fail(path, f"a tree node is a {type(node).__name__}, expected an object")
        frame = node.get("frame")
        metrics = node.get("metrics")
        if not isinstance(frame, dict) or not isinstance(frame.get("name"), str):
            raise _fail(path, f"a node at depth {depth} has no 'frame' with a string 'name'")
        name = frame["name"]
        if name == LAUNCH_METADATA_FRAME:
            continue
        if not isinstance(metrics, dict):
            raise _fail(path, f"{_node_where(names, parents, parent, name)} has no 'metrics' object")
        children = node.get("children", [])
        if not isinstance(children, list):
            raise _fail(path, f"{_node_where(names, parents, parent, name)}: 'children' is not a list")
        time_raw, is_kernel, flops, nbytes, count, dtype, did = _node_metrics(
            path,
            metrics,
            parent < 0 and name == "ROOT",
            lambda: _node_where(names, parents, parent, name),  # noqa: B023  (called before the loop moves on)
            key_kinds,
        )
        index = len(names)
        names.append(name)
        parents.append(parent)
        n_children.append(0)
        if parent >= 0:
            n_children[parent] += 1
        node_time.append(time_raw)
        node_flops.append(flops)
        node_bytes.append(nbytes)
        if is_kernel:
            kernel_nodes.append(index)
            extras[0].append(count)
            extras[1].append(dtype)
            extras[2].append(did)
        for child in reversed(children):
            stack.append((child, index, depth + 1))
    return Tree(names, parents, n_children, node_time, node_flops, node_bytes, kernel_nodes, *extras)


_EMPTY: list[Any] = []  # never mutated: the default of a node without "children"
_frame, _name, _metrics = itemgetter("frame"), itemgetter("name"), itemgetter("metrics")
_kids = methodcaller("get", "children", _EMPTY)
#: children of one node taken as a batch when there are at least this many (fewer: one at a time)
_BATCH = 4


def _flatten(roots: list[Any]) -> tuple[list[Any], list[int], list[Any], list[Any]] | None:
    """Names, parents, metrics and children of every node in pre-order, unchecked but for their types
    (``None``: a node is malformed). Raises TypeError/KeyError on a malformed node."""
    names: list[Any] = []
    parents: list[int] = []
    metrics: list[Any] = []
    kids: list[Any] = []
    stack: list[tuple[Any, int]] = [(r, -1) for r in reversed(roots)]
    pop, push = stack.pop, stack.extend
    launch = LAUNCH_METADATA_FRAME
    while stack:
        node, parent = pop()
        name = node["frame"]["name"]
        if name == launch:
            continue
        index = len(names)
        names.append(name)
        parents.append(parent)
        metrics.append(node["metrics"])
        children = node.get("children", _EMPTY)
        kids.append(children)
        if not children:
            continue
        if len(children) >= _BATCH:  # a scope of leaves: its children in pre-order are its children in order
            batch_names = list(map(_name, map(_frame, children)))
            kept = children
            if launch in batch_names:
                keep = [n != launch for n in batch_names]
                kept, batch_names = list(compress(children, keep)), list(compress(batch_names, keep))
            batch_kids = list(map(_kids, kept))
            if not any(batch_kids):
                names += batch_names
                parents += repeat(index, len(kept))
                metrics += map(_metrics, kept)
                kids += batch_kids
                continue
        push(zip(reversed(children), repeat(index)))
    if set(map(type, names)) - {str} or set(map(type, metrics)) - {dict} or set(map(type, kids)) - {list}:
        return None
    return names, parents, metrics, kids


def _plan(key: tuple[str, ...], key_kinds: dict) -> list[tuple[str, int, Any]] | None:
    """The metrics of a set of metric names that count, ``(name, kind, width or unit)``; ``None`` when a kind
    repeats (the node-at-a-time rules then apply)."""
    plan, seen = [], set()
    for raw_key in key:
        kind = key_kinds.get(raw_key)
        if kind is None:
            kind = key_kinds[raw_key] = _classify(raw_key)
        if kind[0] == _IGNORE:
            continue
        tag = kind if kind[0] == _FLOPS else kind[0]
        if tag in seen:
            return None
        seen.add(tag)
        plan.append((raw_key, kind[0], kind[1]))
    return plan


def _columns(ms: list[dict[str, Any]], plan: list[tuple[str, int, Any]]) -> dict[Any, list[Any]] | None:
    """Checked, converted metric columns of nodes sharing one set of metric names: ``{kind: column}``
    (``(_FLOPS, width)`` per width); ``None`` when a value needs the node-at-a-time rules (a list, a bool, a
    value out of range, a float count, a zero FLOP float)."""
    out: dict[Any, list[Any]] = {}
    for raw_key, code, arg in plan:
        col = list(map(itemgetter(raw_key), ms))
        types = set(map(type, col))
        if code >= _DEVICE_TYPE:
            if not types <= {str}:
                if not types <= {str, int}:
                    return None
                col = list(map(str, col))
            out[code] = col
            continue
        if not types <= {int, float} or (code == _COUNT and types != {int}):
            return None
        lo, hi = min(col), max(col)
        if not (0 <= lo and hi <= _MAX_METRIC):
            return None
        total = sum(col)
        if total != total or (code == _TIME and lo <= 0) or (code == _FLOPS and lo == 0 and float in types):
            return None
        if code == _TIME and arg != "ns":
            col = list(map(mul, col, repeat(_NS_PER[arg])))
        out[(code, arg) if code == _FLOPS else code] = col
    return out


def _groups(keyt: list[Any]) -> dict[Any, Any]:
    """Node indices (ascending) per distinct metric-name tuple."""
    uniq = dict.fromkeys(keyt)
    if len(uniq) <= 1:
        return {k: range(len(keyt)) for k in uniq}
    code_of = {k: c for c, k in enumerate(uniq)}
    codes = np.fromiter(map(code_of.__getitem__, keyt), dtype=np.intp, count=len(keyt))
    order = np.argsort(codes, kind="stable")
    parts = np.split(order, np.cumsum(np.bincount(codes, minlength=len(uniq)))[:-1])
    return {k: part.tolist() for k, part in zip(uniq, parts, strict=True)}


def _walk_fast(roots: list[Any]) -> Tree | None:
    """:func:`_walk_exact`'s tree, a column at a time; ``None`` where it does not apply plainly (module doc)."""
    flat = _flatten(roots)
    if flat is None:
        return None
    names, parents, metrics, _ = flat
    n = len(names)
    keyt: list[Any] = list(map(tuple, metrics))
    for i in compress(range(n), map((-1).__eq__, parents)):
        if names[i] == "ROOT":
            keyt[i] = None  # a top-level ROOT (zero hint metrics dropped): node at a time
    node_time: list[Any] = [0] * n
    node_flops: list[Any] = [None] * n
    node_bytes: list[Any] = [0] * n
    kernels: list[tuple[Any, Any, Any, Any]] = []  # (nodes, counts, device types, device ids) per part
    key_kinds: dict[str, tuple[int, Any]] = {}
    for key, idx in _groups(keyt).items():
        ms = metrics if len(idx) == n else list(map(metrics.__getitem__, idx))
        plan = _plan(key, key_kinds) if key is not None else None
        cols = _columns(ms, plan) if plan is not None else None
        if cols is None:
            for i, m in zip(idx, ms, strict=True):
                t, is_kernel, f, b, c, dt, di = _node_metrics("", m, key is None, str, key_kinds)
                node_time[i], node_flops[i], node_bytes[i] = t, f, b
                if is_kernel:
                    kernels.append(([i], [c], [dt], [di]))
            continue
        widths = [k[1] for k in cols if type(k) is tuple]
        if widths:
            fcols = [cols[(_FLOPS, w)] for w in widths]
            if len(widths) == 1:
                w = widths[0]
                flops_col = [{w: v} for v in fcols[0]]
            else:
                flops_col = [dict(zip(widths, vals, strict=True)) for vals in zip(*fcols, strict=True)]
            _scatter(node_flops, idx, flops_col, n)
        if _BYTES in cols:
            _scatter(node_bytes, idx, cols[_BYTES], n)
        if _TIME in cols:
            _scatter(node_time, idx, cols[_TIME], n)
            m = len(idx)
            kernels.append(
                (idx, cols.get(_COUNT, [0] * m), cols.get(_DEVICE_TYPE, [None] * m), cols.get(_DEVICE_ID, [None] * m))
            )
    n_children = [0] * n
    for p, c in Counter(parents).items():
        if p >= 0:
            n_children[p] = c
    return Tree(names, parents, n_children, node_time, node_flops, node_bytes, *_merge(kernels))


def _merge(parts: list[tuple[Any, Any, Any, Any]]) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
    """The kernel parts' columns merged into ascending node order."""
    if len(parts) == 1:
        return tuple(list(c) for c in parts[0])  # type: ignore[return-value]
    cols = [[v for part in parts for v in part[j]] for j in range(4)]
    order = np.argsort(np.asarray(cols[0], dtype=np.intp), kind="stable").tolist()
    return tuple(list(map(c.__getitem__, order)) for c in cols)  # type: ignore[return-value]


def _scatter(out: list[Any], idx: Any, col: list[Any], n: int) -> None:
    """``out[idx[j]] = col[j]`` for every j (the whole list at once where ``idx`` is every node)."""
    if len(col) == n:
        out[:] = col
    else:
        any(map(out.__setitem__, idx, col))
