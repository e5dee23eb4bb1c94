"""The parent of the decoder-layer sweep: spawns the workers, dispatches configs by priority, keeps the budget and
the deadline, quiet mode (one worker compiles while another measures only when allowed) and writes the records
(:func:`run_sweep`).
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .estimate import (
    CONTEXT_BYTES,
    PROFILE_SLEEP_S,
    PROFILE_STEPS,
    TIMED_STEPS,
    WARMUP_STEPS,
    _available_cpus,
    _cpu_split,
    default_workers,
    estimate_compile_s,
    estimate_measure_s,
    estimate_peak_mem_bytes,
)
from .plan import LayerSpec, Log
from .record import _check_compile_mode, base_record
from .worker import _worker_main

__all__ = ["run_sweep"]


@dataclasses.dataclass
class _Worker:
    wid: int
    proc: Any
    conn: Any
    broken: bool = False
    spec: LayerSpec | None = None
    attempt: int = 0
    mem: float = 0.0
    phase: str = "idle"
    started: float = 0.0
    concurrent: int | None = None


_QUIET_HOLD = frozenset({"waiting", "go", "measuring"})


def _quiet_go(workers: Iterable[_Worker]) -> None:
    """Quiet mode: once no worker compiles and none measures, tell the first compiled one to measure."""
    busy = [w for w in workers if w.spec is not None and not w.broken]
    if any(w.phase in ("queued", "compiling", "go", "measuring") for w in busy):
        return
    waiting = sorted((w for w in busy if w.phase == "waiting"), key=lambda w: (w.started, w.wid))
    if waiting:
        try:
            waiting[0].conn.send("go")
        except OSError:  # the worker is gone; the main loop replaces it
            waiting[0].broken = True
            return
        waiting[0].phase = "go"


class _Sweep:
    """The parent's state of one :func:`run_sweep`: the worker pool, the pending configs and the summary; each
    method one step of the dispatch loop (the loop itself is :meth:`loop`)."""

    def __init__(self, writer: Any, specs: Sequence[LayerSpec], cfg: Mapping[str, Any], log: Log) -> None:
        import multiprocessing as mp

        _check_compile_mode(cfg["compile_mode"])
        self.writer, self.log = writer, log
        self.budget_s, self.deadline_s = cfg["budget_s"], cfg["deadline_s"]
        self.eta_check, self.quiet, self.compile_mode = cfg["eta_check"], cfg["quiet"], cfg["compile_mode"]
        self.t0 = time.monotonic() if cfg["start"] is None else cfg["start"]
        self.wall0 = time.time() - (time.monotonic() - self.t0)
        cpus = _available_cpus()
        self.measure_cpus, self.compile_cpus = _cpu_split(cpus)
        self.workers = max(1, min(cfg["workers"] or default_workers(len(cpus)), len(specs) or 1))
        self.compile_threads = cfg["compile_threads"] or max(1, len(self.compile_cpus) // self.workers)
        os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = str(self.compile_threads)
        self.mem_budget = 0.92 * cfg["gpu_mem_bytes"] - (self.workers + 1) * CONTEXT_BYTES
        self.lock_dir = tempfile.mkdtemp(prefix="perfmodel_layer_")
        simulate = cfg["simulate"]
        self.opts = {
            "lock_path": os.path.join(self.lock_dir, "gpu.lock"),
            "compile_threads": self.compile_threads,
            "measure_cpus": self.measure_cpus,
            "compile_cpus": self.compile_cpus,
            "warmup_steps": cfg["warmup_steps"],
            "timed_steps": cfg["timed_steps"],
            "profile_steps": cfg["profile_steps"],
            "simulate": dict(simulate) if simulate else None,
            "quiet": self.quiet,
            "compile_mode": self.compile_mode,
        }
        self.ctx = mp.get_context("spawn")
        self.pool: dict[int, _Worker] = {}
        self.next_wid = itertools.count()
        self.pending: collections.deque[tuple[LayerSpec, int, float]] = collections.deque()
        self.compile_seen: dict[str, list[float]] = {}
        self.summary: dict[str, Any] = {"done": [], "errors": [], "skipped": [], "not_started": [], "worker_info": {}}
        self.startup_failures = 0

    def spawn(self) -> None:
        """Start one worker process (spawned) with its end of a duplex pipe."""
        wid = next(self.next_wid)
        conn, child = self.ctx.Pipe(duplex=True)
        # not daemonic: Inductor may start its own compile subprocesses (the finally below ends them)
        proc = self.ctx.Process(target=_worker_main, args=(wid, child, self.opts), name=f"layer-w{wid}")
        proc.start()
        child.close()  # the worker's end lives in the worker only: its death reads as EOF here
        self.pool[wid] = _Worker(wid=wid, proc=proc, conn=conn)

    def elapsed(self) -> float:
        """Seconds since the budget's start."""
        return time.monotonic() - self.t0

    def compile_guess(self, spec: LayerSpec) -> float:
        """The compile time expected for ``spec``: the median seen for its recipe, else the estimate."""
        seen = self.compile_seen.get(spec.recipe)
        return statistics.median(seen) if seen else estimate_compile_s(spec, self.compile_threads)

    def finish(self, w: _Worker, rec: dict[str, Any]) -> None:
        """A worker's config ended with ``rec``: retry once on OOM, else write it and free the worker."""
        rec.update(
            worker=w.wid,
            attempt=w.attempt,
            started_at_s=w.started,
            finished_at_s=self.elapsed(),
            concurrent_compiles=w.concurrent,
        )
        spec, attempt, mem = w.spec, w.attempt, w.mem
        w.spec, w.phase, w.mem, w.concurrent = None, "idle", 0.0, None
        if rec.get("error_kind") == "oom" and attempt == 0 and self.elapsed() < self.budget_s:
            self.log(f"layer: {spec.id} ran out of GPU memory; retrying once with twice the memory estimate")
            self.pending.appendleft((spec, 1, min(2 * mem, self.mem_budget)))
            return
        self.writer.add(rec, flush=True)
        if rec.get("errors"):
            self.summary["errors"].append(spec.id)
            self.log(f"layer: {spec.id} FAILED: {rec['errors'][0][:300]}")
            return
        self.summary["done"].append(spec.id)
        if rec.get("compile_s") is not None:
            self.compile_seen.setdefault(spec.recipe, []).append(rec["compile_s"])
        self.log(
            f"layer: {spec.id:<40} step {rec['step_time_s'] * 1e3:8.3f} ms (p20 {rec['step_time_s_p20'] * 1e3:.3f},"
            f" p80 {rec['step_time_s_p80'] * 1e3:.3f}), kernels {(rec['step_kernel_time_s'] or 0) * 1e3:8.3f} ms,"
            f" compile {rec['compile_s'] or 0:5.1f} s, peak {(rec['peak_mem_bytes'] or 0) / 1e9:5.1f} GB"
        )

    def kill_at_deadline(self, busy: Sequence[_Worker]) -> None:
        """The deadline: kill every busy worker, an error record each (no retry)."""
        for w in busy:
            rec = base_record(w.spec, self.compile_mode)
            rec["errors"] = [f"killed at the deadline ({self.deadline_s:.0f} s) while {w.phase}"]
            rec["error_kind"] = "deadline"
            w.proc.kill()
            w.attempt = 1  # no retry
            self.finish(w, rec)

    def dispatch(self, now: float, busy: Sequence[_Worker]) -> None:
        """Send configs in plan order to idle workers while the budget lasts and memory fits."""
        pool = self.pool
        idle = [w for w in pool.values() if w.spec is None and not w.broken and w.proc.is_alive()]
        if self.quiet and any(w.phase in _QUIET_HOLD for w in busy):
            idle = []  # a batch is compiled or measuring: let it drain before the next compiles
        while idle and self.pending and now < self.budget_s:
            spec, attempt, mem = self.pending[0]
            # the configs in flight measure while this one compiles; it waits if they outlast it
            queue_s = sum(estimate_measure_s(w.spec) for w in pool.values() if w.spec is not None)
            eta = now + max(self.compile_guess(spec), queue_s) + estimate_measure_s(spec)
            if self.eta_check and eta > self.deadline_s:
                self.pending.popleft()
                self.summary["skipped"].append(spec.id)
                self.log(f"layer: skipping {spec.id}: would end at ~{eta:.0f} s, past the deadline")
                continue
            in_flight = sum(w.mem for w in pool.values() if w.spec is not None)
            if in_flight + mem > self.mem_budget and in_flight > 0:
                break  # wait for memory; keep the plan order
            w = idle.pop(0)
            try:
                w.conn.send({"spec": dataclasses.asdict(spec), "deadline": self.wall0 + self.deadline_s - 2})
            except OSError:  # the worker is gone; the check below replaces it
                w.broken = True
                continue
            self.pending.popleft()
            w.spec, w.attempt, w.mem, w.phase, w.started = spec, attempt, mem, "queued", now

    def receive(self) -> None:
        """Read the workers' messages for up to 0.2 s: ready, phase changes and finished records."""
        from multiprocessing import connection as mp_connection

        pool = self.pool
        conns = {w.conn: w for w in pool.values() if not w.broken}
        for conn in mp_connection.wait(list(conns), timeout=0.2):
            try:
                msg = conn.recv()
            except Exception:  # EOF or a message cut short: the worker died
                conns[conn].broken = True
                continue
            kind, wid = msg[0], msg[1]
            w = pool.get(wid)
            if kind == "ready" and w is not None:
                self.summary["worker_info"][wid] = msg[3]
            elif kind == "phase" and w is not None and w.spec is not None and msg[2] == w.spec.id:
                w.phase = msg[3]
                if msg[3] == "waiting":
                    self.log(f"layer: {w.spec.id} compiled in {msg[5].get('compile_s', 0):.1f} s (worker {wid})")
                if msg[3] == "measuring":
                    w.concurrent = sum(
                        1 for o in pool.values() if o is not w and o.spec is not None and o.phase == "compiling"
                    )
            elif kind == "done" and w is not None and w.spec is not None and msg[2]["id"] == w.spec.id:
                self.finish(w, msg[2])

    def reap(self) -> None:
        """Replace dead or broken workers (an error record for a config one held), up to 3 startup failures."""
        for wid, w in list(self.pool.items()):
            if w.broken and w.proc.is_alive():
                w.proc.join(timeout=1)
                if w.proc.is_alive():
                    w.proc.kill()
                    w.proc.join(timeout=1)
            if w.proc.is_alive():
                continue
            if w.spec is not None:
                rec = base_record(w.spec, self.compile_mode)
                rec["errors"] = [f"worker died (exit code {w.proc.exitcode}) while {w.phase}"]
                rec["error_kind"] = "crash"
                self.finish(w, rec)
            if wid not in self.summary["worker_info"]:
                self.startup_failures += 1
            w.conn.close()
            del self.pool[wid]
            if self.pending and self.elapsed() < self.budget_s and self.startup_failures < 3:
                self.spawn()

    def loop(self) -> None:
        """Dispatch, wait for messages and replace workers until the plan, the budget or the deadline ends."""
        while True:
            now = self.elapsed()
            busy = [w for w in self.pool.values() if w.spec is not None]
            if now >= self.deadline_s:
                self.kill_at_deadline(busy)
                break
            self.dispatch(now, busy)
            if not any(w.spec is not None for w in self.pool.values()) and (not self.pending or now >= self.budget_s):
                break
            if self.quiet:
                _quiet_go(self.pool.values())
            self.receive()
            self.reap()
            if not self.pool:
                self.log(f"layer: no worker left ({self.startup_failures} died before they were ready); stopping")
                break

    def shutdown(self) -> None:
        """Tell idle workers to stop, give them 3 s, kill what is left, remove the lock folder."""
        for w in self.pool.values():
            if w.proc.is_alive() and w.spec is None:
                try:
                    w.conn.send(None)
                except (OSError, ValueError):
                    pass
        stop = time.monotonic() + 3
        for w in self.pool.values():
            w.proc.join(timeout=max(0.0, stop - time.monotonic()))
        for w in self.pool.values():
            if w.proc.is_alive():
                w.proc.kill()
        for w in self.pool.values():
            w.proc.join(timeout=1)
        shutil.rmtree(self.lock_dir, ignore_errors=True)


def run_sweep(
    writer: Any,
    specs: Sequence[LayerSpec],
    *,
    workers: int | None = None,
    budget_s: float = 500.0,
    deadline_s: float = 550.0,
    compile_threads: int | None = None,
    gpu_mem_bytes: float = 141e9,
    warmup_steps: int = WARMUP_STEPS,
    timed_steps: int = TIMED_STEPS,
    profile_steps: int = PROFILE_STEPS,
    simulate: Mapping[str, Any] | None = None,
    start: float | None = None,
    on_started: Callable[[], None] | None = None,
    eta_check: bool = True,
    quiet: bool = False,
    compile_mode: str = "default",
    log: Log = print,
) -> dict[str, Any]:
    """Run ``specs`` (in order) on ``workers`` spawned processes; add one record per config to
    ``writer`` (flushed as it arrives). No config starts after ``budget_s`` seconds or when its
    estimated finish is past ``deadline_s``; at ``deadline_s`` running workers are killed (error
    records; ``eta_check`` False: start every config until the budget, whatever its estimate).
    Returns a summary for the dataset's meta. ``start``: the ``time.monotonic()`` the budget
    and deadline count from (default: now); ``on_started``: called once the workers are spawning
    (the caller's slow set-up overlaps theirs); ``simulate``: run :func:`_simulate` instead of the
    GPU (tests). ``quiet``: measure only while no worker compiles — configs are dispatched in
    batches, every worker of a batch compiles, then they measure one after another (a compiled worker
    waits for the parent's "go"); slower, but no measurement shares the host with a compile
    (``concurrent_compiles`` is 0 on every record). ``compile_mode``: the ``torch.compile`` mode of every config
    (:data:`COMPILE_MODES`; ``"reduce-overhead"``: CUDA graphs)."""
    cfg = {
        "workers": workers,
        "budget_s": budget_s,
        "deadline_s": deadline_s,
        "compile_threads": compile_threads,
        "gpu_mem_bytes": gpu_mem_bytes,
        "warmup_steps": warmup_steps,
        "timed_steps": timed_steps,
        "profile_steps": profile_steps,
        "simulate": simulate,
        "start": start,
        "eta_check": eta_check,
        "quiet": quiet,
        "compile_mode": compile_mode,
    }
    sw = _Sweep(writer, specs, cfg, log)
    for _ in range(sw.workers):
        sw.spawn()
    if on_started is not None:
        on_started()
    log(
        f"layer: {len(specs)} configs, {sw.workers} workers (compile threads {sw.compile_threads}, compile cores "
        f"{len(sw.compile_cpus)}, measure cores {sw.measure_cpus}), budget {budget_s:.0f} s, "
        f"deadline {deadline_s:.0f} s"
    )
    sw.pending.extend((s, 0, estimate_peak_mem_bytes(s)) for s in specs)
    try:
        sw.loop()
    finally:
        sw.shutdown()
    summary = sw.summary
    summary["not_started"] = [s.id for s, _, _ in sw.pending]
    if summary["not_started"]:
        log(f"layer: budget spent; {len(summary['not_started'])} configs not started")
    summary.update(
        seconds_total=sw.elapsed(),
        workers=sw.workers,
        compile_threads=sw.compile_threads,
        measure_cpus=sw.measure_cpus,
        compile_cpus=sw.compile_cpus,
        budget_s=budget_s,
        deadline_s=deadline_s,
        gpu_mem_budget_bytes=sw.mem_budget,
        warmup_steps=warmup_steps,
        timed_steps=timed_steps,
        profile_steps=profile_steps,
        profile_sleep_s=PROFILE_SLEEP_S,
    )
    return summary
