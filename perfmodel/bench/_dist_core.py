"""The pure parts of the multi-GPU sweeps (statistics, bandwidth conventions, kernel intervals and their
overlap, the plans) and the process-group context, shared by :mod:`.dist` (the command) and
:mod:`._dist_train` (the training steps). torch is imported inside functions only; conventions in
:mod:`.dist`.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ._decoder import DecoderConfig
from ._device import quantile

Log = Callable[[str], None]

# ---- statistics and bandwidth (pure) -------------------------------------------------------------


def time_stats(times_s: Sequence[float], prefix: str = "time_s") -> dict[str, float]:
    """Median, 20th/80th percentiles and minimum of ``times_s`` (seconds), keys ``{prefix}``,
    ``{prefix}_p20``, ``{prefix}_p80``, ``{prefix}_min``."""
    return {
        prefix: statistics.median(times_s),
        f"{prefix}_p20": quantile(times_s, 0.2),
        f"{prefix}_p80": quantile(times_s, 0.8),
        f"{prefix}_min": min(times_s),
    }


COLLECTIVE_OPS: tuple[str, ...] = ("all_gather_into_tensor", "reduce_scatter_tensor", "all_reduce")
COLLECTIVE_DTYPES: tuple[str, ...] = ("bf16", "fp8_e4m3")
_ITEMSIZE = {"bf16": 2, "fp8_e4m3": 1}
_BUSBW_FACTOR: Mapping[str, Callable[[int], float]] = {
    "all_gather_into_tensor": lambda n: (n - 1) / n,
    "reduce_scatter_tensor": lambda n: (n - 1) / n,
    "all_reduce": lambda n: 2 * (n - 1) / n,
}


def algbw(nbytes: float, time_s: float) -> float:
    """Algorithm bandwidth, bytes/s: the collective's size (see module doc) over its time."""
    return nbytes / time_s


def busbw(op: str, algbw_bytes_per_s: float, world: int) -> float:
    """Bus bandwidth, bytes/s (NCCL-tests): algbw · (n−1)/n for all-gather and reduce-scatter,
    algbw · 2(n−1)/n for all-reduce."""
    if op not in _BUSBW_FACTOR:
        raise ValueError(f"unknown collective {op!r}; valid: {', '.join(_BUSBW_FACTOR)}")
    return algbw_bytes_per_s * _BUSBW_FACTOR[op](world)


# ---- kernel intervals and communication/compute overlap (pure) -----------------------------------

Interval = tuple[float, float]
Event = tuple[str, float, float]  # (kernel name, start_s, duration_s), as _device.kernel_times_s


def kernel_category(name: str) -> str:
    """``comm`` (NCCL kernels), ``copy`` (memcpy/memset activities) or ``compute`` (every other kernel)."""
    low = name.lower()
    if "nccl" in low:
        return "comm"
    if low.startswith(("memcpy", "memset")):
        return "copy"
    return "compute"


_NCCL_KIND = re.compile(r"nccl(?:Dev)?Kernel_([A-Za-z]+)")


def nccl_collective(name: str) -> str:
    """The collective of an NCCL kernel name (``ncclDevKernel_AllGather_RING_LL`` → ``AllGather``)."""
    m = _NCCL_KIND.search(name)
    return m.group(1) if m else "other"


def gpu_activities(prof: Any) -> list[Event]:
    """(name, start_s, duration_s) of the GPU kernels, memcpys and memsets of a finished
    ``torch.profiler.profile``, by start. Unlike :func:`._device.kernel_times_s` it drops the
    ``gpu_user_annotation`` spans that Kineto puts on the GPU timeline for ``record_function`` ranges
    (FSDP2's ``FSDP::*``, ``nccl:*``): they cover other kernels and would count as kernels."""
    from torch.autograd import DeviceType

    out = []
    for e in prof.profiler.kineto_results.events():
        if e.device_type() != DeviceType.CUDA:
            continue
        kind = str(e.activity_type()) if hasattr(e, "activity_type") else ""
        if "annotation" in kind or (hasattr(e, "is_user_annotation") and e.is_user_annotation()):
            continue
        out.append((e.name(), e.start_ns() * 1e-9, e.duration_ns() * 1e-9))
    out.sort(key=lambda t: t[1])
    return out


def merge_intervals(intervals: Iterable[Interval]) -> list[Interval]:
    """The union of ``(start, end)`` intervals as sorted, disjoint intervals (touching ones merged)."""
    out: list[list[float]] = []
    for s, e in sorted(intervals):
        if e < s:
            raise ValueError(f"interval ends before it starts: {(s, e)}")
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def union_length(intervals: Iterable[Interval]) -> float:
    """Total length covered by the union of the intervals (seconds when they are in seconds)."""
    return sum(e - s for s, e in merge_intervals(intervals))


def intersection_length(a: Iterable[Interval], b: Iterable[Interval]) -> float:
    """Length of (union of ``a``) ∩ (union of ``b``): the time both sets have something running."""
    ua, ub = merge_intervals(a), merge_intervals(b)
    i = j = 0
    total = 0.0
    while i < len(ua) and j < len(ub):
        lo, hi = max(ua[i][0], ub[j][0]), min(ua[i][1], ub[j][1])
        if hi > lo:
            total += hi - lo
        if ua[i][1] < ub[j][1]:
            i += 1
        else:
            j += 1
    return total


def overlap_summary(events: Sequence[Event]) -> dict[str, float]:
    """Communication/compute overlap of one step's GPU activities (seconds).

    ``*_kernel_time_s``: sums of kernel durations per category (see :func:`kernel_category`);
    ``*_busy_s``: length of the union of the category's intervals; ``overlap_s``: time an NCCL kernel
    runs while a compute kernel runs; ``exposed_comm_s`` = comm_busy − overlap;
    ``comm_overlap_fraction`` = overlap / comm_busy; ``copy_compute_overlap_s``: the same for memcpys
    (async TP moves data with copy engines, not NCCL); ``span_s``: first start to last end;
    ``gpu_busy_s``: union of all activities.
    """
    by_cat: dict[str, list[Interval]] = {"comm": [], "compute": [], "copy": []}
    sums = {"comm": 0.0, "compute": 0.0, "copy": 0.0}
    for name, start, dur in events:
        cat = kernel_category(name)
        by_cat[cat].append((start, start + dur))
        sums[cat] += dur
    comm_busy = union_length(by_cat["comm"])
    overlap = intersection_length(by_cat["comm"], by_cat["compute"])
    allv = [iv for v in by_cat.values() for iv in v]
    return {
        "comm_kernel_time_s": sums["comm"],
        "compute_kernel_time_s": sums["compute"],
        "copy_time_s": sums["copy"],
        "comm_busy_s": comm_busy,
        "compute_busy_s": union_length(by_cat["compute"]),
        "overlap_s": overlap,
        "exposed_comm_s": comm_busy - overlap,
        "comm_overlap_fraction": overlap / comm_busy if comm_busy > 0 else None,
        "copy_busy_s": union_length(by_cat["copy"]),
        "copy_compute_overlap_s": intersection_length(by_cat["copy"], by_cat["compute"]),
        "span_s": (max(e for _, e in allv) - min(s for s, _ in allv)) if allv else 0.0,
        "gpu_busy_s": union_length(allv),
    }


def steps_overlap(steps: Sequence[Sequence[Event]]) -> dict[str, Any]:
    """:func:`overlap_summary` of every step, then the median of each field over steps; the NCCL time
    and calls per step by collective (AllGather, ReduceScatter, AllReduce, …)."""
    per = [overlap_summary(s) for s in steps]
    out: dict[str, Any] = {}
    for key in per[0] if per else ():
        vals = [p[key] for p in per if p[key] is not None]
        out[key] = statistics.median(vals) if vals else None
    out["overlap_per_step"] = per
    n = max(len(steps), 1)
    by_kind: dict[str, list[float]] = {}
    for step in steps:
        for name, _, dur in step:
            if kernel_category(name) == "comm":
                by_kind.setdefault(nccl_collective(name), []).append(dur)
    out["nccl_time_s_by_collective"] = {k: sum(v) / n for k, v in sorted(by_kind.items())}
    out["nccl_calls_by_collective"] = {k: len(v) / n for k, v in sorted(by_kind.items())}
    return out


# ---- the collectives plan (pure) -----------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class CollectiveSpec:
    """One collective to time: ``op`` on a ``bytes``-sized tensor (module doc) of ``dtype``."""

    op: str
    dtype: str  # "bf16" | "fp8_e4m3"
    bytes: int
    warmup: int
    iters: int

    @property
    def elements(self) -> int:
        """Elements of the tensor that ``bytes`` measures (output of all-gather, input otherwise)."""
        return self.bytes // _ITEMSIZE[self.dtype]


def collective_sizes(quick: bool = False) -> list[int]:
    """Message sizes in bytes: powers of two, 1 MiB … 4 GiB (quick: 1 MiB … 64 MiB)."""
    return [1 << k for k in range(20, 27 if quick else 33)]


def collective_iterations(nbytes: int, quick: bool = False) -> tuple[int, int]:
    """(warm-up, timed) iterations for a size: fewer for big messages (≥ 10 timed)."""
    if quick:
        return 2, 10
    if nbytes <= 64 << 20:
        return 5, 40
    if nbytes <= 512 << 20:
        return 3, 20
    return 2, 10


def collective_plan(quick: bool = False) -> list[CollectiveSpec]:
    """Every (op, dtype, size) to time, in run order: dtype (bf16 first: an fp8 call the backend
    refuses must not cost the bf16 data), then op, then ascending size."""
    return [
        CollectiveSpec(op=op, dtype=dt, bytes=b, warmup=w, iters=n)
        for dt in COLLECTIVE_DTYPES
        for op in COLLECTIVE_OPS
        for b in collective_sizes(quick)
        for w, n in [collective_iterations(b, quick)]
    ]


def estimate_collective_s(
    spec: CollectiveSpec, world: int = 2, busbw_bytes_per_s: float = 350e9, latency_s: float = 25e-6
) -> float:
    """Rough wall seconds of one spec: (warm-up + timed + 1 profiled) calls at ``busbw_bytes_per_s``
    plus ``latency_s`` per call, and 0.15 s of allocation, random fill and bookkeeping. Only sizes
    the sweep."""
    per_call = latency_s + spec.bytes * _BUSBW_FACTOR[spec.op](world) / busbw_bytes_per_s
    return (spec.warmup + spec.iters + 1) * per_call + 0.15


# ---- the training plan (pure) --------------------------------------------------------------------

#: Decoder layer shapes (Llama 3 8B and 70B configs: dim, ffn, heads, kv heads; head_dim 128).
LAYERS: Mapping[str, DecoderConfig] = {
    "llama3_8b": DecoderConfig(dim=4096, ffn=14336, heads=32, kv_heads=8),
    "llama3_70b": DecoderConfig(dim=8192, ffn=28672, heads=64, kv_heads=8),
}
TRAIN_RECIPES: tuple[str, ...] = ("bf16", "tensorwise", "rowwise")
# Compile seconds of a config by recipe (per-layer torch.compile, fwd + bwd, both ranks at once;
# guesses from the 40-90 s seen for decoder stacks; only used to size and order the sweep).
_COMPILE_S = {"bf16": 40.0, "tensorwise": 60.0, "rowwise": 75.0}


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """One training-step measurement: a stack of ``n_layers`` decoder layers under FSDP2 (``fsdp``:
    every rank its own ``batch`` sequences) or tensor parallelism over all ranks (``tp``: the group
    shares ``batch`` sequences, sequence-parallel norms)."""

    name: str
    priority: int
    parallel: str  # "fsdp" | "tp"
    layer_name: str
    layer: DecoderConfig
    n_layers: int
    batch: int
    seq: int
    recipe: str  # "bf16" | "tensorwise" | "rowwise"
    fp8_all_gather: bool = False  # FSDP2 float8 all-gather (tensorwise only)
    ac: str = "none"  # "none" | "full" (checkpoint_wrapper per layer)
    async_tp: bool = False

    def __post_init__(self) -> None:
        if self.parallel not in ("fsdp", "tp"):
            raise ValueError(f"parallel must be fsdp or tp, got {self.parallel!r}")
        if self.recipe not in TRAIN_RECIPES:
            raise ValueError(f"recipe must be one of {', '.join(TRAIN_RECIPES)}, got {self.recipe!r}")
        if self.fp8_all_gather and (self.recipe != "tensorwise" or self.parallel != "fsdp"):
            raise ValueError("float8 all-gather needs FSDP and the tensorwise recipe")
        if self.async_tp and self.parallel != "tp":
            raise ValueError("async TP needs parallel='tp'")
        if self.ac not in ("none", "full"):
            raise ValueError(f"ac must be none or full, got {self.ac!r}")

    def linear_params_per_layer(self) -> int:
        """Weights of the seven Linears of one layer (elements)."""
        c = self.layer
        q = c.heads * c.head_dim
        kv = c.kv_heads * c.head_dim
        return 2 * c.dim * q + 2 * c.dim * kv + 3 * c.dim * c.ffn

    def tokens_per_step_per_gpu(self, world: int) -> float:
        """Tokens one GPU trains on per step: ``batch · seq`` (FSDP), ``batch · seq / world`` (TP)."""
        tokens = self.batch * self.seq
        return tokens / world if self.parallel == "tp" else float(tokens)

    def flops_per_step_per_gpu(self, world: int) -> float:
        """Model FLOP per GPU per step: 6 · Linear weights · tokens plus causal attention
        6 · b · s² · heads · head_dim (QKᵀ and PV, fwd + bwd = 3 × fwd, half the square), per layer;
        TP divides the group's work by ``world``."""
        c = self.layer
        linear = 6.0 * self.linear_params_per_layer() * self.batch * self.seq
        attention = 6.0 * self.batch * self.seq**2 * c.heads * c.head_dim
        total = self.n_layers * (linear + attention)
        return total / world if self.parallel == "tp" else total

    def estimate_s(self, world: int = 2, flops_per_s: float = 400e12, steps: int = 16) -> float:
        """Rough wall seconds: compile (by recipe, more for TP, AC, async TP), ``steps`` steps at
        ``flops_per_s`` per GPU, 8 s of setup and teardown. Used for the budget and the plan only."""
        compile_s = _COMPILE_S[self.recipe] * (0.5 if self.seq < 4096 else 1.0)
        compile_s += 15.0 * (self.parallel == "tp") + 20.0 * (self.ac == "full") + 25.0 * self.async_tp
        return compile_s + steps * self.flops_per_step_per_gpu(world) / flops_per_s + 8.0

    def as_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["layer"] = {**d["layer"], "name": self.layer.name}
        return d


# name, parallel, layer, n_layers, batch, recipe, fp8 all-gather, ac, async TP — in priority order
_TRAIN_PLAN: tuple[tuple[str, str, str, int, int, str, bool, str, bool], ...] = (
    ("fsdp_8b_bf16", "fsdp", "llama3_8b", 4, 1, "bf16", False, "none", False),
    ("fsdp_8b_tensorwise", "fsdp", "llama3_8b", 4, 1, "tensorwise", False, "none", False),
    ("fsdp_8b_tensorwise_fp8ag", "fsdp", "llama3_8b", 4, 1, "tensorwise", True, "none", False),
    ("fsdp_8b_rowwise", "fsdp", "llama3_8b", 4, 1, "rowwise", False, "none", False),
    ("tp_8b_bf16", "tp", "llama3_8b", 4, 1, "bf16", False, "none", False),
    ("tp_8b_tensorwise", "tp", "llama3_8b", 4, 1, "tensorwise", False, "none", False),
    ("fsdp_70b_bf16", "fsdp", "llama3_70b", 2, 1, "bf16", False, "none", False),
    ("fsdp_70b_tensorwise_fp8ag", "fsdp", "llama3_70b", 2, 1, "tensorwise", True, "none", False),
    ("fsdp_70b_tensorwise", "fsdp", "llama3_70b", 2, 1, "tensorwise", False, "none", False),
    ("fsdp_70b_rowwise", "fsdp", "llama3_70b", 2, 1, "rowwise", False, "none", False),
    ("tp_70b_bf16", "tp", "llama3_70b", 2, 1, "bf16", False, "none", False),
    ("tp_70b_tensorwise", "tp", "llama3_70b", 2, 1, "tensorwise", False, "none", False),
    ("fsdp_8b_bf16_b2", "fsdp", "llama3_8b", 4, 2, "bf16", False, "none", False),
    ("fsdp_8b_tensorwise_fp8ag_b2", "fsdp", "llama3_8b", 4, 2, "tensorwise", True, "none", False),
    ("fsdp_8b_bf16_ac", "fsdp", "llama3_8b", 4, 1, "bf16", False, "full", False),
    ("fsdp_8b_tensorwise_fp8ag_ac", "fsdp", "llama3_8b", 4, 1, "tensorwise", True, "full", False),
    ("tp_8b_rowwise", "tp", "llama3_8b", 4, 1, "rowwise", False, "none", False),
    ("tp_8b_bf16_async", "tp", "llama3_8b", 4, 1, "bf16", False, "none", True),
    ("tp_8b_tensorwise_async", "tp", "llama3_8b", 4, 1, "tensorwise", False, "none", True),
)
_QUICK = ("fsdp_8b_bf16", "fsdp_8b_tensorwise_fp8ag", "tp_8b_tensorwise")
TRAIN_SEQ = 8192
QUICK_SEQ = 2048


def train_plan(quick: bool = False, only: Sequence[str] | None = None) -> list[TrainConfig]:
    """The training configs in priority order (1 = first). ``quick``: three 1-layer configs at seq
    2048 (names end in ``_quick``). ``only``: names or shell patterns (``fsdp_8b_*``) to keep."""
    out = []
    for i, (name, par, layer, n, batch, recipe, ag, ac, atp) in enumerate(_TRAIN_PLAN, start=1):
        if quick and name not in _QUICK:
            continue
        out.append(
            TrainConfig(
                name=name + ("_quick" if quick else ""),
                priority=i,
                parallel=par,
                layer_name=layer,
                layer=LAYERS[layer],
                n_layers=1 if quick else n,
                batch=batch,
                seq=QUICK_SEQ if quick else TRAIN_SEQ,
                recipe=recipe,
                fp8_all_gather=ag,
                ac=ac,
                async_tp=atp,
            )
        )
    if only:
        unknown = [p for p in only if not any(fnmatch.fnmatchcase(c.name, p) for c in out)]
        if unknown:
            names = ", ".join(c.name for c in out)
            raise ValueError(f"no training config matches {', '.join(unknown)}; valid: {names}")
        out = [c for c in out if any(fnmatch.fnmatchcase(c.name, p) for p in only)]
    return out


def dry_run(quick: bool = False, only: Sequence[str] | None = None, world: int = 2) -> str:
    """The two plans as text, with estimated seconds."""
    specs = collective_plan(quick)
    est = sum(estimate_collective_s(s, world) for s in specs)
    sizes = collective_sizes(quick)
    lines = [
        f"collectives: {len(COLLECTIVE_OPS)} ops x {len(COLLECTIVE_DTYPES)} dtypes x {len(sizes)} sizes "
        f"({sizes[0] >> 20} MiB .. {sizes[-1] >> 20} MiB) = {len(specs)} records; estimated {est:.0f} s "
        f"+ ~15 s start-up",
        f"train: world {world}; priority, name, parallel, layers, batch x seq, recipe, est. s, TFLOP/step/GPU",
    ]
    total = 0.0
    for c in train_plan(quick, only):
        e = c.estimate_s(world)
        total += e
        flags = "".join(
            [" fp8-all-gather" if c.fp8_all_gather else "", " AC" if c.ac != "none" else "", " async" * c.async_tp]
        )
        lines.append(
            f"  {c.priority:>2} {c.name:<30} {c.parallel:<4} {c.n_layers} x {c.layer_name:<10} "
            f"{c.batch} x {c.seq:<5} {c.recipe:<10}{flags:<18} {e:5.0f} s "
            f"{c.flops_per_step_per_gpu(world) / 1e12:6.1f}"
        )
    lines.append(f"  total {total:.0f} s (+ ~20 s start-up); a 450 s call runs the first configs that fit")
    return "\n".join(lines)


# ---- runtime: process group, meta ------------------------------------------------------------


@dataclasses.dataclass
class DistContext:
    """The running process group: ``torch`` and ``torch.distributed`` modules, rank, world size and
    this rank's device (``cuda:LOCAL_RANK`` with NCCL; ``cpu`` with gloo, for tests)."""

    torch: Any
    dist: Any
    rank: int
    world: int
    device: Any
    backend: str
    env_before: dict[str, str | None] = dataclasses.field(default_factory=dict)  # SAFE_ENV values found

    @property
    def cuda(self) -> bool:
        return self.device.type == "cuda"

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize(self.device)

    def broadcast_flag(self, value: bool) -> bool:
        """Rank 0's ``value`` on every rank (all ranks must take the same branch)."""
        t = self.torch.tensor([1.0 if value else 0.0], device=self.device)
        self.dist.broadcast(t, src=0)
        return bool(t.item() > 0.5)

    def all_true(self, value: bool) -> bool:
        """True on every rank iff ``value`` is true on every rank."""
        t = self.torch.tensor([1.0 if value else 0.0], device=self.device)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MIN)
        return bool(t.item() > 0.5)

    def max_over_ranks(self, values: Sequence[float]) -> list[float]:
        """Element-wise maximum over ranks of equally long float lists."""
        t = self.torch.tensor(list(values), dtype=self.torch.float64, device=self.device)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX)
        return t.tolist()

    def gather_floats(self, values: Sequence[float]) -> list[list[float]]:
        """Every rank's ``values`` (equally long), indexed by rank."""
        t = self.torch.tensor(list(values), dtype=self.torch.float64, device=self.device)
        out = self.torch.empty(self.world * len(values), dtype=self.torch.float64, device=self.device)
        self.dist.all_gather_into_tensor(out, t)
        return out.view(self.world, len(values)).tolist()
