"""Shared GPU helpers: the CUDA check, timing with ``triton.testing.do_bench``, random operands.

torch and triton are imported inside the functions: importing this module touches neither.
"""

from __future__ import annotations

import math
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any

from ..errors import PerfModelError

__all__ = [
    "NoGPUError",
    "bench",
    "device_meta",
    "kernel_times_s",
    "quantile",
    "rep_stats",
    "require_cuda",
    "run_cli",
    "select_cases",
]


class NoGPUError(PerfModelError, RuntimeError):
    """A GPU measurement was asked for where torch sees no CUDA device."""


def require_cuda() -> Any:
    """Return the ``torch`` module if a CUDA device is usable, else raise :class:`NoGPUError`."""
    try:
        import torch
    except ImportError as exc:
        raise NoGPUError(
            "perfmodel.bench measures on a GPU and needs PyTorch with CUDA; `pip install torch` on a "
            "machine with an NVIDIA GPU. Use --dry-run to print the plan without a GPU."
        ) from exc
    if not torch.cuda.is_available():
        raise NoGPUError(
            f"perfmodel.bench needs a CUDA GPU, but torch {torch.__version__} sees none "
            f"(torch.cuda.is_available() is False). Run it on a GPU machine, or use --dry-run to print "
            "the plan and its estimated time."
        )
    return torch


def run_cli(main: Callable[[], int]) -> int:
    """A bench's command line as a user meets it: ``main()``'s exit code, or, where it stops for a missing GPU,
    torch or extra (:class:`NoGPUError`, :class:`~perfmodel.errors.MissingExtraError`), that error's message as one
    ``error:`` line on stderr and exit code 2 instead of a traceback."""
    import sys

    from ..errors import MissingExtraError

    try:
        return main()
    except (NoGPUError, MissingExtraError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def select_cases(cases: Sequence[tuple[Any, ...]], kernels: Sequence[str] | None, error: type[Exception]) -> list[Any]:
    """A kernel bench's planned ``cases`` (tuples whose first item names the kernel), all or those of ``kernels``;
    a name no case has raises ``error`` naming the valid ones."""
    known = sorted({c[0] for c in cases})
    if kernels is None:
        return list(cases)
    bad = [n for n in kernels if n not in known]
    if bad:
        raise error(f"unknown kernels {bad}; valid: {', '.join(known)}")
    return [c for c in cases if c[0] in kernels]


def device_meta(torch: Any, triton: Any) -> dict[str, Any]:
    """Where and with what a kernel bench ran: UTC date, GPU name and UUID, torch / CUDA / triton / Python versions."""
    return {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "gpu": torch.cuda.get_device_name(),
        "gpu_uuid": str(getattr(torch.cuda.get_device_properties(0), "uuid", "")),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "triton": triton.__version__,
        "python": platform.python_version(),
    }


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0…1) with linear interpolation between order statistics (numpy's default, and
    ``triton.testing``'s own ``quantiles``)."""
    xs = sorted(values)
    if not xs:
        raise ValueError("quantile of an empty sequence")
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def rep_stats(times_s: Sequence[float]) -> dict[str, float]:
    """One ``do_bench`` call's timed runs (seconds) summarised: ``time_s`` their median (what the layout sweep
    records), ``time_s_p20`` / ``time_s_p80``, ``time_s_mean`` (what ``triton.testing.do_bench(fn)`` returns at
    its default ``return_mode="mean"``) and ``reps``, how many runs were timed."""
    if not times_s:
        raise ValueError("do_bench timed no runs")
    return {
        "time_s": statistics.median(times_s),
        "time_s_p20": quantile(times_s, 0.2),
        "time_s_p80": quantile(times_s, 0.8),
        "time_s_mean": statistics.fmean(times_s),
        "reps": len(times_s),
    }


def bench(fn: Callable[[], Any], *, warmup_ms: float, rep_ms: float) -> dict[str, float]:
    """Time ``fn`` with ``triton.testing.do_bench`` (CUDA events, the L2 flushed before every timed
    run, ``warmup_ms`` / ``rep_ms`` its ``warmup`` / ``rep``; its defaults are 25 and 100): :func:`rep_stats` of
    the timed runs, seconds."""
    from triton.testing import do_bench

    times_ms = do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="all")
    return rep_stats([t * 1e-3 for t in times_ms])


def kernel_times_s(prof: Any) -> list[tuple[str, float, float]]:
    """(name, start_s, duration_s) of every GPU activity (kernels, memcpy, memset) in a finished
    ``torch.profiler.profile``, sorted by start. Uses the Kineto events (ns resolution)."""
    from torch.autograd import DeviceType

    out = []
    results = getattr(prof.profiler, "kineto_results", None)
    if results is not None:
        for e in results.events():
            if e.device_type() == DeviceType.CUDA:
                out.append((e.name(), e.start_ns() * 1e-9, e.duration_ns() * 1e-9))
    else:  # pragma: no cover - older torch
        for e in prof.events():
            if e.device_type == DeviceType.CUDA:
                out.append((e.name, e.time_range.start * 1e-6, e.time_range.elapsed_us() * 1e-6))
    out.sort(key=lambda t: t[1])
    return out


def split_steps(events: Sequence[tuple[str, float, float]], n_steps: int) -> list[list[tuple[str, float, float]]]:
    """Split time-sorted GPU events into ``n_steps`` groups at the ``n_steps - 1`` largest idle gaps
    (the caller sleeps between steps, so step boundaries are the largest gaps)."""
    if n_steps <= 1 or len(events) < n_steps:
        return [list(events)]
    gaps = sorted(
        range(1, len(events)),
        key=lambda i: events[i][1] - (events[i - 1][1] + events[i - 1][2]),
        reverse=True,
    )[: n_steps - 1]
    cuts = [0, *sorted(gaps), len(events)]
    return [list(events[a:b]) for a, b in pairwise(cuts)]


def summarize_steps(steps: Sequence[Sequence[tuple[str, float, float]]]) -> dict[str, Any]:
    """Per-step kernel-time sum (median over steps) and the per-kernel list (time and calls per step)."""
    sums = [sum(d for _, _, d in step) for step in steps]
    n = len(steps)
    per_kernel: dict[str, list[float]] = {}
    for step in steps:
        for name, _, d in step:
            per_kernel.setdefault(name, []).append(d)
    kernels = sorted(
        ({"name": k, "time_s": sum(v) / n, "calls": len(v) / n} for k, v in per_kernel.items()),
        key=lambda r: -r["time_s"],
    )
    return {
        "step_kernel_time_s": statistics.median(sums) if sums else None,
        "step_kernel_time_s_all": sums,
        "kernels_per_step": sum(len(s) for s in steps) / max(n, 1),
        "kernels": kernels,
    }
