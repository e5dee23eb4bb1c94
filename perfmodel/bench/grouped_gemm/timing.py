"""The time phase: ``triton.testing.do_bench`` over every planned item and neighbour (:func:`run_time`), in a
process that never attaches a profiler.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from .._device import bench, require_cuda
from ..dataset import DatasetWriter
from .calls import _ERRORS, _actual_layout, _make_call, _neighbour_call, _profiler_enabled, _weights
from .config import MIN_REPS, REP_MS, WARMUP_MS, WRITE_EVERY_S, GroupedGemmError, Log
from .items import GroupedItem, NeighbourItem
from .plan import _bench_budget_ms, _by_shape, estimate_item_kernel_s
from .probe import _is_cuda_death, _skip_reason, _wrong_probes

__all__ = ["run_time"]


def _time_neighbours(
    torch: Any,
    nb_writer: DatasetWriter,
    neighbours: Sequence[NeighbourItem],
    *,
    warmup_ms: float,
    rep_ms: float,
    errors: list[dict[str, Any]],
    log: Log,
) -> int:
    """do_bench every dense fp8 neighbour, one ``timing: "event"`` record each; the number written."""
    nb_done = 0
    for item in neighbours:
        warm, rep = _bench_budget_ms(item.kernel_s(), warmup_ms, rep_ms)
        try:
            fn, ops = _neighbour_call(torch, item)
            w0 = time.time()
            t = bench(fn, warmup_ms=warm, rep_ms=rep)
        except _ERRORS as exc:
            errors.append({"id": item.id, "error": str(exc)[:300]})
            log(f"time: {item.id} failed: {str(exc)[:200]}")
            continue
        rec = item.fields()
        rec.update(timing="event", method="do_bench", warmup_ms=warm, rep_ms=rep, **t)
        rec.update(wall_start_s=w0, wall_end_s=time.time(), tflops=item.flops / t["time_s"] / 1e12)
        nb_writer.add(rec)
        nb_done += 1
        del fn, ops
    return nb_done


def _time_shape(
    torch: Any,
    writer: DatasetWriter,
    shape: Sequence[GroupedItem],
    *,
    warmup_ms: float,
    rep_ms: float,
    unsafe: set[tuple[str, str, str, str]],
    wrong: set[tuple[str, str, str, str]],
    errors: list[dict[str, Any]],
    log: Log,
) -> tuple[int, bool]:
    """do_bench the grouped items of one shape (weights made once per format and layout): the records written and
    whether the CUDA context died (then the sweep stops)."""
    done = 0
    weights: dict[tuple[str, str], Any] = {}
    for item in shape:
        why = _skip_reason(item, unsafe)
        if why:
            errors.append({"id": item.id, "error": why})
            continue
        warm, rep = _bench_budget_ms(estimate_item_kernel_s(item), warmup_ms, rep_ms)
        try:
            key = (item.fmt, item.layout)
            if key not in weights:
                weights[key] = _weights(torch, item.form, item.fmt, item.layout, item.K, item.N, item.G)
            fn, ops = _make_call(torch, item.form, item.fmt, item.layout, item.K, item.N, item.rows, weights[key])
            w0 = time.time()
            t = bench(fn, warmup_ms=warm, rep_ms=rep)
        except _ERRORS as exc:
            errors.append({"id": item.id, "error": str(exc)[:300]})
            log(f"time: {item.id} failed: {str(exc)[:200]}")
            if _is_cuda_death(exc):
                return done, True
            torch.cuda.empty_cache()
            continue
        rec = item.fields()
        rec.update(_actual_layout(ops), probe_wrong=_wrong_probes(item, wrong))
        rec.update(timing="event", method="do_bench", warmup_ms=warm, rep_ms=rep, **t)
        rec.update(wall_start_s=w0, wall_end_s=time.time(), tflops=item.flops / t["time_s"] / 1e12)
        writer.add(rec)
        done += 1
        del fn, ops
    return done, False


def run_time(
    writer: DatasetWriter,
    nb_writer: DatasetWriter,
    items: Sequence[GroupedItem],
    neighbours: Sequence[NeighbourItem],
    *,
    budget_s: float,
    warmup_ms: float = WARMUP_MS,
    rep_ms: float = REP_MS,
    unsafe: set[tuple[str, str, str, str]] | None = None,
    wrong: set[tuple[str, str, str, str]] | None = None,
    log: Log = print,
) -> dict[str, Any]:
    """do_bench every neighbour, then every grouped item (weights made once per shape), one ``timing: "event"``
    record each; stops starting items after ``budget_s``. Never starts a profiler. Skips items whose probe failed."""
    torch = require_cuda()
    if _profiler_enabled(torch):
        raise GroupedGemmError("a profiler is active in this process; event timings must come from a clean process")
    torch.manual_seed(0)
    t0 = last = time.perf_counter()
    done = 0
    errors: list[dict[str, Any]] = []
    truncated = False
    timing = {"warmup_ms": warmup_ms, "rep_ms": rep_ms, "errors": errors, "log": log}
    nb_done = _time_neighbours(torch, nb_writer, neighbours, **timing)
    nb_writer.flush()
    log(f"time: {nb_done} neighbour records, {time.perf_counter() - t0:.0f} s")
    dead = False
    for shape in _by_shape(items).values():
        if dead or time.perf_counter() - t0 > budget_s:
            truncated = True
            log(f"time: stopping after {done} grouped records ({'CUDA context gone' if dead else 'budget spent'})")
            break
        n, dead = _time_shape(torch, writer, shape, unsafe=unsafe or set(), wrong=wrong or set(), **timing)
        done += n
        if not dead:
            torch.cuda.empty_cache()
        if time.perf_counter() - last > WRITE_EVERY_S:
            writer.flush()
            last = time.perf_counter()
            log(f"time: {done}/{len(items)} grouped records, {last - t0:.0f} s")
    writer.flush()
    return {
        "records": done,
        "neighbour_records": nb_done,
        "planned": len(items),
        "planned_neighbours": len(neighbours),
        "truncated": truncated,
        "seconds": time.perf_counter() - t0,
        "errors": errors[:100],
        "n_errors": len(errors),
        "profiler_enabled_after": _profiler_enabled(torch),
        "warmup_ms": warmup_ms,
        "rep_ms": rep_ms,
        "min_reps": MIN_REPS,
        "budget_s": budget_s,
    }
