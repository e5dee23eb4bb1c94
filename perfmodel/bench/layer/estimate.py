"""Sizing the decoder-layer sweep: estimated compile, step, measure times and peak memory per config, the CPU
split between compiling and measuring, the worker count, and the plan's text (:func:`plan_text`). Guesses for
scheduling only, not model parameters. Pure Python.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

from .plan import ALL_LINEARS, PRIORITIES, LayerSpec

__all__ = [
    "COMPILE_CPU_S",
    "CONTEXT_BYTES",
    "HOST_REPS",
    "HOST_SPIN_CYCLES_PER_S",
    "HOST_STEPS",
    "MEASURE_OVERHEAD_S",
    "PROFILE_SLEEP_S",
    "PROFILE_STEPS",
    "TIMED_STEPS",
    "WARMUP_STEPS",
    "WORKER_STARTUP_S",
    "default_workers",
    "estimate_compile_s",
    "estimate_measure_s",
    "estimate_peak_mem_bytes",
    "estimate_step_s",
    "estimate_sweep",
    "plan_text",
]


#: CPU seconds to compile one layer fwd+bwd with every Linear converted (guesses: 30-90 s expected,
#: cold caches, one compile thread); partial conversions interpolate by the number of Linears.
COMPILE_CPU_S: Mapping[str, float] = {"bf16": 40.0, "tensorwise": 70.0, "rowwise": 85.0, "rowwise_with_gw_hp": 80.0}
WORKER_STARTUP_S = 15.0  # spawn + import torch/torchao + CUDA context, all workers at once
WARMUP_STEPS, TIMED_STEPS, PROFILE_STEPS = 3, 20, 5
# host-time runs: 2 steps (~260 launches) behind one GPU spin, repeated 5 times; kept short on the assumption
# (not documented by CUDA) that the driver queues that many pending launches without blocking the host
HOST_STEPS, HOST_REPS = 2, 5
HOST_SPIN_CYCLES_PER_S = 2.0e9  # GPU cycles per second for torch.cuda._sleep (H200 max SM clock 1.98 GHz)
PROFILE_SLEEP_S = 0.02
MEASURE_OVERHEAD_S = 1.5  # profiler start/stop, trace parsing, allocator reset
CONTEXT_BYTES = 0.8e9  # one CUDA context + the caching allocator's slack per process


def estimate_compile_s(spec: LayerSpec, threads: int = 1) -> float:
    """Seconds to compile the config on an uncontended core (prior guess, :data:`COMPILE_CPU_S`);
    ``threads`` compile threads parallelize about half of it (the Triton kernel builds)."""
    bf16 = COMPILE_CPU_S["bf16"]
    full = bf16 if spec.recipe == "bf16" else COMPILE_CPU_S[spec.recipe]
    cpu_s = bf16 + (full - bf16) * len(spec.converted) / len(ALL_LINEARS)
    return cpu_s * (0.5 + 0.5 / min(max(threads, 1), 8))


def estimate_step_s(spec: LayerSpec) -> float:
    """Rough fwd+bwd step seconds on an H200: Linears at 650 (bf16) / 1000 (float8) TFLOP/s,
    attention at 400 TFLOP/s, ~(40·dim + 16·ffn) bytes per token of elementwise traffic at 3 TB/s,
    at least 150 launches × 4 µs."""
    shapes = spec.linear_shapes()
    gemm = sum(
        6 * spec.tokens * k * n / (1000e12 if name in spec.converted else 650e12) for name, (k, n) in shapes.items()
    )
    elementwise = spec.tokens * (40 * spec.dim + 16 * spec.ffn) / 3e12
    return max(gemm + spec.attention_flops / 400e12 + elementwise, 150 * 4e-6)


def estimate_measure_s(
    spec: LayerSpec, *, warmup: int = WARMUP_STEPS, timed: int = TIMED_STEPS, profiled: int = PROFILE_STEPS
) -> float:
    """GPU-lock seconds of one measurement: warm-up, timed and profiled steps, the host-time runs (each
    a spin of twice its steps, then the steps), sleeps, overhead."""
    host = 3 * HOST_STEPS * HOST_REPS
    return (warmup + timed + profiled + host) * estimate_step_s(spec) + profiled * PROFILE_SLEEP_S + MEASURE_OVERHEAD_S


def estimate_peak_mem_bytes(spec: LayerSpec) -> float:
    """Peak GPU bytes of a step (for admission only): bf16 weights and grads (4 B/param), float8
    weight copies (2 B/param converted), saved activations ~2·(6·dim + 3·q + 2·kv + 3·ffn) B/token,
    backward temporaries ~6·ffn B/token, float8 inputs 1 B/element, ×1.3, + one CUDA context."""
    q, kv = spec.heads * spec.head_dim, spec.kv_heads * spec.head_dim
    shapes = spec.linear_shapes()
    per_token = 2 * (6 * spec.dim + 3 * q + 2 * kv + 3 * spec.ffn) + 6 * spec.ffn + 4 * spec.dim
    per_token += sum(shapes[n][0] for n in spec.converted)
    weights = 4 * spec.linear_params() + 2 * spec.linear_params(spec.converted)
    return 1.3 * (weights + spec.tokens * per_token) + CONTEXT_BYTES


def _cpu_split(cpus: Sequence[int]) -> tuple[list[int], list[int]]:
    """(measure cores, compile cores): two cores kept for the measuring process when there are ≥ 8."""
    cpus = sorted(cpus)
    if len(cpus) >= 8:
        return cpus[:2], cpus[2:]
    return cpus, cpus


def _available_cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return list(range(os.cpu_count() or 1))


def default_workers(n_cpus: int | None = None) -> int:
    """Worker processes: min(12, compile cores)."""
    cpus = list(range(n_cpus)) if n_cpus is not None else _available_cpus()
    return max(1, min(12, len(_cpu_split(cpus)[1])))


def estimate_sweep(
    specs: Sequence[LayerSpec],
    *,
    workers: int,
    compile_cores: int,
    budget_s: float = math.inf,
    deadline_s: float = math.inf,
    startup_s: float = WORKER_STARTUP_S,
    eta_check: bool = True,
) -> dict[str, Any]:
    """Event simulation of :func:`run_sweep` with the prior estimates: ``workers`` compile in
    parallel (slowed by workers / compile_cores when oversubscribed, +10 % for shared memory
    bandwidth), one measures at a time (FIFO by compile end); with ``eta_check`` a config starts only
    if it is estimated to finish by the deadline, its measurement queued behind those of the configs
    started before it. Returns the ids finished before the
    deadline (``done``), those never started (``dropped``), the end time ``end_s`` (seconds from
    the start) and the CPU/GPU totals of the whole plan."""
    slow = max(1.0, workers / max(compile_cores, 1)) * 1.1
    threads = max(1, compile_cores // max(workers, 1))
    pending = collections.deque(specs)
    events: list[tuple[float, int, str, int, LayerSpec | None]] = []
    seq = itertools.count()
    for w in range(min(workers, len(specs))):
        heapq.heappush(events, (startup_s, next(seq), "free", w, None))
    gpu_queue: collections.deque[tuple[int, LayerSpec]] = collections.deque()
    gpu_busy = False
    gpu_committed_s = 0.0  # estimated end of the measurements of every config started so far
    done: list[str] = []
    killed: list[str] = []
    end = 0.0
    while events:
        t, _, kind, w, spec = heapq.heappop(events)
        if kind == "free":
            while pending and t < budget_s:
                nxt = pending.popleft()
                compile_s = estimate_compile_s(nxt, threads) * slow
                # its measurement waits for the ones committed before it (the GPU measures one at a time)
                finish = max(t + compile_s, gpu_committed_s) + estimate_measure_s(nxt)
                if not eta_check or finish <= deadline_s:
                    gpu_committed_s = finish
                    heapq.heappush(events, (t + compile_s, next(seq), "compiled", w, nxt))
                    break
            continue
        if kind == "compiled":
            gpu_queue.append((w, spec))
        else:  # measured
            gpu_busy = False
            (done if t <= deadline_s else killed).append(spec.id)
            end = max(end, min(t, deadline_s))
            heapq.heappush(events, (t, next(seq), "free", w, None))
        if not gpu_busy and gpu_queue:
            w2, s2 = gpu_queue.popleft()
            gpu_busy = True
            heapq.heappush(events, (t + estimate_measure_s(s2), next(seq), "measured", w2, s2))
    finished = set(done) | set(killed)
    return {
        "done": done,
        "killed": killed,
        "dropped": [s.id for s in specs if s.id not in finished],
        "end_s": end,
        "compile_cpu_s": sum(estimate_compile_s(s) for s in specs),
        "measure_gpu_s": sum(estimate_measure_s(s) for s in specs),
    }


def plan_text(
    specs: Sequence[LayerSpec],
    *,
    workers: int,
    compile_cores: int,
    budget_s: float,
    deadline_s: float,
    eta_check: bool = True,
    listing: bool = True,
) -> str:
    """The plan as text: counts per priority and case, estimated times, what fits the budget, and
    (``listing``) one line per config."""
    if not specs:
        return "layer: no configs selected"
    est = estimate_sweep(
        specs,
        workers=workers,
        compile_cores=compile_cores,
        budget_s=budget_s,
        deadline_s=deadline_s,
        eta_check=eta_check,
    )
    full = estimate_sweep(specs, workers=workers, compile_cores=compile_cores)
    by_prio = collections.Counter(s.priority for s in specs)
    cases = list(dict.fromkeys(s.case for s in specs))
    done, killed = set(est["done"]), set(est["killed"])
    lines = [
        f"layer: {len(specs)} configs in {len(cases)} cases ({', '.join(cases)})",
        *(f"  priority {p}: {by_prio[p]:3d}  {PRIORITIES.get(p, '')}" for p in sorted(by_prio)),
        f"estimated: compile {est['compile_cpu_s']:.0f} CPU-s in all (prior {COMPILE_CPU_S['bf16']:.0f}-"
        f"{max(COMPILE_CPU_S.values()):.0f} s per config), measure {est['measure_gpu_s']:.0f} GPU-s in all; "
        f"with {workers} workers on {compile_cores} compile cores all would take ~{full['end_s']:.0f} s",
        f"within budget {budget_s:.0f} s / deadline {deadline_s:.0f} s: ~{len(done)} of {len(specs)} finish "
        f"(by priority: "
        + ", ".join(f"{p}: {sum(s.id in done for s in specs if s.priority == p)}/{by_prio[p]}" for p in sorted(by_prio))
        + f"), ending at ~{est['end_s']:.0f} s",
    ]
    if listing:
        lines.append(f"{'#':>4} {'prio':>4}  {'id':<40} {'cpu_s':>9} {'measure_s':>9} {'step_ms':>8} {'mem_GB':>6}")
        for i, s in enumerate(specs):
            lines.append(
                f"{i:4d} {s.priority:4d}  {s.id:<40} {estimate_compile_s(s):9.0f} {estimate_measure_s(s):9.1f}"
                f" {estimate_step_s(s) * 1e3:8.2f} {estimate_peak_mem_bytes(s) / 1e9:6.1f}"
                + ("" if s.id in done else "  (killed at the deadline)" if s.id in killed else "  (past the budget)")
            )
    return "\n".join(lines)
