"""The kernel phase: kernel-name parsing, the per-call summary of profiled GPU activity and :func:`run_kernels`,
the same ids under ``torch.profiler`` (the profiled-call loop is :mod:`perfmodel.bench.profiled`).
"""

from __future__ import annotations

import dataclasses
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._device import quantile, require_cuda
from ..dataset import DatasetWriter
from ..profiled import flush_marker, profile_calls, split_at_markers
from .calls import _ERRORS, _actual_layout, _make_call, _neighbour_call, _weights
from .config import FLUSH_BYTES, PROFILE_WARMUP_CALLS, PROFILED_CALLS, WRITE_EVERY_S, GroupedGemmError, Log
from .items import GroupedItem, NeighbourItem
from .plan import _by_shape
from .probe import _skip_reason, _wrong_probes

__all__ = ["parse_kernel_name", "run_kernels", "split_at_markers", "summarize_calls"]


_CUTE_TRIPLE = re.compile(r"cute::C<(\d+)>\s*,\s*cute::C<(\d+)>\s*,\s*cute::C<(\d+)>")
# a mangled name (as torch.profiler reported them on torch 2.11): the CTA tile follows the kernel schedule, e.g.
# ...KernelPtrArrayTmaWarpSpecializedCooperativeEEENSA_IJNSG_ILi128EEENSG_ILi256EEENSG_ILi64EEEEEE...
_MANGLED_AFTER_SCHEDULE = re.compile(r"KernelPtrArrayTmaWarpSpecialized(?:Cooperative|Pingpong)\w*?EEN[0-9A-Z]*_IJ")
_MANGLED_INT = re.compile(r"N[0-9A-Z]*_ILi(\d+)EEE")
_MANGLED_SUB = re.compile(r"S[0-9A-Z]*_")


def _mangled_tile(name: str) -> list[int | None] | None:
    """The three CTA tile sizes (M, N, K) after the schedule in a mangled CUTLASS 3 name; None for a size the mangler
    wrote as a back-reference to an earlier one (which one is not resolved); None if the name has no such part."""
    m = _MANGLED_AFTER_SCHEDULE.search(name)
    if not m:
        return None
    pos, out = m.end(), []
    for _ in range(3):
        if (hit := _MANGLED_INT.match(name, pos)) is not None:
            out.append(int(hit[1]))
        elif (hit := _MANGLED_SUB.match(name, pos)) is not None:
            out.append(None)
        else:
            return None
        pos = hit.end()
    return out


def parse_kernel_name(name: str) -> dict[str, Any]:
    """What a GPU activity name says: ``role`` (``prepare``: torch's prepare_grouped_gemm_data; ``gemm``; ``memset``
    / ``memcpy``; ``other``), ``library`` (cutlass | nvjet | None), ``schedule`` (Pingpong | Cooperative | None, from
    CUTLASS's kernel schedule name), ``fast_accum`` (FP8FastAccum in the name), ``sm90`` (Sm90 in the name) and
    ``cute_triples``: the first three ``cute::C<a>, cute::C<b>, cute::C<c>`` triples of a demangled name (cluster and
    tile shapes appear as such; which is which is not read off the name, so the raw name stays in the record), and
    ``tile``: the CTA tile of a mangled name (:func:`_mangled_tile`; torch.profiler gave mangled CUTLASS names on the
    H200 of 2026-12-03, whose records hold ``cute_triples`` empty and no ``tile``: re-parse their raw names)."""
    info: dict[str, Any] = {"role": "other", "library": None, "schedule": None, "fast_accum": False, "sm90": False}
    if name.startswith(("Memset", "Memcpy")):
        info["role"] = name.split()[0].lower()
        return info
    if "prepare_grouped_gemm_data" in name:
        info["role"] = "prepare"
        return info
    if "cutlass" in name or "nvjet" in name or "gemm" in name.lower():
        info["role"] = "gemm"
        info["library"] = "nvjet" if "nvjet" in name else ("cutlass" if "cutlass" in name else None)
    for s in ("Pingpong", "Cooperative"):
        if s in name:
            info["schedule"] = s
            break
    info["fast_accum"] = "FastAccum" in name
    info["sm90"] = "Sm90" in name or "sm90" in name
    info["cute_triples"] = [[int(x) for x in m.groups()] for m in _CUTE_TRIPLE.finditer(name)][:3]
    info["tile"] = _mangled_tile(name)
    return info


def summarize_calls(calls: Sequence[Sequence[tuple[str, float, float]]]) -> dict[str, Any]:
    """Kernel-phase fields from the profiled calls of one item (each a list of (name, start_s, duration_s)),
    seconds: ``time_s`` the median per-call sum of GPU activity, ``gemm_time_s`` / ``prepare_time_s`` the median of
    those roles' sums, ``span_s`` first start to last end, ``kernels`` the most common sequence (name, median
    duration, role), ``main_kernel`` its longest and its parse."""
    sums = [sum(d for _, _, d in c) for c in calls]
    spans = [c[-1][1] + c[-1][2] - c[0][1] for c in calls if c]
    seqs = Counter(tuple(n for n, _, _ in c) for c in calls)
    seq = seqs.most_common(1)[0][0]
    same = [c for c in calls if tuple(n for n, _, _ in c) == seq]
    infos = [parse_kernel_name(n) for n in seq]
    kernels = [
        {"name": n, "time_s": statistics.median(c[j][2] for c in same), "role": infos[j]["role"]}
        for j, n in enumerate(seq)
    ]

    def role_sum(role: str) -> float:
        return statistics.median(sum(d for n, _, d in c if parse_kernel_name(n)["role"] == role) for c in calls)

    j_main = max(range(len(kernels)), key=lambda j: kernels[j]["time_s"]) if kernels else None
    return {
        "time_s": statistics.median(sums),
        "time_s_p20": quantile(sums, 0.2),
        "time_s_p80": quantile(sums, 0.8),
        "time_s_all": sums,
        "gemm_time_s": role_sum("gemm"),
        "prepare_time_s": role_sum("prepare"),
        "span_s": statistics.median(spans) if spans else None,
        "n_kernels": len(seq),
        "kernel_sequences": len(seqs),
        "kernels": kernels,
        "main_kernel": seq[j_main] if j_main is not None else None,
        "main_kernel_info": infos[j_main] if j_main is not None else None,
    }


#: a prepared call: the item, its call, the operands' layout (None for the neighbours)
_Ready = tuple[Any, Callable[[], Any], Mapping[str, Any] | None]


@dataclasses.dataclass
class _KernelPhase:
    """The state of one :func:`run_kernels`: torch, the L2 flush and its trace marker, the profiled calls per item,
    the probes' wrong set, the errors and the record counts."""

    torch: Any
    flush: Callable[[], Any]
    marker: str
    calls: int
    wrong: set[tuple[str, str, str, str]]
    log: Log
    errors: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    counts: dict[str, int] = dataclasses.field(default_factory=lambda: {"grouped": 0, "neighbours": 0})

    def session(self, ready: Sequence[_Ready], out: DatasetWriter, kind: str) -> None:
        """Profile the prepared calls in one session; one ``timing: "kernel"`` record per item into ``out``."""
        calls = self.calls
        got = profile_calls(self.torch, [fn for _, fn, _ in ready], calls=calls, flush=self.flush, marker=self.marker)
        if got.per_fn is None:
            for item, _, _ in ready:
                self.errors.append(
                    {"id": item.id, "error": f"trace split into {got.n_segments} calls, expected {len(ready) * calls}"}
                )
            return
        for (item, _, ops), per_call in zip(ready, got.per_fn, strict=True):
            if any(not c for c in per_call):
                self.errors.append({"id": item.id, "error": "a profiled call had no GPU activity"})
                continue
            rec = item.fields()
            if ops is not None:
                rec.update(_actual_layout(ops), probe_wrong=_wrong_probes(item, self.wrong))
            rec.update(
                timing="kernel",
                method="torch.profiler",
                calls=calls,
                warmup_calls=PROFILE_WARMUP_CALLS,
                l2_flush=True,
                **summarize_calls(per_call),
            )
            rec.update(
                wall_start_s=got.wall_start_s, wall_end_s=got.wall_end_s, tflops=item.flops / rec["time_s"] / 1e12
            )
            out.add(rec)
            self.counts[kind] += 1

    def prepared(self, item: Any, make: Callable[[], tuple[Callable[[], Any], Any]]) -> _Ready | None:
        """The call of ``item`` made and warmed up (PROFILE_WARMUP_CALLS calls); None (an error noted) if it fails."""
        try:
            fn, ops = make()
            for _ in range(PROFILE_WARMUP_CALLS):
                fn()
            self.torch.cuda.synchronize()
        except _ERRORS as exc:
            self.errors.append({"id": item.id, "error": str(exc)[:300]})
            self.log(f"kernels: {item.id} failed: {str(exc)[:200]}")
            return None
        return item, fn, ops if isinstance(ops, Mapping) else None

    def shape(self, shape: Sequence[GroupedItem], out: DatasetWriter, unsafe: set[tuple[str, str, str, str]]) -> None:
        """One shape's grouped items in one session (weights made once per format and layout)."""
        torch = self.torch
        weights: dict[tuple[str, str], Any] = {}
        ready = []
        for item in shape:
            why = _skip_reason(item, unsafe)
            if why:
                self.errors.append({"id": item.id, "error": why})
                continue
            key = (item.fmt, item.layout)

            def make(
                item: GroupedItem = item, key: tuple[str, str] = key, cache: dict[tuple[str, str], Any] = weights
            ) -> tuple[Callable[[], Any], Any]:
                if key not in cache:
                    cache[key] = _weights(torch, item.form, item.fmt, item.layout, item.K, item.N, item.G)
                return _make_call(torch, item.form, item.fmt, item.layout, item.K, item.N, item.rows, cache[key])

            r = self.prepared(item, make)
            if r:
                ready.append(r)
        if ready:
            self.session(ready, out, "grouped")
        del ready, weights


def run_kernels(
    writer: DatasetWriter,
    nb_writer: DatasetWriter,
    items: Sequence[GroupedItem],
    neighbours: Sequence[NeighbourItem],
    *,
    budget_s: float,
    calls: int = PROFILED_CALLS,
    unsafe: set[tuple[str, str, str, str]] | None = None,
    wrong: set[tuple[str, str, str, str]] | None = None,
    log: Log = print,
) -> dict[str, Any]:
    """Under ``torch.profiler`` (CUDA activity), one session per shape (the neighbours one session): each item's
    PROFILE_WARMUP_CALLS unprofiled calls, then ``calls`` profiled calls each after the L2 flush (the marker that
    splits the trace). One ``timing: "kernel"`` record per item, the time phase's ids."""
    torch = require_cuda()
    torch.manual_seed(0)
    cache = torch.empty(FLUSH_BYTES // 4, dtype=torch.int, device="cuda")
    flush, marker = flush_marker(torch, cache, GroupedGemmError)
    t0 = last = time.perf_counter()
    ph = _KernelPhase(torch=torch, flush=flush, marker=marker, calls=calls, wrong=wrong or set(), log=log)
    truncated = False
    ready = []
    for nb in neighbours:
        r = ph.prepared(nb, lambda nb=nb: _neighbour_call(torch, nb))
        if r:
            ready.append(r)
    if ready:
        ph.session(ready, nb_writer, "neighbours")
    del ready
    nb_writer.flush()
    for shape in _by_shape(items).values():
        if time.perf_counter() - t0 > budget_s:
            truncated = True
            log(f"kernels: budget {budget_s:.0f} s spent after {ph.counts['grouped']} records; stopping")
            break
        ph.shape(shape, writer, unsafe or set())
        torch.cuda.empty_cache()
        if time.perf_counter() - last > WRITE_EVERY_S:
            writer.flush()
            last = time.perf_counter()
            log(f"kernels: {ph.counts['grouped']}/{len(items)} records, {last - t0:.0f} s")
    writer.flush()
    return {
        "records": ph.counts["grouped"],
        "neighbour_records": ph.counts["neighbours"],
        "planned": len(items),
        "planned_neighbours": len(neighbours),
        "truncated": truncated,
        "seconds": time.perf_counter() - t0,
        "errors": ph.errors[:100],
        "n_errors": len(ph.errors),
        "calls": calls,
        "warmup_calls": PROFILE_WARMUP_CALLS,
        "flush_marker": marker,
        "budget_s": budget_s,
    }
