"""GEMM operand-layout and cuBLAS-kernel sweep: the same (M, K, N) in layouts rr, rc and cr.

``python -m benchmarks.harness.gemm_layouts {plan,time,kernels,summary} --out DIR [--seed S] [--budget-s B]
[--family-mix llm=60,...] [--warmup-ms W --rep-ms R] [--quick] [--dry-run]``

Why: the same bf16 shape runs up to 1.6x slower with B row-major (``x @ W``, ``rr``, the grad_input
GEMM) than with B column-major (``x @ W.T``, ``rc``, forward), and with A column-major (``cr``, the
grad_weight GEMM ``gO.T @ x``) an M that is not a multiple of 8 sends cuBLAS to a slow sm75 ``align1``
kernel. This sweep times every shape in all three layouts (bf16) plus fp8 e4m3 ``rc`` (tensorwise and
rowwise scales; ``torch._scaled_mm`` on Hopper runs ``rc`` only), and records which kernels ran.

Layouts, operand A then B, in torch row-major terms (``r`` contiguous, ``c`` the transpose of a
contiguous tensor), for ``C (M, N) = A (M, K) @ B (K, N)``::

    rr  A = x  [M, K] contiguous,        B = W   [K, N] contiguous       (grad_input: gO @ W)
    rc  A = x  [M, K] contiguous,        B = W.T, W [N, K] contiguous     (forward: x @ W.T)
    cr  A = xT, x [K, M] contiguous,     B = gO  [K, N] contiguous       (grad_weight: x.T @ gO)

Leading dimensions (elements): A ``K`` (r) or ``M`` (c), B ``N`` (r) or ``K`` (c), C ``N``. cuBLAS's
Hopper kernels need 16-byte aligned leading dimensions (multiples of 8 bf16 elements); otherwise it
falls back to sm75/sm80 ``alignN`` kernels, ~5-6x slower. Where an operand has a dimension of size 1
(M = 1: A is a vector) its two layouts are the same memory, and torch may hand cuBLAS the same call.

Three phases, each its own process, writing ``perfmodel.bench/1`` datasets (``DatasetWriter``):

* ``plan`` (pure Python): the items, their counts and the estimated phase times; ``--out`` also writes
  the item list to ``gemm_layouts_plan.json``.
* ``time``: ``triton.testing.do_bench`` median (+ p20/p80, the mean — what ``do_bench(fn)`` returns — and the
  number of timed runs), ``timing: "event"``, L2 flushed before every timed run, with the sweep's warm-up and
  timing window (``--warmup-ms`` 1, ``--rep-ms`` 10; do_bench's own defaults are 25 and 100), in a process
  that never starts a profiler (once torch.profiler or Proton has attached, the event times of small kernels
  inflate by 10 µs and more). -> ``gemm_layouts_time.json``
* ``kernels``: the same items (same ``id``) under ``torch.profiler`` (CUDA activity), ``calls`` calls
  each after warm-up, the L2 flushed before each call (as do_bench does): kernel names, each kernel's
  median duration, kernels per call, their sum (``time_s``, ``timing: "kernel"``).
  -> ``gemm_layouts_kernels.json``
* ``summary`` (pure Python): a table per family/layout/format of counts, median TFLOP/s, the median
  event-minus-kernel gap (µs), and the share of items whose main kernel is a pre-Hopper (sm < 90) one.

Items are ordered by shape, shapes shuffled with the seed, so a budget cut drops a uniform random
subset of shapes (all five items of a shape stay together), never whole families. ``--order-seed`` shuffles the
same shapes (drawn with ``--seed``) into another order: the same GEMMs after other neighbours, which is how far a
GEMM's time depends on what ran before it (the "other order" floor of ``docs/validation.md``). A shape's five items
run bf16 rr, rc, cr, fp8 tensorwise, rowwise, so bf16 rr is always the first after another shape, while the GPU's
clock still answers the shape before (by event time the widest spread of the five, ``docs/validation.md``);
``--rotate`` starts each shape at another of its five (shape g in run order at its (g mod 5)-th), so every kind runs
first for a fifth of the shapes and later for the rest. torch and triton are imported inside the functions that run
on the GPU: importing this module touches neither.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import random
import re
import shlex
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from perfmodel.bench import plan as P
from perfmodel.bench._device import bench, kernel_times_s, require_cuda
from perfmodel.bench.dataset import DatasetWriter, collect_meta, gpu_state
from perfmodel.bench.profiled import flush_marker, profile_calls, split_at_markers  # noqa: F401 (split_at_markers: this module's name too)
from perfmodel.bench.session import log as _log
from perfmodel.bench.session import positive, warm_gpu

__all__ = [
    "FAMILIES",
    "FAMILY_MIX",
    "LAYOUTS",
    "LLM_M",
    "RANDOM_ALIGNMENTS",
    "LayoutItem",
    "build_parser",
    "estimate_item_kernel_s",
    "estimate_kernels_phase_s",
    "estimate_time_phase_s",
    "main",
    "parse_kernel_name",
    "plan_items",
    "plan_summary",
    "run_kernels",
    "run_time",
    "summarize",
]

Log = Callable[[str], None]

# ---- the plan's constants (printed by `plan`; a fresh sweep with another --seed uses the same mix) --

FAMILIES: tuple[str, ...] = ("square", "llm", "small_m", "odd", "random")  # generation order (dedupe)
# Distinct GEMM shapes per family. Every shape runs as 5 items: bf16 in rr, rc, cr, and fp8 e4m3
# tensorwise and rowwise in rc (K and N rounded up to multiples of 16).
FAMILY_MIX: Mapping[str, int] = {"square": 15, "llm": 270, "small_m": 144, "odd": 96, "random": 420}
QUICK_SHAPES_PER_FAMILY = 2  # --quick: the first shapes of each family (in run order) ...
QUICK_MAX_KERNEL_S = 1e-3  # ... whose items are all estimated under 1 ms

LAYOUTS: tuple[str, ...] = ("rr", "rc", "cr")
BF16 = next(f for f in P.GEMM_FORMATS if f.dtype == "bf16")
FP8_FORMATS: tuple[P.GemmFormat, ...] = tuple(f for f in P.GEMM_FORMATS if f.dtype.startswith("fp8"))
FORMAT_KEYS: tuple[str, ...] = tuple(f.key for f in (BF16, *FP8_FORMATS))

# llm: the three GEMMs of Linear(K, N) fwd+bwd for (K, N) in plan.LLM_LINEAR_SHAPES at these token
# counts, each GEMM shape in all three layouts (``natural_layout`` says which one autograd runs).
# (model, M) cases are taken round-robin over M (models shuffled per M) until FAMILY_MIX["llm"] shapes.
LLM_M: tuple[int, ...] = (1, 16, 128, 1024, 4096, 16384, 65536)
SQUARE_SIZES: tuple[int, ...] = P.SQUARES  # 256 ... 16384 (the same at every seed)
# random: M log-uniform in RANDOM_M, K and N log-uniform in RANDOM_KN, each dim then rounded up to its
# multiple; classes taken in a fixed cycle (weights = draws per cycle of 20), so the fractions are fixed.
RANDOM_M: tuple[int, int] = (1, 65536)
RANDOM_KN: tuple[int, int] = (256, 28672)
RANDOM_ALIGNMENTS: tuple[tuple[str, int, int, int, int], ...] = (
    # (name, M multiple, K multiple, N multiple, weight)
    ("a64", 64, 64, 64, 5),
    ("a16", 16, 16, 16, 3),
    ("a8", 8, 8, 8, 3),
    ("a1", 1, 1, 1, 5),  # arbitrary: M, K, N not multiples of 8 7/8 of the time
    ("m1", 1, 64, 64, 2),  # only M arbitrary (isolates A's leading dim in cr)
    ("kn1", 64, 1, 1, 2),  # only K and N arbitrary
)
# odd: M log-uniform 64..16384 (multiple of 64); K, N, or both log-uniform 256..16384 made a multiple
# of m but not of 2m, m cycling through ODD_MISALIGN (m = 8: multiple of 8 but not of 16); the other
# dim log-uniform 256..28672 rounded to 64. Kinds cycle K, N, KN.
ODD_M: tuple[int, int] = (64, 16384)
ODD_DIM: tuple[int, int] = (256, 16384)
ODD_MISALIGN: tuple[int, ...] = (1, 2, 4, 8)
ODD_KINDS: tuple[str, ...] = ("K", "N", "KN")
# small_m: M log-uniform 1..256 (integers: mostly not multiples of 8), (K, N) a random LLM Linear.
SMALL_M: tuple[int, int] = (1, 256)

# A shape whose five items would take longer than this to time is left out (redrawn where the family
# is random): at most a few large misaligned random shapes, which run ~6x slower than aligned ones.
MAX_SHAPE_TIME_S = 4.0
ALIGN_PENALTY = 6.0  # misaligned bf16 leading dims: ~5-6x slower kernels (H200, 2026-11-30 data)
RR_PENALTY = 1.3  # bf16 rr: up to 1.6x slower than rc

# ---- timing settings ---------------------------------------------------------------------------
WARMUP_MS = 1.0  # do_bench warmup: max(1 ms, one kernel)
REP_MS = 10.0  # do_bench rep: max(10 ms, MIN_REPS kernels) -- the settings of the 2026-11-30 gemm data
MIN_REPS = 10
TIME_BUDGET_S = 215.0  # stop starting items after this (the phase must end within 240 s)
KERNELS_BUDGET_S = 160.0  # stop starting chunks after this (the phase must end within 180 s)
PROFILED_CALLS = 5  # profiled calls per item (each after an L2 flush)
PROFILE_WARMUP_CALLS = 2  # unprofiled calls per item first (cuBLAS heuristics, lazy init)
CHUNK_ITEMS = 16  # items per profiler session ...
CHUNK_MAX_S = 0.5  # ... at most this much estimated GPU time ...
CHUNK_MAX_BYTES = 8e9  # ... and this many operand bytes alive at once
FLUSH_BYTES = 256 * 2**20  # L2 flush buffer zeroed before each profiled call (as do_bench)
GPU_WARM_S = 1.0  # big GEMMs first, so the clocks are up before the first item

# ---- estimator constants (seconds; sizing only, fitted to nothing but the 2026-11-30 gemm sweep) --
TIME_ITEM_OVERHEAD_S = 4e-3  # operands, cuBLAS heuristics, Python per item
TIME_STARTUP_S = 15.0  # torch import, CUDA init, meta, accuracy check, GPU warm-up
KERNELS_ITEM_OVERHEAD_S = 6e-3  # operands, warm-up calls, trace parsing per item
KERNELS_CHUNK_OVERHEAD_S = 0.05  # one profiler start/stop
KERNELS_STARTUP_S = 20.0  # as TIME_STARTUP_S plus CUPTI's first attach
FLUSH_S = 85e-6  # zeroing 256 MB at ~3 TB/s
WRITE_EVERY_S = 10.0  # rewrite the dataset file at most this often (it grows to MBs)

PLAN_FILE = "gemm_layouts_plan{suffix}.json"
TIME_FILE = "gemm_layouts_time{suffix}.json"
KERNELS_FILE = "gemm_layouts_kernels{suffix}.json"


# ---- plan ----------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class LayoutItem:
    """One measurement: ``spec`` (what runs: shape, layout) in format ``fmt``.

    ``requested`` is the shape asked for (bf16: equal to ``spec``; fp8: K and N before rounding up to
    multiples of 16), ``natural_layout`` the layout autograd uses for an llm role (else None),
    ``alignment`` the random/odd family's alignment class, ``group`` the index of the shape in run order
    (the five items of a shape share it).
    """

    spec: P.GemmSpec
    fmt: P.GemmFormat
    requested: P.GemmSpec
    group: int
    natural_layout: str | None = None
    alignment: str | None = None

    @property
    def id(self) -> str:
        """``"{shape_id}_{layout}_{format}"``, e.g. ``"1000x4097x5000_rc_fp8_e4m3_rowwise"``: unique in
        a plan (shapes are distinct), the same across seeds and phases. The shape is the requested one
        (an fp8 item runs K and N rounded up: two shapes may round to the same fp8 GEMM)."""
        return f"{self.shape_id}_{self.spec.layout}_{self.fmt.key}"

    @property
    def shape_id(self) -> str:
        """The requested shape ``"{M}x{K}x{N}"`` (joins the five items of a shape)."""
        r = self.requested
        return f"{r.M}x{r.K}x{r.N}"

    def fields(self) -> dict[str, Any]:
        """The record fields that describe the item (no measurement)."""
        s = self.spec
        rec: dict[str, Any] = {
            "op": "gemm",
            "id": self.id,
            "shape_id": self.shape_id,
            "M": s.M,
            "K": s.K,
            "N": s.N,
            "dtype": self.fmt.dtype,
            "scaling": self.fmt.scaling,
            "layout": s.layout,
            "out_dtype": "bf16",
            "family": s.family,
            "role": s.role,
            "model": s.model,
            "natural_layout": self.natural_layout,
            "alignment": self.alignment,
            "group": self.group,
        }
        r = self.requested
        if (r.M, r.K, r.N) != (s.M, s.K, s.N):
            rec["requested"] = {"M": r.M, "K": r.K, "N": r.N}
        return rec


@dataclasses.dataclass(frozen=True)
class _Shape:
    spec: P.GemmSpec  # layout: the llm role's natural layout, else "rr" (a placeholder)
    alignment: str | None = None


def _rng(seed: int, family: str) -> random.Random:
    """The random family draws from ``random.Random(seed)``; the others from their own stream."""
    return random.Random(seed if family == "random" else f"{family}:{seed}")


def _log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    return max(lo, min(hi, round(math.exp(rng.uniform(math.log(lo), math.log(hi))))))


def _round_up(x: int, multiple: int) -> int:
    return max(multiple, -(-x // multiple) * multiple)


def _misalign(x: int, m: int) -> int:
    """``x`` moved to a multiple of ``m`` that is not a multiple of ``2m``."""
    v = _round_up(x, m)
    return v + m if v % (2 * m) == 0 else v


def _square_shapes(seed: int) -> Iterator[_Shape]:
    for n in SQUARE_SIZES:
        yield _Shape(P.GemmSpec(M=n, K=n, N=n, family="square"))


def _llm_shapes(seed: int) -> Iterator[_Shape]:
    rng = _rng(seed, "llm")
    per_m = []
    for M in LLM_M:
        models = list(P.LLM_LINEAR_SHAPES)
        rng.shuffle(models)
        per_m.append([(M, K, N, name) for K, N, name in models])
    for i in range(len(P.LLM_LINEAR_SHAPES)):
        for cases in per_m:
            M, K, N, name = cases[i]
            for g in P.linear_gemms(M, K, N, model=name):
                yield _Shape(g)


def _small_m_shape(rng: random.Random, i: int) -> _Shape:
    M = _log_uniform(rng, *SMALL_M)
    K, N, name = rng.choice(P.LLM_LINEAR_SHAPES)
    return _Shape(P.GemmSpec(M=M, K=K, N=N, family="small_m", model=name))


def _odd_shape(rng: random.Random, i: int) -> _Shape:
    """The i-th odd shape: kind ODD_KINDS[i % 3], misalignment ODD_MISALIGN[(i // 3) % 4]."""
    kind = ODD_KINDS[i % len(ODD_KINDS)]
    m = ODD_MISALIGN[(i // len(ODD_KINDS)) % len(ODD_MISALIGN)]
    M = _round_up(_log_uniform(rng, *ODD_M), 64)
    dims = {}
    for d in ("K", "N"):
        if d in kind:
            dims[d] = _misalign(_log_uniform(rng, *ODD_DIM), m)
        else:
            dims[d] = _round_up(_log_uniform(rng, *RANDOM_KN), 64)
    return _Shape(P.GemmSpec(M=M, K=dims["K"], N=dims["N"], family="odd"), alignment=f"{kind}:{m}")


_RANDOM_CYCLE = [a for a in RANDOM_ALIGNMENTS for _ in range(a[4])]


def _random_shape(rng: random.Random, i: int) -> _Shape:
    """The i-th random shape, in alignment class ``_RANDOM_CYCLE[i % 20]``."""
    name, mm, mk, mn, _ = _RANDOM_CYCLE[i % len(_RANDOM_CYCLE)]
    M = _round_up(_log_uniform(rng, *RANDOM_M), mm)
    K = _round_up(_log_uniform(rng, *RANDOM_KN), mk)
    N = _round_up(_log_uniform(rng, *RANDOM_KN), mn)
    return _Shape(P.GemmSpec(M=M, K=K, N=N, family="random"), alignment=name)


# Fixed lists (taken in order) and drawn families (the i-th shape kept is drawn as draw(rng, i), so a
# draw left out is redrawn in the same class: the class fractions are exact).
_LISTED: Mapping[str, Callable[[int], Iterator[_Shape]]] = {"square": _square_shapes, "llm": _llm_shapes}
_DRAWN: Mapping[str, Callable[[random.Random, int], _Shape]] = {
    "small_m": _small_m_shape,
    "odd": _odd_shape,
    "random": _random_shape,
}
_MAX_DRAWS = 100_000


def _shape_items(shape: _Shape, group: int) -> list[LayoutItem]:
    """The five items of a shape: bf16 rr, rc, cr, then fp8 tensorwise and rowwise (rc)."""
    s = shape.spec
    natural = s.layout if s.family == "llm" else None
    base = dataclasses.replace(s, layout="rr")
    items = [
        LayoutItem(
            spec=dataclasses.replace(s, layout=lay),
            fmt=BF16,
            requested=dataclasses.replace(s, layout=lay),
            group=group,
            natural_layout=natural,
            alignment=shape.alignment,
        )
        for lay in LAYOUTS
    ]
    items += [
        LayoutItem(
            spec=base.for_fp8(),
            fmt=fmt,
            requested=dataclasses.replace(s, layout="rc"),
            group=group,
            natural_layout=natural,
            alignment=shape.alignment,
        )
        for fmt in FP8_FORMATS
    ]
    return items


def _layout_penalty(spec: P.GemmSpec, fmt: P.GemmFormat) -> float:
    """How much slower than ``estimate_gemm_s`` to expect: ALIGN_PENALTY where a bf16 leading
    dimension (A: K or M, B: N or K, C: N) is not a multiple of 8 elements, RR_PENALTY for bf16 rr."""
    if fmt.dtype != "bf16":
        return 1.0
    lda = spec.K if spec.layout[0] == "r" else spec.M
    ldb = spec.N if spec.layout[1] == "r" else spec.K
    if any(ld % 8 for ld in (lda, ldb, spec.N)):
        return ALIGN_PENALTY
    return RR_PENALTY if spec.layout == "rr" else 1.0


def estimate_item_kernel_s(item: LayoutItem) -> float:
    """Rough kernel time of one call, seconds: ``plan.estimate_gemm_s`` times the layout penalty."""
    return P.estimate_gemm_s(item.spec, item.fmt) * _layout_penalty(item.spec, item.fmt)


def _time_item_s(item: LayoutItem, *, warmup_ms: float, rep_ms: float, min_reps: int) -> float:
    k = estimate_item_kernel_s(item)
    return TIME_ITEM_OVERHEAD_S + P.estimate_do_bench_s(k, warmup_ms=warmup_ms, rep_ms=rep_ms, min_reps=min_reps)


def _kernels_item_s(item: LayoutItem, *, calls: int = PROFILED_CALLS) -> float:
    k = estimate_item_kernel_s(item)
    return KERNELS_ITEM_OVERHEAD_S + (PROFILE_WARMUP_CALLS + calls) * k + calls * FLUSH_S


def estimate_time_phase_s(
    items: Sequence[LayoutItem], *, warmup_ms: float = WARMUP_MS, rep_ms: float = REP_MS, min_reps: int = MIN_REPS
) -> float:
    """Estimated wall time of the ``time`` phase, seconds (startup + do_bench of every item)."""
    return TIME_STARTUP_S + sum(_time_item_s(i, warmup_ms=warmup_ms, rep_ms=rep_ms, min_reps=min_reps) for i in items)


def estimate_kernels_phase_s(items: Sequence[LayoutItem], *, calls: int = PROFILED_CALLS) -> float:
    """Estimated wall time of the ``kernels`` phase, seconds (startup, profiler sessions, items)."""
    chunks = len(_chunks(list(items), calls=calls))
    return KERNELS_STARTUP_S + chunks * KERNELS_CHUNK_OVERHEAD_S + sum(_kernels_item_s(i, calls=calls) for i in items)


def _shape_time_s(items: Sequence[LayoutItem]) -> float:
    return sum(_time_item_s(i, warmup_ms=WARMUP_MS, rep_ms=REP_MS, min_reps=MIN_REPS) for i in items)


def _family_shapes(family: str, count: int, seed: int, seen: set[tuple[int, int, int]]) -> tuple[list[_Shape], int]:
    """``count`` distinct shapes of ``family`` not in ``seen`` (updated), and how many draws were
    left out for cost (MAX_SHAPE_TIME_S) or size (plan.MAX_OPERAND_BYTES)."""
    out: list[_Shape] = []
    dropped = 0
    listed = _LISTED[family](seed) if family in _LISTED else None
    rng = _rng(seed, family)
    for _ in range(_MAX_DRAWS):
        if len(out) >= count:
            break
        if listed is None:
            shape = _DRAWN[family](rng, len(out))
        else:
            try:
                shape = next(listed)
            except StopIteration:
                raise ValueError(
                    f"family {family!r} has only {len(out)} distinct shapes, fewer than the {count} asked for"
                ) from None
        s = shape.spec
        key = (s.M, s.K, s.N)
        if key in seen:
            continue
        if s.operand_bytes() > P.MAX_OPERAND_BYTES or _shape_time_s(_shape_items(shape, 0)) > MAX_SHAPE_TIME_S:
            dropped += 1
            continue
        seen.add(key)
        out.append(shape)
    else:  # pragma: no cover - the generators are far from exhausted at these counts
        raise ValueError(f"family {family!r}: no {count} distinct shapes in {_MAX_DRAWS} draws")
    return out, dropped


def plan_items(
    *,
    seed: int = 0,
    family_mix: Mapping[str, int] | None = None,
    quick: bool = False,
    order_seed: int | None = None,
    rotate: bool = False,
) -> tuple[list[LayoutItem], dict[str, int]]:
    """Every item of the sweep in run order, and per family the shapes left out for cost or size.

    Shapes are generated family by family (FAMILIES order; a shape already taken by an earlier family
    is skipped), then shuffled with ``random.Random(f"order:{order_seed}")`` (``order_seed`` defaults to
    ``seed``: another one runs the same shapes in another order); each shape's five items stay
    together (bf16 rr, rc, cr, fp8 tensorwise, fp8 rowwise; ``rotate``: shape g of the run order starts at the
    (g mod 5)-th of those and wraps around, the same items and shape order). ``quick``: QUICK_SHAPES_PER_FAMILY
    shapes per family, the first in run order whose items are all estimated under QUICK_MAX_KERNEL_S.
    """
    mix = dict(FAMILY_MIX if family_mix is None else family_mix)
    unknown = set(mix) - set(FAMILIES)
    if unknown:
        raise ValueError(f"unknown families {sorted(unknown)}; valid: {', '.join(FAMILIES)}")
    seen: set[tuple[int, int, int]] = set()
    shapes: list[_Shape] = []
    dropped: dict[str, int] = {}
    for family in FAMILIES:
        if mix.get(family, 0) > 0:
            got, dropped[family] = _family_shapes(family, mix[family], seed, seen)
            shapes += got
    if order_seed is not None and (not isinstance(order_seed, int) or isinstance(order_seed, bool)):
        raise ValueError(f"order_seed must be an int or None, got {order_seed!r}")
    if not isinstance(rotate, bool):
        raise ValueError(f"rotate must be True or False, got {rotate!r}")
    random.Random(f"order:{seed if order_seed is None else order_seed}").shuffle(shapes)
    if quick:
        kept: list[_Shape] = []
        per_family: Counter[str] = Counter()
        for shape in shapes:
            fam = shape.spec.family
            if per_family[fam] < QUICK_SHAPES_PER_FAMILY and all(
                estimate_item_kernel_s(i) < QUICK_MAX_KERNEL_S for i in _shape_items(shape, 0)
            ):
                per_family[fam] += 1
                kept.append(shape)
        shapes = kept
    items: list[LayoutItem] = []
    for g, shape in enumerate(shapes):
        five = _shape_items(shape, g)
        start = g % len(five) if rotate else 0
        items += five[start:] + five[:start]
    return items, dropped


def _fmt_counter(counter: Mapping[Any, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(counter.items(), key=lambda kv: str(kv[0])))


def plan_summary(
    items: Sequence[LayoutItem],
    dropped: Mapping[str, int],
    *,
    seed: int,
    family_mix: Mapping[str, int],
    time_budget_s: float = TIME_BUDGET_S,
    kernels_budget_s: float = KERNELS_BUDGET_S,
    order_seed: int | None = None,
    rotate: bool = False,
    warmup_ms: float = WARMUP_MS,
    rep_ms: float = REP_MS,
) -> str:
    """The plan as text: the constants, counts per family/layout/format, estimated phase times (``order_seed``:
    the run order's seed where it is not ``seed``; ``rotate``: each shape's five items rotated, see
    :func:`plan_items`; ``warmup_ms`` / ``rep_ms``: the time phase's do_bench settings)."""
    shapes = Counter(i.spec.family for i in items if i.fmt is BF16 and i.spec.layout == "rr")
    order = "" if order_seed is None or order_seed == seed else f", run order of seed {order_seed}"
    order += ", each shape's five GEMMs rotated (shape g first runs its (g mod 5)-th)" if rotate else ""
    lines = [
        f"gemm_layouts plan, seed {seed}{order}",
        f"  FAMILY_MIX (shapes): {_fmt_counter(family_mix)}; each shape = bf16 x {{{', '.join(LAYOUTS)}}} "
        f"+ {', '.join(f.key for f in FP8_FORMATS)} (rc, K and N rounded up to multiples of {P.FP8_MULTIPLE})",
        f"  LLM_M: {', '.join(map(str, LLM_M))} x {len(P.LLM_LINEAR_SHAPES)} Linear (K, N), 3 GEMMs each",
        f"  RANDOM: M {RANDOM_M[0]}..{RANDOM_M[1]}, K/N {RANDOM_KN[0]}..{RANDOM_KN[1]} log-uniform; alignment "
        + ", ".join(
            f"{n} ({m},{k},{nn}) x{w}/{sum(a[4] for a in RANDOM_ALIGNMENTS)}" for n, m, k, nn, w in RANDOM_ALIGNMENTS
        ),
        f"  ODD: kinds {'/'.join(ODD_KINDS)}, misaligned to m in {ODD_MISALIGN} (multiple of m, not 2m); "
        f"SMALL_M: M {SMALL_M[0]}..{SMALL_M[1]}; SQUARE: {SQUARE_SIZES[0]}..{SQUARE_SIZES[-1]} "
        f"({len(SQUARE_SIZES)})",
        f"  left out (estimated > {MAX_SHAPE_TIME_S:.0f} s per shape, or > {P.MAX_OPERAND_BYTES / 1e9:.0f} GB): "
        f"{_fmt_counter(dropped) or 'none'}",
        f"shapes: {sum(shapes.values())} ({_fmt_counter(shapes)})",
        f"items: {len(items)}",
    ]
    by = Counter((i.spec.family, i.spec.layout, i.fmt.key) for i in items)
    lines.append(
        f"  {'family':<8} " + " ".join(f"{k:>8}" for k in ("bf16 rr", "bf16 rc", "bf16 cr", "fp8 tw", "fp8 rw"))
    )
    for fam in FAMILIES:
        if shapes.get(fam):
            cols = [by[(fam, lay, BF16.key)] for lay in LAYOUTS] + [by[(fam, "rc", f.key)] for f in FP8_FORMATS]
            lines.append(f"  {fam:<8} " + " ".join(f"{c:>8}" for c in cols))
    natural = sum(1 for i in items if i.fmt is BF16 and i.natural_layout == i.spec.layout)
    lines.append(f"  llm items in their natural layout (bf16): {natural}")
    cr_m_unaligned = sum(1 for i in items if i.fmt is BF16 and i.spec.layout == "cr" and i.spec.M % 8)
    lines.append(f"  bf16 cr items with M not a multiple of 8: {cr_m_unaligned}")
    rounded = sum(1 for i in items if (i.requested.K, i.requested.N) != (i.spec.K, i.spec.N))
    lines.append(f"  fp8 items with K or N rounded up: {rounded}")
    t = estimate_time_phase_s(items, warmup_ms=warmup_ms, rep_ms=rep_ms)
    if (warmup_ms, rep_ms) != (WARMUP_MS, REP_MS):
        lines.append(
            f"  time phase: do_bench warmup {warmup_ms:g} ms, rep {rep_ms:g} ms (the sweep's {WARMUP_MS:g}, {REP_MS:g})"
        )
    k = estimate_kernels_phase_s(items)
    lines.append(
        f"estimated: time phase {t:.0f} s (budget {time_budget_s:.0f} s, must end < 240 s), "
        f"kernels phase {k:.0f} s (budget {kernels_budget_s:.0f} s, must end < 180 s)"
    )
    return "\n".join(lines)


# ---- kernel names ----------------------------------------------------------------------------------

_NVJET = re.compile(
    r"^nvjet(?:_sm(?P<sm>\d+))?_(?P<types>[a-z]+)_(?P<tile_m>\d+)x(?P<tile_n>\d+)_(?P<tile_k>\d+)x(?P<stages>\d+)"
    r"_(?P<cluster_m>\d+)x(?P<cluster_n>\d+)_(?P<rest>.+)$"
)
_XMMA = re.compile(r"(?:^|\W)sm(?P<sm>\d+)_xmma_(?P<op>[a-z]+)_(?P<types>.+?)_(?P<trans>[tn]{2})_(?P<out>[tn])_")
_CUTLASS2 = re.compile(
    r"cutlass_(?P<sm>\d+)_(?:tensorop|wmma_tensorop|simt)_(?P<types>[a-z0-9]*?_?[a-z]?\d*gemm(?:_[a-z]+\d*)?)"
    r"_(?P<tile_m>\d+)x(?P<tile_n>\d+)(?:_(?P<tile_k>\d+)x(?P<stages>\d+))?_(?P<trans>[tn]{2})_align(?P<align>\d+)"
)
_ARCH_PREFIX = {"volta": 70, "turing": 75, "ampere": 80, "hopper": 90}
_LEGACY = re.compile(r"(?:^|\W)(?P<arch>volta|turing|ampere|hopper)_(?P<types>\w+?)gemm")


def _int(text: str | None) -> int | None:
    return None if text is None else int(text)


def parse_kernel_name(name: str) -> dict[str, Any]:
    """What a GPU activity name says about the kernel; every key is present (None where unknown).

    * ``nvjet_sm90_<types>_<tile_m>x<tile_n>_<tile_k>x<stages>_<cluster_m>x<cluster_n>_<raster>_<flags>_<ABC>``
      (cuBLAS's Hopper kernels), e.g. ``nvjet_sm90_tst_128x256_64x4_2x1_v_bz_NNT``: ``types`` ``tst``
      (bf16 operands, fp32 accumulate, bf16 out; ``qqtst`` e4m3 x e4m3, ``qrtst`` e4m3 x e5m2,
      ``tss`` fp32 out), CTA tile 128x256, K tile 64 in 4 pipeline stages, thread-block cluster 2x1,
      ``raster`` ``v``/``h`` (tile rasterization order), then flags: ``bz`` (``bz``: True),
      ``coopA``/``coopB`` (``coop``: ``"A"``/``"B"``), ``splitK`` (``split_k``: True; split-K, often
      followed by a ``splitKreduce_kernel``), ``algoN`` (``algo``: N), others (``bias``, ``ovscale`` =
      rowwise scales) in ``flags``, and the trailing three ``N``/``T`` letters (``transposes``: cuBLAS's
      column-major operand ops; torch swaps A and B when it calls cuBLAS). NVIDIA does not document
      nvjet names: the meanings are read off the names and the GEMMs they ran for, so the raw name is
      kept in every record.
    * ``smXX_xmma_gemm_<types>_<tn>_n_tilesize<M>x<N>x<K>_stage<S>_warpsize..._align<A>`` (cuBLAS's
      xmma kernels): ``sm``, ``types``, ``transposes`` (two letters), tile, ``stages``, ``align``.
    * ``cutlass_<sm>_tensorop_<types>gemm_<out>_<M>x<N>[_<K>x<S>]_<nn>_align<A>`` (CUTLASS 2 kernels
      inside cuBLAS, e.g. ``cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_nn_align1``).
    * ``gemv`` kernels (``family`` ``gemv``: cuBLAS's matrix-vector path, e.g. at M = 1),
      ``cublasLt::splitKreduce_kernel`` (``family`` ``splitk_reduce``, ``role`` ``reduce``),
      ``Memset``/``Memcpy`` activities (``role`` ``memset``/``memcpy``), anything else ``other``.

    ``align`` is the operand alignment in elements the kernel assumes (1, 2, 4, 8, ...): ``align1``
    and ``align2`` kernels are the slow fallbacks for misaligned leading dimensions.
    """
    info: dict[str, Any] = dict.fromkeys(
        (
            "sm",
            "types",
            "tile_m",
            "tile_n",
            "tile_k",
            "stages",
            "cluster_m",
            "cluster_n",
            "raster",
            "coop",
            "algo",
            "transposes",
            "align",
            "tile",
            "cluster",
        )
    )
    info.update(family="other", role="gemm", bz=False, split_k=False, flags=[])
    if name.startswith(("Memset", "Memcpy")):
        info.update(family=name.split()[0].lower(), role=name.split()[0].lower())
        return info
    if "splitKreduce" in name or "splitk_reduce" in name.lower():
        info.update(family="splitk_reduce", role="reduce", split_k=True)
        return info
    m = _NVJET.match(name)
    if m:
        info.update(
            family="nvjet",
            sm=_int(m["sm"]),
            types=m["types"],
            tile_m=int(m["tile_m"]),
            tile_n=int(m["tile_n"]),
            tile_k=int(m["tile_k"]),
            stages=int(m["stages"]),
            cluster_m=int(m["cluster_m"]),
            cluster_n=int(m["cluster_n"]),
        )
        flags = []
        for tok in m["rest"].split("_"):
            if tok in ("v", "h"):
                info["raster"] = tok
            elif tok == "bz":
                info["bz"] = True
            elif tok in ("coopA", "coopB"):
                info["coop"] = tok[-1]
            elif tok.lower() == "splitk":
                info["split_k"] = True
            elif re.fullmatch(r"algo\d+", tok):
                info["algo"] = int(tok[4:])
            elif re.fullmatch(r"[NT]{3}", tok):
                info["transposes"] = tok
            elif tok:
                flags.append(tok)
        info["flags"] = flags
    elif name.startswith("nvjet"):  # a shorter nvjet name: take what is there
        sm = re.search(r"_sm(\d+)_", name)
        tile = re.search(r"_(\d+)x(\d+)_", name)
        info.update(family="nvjet", sm=_int(sm[1]) if sm else None, split_k="splitK" in name)
        if tile:
            info.update(tile_m=int(tile[1]), tile_n=int(tile[2]))
        trans = re.search(r"_([NT]{3})$", name)
        info["transposes"] = trans[1] if trans else None
    elif (m := _XMMA.search(name)) is not None:
        info.update(family="xmma", sm=int(m["sm"]), types=m["types"], transposes=m["trans"])
        tile = re.search(r"tilesize(\d+)x(\d+)x(\d+)", name)
        if tile:
            info.update(tile_m=int(tile[1]), tile_n=int(tile[2]), tile_k=int(tile[3]))
        stages = re.search(r"_stages?(\d+)", name)
        info["stages"] = _int(stages[1]) if stages else None
        info["split_k"] = bool(re.search(r"split_?k(?!_off)", name, re.IGNORECASE)) or "segment_k_on" in name
        info["flags"] = [f for f in ("segment_k_on", "segment_k_off", "sliced", "interleaved") if f in name]
    elif (m := _CUTLASS2.search(name)) is not None:
        info.update(
            family="cutlass",
            sm=int(m["sm"]),
            types=m["types"],
            tile_m=int(m["tile_m"]),
            tile_n=int(m["tile_n"]),
            tile_k=_int(m["tile_k"]),
            stages=_int(m["stages"]),
            transposes=m["trans"],
        )
    elif (m := _LEGACY.search(name)) is not None:
        info.update(family="cublas_legacy", sm=_ARCH_PREFIX[m["arch"]], types=m["types"].strip("_") or None)
        tile = re.search(r"_(\d+)x(\d+)_", name)
        if tile:
            info.update(tile_m=int(tile[1]), tile_n=int(tile[2]))
        trans = re.search(r"_([tn]{2})(?:_|$|\W)", name)
        info["transposes"] = trans[1] if trans else None
    elif "gemv" in name.lower():  # cuBLAS matrix-vector kernels (M = 1 and similar)
        info["family"] = "gemv"
    elif "cutlass" in name or "gemm" in name.lower():
        sm = re.search(r"sm_?(\d{2,3})", name)
        info.update(family="cutlass" if "cutlass" in name else "other", sm=_int(sm[1]) if sm else None)
    else:
        info["role"] = "other"
    if info["align"] is None:
        align = re.search(r"align(\d+)", name)
        info["align"] = _int(align[1]) if align else None
    if info["tile_m"] is not None:
        info["tile"] = f"{info['tile_m']}x{info['tile_n']}"
    if info["cluster_m"] is not None:
        info["cluster"] = f"{info['cluster_m']}x{info['cluster_n']}"
    return info


# ---- GPU side ----------------------------------------------------------------------------------------


def _operand(torch: Any, rows: int, cols: int, major: str, dtype: Any, device: str) -> Any:
    """A (rows, cols) random-normal tensor: row-major (``r``, contiguous) or column-major (``c``, the
    transpose of a contiguous (cols, rows) tensor). Never zeros (zeros run faster on Hopper)."""
    if major == "r":
        return torch.randn(rows, cols, device=device, dtype=torch.bfloat16).to(dtype)
    return torch.randn(cols, rows, device=device, dtype=torch.bfloat16).to(dtype).t()


def _make_case(torch: Any, item: LayoutItem, device: str = "cuda") -> tuple[Callable[[], Any], tuple[Any, ...]]:
    """The callable running ``item`` once on fresh operands, and the operands ``(a, b[, sa, sb])``."""
    s = item.spec
    if item.fmt.dtype == "bf16":
        a = _operand(torch, s.M, s.K, s.layout[0], torch.bfloat16, device)
        b = _operand(torch, s.K, s.N, s.layout[1], torch.bfloat16, device)
        return (lambda: torch.mm(a, b)), (a, b)
    if s.layout != "rc":
        raise ValueError(f"fp8 _scaled_mm runs layout rc only, got {s.layout!r}")
    f8 = torch.float8_e4m3fn
    a = _operand(torch, s.M, s.K, "r", f8, device)
    b = _operand(torch, s.K, s.N, "c", f8, device)
    if item.fmt.scaling == "tensorwise":
        sa = torch.tensor(0.75, device=device, dtype=torch.float32)
        sb = torch.tensor(1.25, device=device, dtype=torch.float32)
    elif item.fmt.scaling == "rowwise":
        sa = torch.rand(s.M, 1, device=device, dtype=torch.float32) + 0.5
        sb = torch.rand(1, s.N, device=device, dtype=torch.float32) + 0.5
    else:
        raise ValueError(f"unknown fp8 scaling {item.fmt.scaling!r}; valid: tensorwise, rowwise")
    return (lambda: torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)), (a, b, sa, sb)


def _profiler_enabled(torch: Any) -> bool:
    """Whether the autograd/Kineto profiler is on in this process now."""
    try:
        return bool(torch.autograd._profiler_enabled())
    except AttributeError:  # pragma: no cover - older torch
        return False


def _check_accuracy(torch: Any, n: int = 1000) -> dict[str, float]:
    """‖C − C_ref‖/‖C_ref‖ per layout and fp8 format on one random n³ GEMM (reference: float64 of the
    same operands, times the scales), so a wrong operand layout or scale shows up as an error."""
    torch.manual_seed(1)
    out = {}
    shape = _Shape(P.GemmSpec(M=n, K=n + 16, N=n - 8, family="square"))
    for item in _shape_items(shape, 0):
        fn, ops = _make_case(torch, item)
        c = fn().double()
        ref = ops[0].float().double() @ ops[1].float().double()
        if len(ops) == 4:
            ref = ref * ops[2].double() * ops[3].double()
        out[f"{item.spec.layout}_{item.fmt.key}"] = float((c - ref).norm() / ref.norm())
    return out


def _warm_gpu(torch: Any, seconds: float = GPU_WARM_S) -> None:
    """Run 8192³ bf16 GEMMs for ``seconds`` so the clocks are up before the first measurement."""
    warm_gpu(torch, seconds)


def run_time(
    writer: DatasetWriter,
    items: Sequence[LayoutItem],
    *,
    budget_s: float = TIME_BUDGET_S,
    warmup_ms: float = WARMUP_MS,
    rep_ms: float = REP_MS,
    min_reps: int = MIN_REPS,
    device: str = "cuda",
    log: Log = print,
) -> dict[str, Any]:
    """Time every item with ``do_bench`` (CUDA events, L2 flushed before each timed run); append one
    ``timing: "event"`` record per item to ``writer``, rewriting the file every WRITE_EVERY_S. Stops starting items
    after ``budget_s`` seconds. Never starts a profiler. Returns a summary for the meta block."""
    torch = require_cuda() if device == "cuda" else _cpu_torch()
    if _profiler_enabled(torch):
        raise RuntimeError("a profiler is active in this process; event timings must come from a clean process")
    torch.manual_seed(0)
    t0 = last_write = time.perf_counter()
    done = 0
    truncated = False
    errors: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        if time.perf_counter() - t0 > budget_s:
            truncated = True
            log(f"time: budget {budget_s:.0f} s spent after {i}/{len(items)} items; stopping")
            break
        warm, rep = P.bench_budget_ms(
            estimate_item_kernel_s(item), warmup_ms=warmup_ms, rep_ms=rep_ms, min_reps=min_reps
        )
        try:
            fn, ops = _make_case(torch, item, device)
            wall0 = time.time()
            t = bench(fn, warmup_ms=warm, rep_ms=rep)
            t.update(wall_start_s=wall0, wall_end_s=time.time())
        except (RuntimeError, ValueError) as exc:  # one unsupported shape must not end the sweep
            errors.append({"id": item.id, "error": str(exc)[:300]})
            log(f"time: {item.id} failed: {str(exc)[:200]}")
            if device == "cuda":
                torch.cuda.empty_cache()
            continue
        rec = item.fields()
        rec.update(timing="event", method="do_bench", **t, tflops=item.spec.flops / t["time_s"] / 1e12)
        writer.add(rec)
        del fn, ops
        done += 1
        if time.perf_counter() - last_write > WRITE_EVERY_S:
            writer.flush()
            last_write = time.perf_counter()
            log(f"time: {i + 1}/{len(items)} items, {done} records, {last_write - t0:.0f} s")
    writer.flush()
    return {
        "records": done,
        "planned": len(items),
        "truncated": truncated,
        "seconds": time.perf_counter() - t0,
        "errors": errors[:50],
        "n_errors": len(errors),
        "profiler_enabled_after": _profiler_enabled(torch),
        "warmup_ms": warmup_ms,
        "rep_ms": rep_ms,
        "min_reps": min_reps,
        "budget_s": budget_s,
    }


def _cpu_torch() -> Any:  # tests run run_time on the CPU with a stand-in bench
    import torch

    return torch


def _chunks(items: list[LayoutItem], *, calls: int = PROFILED_CALLS) -> list[list[LayoutItem]]:
    """Consecutive items grouped for one profiler session: at most CHUNK_ITEMS items, CHUNK_MAX_S of
    estimated GPU time and CHUNK_MAX_BYTES of operands (a bigger item gets a session of its own)."""
    out: list[list[LayoutItem]] = []
    cur: list[LayoutItem] = []
    cur_s = cur_b = 0.0
    for item in items:
        s = (PROFILE_WARMUP_CALLS + calls) * estimate_item_kernel_s(item)
        b = item.spec.operand_bytes(1.0 if item.fmt.dtype.startswith("fp8") else 2.0)
        if cur and (len(cur) >= CHUNK_ITEMS or cur_s + s > CHUNK_MAX_S or cur_b + b > CHUNK_MAX_BYTES):
            out.append(cur)
            cur, cur_s, cur_b = [], 0.0, 0.0
        cur.append(item)
        cur_s += s
        cur_b += b
    if cur:
        out.append(cur)
    return out


def _quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (as numpy's default) of a non-empty list."""
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def summarize_calls(calls: Sequence[Sequence[tuple[str, float, float]]]) -> dict[str, Any]:
    """The kernel-phase fields of one item from its profiled calls (each a list of (name, start_s,
    duration_s)), seconds: the median per-call sum of GPU activity durations (``time_s``; p20/p80 and
    all sums too), the median span first start -> last end (``span_s``, includes gaps between kernels),
    the most common kernel sequence (``kernels``: name, median duration, family, sm) and how many
    distinct sequences the calls ran (``kernel_sequences``), and the longest kernel of that sequence
    (``main_kernel``, its parse in ``main_kernel_info`` without the unknown fields)."""
    sums = [sum(d for _, _, d in c) for c in calls]
    spans = [(c[-1][1] + c[-1][2] - c[0][1]) if c else 0.0 for c in calls]
    seqs = Counter(tuple(n for n, _, _ in c) for c in calls)
    seq, _ = seqs.most_common(1)[0]
    same = [c for c in calls if tuple(n for n, _, _ in c) == seq]
    infos = [parse_kernel_name(name) for name in seq]
    kernels = [
        {
            "name": name,
            "time_s": statistics.median(c[j][2] for c in same),
            "family": info["family"],
            "sm": info["sm"],
        }
        for j, (name, info) in enumerate(zip(seq, infos, strict=True))
    ]
    j_main = max(range(len(kernels)), key=lambda j: kernels[j]["time_s"]) if kernels else None
    info = infos[j_main] if j_main is not None else {}
    return {
        "time_s": statistics.median(sums),
        "time_s_p20": _quantile(sums, 0.2),
        "time_s_p80": _quantile(sums, 0.8),
        "time_s_all": sums,
        "span_s": statistics.median(spans),
        "n_kernels": len(seq),
        "kernel_sequences": len(seqs),
        "kernels": kernels,
        "main_kernel": seq[j_main] if j_main is not None else None,
        "main_kernel_family": info.get("family"),
        "main_kernel_sm": info.get("sm"),
        "main_kernel_info": {k: v for k, v in info.items() if v not in (None, [], False)},
        "tile": info.get("tile"),
        "cluster": info.get("cluster"),
        "align": info.get("align"),
        "split_k": any(i["split_k"] for i in infos),
    }


def run_kernels(
    writer: DatasetWriter,
    items: Sequence[LayoutItem],
    *,
    budget_s: float = KERNELS_BUDGET_S,
    calls: int = PROFILED_CALLS,
    log: Log = print,
) -> dict[str, Any]:
    """Run every item under ``torch.profiler`` (CUDA activity): PROFILE_WARMUP_CALLS unprofiled calls,
    then ``calls`` profiled calls, each after zeroing a 256 MB buffer (the L2 flush, also the marker
    that splits the trace into calls). One ``timing: "kernel"`` record per item (same ``id`` as the
    time phase). Items go in sessions of up to CHUNK_ITEMS; a session whose trace does not split into
    items x calls is redone item by item. Stops starting sessions after ``budget_s``."""
    torch = require_cuda()
    from torch.profiler import ProfilerActivity, profile

    def profiler() -> Any:  # the one profiler this process starts: CUDA activity only
        return profile(activities=[ProfilerActivity.CUDA])

    torch.manual_seed(0)
    cache = torch.empty(FLUSH_BYTES // 4, dtype=torch.int, device="cuda")
    # The flush is do_bench's ``cache.zero_()`` (an ATen fill kernel). Its name marks the call
    # boundaries, so it must not be a plain memset (cuBLAS launches those too): then fill with ones.
    flush, marker = flush_marker(torch, cache, events=kernel_times_s, profiler=profiler)
    markers = {marker}
    t0 = last_write = time.perf_counter()
    errors: list[dict[str, Any]] = []
    done = 0
    truncated = False

    def session(chunk: Sequence[LayoutItem]) -> list[tuple[LayoutItem, list[Any] | None]]:
        """Profile ``chunk``; per item that ran, its ``calls`` call segments (None: the trace did not
        split into items x calls)."""
        ready: list[tuple[LayoutItem, Callable[[], Any], tuple[Any, ...]]] = []
        for item in chunk:
            try:
                fn, ops = _make_case(torch, item)
                for _ in range(PROFILE_WARMUP_CALLS):
                    fn()
            except (RuntimeError, ValueError) as exc:  # one unsupported shape must not end the sweep
                errors.append({"id": item.id, "error": str(exc)[:300]})
                log(f"kernels: {item.id} failed: {str(exc)[:200]}")
                torch.cuda.empty_cache()
                continue
            ready.append((item, fn, ops))
        fns = [fn for _, fn, _ in ready]
        got = profile_calls(
            torch, fns, calls=calls, flush=flush, marker=marker, events=kernel_times_s, profiler=profiler
        )
        wall[:] = [got.wall_start_s, got.wall_end_s]
        if got.per_fn is None:
            return [(item, None) for item, _, _ in ready]
        return [(item, per_call) for (item, _, _), per_call in zip(ready, got.per_fn, strict=True)]

    wall: list[float] = []  # wall-clock start and end of the last profiled chunk (to align with GPU clock logs)

    for chunk in _chunks(list(items), calls=calls):
        if time.perf_counter() - t0 > budget_s:
            truncated = True
            log(f"kernels: budget {budget_s:.0f} s spent after {done} records; stopping")
            break
        results = session(chunk)
        if len(results) > 1 and any(per_call is None for _, per_call in results):
            log(f"kernels: the trace of {len(results)} items did not split into calls; redoing them one by one")
            results = [r for item, _ in results for r in session([item])]
        for item, per_call in results:
            if per_call is None or any(not c for c in per_call):
                errors.append({"id": item.id, "error": "the profiled calls did not split, or had no GPU activity"})
                continue
            rec = item.fields()
            rec.update(
                timing="kernel", method="torch.profiler", calls=calls, l2_flush=True, **summarize_calls(per_call)
            )
            if len(wall) == 2:
                rec.update(wall_start_s=wall[0], wall_end_s=wall[1])  # the chunk's, not this item's alone
            rec["tflops"] = item.spec.flops / rec["time_s"] / 1e12
            writer.add(rec)
            done += 1
        torch.cuda.empty_cache()
        if time.perf_counter() - last_write > WRITE_EVERY_S:
            writer.flush()
            last_write = time.perf_counter()
            log(f"kernels: {done}/{len(items)} records, {last_write - t0:.0f} s")
    writer.flush()
    return {
        "records": done,
        "planned": len(items),
        "truncated": truncated,
        "seconds": time.perf_counter() - t0,
        "errors": errors[:50],
        "n_errors": len(errors),
        "calls": calls,
        "warmup_calls": PROFILE_WARMUP_CALLS,
        "flush_marker": sorted(markers)[0],
        "budget_s": budget_s,
    }


# ---- summary (pure Python) ----------------------------------------------------------------------


def _load(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return [r for r in data.get("records", []) if r.get("op") == "gemm"]


def summarize(folder: str | Path, *, suffix: str = "") -> str:
    """Per family/layout/format: event and kernel record counts, median TFLOP/s (event), the median
    event-minus-kernel gap (µs, items in both files), and the share of items whose longest kernel is a
    pre-Hopper (sm < 90) one; then the overall gap and the most common main kernels per layout."""
    folder = Path(folder)
    ev = _load(folder / TIME_FILE.format(suffix=suffix))
    kr = _load(folder / KERNELS_FILE.format(suffix=suffix))
    kernel_by_id = {r["id"]: r for r in kr}
    groups: dict[tuple[str, str, str], dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))

    def fmt_key(r: Mapping[str, Any]) -> str:
        return r["dtype"] if r.get("scaling") is None else f"{r['dtype']}_{r['scaling']}"

    for r in ev:
        g = groups[(r["family"], r["layout"], fmt_key(r))]
        g["event"].append(r)
        g["tflops"].append(r["tflops"])
        k = kernel_by_id.get(r["id"])
        if k:
            g["gap"].append((r["time_s"] - k["time_s"]) * 1e6)
    for r in kr:
        g = groups[(r["family"], r["layout"], fmt_key(r))]
        g["kernel"].append(r)
        sm = r.get("main_kernel_sm")
        g["old"].append(sm is not None and sm < 90)
    lines = [
        f"gemm_layouts: {len(ev)} event records, {len(kr)} kernel records in {folder}",
        f"{'family':<8} {'layout':<6} {'format':<20} {'n_ev':>5} {'n_k':>5} {'TFLOP/s':>8} {'gap_us':>7} {'sm<90':>6}",
    ]
    order = [(lay, BF16.key) for lay in LAYOUTS] + [("rc", f.key) for f in FP8_FORMATS]

    def rank(key: tuple[str, str, str]) -> tuple[int, int, str]:
        fam, lay, fk = key
        return (
            FAMILIES.index(fam) if fam in FAMILIES else len(FAMILIES),
            order.index((lay, fk)) if (lay, fk) in order else len(order),
            f"{fam} {lay} {fk}",
        )

    for (fam, lay, fk), g in sorted(groups.items(), key=lambda kv: rank(kv[0])):
        tfl = f"{statistics.median(g['tflops']):.0f}" if g["tflops"] else "-"
        gap = f"{statistics.median(g['gap']):.2f}" if g["gap"] else "-"
        old = f"{sum(g['old']) / len(g['old']):.0%}" if g["old"] else "-"
        lines.append(
            f"{fam:<8} {lay:<6} {fk:<20} {len(g['event']):>5} {len(g['kernel']):>5} {tfl:>8} {gap:>7} {old:>6}"
        )
    gaps = [g for v in groups.values() for g in v["gap"]]
    if gaps:
        lines.append(
            f"event - kernel gap over {len(gaps)} items: median {statistics.median(gaps):.2f} us, "
            f"p20 {_quantile(gaps, 0.2):.2f}, p80 {_quantile(gaps, 0.8):.2f}"
        )
    mains: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for r in kr:
        mains[(r["layout"], fmt_key(r))][f"{r.get('main_kernel_family')} sm{r.get('main_kernel_sm')}"] += 1
    if mains:
        lines.append("main kernel (family, sm) per layout and format, top 3:")
        for key in sorted(mains, key=lambda k: order.index(k) if k in order else len(order)):
            top = ", ".join(f"{name} x{n}" for name, n in mains[key].most_common(3))
            lines.append(f"  {key[0]} {key[1]}: {top}")
    return "\n".join(lines)


# ---- CLI -------------------------------------------------------------------------------------------


def _family_mix(text: str) -> dict[str, int]:
    """``llm=60,random=100``: FAMILY_MIX with those families changed (0 leaves a family out)."""
    mix = dict(FAMILY_MIX)
    for part in text.split(","):
        if not part.strip():
            continue
        try:
            name, value = part.split("=")
            mix[name.strip()] = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected family=count pairs like llm=60,random=100, got {part!r}"
            ) from None
        if name.strip() not in FAMILIES:
            raise argparse.ArgumentTypeError(f"unknown family {name.strip()!r}; valid: {', '.join(FAMILIES)}")
    return mix


#: a do_bench time setting in ms: a finite number above 0
_positive_ms = positive("a time in ms")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.harness.gemm_layouts", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "phase",
        choices=("plan", "time", "kernels", "summary"),
        help="plan: print (and with --out write) the items; time: do_bench event times; kernels: "
        "torch.profiler kernel names and times; summary: table of the datasets in --out",
    )
    p.add_argument("--out", type=Path, default=None, help="output folder (required for time, kernels, summary)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random draws and of the run order")
    p.add_argument(
        "--order-seed",
        type=int,
        default=None,
        help="seed of the run order alone (default: --seed): the same shapes in another order",
    )
    p.add_argument(
        "--rotate",
        action="store_true",
        help="start each shape's five GEMMs at another of them (shape g at its (g mod 5)-th; default: bf16 rr "
        "first): every kind runs first after another shape for a fifth of the shapes",
    )
    p.add_argument(
        "--budget-s",
        type=float,
        default=None,
        help=f"stop starting items after this many seconds "
        f"(default: time {TIME_BUDGET_S:.0f}, kernels {KERNELS_BUDGET_S:.0f})",
    )
    p.add_argument(
        "--family-mix",
        type=_family_mix,
        default=None,
        help="shapes per family, e.g. llm=60,random=100 (the others keep FAMILY_MIX)",
    )
    p.add_argument(
        "--quick", action="store_true", help=f"{QUICK_SHAPES_PER_FAMILY} small shapes per family (smoke test)"
    )
    p.add_argument(
        "--warmup-ms",
        type=_positive_ms,
        default=WARMUP_MS,
        help=f"time: do_bench's warmup, ms (default {WARMUP_MS:g}, the sweep's; do_bench's own default is 25)",
    )
    p.add_argument(
        "--rep-ms",
        type=_positive_ms,
        default=REP_MS,
        help=f"time: do_bench's rep, ms (default {REP_MS:g}, the sweep's; do_bench's own default is 100)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the plan and the estimated time; no torch, no GPU")
    p.add_argument("--suffix", default="", help="added to the output file names, e.g. _fresh")
    p.add_argument("--calls", type=int, default=PROFILED_CALLS, help="kernels: profiled calls per item")
    p.add_argument(
        "--only-ids-from",
        type=Path,
        default=None,
        help="kernels: only the items (ids) of this dataset, "
        "e.g. the time phase's file, so a cut time phase is matched",
    )
    return p


def _command(argv: Sequence[str]) -> str:
    return "python -m benchmarks.harness.gemm_layouts " + shlex.join(list(argv))


def _plan_meta(args: argparse.Namespace, mix: Mapping[str, int], dropped: Mapping[str, int]) -> dict[str, Any]:
    return {
        "seed": args.seed,
        "order_seed": args.seed if args.order_seed is None else args.order_seed,
        "rotate": args.rotate,
        "quick": args.quick,
        "family_mix": dict(mix),
        "left_out_for_cost": dict(dropped),
        "llm_m": list(LLM_M),
        "random_alignments": [list(a) for a in RANDOM_ALIGNMENTS],
        "layouts": list(LAYOUTS),
        "formats": list(FORMAT_KEYS),
        "max_shape_time_s": MAX_SHAPE_TIME_S,
    }


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if args.phase == "summary":
        if args.out is None:
            raise SystemExit("summary needs --out DIR (the folder with the datasets)")
        print(summarize(args.out, suffix=args.suffix))
        return 0
    mix = args.family_mix or dict(FAMILY_MIX)
    items, dropped = plan_items(
        seed=args.seed, family_mix=mix, quick=args.quick, order_seed=args.order_seed, rotate=args.rotate
    )
    text = plan_summary(
        items,
        dropped,
        seed=args.seed,
        order_seed=args.order_seed,
        rotate=args.rotate,
        family_mix=mix,
        time_budget_s=args.budget_s if args.budget_s is not None and args.phase == "time" else TIME_BUDGET_S,
        kernels_budget_s=args.budget_s if args.budget_s is not None and args.phase == "kernels" else KERNELS_BUDGET_S,
        warmup_ms=args.warmup_ms,
        rep_ms=args.rep_ms,
    )
    if args.phase == "plan" or args.dry_run:
        print(text)
        if args.phase == "plan" and args.out is not None and not args.dry_run:
            path = args.out / PLAN_FILE.format(suffix=args.suffix)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(
                json.dumps(
                    {
                        "meta": {"command": _command(argv), **_plan_meta(args, mix, dropped)},
                        "items": [i.fields() for i in items],
                    },
                    indent=1,
                )
                + "\n"
            )
            print(f"wrote {path}")
        return 0
    if args.out is None:
        raise SystemExit(f"{args.phase} needs --out DIR")
    require_cuda()
    args.out.mkdir(parents=True, exist_ok=True)
    meta = collect_meta(_command(argv))
    section: dict[str, Any] = {"gpu_state_before": gpu_state(), **_plan_meta(args, mix, dropped)}
    if args.phase == "time":
        import torch

        w = DatasetWriter(args.out / TIME_FILE.format(suffix=args.suffix), meta)
        w.meta["sections"] = {"gemm_layouts_time": section}
        section["accuracy_rel_error"] = _check_accuracy(torch)
        _warm_gpu(torch, 0.0 if args.quick else GPU_WARM_S)
        budget = TIME_BUDGET_S if args.budget_s is None else args.budget_s
        section.update(run_time(w, items, budget_s=budget, warmup_ms=args.warmup_ms, rep_ms=args.rep_ms, log=_log))
    else:
        if args.only_ids_from is not None:
            keep = {r.get("id") for r in _load(args.only_ids_from)}
            items = [i for i in items if i.id in keep]
            section["only_ids_from"] = args.only_ids_from.name
        import torch

        w = DatasetWriter(args.out / KERNELS_FILE.format(suffix=args.suffix), meta)
        w.meta["sections"] = {"gemm_layouts_kernels": section}
        _warm_gpu(torch, 0.0 if args.quick else GPU_WARM_S)
        section.update(
            run_kernels(
                w,
                items,
                budget_s=KERNELS_BUDGET_S if args.budget_s is None else args.budget_s,
                calls=args.calls,
                log=_log,
            )
        )
    section["gpu_state_after"] = gpu_state()
    w.flush()
    _log(f"{args.phase}: {section['records']}/{len(items)} records in {section['seconds']:.0f} s -> {w.path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
