"""One sweep worker's side: the GPU lock (one config measured at a time, Triton autotuning under it too), CPU
affinity, the timed and profiled steps, host time, the dry-run stand-in and :func:`_worker_main`, the loop of a
spawned worker process.
"""

from __future__ import annotations

import fcntl
import os
import statistics
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from fnmatch import fnmatch
from typing import Any

from .case import Case, build_case
from .estimate import (
    HOST_REPS,
    HOST_SPIN_CYCLES_PER_S,
    HOST_STEPS,
    MEASURE_OVERHEAD_S,
    PROFILE_SLEEP_S,
    estimate_measure_s,
    estimate_peak_mem_bytes,
    estimate_step_s,
)
from .plan import LayerSpec
from .record import base_record, kernel_summary, step_stats

__all__ = ["GpuLock", "NoTimeLeft"]


class GpuLock:
    """Exclusive ``fcntl.flock`` on a file, re-entrant within a process (a depth count). The kernel
    drops it when the holder dies, so a crashed worker cannot block the sweep."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self._fd: int | None = None
        self.depth = 0

    @property
    def held(self) -> bool:
        return self.depth > 0

    def acquire(self, deadline: float | None = None, poll_s: float = 0.01) -> bool:
        """Take the lock (``deadline``: ``time.time()`` after which to give up and return False)."""
        if self.depth:
            self.depth += 1
            return True
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | (fcntl.LOCK_NB if deadline is not None else 0))
                break
            except BlockingIOError:
                if time.time() >= deadline:
                    return False
                time.sleep(poll_s)
        self.depth = 1
        return True

    def release(self) -> None:
        if not self.depth:
            return
        self.depth -= 1
        if not self.depth and self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    @contextmanager
    def hold(self) -> Any:
        self.acquire()
        try:
            yield self
        finally:
            self.release()


_LOCK: GpuLock | None = None
_AUTOTUNE_WAIT = [0.0]  # seconds this process waited for the lock inside Triton autotuning
_GATE: Callable[[], None] | None = None  # quiet mode: blocks until the parent says "go" (set per worker)


def _install_autotune_lock(lock: GpuLock) -> bool:
    """Wrap Inductor's ``CachingAutotuner.benchmark_all_configs`` (the GPU benchmarking of a
    compile) so that it holds the GPU lock. Returns False where that method does not exist."""
    try:
        from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    except ImportError:  # pragma: no cover - other torch layouts
        return False
    orig = getattr(CachingAutotuner, "benchmark_all_configs", None)
    if orig is None:  # pragma: no cover
        return False
    if getattr(orig, "_perfmodel_locked", False):
        return True

    def locked(self: Any, *args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        lock.acquire()
        _AUTOTUNE_WAIT[0] += time.perf_counter() - t
        try:
            return orig(self, *args, **kwargs)
        finally:
            lock.release()

    locked._perfmodel_locked = True  # type: ignore[attr-defined]
    CachingAutotuner.benchmark_all_configs = locked
    return True


def _set_affinity(cpus: Sequence[int]) -> None:
    """Move every thread of this process (the autograd threads too) onto ``cpus``; best effort."""
    if not cpus or not hasattr(os, "sched_setaffinity"):
        return
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        tids = [0]
    for tid in tids:
        try:
            os.sched_setaffinity(tid, cpus)
        except OSError:
            pass


# ---- one config in a worker -------------------------------------------------------------------


class NoTimeLeft(RuntimeError):
    """The deadline came before the config could be measured."""


def _measure_gpu(spec: LayerSpec, opts: Mapping[str, Any], deadline: float, phase: Callable[..., None]) -> dict:
    """Compile, then (GPU lock held) warm up, time and profile one config on the GPU."""
    import gc

    import torch
    import torch._dynamo
    from torch.profiler import ProfilerActivity, profile

    from .._device import kernel_times_s, split_steps, summarize_steps

    torch._dynamo.reset()
    gc.collect()  # the last config's graphs and tensors (an error's traceback held them until now)
    counters = _dynamo_counters()
    if counters is not None:
        counters.clear()
    torch.cuda.empty_cache()
    lock = _LOCK
    rec: dict[str, Any] = {}
    case = None
    try:
        case = build_case(spec, device="cuda", compile_mode=opts.get("compile_mode", "default"))
        _AUTOTUNE_WAIT[0] = 0.0
        torch.cuda.synchronize()
        t = time.perf_counter()
        case.step()
        torch.cuda.synchronize()
        rec["first_step_s"] = time.perf_counter() - t
        rec["autotune_lock_wait_s"] = _AUTOTUNE_WAIT[0]
        rec["compile_s"] = rec["first_step_s"] - _AUTOTUNE_WAIT[0]
        phase("waiting", compile_s=rec["compile_s"])
        t = time.perf_counter()
        if _GATE is not None:
            _GATE()
        need = estimate_measure_s(spec, timed=5)
        if not lock.acquire(deadline=deadline - need):
            raise NoTimeLeft(f"no GPU time left before the deadline (needs ~{need:.0f} s)")
        rec["lock_wait_s"] = time.perf_counter() - t
        try:
            phase("measuring")
            t_measure = time.perf_counter()
            _set_affinity(opts["measure_cpus"])
            rec.update(_timed_and_profiled(torch, case, opts, deadline, profile, ProfilerActivity))
            rec["measure_s"] = time.perf_counter() - t_measure
        finally:
            lock.release()
            _set_affinity(opts["compile_cpus"])
        ev = rec.pop("_events")
        summary = summarize_steps(split_steps(kernel_times_s(ev), opts["profile_steps"]))
        rec.update(
            step_kernel_time_s=summary["step_kernel_time_s"],
            step_kernel_time_s_all=summary["step_kernel_time_s_all"],
            kernels_per_step=summary["kernels_per_step"],
            kernels=summary["kernels"],
            **kernel_summary(summary["kernels"]),
        )
        if counters is not None:
            rec["graphs"] = counters["stats"].get("unique_graphs")
            rec["graph_breaks"] = sum(counters["graph_break"].values())
            # graphs inductor ran without CUDA graphs, and why in its log (``--compile-mode reduce-overhead``)
            rec["cudagraph_skips"] = counters["inductor"].get("cudagraph_skips", 0)
        return rec
    finally:
        case = None
        gc.collect()
        torch.cuda.empty_cache()


def _dynamo_counters() -> Any:
    try:
        from torch._dynamo.utils import counters
    except ImportError:  # pragma: no cover
        return None
    return counters


def _timed_and_profiled(
    torch: Any, case: Case, opts: Mapping[str, Any], deadline: float, profile: Any, activity: Any
) -> dict[str, Any]:
    """Warm-up, CUDA-event-timed back-to-back steps (no profiler yet), then the profiled steps."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    warm = []
    for _ in range(opts["warmup_steps"]):
        t = time.perf_counter()
        case.step()
        torch.cuda.synchronize()
        warm.append(time.perf_counter() - t)
    step_s = min(warm) if warm else 0.1
    left = deadline - time.time() - opts["profile_steps"] * (step_s + PROFILE_SLEEP_S) - MEASURE_OVERHEAD_S
    n = min(opts["timed_steps"], int(left / max(step_s, 1e-4)))
    if n < 5:
        raise NoTimeLeft(f"only {left:.1f} s left before the deadline for steps of {step_s * 1e3:.1f} ms")
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    torch.cuda.synchronize()
    for i in range(n):
        starts[i].record()
        case.step()
        ends[i].record()
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) * 1e-3 for s, e in zip(starts, ends, strict=True)]
    out: dict[str, Any] = {
        **step_stats(times),
        "step_time_s_back_to_back": starts[0].elapsed_time(ends[-1]) * 1e-3 / n,
        "warmup_step_wall_s": warm,
        "timed_steps": n,
        "peak_mem_bytes": torch.cuda.max_memory_allocated(),
        "peak_mem_reserved_bytes": torch.cuda.max_memory_reserved(),
    }
    out.update(_host_time(torch, case, step_s, opts.get("host_steps", HOST_STEPS), opts.get("host_reps", HOST_REPS)))
    with profile(activities=[activity.CUDA]) as prof:
        for _ in range(opts["profile_steps"]):
            case.step()
            torch.cuda.synchronize()
            time.sleep(PROFILE_SLEEP_S)  # step boundaries = the largest idle gaps (split_steps)
    out["_events"] = prof
    return out


def _host_time(torch: Any, case: Case, step_s: float, steps: int, reps: int) -> dict[str, Any]:
    """CPU seconds to launch one step while the GPU is held busy (a ``torch.cuda._sleep`` spin enqueued
    first), so the host never waits for the GPU: ``host_step_s`` (median over ``reps`` runs of ``steps``
    steps), ``_all``; ``host_step_valid``: the spin was still running when the last launch returned in
    every run (else a step waited for the GPU somewhere and the figure is an upper bound of the host time)."""
    if steps < 1 or reps < 1:
        return {}
    times, valid = [], True
    # spin for twice the wall time of the launched steps (a warm-up step's wall time bounds its host time)
    cycles = int(2 * steps * max(step_s, 1e-3) * HOST_SPIN_CYCLES_PER_S)
    for _ in range(reps):
        torch.cuda.synchronize()
        torch.cuda._sleep(cycles)
        spin_done = torch.cuda.Event()
        spin_done.record()
        t = time.perf_counter()
        for _ in range(steps):
            case.step()
        times.append((time.perf_counter() - t) / steps)
        valid = valid and not spin_done.query()
        torch.cuda.synchronize()
    return {"host_step_s": statistics.median(times), "host_step_s_all": times, "host_step_valid": valid}


def _simulate(spec: LayerSpec, opts: Mapping[str, Any], deadline: float, phase: Callable[..., None]) -> dict:
    """Stand-in for :func:`_measure_gpu` (tests, no torch): sleeps, the real GPU lock, fake times.
    ``opts["simulate"]``: compile_s, measure_s, and fnmatch patterns fail / crash / hang."""
    sim = opts["simulate"]
    if any(fnmatch(spec.id, p) for p in sim.get("crash", ())):
        os._exit(3)
    time.sleep(sim.get("compile_s", 0.1))
    while any(fnmatch(spec.id, p) for p in sim.get("hang", ())):
        time.sleep(0.1)
    if any(fnmatch(spec.id, p) for p in sim.get("fail", ())):
        raise RuntimeError("simulated failure")
    phase("waiting", compile_s=sim.get("compile_s", 0.1))
    if _GATE is not None:
        _GATE()
    if not _LOCK.acquire(deadline=deadline - sim.get("measure_s", 0.05)):
        raise NoTimeLeft("no GPU time left before the deadline")
    try:
        phase("measuring")
        t0 = time.time()
        time.sleep(sim.get("measure_s", 0.05))
        t1 = time.time()
    finally:
        _LOCK.release()
    step = estimate_step_s(spec)
    kernels = [{"name": "nvjet_sm90_tst_fake", "time_s": step * 0.9, "calls": 7.0}]
    return {
        **step_stats([step] * 5),
        "step_kernel_time_s": step * 0.9,
        "step_kernel_time_s_all": [step * 0.9] * 5,
        "kernels": kernels,
        "compile_s": sim.get("compile_s", 0.1),
        "first_step_s": sim.get("compile_s", 0.1),
        "peak_mem_bytes": int(estimate_peak_mem_bytes(spec)),
        "simulated_lock_window": [t0, t1],
    }


def _worker_main(wid: int, conn: Any, opts: dict[str, Any]) -> None:
    """Worker process: set up torch once, then run the configs received on ``conn`` (its own pipe
    to the parent; a shared queue could be left locked by a worker that crashes while writing)
    until ``None``."""
    global _LOCK, _GATE
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = str(opts["compile_threads"])
    _set_affinity(opts["compile_cpus"])
    _LOCK = GpuLock(opts["lock_path"])
    info: dict[str, Any] = {}
    if not opts.get("simulate"):
        import torch

        torch.set_num_threads(2)
        import torch._dynamo
        import torchao.float8  # noqa: F401  (import cost paid before the first config)

        torch.cuda.init()
        torch.empty(1, device="cuda")
        info["autotune_lock"] = _install_autotune_lock(_LOCK)
    if opts.get("quiet"):

        def gate() -> None:
            if conn.recv() != "go":  # None: the sweep is ending
                raise NoTimeLeft("the sweep ended before this config's turn to measure")

        _GATE = gate
    conn.send(("ready", wid, time.time(), info))
    while True:
        task = conn.recv()
        if task is None:
            return
        spec = LayerSpec(**task["spec"])

        def phase(name: str, _id: str = spec.id, **kw: Any) -> None:
            conn.send(("phase", wid, _id, name, time.time(), kw))

        phase("compiling")
        rec = base_record(spec, opts.get("compile_mode", "default"))
        try:
            fn = _simulate if opts.get("simulate") else _measure_gpu
            rec.update(fn(spec, opts, task["deadline"], phase))
        except BaseException as exc:  # one config failing must not end the sweep
            rec["errors"] = [f"{type(exc).__name__}: {str(exc)[:1000]}"]
            rec["error_kind"] = _error_kind(exc)
            rec["traceback"] = traceback.format_exc()[-3000:]
            if isinstance(exc, KeyboardInterrupt):
                raise
        conn.send(("done", wid, rec))


def _error_kind(exc: BaseException) -> str:
    name = type(exc).__name__
    if name == "OutOfMemoryError" or "out of memory" in str(exc).lower():
        return "oom"
    if isinstance(exc, NoTimeLeft):
        return "deadline"
    return "error"
