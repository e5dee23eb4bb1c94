"""Decoder-layer fwd+bwd sweep: bf16 against torchao float8 with all, one group or a subset of the Linears converted.

``python -m perfmodel.bench.layer {plan,run,table} --out DIR [--budget-s B] [--workers W] [--quick] [--dry-run]``

Why: a training step is not the sum of its Linears. Converting every Linear of a small layer can run
slower than the per-Linear measurements predict (casts, lost fusions, one shared input cast once or
three times), so the layer-step model is fitted and validated on whole decoder layers.

What one config measures (``_decoder.build_layer``: torchtitan module names, RMSNorm, RoPE, GQA
SDPA, SwiGLU; bf16 weights)::

    layer  = build_layer(cfg)                         # the Linears of `converted` -> Float8Linear
    model  = torch.compile(layer, dynamic=False)      # default mode, static shapes, graph breaks allowed
    x      = randn(batch, seq, dim, bf16, requires_grad=True);  cos, sin = rope_tables(cfg, seq)
    step() = x.grad = None; layer.zero_grad(set_to_none=True); model(x, cos, sin).backward(grad_out)

``--compile-mode reduce-overhead`` compiles with CUDA graphs instead (``torch.compile(..., mode="reduce-overhead")``,
``torch.compiler.cudagraph_mark_step_begin()`` before each step; the record's ``compile_mode`` says which): the
host then replays each graph with one launch, so a step does not wait for Python or per-kernel launches.

``grad_out`` is a fixed ``randn(batch, seq, dim)`` bf16 tensor (no loss kernels in the step; the
record's ``backward`` field says ``"grad_output"``). Parameter grads are set to None before every
step, so no accumulation kernels run. Per config, in this order:

1. the first step (compiles fwd and bwd; ``first_step_s``; ``compile_s`` = that minus the time spent
   waiting for the GPU lock inside Triton autotuning);
2. with the GPU lock held: 3 warm-up steps, then 20 steps launched back to back, each between two
   CUDA events (``step_time_s`` median, ``_p20``, ``_p80``, ``_all``; ``step_time_s_back_to_back`` =
   first start event to last end event / steps), peak memory of those steps
   (``torch.cuda.max_memory_allocated``, ``peak_mem_bytes``);
3. the host time: 5 runs of 2 steps launched behind a ``torch.cuda._sleep`` spin that keeps the GPU
   busy, ``perf_counter`` around the launches (``host_step_s`` median per step, ``_all``;
   ``host_step_valid``: the spin outlasted the launches in every run, so no launch waited for the GPU)
   — what the Python side of a step costs, which bounds a step from below when it exceeds the GPU time;
4. then torch.profiler (CUDA activity) over 5 steps, each followed by a synchronize and a 20 ms sleep,
   split at the largest idle gaps (``_device.split_steps``): ``step_kernel_time_s`` (median per-step
   kernel-time sum), ``_all``, ``kernels`` (name, seconds and calls per step),
   ``kernel_time_by_class_s`` (gemm_bf16, gemm_fp8, attention, triton, memory, other).
   The CUDA-event timing runs before any profiler attaches in the process (a profiler inflates
   event timings).

Scheduling (one GPU, 16 CPU cores): ``W`` spawned worker processes compile in parallel and measure one
at a time. The measurement holds an exclusive ``fcntl.flock`` on a lock file (released by the kernel if
a worker dies); Triton's autotuning benchmarks (``CachingAutotuner.benchmark_all_configs``, the only
GPU work of a compile besides the one first step) take the same lock, so they never overlap a
measurement. The first fwd+bwd execution of another worker's freshly compiled graph can still overlap
(once per config, at most one step long); ``concurrent_compiles`` says how many other workers were
compiling when the measurement started. CPU: two cores are kept for the measuring process (its threads
move there while it holds the lock), the compiling workers share the rest; Inductor compiles with
``TORCHINDUCTOR_COMPILE_THREADS`` = compile cores // W (1 at W=12). GPU memory: a config starts only
when the estimated peaks of the configs in flight fit (:func:`estimate_peak_mem_bytes`); one that
still runs out of memory is retried once with twice the estimate. ``--quiet`` measures only while no
worker compiles: configs go out in batches, every worker of a batch compiles, then they measure one
after another on the parent's "go" (``concurrent_compiles`` is 0 on every record; slower, since a
batch waits for its slowest compile).

Time limits, counted from the start of ``main``: no config starts after ``--budget-s`` (default 500 s)
or when its estimated finish lies past ``--deadline-s`` (default 550 s); at the deadline the workers
still running are killed and their configs get error records. The whole plan needs ~1000 s by the prior
estimates (``plan`` prints them): one device call measures priorities 0-3 and the start of 4, a second
``run --skip-from DIR/layer.json --suffix _part2`` the rest. Records are flushed as they arrive (``DatasetWriter``) into
``DIR/layer{suffix}.json``. A failing config (OOM, torchao or compile error, a crashed worker) gets a
record with ``errors`` and the sweep continues.

Config ids are ``<size>-b<batch>s<seq>-<recipe>[-<subset>]``, e.g. ``d4096-b4s4096-rowwise-qkv+w13``;
``subset`` is ``all``, ``+``-joined groups of ``_decoder.LINEAR_GROUPS`` (qkv, o, w13, w2) or ``q``
(only ``attention.wq``). ``priority`` 0 runs first (see :data:`PRIORITIES`); a budget cut drops the
highest numbers (the 2- and 3-group subsets) first. FLOP conventions: ``linear_flops`` = 6 · tokens ·
Linear weights; ``attention_flops`` = 7 · batch · seq² · heads · head_dim (causal: forward
2·b·s²·h·d, backward 2.5 × forward).

torch and torchao are imported inside functions: importing this module imports neither.
"""

# ruff: noqa: F401  (the old flat module's names stay importable from here; __all__ is its public list)

from __future__ import annotations

from .._decoder import LINEAR_GROUPS, DecoderConfig
from .case import Case, LinearFilter, build_case, convert, float8_modules
from .cli import build_parser, main
from .estimate import (
    COMPILE_CPU_S,
    CONTEXT_BYTES,
    HOST_REPS,
    HOST_SPIN_CYCLES_PER_S,
    HOST_STEPS,
    MEASURE_OVERHEAD_S,
    PROFILE_SLEEP_S,
    PROFILE_STEPS,
    TIMED_STEPS,
    WARMUP_STEPS,
    WORKER_STARTUP_S,
    _available_cpus,
    _cpu_split,
    default_workers,
    estimate_compile_s,
    estimate_measure_s,
    estimate_peak_mem_bytes,
    estimate_step_s,
    estimate_sweep,
    plan_text,
)
from .plan import (
    ALL_LINEARS,
    BATCHES,
    EXTRA_SIZES,
    FILTER_CASES,
    FP8_RECIPES,
    GROUPS,
    LAYER_SIZES,
    MIX_ORDER_CASES,
    PLANS,
    PRIORITIES,
    Q_ONLY,
    QUICK_SEQ_LEN,
    QUICK_SIZE,
    RECIPES,
    SEQ_LEN,
    SUBSET_CASE_ORDER,
    LayerSize,
    LayerSpec,
    Log,
    cases_plan,
    done_ids,
    layer_plan,
    layer_size,
    make_spec,
    mix_order_plan,
    named_plan,
    select,
)
from .record import COMPILE_MODES, RECORD_FIELDS, base_record, format_table, kernel_class, kernel_summary, step_stats
from .sweep import run_sweep
from .worker import GpuLock, NoTimeLeft, _host_time, _measure_gpu

__all__ = [
    "EXTRA_SIZES",
    "FILTER_CASES",
    "LAYER_SIZES",
    "MIX_ORDER_CASES",
    "PLANS",
    "PRIORITIES",
    "RECORD_FIELDS",
    "GpuLock",
    "LayerSize",
    "LayerSpec",
    "LinearFilter",
    "build_case",
    "cases_plan",
    "estimate_compile_s",
    "estimate_measure_s",
    "estimate_peak_mem_bytes",
    "estimate_step_s",
    "estimate_sweep",
    "format_table",
    "layer_plan",
    "layer_size",
    "main",
    "make_spec",
    "mix_order_plan",
    "named_plan",
    "run_sweep",
]
