"""Profiled calls: the L2 flush that marks each call in a ``torch.profiler`` trace, the trace split at it, and one
profiler session over a list of calls. Shared by the kernel phase of :mod:`perfmodel.bench.grouped_gemm` and the
repository's layout sweep (``benchmarks/harness/gemm_layouts.py``). torch is imported only inside these functions.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence, Set
from contextlib import AbstractContextManager
from typing import Any

from ._device import kernel_times_s

__all__ = ["Event", "ProfiledCalls", "cuda_profiler", "flush_marker", "profile_calls", "split_at_markers"]

#: one GPU activity of a trace: (name, start_s, duration_s)
Event = tuple[str, float, float]


def split_at_markers(events: Sequence[Event], markers: str | Set[str]) -> list[list[Event]]:
    """Time-sorted GPU activities split at each marker activity (``markers``: one name or a set of names; the L2
    flush before every call): one list per marker with what follows it up to the next; anything before the first
    marker is dropped."""
    names = {markers} if isinstance(markers, str) else markers
    out: list[list[Event]] = []
    for ev in events:
        if ev[0] in names:
            out.append([])
        elif out:
            out[-1].append(ev)
    return out


def cuda_profiler() -> AbstractContextManager[Any]:
    """A ``torch.profiler.profile`` session recording CUDA activity only."""
    from torch.profiler import ProfilerActivity, profile

    return profile(activities=[ProfilerActivity.CUDA])


def flush_marker(
    torch: Any,
    cache: Any,
    error: type[Exception] = RuntimeError,
    *,
    events: Callable[[Any], list[Event]] | None = None,
    profiler: Callable[[], AbstractContextManager[Any]] | None = None,
) -> tuple[Callable[[], Any], str]:
    """The L2 flush and the activity name that marks it in a trace: ``cache.zero_()`` (as do_bench flushes), or
    ``cache.fill_(1)`` if zeroing shows as a plain memset (which cuBLAS and other libraries launch too); the marker is
    the longest activity of a lone flush. Raises ``error`` if neither shows a distinctive kernel. ``events``: reads
    a finished profiler's GPU activities (default :func:`perfmodel.bench._device.kernel_times_s`); ``profiler``: opens
    one profiler session (default :func:`cuda_profiler`)."""
    profiler, events = profiler or cuda_profiler, events or kernel_times_s
    saw: list[str] = []
    for flush in (cache.zero_, lambda: cache.fill_(1)):
        with profiler() as prof:  # the first one: CUPTI's first attach
            flush()
            torch.cuda.synchronize()
        seen = events(prof)
        if seen:
            name = max(seen, key=lambda e: e[2])[0]  # the fill of the whole buffer: the longest
            if not name.startswith(("Memset", "Memcpy")):
                return flush, name
            saw.append(name)
    raise error(f"no distinctive kernel for the L2 flush in the profiler trace; the profiler saw {saw}")


@dataclasses.dataclass(frozen=True)
class ProfiledCalls:
    """One profiler session's result: ``per_fn`` each function's ``calls`` segments of GPU activity (None: the trace
    did not split into functions x calls), ``n_segments`` how many it split into, the session's wall-clock start and
    end (``time.time()`` seconds, to align with GPU clock logs)."""

    per_fn: list[list[list[Event]]] | None
    n_segments: int
    wall_start_s: float
    wall_end_s: float


def profile_calls(
    torch: Any,
    fns: Sequence[Callable[[], Any]],
    *,
    calls: int,
    flush: Callable[[], Any],
    marker: str,
    events: Callable[[Any], list[Event]] | None = None,
    profiler: Callable[[], AbstractContextManager[Any]] | None = None,
) -> ProfiledCalls:
    """Each of ``fns`` called ``calls`` times under ``torch.profiler`` (CUDA activity), every call after ``flush``
    (the L2 flush whose activity ``marker`` splits the trace into calls); ``events`` and ``profiler`` as in
    :func:`flush_marker`."""
    profiler, events = profiler or cuda_profiler, events or kernel_times_s
    torch.cuda.synchronize()
    w0 = time.time()
    with profiler() as prof:
        for fn in fns:
            for _ in range(calls):
                flush()
                fn()
        torch.cuda.synchronize()
    w1 = time.time()
    segs = split_at_markers(events(prof), marker)
    if len(segs) != len(fns) * calls:
        return ProfiledCalls(None, len(segs), w0, w1)
    return ProfiledCalls([segs[j * calls : (j + 1) * calls] for j in range(len(fns))], len(segs), w0, w1)
