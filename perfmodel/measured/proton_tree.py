"""The tree walk of :mod:`perfmodel.measured.proton`: a parsed ``.hatchet`` tree -> flat columns.

Two walks give the same :class:`Tree` (the counting rules are :mod:`perfmodel.measured.proton`'s):

* :func:`_walk_fast` handles the usual profile a batch and a column at a time: it walks the tree without
  recursion; the children of a scope that are all leaves (launch-metadata frames aside) are taken in one
  batch (frames, names, metric dicts and metric values read with C-level ``map``/``itemgetter``, grouped
  by their set of metric names); each metric column is checked in chunks soon after it is read, while most
  of it is still in the CPU cache (``min``, ``sum``, ``str.join``; the type of each value is looked at only
  where a bool could hide, i.e. where the smallest value is 0 or 1). FLOPs stay per-width columns (no dict
  per kernel). It never raises a :class:`ProfileError`: what it does not cover plainly (a list metric, a
  repeated metric kind, a zero float FLOP count) it takes a node at a time by the exact rules, and on a bad
  value or a malformed node it gives up (``None``, or an exception :func:`walk` catches).
* :func:`_walk_exact` is the node-at-a-time walk, which words every error; it runs when the fast walk
  gives up, so that a bad file gets the same message, for the first bad node in file order.

Speed (issue #35, ``benchmarks/bench_proton.py``: read + perfdata, ``json.load`` of the same file timed in
the same run; a 2-core AMD EPYC VM, load average 0.5-2.3 while measuring, the machine shared at times
with another engineer's jobs): 100 000 kernels, best of 3, 0.56 -> 0.30 s (2.52x -> 1.32x the
collector-paused ``json.load``, 0.22 s: our part beyond it 0.34 -> 0.07 s); 1 000 000 kernels, one run
each, 5.8 -> 3.35-3.4 s (paused ``json.load`` 2.25-2.4 s: our part 3.5 -> 1.0-1.1 s, of which the walk
about 0.65 s, perfdata 0.1 s, the rest freeing memory and run-to-run noise). Under load the parse swings
most: one run read 4.19 s when the paused ``json.load`` alone took 3.2 s (our part 0.99 s). Not a public
module.
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_left
from itertools import chain, compress, count, repeat
from operator import is_not, itemgetter, methodcaller, mul
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

__all__ = ["LAUNCH_METADATA_FRAME", "Tree", "by_width", "walk"]

#: The frame Proton's launch hook opens while it computes ``launch_metadata`` (ignored).
LAUNCH_METADATA_FRAME = "__proton_launch_metadata"

FlopsDict = dict[int, Any]


@dataclasses.dataclass(slots=True)
class Tree:
    """A profile's tree as flat columns.

    Per node, in pre-order (parents precede children; launch-metadata subtrees left out): ``names``,
    ``parents`` (-1 for a root) and ``n_children``.

    Per kernel (a node with device time of its own), in ``kernel_nodes`` order (their node indices,
    ascending): ``kernel_names``, ``time`` (device time, ns), ``bytes``, launch ``counts``, ``device_types``
    and ``device_ids``, and the FLOPs in one of two forms:

    * ``flops_widths`` a tuple: ``flops[j]`` is the column of width ``flops_widths[j]``, ``None`` where a
      kernel has no such metric; each kernel's own widths come in ``flops_widths`` order (its metric order);
    * ``flops_widths`` ``None``: ``flops`` holds each kernel's ``{width: FLOP}`` dict, or ``None``.

    ``inner_kernels``: the positions, in kernel order, of the kernels with child frames (not leaves).

    ``scope_metrics``: every other node with a FLOP or bytes metric, ``node -> ({width: FLOP} or None,
    bytes)``; the nodes not in it have no FLOPs and 0 bytes.
    """

    names: list[str]
    parents: list[int]
    n_children: list[int]
    kernel_nodes: list[int]
    kernel_names: list[str]
    time: list[Any]
    bytes: list[Any]
    counts: list[int]
    device_types: list[str | None]
    device_ids: list[str | None]
    flops_widths: tuple[int, ...] | None
    flops: list[Any]
    inner_kernels: list[int]
    scope_metrics: dict[int, tuple[FlopsDict | None, Any]]

    def kernel_flops(self) -> list[FlopsDict | None]:
        """Each kernel's ``{width: FLOP}`` dict (``None``: no FLOP metric), keys in its metric order."""
        widths = self.flops_widths
        if widths is None:
            return self.flops
        if not widths:
            return [None] * len(self.kernel_nodes)
        if len(widths) == 1:
            w = widths[0]
            return [None if v is None else {w: v} for v in self.flops[0]]
        return [
            {w: v for w, v in zip(widths, vals, strict=True) if v is not None} or None
            for vals in zip(*self.flops, strict=True)
        ]

    def flops_by_width(self, hits: list[Any]) -> FlopsDict:
        """FLOPs per width over the kernels where ``hits`` is true: :func:`by_width` of their dicts."""
        widths = self.flops_widths
        if widths is None:
            return by_width(list(filter(None, compress(self.flops, hits))))
        if not any(hits):
            return {}
        try:  # every kernel hit has every width: the widths in their order
            return {w: sum(compress(col, hits)) for w, col in zip(widths, self.flops, strict=True)}
        except TypeError:  # None (a kernel without that width) among them
            pass
        first: dict[int, tuple[int, int]] = {}  # width -> (first hit kernel with it, rank in widths)
        picked: dict[int, list[Any]] = {}
        for rank, (w, col) in enumerate(zip(widths, self.flops, strict=True)):
            values = list(compress(col, hits))
            at = next(compress(count(), map(is_not, values, repeat(None))), None)
            if at is not None:
                first[w] = (at, rank)
                picked[w] = values
        # None (absent) and 0 drop out of the sums alike: adding an integer 0 changes neither a sum's value
        # nor its type, and this form never holds a zero float (the fast walk leaves those to the exact rules)
        return {w: sum(filter(None, picked[w])) for w in sorted(first, key=first.__getitem__)}


def by_width(with_flops: list[FlopsDict]) -> FlopsDict:
    """FLOPs per width over ``{width: FLOP}`` dicts: widths in order of first appearance, each sum in dict
    order (as a loop over the nodes would add them, so floats round the same)."""
    widths = dict.fromkeys(chain.from_iterable(with_flops))
    if len(widths) == 1:
        return {w: sum(map(itemgetter(w), with_flops)) for w in widths}
    return {w: sum(map(itemgetter(w), filter(methodcaller("__contains__", w), with_flops))) for w in widths}


def walk(path: str, roots: list[Any], *, json_values: bool = False) -> Tree:
    """The :class:`Tree` of ``roots`` (the file's tree roots).

    ``json_values``: the roots come from :func:`json.loads`, so every value is a dict, list, str, int,
    float, bool or ``None`` (no subclass, no other type): the fast walk then looks at the type of each value
    only where a bool could hide among the numbers. Left ``False``, it looks at every value's type.

    Raises:
        ProfileError: a malformed node or a bad metric value (the first in file order; message names the file).
    """
    try:
        tree = _walk_fast(roots, json_values=json_values)
    except (TypeError, KeyError, AttributeError, ValueError, OverflowError, IndexError, ProfileError):
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
    key_kinds: dict[str, tuple[int, Any]] = {}  # metric name -> meaning, classified once
    kernels: tuple[list[Any], ...] = ([], [], [], [], [], [], [], [])  # nodes, names, time, bytes, counts, ...
    scope_metrics: dict[int, tuple[FlopsDict | None, Any]] = {}
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
        time_raw, is_kernel, flops, nbytes, launches, dtype, did = _node_metrics(
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
        if is_kernel:
            for col, value in zip(kernels, (index, name, time_raw, nbytes, launches, dtype, did, flops), strict=True):
                col.append(value)
        elif _kept(flops, nbytes):
            scope_metrics[index] = (flops, nbytes)
        for child in reversed(children):
            stack.append((child, index, depth + 1))
    inner = [j for j, i in enumerate(kernels[0]) if n_children[i]]
    return Tree(names, parents, n_children, *kernels[:7], None, kernels[7], inner, scope_metrics)


def _kept(flops: FlopsDict | None, nbytes: Any) -> bool:
    """Whether a node that is no kernel needs a :attr:`Tree.scope_metrics` entry (not: no FLOPs, integer 0 bytes)."""
    return flops is not None or type(nbytes) is not int or nbytes != 0


# -- the fast walk ------------------------------------------------------------------------------------------
_EMPTY: list[Any] = []  # never mutated: the default of a node without "children"
_name = itemgetter("name")
_node_parts = itemgetter("frame", "metrics", "children")
#: children of one node taken as a batch when there are at least this many (fewer: one at a time)
_BATCH = 4


@dataclasses.dataclass(slots=True)
class _Batch:
    """The leaf children taken in batches whose metric dicts have the names ``key`` (in some order)."""

    key: tuple[str, ...]
    getters: list[Any]  # itemgetter per metric name
    columns: list[list[Any]]  # the values per metric name, in key order
    codes: list[int]  # the kind of each metric name
    summaries: list[list[Any]]  # per metric name, the :func:`_summary` of each chunk of values checked so far
    strict: bool  # look at the type of every value (not JSON values)
    checked: int = 0  # values of each column summarised so far
    nodes: list[int] = dataclasses.field(default_factory=list)
    names: list[str] = dataclasses.field(default_factory=list)
    chunks: list[list[dict[str, Any]]] = dataclasses.field(default_factory=list)  # the metric dicts, a batch each


@dataclasses.dataclass(slots=True)
class _Nodes:
    """The fast walk's growing columns."""

    names: list[Any] = dataclasses.field(default_factory=list)
    parents: list[int] = dataclasses.field(default_factory=list)
    n_children: list[int] = dataclasses.field(default_factory=list)
    loose: list[int] = dataclasses.field(default_factory=list)  # nodes whose metrics are grouped afterwards
    loose_metrics: list[Any] = dataclasses.field(default_factory=list)
    batches: dict[tuple[str, ...], _Batch] = dataclasses.field(default_factory=dict)
    key_kinds: dict[str, tuple[int, Any]] = dataclasses.field(default_factory=dict)  # metric name -> meaning
    strict: bool = True  # look at the type of every value (not JSON values)


def _walk_fast(roots: list[Any], *, json_values: bool = False) -> Tree | None:
    """:func:`_walk_exact`'s tree, a batch and a column at a time; ``None`` where it does not apply plainly
    (module doc; ``json_values`` as in :func:`walk`). May raise TypeError, KeyError, ValueError... on a
    malformed tree (the caller falls back)."""
    acc = _Nodes(strict=not json_values)
    names, parents, n_children, loose, loose_metrics = (
        acc.names,
        acc.parents,
        acc.n_children,
        acc.loose,
        acc.loose_metrics,
    )
    top_roots: list[int] = []  # positions in `loose` of the top-level ROOT frames (zero hint metrics dropped)
    stack: list[tuple[Any, int]] = [(r, -1) for r in reversed(roots)]
    pop, push = stack.pop, stack.extend
    add_name, add_parent, add_count = names.append, parents.append, n_children.append
    add_loose, add_metrics = loose.append, loose_metrics.append
    launch = LAUNCH_METADATA_FRAME
    while stack:  # the types of the metrics are checked afterwards, a column at a time
        node, parent = pop()
        name = node["frame"]["name"]
        if name == launch:
            continue
        metrics = node["metrics"]
        children = node.get("children", _EMPTY)
        if type(name) is not str or type(children) is not list:
            return None
        index = len(names)
        if parent >= 0:
            n_children[parent] += 1
        elif name == "ROOT":
            top_roots.append(len(loose))
        add_name(name)
        add_parent(parent)
        add_count(0)
        add_loose(index)
        add_metrics(metrics)
        if children and not (len(children) >= _BATCH and _leaf_batch(children, index, acc)):
            push(zip(reversed(children), repeat(index)))
    if not set(map(type, loose_metrics)) <= {dict}:
        return None
    key_kinds = acc.key_kinds
    kernels: list[tuple[Any, ...]] = []
    scope_metrics: dict[int, tuple[FlopsDict | None, Any]] = {}
    for key, batch in acc.batches.items():  # leaves
        if batch.nodes:
            if batch.checked < len(batch.nodes):
                _summarise(batch)
            summaries = batch.summaries
            _part(
                key,
                batch.nodes,
                batch.names,
                batch.chunks,
                batch.columns,
                summaries,
                acc,
                key_kinds,
                kernels,
                scope_metrics,
            )
    first_loose = len(kernels)
    keyt: list[Any] = list(map(tuple, loose_metrics))
    for j in top_roots:
        keyt[j] = None  # node at a time
    for key, rows in _groups(keyt).items():
        whole = len(rows) == len(loose)
        nodes = loose if whole else list(map(loose.__getitem__, rows))
        ms = loose_metrics if whole else list(map(loose_metrics.__getitem__, rows))
        columns = _values(key, ms) if key is not None else []
        _part(key, nodes, None, [ms], columns, None, acc, key_kinds, kernels, scope_metrics)
    merged = _merge(kernels)
    inner = [i for part in kernels[first_loose:] for i in part[0] if n_children[i]]  # batches hold leaves
    return Tree(names, parents, n_children, *merged, _positions(merged[0], sorted(inner)), scope_metrics)


def _values(key: tuple[str, ...], ms: list[dict[str, Any]]) -> list[list[Any]]:
    """The values of metric dicts with the names ``key``, a column per name (one pass over the dicts)."""
    k = len(key)
    if k < 2:
        return [list(map(itemgetter(key[0]), ms))] if k else []
    rows = list(chain.from_iterable(map(itemgetter(*key), ms)))
    return [rows[j::k] for j in range(k)]


def _positions(ascending: list[int], items: list[int]) -> list[int]:
    """The positions of ``items`` (ascending, each in it) in the list ``ascending``."""
    if len(items) * 16 < len(ascending):
        return list(map(bisect_left, repeat(ascending), items))
    return list(compress(count(), map(set(items).__contains__, ascending)))


def _leaf_batch(children: list[Any], index: int, acc: _Nodes) -> bool:
    """Take the children of node ``index`` in one batch when none has children of its own (launch-metadata
    frames left out); ``False`` (nothing done) otherwise."""
    try:
        parts = list(chain.from_iterable(map(_node_parts, children)))
    except (KeyError, TypeError):  # e.g. a leaf without "children": one at a time
        return False
    names = list(map(_name, parts[0::3]))
    metrics, kids = parts[1::3], parts[2::3]
    try:
        at = names.index(LAUNCH_METADATA_FRAME)
    except ValueError:
        at = -1
    while at >= 0:  # usually one, or none
        del names[at], metrics[at], kids[at]
        try:
            at = names.index(LAUNCH_METADATA_FRAME, at)
        except ValueError:
            at = -1
    m = len(names)
    if kids.count(_EMPTY) != m and not all(map(_launch_only, kids)):
        return False  # a child with children (or whose "children" is no list)
    if not m:
        return True
    "".join(names)  # TypeError unless every name is a string
    start = len(acc.names)
    acc.names += names
    acc.parents += repeat(index, m)
    acc.n_children += repeat(0, m)
    acc.n_children[index] = m
    key = tuple(dict.keys(metrics[0]))  # TypeError unless a dict
    if sum(map(len, metrics)) == len(key) * m:  # with every name of key in each, each has just those
        if key and _take(acc, key, metrics, names, range(start, start + m)):
            return True
        if not key and metrics.count(metrics[0]) == m:  # all empty dicts
            return _take(acc, key, metrics, names, range(start, start + m))
    # several sets of metric names (kernels with and without FLOPs, say): a batch per set
    if set(map(type, metrics)) != {dict}:
        raise TypeError("a metrics value is not an object")
    keys = list(map(tuple, metrics))
    distinct = dict.fromkeys(keys)
    if len(distinct) > 8:  # grouped with the nodes taken one at a time
        acc.loose += range(start, start + m)
        acc.loose_metrics += metrics
        return True
    nodes = range(start, start + m)
    for key in distinct:
        mask = list(map(key.__eq__, keys))
        _take(acc, key, list(compress(metrics, mask)), list(compress(names, mask)), compress(nodes, mask))
    return True


def _launch_only(kids: Any) -> bool:
    """Whether ``kids`` is a list of launch-metadata frames only (their subtrees are left out)."""
    return type(kids) is list and all(child["frame"]["name"] == LAUNCH_METADATA_FRAME for child in kids)


def _take(acc: _Nodes, key: tuple[str, ...], metrics: list[Any], names: list[str], nodes: Any) -> bool:
    """Append leaves whose metric dicts each hold the names ``key`` (and only those, in some order) to the
    batch of ``key``; ``False`` (nothing appended) when a dict lacks one of them."""
    batch = acc.batches.get(key)
    if batch is None:
        codes = [_kind(name, acc.key_kinds)[0] for name in key]
        getters = [itemgetter(name) for name in key]
        batch = acc.batches[key] = _Batch(key, getters, [[] for _ in key], codes, [[] for _ in key], acc.strict)
    try:
        for col, get in zip(batch.columns, batch.getters, strict=True):
            col += map(get, metrics)  # TypeError unless a dict
    except KeyError:  # other names
        for col in batch.columns:
            del col[len(batch.nodes) :]
        return False
    batch.nodes += nodes
    batch.names += names
    batch.chunks.append(metrics)
    if len(batch.nodes) - batch.checked >= _CHUNK:
        _summarise(batch)
    return True


#: values of a batch column checked together, soon after they are read (while most are still in the cache)
_CHUNK = 4096


def _summarise(batch: _Batch) -> None:
    """Append the :func:`_summary` of each column's values not yet summarised."""
    lo, hi = batch.checked, len(batch.nodes)
    for col, code, summaries in zip(batch.columns, batch.codes, batch.summaries, strict=True):
        if code != _IGNORE:
            summaries.append(_summary(col[lo:hi], code, batch.strict))
    batch.checked = hi


def _part(
    key: tuple[str, ...] | None,
    nodes: list[int],
    part_names: list[str] | None,
    chunks: list[list[dict[str, Any]]],
    columns: list[list[Any]],
    summaries: list[list[Any]] | None,
    acc: _Nodes,
    key_kinds: dict[str, tuple[int, Any]],
    kernels: list[tuple[Any, ...]],
    scope_metrics: dict[int, tuple[FlopsDict | None, Any]],
) -> None:
    """The metrics of ``nodes`` (their metric dicts, in ``chunks`` of consecutive nodes, sharing the names
    ``key``; the values in ``columns``, one per name): a kernel part appended to ``kernels`` (columns, see
    :func:`_merge`) or ``scope_metrics`` entries; ``summaries``: each column's :func:`_summary` chunks
    (``None``: not yet made). ``key`` ``None``: a top-level ROOT, node at a time."""
    plan = _plan(key, key_kinds) if key is not None else None
    ok = key is not None and plan is not None
    cols = _columns(key, plan, chunks, columns, summaries, acc.strict) if ok else None
    if cols is None:  # node at a time (any error is left to the exact walk, which words it)
        part: tuple[list[Any], ...] = ([], [], [], [], [], [], [], [])
        for i, m in zip(nodes, chain.from_iterable(chunks), strict=True):
            t, is_kernel, f, b, c, dt, di = _node_metrics("", m, key is None, str, key_kinds)
            if is_kernel:
                for col, value in zip(part, (i, acc.names[i], t, b, c, dt, di, f), strict=True):
                    col.append(value)
            elif _kept(f, b):
                scope_metrics[i] = (f, b)
        if part[0]:
            kernels.append((*part[:7], None, part[7]))
        return
    flops: list[tuple[int, list[Any]]] = cols.pop(_FLOPS)
    m = len(nodes)
    if _TIME in cols:
        kernels.append(
            (
                nodes,
                part_names if part_names is not None else list(map(acc.names.__getitem__, nodes)),
                cols[_TIME],
                cols.get(_BYTES, [0] * m),
                cols.get(_COUNT, [0] * m),
                cols.get(_DEVICE_TYPE, [None] * m),
                cols.get(_DEVICE_ID, [None] * m),
                tuple(w for w, _ in flops),
                [col for _, col in flops],
            )
        )
    elif flops or _BYTES in cols:  # scopes' own FLOPs and bytes
        widths = [w for w, _ in flops]
        rows = zip(*(col for _, col in flops), strict=True) if flops else repeat(None, m)
        for i, vals, b in zip(nodes, rows, cols.get(_BYTES, [0] * m), strict=True):
            f = dict(zip(widths, vals, strict=True)) if vals is not None else None
            if _kept(f, b):
                scope_metrics[i] = (f, b)


def _kind(raw_key: str, key_kinds: dict[str, tuple[int, Any]]) -> tuple[int, Any]:
    """What a metric name means (:func:`perfmodel.measured.hatchet._classify`), classified once."""
    kind = key_kinds.get(raw_key)
    if kind is None:
        kind = key_kinds[raw_key] = _classify(raw_key)
    return kind


def _plan(key: tuple[str, ...], key_kinds: dict) -> list[tuple[str, int, Any]] | None:
    """The metrics of a set of metric names that count, ``(name, kind, width or unit)``; ``None`` when a kind
    repeats (the node-at-a-time rules then apply)."""
    plan, seen = [], set()
    for raw_key in key:
        kind = _kind(raw_key, key_kinds)
        if kind[0] == _IGNORE:
            continue
        tag = kind if kind[0] == _FLOPS else kind[0]
        if tag in seen:
            return None
        seen.add(tag)
        plan.append((raw_key, kind[0], kind[1]))
    return plan


def _columns(
    key: tuple[str, ...],
    plan: list[tuple[str, int, Any]],
    chunks: list[list[dict[str, Any]]],
    columns: list[list[Any]],
    summaries: list[list[Any]] | None,
    strict: bool,
) -> dict[int, Any] | None:
    """Checked, converted metric columns of nodes sharing one set of metric names: ``{kind: column}``, with
    ``_FLOPS: [(width, column), ...]`` in metric order; ``None`` when a value needs the node-at-a-time rules
    (a list, a bool, a value out of range, a float count, a zero FLOP float), or when the nodes' metric
    order differs where it matters (several FLOP widths: each node's dict keeps its own order)."""
    out: dict[int, Any] = {_FLOPS: []}
    for raw_key, code, arg in plan:
        j = key.index(raw_key)
        col = columns[j]
        parts = summaries[j] if summaries is not None else [_summary(col, code, strict)]
        if code >= _DEVICE_TYPE:
            if not all(parts):  # not every value a string
                if not set(map(type, col)) <= {str, int}:
                    return None
                col = list(map(str, col))
            out[code] = col
            continue
        if not _numbers_ok(parts, code, col):
            return None
        if code == _TIME and arg != "ns":
            col = list(map(mul, col, repeat(_NS_PER[arg])))
        if code == _FLOPS:
            out[_FLOPS].append((arg, col))
        else:
            out[code] = col
    if len(out[_FLOPS]) > 1:
        keys = list(map(tuple, chain.from_iterable(chunks)))
        if keys.count(key) != len(keys):
            return None
    return out


def _summary(values: list[Any], code: int, strict: bool) -> Any:
    """What the checks need of a chunk of a metric column: device fields, whether every value is a string;
    numbers, ``(min, sum, whether a float is among them)``, or ``None`` when a value is no plain number (a
    bool, a string, null, a list, an object) or NaN. ``strict``: look at every value's type (values that
    need not be JSON's); else only where a bool could hide."""
    if code >= _DEVICE_TYPE:
        if strict:
            return set(map(type, values)) <= {str}
        try:
            "".join(values)
        except TypeError:
            return False
        return True
    try:
        lo = min(values)
        total = sum(values)
    except TypeError:  # a string, list, object or null among them
        return None
    if total != total:  # NaN
        return None
    if lo > 1 and not strict:  # no bool (True == 1, False == 0): the sum is an int just when every value is one
        return lo, total, type(total) is not int
    types = set(map(type, values))
    return (lo, total, float in types) if types <= {int, float} else None


def _numbers_ok(parts: list[Any], code: int, col: list[Any]) -> bool:
    """Whether a column (its chunks' :func:`_summary`) passes the node-at-a-time checks as it is: numbers
    (no bool) in [0, 1e30], device times > 0, counts integers, no zero float FLOPs."""
    if not all(parts):
        return False
    lo = min(p[0] for p in parts)
    total = sum(p[1] for p in parts)
    floats = any(p[2] for p in parts)
    if (code == _COUNT and floats) or (code == _FLOPS and lo == 0 and floats):
        return False
    if not (lo > 0 if code == _TIME else lo >= 0):
        return False
    # values >= 0: none exceeds an exact (integer) sum; a float sum (rounded, values converted) is trusted
    # only well below the limit, else the largest value is compared itself
    return total <= (_MAX_METRIC if type(total) is int else 1e29) or max(col) <= _MAX_METRIC


def _groups(keyt: list[Any]) -> dict[Any, Any]:
    """Positions (ascending) per distinct metric-name tuple."""
    uniq = dict.fromkeys(keyt)
    if len(uniq) <= 1:
        return {k: range(len(keyt)) for k in uniq}
    code_of = {k: c for c, k in enumerate(uniq)}
    codes = np.fromiter(map(code_of.__getitem__, keyt), dtype=np.intp, count=len(keyt))
    order = np.argsort(codes, kind="stable")
    parts = np.split(order, np.cumsum(np.bincount(codes, minlength=len(uniq)))[:-1])
    return {k: part.tolist() for k, part in zip(uniq, parts, strict=True)}


def _merge(parts: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    """Kernel parts (nodes, names, time, bytes, counts, device types, device ids, FLOP widths or ``None``,
    FLOP columns or dicts) -> the :class:`Tree` kernel fields, in ascending node order."""
    if not parts:
        return [], [], [], [], [], [], [], (), []
    if len(parts) == 1:  # fresh lists, owned by the tree from here on
        return parts[0][:9]
    cols = [list(chain.from_iterable(part[j] for part in parts)) for j in range(7)]
    order = np.argsort(np.asarray(cols[0], dtype=np.intp), kind="stable").tolist()
    widths = _flops_order([part[7] for part in parts])
    flops: list[Any]
    if widths is None:  # dicts
        flops = list(chain.from_iterable(_part_dicts(part[7], part[8], len(part[0])) for part in parts))
        flops = list(map(flops.__getitem__, order))
    else:
        flops = []
        for w in widths:
            col: list[Any] = []
            for part in parts:
                at = part[7].index(w) if w in part[7] else -1
                col += part[8][at] if at >= 0 else repeat(None, len(part[0]))
            flops.append(list(map(col.__getitem__, order)))
    return (*(list(map(c.__getitem__, order)) for c in cols), widths, flops)


def _flops_order(part_widths: list[tuple[int, ...] | None]) -> tuple[int, ...] | None:
    """The FLOP widths of kernel parts in one order that each part's own order follows; ``None`` when
    there is none (or a part holds dicts)."""
    if any(w is None for w in part_widths):
        return None
    order: list[int] = []
    for widths in part_widths:
        assert widths is not None
        order += (w for w in widths if w not in order)
    rank = {w: r for r, w in enumerate(order)}
    for widths in part_widths:
        assert widths is not None
        ranks = [rank[w] for w in widths]
        if ranks != sorted(ranks):
            return None
    return tuple(order)


def _part_dicts(widths: tuple[int, ...] | None, flops: list[Any], m: int) -> list[FlopsDict | None]:
    """A kernel part's FLOPs as one ``{width: FLOP}`` dict (or ``None``) per kernel."""
    if widths is None:
        return flops
    if not widths:
        return [None] * m
    if len(widths) == 1:
        w = widths[0]
        return [{w: v} for v in flops[0]]
    return [dict(zip(widths, vals, strict=True)) for vals in zip(*flops, strict=True)]
