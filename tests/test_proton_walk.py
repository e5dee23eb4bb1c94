"""perfmodel.measured.proton_tree: the fast walk (batches of leaves, metric columns) gives the exact walk's tree.

The fast walk must never accept what the node-at-a-time walk refuses (it gives up instead), and where both
accept a tree they must agree on every column, value and type: varied random profiles (scopes, batches of
leaves, launch-metadata frames, several devices, FLOPs of several widths, missing or reordered metrics, time
units, Triton 3.0 names, array metrics, deep nesting) and random bad values check that, as do the
``Profile`` results (perfdata, scopes, kernels) computed from either tree.
"""

from __future__ import annotations

import enum
import math
import random
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from proton_synth import H200_INFO, big_profile, frame, kernel, profile, write

import perfmodel as pm
from perfmodel.errors import PerfModelError, ProfileError
from perfmodel.measured import proton, proton_tree
from perfmodel.measured.proton_tree import LAUNCH_METADATA_FRAME, Tree, _walk_exact, _walk_fast, walk

FAST_GIVES_UP = (TypeError, KeyError, AttributeError, ValueError, OverflowError, IndexError, ProfileError)


def typed(values: Any) -> Any:
    """Values with their types, recursively (so 0 and 0.0, or 1 and True, differ)."""
    if isinstance(values, dict):
        return [(typed(k), typed(v)) for k, v in values.items()]  # order counts
    if isinstance(values, (list, tuple)):
        return [typed(v) for v in values]
    return (type(values).__name__, values)


def columns(tree: Tree) -> dict[str, Any]:
    """Every column of a tree, FLOPs as per-kernel dicts (the form both walks can give)."""
    return {
        "names": typed(tree.names),
        "parents": typed(tree.parents),
        "n_children": typed(tree.n_children),
        "kernel_nodes": typed(tree.kernel_nodes),
        "kernel_names": typed(tree.kernel_names),
        "time": typed(tree.time),
        "bytes": typed(tree.bytes),
        "counts": typed(tree.counts),
        "device_types": typed(tree.device_types),
        "device_ids": typed(tree.device_ids),
        "flops": typed(tree.kernel_flops()),
        "inner_kernels": typed(tree.inner_kernels),
        "scope_metrics": typed(sorted(tree.scope_metrics.items())),
    }


def fast_or_none(roots: list[Any], *, json_values: bool = True) -> Tree | None:
    try:
        return _walk_fast(roots, json_values=json_values)
    except FAST_GIVES_UP:
        return None


def check_walks(roots: list[Any], *, fast_expected: bool | None = None, json_values: bool = True) -> Tree | None:
    """The fast walk (trusting JSON value types, as ``read`` does, and looking at every type) equals the exact
    one, or gives up; it never accepts what the exact walk refuses."""
    fasts = [fast_or_none(roots)] if json_values else []
    fasts.append(fast_or_none(roots, json_values=False))
    try:
        exact = _walk_exact("p.hatchet", roots)
    except ProfileError:
        assert fasts == [None] * len(fasts), "the fast walk accepted a tree the exact walk refuses"
        return None
    for fast in fasts:
        if fast is not None:
            assert columns(fast) == columns(exact)
            for hits in _hit_patterns(len(exact.kernel_nodes)):
                assert typed(fast.flops_by_width(hits)) == typed(exact.flops_by_width(hits))
        if fast_expected is not None:
            assert (fast is not None) == fast_expected
    return exact


def _hit_patterns(n: int) -> list[list[bool]]:
    rng = random.Random(n)
    return [[True] * n, [False] * n, [i % 2 == 0 for i in range(n)], [rng.random() < 0.3 for _ in range(n)]]


# -- random profiles ---------------------------------------------------------------------------------------
WIDTHS = (16, 8, 32, 4, 0, 64)
BAD_VALUES: list[Any] = [True, False, None, -1, -0.5, math.nan, math.inf, "12", [1, "x"], {}, 10**31, 2e30]


class Gen:
    """Random Proton-like trees: ``bad`` is the chance of a bad value per metric."""

    def __init__(self, seed: int, bad: float = 0.0) -> None:
        self.rng = random.Random(seed)
        self.bad = bad
        self.floats = self.rng.random() < 0.5  # FLOPs as floats (as Proton writes them) or ints
        self.order = self.rng.random() < 0.2  # shuffle the metric order of some kernels
        self.widths = self.rng.sample(WIDTHS[:4], self.rng.choice([0, 1, 1, 2, 3]))
        self.unit = self.rng.choice(["ns", "ns", "ns", "us", "ms", "s"])
        self.v30 = self.rng.random() < 0.15  # Triton 3.0 metric names

    def value(self, good: Any) -> Any:
        return self.rng.choice(BAD_VALUES) if self.rng.random() < self.bad else good

    def kernel_metrics(self) -> dict[str, Any]:
        rng = self.rng
        time_key = f"{'Time' if self.v30 else 'time'} ({self.unit})"
        t = rng.choice([1, 2, rng.randrange(3, 10**6)])
        if self.unit != "ns":
            t = t / 10 ** rng.randrange(0, 7) if rng.random() < 0.5 else t
        m: dict[str, Any] = {time_key: self.value(t)}
        if rng.random() < 0.9:
            m["Count" if self.v30 else "count"] = self.value(rng.choice([1, 1, 2, rng.randrange(1, 100)]))
        if rng.random() < 0.9:
            dev = rng.choice(["0", "1", "2", "3"]) if rng.random() < 0.9 else rng.randrange(4)
            m["DeviceId" if self.v30 else "device_id"] = self.value(dev)
            m["DeviceType" if self.v30 else "device_type"] = self.value("CUDA")
        for w in self.widths if rng.random() < 0.8 else self.widths[:1]:
            f = rng.choice([0, 1, rng.randrange(2, 2**45)])
            f = float(f) if self.floats and f else f
            m[f"flops{w}" if w else "flops"] = self.value(f)
        if rng.random() < 0.85:
            m["bytes"] = self.value(rng.choice([0, 1, rng.randrange(2, 2**35), 1.5e9]))
        if rng.random() < 0.05:
            m["note"] = "text"
        if rng.random() < 0.03:
            m["hist"] = [1, 2]
        if rng.random() < 0.02:
            m["flops16"] = [1.0, 2.0]  # 3.8 array metric
        if self.order and rng.random() < 0.3:
            items = list(m.items())
            rng.shuffle(items)
            m = dict(items)
        return m

    def leaf(self, i: int) -> dict[str, Any]:
        rng = self.rng
        name = f"_matmul_{i % 5}" if rng.random() < 0.5 else f"_reduce_{i % 3}"
        node = frame(name, self.kernel_metrics())
        if rng.random() < 0.02:
            del node["children"]  # allowed: no children
        if rng.random() < 0.02:
            node["children"] = [frame(LAUNCH_METADATA_FRAME, {}, frame("_hidden", {"time (ns)": 5}))]
        return node

    def scope(self, depth: int) -> dict[str, Any]:
        rng = self.rng
        metrics: dict[str, Any] = {}
        if rng.random() < 0.15:
            metrics = {f"flops{rng.choice(WIDTHS[:3])}": self.value(rng.randrange(0, 10**9)), "bytes": 4}
        children: list[Any] = []
        for i in range(rng.choice([0, 1, 3, 5, 12, 40])):
            roll = rng.random()
            if roll < 0.15 and depth < 6:
                children.append(self.scope(depth + 1))
            elif roll < 0.2:
                children.append(frame(LAUNCH_METADATA_FRAME, {}, *[self.leaf(j) for j in range(rng.randrange(3))]))
            else:
                children.append(self.leaf(i))
        if rng.random() < 0.1 and children:
            children[-1]["children"] = [self.leaf(0)]  # a kernel with a kernel below it
        return frame(f"scope_{depth}_{rng.randrange(4)}", metrics, *children)

    def roots(self) -> list[Any]:
        rng = self.rng
        hints = rng.random() < 0.5
        tree = profile(*[self.scope(1) for _ in range(rng.randrange(1, 4))], hints=hints)[0]
        if rng.random() < 0.2:
            tree["metrics"]["time (ns)"] = rng.choice([0, 17])  # ROOT with a time of its own
        extra = [self.scope(1)] if rng.random() < 0.2 else []
        return [tree, *extra]


@pytest.mark.parametrize("seed", range(60))
def test_random_profiles_fast_equals_exact(seed: int) -> None:
    roots = Gen(seed).roots()
    check_walks(roots)


@pytest.mark.parametrize("seed", range(200))
def test_random_bad_values_never_accepted(seed: int) -> None:
    roots = Gen(1000 + seed, bad=0.02).roots()
    check_walks(roots)


def test_plain_profiles_take_the_fast_walk() -> None:
    data, _ = big_profile(10_000)  # batches summarised in several chunks
    check_walks(data[:-1], fast_expected=True)
    uniform = [frame("s", {}, *[kernel(f"k{i % 3}", 10 + i, flops={16: 2.0 * i + 1, 8: i}) for i in range(50)])]
    check_walks(profile(*uniform)[:-1], fast_expected=True)


# -- hand-made cases -------------------------------------------------------------------------------------
def _leaves(n: int, **kw: Any) -> list[dict[str, Any]]:
    return [kernel(f"_matmul_{i % 3}", 100 + i, nbytes=i + 1, **kw) for i in range(n)]


@pytest.mark.parametrize(
    "bad",
    [True, False, None, -1, math.nan, math.inf, -math.inf, "7", [1, None], {"a": 1}, 10**30 + 10**15, 1e31],
)
@pytest.mark.parametrize("metric", ["time (ns)", "count", "bytes", "flops16", "device_id", "device_type"])
@pytest.mark.parametrize("where", [0, 5, 9])
def test_one_bad_value_in_a_batch(bad: Any, metric: str, where: int) -> None:
    leaves = _leaves(10, flops={16: 3.0})
    leaves[where]["metrics"][metric] = bad
    check_walks(profile(frame("s", {}, *leaves))[:-1])


@pytest.mark.parametrize("value", [0, 0.0, -0.0, 1, 1.0, 2, 0.5, 1e30, 10**30, 1e29, 10**29])
@pytest.mark.parametrize("metric", ["time (ns)", "count", "bytes", "flops16", "flops8"])
def test_edge_values_in_a_batch(value: Any, metric: str) -> None:
    leaves = _leaves(8, flops={16: 3, 8: 2.5})
    for leaf in leaves[::3]:
        leaf["metrics"][metric] = value
    check_walks(profile(frame("s", {}, *leaves))[:-1])


def test_huge_integer_sum_with_floats() -> None:
    leaves = _leaves(6, flops={16: 1.5})
    leaves[2]["metrics"]["flops16"] = 10**30 + 1  # above 1e30 exactly, rounds to 1e30 as a float
    leaves[3]["metrics"]["flops16"] = 1000000000000000019884624838657  # the float 1e30, plus one
    check_walks(profile(frame("s", {}, *leaves))[:-1])


@pytest.mark.parametrize("case", range(9))
def test_batch_shapes(case: int) -> None:
    leaves = _leaves(12, flops={16: 7})
    meta = frame(LAUNCH_METADATA_FRAME, {}, kernel("_matmul_hidden", 5))
    if case == 0:  # launch frames first, middle and last
        leaves = [meta, *leaves[:6], meta, *leaves[6:], meta]
    elif case == 1:  # only launch frames
        leaves = [meta] * 5
    elif case == 2:  # a leaf without "children"
        del leaves[4]["children"]
    elif case == 3:  # a launch frame without metrics (never looked at)
        leaves.append({"frame": {"name": LAUNCH_METADATA_FRAME}})
    elif case == 4:  # reordered metrics, one FLOP width
        leaves[3]["metrics"] = dict(reversed(list(leaves[3]["metrics"].items())))
    elif case == 5:  # reordered metrics, two FLOP widths: each dict keeps its own order
        for leaf in leaves:
            leaf["metrics"]["flops8"] = 3
        leaves[5]["metrics"] = dict(reversed(list(leaves[5]["metrics"].items())))
    elif case == 6:  # the same number of metrics, other names
        leaves[7]["metrics"]["flops8"] = leaves[7]["metrics"].pop("bytes")
    elif case == 7:  # a missing metric (fewer names)
        del leaves[8]["metrics"]["count"]
    elif case == 8:  # empty metrics on leaves: scopes without kernels
        for leaf in leaves:
            leaf["metrics"] = {}
    check_walks(profile(frame("s", {}, *leaves))[:-1], fast_expected=True)


@pytest.mark.parametrize(
    "node",
    [
        1,
        [],
        "x",
        {"frame": {"name": 3}, "metrics": {}},
        {"frame": [], "metrics": {}},
        {"frame": {"name": "k"}},
        {"frame": {"name": "k"}, "metrics": []},
        {"frame": {"name": "k"}, "metrics": [1, 2, 3, 4, 5, 6]},
        {"frame": {"name": "k"}, "metrics": "abcdef"},
        {"frame": {"name": "k"}, "metrics": {}, "children": {}},
        {"frame": {"name": "k"}, "metrics": {}, "children": ""},
        {"frame": {"name": "k"}, "metrics": {}, "children": None},
        {"frame": {"name": "k"}, "metrics": {}, "children": [1]},
    ],
)
@pytest.mark.parametrize("where", [0, 6])
def test_malformed_node_in_a_batch(node: Any, where: int) -> None:
    leaves: list[Any] = _leaves(7)
    leaves[where] = node
    roots = profile(frame("s", {}, *leaves))[:-1]
    assert check_walks(roots) is None  # refused
    with pytest.raises(ProfileError):
        walk("p.hatchet", roots)


def test_metric_kinds_and_devices() -> None:
    mixed = [
        kernel("_matmul_a", 10, flops={16: 1.0, 8: 2.0}, nbytes=3, device_id="0"),
        kernel("_matmul_b", 11, flops={8: 4.0}, nbytes=3, device_id="1", device_type="HIP"),
        kernel("_matmul_c", 12, nbytes=3, device_id="2"),
        kernel("_matmul_d", 13, flops={0: 5}, device_id="3"),
        kernel("_matmul_e", 14, flops={16: 1.0, 8: 2.0}, nbytes=3, version="3.0"),
        kernel("_matmul_f", 15, flops={32: 6.0, 16: 1.0}, nbytes=2.5),
    ]
    scope = frame("s", {"flops16": 9, "bytes": 0.0}, *mixed, *mixed[::-1], *mixed)
    check_walks(profile(scope)[:-1], fast_expected=True)
    ints = [kernel(f"k{i}", 5, device_id=i, device_type=7) for i in range(6)]  # 3.0 numeric device fields
    check_walks(profile(frame("s", {}, *ints))[:-1], fast_expected=True)


def test_time_units() -> None:
    leaves = [frame(f"_matmul_{i}", {f"time ({u})": 1.5 + i, "count": 1}) for i, u in enumerate(["s", "ms", "us"] * 3)]
    check_walks(profile(frame("s", {}, *leaves))[:-1], fast_expected=True)
    same = [frame(f"_matmul_{i}", {"time (us)": 1.5 + i, "count": 1}) for i in range(8)]
    check_walks(profile(frame("s", {}, *same))[:-1], fast_expected=True)


def test_deep_nesting() -> None:
    node = frame("s", {}, *_leaves(6))
    for i in range(3000):
        node = frame(f"s{i}", {"bytes": i} if i % 7 == 0 else {}, node, *(_leaves(1) if i % 11 == 0 else []))
    check_walks(profile(node)[:-1], fast_expected=True)


@pytest.mark.parametrize("sets", [2, 3, 8, 9, 20])
def test_several_metric_sets_in_a_batch(sets: int) -> None:
    leaves = []
    for i in range(60):
        s = i % sets
        flops = {16: 1.5 * i + 1} if s % 2 else ({8: i + 1, 16: 2.0} if s % 3 else {})
        leaf = kernel(f"_matmul_{i % 4}", 50 + i, flops=flops, nbytes=i if s % 4 else None, count=1 + s)
        for j in range(s // 4):
            leaf["metrics"][f"extra{j}"] = "x"  # ignored metrics: more distinct sets
        leaves.append(leaf)
    check_walks(profile(frame("s", {}, *leaves), frame("t", {}, *leaves[::-1]))[:-1], fast_expected=True)


@pytest.mark.parametrize("case", range(5))
def test_kernels_with_launch_metadata_children(case: int) -> None:
    meta = frame(LAUNCH_METADATA_FRAME, {}, kernel("_matmul_hidden", 5, flops={16: 9}))
    leaves = [kernel(f"_matmul_{i % 3}", 100 + i, flops={16: 2.0}, children=(meta,)) for i in range(12)]
    refused = False
    if case == 1:  # one also has a real child: not a batch of leaves
        leaves[3]["children"].append(kernel("_matmul_inner", 7))
    elif case == 2:  # a launch child with a malformed frame: refused, as the exact walk does
        leaves[5]["children"] = [{"frame": {}, "metrics": {}}]
        refused = True
    elif case == 3:  # a launch child that is no node
        leaves[5]["children"] = [3]
        refused = True
    elif case == 4:  # "children" that is no list
        leaves[5]["children"] = {"frame": {"name": LAUNCH_METADATA_FRAME}}
        refused = True
    tree = check_walks(profile(frame("s", {}, *leaves))[:-1], fast_expected=not refused)
    assert (tree is None) == refused
    if tree is not None:
        assert "_matmul_hidden" not in tree.kernel_names


@pytest.mark.parametrize(
    ("where", "bad"), [(None, None), (9000, True), (8191, -1), (4096, "7"), (12_000, 1.5), (100, math.nan)]
)
def test_long_batches_checked_in_chunks(where: int | None, bad: Any) -> None:
    """Columns are checked in chunks as they are read: a bad value in any chunk is still refused."""
    leaves = [
        kernel(f"_matmul_{i % 3}", 1000 + i, count=2, flops={16: 2.0 * i + 1}, nbytes=i + 2) for i in range(12_001)
    ]
    if where is not None:
        leaves[where]["metrics"]["count" if isinstance(bad, float) and bad == 1.5 else "bytes"] = bad
    tree = check_walks(profile(frame("a", {}, *leaves[:5000]), frame("b", {}, *leaves[5000:]))[:-1])
    assert (tree is None) == (where is not None)
    if tree is None:
        assert fast_or_none(profile(frame("a", {}, *leaves))[:-1]) is None


def test_a_list_among_metric_sets_is_refused() -> None:
    leaves: list[Any] = _leaves(8)
    leaves[2]["metrics"]["flops8"] = 1  # another set of metric names
    leaves[5]["metrics"] = [1, 2]  # no object: the exact walk refuses it
    assert check_walks(profile(frame("s", {}, *leaves))[:-1]) is None


def test_scope_metrics_node_at_a_time() -> None:
    scope = frame("s", {"flops16": [1, 2], "bytes": 3}, *_leaves(5))  # an array metric: the node rules
    tree = check_walks(profile(scope, frame("t", {"flops8": 0.0}, *_leaves(2)))[:-1], fast_expected=True)
    assert tree is not None and len(tree.scope_metrics) == 2
    roots = profile(*_leaves(5))[:-1]
    roots[0]["metrics"].update({"flops16": 5, "bytes": 7})  # ROOT hints that are measurements
    check_walks(roots, fast_expected=True)


class Launches(enum.IntEnum):
    TWO = 2


class Name(str):
    pass


@pytest.mark.parametrize(
    ("metric", "value"),
    [
        ("bytes", np.int64(5)),
        ("bytes", np.float64(2.5)),
        ("time (ns)", Fraction(7, 2)),
        ("count", Launches.TWO),
        ("flops16", Decimal(3)),
        ("device_type", Name("CUDA")),
        ("device_id", np.str_("0")),
    ],
)
def test_values_no_json_file_holds_are_refused_unless_told_json(metric: str, value: Any) -> None:
    """Built by hand (not from a file), a tree may hold other types: looking at every value's type, the fast
    walk refuses what the exact walk refuses (integer subclasses, a Fraction among floats, numpy scalars)."""
    leaves = _leaves(12, flops={16: 2.5})
    for leaf in leaves[3:5]:
        leaf["metrics"][metric] = value
    check_walks(profile(frame("s", {}, *leaves))[:-1], json_values=False)


def test_read_trusts_json_value_types(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    real = proton_tree._walk_fast

    def spy(roots: list[Any], *, json_values: bool = False) -> Tree | None:
        seen.append(json_values)
        return real(roots, json_values=json_values)

    monkeypatch.setattr(proton_tree, "_walk_fast", spy)
    proton.read(write(tmp_path / "p.hatchet", profile(frame("s", {}, *_leaves(6)))))
    proton.Profile("q", profile(frame("s", {}, *_leaves(6)))[:-1], {})
    assert seen == [True, False]


def test_repeated_metric_kind_is_left_to_the_node_rules() -> None:
    leaves = _leaves(6, flops={16: 3})
    for leaf in leaves:
        leaf["metrics"]["FLOPS16"] = 4  # the same width twice: the node rules add them
    check_walks(profile(frame("s", {}, *leaves))[:-1], fast_expected=True)


# -- the Profile answers from either walk -----------------------------------------------------------------
def _profile_answers(path: Path, monkeypatch: pytest.MonkeyPatch, exact: bool) -> list[Any]:
    with monkeypatch.context() as m:
        if exact:
            m.setattr(proton_tree, "_walk_fast", lambda roots, json_values=False: None)
        prof = proton.read(path)
    out: list[Any] = [typed([dict(k.flops) for k in prof.kernels])]
    out.append([(k.name, k.path, typed(k.count), typed(k.time_s), typed(k.bytes), k.device_id) for k in prof.kernels])
    for pattern in (r".*matmul.*", r".*", r"_reduce_.*", r"nothing"):
        for leaves_only in (True, False):
            for gpu in ("H200", None):
                try:
                    pd = prof.perfdata(pattern, leaves_only=leaves_only, gpu=gpu)
                except PerfModelError as exc:
                    out.append(("error", type(exc).__name__, str(exc)))
                    continue
                out.append(typed([pd.time_s, pd.flops, pd.bytes, pd.dtype.name, pd.gpu.name, pd.meta]))
    try:
        out.append(typed({k: [v.time_s, v.flops, v.bytes, v.meta] for k, v in prof.scopes(gpu="H200").items()}))
    except PerfModelError as exc:
        out.append(("error", str(exc)))
    return out


@pytest.mark.parametrize("seed", range(25))
def test_profile_answers_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    roots = Gen(seed).roots()
    devices = {"CUDA": {str(i): H200_INFO for i in range(4)}, "HIP": {"0": {"arch": "gfx942"}}}
    path = write(tmp_path / "p.hatchet", [*roots, devices])
    try:
        fast = _profile_answers(path, monkeypatch, exact=False)
    except ProfileError as exc:
        with pytest.raises(ProfileError, match=re_escape(str(exc))):
            _profile_answers(path, monkeypatch, exact=True)
        return
    assert fast == _profile_answers(path, monkeypatch, exact=True)


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


def test_big_profile_answers_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, totals = big_profile(20_000)
    path = write(tmp_path / "big.hatchet", data)
    fast = _profile_answers(path, monkeypatch, exact=False)
    assert fast == _profile_answers(path, monkeypatch, exact=True)
    pd = proton.read(path).perfdata(gpu="H200")
    assert (pd.flops, pd.bytes, pd.meta["kernels"]) == (totals["flops"], totals["bytes"], totals["n"])


def test_device_resolution_from_the_hits(tmp_path: Path) -> None:
    h100 = dict(H200_INFO, num_sms=132, memory_clock_rate=2619000, bus_width=5120)
    leaves = [kernel(f"_matmul_{i}", 10, flops={16: 2.0}, device_id=str(i % 3)) for i in range(30)]
    devices = {"CUDA": {"0": H200_INFO, "1": H200_INFO, "2": h100}}
    prof = proton.read(write(tmp_path / "d.hatchet", profile(frame("s", {}, *leaves), devices=devices)))
    try:
        expected: Any = prof.gpu
    except PerfModelError:
        expected = None
    with pytest.raises(ProfileError, match="ran on different GPU models"):
        prof.perfdata()
    assert prof.perfdata(r"_matmul_(0|3|6|9|12|15|18|21|24|27)").gpu.name == pm.get_gpu("H200").name
    assert expected is None or expected.name
