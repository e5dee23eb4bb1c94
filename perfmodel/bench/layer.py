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

from __future__ import annotations

import argparse
import collections
import dataclasses
import fcntl
import heapq
import itertools
import json
import math
import os
import shlex
import shutil
import signal
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import contextmanager
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from ._decoder import LINEAR_GROUPS, DecoderConfig

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

Log = Callable[[str], None]

# ---- plan -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class LayerSize:
    """A decoder-layer shape of the sweep; ``subsets``: enumerate all 16 group subsets for it."""

    key: str
    model: str
    dim: int
    ffn: int
    heads: int
    kv_heads: int
    head_dim: int = 128
    subsets: bool = False


LAYER_SIZES: tuple[LayerSize, ...] = (
    LayerSize(key="d2048", model="llama3.2-1b-like", dim=2048, ffn=8192, heads=16, kv_heads=8, subsets=True),
    LayerSize(key="d4096", model="llama3-8b", dim=4096, ffn=14336, heads=32, kv_heads=8, subsets=True),
    LayerSize(key="d8192", model="llama3-70b", dim=8192, ffn=28672, heads=64, kv_heads=8),
)
#: sizes measured only when asked for (``--sizes``): layers no fit has seen, to score the step model on
EXTRA_SIZES: tuple[LayerSize, ...] = (
    # Qwen2.5-14B's shapes (hidden 5120, MLP 13824, 40 query / 8 KV heads of 128; huggingface.co/Qwen/Qwen2.5-14B
    # config.json) as a Llama-style layer (no q/k/v bias)
    LayerSize(key="d5120", model="qwen2.5-14b-like", dim=5120, ffn=13824, heads=40, kv_heads=8),
    # Llama 3.2 3B (hidden 3072, MLP 8192, 24 query / 8 KV heads of 128; huggingface.co/meta-llama/Llama-3.2-3B
    # config.json)
    LayerSize(key="d3072", model="llama3.2-3b", dim=3072, ffn=8192, heads=24, kv_heads=8),
    # Qwen2.5-7B's shapes (hidden 3584, MLP 18944, 28 query / 4 KV heads of 128; huggingface.co/Qwen/Qwen2.5-7B
    # config.json) as a Llama-style layer (no q/k/v bias): 7 query heads per KV head, dims not powers of two
    LayerSize(key="d3584", model="qwen2.5-7b-like", dim=3584, ffn=18944, heads=28, kv_heads=4),
    # Qwen3-14B's shapes (hidden 5120, MLP 17408, 40 query / 8 KV heads of 128; huggingface.co/Qwen/Qwen3-14B
    # config.json) as a Llama-style layer (no per-head q/k RMSNorm): dim 5120 with another MLP width
    LayerSize(key="d5120q", model="qwen3-14b-like", dim=5120, ffn=17408, heads=40, kv_heads=8),
)
#: ``--plan mix_order``: (size, batch, seq_len) -> configs (recipe, groups; "q" = attention.wq alone) that test
#: the step model's rule for inductor's persistent mix-order norm backward with tensorwise q/k/v
#: (perfmodel.step.kernels.mix_order_cast): batch 1 where the rule fires, batch 2 at the same tokens where it
#: does not, three layer sizes, and token counts the main sweep does not have (8192, 16384 at batch 1)
MIX_ORDER_CASES: tuple[tuple[str, int, int, tuple[tuple[str, str], ...]], ...] = (
    ("d2048", 1, 8192, (("bf16", ""), ("tensorwise", "all"), ("tensorwise", "qkv"), ("rowwise", "all"))),
    ("d2048", 2, 8192, (("bf16", ""), ("tensorwise", "all"))),
    ("d2048", 1, 16384, (("bf16", ""), ("tensorwise", "all"))),
    ("d3072", 1, 4096, (("bf16", ""), ("tensorwise", "all"))),
    (
        "d3072",
        1,
        8192,
        (("bf16", ""), ("tensorwise", "all"), ("tensorwise", "qkv"), ("tensorwise", "q"), ("rowwise", "all")),
    ),
    ("d4096", 1, 8192, (("bf16", ""), ("tensorwise", "all"), ("tensorwise", "qkv"), ("rowwise", "all"))),
    ("d4096", 2, 8192, (("bf16", ""), ("tensorwise", "all"))),
)
#: ``--plan filter``: the float8 groups the step model's filter picks where the mix-order rule fires (tensorwise:
#: every group but q/k/v; rowwise: w13 or w13 + w2), next to bf16 and every Linear converted in the same session
FILTER_CASES: tuple[tuple[str, int, int, tuple[tuple[str, str], ...]], ...] = (
    ("d2048", 1, 8192, (("bf16", ""), ("tensorwise", "all"), ("tensorwise", "o+w13+w2"))),
    ("d2048", 1, 16384, (("bf16", ""), ("tensorwise", "all"), ("tensorwise", "o+w13+w2"), ("rowwise", "w13"))),
    ("d3072", 1, 8192, (("bf16", ""), ("tensorwise", "all"), ("tensorwise", "o+w13+w2"), ("rowwise", "w13"))),
    (
        "d4096",
        1,
        8192,
        (
            ("bf16", ""),
            ("tensorwise", "all"),
            ("tensorwise", "o+w13+w2"),
            ("rowwise", "w13+w2"),
            ("rowwise", "all"),
        ),
    ),
)
#: named plans besides the main sweep (``--plan``)
PLANS: tuple[str, ...] = ("sweep", "mix_order", "filter")
QUICK_SIZE = LayerSize(key="d1024", model="tiny", dim=1024, ffn=4096, heads=8, kv_heads=4)
SEQ_LEN = 4096
BATCHES: tuple[int, ...] = (1, 4)
QUICK_SEQ_LEN = 2048
FP8_RECIPES: tuple[str, ...] = ("tensorwise", "rowwise")
RECIPES: tuple[str, ...] = ("bf16", "tensorwise", "rowwise", "rowwise_with_gw_hp")
GROUPS: tuple[str, ...] = tuple(LINEAR_GROUPS)
ALL_LINEARS: tuple[str, ...] = tuple(n for g in GROUPS for n in LINEAR_GROUPS[g])
Q_ONLY: tuple[str, ...] = ("attention.wq",)

#: priority -> what it holds; lower runs first.
PRIORITIES: Mapping[int, str] = {
    0: "bf16, tensorwise all, rowwise all (every layer and token count)",
    1: "rowwise_with_gw_hp all",
    2: "one group alone (qkv, o, w13, w2) x tensorwise, rowwise",
    3: "q alone (attention.wq) x tensorwise, rowwise: the shared-input cast effect against qkv",
    4: "the other group subsets (2 and 3 groups) x tensorwise, rowwise, two smaller layers",
}
# the enumeration (priority 4) does the 4096-token cases first: float8 loses most there
SUBSET_CASE_ORDER: tuple[tuple[str, int], ...] = (("d2048", 1), ("d4096", 1), ("d2048", 4), ("d4096", 4))


@dataclasses.dataclass(frozen=True, kw_only=True)
class LayerSpec:
    """One decoder-layer config: shape, tokens, recipe and the Linears converted to float8."""

    id: str
    priority: int
    case: str
    model: str
    dim: int
    ffn: int
    heads: int
    kv_heads: int
    head_dim: int
    batch: int
    seq_len: int
    recipe: str  # "bf16" or a torchao Float8LinearRecipeName value
    subset: str  # "none" | "all" | "q" | "+"-joined groups
    groups: tuple[str, ...]  # groups whose Linears are all converted
    converted: tuple[str, ...]  # Linear module names converted to Float8Linear

    @property
    def tokens(self) -> int:
        return self.batch * self.seq_len

    def decoder_config(self) -> DecoderConfig:
        return DecoderConfig(
            dim=self.dim, ffn=self.ffn, heads=self.heads, kv_heads=self.kv_heads, head_dim=self.head_dim
        )

    def linear_shapes(self) -> dict[str, tuple[int, int]]:
        """(in_features K, out_features N) of every Linear, by module name."""
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        return {
            "attention.wq": (self.dim, q),
            "attention.wk": (self.dim, kv),
            "attention.wv": (self.dim, kv),
            "attention.wo": (q, self.dim),
            "feed_forward.w1": (self.dim, self.ffn),
            "feed_forward.w2": (self.ffn, self.dim),
            "feed_forward.w3": (self.dim, self.ffn),
        }

    def linear_params(self, names: Iterable[str] | None = None) -> int:
        shapes = self.linear_shapes()
        return sum(shapes[n][0] * shapes[n][1] for n in (shapes if names is None else names))

    @property
    def linear_flops(self) -> int:
        """fwd + bwd FLOP of the seven Linears: 3 GEMMs × 2·tokens·K·N each."""
        return 6 * self.tokens * self.linear_params()

    @property
    def attention_flops(self) -> int:
        """Causal SDPA fwd + bwd: fwd 2·b·s²·heads·head_dim (half of 4·b·s²·h·d), bwd 2.5 × fwd."""
        return 7 * self.batch * self.seq_len**2 * self.heads * self.head_dim


def _subset_label(groups: Sequence[str]) -> str:
    if not groups:
        return "none"
    return "all" if tuple(groups) == GROUPS else "+".join(groups)


def make_spec(
    size: LayerSize,
    batch: int,
    seq_len: int,
    recipe: str,
    groups: Sequence[str] = (),
    *,
    converted: Sequence[str] | None = None,
    subset: str | None = None,
    priority: int = 0,
) -> LayerSpec:
    """A :class:`LayerSpec`; ``converted`` defaults to the Linears of ``groups`` (none for bf16)."""
    if recipe not in RECIPES:
        raise ValueError(f"unknown recipe {recipe!r}; valid: {', '.join(RECIPES)}")
    bad = [g for g in groups if g not in LINEAR_GROUPS]
    if bad:
        raise ValueError(f"unknown Linear group(s) {bad}; valid: {', '.join(GROUPS)}")
    groups = tuple(g for g in GROUPS if g in groups)  # canonical order
    if converted is None:
        converted = tuple(n for g in groups for n in LINEAR_GROUPS[g])
    converted = tuple(converted)
    if recipe == "bf16" and converted:
        raise ValueError("a bf16 config converts no Linear")
    if recipe != "bf16" and not converted:
        raise ValueError(f"a {recipe} config must convert at least one Linear")
    unknown = [n for n in converted if n not in ALL_LINEARS]
    if unknown:
        raise ValueError(f"unknown Linear name(s) {unknown}; valid: {', '.join(ALL_LINEARS)}")
    subset = subset or _subset_label(groups)
    case = f"{size.key}-b{batch}s{seq_len}"
    return LayerSpec(
        id=case + "-bf16" if recipe == "bf16" else f"{case}-{recipe}-{subset}",
        priority=priority,
        case=case,
        model=size.model,
        dim=size.dim,
        ffn=size.ffn,
        heads=size.heads,
        kv_heads=size.kv_heads,
        head_dim=size.head_dim,
        batch=batch,
        seq_len=seq_len,
        recipe=recipe,
        subset=subset,
        groups=groups,
        converted=converted,
    )


def layer_size(key: str) -> LayerSize:
    """The sweep size named ``key`` (:data:`LAYER_SIZES` and :data:`EXTRA_SIZES`)."""
    sizes = {s.key: s for s in (*LAYER_SIZES, *EXTRA_SIZES)}
    if key not in sizes:
        raise ValueError(f"unknown layer size {key!r}; valid: {', '.join(sizes)}")
    return sizes[key]


def layer_plan(*, quick: bool = False, sizes: Sequence[LayerSize] = LAYER_SIZES) -> list[LayerSpec]:
    """Every config in run order (priority, then case, then recipe/subset); deterministic.

    Per (layer, tokens): bf16; tensorwise and rowwise with all 7 Linears, each group alone and q
    alone; rowwise_with_gw_hp with all; for the two smaller layers also the 2- and 3-group subsets
    (with the bf16, single-group and all configs: all 16 subsets of the 4 groups per recipe).
    ``quick``: bf16 and tensorwise-all of a small layer (dim 1024, 2048 tokens)."""
    if quick:
        return [
            make_spec(QUICK_SIZE, 1, QUICK_SEQ_LEN, "bf16"),
            make_spec(QUICK_SIZE, 1, QUICK_SEQ_LEN, "tensorwise", GROUPS),
        ]
    cases = [(size, b) for size in sizes for b in BATCHES]
    specs: list[LayerSpec] = []
    for size, b in cases:
        specs.append(make_spec(size, b, SEQ_LEN, "bf16", priority=0))
        specs += [make_spec(size, b, SEQ_LEN, r, GROUPS, priority=0) for r in FP8_RECIPES]
    specs += [make_spec(size, b, SEQ_LEN, "rowwise_with_gw_hp", GROUPS, priority=1) for size, b in cases]
    for size, b in cases:
        specs += [make_spec(size, b, SEQ_LEN, r, (g,), priority=2) for g in GROUPS for r in FP8_RECIPES]
    for size, b in cases:
        specs += [make_spec(size, b, SEQ_LEN, r, (), converted=Q_ONLY, subset="q", priority=3) for r in FP8_RECIPES]
    by_key = {s.key: s for s in sizes}
    subsets = [c for n in (2, 3) for c in itertools.combinations(GROUPS, n)]
    for key, b in SUBSET_CASE_ORDER:
        if key in by_key and by_key[key].subsets:
            specs += [
                make_spec(by_key[key], b, SEQ_LEN, r, c, priority=4) for c in subsets for r in ("rowwise", "tensorwise")
            ]
    return specs


def mix_order_plan() -> list[LayerSpec]:
    """The ``mix_order`` plan (:data:`MIX_ORDER_CASES`), in that order."""
    return cases_plan(MIX_ORDER_CASES)


def named_plan(name: str) -> list[LayerSpec]:
    """A ``--plan``: ``"mix_order"`` (:data:`MIX_ORDER_CASES`) or ``"filter"`` (:data:`FILTER_CASES`)."""
    if name == "mix_order":
        return cases_plan(MIX_ORDER_CASES)
    if name == "filter":
        return cases_plan(FILTER_CASES)
    raise ValueError(f"unknown plan {name!r}; valid: {', '.join(PLANS)}")


def cases_plan(cases: Sequence[tuple[str, int, int, Sequence[tuple[str, str]]]]) -> list[LayerSpec]:
    """Specs for (size key, batch, seq_len, ((recipe, groups), ...)): groups ``""`` (bf16), ``"all"``, ``"q"``
    (attention.wq alone) or ``+``-joined group names."""
    specs = []
    for key, batch, seq_len, configs in cases:
        size = layer_size(key)
        for recipe, groups in configs:
            if groups == "q":
                specs.append(make_spec(size, batch, seq_len, recipe, (), converted=Q_ONLY, subset="q"))
            else:
                chosen = GROUPS if groups == "all" else tuple(groups.split("+")) if groups else ()
                specs.append(make_spec(size, batch, seq_len, recipe, chosen))
    return specs


def select(
    specs: Sequence[LayerSpec],
    *,
    only: Sequence[str] = (),
    priority_max: int | None = None,
    skip_ids: Iterable[str] = (),
) -> list[LayerSpec]:
    """The specs whose id matches one of ``only`` (fnmatch patterns; empty: all), priority ≤
    ``priority_max`` and id not in ``skip_ids``, in plan order."""
    skip = set(skip_ids)
    return [
        s
        for s in specs
        if (not only or any(fnmatch(s.id, p) for p in only))
        and (priority_max is None or s.priority <= priority_max)
        and s.id not in skip
    ]


def done_ids(paths: Iterable[str | os.PathLike[str]]) -> set[str]:
    """Ids with a successful ``layer`` record (a step time and no errors) in the dataset files."""
    out = set()
    for p in paths:
        for rec in json.loads(Path(p).read_text()).get("records", []):
            if rec.get("op") == "layer" and rec.get("step_time_s") and not rec.get("errors"):
                out.add(rec["id"])
    return out


# ---- estimates (sizing only; not model parameters) --------------------------------------------

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


# ---- records ----------------------------------------------------------------------------------

#: every ``layer`` record carries these (measurement fields are null in error records).
RECORD_FIELDS: tuple[str, ...] = (
    "op", "id", "priority", "case", "model", "dim", "ffn", "heads", "kv_heads", "head_dim", "batch", "seq_len",
    "tokens", "recipe", "subset", "groups", "converted", "compile", "compile_mode", "backward", "linear_flops",
    "attention_flops", "step_time_s", "step_time_s_p20", "step_time_s_p80", "step_time_s_all",
    "step_time_s_back_to_back", "step_kernel_time_s", "step_kernel_time_s_all", "kernels",
    "kernel_time_by_class_s", "kernels_per_step", "gemm_kernels_per_step", "fp8_gemm_kernels_per_step",
    "expected_fp8_gemm_kernels_per_step", "peak_mem_bytes", "first_step_s", "compile_s", "autotune_lock_wait_s",
    "lock_wait_s", "measure_s", "timed_steps", "graphs", "graph_breaks", "host_step_s", "host_step_s_all",
    "host_step_valid", "cudagraph_skips", "errors",
)  # fmt: skip


#: ``torch.compile`` modes a sweep can measure with (``--compile-mode``): ``"default"`` (every step's kernels
#: launched by the host, as a plain training loop runs them) and ``"reduce-overhead"`` (CUDA graphs: the host
#: replays each compiled graph with one launch, so the step does not wait for Python and per-kernel launches)
COMPILE_MODES: tuple[str, ...] = ("default", "reduce-overhead")


def _check_compile_mode(mode: str) -> str:
    if mode not in COMPILE_MODES:
        raise ValueError(f"compile mode {mode!r} is not one of {', '.join(COMPILE_MODES)}")
    return mode


def base_record(spec: LayerSpec, compile_mode: str = "default") -> dict[str, Any]:
    """The record of ``spec`` with every field of :data:`RECORD_FIELDS`, measurements null; ``compile_mode`` the
    ``torch.compile`` mode it is measured with (:data:`COMPILE_MODES`)."""
    rec: dict[str, Any] = dict.fromkeys(RECORD_FIELDS)
    rec.update(
        op="layer",
        id=spec.id,
        priority=spec.priority,
        case=spec.case,
        model=spec.model,
        dim=spec.dim,
        ffn=spec.ffn,
        heads=spec.heads,
        kv_heads=spec.kv_heads,
        head_dim=spec.head_dim,
        batch=spec.batch,
        seq_len=spec.seq_len,
        tokens=spec.tokens,
        recipe=spec.recipe,
        subset=spec.subset,
        groups=list(spec.groups),
        converted=list(spec.converted),
        compile="static",
        compile_mode=_check_compile_mode(compile_mode),
        backward="grad_output",
        linear_flops=spec.linear_flops,
        attention_flops=spec.attention_flops,
        expected_fp8_gemm_kernels_per_step=(2 if spec.recipe == "rowwise_with_gw_hp" else 3) * len(spec.converted),
        errors=[],
    )
    return rec


def _percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, ``q`` in [0, 100]."""
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def step_stats(times_s: Sequence[float]) -> dict[str, Any]:
    """``step_time_s`` (median), ``_p20``, ``_p80`` and ``_all`` of per-step seconds."""
    return {
        "step_time_s": statistics.median(times_s),
        "step_time_s_p20": _percentile(times_s, 20),
        "step_time_s_p80": _percentile(times_s, 80),
        "step_time_s_all": list(times_s),
    }


def kernel_class(name: str) -> str:
    """gemm_fp8 | gemm_bf16 | attention | triton | memory | other, from a GPU activity name."""
    from .linear import _is_fp8_gemm, _is_gemm

    low = name.lower()
    if any(t in low for t in ("flash", "fmha", "sdpa", "attention")):
        return "attention"
    if _is_fp8_gemm(name):
        return "gemm_fp8"
    if _is_gemm(name):
        return "gemm_bf16"
    if low.startswith("triton"):
        return "triton"
    if "memset" in low or "memcpy" in low:
        return "memory"
    return "other"


def kernel_summary(kernels: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per-class seconds per step and GEMM counts per step from ``summarize_steps``'s kernel list."""
    by_class: dict[str, float] = {}
    counts = collections.Counter()
    for k in kernels:
        c = kernel_class(k["name"])
        by_class[c] = by_class.get(c, 0.0) + k["time_s"]
        counts[c] += k["calls"]
    return {
        "kernel_time_by_class_s": by_class,
        "gemm_kernels_per_step": counts["gemm_bf16"] + counts["gemm_fp8"],
        "fp8_gemm_kernels_per_step": counts["gemm_fp8"],
    }


# ---- building and stepping one config (CPU-testable) ------------------------------------------


class LinearFilter:
    """``module_filter_fn`` for ``convert_to_float8_training``: True exactly for the named Linears
    (fully qualified names relative to the converted module, e.g. ``attention.wq``)."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = frozenset(names)

    def __call__(self, module: Any, fqn: str) -> bool:
        return fqn in self.names

    def __repr__(self) -> str:
        return f"LinearFilter({sorted(self.names)})"


def float8_modules(module: Any) -> list[str]:
    """Names of the submodules that are torchao ``Float8Linear``."""
    return [n for n, m in module.named_modules() if type(m).__name__ == "Float8Linear"]


def convert(layer: Any, recipe: str, names: Sequence[str]) -> Any:
    """Convert the named Linears of ``layer`` with torchao (``recipe`` ≠ bf16) and check that exactly
    those became ``Float8Linear``."""
    if recipe != "bf16":
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training

        convert_to_float8_training(
            layer, config=Float8LinearConfig.from_recipe_name(recipe), module_filter_fn=LinearFilter(names)
        )
    got = sorted(float8_modules(layer))
    if got != sorted(names):
        raise RuntimeError(f"float8 conversion converted {got}, expected {sorted(names)}")
    return layer


@dataclasses.dataclass
class Case:
    """A built config: the layer, what runs (compiled or eager), inputs, and ``step()``."""

    layer: Any
    model: Any
    x: Any
    cos: Any
    sin: Any
    grad_out: Any
    cudagraphs: bool = False

    def step(self) -> None:
        """One training step: grads to None, forward, backward with ``grad_out`` (with CUDA graphs, after telling
        torch a new step begins, so that the graphs may reuse the last step's output memory)."""
        if self.cudagraphs:
            import torch

            torch.compiler.cudagraph_mark_step_begin()
        self.x.grad = None
        self.layer.zero_grad(set_to_none=True)
        self.model(self.x, self.cos, self.sin).backward(self.grad_out)


def build_case(
    spec: LayerSpec,
    *,
    device: Any = "cuda",
    dtype: Any = None,
    compile: bool = True,
    seed: int = 0,
    compile_mode: str = "default",
) -> Case:
    """Build the layer (``dtype`` default bf16), convert ``spec.converted``, ``torch.compile`` it
    (``compile_mode``, one of :data:`COMPILE_MODES`; ``dynamic=False``) unless ``compile`` is False, and make the
    inputs: ``x`` [batch, seq, dim] with requires_grad, ``cos/sin`` from ``rope_tables``, ``grad_out`` like
    ``x``."""
    import torch

    from ._decoder import build_layer, rope_tables

    dtype = dtype or torch.bfloat16
    cfg = spec.decoder_config()
    layer = convert(build_layer(cfg, device=device, dtype=dtype, seed=seed), spec.recipe, spec.converted)
    gen = torch.Generator(device="cpu").manual_seed(seed + 1)
    shape = (spec.batch, spec.seq_len, spec.dim)
    x = torch.randn(shape, generator=gen, dtype=torch.float32).to(device=device, dtype=dtype).requires_grad_()
    grad_out = torch.randn(shape, generator=gen, dtype=torch.float32).to(device=device, dtype=dtype)
    cos, sin = rope_tables(cfg, spec.seq_len, device)
    graphs = _check_compile_mode(compile_mode) == "reduce-overhead" and compile
    mode = {"mode": compile_mode} if graphs else {}
    model = torch.compile(layer, dynamic=False, **mode) if compile else layer
    return Case(layer=layer, model=model, x=x, cos=cos, sin=sin, grad_out=grad_out, cudagraphs=graphs)


# ---- the GPU lock -----------------------------------------------------------------------------


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

    from ._device import kernel_times_s, split_steps, summarize_steps

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


# ---- the parent: dispatch, budget, deadline ---------------------------------------------------


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
    import multiprocessing as mp
    from multiprocessing import connection as mp_connection

    _check_compile_mode(compile_mode)
    t0 = time.monotonic() if start is None else start
    wall0 = time.time() - (time.monotonic() - t0)
    cpus = _available_cpus()
    measure_cpus, compile_cpus = _cpu_split(cpus)
    workers = max(1, min(workers or default_workers(len(cpus)), len(specs) or 1))
    compile_threads = compile_threads or max(1, len(compile_cpus) // workers)
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = str(compile_threads)
    mem_budget = 0.92 * gpu_mem_bytes - (workers + 1) * CONTEXT_BYTES
    lock_dir = tempfile.mkdtemp(prefix="perfmodel_layer_")
    opts = {
        "lock_path": os.path.join(lock_dir, "gpu.lock"),
        "compile_threads": compile_threads,
        "measure_cpus": measure_cpus,
        "compile_cpus": compile_cpus,
        "warmup_steps": warmup_steps,
        "timed_steps": timed_steps,
        "profile_steps": profile_steps,
        "simulate": dict(simulate) if simulate else None,
        "quiet": quiet,
        "compile_mode": compile_mode,
    }
    ctx = mp.get_context("spawn")
    pool: dict[int, _Worker] = {}
    next_wid = itertools.count()

    def spawn() -> None:
        wid = next(next_wid)
        conn, child = ctx.Pipe(duplex=True)
        # not daemonic: Inductor may start its own compile subprocesses (the finally below ends them)
        proc = ctx.Process(target=_worker_main, args=(wid, child, opts), name=f"layer-w{wid}")
        proc.start()
        child.close()  # the worker's end lives in the worker only: its death reads as EOF here
        pool[wid] = _Worker(wid=wid, proc=proc, conn=conn)

    for _ in range(workers):
        spawn()
    if on_started is not None:
        on_started()
    log(
        f"layer: {len(specs)} configs, {workers} workers (compile threads {compile_threads}, compile cores "
        f"{len(compile_cpus)}, measure cores {measure_cpus}), budget {budget_s:.0f} s, deadline {deadline_s:.0f} s"
    )
    pending: collections.deque[tuple[LayerSpec, int, float]] = collections.deque(
        (s, 0, estimate_peak_mem_bytes(s)) for s in specs
    )
    compile_seen: dict[str, list[float]] = {}
    summary: dict[str, Any] = {"done": [], "errors": [], "skipped": [], "not_started": [], "worker_info": {}}
    startup_failures = 0

    def elapsed() -> float:
        return time.monotonic() - t0

    def compile_guess(spec: LayerSpec) -> float:
        seen = compile_seen.get(spec.recipe)
        return statistics.median(seen) if seen else estimate_compile_s(spec, compile_threads)

    def finish(w: _Worker, rec: dict[str, Any]) -> None:
        rec.update(
            worker=w.wid,
            attempt=w.attempt,
            started_at_s=w.started,
            finished_at_s=elapsed(),
            concurrent_compiles=w.concurrent,
        )
        spec, attempt, mem = w.spec, w.attempt, w.mem
        w.spec, w.phase, w.mem, w.concurrent = None, "idle", 0.0, None
        if rec.get("error_kind") == "oom" and attempt == 0 and elapsed() < budget_s:
            log(f"layer: {spec.id} ran out of GPU memory; retrying once with twice the memory estimate")
            pending.appendleft((spec, 1, min(2 * mem, mem_budget)))
            return
        writer.add(rec, flush=True)
        if rec.get("errors"):
            summary["errors"].append(spec.id)
            log(f"layer: {spec.id} FAILED: {rec['errors'][0][:300]}")
        else:
            summary["done"].append(spec.id)
            if rec.get("compile_s") is not None:
                compile_seen.setdefault(spec.recipe, []).append(rec["compile_s"])
            log(
                f"layer: {spec.id:<40} step {rec['step_time_s'] * 1e3:8.3f} ms (p20 {rec['step_time_s_p20'] * 1e3:.3f},"
                f" p80 {rec['step_time_s_p80'] * 1e3:.3f}), kernels {(rec['step_kernel_time_s'] or 0) * 1e3:8.3f} ms,"
                f" compile {rec['compile_s'] or 0:5.1f} s, peak {(rec['peak_mem_bytes'] or 0) / 1e9:5.1f} GB"
            )

    try:
        while True:
            now = elapsed()
            busy = [w for w in pool.values() if w.spec is not None]
            if now >= deadline_s:
                for w in busy:
                    rec = base_record(w.spec, compile_mode)
                    rec["errors"] = [f"killed at the deadline ({deadline_s:.0f} s) while {w.phase}"]
                    rec["error_kind"] = "deadline"
                    w.proc.kill()
                    w.attempt = 1  # no retry
                    finish(w, rec)
                break
            # dispatch in plan order while workers are idle, the budget lasts and memory fits
            idle = [w for w in pool.values() if w.spec is None and not w.broken and w.proc.is_alive()]
            if quiet and any(w.phase in _QUIET_HOLD for w in busy):
                idle = []  # a batch is compiled or measuring: let it drain before the next compiles
            while idle and pending and now < budget_s:
                spec, attempt, mem = pending[0]
                # the configs in flight measure while this one compiles; it waits if they outlast it
                queue_s = sum(estimate_measure_s(w.spec) for w in pool.values() if w.spec is not None)
                eta = now + max(compile_guess(spec), queue_s) + estimate_measure_s(spec)
                if eta_check and eta > deadline_s:
                    pending.popleft()
                    summary["skipped"].append(spec.id)
                    log(f"layer: skipping {spec.id}: would end at ~{eta:.0f} s, past the deadline")
                    continue
                in_flight = sum(w.mem for w in pool.values() if w.spec is not None)
                if in_flight + mem > mem_budget and in_flight > 0:
                    break  # wait for memory; keep the plan order
                w = idle.pop(0)
                try:
                    w.conn.send({"spec": dataclasses.asdict(spec), "deadline": wall0 + deadline_s - 2})
                except OSError:  # the worker is gone; the check below replaces it
                    w.broken = True
                    continue
                pending.popleft()
                w.spec, w.attempt, w.mem, w.phase, w.started = spec, attempt, mem, "queued", now
            if not any(w.spec is not None for w in pool.values()) and (not pending or now >= budget_s):
                break
            if quiet:
                _quiet_go(pool.values())
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
                    summary["worker_info"][wid] = msg[3]
                elif kind == "phase" and w is not None and w.spec is not None and msg[2] == w.spec.id:
                    w.phase = msg[3]
                    if msg[3] == "waiting":
                        log(f"layer: {w.spec.id} compiled in {msg[5].get('compile_s', 0):.1f} s (worker {wid})")
                    if msg[3] == "measuring":
                        w.concurrent = sum(
                            1 for o in pool.values() if o is not w and o.spec is not None and o.phase == "compiling"
                        )
                elif kind == "done" and w is not None and w.spec is not None and msg[2]["id"] == w.spec.id:
                    finish(w, msg[2])
            for wid, w in list(pool.items()):
                if w.broken and w.proc.is_alive():
                    w.proc.join(timeout=1)
                    if w.proc.is_alive():
                        w.proc.kill()
                        w.proc.join(timeout=1)
                if not w.proc.is_alive():
                    if w.spec is not None:
                        rec = base_record(w.spec, compile_mode)
                        rec["errors"] = [f"worker died (exit code {w.proc.exitcode}) while {w.phase}"]
                        rec["error_kind"] = "crash"
                        finish(w, rec)
                    if wid not in summary["worker_info"]:
                        startup_failures += 1
                    w.conn.close()
                    del pool[wid]
                    if pending and elapsed() < budget_s and startup_failures < 3:
                        spawn()
            if not pool:
                log(f"layer: no worker left ({startup_failures} died before they were ready); stopping")
                break
    finally:
        for w in pool.values():
            if w.proc.is_alive() and w.spec is None:
                try:
                    w.conn.send(None)
                except (OSError, ValueError):
                    pass
        stop = time.monotonic() + 3
        for w in pool.values():
            w.proc.join(timeout=max(0.0, stop - time.monotonic()))
        for w in pool.values():
            if w.proc.is_alive():
                w.proc.kill()
        for w in pool.values():
            w.proc.join(timeout=1)
        shutil.rmtree(lock_dir, ignore_errors=True)
    summary["not_started"] = [s.id for s, _, _ in pending]
    if summary["not_started"]:
        log(f"layer: budget spent; {len(summary['not_started'])} configs not started")
    summary.update(
        seconds_total=elapsed(),
        workers=workers,
        compile_threads=compile_threads,
        measure_cpus=measure_cpus,
        compile_cpus=compile_cpus,
        budget_s=budget_s,
        deadline_s=deadline_s,
        gpu_mem_budget_bytes=mem_budget,
        warmup_steps=warmup_steps,
        timed_steps=timed_steps,
        profile_steps=profile_steps,
        profile_sleep_s=PROFILE_SLEEP_S,
    )
    return summary


# ---- table ------------------------------------------------------------------------------------


def format_table(records: Sequence[Mapping[str, Any]]) -> str:
    """Per case: the bf16 step time, every float8 config's step time and speedup (bf16 / it) except
    the 2- and 3-group subsets, which get one line per recipe (count, best, worst), then the best
    config and the failed ones."""
    recs = [r for r in records if r.get("op") == "layer"]
    lines = []
    for case in dict.fromkeys(r["case"] for r in recs):
        rows = [r for r in recs if r["case"] == case]
        ok = [r for r in rows if r.get("step_time_s") and not r.get("errors")]
        bf16 = next((r["step_time_s"] for r in ok if r["recipe"] == "bf16"), None)
        lines.append(f"{case} ({rows[0]['tokens']} tokens): bf16 " + (f"{bf16 * 1e3:.3f} ms" if bf16 else "n/a"))

        def speedup(r: Mapping[str, Any], bf16: float | None = bf16) -> str:
            return f"{bf16 / r['step_time_s']:.2f}x" if bf16 else "n/a"

        fp8 = [r for r in ok if r["recipe"] != "bf16"]
        single = sorted(
            (r for r in fp8 if len(r["groups"]) not in (2, 3)),
            key=lambda r: (RECIPES.index(r["recipe"]), r["subset"] != "all", r["subset"] == "q", r["id"]),
        )
        for r in single:
            kern = f"  (kernels {r['step_kernel_time_s'] * 1e3:.3f} ms)" if r.get("step_kernel_time_s") else ""
            lines.append(f"  {r['recipe']:<18} {r['subset']:<8} {r['step_time_s'] * 1e3:9.3f} ms {speedup(r):>6}{kern}")
        for recipe in RECIPES:
            multi = sorted((r for r in fp8 if r["recipe"] == recipe and len(r["groups"]) in (2, 3)),
                           key=lambda r: r["step_time_s"])  # fmt: skip
            if multi:
                lines.append(
                    f"  {recipe:<18} {len(multi)} subsets of 2-3 groups: best {multi[0]['subset']} {speedup(multi[0])},"
                    f" worst {multi[-1]['subset']} {speedup(multi[-1])}"
                )
        if bf16 and fp8:
            best = min(fp8, key=lambda r: r["step_time_s"])
            lines.append(f"  best: {best['recipe']} {best['subset']} {speedup(best)}")
        failed = [r["id"] for r in rows if r.get("errors")]
        if failed:
            lines.append(f"  failed ({len(failed)}): " + ", ".join(failed))
    return "\n".join(lines) if lines else "no layer records"


# ---- CLI --------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m perfmodel.bench.layer", description=(__doc__ or "").split("\n\n", 1)[0])
    p.add_argument(
        "command",
        choices=("plan", "run", "table"),
        help="plan: print the configs and estimated time (no GPU); run: measure; table: print DIR/layer*.json",
    )
    p.add_argument("--out", type=Path, default=None, help="output folder (run, table)")
    p.add_argument("--quick", action="store_true", help="bf16 + tensorwise-all of a small layer (< 60 s)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and estimated time; no GPU")
    p.add_argument("--budget-s", type=float, default=None, help="no config starts after this (default 500; quick 30)")
    p.add_argument(
        "--deadline-s", type=float, default=None, help="the run ends by this, killing what runs (default 550; quick 58)"
    )
    p.add_argument("--workers", type=int, default=None, help="compile worker processes (default min(12, cores - 2))")
    p.add_argument("--compile-threads", type=int, default=None, help="TORCHINDUCTOR_COMPILE_THREADS per worker")
    p.add_argument("--cpus", type=int, default=None, help="CPU cores to plan for (default: plan 16, run: this machine)")
    p.add_argument(
        "--quiet",
        action="store_true",
        help="measure only while no worker compiles (batches compile, then measure one by one; slower)",
    )
    p.add_argument(
        "--sizes",
        default=",".join(s.key for s in LAYER_SIZES),
        help="comma-separated layer sizes to plan: the sweep's "
        f"{', '.join(s.key for s in LAYER_SIZES)} (default) and {', '.join(s.key for s in EXTRA_SIZES)}",
    )
    p.add_argument(
        "--plan",
        default="sweep",
        choices=PLANS,
        help="sweep: the layer sweep of --sizes (default); mix_order: the configs that test the mix-order norm "
        "backward rule (MIX_ORDER_CASES); filter: the step model's picks where it fires (FILTER_CASES); --sizes "
        "ignored by both",
    )
    p.add_argument(
        "--compile-mode",
        default="default",
        choices=COMPILE_MODES,
        help="torch.compile mode of every config: default (the host launches every kernel) or reduce-overhead "
        "(CUDA graphs)",
    )
    p.add_argument("--only", default="", help="comma-separated fnmatch patterns of config ids, e.g. 'd2048-*'")
    p.add_argument("--priority-max", type=int, default=None, help="only configs of priority <= this")
    p.add_argument(
        "--skip-from", type=Path, action="append", default=[], help="skip ids measured in this dataset (repeatable)"
    )
    p.add_argument("--suffix", default="", help="output file DIR/layer{suffix}.json")
    p.add_argument("--timed-steps", type=int, default=TIMED_STEPS)
    p.add_argument("--warmup-steps", type=int, default=WARMUP_STEPS)
    p.add_argument("--profile-steps", type=int, default=PROFILE_STEPS)
    return p


def _command_line(argv: Sequence[str]) -> str:
    return "python -m perfmodel.bench.layer " + shlex.join(list(argv))


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    t_start = time.monotonic()  # the budget and the deadline count from here
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if args.command == "table":
        if args.out is None:
            raise SystemExit("table needs --out DIR")
        paths = sorted(args.out.glob("layer*.json"))
        if not paths:
            print(f"no layer*.json in {args.out}")
        for path in paths:
            print(f"== {path.name}")
            print(format_table(json.loads(path.read_text()).get("records", [])))
        return 0
    budget_s = args.budget_s if args.budget_s is not None else (30.0 if args.quick else 500.0)
    deadline_s = args.deadline_s if args.deadline_s is not None else (58.0 if args.quick else 550.0)
    try:
        sizes = [layer_size(k.strip()) for k in args.sizes.split(",") if k.strip()]
    except ValueError as exc:
        raise SystemExit(f"--sizes: {exc}") from None
    specs = select(
        named_plan(args.plan) if args.plan != "sweep" and not args.quick else layer_plan(quick=args.quick, sizes=sizes),
        only=[p for p in args.only.split(",") if p.strip()],
        priority_max=args.priority_max,
        skip_ids=done_ids(args.skip_from),
    )
    dry = args.command == "plan" or args.dry_run
    # a plan is made on a laptop for the GPU machine: estimate for its 16 cores unless told otherwise
    cpus = list(range(args.cpus)) if args.cpus else list(range(16)) if dry else _available_cpus()
    workers = max(1, min(args.workers or default_workers(len(cpus)), len(specs) or 1))
    compile_cores = len(_cpu_split(cpus)[1])
    if dry:
        print(f"(estimates for {len(cpus)} CPU cores)")
        print(
            plan_text(
                specs,
                workers=workers,
                compile_cores=compile_cores,
                budget_s=budget_s,
                deadline_s=deadline_s,
                eta_check=not args.quick,
            )
        )
        return 0
    if args.out is None:
        raise SystemExit("run needs --out DIR")
    if not specs:
        print("layer: no configs selected")
        return 0
    from ._device import require_cuda
    from .dataset import DatasetWriter, collect_meta, gpu_state

    torch = require_cuda()
    # `timeout` sends SIGTERM: exit through the finally blocks (kill the workers, keep the records)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    gpu_mem_bytes = float(torch.cuda.get_device_properties(0).total_memory)
    compile_threads = args.compile_threads or max(1, compile_cores // workers)
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = str(compile_threads)
    args.out.mkdir(parents=True, exist_ok=True)
    section: dict[str, Any] = {"priorities": dict(PRIORITIES), "plan": [s.id for s in specs]}
    writer = DatasetWriter(args.out / f"layer{args.suffix}.json", {"sections": {"layer": section}})

    def started() -> None:  # runs while the workers import torch
        writer.meta = {**collect_meta(_command_line(argv)), "sections": {"layer": section}}
        section["gpu_state_before"] = gpu_state()
        writer.flush()

    section.update(
        run_sweep(
            writer,
            specs,
            workers=workers,
            budget_s=budget_s,
            deadline_s=deadline_s,
            compile_threads=compile_threads,
            gpu_mem_bytes=gpu_mem_bytes,
            warmup_steps=args.warmup_steps,
            timed_steps=args.timed_steps,
            profile_steps=args.profile_steps,
            start=t_start,
            on_started=started,
            eta_check=not args.quick,  # the smoke test starts both configs; the deadline still holds
            quiet=args.quiet,
            compile_mode=args.compile_mode,
            log=_log,
        )
    )
    section["gpu_state_after"] = gpu_state()
    writer.flush()
    _log(
        f"layer: {len(section['done'])} measured, {len(section['errors'])} failed, "
        f"{len(section['skipped']) + len(section['not_started'])} not run, {section['seconds_total']:.0f} s "
        f"-> {writer.path}"
    )
    print(format_table(writer.records), flush=True)
    return 0


if __name__ == "__main__":
    from perfmodel.bench import layer as _layer  # objects pickled for the workers come from the named module

    raise SystemExit(_layer.main())
