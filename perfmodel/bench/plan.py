"""What the GPU sweeps measure: shape lists and time estimates, pure Python (no torch, no GPU).

Counting rules for the whole module:
* A GEMM is ``(M, K) @ (K, N)``: M and N are the output's rows and columns, K the reduction dim.
  FLOP = 2·M·K·N (1 FMA = 2 FLOP). Bytes = each operand read once plus the output written once.
* A ``Linear(K, N)`` on ``M`` tokens runs three GEMMs per training step (fwd + bwd)::

      out         = x (M,K)        @ W^T (K,N)      reduction K
      grad_input  = grad_out (M,N) @ W (N,K)        reduction N
      grad_weight = x^T (K,M)      @ grad_out (M,N) reduction M   <- the big M is reduced here

* ``layout`` is two letters, operand A then B: ``r`` row-major (contiguous), ``c`` column-major
  (the transpose of a contiguous tensor). ``torch._scaled_mm`` needs ``rc``.
* Shapes are deterministic: every random draw comes from ``random.Random(seed)``.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Iterable, Sequence

__all__ = [
    "FP8_MULTIPLE",
    "GEMM_FORMATS",
    "LINEAR_M",
    "LINEAR_RECIPES",
    "LLM_LINEAR_SHAPES",
    "LLM_M",
    "GemmFormat",
    "GemmSpec",
    "LinearSpec",
    "estimate_gemm_s",
    "estimate_gemm_sweep_s",
    "estimate_linear_sweep_s",
    "gemm_plan",
    "linear_plan",
    "memory_sizes",
]

FP8_MULTIPLE = 16  # torch._scaled_mm: "both dimensions of mat2 must be divisible by 16" (K and N)
MAX_OPERAND_BYTES = 20e9  # skip GEMMs whose A + B + C (bf16) exceed this

# (K, N) of nn.Linear weights in public model configs (config.json of each model on the HF hub).
# K = in_features (hidden size), N = out_features.
LLM_LINEAR_SHAPES: tuple[tuple[int, int, str], ...] = (
    (4096, 4096, "llama3-8b/mistral-7b q,o"),
    (4096, 1024, "llama3-8b/mistral-7b k,v (8 kv heads)"),
    (4096, 14336, "llama3-8b/mistral-7b/mixtral gate,up"),
    (14336, 4096, "llama3-8b/mistral-7b/mixtral down"),
    (4096, 6144, "llama3-8b fused qkv"),
    (8192, 8192, "llama3-70b q,o"),
    (8192, 1024, "llama3-70b k,v"),
    (8192, 28672, "llama3-70b gate,up"),
    (28672, 8192, "llama3-70b down"),
    (5120, 13824, "llama2-13b/qwen-14b gate,up"),
    (13824, 5120, "llama2-13b/qwen-14b down"),
    (3584, 18944, "qwen2.5-7b gate,up"),
    (18944, 3584, "qwen2.5-7b down"),
    (3584, 512, "qwen2.5-7b k,v"),
    (2048, 8192, "gpt-style 1.3b/llama3.2-1b mlp up"),
    (8192, 2048, "gpt-style 1.3b/llama3.2-1b mlp down"),
    (768, 3072, "gpt2-small mlp up"),
    (1024, 4096, "gpt2-medium mlp up"),
    (256, 1024, "tiny mlp up"),
)
LLM_M: tuple[int, ...] = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)

SQUARES: tuple[int, ...] = (
    256,
    512,
    768,
    1024,
    1536,
    2048,
    3072,
    4096,
    5120,
    6144,
    8192,
    10240,
    12288,
    14336,
    16384,
)
ODD_SIZES: tuple[int, ...] = (1000, 3000, 4097, 5000, 11008, 13824)

# Linear fwd+bwd sweep (torch.compile + torchao float8): (K, N) pairs in priority order.
LINEAR_SHAPES: tuple[tuple[int, int], ...] = (
    (4096, 4096), (8192, 28672), (4096, 1024), (14336, 4096), (8192, 8192), (2048, 8192),
    (4096, 14336), (28672, 8192), (5120, 13824), (1024, 4096), (8192, 1024), (3584, 18944),
)  # fmt: skip
LINEAR_M: tuple[int, ...] = (256, 1024, 2048, 4096, 8192, 16384, 32768)
LINEAR_RECIPES: tuple[str, ...] = ("bf16", "tensorwise", "rowwise", "rowwise_with_gw_hp")


@dataclasses.dataclass(frozen=True, kw_only=True)
class GemmFormat:
    """One way of running a GEMM: operand dtype, scaling, the peak used for time estimates."""

    dtype: str  # "bf16" | "fp8_e4m3"
    scaling: str | None  # None | "tensorwise" | "rowwise"
    estimate_flops_per_s: float  # only for sizing the sweep; not a model parameter

    @property
    def key(self) -> str:
        return self.dtype if self.scaling is None else f"{self.dtype}_{self.scaling}"


GEMM_FORMATS: tuple[GemmFormat, ...] = (
    GemmFormat(dtype="bf16", scaling=None, estimate_flops_per_s=750e12),  # measured ~790 (KINDS.md)
    GemmFormat(dtype="fp8_e4m3", scaling="tensorwise", estimate_flops_per_s=1400e12),
    GemmFormat(dtype="fp8_e4m3", scaling="rowwise", estimate_flops_per_s=1300e12),
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class GemmSpec:
    """One GEMM to time: ``(M, K) @ (K, N)`` with ``layout`` (see module doc)."""

    M: int
    K: int
    N: int
    layout: str = "rr"
    family: str = "square"  # square | llm | odd | random
    role: str | None = None  # out | grad_input | grad_weight for the llm family
    model: str | None = None  # where an llm shape comes from

    def __post_init__(self) -> None:
        for name in ("M", "K", "N"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"GemmSpec.{name} must be a positive int, got {value!r}")
        if self.layout not in ("rr", "rc", "cr", "cc"):
            raise ValueError(f"GemmSpec.layout must be one of rr, rc, cr, cc, got {self.layout!r}")

    @property
    def flops(self) -> int:
        return 2 * self.M * self.K * self.N

    def operand_bytes(self, bytes_per_element: float = 2.0) -> float:
        """A + B read once, C written once (bf16 output), bytes."""
        return bytes_per_element * (self.M * self.K + self.K * self.N) + 2.0 * self.M * self.N

    def for_fp8(self) -> GemmSpec:
        """The shape ``_scaled_mm`` can run: K and N rounded up to multiples of 16, layout ``rc``."""
        return dataclasses.replace(
            self, K=_round_up(self.K, FP8_MULTIPLE), N=_round_up(self.N, FP8_MULTIPLE), layout="rc"
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class LinearSpec:
    """One ``nn.Linear(K, N, bias=False)`` fwd+bwd on ``M`` tokens under ``recipe``."""

    M: int
    K: int
    N: int
    recipe: str  # "bf16" or a torchao Float8LinearRecipeName value

    @property
    def flops(self) -> int:
        return 3 * 2 * self.M * self.K * self.N


def _round_up(x: int, multiple: int) -> int:
    return -(-x // multiple) * multiple


def _log_uniform_int(rng: random.Random, lo: int, hi: int) -> int:
    return round(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _dedupe(specs: Iterable[GemmSpec]) -> list[GemmSpec]:
    seen: set[tuple[int, int, int, str]] = set()
    out = []
    for s in specs:
        key = (s.M, s.K, s.N, s.layout)
        if key not in seen and s.operand_bytes() <= MAX_OPERAND_BYTES:
            seen.add(key)
            out.append(s)
    return out


def linear_gemms(M: int, K: int, N: int, *, model: str | None = None) -> list[GemmSpec]:
    """The three GEMMs of ``Linear(K, N)`` fwd+bwd on M tokens, with the layouts bf16 autograd uses."""
    return [
        GemmSpec(M=M, K=K, N=N, layout="rc", family="llm", role="out", model=model),
        GemmSpec(M=M, K=N, N=K, layout="rr", family="llm", role="grad_input", model=model),
        GemmSpec(M=K, K=M, N=N, layout="cr", family="llm", role="grad_weight", model=model),
    ]


def random_shapes(count: int, *, seed: int = 0) -> list[GemmSpec]:
    """Held-out-style shapes: M log-uniform 16..32768, K and N log-uniform 256..28672; half rounded
    to multiples of 64, a quarter to multiples of 8, the rest left arbitrary."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        M = _log_uniform_int(rng, 16, 32768)
        K = _log_uniform_int(rng, 256, 28672)
        N = _log_uniform_int(rng, 256, 28672)
        multiple = 64 if i % 4 in (0, 1) else 8 if i % 4 == 2 else 1
        M, K, N = (max(multiple, _round_up(v, multiple)) for v in (M, K, N))
        out.append(GemmSpec(M=M, K=K, N=N, layout="rr", family="random"))
    return out


def gemm_plan(*, quick: bool = False, seed: int = 0, n_random: int = 250, random_only: bool = False) -> list[GemmSpec]:
    """Every GEMM shape of the sweep, deduplicated, in run order (cheap families first).
    ``random_only``: just the random family (a fresh validation set with another ``seed``)."""
    if random_only:
        return _dedupe(random_shapes(n_random, seed=seed))
    if quick:
        specs = [GemmSpec(M=n, K=n, N=n) for n in (256, 1000, 4096, 8192)]
        specs += linear_gemms(2048, 4096, 14336, model="llama3-8b gate,up")
        specs += random_shapes(6, seed=seed)
        return _dedupe(specs)
    specs = [GemmSpec(M=n, K=n, N=n) for n in SQUARES]
    odd = [*ODD_SIZES, *random.Random(seed + 1).sample(range(300, 12000), 6)]
    specs += [GemmSpec(M=n, K=n, N=n, family="odd") for n in odd]
    specs += [GemmSpec(M=m, K=4096, N=n, family="odd") for m in (1000, 4097) for n in (11008, 13824, 5000)]
    specs += [GemmSpec(M=8192, K=k, N=4096, family="odd") for k in (1000, 3000, 4097, 11008)]
    llm = [g for K, N, model in LLM_LINEAR_SHAPES for M in LLM_M for g in linear_gemms(M, K, N, model=model)]
    # interleave llm and random so that a sweep cut short by its time budget trims both evenly
    specs += _interleave(llm, random_shapes(n_random, seed=seed))
    return _dedupe(specs)


def _interleave(*lists: Sequence[GemmSpec]) -> list[GemmSpec]:
    """Merge lists by relative position (item i of a list of n sorts at (i + 0.5) / n), stable."""
    keyed = [((i + 0.5) / len(lst), j, item) for j, lst in enumerate(lists) for i, item in enumerate(lst)]
    return [item for _, _, item in sorted(keyed, key=lambda t: (t[0], t[1]))]


def linear_plan(
    *,
    quick: bool = False,
    shapes: Sequence[tuple[int, int]] | None = None,
    ms: Sequence[int] | None = None,
    recipes: Sequence[str] = LINEAR_RECIPES,
) -> list[LinearSpec]:
    """Linear fwd+bwd measurements, grouped by (K, N) then recipe (one compile per group)."""
    if quick:
        shapes = shapes or [(4096, 4096)]
        ms = ms or (1024, 4096)
    shapes = shapes or LINEAR_SHAPES
    ms = ms or LINEAR_M
    return [LinearSpec(M=M, K=K, N=N, recipe=r) for K, N in shapes for r in recipes for M in ms]


def memory_sizes(*, quick: bool = False) -> list[int]:
    """Copy sizes in bytes: 1 MB .. 4 GB, doubling (1 MB = 2**20 B here, sizes are exact powers)."""
    top = 28 if quick else 32
    return [2**e for e in range(20, top + 1)]


def estimate_gemm_s(spec: GemmSpec, fmt: GemmFormat, *, mem_bw_bytes_per_s: float = 4.0e12) -> float:
    """Rough kernel time, seconds: max(FLOP / peak, bytes / bandwidth) + 4 µs."""
    bpe = 1.0 if fmt.dtype.startswith("fp8") else 2.0
    return max(spec.flops / fmt.estimate_flops_per_s, spec.operand_bytes(bpe) / mem_bw_bytes_per_s) + 4e-6


def bench_budget_ms(kernel_s: float, *, warmup_ms: float, rep_ms: float, min_reps: int) -> tuple[float, float]:
    """do_bench (warmup, rep) in ms for a kernel of ~kernel_s: at least ``min_reps`` timed runs."""
    t_ms = kernel_s * 1e3
    return max(warmup_ms, t_ms), max(rep_ms, min_reps * t_ms)


def estimate_do_bench_s(
    kernel_s: float,
    *,
    warmup_ms: float,
    rep_ms: float,
    min_reps: int,
    flush_s: float = 85e-6,
    host_overhead_s: float = 1.5e-3,
) -> float:
    """Wall time of one triton.testing.do_bench call: 1 + 5 estimate runs, then the warm-up and the
    timed runs, each timed run after a 256 MB L2 flush (~85 µs at ~3 TB/s)."""
    warm, rep = bench_budget_ms(kernel_s, warmup_ms=warmup_ms, rep_ms=rep_ms, min_reps=min_reps)
    per_run_s = kernel_s + flush_s
    n_warm = max(1, int(warm * 1e-3 / per_run_s))
    n_rep = max(1, int(rep * 1e-3 / per_run_s))
    return host_overhead_s + (6 + n_rep) * per_run_s + n_warm * kernel_s


def estimate_gemm_sweep_s(
    specs: Sequence[GemmSpec],
    *,
    formats: Sequence[GemmFormat] = GEMM_FORMATS,
    warmup_ms: float = 1.0,
    rep_ms: float = 5.0,
    min_reps: int = 5,
) -> float:
    """Estimated wall time of the GEMM sweep, seconds."""
    total = 0.0
    for spec in specs:
        for fmt in formats:
            s = spec.for_fp8() if fmt.dtype.startswith("fp8") else spec
            total += estimate_do_bench_s(estimate_gemm_s(s, fmt), warmup_ms=warmup_ms, rep_ms=rep_ms, min_reps=min_reps)
    return total


def estimate_linear_sweep_s(
    specs: Sequence[LinearSpec],
    *,
    compile_s: float = 5.0,
    record_overhead_s: float = 0.3,
    steps: int = 13,
) -> float:
    """Estimated wall time of the Linear sweep: one compile per (K, N, recipe) group (dynamic M; ~2-5 s
    each, measured: smoke run, H200, 2026-11-30), ~0.3 s of profiler and Python per record, and
    ``steps`` fwd+bwd steps per record at ~750 TFLOP/s (bf16) / ~1200 TFLOP/s (float8 recipes)."""
    groups = {(s.K, s.N, s.recipe) for s in specs}
    run = sum(record_overhead_s + steps * s.flops / (750e12 if s.recipe == "bf16" else 1200e12) for s in specs)
    return len(groups) * compile_s + run
