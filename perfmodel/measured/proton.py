"""Read Triton Proton ``.hatchet`` profiles into :class:`PerfData`, with plain :mod:`json`.

No hatchet, pandas or triton import: a 100 000-kernel profile reads and sums in about a third of a second
(``benchmarks/bench_proton.py``).

File layout (Triton 3.0 ... 3.8): a JSON list ``[root, ..., device_metadata]``. Each root is a
tree of ``{"frame": {"name", "type"}, "metrics": {...}, "children": [...]}`` nodes; the last
element, when it has no ``"frame"``, maps ``device_type -> device_id -> {arch, num_sms,
clock_rate (kHz), memory_clock_rate (kHz), bus_width (bits)}``.

Counting rules (stated once for the module):

* A **kernel** is a node with a device-time metric of its own (``time (ns)``; Triton 3.0 wrote
  ``Time (ns)``, ``Count``, ``DeviceId``, ``DeviceType``; both spellings are read). Its time,
  FLOPs (``flops<width>`` and the width-less ``flops``, stored under width ``0``) and bytes are
  the node's own metrics: a node counts once however many scopes share its name.
* A **scope** is any other frame (``proton.scope(name, {"flops16": ..., "bytes": ...})``): its
  FLOPs and bytes count where it sits, its time is its descendants' kernel time.
* ``__proton_launch_metadata`` frames (kernels run while computing launch metadata) and their
  subtrees are ignored, as the official viewer does.
* Triton 3.6 writes zero "hint" metrics on ``ROOT`` (``flops16: 0``, ``time (ns): 0``...) so
  hatchet creates the columns; zero metrics on a top-level ``ROOT`` are dropped.
* Array-valued metrics (3.8 flexible metrics: per-device or per-call lists) are **summed**;
  string-valued metrics other than the device fields are ignored. A list in ``time``, ``flops*``,
  ``bytes`` or ``count`` must hold numbers only.
* Device metadata may be missing (3.8 allows it): :attr:`Profile.gpu` is then ``None`` and
  :meth:`Profile.perfdata` needs ``gpu=``.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from functools import cached_property
from itertools import compress, repeat
from types import MappingProxyType
from typing import Any

from .._files import short, short_repr
from ..errors import PerfModelError, ProfileError, UnknownGPUError
from ..formats import Format, FormatLike, get_format
from ..models.kernel_choice import kernel_class_of
from ..perfdata import PerfData, bitwidth_format
from ..specs.gpu import GPULike, GPUSpec, get_gpu
from ..specs.proton import DEVICE_RANGES, device_range_applies
from .hatchet import _MAX_METRIC, _fail, _load_json
from .proton_tree import LAUNCH_METADATA_FRAME, by_width, walk

__all__ = ["LAUNCH_METADATA_FRAME", "Kernel", "Profile", "read"]


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Kernel:
    """One kernel node of a profile (a node with device time of its own).

    Attributes:
        name: the frame name (kernel name, or the ``launch_metadata`` ``name``).
        path: frame names from below ``ROOT`` down to and including this kernel.
        count: launches aggregated into this node.
        time_s: total device time of those launches, seconds.
        flops: FLOP per Proton bit width, e.g. ``{16: 5.5e12}``; width ``0`` holds the width-less
            ``flops`` metric.
        bytes: device-memory bytes read + written, as reported.
        device_type, device_id: Proton's device fields (``"CUDA"``, ``"0"``), ``None`` if absent.
    """

    name: str
    path: tuple[str, ...]
    count: int
    time_s: float
    flops: Mapping[int, float]
    bytes: float
    device_type: str | None
    device_id: str | None

    @property
    def total_flops(self) -> float:
        """FLOP over every bit width."""
        return float(sum(self.flops.values()))

    @property
    def gemm_kernel(self) -> str | None:
        """The class of cuBLAS GEMM kernel this is, by its name (:func:`perfmodel.models.kernel_choice.kernel_class_of`:
        ``"hopper"``, ``"cutlass_sm80"``, ``"cutlass_sm75"``, ``"gemv"``, ``"gemmSN"``), ``None`` for any other
        kernel: the measured side of :func:`perfmodel.gemm_kernel`."""
        return kernel_class_of(self.name)


class Profile:
    """A parsed Proton profile. Build with :func:`read`.

    Attributes:
        path: the file read.
        devices: the raw device metadata, ``{device_type: {device_id: {...}}}`` (empty if missing).
        kernels: every kernel node, in file (pre-)order.
    """

    def __init__(self, path: str, roots: list[Any], devices: Mapping[str, Any], *, json_values: bool = False) -> None:
        """``json_values``: ``roots`` come from :func:`json.loads` (as :func:`read` gives them), which spares
        the walk a look at the type of most values (:func:`perfmodel.measured.proton_tree.walk`)."""
        self.path = path
        self.devices: Mapping[str, Any] = MappingProxyType(dict(devices))
        self._walk(roots, json_values)

    # -- parsing --------------------------------------------------------------------------------
    def _walk(self, roots: list[Any], json_values: bool) -> None:
        """Flat per-node and per-kernel columns in pre-order (parents first):
        :func:`perfmodel.measured.proton_tree.walk`."""
        tree = self._tree = walk(self.path, roots, json_values=json_values)
        self._names, self._parents, self._n_children = tree.names, tree.parents, tree.n_children
        self._kernel_nodes = tree.kernel_nodes
        self._counts, self._device_types, self._device_ids = tree.counts, tree.device_types, tree.device_ids

    # per-node metric columns (built on first use: perfdata() reads the per-kernel ones)
    @cached_property
    def _time(self) -> list[Any]:
        """Device time per node, ns (0 for nodes that are no kernel)."""
        out: list[Any] = [0] * len(self._names)
        any(map(out.__setitem__, self._kernel_nodes, self._tree.time))
        return out

    @cached_property
    def _flops(self) -> list[dict[int, Any] | None]:
        """``{width: FLOP}`` per node (``None``: no FLOP metric)."""
        out: list[dict[int, Any] | None] = [None] * len(self._names)
        any(map(out.__setitem__, self._kernel_nodes, self._tree.kernel_flops()))
        for i, (flops, _) in self._tree.scope_metrics.items():
            out[i] = flops
        return out

    @cached_property
    def _bytes(self) -> list[Any]:
        """Bytes per node."""
        out: list[Any] = [0] * len(self._names)
        any(map(out.__setitem__, self._kernel_nodes, self._tree.bytes))
        for i, (_, nbytes) in self._tree.scope_metrics.items():
            out[i] = nbytes
        return out

    @cached_property
    def _extras(self) -> dict[int, tuple[int, str | None, str | None]]:
        """Kernel node -> (launch count, device type, device id)."""
        return dict(
            zip(self._kernel_nodes, zip(self._counts, self._device_types, self._device_ids, strict=True), strict=True)
        )

    def _path_of(self, index: int) -> tuple[str, ...]:
        out = []
        while index >= 0:
            out.append(self._names[index])
            index = self._parents[index]
        if len(out) > 1 and out[-1] == "ROOT":
            out.pop()
        return tuple(reversed(out))

    # -- public view ----------------------------------------------------------------------------
    @cached_property
    def kernels(self) -> list[Kernel]:
        """Every kernel node, in file order (see the module's counting rules)."""
        tree = self._tree
        out = []
        for i, name, launches, time_ns, flops, nbytes, dtype, did in zip(
            tree.kernel_nodes,
            tree.kernel_names,
            tree.counts,
            tree.time,
            tree.kernel_flops(),
            tree.bytes,
            tree.device_types,
            tree.device_ids,
            strict=True,
        ):
            out.append(
                Kernel(
                    name=name,
                    path=self._path_of(i),
                    count=launches,
                    time_s=time_ns / 1e9,
                    flops=MappingProxyType(dict(flops or {})),
                    bytes=nbytes,
                    device_type=dtype,
                    device_id=did,
                )
            )
        return out

    @cached_property
    def gpu(self) -> GPUSpec | None:
        """The GPU in the device metadata (via :func:`perfmodel.specs.gpu.gpu_from_proton`).

        ``None`` when the metadata is missing, or when it lists GPUs of different models (then
        :meth:`perfdata` resolves the GPU of the matched kernels).
        """
        specs = {spec.name: spec for spec in (self._device_gpu(t, i) for t, i in self._device_keys())}
        return next(iter(specs.values())) if len(specs) == 1 else None

    def _device_keys(self) -> list[tuple[str, str]]:
        return [(t, i) for t, ids in self.devices.items() if isinstance(ids, Mapping) for i in ids]

    def _device_gpu(self, device_type: str | None, device_id: str | None) -> GPUSpec:
        from ..specs.gpu import gpu_from_proton

        types = self.devices
        if device_type not in types and len(types) == 1:  # e.g. a numeric 3.0 device type
            device_type = next(iter(types))
        info = types.get(device_type, {}).get(device_id) if device_type in types else None
        if info is None:
            ids = self._device_keys()
            if len(ids) != 1:
                raise _fail(
                    self.path,
                    f"no device metadata for {short(device_type, 40)}:{short(device_id, 40)}; "
                    f"devices in the file: {short(ids or 'none')}. Pass gpu=.",
                )
            device_type, device_id = ids[0]
            info = types[device_type][device_id]
        where = f"device {short(device_type, 40)}:{short(device_id, 40)}"
        try:
            return gpu_from_proton(device_type, info)
        except ProfileError as exc:
            raise _fail(self.path, f"{where}: {exc}") from None
        except UnknownGPUError as exc:
            raise UnknownGPUError(f"{self.path}: {where}: {exc}") from None

    def _resolve(self, gpu: GPULike | None, devices: Iterable[tuple[str | None, str | None]], what: str) -> GPULike:
        if gpu is not None:
            return gpu
        if not self.devices:
            raise _fail(
                self.path,
                f"the profile has no device metadata, so the GPU of {what} is "
                "unknown; pass gpu= (a name such as 'H200' or a GPUSpec)",
            )
        specs = {s.name: s for s in (self._device_gpu(t, i) for t, i in set(devices))}
        if len(specs) != 1:
            raise _fail(
                self.path,
                f"{what} ran on different GPU models ({', '.join(sorted(specs))}); pass gpu= or a narrower pattern",
            )
        return next(iter(specs.values()))

    def _regex(self, pattern: str, what: str) -> re.Pattern[str]:
        try:
            return re.compile(pattern)
        except (re.error, TypeError) as exc:
            raise _fail(self.path, f"invalid {what} pattern {short_repr(pattern)}: {exc}") from None

    def perfdata(
        self,
        pattern: str = r".*matmul.*",
        *,
        leaves_only: bool = True,
        gpu: GPULike | None = None,
        dtype: FormatLike | None = None,
        label: str | None = None,
    ) -> PerfData:
        """Sum the kernels whose name matches ``pattern`` into one measured :class:`PerfData`.

        ``pattern`` is a regular expression matched against the whole kernel name
        (:func:`re.fullmatch`, like the viewer's ``=~``). ``leaves_only`` keeps kernels with no
        child frames (``__proton_launch_metadata`` does not count), as the seed's ``IS LEAF``.

        Sums: ``time_s`` (seconds) = sum of the kernels' device time; ``flops`` = FLOP over all
        bit widths; ``bytes`` = bytes. ``dtype`` defaults to the format of the bit width carrying
        the most FLOPs (ties go to the narrower width, whose higher peak never overstates
        utilisation): 16 -> bf16, 8 -> fp8_e4m3 (int8 on a GPU without fp8, e.g. MI200 or A100: the
        8-bit roof Proton uses there), 32 -> tf32, 4 -> mxfp4; with no FLOPs at all,
        bf16 (the compute roof is then irrelevant to ``util``). ``gpu`` defaults to the GPU of
        the matched kernels' devices.

        Raises:
            ProfileError: nothing matches (the message lists some kernel names), the GPU is
                unknown, or the sums are negative (a Proton overflow).
        """
        regex = self._regex(pattern, "kernel-name")
        tree = self._tree
        hits = list(map(_Matches(regex).__getitem__, tree.kernel_names))  # per kernel, in kernel order
        if leaves_only:
            for j in tree.inner_kernels:
                hits[j] = False
        picked = hits.count(True)
        if not picked:
            sample = sorted(set(tree.kernel_names))
            shown = ", ".join(repr(short(n, 80)) for n in sample[:8]) + (", ..." if len(sample) > 8 else "")
            leaf = " leaf" if leaves_only else ""
            raise _fail(
                self.path,
                f"no{leaf} kernel name matches {pattern!r} (re.fullmatch); "
                f"{len(sample)} kernel names, e.g. {shown or 'none'}",
            )
        devices = _devices(self._device_types, self._device_ids, hits)
        gpu = self._resolve(gpu, devices, f"kernels matching {pattern!r}")
        # sums in kernel order, as a loop over the kernels would add them (so floats round the same)
        return self._totals(
            tree.flops_by_width(hits),
            sum(compress(tree.bytes, hits)),
            sum(compress(tree.time, hits)),
            gpu=gpu,
            dtype=dtype,
            label=pattern if label is None else label,
            meta={"pattern": pattern, "kernels": picked, "launches": sum(compress(self._counts, hits))},
        )

    def scopes(
        self, pattern: str | None = None, *, gpu: GPULike | None = None, dtype: FormatLike | None = None
    ) -> dict[str, PerfData]:
        """One :class:`PerfData` per scope name: FLOPs and bytes of the scope and everything below
        it, time = device time of the kernels below it (seconds).

        A scope is a non-kernel frame other than ``ROOT`` with kernel time below it; ``pattern``
        (``re.fullmatch`` on the name, ``None`` = all) selects them. Frames sharing a name are
        merged; each node counts once even when such frames nest. ``dtype`` as in :meth:`perfdata`.

        Raises:
            ProfileError: a ``pattern`` matches no scope, or the GPU is unknown.
        """
        regex = self._regex(pattern, "scope-name") if pattern is not None else None
        names, parents = self._names, self._parents
        kernel_set = set(self._kernel_nodes)
        groups: dict[str, list[int]] = {}
        for i, name in enumerate(names):
            if i in kernel_set or (parents[i] < 0 and name == "ROOT"):
                continue
            if regex is None or regex.fullmatch(name):
                groups.setdefault(name, []).append(i)
        size = [1] * len(names)  # subtree sizes; pre-order makes subtree(i) = range(i, i + size[i])
        for i in range(len(names) - 1, 0, -1):
            if parents[i] >= 0:
                size[parents[i]] += size[i]
        members_of: dict[str, list[int]] = {}
        for name, starts in groups.items():
            nodes, end = [], -1
            for start in starts:  # ascending; a same-name frame nested in another is already covered
                if start >= end:
                    end = start + size[start]
                    nodes.extend(range(start, end))
            members_of[name] = nodes
        out: dict[str, PerfData] = {}
        for name, nodes in members_of.items():
            kernels = [i for i in nodes if i in kernel_set]
            if not kernels or sum(self._time[i] for i in kernels) <= 0:
                continue
            devices = [self._extras[i][1:] for i in kernels]
            out[name] = self._sum(
                nodes,
                kernels,
                gpu=self._resolve(gpu, devices, f"scope {name!r}"),
                dtype=dtype,
                label=name,
                meta={"scope": name, "kernels": len(kernels)},
            )
        if pattern is not None and not out:
            sample = [short(n, 80) for n in sorted({n for i, n in enumerate(names) if i not in kernel_set})[:8]]
            raise _fail(self.path, f"no scope with kernel time matches {pattern!r}; scopes: {sample}")
        return out

    def _sum(
        self,
        nodes: list[int],
        kernels: list[int],
        *,
        gpu: GPULike,
        dtype: FormatLike | None,
        label: str,
        meta: dict[str, Any],
    ) -> PerfData:
        # sums in node order, as a loop over the nodes would add them (so floats round the same)
        return self._totals(
            by_width(list(filter(None, map(self._flops.__getitem__, nodes)))),
            sum(map(self._bytes.__getitem__, nodes)),
            sum(map(self._time.__getitem__, kernels)),
            gpu=gpu,
            dtype=dtype,
            label=label,
            meta=meta,
        )

    def _totals(
        self,
        flops_by_width: dict[int, Any],
        nbytes: Any,
        time_ns: Any,
        *,
        gpu: GPULike,
        dtype: FormatLike | None,
        label: str,
        meta: dict[str, Any],
    ) -> PerfData:
        """The :class:`PerfData` of summed FLOPs per width, bytes and device time (ns)."""
        time_s = time_ns / 1e9
        flops = sum(flops_by_width.values())
        if flops < 0 or nbytes < 0 or time_s <= 0:
            raise _fail(
                self.path,
                f"{label!r}: time {time_s} s, flops {flops}, bytes {nbytes}: negative "
                "or zero sums (Proton overflowed a counter?)",
            )
        fmt = dtype if dtype is not None else _default_format(flops_by_width, self.path, label, gpu)
        try:
            return PerfData(
                time_s=time_s,
                flops=flops,
                bytes=nbytes,
                dtype=fmt,
                gpu=gpu,
                label=label,
                source="measured",
                meta={**meta, "flops_by_width": dict(flops_by_width), "profile": self.path},
            )
        except PerfModelError as exc:  # e.g. a dtype= the GPU has no peak for: say which file and selection
            raise type(exc)(f"{self.path}: {short(label, 80)!r}: {exc}") from None

    def __repr__(self) -> str:
        return f"Profile({self.path!r}, {len(self._kernel_nodes)} kernels, devices={dict(self.devices)})"


class _Matches(dict):
    """Kernel name -> whether ``regex`` fully matches it; each distinct name is matched once, on first lookup
    (kernel names repeat)."""

    __slots__ = ("_fullmatch",)

    def __init__(self, regex: re.Pattern[str]) -> None:
        super().__init__()
        self._fullmatch = regex.fullmatch

    def __missing__(self, name: str) -> bool:
        hit = self[name] = self._fullmatch(name) is not None
        return hit


def _devices(types: list[str | None], ids: list[str | None], hits: list[bool]) -> Iterator[tuple[Any, Any]]:
    """``(device type, device id)`` of the kernels where ``hits`` is true, lazily; with one device type, each
    distinct pair once, in order of first appearance (a ``set()`` of it is built, and iterates, as the set of
    every pair would be)."""
    kinds = dict.fromkeys(compress(types, hits))
    if len(kinds) == 1:
        (kind,) = kinds
        yield from zip(repeat(kind), dict.fromkeys(compress(ids, hits)))
    else:
        yield from zip(compress(types, hits), compress(ids, hits), strict=True)


def _default_format(by_width: Mapping[int, float], path: str, label: str, gpu: GPULike) -> Format:
    """The format of the bit width with the most FLOPs (ties: narrower); bf16 without FLOPs.

    Width 8 on a GPU without an fp8 peak (AMD MI200 ``gfx90a``, NVIDIA A100 ``80``) -> int8: the
    8-bit roof ``triton.profiler.specs.max_flops`` uses there is the int8 rate ("For gfx90a we use the
    performance of INT8 since it doesn't support FP8 matrix operations", specs.py, Triton 3.6), so
    ``util`` matches the proton-viewer's.
    """
    widths = [(v, -w, w) for w, v in by_width.items() if w and v > 0]
    if not widths:
        if by_width.get(0, 0) > 0:
            raise _fail(path, f"{short(label, 80)!r}: FLOPs have no bit width (plain 'flops' metric); pass dtype=")
        return bitwidth_format(16)
    width = max(widths)[2]
    try:
        fmt = bitwidth_format(width)
    except PerfModelError:
        raise _fail(path, f"{short(label, 80)!r}: no number format for flops{width}; pass dtype=") from None
    if width == 8:
        supported = get_gpu(gpu).peaks.supported()
        if fmt.name not in supported and "int8" in supported:
            return get_format("int8")
    return fmt


def read(path: str | os.PathLike[str], *, max_bytes: int | None = None) -> Profile:
    """Parse a Proton ``.hatchet`` (JSON tree) profile.

    Any nesting depth is read, without recursion and without changing process-wide state
    (:func:`perfmodel._files.loads_json`). Every metric is checked as it is read: FLOPs, bytes and
    launch counts finite and >= 0 (counts whole), kernel time > 0; device metadata numbers
    (``num_sms``, ``clock_rate``, ``memory_clock_rate``, ``bus_width``) within their physical ranges where
    present (:data:`perfmodel.specs.proton.DEVICE_RANGES`; SM count and bus width whole).

    ``max_bytes`` overrides the size limit (default 1 GiB, or ``$PERFMODEL_MAX_FILE_BYTES``).

    Raises:
        FileRefusedError: not a regular file (FIFO, device, folder: refused at once), or larger than
            the limit (an ``OSError``).
        ProfileError: the file cannot be read, is not JSON, is not a Proton tree, or holds a bad
            value (the message names the file, the frame and the value).
    """
    if isinstance(path, (bool, bytes)) or not isinstance(path, (str, os.PathLike)):
        raise ProfileError(
            f"proton.read needs the path of a .hatchet file (a str or pathlib.Path), got {type(path).__name__} "
            f"{short_repr(path)}"
        )
    path = os.fspath(path)
    # The parse allocates millions of dicts, lists and tuples that all survive it: the cyclic garbage
    # collector would scan them again and again (2.7 s of a 6.7 s read of 1M kernels, issue #35) and finds
    # nothing, as JSON has no cycles. It is paused for the read and resumed as it was, whatever happens.
    paused = gc.isenabled()
    gc.disable()
    try:
        return _read(path, max_bytes)
    finally:
        if paused:
            gc.enable()


def _read(path: str, max_bytes: int | None) -> Profile:
    """:func:`read` on a path already checked to be one (the garbage collector paused by the caller)."""
    data = _load_json(path, max_bytes)
    if isinstance(data, dict) and "frame" in data:
        data = [data]  # a bare tree (hatchet literal of one root)
    if not isinstance(data, list) or not data:
        raise _fail(
            path, f"top level is {type(data).__name__}, expected a JSON list [root frame, ..., device metadata]"
        )
    devices: Any = {}
    if isinstance(data[-1], dict) and "frame" not in data[-1]:
        devices = data[-1]
        data = data[:-1]
    if not data:
        raise _fail(path, "no tree root before the device metadata")
    if not isinstance(devices, dict) or not all(isinstance(v, dict) for v in devices.values()):
        raise _fail(path, "device metadata is not {device_type: {device_id: {...}}}")
    _check_devices(path, devices)
    return Profile(path, data, devices, json_values=True)


#: Device metadata numbers that must be positive where present (kHz clocks, bits, SM/CU count).
_DEVICE_NUMBERS = ("num_sms", "clock_rate", "memory_clock_rate", "bus_width")


def _check_devices(path: str, devices: Mapping[str, Mapping[str, Any]]) -> None:
    """Each device's metadata is an object whose numbers are positive and finite (SM count whole)."""
    for device_type, ids in devices.items():
        for device_id, info in ids.items():
            where = f"device {short(device_type, 40)}:{short(device_id, 40)}"
            if not isinstance(info, dict):
                raise _fail(path, f"{where}: metadata is a {type(info).__name__}, expected an object")
            for key in _DEVICE_NUMBERS:
                if key not in info:
                    continue
                value = info[key]
                lo, hi, unit, why = DEVICE_RANGES[key]
                whole = key in ("num_sms", "bus_width")
                ok = type(value) in (int, float) and 0 < value <= _MAX_METRIC
                if ok and whole and value != int(value):
                    ok = False
                if not ok:
                    kind = "a whole number > 0" if whole else "a finite number > 0"
                    raise _fail(path, f"{where}: {key!r} is {short_repr(value)}, expected {kind}")
                if device_range_applies(device_type, key) and not lo <= value <= hi:
                    raise _fail(
                        path, f"{where}: {key!r} is {short_repr(value)}, outside [{lo:g}, {hi:g}] {unit} ({why})"
                    )
            arch = info.get("arch")
            if arch is not None and type(arch) not in (str, int):
                raise _fail(path, f"{where}: 'arch' is {short_repr(arch)}, expected a string such as '90' or 'gfx942'")
