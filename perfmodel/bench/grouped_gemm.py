"""Grouped-GEMM sweep: the MoE expert GEMMs (bf16 ``torch._grouped_mm``, fp8 e4m3 rowwise ``torch._scaled_grouped_mm``).

``python -m perfmodel.bench.grouped_gemm {plan,probe,time,kernels,summary} --out DIR [--seed S] [--budget-s B]
[--warmup-ms 25 --rep-ms 100] [--quick] [--dry-run] [--resume] [--probe-file F] [--only-ids-from F]``

What runs (``G`` groups of ``rows[g]`` tokens each, ``T = sum(rows)``, ``offs`` = the cumulative group ends, int32):

* ``op="fwd"`` (2D x 3D): ``out[T, N] = x[T, K] @ w[G, K, N]``, group ``g`` of ``x`` times ``w[g]``. The data
  gradient of an expert Linear is the same form with K and N swapped, so every model's (K, N) runs as (K, N) and
  (N, K) (``roles`` names the GEMMs a record stands for). Variants: bf16 ``a_row_b_col`` (``w`` the transpose of a
  contiguous ``[G, N, K]``: torchtitan's forward ``x @ w.transpose(-2, -1)``), bf16 ``a_row_b_row`` (``w``
  contiguous ``[G, K, N]``: the data gradient ``gO @ w`` of those weights), fp8 ``a_row_b_col`` (the only layout
  ``_scaled_grouped_mm`` takes: A row-major, B column-major).
* ``op="wgrad"`` (2D x 2D): ``out[G, N, K] = gO.T[N, T] @ x[T, K]``, the groups along the contraction (token)
  dimension: the weight gradient. Variants: bf16 ``a_col_b_row`` (``gO.T`` and ``x`` as plain views of contiguous
  ``gO[T, N]`` and ``x[T, K]``), bf16 ``a_row_b_col`` and fp8 ``a_row_b_col`` (both transposes materialized, as
  torchao's rowwise recipe feeds ``_scaled_grouped_mm``).

fp8 follows torchao's ``prototype/moe_training`` rowwise recipe: per-row float32 scales for the 2D operands (fwd:
``[T]``; wgrad: ``[G*N]`` and ``[G*K]``, one per group and row), per-(group, column) scales ``[G, N]`` for the 3D
weights, ``use_fast_accum=True``, bf16 out. Every layout and stride a record ran with is in it (``a_shape``,
``a_strides``, ... in elements).

Token padding (``padding`` in each record, ``rows_requested`` the sizes before it): fp8 items pad every group to
``max(rows, 16)`` rounded up to 16, as torchtitan's ``generate_permute_indices`` does for fp8 rowwise
(``TOKEN_GROUP_ALIGN_SIZE_M = 16``): torch's ``prepare_grouped_gemm_data`` asserts on the device that in a 2D x 2D
grouped mm with A row-major or B column-major each group but the last is a multiple of 16 bytes (the probes crashed
the process there on torch 2.11; the same source on main also asserts non-empty groups, which 2.11 accepted), and
``_scaled_grouped_mm`` refuses a total token count that is not a multiple of 16; the forward runs the same padded
tokens. bf16 ``wgrad a_row_b_col`` pads to 8 (16 bytes of bf16), min 8, for the same device check. The other bf16
variants run the group sizes as drawn (any integer, empty groups included). The ``probe`` phase checks each of these
rules on the device (accepted, refused with the error text, or crashed the process) before anything is timed.

Group sizes (``dist`` and ``dist_param`` in each record): ``balanced`` (every group ``m`` rows), ``skewed``
(``T = G*m`` tokens split by Dirichlet(alpha) proportions, alpha in SKEW_ALPHAS, rounded by largest remainder) and
``empty`` (a quarter of the groups, at least one, empty; the others share ``T`` equally). ``m`` is drawn log-uniform
in ``1 .. min(16384, MAX_TOTAL_ROWS // G)``. G runs over G_SET, up to the model's expert count (``G = E / EP``).

Families: one per model (MOE_MODELS, constants from each model's published config) and ``random`` ((K, N)
multiples of 16 log-uniform in 512..8192), so a model fitted on some families can be scored on the others. Plus
``family="fp8_neighbours"``: dense fp8 ``torch._scaled_mm`` (``x @ W.T``, tensorwise and rowwise) at aligned
neighbours of 4096 and of 50 240..50 304, two passes, ``op="gemm"`` records in their own files.

Phases (each its own process; ``perfmodel.bench/1`` datasets through ``DatasetWriter``):

* ``plan`` (pure Python): the items, counts, estimated phase times; ``--out`` writes ``grouped_gemm_plan.json``.
  Shapes (form, family, K, N, G) are ordered by a stratified seeded shuffle (every prefix holds each family in
  proportion) and cut where the estimated event-phase time reaches the budget: a uniform cut, never a family.
* ``probe``: every variant and layout on small groups (aligned, unaligned, empty), checked against float64 per
  group; ``grouped_gemm_probe.json``. A probe that kills the CUDA context exits with code 3 after recording it;
  ``--resume`` goes on after it (the wrapper loops).
* ``time``: ``triton.testing.do_bench`` (``bench()``: L2 flushed before every timed run; warmup 25 ms, rep 100 ms,
  do_bench's own defaults), in a process that never attaches a profiler. -> ``grouped_gemm_time.json``,
  ``fp8_neighbours_time.json``.
* ``kernels``: the same ids under ``torch.profiler`` (the only profiler this process starts; one session per shape),
  2 warm-up calls, 5 profiled calls each after a 256 MiB L2 flush: kernel names, each kernel's duration, their sum.
  -> ``grouped_gemm_kernels.json``, ``fp8_neighbours_kernels.json``.
* ``summary`` (pure Python): counts, TFLOP/s by G and rows per group, fp8 over bf16, the neighbour steps, probes.

torch and triton are imported only inside the functions that run on the GPU: importing this module touches neither.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import math
import os
import random
import re
import shlex
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ._device import bench, kernel_times_s, quantile, require_cuda
from .dataset import DatasetWriter, collect_meta, gpu_state

__all__ = [
    "FWD_VARIANTS",
    "G_SET",
    "MOE_MODELS",
    "WGRAD_VARIANTS",
    "GroupedGemmError",
    "GroupedItem",
    "MoEModel",
    "NeighbourItem",
    "ProbeCase",
    "apportion",
    "balanced_rows",
    "build_parser",
    "dirichlet_rows",
    "empty_rows",
    "estimate_item_kernel_s",
    "estimate_kernels_phase_s",
    "estimate_time_phase_s",
    "expected_strides",
    "main",
    "neighbour_items",
    "offsets",
    "pad_rows",
    "plan_items",
    "plan_summary",
    "probe_cases",
    "summarize",
    "validate_records",
]

Log = Callable[[str], None]


class GroupedGemmError(ValueError):
    """A bad argument to the grouped-GEMM sweep (group sizes, counts, families, files)."""


# ---- models (sources: each model's published config; the expert FFN only) -----------------------


@dataclasses.dataclass(frozen=True)
class MoEModel:
    """One MoE model's routed-expert FFN: ``hidden`` (model dim), ``inter`` (expert intermediate dim), ``experts``
    (routed experts per layer), ``top_k`` (experts per token), ``source`` (where the numbers come from)."""

    name: str
    hidden: int
    inter: int
    experts: int
    top_k: int
    source: str


MOE_MODELS: tuple[MoEModel, ...] = (
    MoEModel(
        "deepseek_v3",
        7168,
        2048,
        256,
        8,
        "DeepSeek-V3 config.json: hidden_size, moe_intermediate_size, n_routed_experts, num_experts_per_tok",
    ),
    MoEModel(
        "deepseek_v3_16b",
        2048,
        1408,
        64,
        6,
        "torchtitan deepseek_v3 '16B' flavour (DeepSeek-MoE-16B): dim, "
        "moe_inter_dim, n_routed_experts, n_activated_experts",
    ),
    MoEModel(
        "qwen3_30b_a3b",
        2048,
        768,
        128,
        8,
        "Qwen3-30B-A3B config.json: hidden_size, moe_intermediate_size, num_experts, num_experts_per_tok",
    ),
    MoEModel(
        "llama4_scout",
        5120,
        8192,
        16,
        1,
        "Llama-4-Scout-17B-16E config.json text_config: hidden_size, "
        "intermediate_size, num_local_experts, num_experts_per_tok",
    ),
    MoEModel(
        "llama4_maverick",
        5120,
        8192,
        128,
        1,
        "Llama-4-Maverick-17B-128E config.json text_config: hidden_size, "
        "intermediate_size, num_local_experts, num_experts_per_tok",
    ),
    MoEModel(
        "mixtral_8x7b",
        4096,
        14336,
        8,
        2,
        "Mixtral-8x7B-v0.1 config.json: hidden_size, intermediate_size, num_local_experts, num_experts_per_tok",
    ),
    MoEModel(
        "gpt_oss_120b",
        2880,
        2880,
        128,
        4,
        "gpt-oss-120b config.json: hidden_size, intermediate_size, num_local_experts, experts_per_token",
    ),
)
RANDOM_FAMILY = "random"
NEIGHBOUR_FAMILY = "fp8_neighbours"
FAMILIES: tuple[str, ...] = (*(m.name for m in MOE_MODELS), RANDOM_FAMILY)

# ---- the plan's constants ---------------------------------------------------------------------------

G_SET: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256)  # group counts (the brief's set)
MAX_ROWS_PER_GROUP = 16384  # the mean rows per group m is drawn up to this ...
MAX_TOTAL_ROWS = 131072  # ... and to T = G*m <= this: 8192 tokens x top-16 routed rows on one GPU, or 16384 x top-8
MIN_ROWS_PER_GROUP = 1
SKEW_ALPHAS: tuple[float, ...] = (1.0, 0.3)  # Dirichlet concentration of the skewed vectors, cycled over shapes
EMPTY_FRACTION = 0.25  # share of the groups an ``empty`` vector leaves empty (at least one, at most G - 1)
RANDOM_KN: tuple[int, int] = (512, 8192)  # random family: K and N log-uniform here, rounded to multiples of 16
RANDOM_FWD_PAIRS = 12  # random (K, N) of the fwd form ...
RANDOM_WGRAD_PAIRS = 8  # ... and of the wgrad form ...
RANDOM_G_PER_PAIR = 3  # ... each at this many G drawn from G_SET
MAX_ITEM_KERNEL_S = 0.02  # m is capped so that no item is estimated over 20 ms (sizing, see estimate_item_kernel_s)
QUICK_SHAPES_PER_FAMILY = 1  # --quick: this many shapes per family (those estimated under QUICK_MAX_KERNEL_S) ...
QUICK_MAX_KERNEL_S = 2e-3
QUICK_NEIGHBOURS = 4  # ... and this many neighbour items

FP8 = "fp8_e4m3_rowwise"
BF16 = "bf16"
# (format, layout, padding multiple or None). Padding: every group max(rows, multiple) rounded up to the multiple.
FWD_VARIANTS: tuple[tuple[str, str, int | None], ...] = (
    (BF16, "a_row_b_col", None),
    (BF16, "a_row_b_row", None),
    (FP8, "a_row_b_col", 16),
)
WGRAD_VARIANTS: tuple[tuple[str, str, int | None], ...] = (
    (BF16, "a_col_b_row", None),
    (BF16, "a_row_b_col", 8),
    (FP8, "a_row_b_col", 16),
)
PADDING_WHY: Mapping[int, str] = {
    16: "torchtitan/torchao pad fp8 rowwise token groups to max(n, 16) rounded up to 16 (TOKEN_GROUP_ALIGN_SIZE_M): "
    "the 2D x 2D wgrad needs every group but the last a multiple of 16 bytes (device assert in torch's "
    "prepare_grouped_gemm_data) and a total that is a multiple of 16 (host check); the forward runs the same tokens",
    8: "bf16 2D x 2D with A row-major / B column-major: torch asserts on the device that every group but the last is "
    "a multiple of 16 bytes (8 bf16 elements); torchtitan pads bf16 groups to max(n, 8) rounded up to 8",
}
NEIGHBOURS_4096: tuple[int, ...] = (4032, 4048, 4064, 4080, 4096, 4112, 4128)  # aligned (x16) neighbours of 4096
NEIGHBOURS_VOCAB: tuple[int, ...] = (50240, 50256, 50272, 50288, 50304)  # around GPT-2/NeoX's padded vocab 50304
NEIGHBOUR_BIG = 8192  # the two dims not varied
NEIGHBOUR_SCALINGS: tuple[str, ...] = ("tensorwise", "rowwise")
NEIGHBOUR_PASSES = 2  # pass 0 in series order, pass 1 shuffled with the seed: the same GEMMs twice

# ---- timing settings ------------------------------------------------------------------------------
WARMUP_MS = 25.0  # do_bench's own defaults (the brief asks for them)
REP_MS = 100.0
MIN_REPS = 10  # rep is raised to MIN_REPS kernel times for long kernels
TIME_BUDGET_S = 330.0  # the time phase stops starting items after this (the wrapper shrinks it to the deadline)
KERNELS_BUDGET_S = 120.0
PROFILED_CALLS = 5
PROFILE_WARMUP_CALLS = 2
FLUSH_BYTES = 256 * 2**20  # L2 flush buffer (as do_bench's), zeroed before each profiled call
GPU_WARM_S = 1.0
WRITE_EVERY_S = 10.0

# ---- estimator constants (seconds; sizing only) ------------------------------------------------------
# Rates: H200 dense bf16 measured at 788 TFLOP/s and a 4.3 TB/s copy (KINDS.md, 2026-10-28); grouped CUTLASS kernels
# are taken a little lower. Per-item wall of do_bench at 25/100 ms: 0.115 s median over 1743 dense GEMMs
# (benchmarks/data/h200_2026-12-01, seed 2086 "defaults" time file); kernel phase: 35 s for 4725 items (seed 2086).
EST_BF16_FLOPS = 650e12
EST_FP8_FLOPS = 1100e12
EST_BYTES_PER_S = 3.5e12
EST_LAUNCH_S = 8e-6  # prepare_grouped_gemm_data + the GEMM launch
EST_TILE_ROWS = 128  # a group's rows are computed in tiles of 128 (fwd) ...
EST_TILE_K = 64  # ... and a wgrad group's tokens in K tiles of 64
FLUSH_S = 85e-6  # zeroing 256 MiB at ~3 TB/s
DO_BENCH_HOST_S = 2e-3
TIME_ITEM_OVERHEAD_S = 8e-3  # operands, Python per item
TIME_SHAPE_OVERHEAD_S = 0.02  # weights of a shape (plus their bytes at EST_FILL_BYTES_PER_S)
EST_FILL_BYTES_PER_S = 0.5e12  # torch.randn + casts
TIME_STARTUP_S = 15.0
KERNELS_ITEM_OVERHEAD_S = 8e-3
KERNELS_SHAPE_OVERHEAD_S = 0.06  # one profiler session and the trace
KERNELS_STARTUP_S = 20.0

PLAN_FILE = "grouped_gemm_plan{suffix}.json"
PROBE_FILE = "grouped_gemm_probe{suffix}.json"
TIME_FILE = "grouped_gemm_time{suffix}.json"
KERNELS_FILE = "grouped_gemm_kernels{suffix}.json"
NB_TIME_FILE = "fp8_neighbours_time{suffix}.json"
NB_KERNELS_FILE = "fp8_neighbours_kernels{suffix}.json"
PROBE_CRASH_EXIT = 3  # probe: the CUDA context died; rerun with --resume

# fields every grouped / probe record carries (``dataset.REQUIRED_FIELDS`` has no entry for these ops yet)
REQUIRED_FIELDS: Mapping[str, tuple[str, ...]] = {
    "fwd": ("id", "family", "K", "N", "G", "dtype", "scaling", "layout", "rows", "a_strides", "b_strides", "time_s"),
    "wgrad": ("id", "family", "K", "N", "G", "dtype", "scaling", "layout", "rows", "a_strides", "b_strides", "time_s"),
    "gemm": ("id", "M", "K", "N", "dtype", "scaling", "layout", "family", "time_s"),
    "probe": ("name", "form", "fmt", "layout", "rows", "status"),
}
SCHEMA_TAG = "perfmodel.bench/1"  # what DatasetWriter writes


# ---- group-size vectors --------------------------------------------------------------------------


def _check_int(name: str, value: Any, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise GroupedGemmError(f"{name} must be an int >= {lo}, got {value!r}")
    return value


def apportion(weights: Sequence[float], total: int) -> list[int]:
    """``total`` split in proportion to ``weights`` (non-negative, not all zero) into integers summing to ``total``:
    floors of the exact shares, then one more to the largest remainders (ties: the lower index). E.g.
    ``apportion([1, 1, 2], 10)`` -> shares 2.5, 2.5, 5 -> ``[3, 2, 5]``."""
    _check_int("total", total, 0)
    w = [float(x) for x in weights]
    if not w or any(not math.isfinite(x) or x < 0 for x in w) or sum(w) <= 0:
        raise GroupedGemmError(f"weights must be non-negative finite numbers, not all zero, got {list(weights)!r}")
    s = sum(w)
    exact = [x / s * total for x in w]
    out = [math.floor(e) for e in exact]
    rest = total - sum(out)
    order = sorted(range(len(w)), key=lambda i: (-(exact[i] - out[i]), i))
    for i in order[:rest]:
        out[i] += 1
    return out


def balanced_rows(G: int, m: int) -> list[int]:
    """``G`` groups of ``m`` rows each."""
    _check_int("G", G, 1)
    _check_int("m", m, 0)
    return [m] * G


def dirichlet_rows(G: int, m: int, rng: random.Random, alpha: float) -> list[int]:
    """``T = G*m`` rows split by proportions drawn from a symmetric Dirichlet(``alpha``) (normalised
    ``rng.gammavariate(alpha, 1)`` draws), apportioned to integers (:func:`apportion`). Small ``alpha`` skews more;
    the largest group holds about H_G / G of the tokens at alpha = 1 (H_G the harmonic number)."""
    _check_int("G", G, 1)
    _check_int("m", m, 0)
    if not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and alpha > 0):
        raise GroupedGemmError(f"alpha must be a positive number, got {alpha!r}")
    draws = [rng.gammavariate(alpha, 1.0) for _ in range(G)]
    if sum(draws) <= 0:  # pragma: no cover - gammavariate underflow at tiny alpha
        draws = [1.0] * G
    return apportion(draws, G * m)


def empty_rows(G: int, total: int, empty: Iterable[int]) -> list[int]:
    """``G`` groups, those at the indices ``empty`` holding 0 rows, the others sharing ``total`` equally (the first
    ones one more where it does not divide). E.g. ``empty_rows(4, 10, {1, 2})`` -> ``[5, 0, 0, 5]``."""
    _check_int("G", G, 1)
    _check_int("total", total, 0)
    gone = set(empty)
    if any(not isinstance(i, int) or not 0 <= i < G for i in gone):
        raise GroupedGemmError(f"empty group indices must be in 0..{G - 1}, got {sorted(gone)!r}")
    if len(gone) >= G:
        raise GroupedGemmError(f"at least one of the {G} groups must be non-empty, got {len(gone)} empty")
    keep = [i for i in range(G) if i not in gone]
    share = apportion([1.0] * len(keep), total)
    out = [0] * G
    for i, r in zip(keep, share, strict=True):
        out[i] = r
    return out


def pick_empty(G: int, rng: random.Random, fraction: float = EMPTY_FRACTION) -> list[int]:
    """The indices an ``empty`` vector leaves empty: ``round(fraction * G)`` of them, at least 1, at most ``G - 1``,
    drawn without replacement (sorted)."""
    _check_int("G", G, 2)
    n = min(G - 1, max(1, round(fraction * G)))
    return sorted(rng.sample(range(G), n))


def pad_rows(rows: Sequence[int], multiple: int) -> list[int]:
    """Each group padded to ``max(rows, multiple)`` rounded up to ``multiple`` (torchtitan's
    ``generate_permute_indices``: empty groups get ``multiple`` rows). E.g. ``pad_rows([0, 5, 16, 17], 16)`` ->
    ``[16, 16, 16, 32]``."""
    _check_int("multiple", multiple, 1)
    out = []
    for r in rows:
        _check_int("rows[i]", r, 0)
        r = max(r, multiple)
        out.append(-(-r // multiple) * multiple)
    return out


def offsets(rows: Sequence[int]) -> list[int]:
    """The ``offs`` of ``torch._grouped_mm``: cumulative group ends. E.g. ``offsets([3, 0, 5])`` -> ``[3, 3, 8]``."""
    out, s = [], 0
    for r in rows:
        _check_int("rows[i]", r, 0)
        s += r
        out.append(s)
    return out


# ---- layouts -------------------------------------------------------------------------------------


def _round_up(x: int, multiple: int) -> int:
    return -(-x // multiple) * multiple


def expected_strides(form: str, layout: str, *, T: int, K: int, N: int, G: int) -> dict[str, list[int]]:
    """Shapes and strides (elements) of A, B and the output for a ``form``/``layout`` item (what torch should show):

    * fwd: A ``[T, K]`` (row: ``(K, 1)``; col: ``(1, T)``), B ``[G, K, N]`` (row: ``(K*N, N, 1)``; col: the transpose
      of a contiguous ``[G, N, K]``: ``(K*N, 1, K)``), out ``[T, N]`` with its row stride N rounded up to 8 (torch pads
      the output's leading dim to 16 bytes).
    * wgrad: A ``[N, T]`` (row ``(T, 1)``; col ``(1, N)``), B ``[T, K]`` (row ``(K, 1)``; col ``(1, T)``), out
      ``[G, N, K]`` with K rounded up to 8 in its strides.
    """
    a_major, b_major = _parse_layout(layout)
    if form == "fwd":
        a = ([T, K], [K, 1] if a_major == "row" else [1, T])
        b = ([G, K, N], [K * N, N, 1] if b_major == "row" else [K * N, 1, K])
        n8 = _round_up(N, 8)
        out = ([T, N], [n8, 1])
    elif form == "wgrad":
        a = ([N, T], [T, 1] if a_major == "row" else [1, N])
        b = ([T, K], [K, 1] if b_major == "row" else [1, T])
        k8 = _round_up(K, 8)
        out = ([G, N, K], [N * k8, k8, 1])
    else:
        raise GroupedGemmError(f"form must be 'fwd' or 'wgrad', got {form!r}")
    return {
        "a_shape": a[0],
        "a_strides": a[1],
        "b_shape": b[0],
        "b_strides": b[1],
        "out_shape": out[0],
        "out_strides": out[1],
    }


_LAYOUT = re.compile(r"^a_(row|col)_b_(row|col)$")


def _parse_layout(layout: str) -> tuple[str, str]:
    m = _LAYOUT.match(layout) if isinstance(layout, str) else None
    if not m:
        raise GroupedGemmError(f"layout must be a_{{row,col}}_b_{{row,col}}, e.g. 'a_row_b_col', got {layout!r}")
    return m[1], m[2]


# ---- plan ----------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class GroupedItem:
    """One grouped GEMM to time: ``form`` (fwd | wgrad), ``fmt`` (bf16 | fp8_e4m3_rowwise), ``layout``, the problem
    (``K``, ``N``, ``G``) and its group sizes ``rows`` (after ``padding``; ``rows_requested`` before it).
    ``vector`` names the group-size vector (``dist``, ``m``, ``dist_param``), ``group`` the shape's index in run
    order (the items of a shape share its weights and run together)."""

    form: str
    family: str
    K: int
    N: int
    G: int
    fmt: str
    layout: str
    dist: str
    m: int
    dist_param: tuple[tuple[str, Any], ...]
    rows_requested: tuple[int, ...]
    padding: int | None
    roles: tuple[str, ...]
    group: int
    vector: int

    @property
    def rows(self) -> tuple[int, ...]:
        """The group sizes that run (``rows_requested`` padded where ``padding`` is set)."""
        if self.padding is None:
            return self.rows_requested
        return tuple(pad_rows(self.rows_requested, self.padding))

    @property
    def T(self) -> int:
        return sum(self.rows)

    @property
    def shape_id(self) -> str:
        """``"{form}_{family}_{K}x{N}_G{G}"``: the items sharing weights."""
        return f"{self.form}_{self.family}_{self.K}x{self.N}_G{self.G}"

    @property
    def vector_id(self) -> str:
        """``"{dist}{param}_m{m}_v{vector}"``, e.g. ``"skewed-a0.3_m300_v1"``: the same for every format of a vector."""
        tag = self.dist
        if self.dist == "skewed":
            tag += f"-a{dict(self.dist_param)['alpha']:g}"
        return f"{tag}_m{self.m}_v{self.vector}"

    @property
    def id(self) -> str:
        return f"{self.shape_id}_{self.vector_id}_{self.fmt}_{self.layout}"

    @property
    def flops(self) -> int:
        """2 T K N for the rows that run (the padded ones for padded items)."""
        return 2 * self.T * self.K * self.N

    @property
    def flops_requested(self) -> int:
        return 2 * sum(self.rows_requested) * self.K * self.N

    @property
    def bytes_per_element(self) -> int:
        return 1 if self.fmt == FP8 else 2

    def min_bytes(self) -> int:
        """Each operand read once and the bf16 output written once, bytes (fp8 scales left out)."""
        b = self.bytes_per_element
        if self.form == "fwd":
            return b * (self.T * self.K + self.G * self.K * self.N) + 2 * self.T * self.N
        return b * self.T * (self.N + self.K) + 2 * self.G * self.N * self.K

    def weight_bytes(self) -> int:
        """Bytes of the fwd form's 3D weights (shared by the items of a shape; 0 for wgrad)."""
        return self.bytes_per_element * self.G * self.K * self.N if self.form == "fwd" else 0

    def probe_conditions(self) -> set[str]:
        """The probe conditions this item depends on (see :func:`probe_cases`): ``pad8``/``pad16`` for padded items,
        else ``pad16`` plus ``empty`` (a group of 0 rows) and ``unaligned`` (a group not a multiple of 16)."""
        if self.padding is not None:
            return {f"pad{self.padding}"}
        out = {"pad16"}
        if any(r == 0 for r in self.rows):
            out.add("empty")
        if any(r % 16 for r in self.rows):
            out.add("unaligned")
        return out

    def fields(self) -> dict[str, Any]:
        """The record fields that describe the item (no measurement); strides are the expected ones."""
        rows = list(self.rows)
        rec: dict[str, Any] = {
            "op": self.form,
            "id": self.id,
            "shape_id": self.shape_id,
            "family": self.family,
            "roles": list(self.roles),
            "K": self.K,
            "N": self.N,
            "G": self.G,
            "dtype": "fp8_e4m3" if self.fmt == FP8 else "bf16",
            "scaling": "rowwise" if self.fmt == FP8 else None,
            "torch_op": "_scaled_grouped_mm" if self.fmt == FP8 else "_grouped_mm",
            "use_fast_accum": True if self.fmt == FP8 else None,
            "out_dtype": "bf16",
            "layout": self.layout,
            "dist": self.dist,
            "dist_param": dict(self.dist_param),
            "rows_mean_requested": self.m,
            "rows": rows,
            "total_rows": sum(rows),
            "n_empty": sum(1 for r in rows if r == 0),
            "max_rows": max(rows),
            "min_rows": min(rows),
            "padding": None
            if self.padding is None
            else {"multiple": self.padding, "min": self.padding, "why": PADDING_WHY[self.padding]},
            "flops": self.flops,
            "flops_requested": self.flops_requested,
            "min_bytes": self.min_bytes(),
            "group": self.group,
            "vector": self.vector_id,
        }
        if self.padding is not None:
            rec["rows_requested"] = list(self.rows_requested)
            rec["total_rows_requested"] = sum(self.rows_requested)
        if self.family != RANDOM_FAMILY:
            model = _MODEL_BY_NAME[self.family]
            rec.update(num_experts=model.experts, top_k=model.top_k)
        rec.update(expected_strides(self.form, self.layout, T=self.T, K=self.K, N=self.N, G=self.G))
        return rec


_MODEL_BY_NAME: Mapping[str, MoEModel] = {m.name: m for m in MOE_MODELS}


@dataclasses.dataclass(frozen=True, kw_only=True)
class NeighbourItem:
    """A dense fp8 ``torch._scaled_mm(x, W.t())``: ``x [M, K]`` row-major, ``W [N, K]`` contiguous (layout ``rc``),
    ``scaling`` tensorwise or rowwise, ``series`` the dim varied (``K``, ``N``, ``M`` around 4096; ``N_vocab``),
    ``pass_`` 0 or 1."""

    M: int
    K: int
    N: int
    scaling: str
    series: str
    pass_: int

    @property
    def id(self) -> str:
        return f"nb_{self.series}_{self.M}x{self.K}x{self.N}_{self.scaling}_p{self.pass_}"

    @property
    def flops(self) -> int:
        return 2 * self.M * self.K * self.N

    def kernel_s(self) -> float:
        """Sizing estimate, seconds."""
        by = self.M * self.K + self.K * self.N + 2 * self.M * self.N
        return max(self.flops / 1300e12, by / EST_BYTES_PER_S) + 5e-6

    def fields(self) -> dict[str, Any]:
        return {
            "op": "gemm",
            "id": self.id,
            "shape_id": f"{self.M}x{self.K}x{self.N}",
            "M": self.M,
            "K": self.K,
            "N": self.N,
            "dtype": "fp8_e4m3",
            "scaling": self.scaling,
            "layout": "rc",
            "out_dtype": "bf16",
            "use_fast_accum": False,
            "family": NEIGHBOUR_FAMILY,
            "series": self.series,
            "pass": self.pass_,
            "torch_op": "_scaled_mm",
            "a_shape": [self.M, self.K],
            "a_strides": [self.K, 1],
            "b_shape": [self.K, self.N],
            "b_strides": [1, self.K],
        }


def neighbour_items(seed: int = 0, *, quick: bool = False) -> list[NeighbourItem]:
    """The fp8 neighbour GEMMs: M = N = 8192 with K in NEIGHBOURS_4096; M = K = 8192 with N in it; K = N = 8192 with
    M in it; M = K = 8192 with N in NEIGHBOURS_VOCAB; each tensorwise and rowwise; pass 0 in that order, pass 1 the
    same GEMMs shuffled with ``seed``. ``quick``: the first QUICK_NEIGHBOURS of pass 0."""
    base: list[tuple[str, int, int, int]] = []
    big = NEIGHBOUR_BIG
    base += [("K", big, k, big) for k in NEIGHBOURS_4096]
    base += [("N", big, big, n) for n in NEIGHBOURS_4096]
    base += [("M", m, big, big) for m in NEIGHBOURS_4096]
    base += [("N_vocab", big, big, n) for n in NEIGHBOURS_VOCAB]
    first = [
        NeighbourItem(M=M, K=K, N=N, scaling=s, series=ser, pass_=0)
        for ser, M, K, N in base
        for s in NEIGHBOUR_SCALINGS
    ]
    if quick:
        return first[:QUICK_NEIGHBOURS]
    out = list(first)
    for p in range(1, NEIGHBOUR_PASSES):
        again = [dataclasses.replace(i, pass_=p) for i in first]
        random.Random(f"neighbours:{seed}:{p}").shuffle(again)
        out += again
    return out


def estimate_item_kernel_s(item: GroupedItem) -> float:
    """Rough kernel time of one call, seconds (sizing only): the larger of FLOP time (rows rounded up per group to
    EST_TILE_ROWS in fwd, tokens per group to EST_TILE_K in wgrad) and byte time, plus EST_LAUNCH_S."""
    peak = EST_FP8_FLOPS if item.fmt == FP8 else EST_BF16_FLOPS
    if item.form == "fwd":
        eff = sum(_round_up(r, EST_TILE_ROWS) for r in item.rows if r)
    else:
        eff = sum(_round_up(r, EST_TILE_K) for r in item.rows if r)
    flop_s = 2 * eff * item.K * item.N / peak
    return max(flop_s, item.min_bytes() / EST_BYTES_PER_S) + EST_LAUNCH_S


def _bench_budget_ms(kernel_s: float, warmup_ms: float, rep_ms: float) -> tuple[float, float]:
    """do_bench (warmup, rep), ms: at least one kernel of warm-up and MIN_REPS timed runs."""
    t = kernel_s * 1e3
    return max(warmup_ms, t), max(rep_ms, MIN_REPS * t)


def _do_bench_wall_s(kernel_s: float, warmup_ms: float, rep_ms: float) -> float:
    """Wall time of one do_bench call: 5 estimate runs, the warm-up (no flush) and the timed runs (each after the
    L2 flush), seconds."""
    warm, rep = _bench_budget_ms(kernel_s, warmup_ms, rep_ms)
    per = kernel_s + FLUSH_S
    n_rep = max(1, int(rep * 1e-3 / per))
    n_warm = max(1, int(warm * 1e-3 / per))
    return DO_BENCH_HOST_S + (5 + n_rep) * per + n_warm * kernel_s


def _time_item_s(k: float, warmup_ms: float, rep_ms: float) -> float:
    return TIME_ITEM_OVERHEAD_S + _do_bench_wall_s(k, warmup_ms, rep_ms)


def _shape_overhead_s(items: Sequence[GroupedItem]) -> float:
    weights = sum({(i.fmt, i.layout): i.weight_bytes() for i in items}.values())
    return TIME_SHAPE_OVERHEAD_S + weights / EST_FILL_BYTES_PER_S


def estimate_time_phase_s(
    items: Sequence[GroupedItem],
    neighbours: Sequence[NeighbourItem] = (),
    *,
    warmup_ms: float = WARMUP_MS,
    rep_ms: float = REP_MS,
) -> float:
    """Estimated wall time of the ``time`` phase, seconds: startup, every do_bench call, the weights of each shape."""
    total = TIME_STARTUP_S + GPU_WARM_S
    total += sum(_time_item_s(n.kernel_s(), warmup_ms, rep_ms) for n in neighbours)
    for shape in _by_shape(items).values():
        total += _shape_overhead_s(shape) + sum(
            _time_item_s(estimate_item_kernel_s(i), warmup_ms, rep_ms) for i in shape
        )
    return total


def estimate_kernels_phase_s(
    items: Sequence[GroupedItem], neighbours: Sequence[NeighbourItem] = (), *, calls: int = PROFILED_CALLS
) -> float:
    """Estimated wall time of the ``kernels`` phase, seconds."""
    n = PROFILE_WARMUP_CALLS + calls
    total = KERNELS_STARTUP_S + KERNELS_SHAPE_OVERHEAD_S * (len(neighbours) > 0)
    total += sum(KERNELS_ITEM_OVERHEAD_S + n * (x.kernel_s() + FLUSH_S) for x in neighbours)
    for shape in _by_shape(items).values():
        total += KERNELS_SHAPE_OVERHEAD_S + _shape_overhead_s(shape)
        total += sum(KERNELS_ITEM_OVERHEAD_S + n * (estimate_item_kernel_s(i) + FLUSH_S) for i in shape)
    return total


def _by_shape(items: Iterable[GroupedItem]) -> dict[int, list[GroupedItem]]:
    out: dict[int, list[GroupedItem]] = {}
    for i in items:
        out.setdefault(i.group, []).append(i)
    return out


def _log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    if hi <= lo:
        return lo
    return max(lo, min(hi, round(math.exp(rng.uniform(math.log(lo), math.log(hi))))))


@dataclasses.dataclass(frozen=True)
class _Shape:
    form: str
    family: str
    K: int
    N: int
    G: int
    roles: tuple[str, ...]


def _model_shapes(model: MoEModel) -> list[_Shape]:
    """fwd (K, N): (h, 2i) w13 fwd, (2i, h) w13 dgrad, (h, i) w1/w3 fwd and w2 dgrad, (i, h) w2 fwd and w1/w3 dgrad;
    wgrad (K, N) of out [G, N, K]: (h, 2i) w13, (h, i) w1/w3, (i, h) w2 (weights [G, out, in]); equal (K, N) merged."""
    h, i = model.hidden, model.inter
    fwd: dict[tuple[int, int], list[str]] = {}
    for kn, roles in (
        ((h, 2 * i), ["w13_fwd"]),
        ((2 * i, h), ["w13_dgrad"]),
        ((h, i), ["w1_fwd", "w3_fwd", "w2_dgrad"]),
        ((i, h), ["w2_fwd", "w1_dgrad", "w3_dgrad"]),
    ):
        fwd.setdefault(kn, []).extend(r for r in roles if r not in fwd.get(kn, []))
    wgrad: dict[tuple[int, int], list[str]] = {}
    for kn, roles in (((h, 2 * i), ["w13_wgrad"]), ((h, i), ["w1_wgrad", "w3_wgrad"]), ((i, h), ["w2_wgrad"])):
        wgrad.setdefault(kn, []).extend(r for r in roles if r not in wgrad.get(kn, []))
    gs = [g for g in G_SET if g <= model.experts]
    out = []
    for form, table in (("fwd", fwd), ("wgrad", wgrad)):
        for (K, N), roles in table.items():
            out += [_Shape(form, model.name, K, N, g, tuple(roles)) for g in gs]
    return out


def _random_shapes(seed: int) -> list[_Shape]:
    rng = random.Random(f"random_kn:{seed}")
    out = []
    for form, n in (("fwd", RANDOM_FWD_PAIRS), ("wgrad", RANDOM_WGRAD_PAIRS)):
        for _ in range(n):
            K = _round_up(_log_uniform(rng, *RANDOM_KN), 16)
            N = _round_up(_log_uniform(rng, *RANDOM_KN), 16)
            for g in sorted(rng.sample(G_SET, RANDOM_G_PER_PAIR)):
                out.append(_Shape(form, RANDOM_FAMILY, K, N, g, ()))
    # distinct (form, K, N, G): a repeated draw is kept once
    seen: set[tuple[str, int, int, int]] = set()
    uniq = []
    for s in out:
        key = (s.form, s.K, s.N, s.G)
        if key not in seen:
            seen.add(key)
            uniq.append(s)
    return uniq


def _max_m(shape: _Shape) -> int:
    """Largest mean rows per group for the shape: MAX_ROWS_PER_GROUP, MAX_TOTAL_ROWS / G, and bf16 FLOP time at
    most MAX_ITEM_KERNEL_S."""
    by_time = int(MAX_ITEM_KERNEL_S * EST_BF16_FLOPS / (2 * shape.G * shape.K * shape.N))
    return max(MIN_ROWS_PER_GROUP, min(MAX_ROWS_PER_GROUP, MAX_TOTAL_ROWS // shape.G, by_time))


def _vectors(
    shape: _Shape, seed: int, shape_index: int
) -> list[tuple[str, int, tuple[tuple[str, Any], ...], list[int]]]:
    """The group-size vectors of a shape: (dist, m, dist_param, rows). G >= 2: balanced, skewed (alpha SKEW_ALPHAS
    cycled by the shape's index in its family), empty; G = 1: two balanced at distinct m."""
    rng = random.Random(f"vectors:{seed}:{shape.form}:{shape.family}:{shape.K}x{shape.N}:G{shape.G}")
    hi = _max_m(shape)
    out: list[tuple[str, int, tuple[tuple[str, Any], ...], list[int]]] = []
    if shape.G == 1:
        ms: list[int] = []
        for _ in range(100):
            m = _log_uniform(rng, MIN_ROWS_PER_GROUP, hi)
            if m not in ms:
                ms.append(m)
            if len(ms) == 2:
                break
        return [("balanced", m, (), balanced_rows(1, m)) for m in ms]
    m = _log_uniform(rng, MIN_ROWS_PER_GROUP, hi)
    out.append(("balanced", m, (), balanced_rows(shape.G, m)))
    alpha = SKEW_ALPHAS[shape_index % len(SKEW_ALPHAS)]
    m = _log_uniform(rng, MIN_ROWS_PER_GROUP, hi)
    param: tuple[tuple[str, Any], ...] = (("kind", "dirichlet"), ("alpha", alpha), ("seed", f"vectors:{seed}"))
    out.append(("skewed", m, param, dirichlet_rows(shape.G, m, rng, alpha)))
    m = _log_uniform(rng, MIN_ROWS_PER_GROUP, hi)
    gone = pick_empty(shape.G, rng)
    out.append(
        (
            "empty",
            m,
            (("empty_groups", tuple(gone)), ("fraction", EMPTY_FRACTION)),
            empty_rows(shape.G, shape.G * m, gone),
        )
    )
    return out


def _shape_items(shape: _Shape, vectors: Sequence[Any], group: int) -> list[GroupedItem]:
    variants = FWD_VARIANTS if shape.form == "fwd" else WGRAD_VARIANTS
    items = []
    for v, (dist, m, param, rows) in enumerate(vectors):
        for fmt, layout, padding in variants:
            items.append(
                GroupedItem(
                    form=shape.form,
                    family=shape.family,
                    K=shape.K,
                    N=shape.N,
                    G=shape.G,
                    fmt=fmt,
                    layout=layout,
                    dist=dist,
                    m=m,
                    dist_param=tuple(param),
                    rows_requested=tuple(rows),
                    padding=padding,
                    roles=shape.roles,
                    group=group,
                    vector=v,
                )
            )
    return items


def _stratified(shapes_by_family: Mapping[str, list[Any]], rng: random.Random) -> list[Any]:
    """All shapes in one order where every prefix holds each family in proportion to its size: each family's list
    shuffled, its j-th shape keyed (j + u) / n (u uniform per family), then sorted by key."""
    keyed = []
    for fam in sorted(shapes_by_family):
        lst = list(shapes_by_family[fam])
        rng.shuffle(lst)
        u = rng.random()
        keyed += [((j + u) / len(lst), fam, j, s) for j, s in enumerate(lst)]
    keyed.sort(key=lambda t: (t[0], t[1], t[2]))
    return [t[3] for t in keyed]


@dataclasses.dataclass
class PlanInfo:
    """What :func:`plan_items` kept and cut: shapes per family before and after the cut, the budget."""

    candidates: dict[str, int]
    kept: dict[str, int]
    budget_s: float | None
    estimated_s: float


def plan_items(
    *,
    seed: int = 0,
    budget_s: float | None = TIME_BUDGET_S,
    warmup_ms: float = WARMUP_MS,
    rep_ms: float = REP_MS,
    quick: bool = False,
    families: Sequence[str] | None = None,
) -> tuple[list[GroupedItem], list[NeighbourItem], PlanInfo]:
    """The grouped items in run order, the neighbour items (run first), and what was cut.

    Shapes (form, family, K, N, G) of every family are put in a stratified seeded order (:func:`_stratified`), then
    taken while the estimated time phase (:func:`estimate_time_phase_s`, neighbours included) stays within
    ``budget_s`` (None: no cut): the cut drops the same share of every family, never a family. ``quick``:
    QUICK_SHAPES_PER_FAMILY cheap shapes per family and QUICK_NEIGHBOURS neighbours, no budget cut."""
    _check_int("seed", seed, -(2**63))
    if budget_s is not None and not (isinstance(budget_s, (int, float)) and math.isfinite(budget_s) and budget_s > 0):
        raise GroupedGemmError(f"budget_s must be a positive number of seconds or None, got {budget_s!r}")
    fams = list(FAMILIES if families is None else families)
    unknown = [f for f in fams if f not in FAMILIES]
    if unknown or not fams:
        raise GroupedGemmError(f"unknown families {unknown!r}; valid: {', '.join(FAMILIES)}")
    by_family: dict[str, list[tuple[_Shape, int]]] = {}
    for model in MOE_MODELS:
        if model.name in fams:
            by_family[model.name] = [(s, j) for j, s in enumerate(_model_shapes(model))]
    if RANDOM_FAMILY in fams:
        by_family[RANDOM_FAMILY] = [(s, j) for j, s in enumerate(_random_shapes(seed))]
    order = _stratified(by_family, random.Random(f"order:{seed}"))
    neighbours = neighbour_items(seed, quick=quick)
    candidates = {f: len(v) for f, v in by_family.items()}
    kept: Counter[str] = Counter()
    items: list[GroupedItem] = []
    est = estimate_time_phase_s([], neighbours, warmup_ms=warmup_ms, rep_ms=rep_ms)
    ids: set[str] = set()
    for shape, j in order:
        if quick and kept[shape.family] >= QUICK_SHAPES_PER_FAMILY:
            continue
        new = _shape_items(shape, _vectors(shape, seed, j), sum(kept.values()))
        if quick and any(estimate_item_kernel_s(i) > QUICK_MAX_KERNEL_S for i in new):
            continue
        cost = _shape_overhead_s(new) + sum(_time_item_s(estimate_item_kernel_s(i), warmup_ms, rep_ms) for i in new)
        if not quick and budget_s is not None and est + cost > budget_s:
            break  # a prefix of the stratified order: the same share of every family
        dup = [i.id for i in new if i.id in ids]
        if dup:  # pragma: no cover - ids carry form, family, K, N, G, vector index, format and layout
            raise GroupedGemmError(f"duplicate item ids in the plan: {dup[:3]}")
        ids.update(i.id for i in new)
        items += new
        est += cost
        kept[shape.family] += 1
    info = PlanInfo(candidates=candidates, kept=dict(kept), budget_s=None if quick else budget_s, estimated_s=est)
    return items, neighbours, info


def _fmt_counter(counter: Mapping[Any, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(counter.items(), key=lambda kv: str(kv[0])))


def plan_summary(
    items: Sequence[GroupedItem],
    neighbours: Sequence[NeighbourItem],
    info: PlanInfo,
    *,
    seed: int,
    warmup_ms: float = WARMUP_MS,
    rep_ms: float = REP_MS,
    kernels_budget_s: float = KERNELS_BUDGET_S,
) -> str:
    """The plan as text: constants, shapes kept per family, items per form/format/layout, estimated phase times."""
    lines = [
        f"grouped_gemm plan, seed {seed}",
        f"  G_SET {list(G_SET)} (up to each model's experts); m log-uniform {MIN_ROWS_PER_GROUP}..{MAX_ROWS_PER_GROUP}"
        f" rows per group, T <= {MAX_TOTAL_ROWS}, items <= {MAX_ITEM_KERNEL_S * 1e3:.0f} ms (estimated)",
        f"  vectors: balanced, skewed (Dirichlet alpha {', '.join(f'{a:g}' for a in SKEW_ALPHAS)}), empty "
        f"({EMPTY_FRACTION:.0%} of groups, >= 1); G=1: two balanced",
        "  fwd: " + ", ".join(f"{f} {lay}" + (f" pad{p}" if p else "") for f, lay, p in FWD_VARIANTS),
        "  wgrad: " + ", ".join(f"{f} {lay}" + (f" pad{p}" if p else "") for f, lay, p in WGRAD_VARIANTS),
        f"  do_bench warmup {warmup_ms:g} ms, rep {rep_ms:g} ms (raised to {MIN_REPS} kernels), L2 flushed",
        "shapes kept / candidates per family: "
        + ", ".join(f"{f} {info.kept.get(f, 0)}/{n}" for f, n in sorted(info.candidates.items())),
        f"items: {len(items)} grouped + {len(neighbours)} fp8 neighbours",
    ]
    by = Counter((i.form, i.fmt, i.layout) for i in items)
    lines += [f"  {form:<5} {fmt:<17} {lay:<12} {n:>5}" for (form, fmt, lay), n in sorted(by.items())]
    lines.append(f"  vectors by dist: {_fmt_counter(Counter(i.dist for i in items if i.fmt == BF16))} (bf16 items)")
    lines.append(f"  G: {_fmt_counter(Counter(i.G for i in items))}")
    t = estimate_time_phase_s(items, neighbours, warmup_ms=warmup_ms, rep_ms=rep_ms)
    k = estimate_kernels_phase_s(items, neighbours)
    budget = "no cut" if info.budget_s is None else f"budget {info.budget_s:.0f} s"
    lines.append(
        f"estimated: time phase {t:.0f} s ({budget}), kernels phase {k:.0f} s (budget {kernels_budget_s:.0f} s)"
    )
    return "\n".join(lines)


# ---- probes ----------------------------------------------------------------------------------------

PROBE_K, PROBE_N, PROBE_G = 256, 384, 4
PROBE_ROWS: Mapping[str, tuple[int, ...]] = {
    "pad16": (32, 48, 16, 64),  # every group a non-empty multiple of 16
    "pad8": (8, 24, 40, 8),  # multiples of 8, not all of 16
    "unaligned": (5, 37, 22, 16),  # not multiples of 8; the total (80) a multiple of 16
    "empty": (32, 0, 48, 16),  # one empty group, the others multiples of 16
    "total_unaligned": (5, 37, 22, 17),  # total 81: not a multiple of 16
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class ProbeCase:
    """One acceptance check: ``form``/``fmt``/``layout`` on ``rows`` (a PROBE_ROWS pattern, ``condition``);
    ``expect`` what torch's source (GroupedMMUtils.h, GroupedBlas.cpp, GroupMMCommon.cuh) says should happen:
    ``ok``, ``refused`` (a host-side check) or ``crash`` (a device-side assert: the process's CUDA context dies)."""

    form: str
    fmt: str
    layout: str
    condition: str
    expect: str

    @property
    def name(self) -> str:
        return f"{self.form}_{self.fmt}_{self.layout}_{self.condition}"

    @property
    def rows(self) -> tuple[int, ...]:
        return PROBE_ROWS[self.condition]


def _expect(form: str, fmt: str, layout: str, condition: str) -> str:
    a, b = _parse_layout(layout)
    rows = PROBE_ROWS[condition]
    T = sum(rows)
    if fmt == FP8:
        if a != "row" or b != "col":
            return "refused"  # "Expected mat1 to not be transposed" / "Expected mat2 to be transposed"
        if form == "wgrad" and T % 16:
            return "refused"  # trailing dim of mat_a (T) must be divisible by 16
    elif form == "wgrad" and ((a == "row" and T % 8) or (b == "col" and T % 8)):
        return "refused"  # "strides should be multiple of 16 bytes"
    if form == "wgrad" and not (a == "col" and b == "row"):
        el = 16 if fmt == FP8 else 8
        if any(r == 0 for r in rows) or any(r % el for r in rows[:-1]):
            return "crash"  # device assert: groups > 0 and multiples of 16 bytes
    if form == "fwd" and a == "col" and any(r % (16 if fmt == FP8 else 8) for r in rows[:-1]):
        return "crash"
    return "ok"


def probe_cases() -> list[ProbeCase]:
    """Every probe, safest first (a crash ends the process; ``--resume`` goes on after it): the swept variants and
    the other layouts on ``pad16`` rows, ``pad8`` for the pad-8 variant, then unaligned / empty / total_unaligned
    group sizes for the swept variants, those expected to crash last."""
    swept = [("fwd", f, lay) for f, lay, _ in FWD_VARIANTS] + [("wgrad", f, lay) for f, lay, _ in WGRAD_VARIANTS]
    cases = []
    for form, fmt, lay in swept:
        cases.append((form, fmt, lay, "pad16"))
    for form, fmt, lay, p in [("fwd", *v) for v in FWD_VARIANTS] + [("wgrad", *v) for v in WGRAD_VARIANTS]:
        if p == 8:
            cases.append((form, fmt, lay, "pad8"))
    for form in ("fwd", "wgrad"):
        for fmt in (BF16, FP8):
            for lay in ("a_row_b_row", "a_row_b_col", "a_col_b_row", "a_col_b_col"):
                if (form, fmt, lay) not in swept:
                    cases.append((form, fmt, lay, "pad16"))
    for form, fmt, lay in swept:
        cases += [(form, fmt, lay, c) for c in ("unaligned", "empty")]
        if form == "wgrad":
            cases.append((form, fmt, lay, "total_unaligned"))
    out = [ProbeCase(form=f, fmt=fm, layout=lay, condition=c, expect=_expect(f, fm, lay, c)) for f, fm, lay, c in cases]
    rank = {"ok": 0, "refused": 1, "crash": 2}
    return sorted(out, key=lambda p: (p.condition not in ("pad16", "pad8"), rank[p.expect]))


def unsafe_from_probes(records: Iterable[Mapping[str, Any]]) -> set[tuple[str, str, str, str]]:
    """(form, fmt, layout, condition) whose probe was refused or crashed (neither ``ok`` nor ``wrong``): the time and
    kernels phases skip items that depend on one of them (:meth:`GroupedItem.probe_conditions`)."""
    return {
        (r["form"], r["fmt"], r["layout"], r["condition"])
        for r in records
        if r.get("op") == "probe" and r.get("status") not in ("ok", "wrong")
    }


def wrong_from_probes(records: Iterable[Mapping[str, Any]]) -> set[tuple[str, str, str, str]]:
    """(form, fmt, layout, condition) whose probe ran but did not match float64 (or left output unwritten): such items
    are still timed, their records name the probe in ``probe_wrong``."""
    return {
        (r["form"], r["fmt"], r["layout"], r["condition"])
        for r in records
        if r.get("op") == "probe" and r.get("status") == "wrong"
    }


def _wrong_probes(item: GroupedItem, wrong: set[tuple[str, str, str, str]]) -> list[str]:
    return sorted(
        f"{item.form}_{item.fmt}_{item.layout}_{c}"
        for c in item.probe_conditions()
        if (item.form, item.fmt, item.layout, c) in wrong
    )


def _skip_reason(item: GroupedItem, unsafe: set[tuple[str, str, str, str]]) -> str | None:
    bad = sorted(c for c in item.probe_conditions() if (item.form, item.fmt, item.layout, c) in unsafe)
    return f"skipped: probe {item.form}_{item.fmt}_{item.layout}_{bad[0]} did not pass" if bad else None


# ---- GPU side ----------------------------------------------------------------------------------------


def _mat(torch: Any, rows: int, cols: int, major: str, dtype: Any) -> Any:
    """A random ``(rows, cols)`` matrix, row-major (contiguous) or column-major (the transpose of a contiguous
    ``(cols, rows)``), drawn in bf16 then cast; never zeros (zeros run faster on Hopper)."""
    if major == "row":
        return torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16).to(dtype)
    return torch.randn(cols, rows, device="cuda", dtype=torch.bfloat16).to(dtype).t()


def _mat3(torch: Any, G: int, rows: int, cols: int, major: str, dtype: Any) -> Any:
    """``[G, rows, cols]``: row-major per group, or the transpose of a contiguous ``[G, cols, rows]``."""
    if major == "row":
        return torch.randn(G, rows, cols, device="cuda", dtype=torch.bfloat16).to(dtype)
    return torch.randn(G, cols, rows, device="cuda", dtype=torch.bfloat16).to(dtype).transpose(-2, -1)


def _weights(torch: Any, form: str, fmt: str, layout: str, K: int, N: int, G: int) -> Any:
    """The fwd form's 3D B operand (None for wgrad)."""
    if form != "fwd":
        return None
    dtype = torch.float8_e4m3fn if fmt == FP8 else torch.bfloat16
    return _mat3(torch, G, K, N, _parse_layout(layout)[1], dtype)


def _make_call(
    torch: Any,
    form: str,
    fmt: str,
    layout: str,
    K: int,
    N: int,
    rows: Sequence[int],
    w: Any = None,
) -> tuple[Callable[[], Any], dict[str, Any]]:
    """The callable running one grouped GEMM on fresh random operands, and its operands (``a``, ``b``, ``offs`` and
    for fp8 ``scale_a``, ``scale_b``). ``w``: the fwd form's B operand, shared by the items of a shape."""
    a_major, b_major = _parse_layout(layout)
    G = len(rows)
    T = sum(rows)
    dtype = torch.float8_e4m3fn if fmt == FP8 else torch.bfloat16
    offs = torch.tensor(offsets(rows), device="cuda", dtype=torch.int32)
    if form == "fwd":
        a = _mat(torch, T, K, a_major, dtype)
        b = w if w is not None else _mat3(torch, G, K, N, b_major, dtype)
    else:
        a = _mat(torch, N, T, a_major, dtype)
        b = _mat(torch, T, K, b_major, dtype)
    ops: dict[str, Any] = {"a": a, "b": b, "offs": offs}
    if fmt == BF16:
        return (lambda: torch._grouped_mm(a, b, offs=offs)), ops
    if form == "fwd":
        sa = torch.rand(T, device="cuda", dtype=torch.float32) + 0.5
        sb = torch.rand(G, N, device="cuda", dtype=torch.float32) + 0.5
    else:
        sa = torch.rand(G * N, device="cuda", dtype=torch.float32) + 0.5
        sb = torch.rand(G * K, device="cuda", dtype=torch.float32) + 0.5
    ops.update(scale_a=sa, scale_b=sb)

    def call() -> Any:
        return torch._scaled_grouped_mm(a, b, sa, sb, offs=offs, out_dtype=torch.bfloat16, use_fast_accum=True)

    return call, ops


def _reference(torch: Any, form: str, fmt: str, ops: Mapping[str, Any], rows: Sequence[int]) -> list[Any]:
    """Per group, the float64 result of the same operands (times the scales for fp8)."""
    a, b = ops["a"].float().double(), ops["b"].float().double()
    out, start = [], 0
    for g, r in enumerate(rows):
        end = start + r
        if form == "fwd":
            ref = a[start:end] @ b[g]
            if fmt == FP8:
                ref = ref * ops["scale_a"][start:end, None].double() * ops["scale_b"][g][None, :].double()
        else:
            ref = a[:, start:end] @ b[start:end]
            if fmt == FP8:
                n, k = a.shape[0], b.shape[1]
                ref = ref * ops["scale_a"][g * n : (g + 1) * n, None].double()
                ref = ref * ops["scale_b"][g * k : (g + 1) * k][None, :].double()
        out.append(ref)
        start = end
    return out


def _group_errors(torch: Any, form: str, out: Any, refs: Sequence[Any], rows: Sequence[int]) -> list[float | None]:
    """Per group ‖out − ref‖ / ‖ref‖ (for an empty wgrad group, max |out|: it should be 0); None where the output
    holds NaN (the poisoned memory was not overwritten) or the group has no output rows."""
    errs: list[float | None] = []
    start = 0
    for g, (r, ref) in enumerate(zip(rows, refs, strict=True)):
        got = out[start : start + r] if form == "fwd" else out[g]
        start += r
        if got.numel() == 0:
            errs.append(None)
            continue
        got = got.double()
        if torch.isnan(got).any():
            errs.append(math.nan)
            continue
        norm = float(ref.norm())
        errs.append(float((got - ref).norm()) / norm if norm > 0 else float(got.abs().max()))
    return errs


def _poison(torch: Any, nbytes: int) -> None:
    """Fill a block of ``nbytes`` with NaN and free it, so the op's output (likely the same cached block) starts as
    NaN: an element the op does not write shows up."""
    t = torch.full((max(1, nbytes // 2),), float("nan"), device="cuda", dtype=torch.bfloat16)
    del t


def _is_cuda_death(exc: BaseException) -> bool:
    text = str(exc)
    return any(
        s in text
        for s in (
            "device-side assert",
            "CUDA error",
            "illegal memory",
            "misaligned address",
            "unspecified launch failure",
            "AcceleratorError",
        )
    )


def run_probes(
    writer: DatasetWriter, cases: Sequence[ProbeCase], *, done: set[str], tol: Mapping[str, float], log: Log = print
) -> int:
    """Run each probe not in ``done``: poison, call, synchronize, compare per group with float64. Appends one
    ``op="probe"`` record per case (status ok | wrong | refused | crashed) and rewrites the file after each (a
    ``started`` record first, so a process that dies hard leaves its mark). Returns 0, or PROBE_CRASH_EXIT after
    recording a case that killed the CUDA context."""
    torch = require_cuda()
    torch.manual_seed(0)
    for case in cases:
        if case.name in done:
            continue
        rec: dict[str, Any] = {
            "op": "probe",
            "name": case.name,
            "form": case.form,
            "fmt": case.fmt,
            "layout": case.layout,
            "condition": case.condition,
            "rows": list(case.rows),
            "K": PROBE_K,
            "N": PROBE_N,
            "expect": case.expect,
            "status": "started",
        }
        stored = writer.add(rec, flush=True)
        try:
            fn, ops = _make_call(torch, case.form, case.fmt, case.layout, PROBE_K, PROBE_N, case.rows)
            stored.update(
                a_shape=list(ops["a"].shape),
                a_strides=list(ops["a"].stride()),
                b_shape=list(ops["b"].shape),
                b_strides=list(ops["b"].stride()),
            )
            torch.cuda.synchronize()
            T = sum(case.rows)
            _poison(torch, 2 * (T * PROBE_N if case.form == "fwd" else PROBE_G * PROBE_N * PROBE_K))
            out = fn()
            torch.cuda.synchronize()
        except Exception as exc:  # every failure is the probe's answer
            dead = _is_cuda_death(exc)
            if not dead:
                try:
                    torch.cuda.synchronize()
                except Exception as exc2:
                    dead, exc = True, exc2
            stored.update(status="crashed" if dead else "refused", error=f"{type(exc).__name__}: {str(exc)[:600]}")
            writer.flush()
            log(f"probe {case.name}: {stored['status']} (expected {case.expect}): {str(exc)[:160]}")
            if dead:
                return PROBE_CRASH_EXIT
            continue
        refs = _reference(torch, case.form, case.fmt, ops, case.rows)
        errs = _group_errors(torch, case.form, out, refs, case.rows)
        bad = [e for e in errs if e is not None and not (math.isfinite(e) and e <= tol[case.fmt])]
        stored.update(
            status="wrong" if bad else "ok",
            group_rel_errors=errs,
            tolerance=tol[case.fmt],
            out_shape=list(out.shape),
            out_strides=list(out.stride()),
        )
        writer.flush()
        log(f"probe {case.name}: {stored['status']} (expected {case.expect}), errors {errs}")
        del out, fn, ops
    return 0


def _op_schemas(torch: Any) -> dict[str, Any]:
    """The ops' schemas as this torch states them (``None`` where an op is missing)."""
    out: dict[str, Any] = {}
    for name in ("_grouped_mm", "_scaled_grouped_mm", "_scaled_mm", "_scaled_grouped_mm_v2"):
        try:
            op = getattr(torch.ops.aten, name)
            out[name] = [str(getattr(op, o)._schema) for o in op.overloads()]
        except (AttributeError, RuntimeError):
            out[name] = None
    fn = getattr(torch.nn.functional, "scaled_grouped_mm", None)
    out["torch.nn.functional.scaled_grouped_mm"] = fn is not None
    out["torch.nn.functional.grouped_mm"] = getattr(torch.nn.functional, "grouped_mm", None) is not None
    return out


def _smi(args: Sequence[str]) -> str | None:
    try:
        r = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=20, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() or None


def _meta(command: str) -> dict[str, Any]:
    """``collect_meta`` plus the GPU's UUID and ``nvidia-smi -L``."""
    meta = collect_meta(command)
    meta["gpu_uuid"] = _smi(["--query-gpu=uuid", "--format=csv,noheader", "-i", "0"])
    meta["nvidia_smi_L"] = _smi(["-L"])
    return meta


def _warm_gpu(torch: Any, seconds: float) -> None:
    """8192³ bf16 GEMMs for ``seconds``, so the clocks are up before the first measurement."""
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            torch.mm(a, a)
        torch.cuda.synchronize()
    del a


def _profiler_enabled(torch: Any) -> bool:
    try:
        return bool(torch.autograd._profiler_enabled())
    except AttributeError:  # pragma: no cover - older torch
        return False


def _neighbour_call(torch: Any, item: NeighbourItem) -> tuple[Callable[[], Any], tuple[Any, ...]]:
    f8 = torch.float8_e4m3fn
    x = torch.randn(item.M, item.K, device="cuda", dtype=torch.bfloat16).to(f8)
    w = torch.randn(item.N, item.K, device="cuda", dtype=torch.bfloat16).to(f8)
    if item.scaling == "tensorwise":
        sa = torch.tensor(0.75, device="cuda", dtype=torch.float32)
        sb = torch.tensor(1.25, device="cuda", dtype=torch.float32)
    else:
        sa = torch.rand(item.M, 1, device="cuda", dtype=torch.float32) + 0.5
        sb = torch.rand(1, item.N, device="cuda", dtype=torch.float32) + 0.5
    wt = w.t()
    return (lambda: torch._scaled_mm(x, wt, sa, sb, out_dtype=torch.bfloat16)), (x, wt, sa, sb)


_ERRORS = (RuntimeError, ValueError, TypeError)


def run_time(
    writer: DatasetWriter,
    nb_writer: DatasetWriter,
    items: Sequence[GroupedItem],
    neighbours: Sequence[NeighbourItem],
    *,
    budget_s: float,
    warmup_ms: float = WARMUP_MS,
    rep_ms: float = REP_MS,
    unsafe: set[tuple[str, str, str, str]] | None = None,
    wrong: set[tuple[str, str, str, str]] | None = None,
    log: Log = print,
) -> dict[str, Any]:
    """do_bench every neighbour, then every grouped item (weights made once per shape), one ``timing: "event"``
    record each; stops starting items after ``budget_s``. Never starts a profiler. Skips items whose probe failed."""
    torch = require_cuda()
    if _profiler_enabled(torch):
        raise GroupedGemmError("a profiler is active in this process; event timings must come from a clean process")
    torch.manual_seed(0)
    t0 = last = time.perf_counter()
    done = nb_done = 0
    errors: list[dict[str, Any]] = []
    truncated = False
    for item in neighbours:
        warm, rep = _bench_budget_ms(item.kernel_s(), warmup_ms, rep_ms)
        try:
            fn, ops = _neighbour_call(torch, item)
            w0 = time.time()
            t = bench(fn, warmup_ms=warm, rep_ms=rep)
        except _ERRORS as exc:
            errors.append({"id": item.id, "error": str(exc)[:300]})
            log(f"time: {item.id} failed: {str(exc)[:200]}")
            continue
        rec = item.fields()
        rec.update(timing="event", method="do_bench", warmup_ms=warm, rep_ms=rep, **t)
        rec.update(wall_start_s=w0, wall_end_s=time.time(), tflops=item.flops / t["time_s"] / 1e12)
        nb_writer.add(rec)
        nb_done += 1
        del fn, ops
    nb_writer.flush()
    log(f"time: {nb_done} neighbour records, {time.perf_counter() - t0:.0f} s")
    dead = False
    for shape in _by_shape(items).values():
        if dead or time.perf_counter() - t0 > budget_s:
            truncated = True
            log(f"time: stopping after {done} grouped records ({'CUDA context gone' if dead else 'budget spent'})")
            break
        weights: dict[tuple[str, str], Any] = {}
        for item in shape:
            why = _skip_reason(item, unsafe or set())
            if why:
                errors.append({"id": item.id, "error": why})
                continue
            warm, rep = _bench_budget_ms(estimate_item_kernel_s(item), warmup_ms, rep_ms)
            try:
                key = (item.fmt, item.layout)
                if key not in weights:
                    weights[key] = _weights(torch, item.form, item.fmt, item.layout, item.K, item.N, item.G)
                fn, ops = _make_call(torch, item.form, item.fmt, item.layout, item.K, item.N, item.rows, weights[key])
                w0 = time.time()
                t = bench(fn, warmup_ms=warm, rep_ms=rep)
            except _ERRORS as exc:
                errors.append({"id": item.id, "error": str(exc)[:300]})
                log(f"time: {item.id} failed: {str(exc)[:200]}")
                if _is_cuda_death(exc):
                    dead = True
                    break
                torch.cuda.empty_cache()
                continue
            rec = item.fields()
            rec.update(_actual_layout(ops), probe_wrong=_wrong_probes(item, wrong or set()))
            rec.update(timing="event", method="do_bench", warmup_ms=warm, rep_ms=rep, **t)
            rec.update(wall_start_s=w0, wall_end_s=time.time(), tflops=item.flops / t["time_s"] / 1e12)
            writer.add(rec)
            done += 1
            del fn, ops
        del weights
        if not dead:
            torch.cuda.empty_cache()
        if time.perf_counter() - last > WRITE_EVERY_S:
            writer.flush()
            last = time.perf_counter()
            log(f"time: {done}/{len(items)} grouped records, {last - t0:.0f} s")
    writer.flush()
    return {
        "records": done,
        "neighbour_records": nb_done,
        "planned": len(items),
        "planned_neighbours": len(neighbours),
        "truncated": truncated,
        "seconds": time.perf_counter() - t0,
        "errors": errors[:100],
        "n_errors": len(errors),
        "profiler_enabled_after": _profiler_enabled(torch),
        "warmup_ms": warmup_ms,
        "rep_ms": rep_ms,
        "min_reps": MIN_REPS,
        "budget_s": budget_s,
    }


def _actual_layout(ops: Mapping[str, Any]) -> dict[str, Any]:
    """Shapes and strides (elements) of the operands as torch holds them (overrides the expected ones)."""
    return {
        "a_shape": list(ops["a"].shape),
        "a_strides": list(ops["a"].stride()),
        "b_shape": list(ops["b"].shape),
        "b_strides": list(ops["b"].stride()),
    }


# ---- kernel names and the kernel phase ---------------------------------------------------------------

_CUTE_TRIPLE = re.compile(r"cute::C<(\d+)>\s*,\s*cute::C<(\d+)>\s*,\s*cute::C<(\d+)>")
# a mangled name (as torch.profiler reported them on torch 2.11): the CTA tile follows the kernel schedule, e.g.
# ...KernelPtrArrayTmaWarpSpecializedCooperativeEEENSA_IJNSG_ILi128EEENSG_ILi256EEENSG_ILi64EEEEEE...
_MANGLED_AFTER_SCHEDULE = re.compile(r"KernelPtrArrayTmaWarpSpecialized(?:Cooperative|Pingpong)\w*?EEN[0-9A-Z]*_IJ")
_MANGLED_INT = re.compile(r"N[0-9A-Z]*_ILi(\d+)EEE")
_MANGLED_SUB = re.compile(r"S[0-9A-Z]*_")


def _mangled_tile(name: str) -> list[int | None] | None:
    """The three CTA tile sizes (M, N, K) after the schedule in a mangled CUTLASS 3 name; None for a size the mangler
    wrote as a back-reference to an earlier one (which one is not resolved); None if the name has no such part."""
    m = _MANGLED_AFTER_SCHEDULE.search(name)
    if not m:
        return None
    pos, out = m.end(), []
    for _ in range(3):
        if (hit := _MANGLED_INT.match(name, pos)) is not None:
            out.append(int(hit[1]))
        elif (hit := _MANGLED_SUB.match(name, pos)) is not None:
            out.append(None)
        else:
            return None
        pos = hit.end()
    return out


def parse_kernel_name(name: str) -> dict[str, Any]:
    """What a GPU activity name says: ``role`` (``prepare``: torch's prepare_grouped_gemm_data; ``gemm``; ``memset``
    / ``memcpy``; ``other``), ``library`` (cutlass | nvjet | None), ``schedule`` (Pingpong | Cooperative | None, from
    CUTLASS's kernel schedule name), ``fast_accum`` (FP8FastAccum in the name), ``sm90`` (Sm90 in the name) and
    ``cute_triples``: the first three ``cute::C<a>, cute::C<b>, cute::C<c>`` triples of a demangled name (cluster and
    tile shapes appear as such; which is which is not read off the name, so the raw name stays in the record), and
    ``tile``: the CTA tile of a mangled name (:func:`_mangled_tile`; torch.profiler gave mangled CUTLASS names on the
    H200 of 2026-12-03, whose records hold ``cute_triples`` empty and no ``tile``: re-parse their raw names)."""
    info: dict[str, Any] = {"role": "other", "library": None, "schedule": None, "fast_accum": False, "sm90": False}
    if name.startswith(("Memset", "Memcpy")):
        info["role"] = name.split()[0].lower()
        return info
    if "prepare_grouped_gemm_data" in name:
        info["role"] = "prepare"
        return info
    if "cutlass" in name or "nvjet" in name or "gemm" in name.lower():
        info["role"] = "gemm"
        info["library"] = "nvjet" if "nvjet" in name else ("cutlass" if "cutlass" in name else None)
    for s in ("Pingpong", "Cooperative"):
        if s in name:
            info["schedule"] = s
            break
    info["fast_accum"] = "FastAccum" in name
    info["sm90"] = "Sm90" in name or "sm90" in name
    info["cute_triples"] = [[int(x) for x in m.groups()] for m in _CUTE_TRIPLE.finditer(name)][:3]
    info["tile"] = _mangled_tile(name)
    return info


def split_at_markers(events: Sequence[tuple[str, float, float]], marker: str) -> list[list[tuple[str, float, float]]]:
    """Time-sorted GPU activities split at each ``marker`` activity (the L2 flush before every call): one list per
    marker with what follows it up to the next; anything before the first marker is dropped."""
    out: list[list[tuple[str, float, float]]] = []
    for ev in events:
        if ev[0] == marker:
            out.append([])
        elif out:
            out[-1].append(ev)
    return out


def summarize_calls(calls: Sequence[Sequence[tuple[str, float, float]]]) -> dict[str, Any]:
    """Kernel-phase fields from the profiled calls of one item (each a list of (name, start_s, duration_s)),
    seconds: ``time_s`` the median per-call sum of GPU activity, ``gemm_time_s`` / ``prepare_time_s`` the median of
    those roles' sums, ``span_s`` first start to last end, ``kernels`` the most common sequence (name, median
    duration, role), ``main_kernel`` its longest and its parse."""
    sums = [sum(d for _, _, d in c) for c in calls]
    spans = [c[-1][1] + c[-1][2] - c[0][1] for c in calls if c]
    seqs = Counter(tuple(n for n, _, _ in c) for c in calls)
    seq = seqs.most_common(1)[0][0]
    same = [c for c in calls if tuple(n for n, _, _ in c) == seq]
    infos = [parse_kernel_name(n) for n in seq]
    kernels = [
        {"name": n, "time_s": statistics.median(c[j][2] for c in same), "role": infos[j]["role"]}
        for j, n in enumerate(seq)
    ]

    def role_sum(role: str) -> float:
        return statistics.median(sum(d for n, _, d in c if parse_kernel_name(n)["role"] == role) for c in calls)

    j_main = max(range(len(kernels)), key=lambda j: kernels[j]["time_s"]) if kernels else None
    return {
        "time_s": statistics.median(sums),
        "time_s_p20": quantile(sums, 0.2),
        "time_s_p80": quantile(sums, 0.8),
        "time_s_all": sums,
        "gemm_time_s": role_sum("gemm"),
        "prepare_time_s": role_sum("prepare"),
        "span_s": statistics.median(spans) if spans else None,
        "n_kernels": len(seq),
        "kernel_sequences": len(seqs),
        "kernels": kernels,
        "main_kernel": seq[j_main] if j_main is not None else None,
        "main_kernel_info": infos[j_main] if j_main is not None else None,
    }


def _flush_marker(torch: Any, cache: Any) -> tuple[Callable[[], Any], str]:
    """The L2 flush and the activity name that marks it in a trace (the fill kernel: the longest activity of a lone
    flush; ones instead of zeros if zeroing shows as a plain memset, which other libraries launch too)."""
    from torch.profiler import ProfilerActivity, profile

    for flush in (cache.zero_, lambda: cache.fill_(1)):
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            flush()
            torch.cuda.synchronize()
        seen = kernel_times_s(prof)
        if seen:
            name = max(seen, key=lambda e: e[2])[0]
            if not name.startswith(("Memset", "Memcpy")):
                return flush, name
    raise GroupedGemmError("no distinctive kernel for the L2 flush in the profiler trace")


def run_kernels(
    writer: DatasetWriter,
    nb_writer: DatasetWriter,
    items: Sequence[GroupedItem],
    neighbours: Sequence[NeighbourItem],
    *,
    budget_s: float,
    calls: int = PROFILED_CALLS,
    unsafe: set[tuple[str, str, str, str]] | None = None,
    wrong: set[tuple[str, str, str, str]] | None = None,
    log: Log = print,
) -> dict[str, Any]:
    """Under ``torch.profiler`` (CUDA activity), one session per shape (the neighbours one session): each item's
    PROFILE_WARMUP_CALLS unprofiled calls, then ``calls`` profiled calls each after the L2 flush (the marker that
    splits the trace). One ``timing: "kernel"`` record per item, the time phase's ids."""
    torch = require_cuda()
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    cache = torch.empty(FLUSH_BYTES // 4, dtype=torch.int, device="cuda")
    flush, marker = _flush_marker(torch, cache)
    t0 = last = time.perf_counter()
    errors: list[dict[str, Any]] = []
    counts = {"grouped": 0, "neighbours": 0}
    truncated = False

    def session(
        ready: Sequence[tuple[Any, Callable[[], Any], Mapping[str, Any] | None]], out: DatasetWriter, kind: str
    ) -> None:
        torch.cuda.synchronize()
        w0 = time.time()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _, fn, _ in ready:
                for _ in range(calls):
                    flush()
                    fn()
            torch.cuda.synchronize()
        w1 = time.time()
        segs = split_at_markers(kernel_times_s(prof), marker)
        if len(segs) != len(ready) * calls:
            for item, _, _ in ready:
                errors.append(
                    {"id": item.id, "error": f"trace split into {len(segs)} calls, expected {len(ready) * calls}"}
                )
            return
        for j, (item, _, ops) in enumerate(ready):
            per_call = segs[j * calls : (j + 1) * calls]
            if any(not c for c in per_call):
                errors.append({"id": item.id, "error": "a profiled call had no GPU activity"})
                continue
            rec = item.fields()
            if ops is not None:
                rec.update(_actual_layout(ops), probe_wrong=_wrong_probes(item, wrong or set()))
            rec.update(
                timing="kernel",
                method="torch.profiler",
                calls=calls,
                warmup_calls=PROFILE_WARMUP_CALLS,
                l2_flush=True,
                **summarize_calls(per_call),
            )
            rec.update(wall_start_s=w0, wall_end_s=w1, tflops=item.flops / rec["time_s"] / 1e12)
            out.add(rec)
            counts[kind] += 1

    def prepared(item: Any, make: Callable[[], tuple[Callable[[], Any], Any]]) -> tuple[Any, Any, Any] | None:
        try:
            fn, ops = make()
            for _ in range(PROFILE_WARMUP_CALLS):
                fn()
            torch.cuda.synchronize()
        except _ERRORS as exc:
            errors.append({"id": item.id, "error": str(exc)[:300]})
            log(f"kernels: {item.id} failed: {str(exc)[:200]}")
            return None
        return item, fn, ops if isinstance(ops, Mapping) else None

    ready = []
    for nb in neighbours:
        r = prepared(nb, lambda nb=nb: _neighbour_call(torch, nb))
        if r:
            ready.append(r)
    if ready:
        session(ready, nb_writer, "neighbours")
    del ready
    nb_writer.flush()
    for shape in _by_shape(items).values():
        if time.perf_counter() - t0 > budget_s:
            truncated = True
            log(f"kernels: budget {budget_s:.0f} s spent after {counts['grouped']} records; stopping")
            break
        weights: dict[tuple[str, str], Any] = {}
        ready = []
        for item in shape:
            why = _skip_reason(item, unsafe or set())
            if why:
                errors.append({"id": item.id, "error": why})
                continue
            key = (item.fmt, item.layout)

            def make(
                item: GroupedItem = item, key: tuple[str, str] = key, cache: dict[tuple[str, str], Any] = weights
            ) -> tuple[Callable[[], Any], Any]:
                if key not in cache:
                    cache[key] = _weights(torch, item.form, item.fmt, item.layout, item.K, item.N, item.G)
                return _make_call(torch, item.form, item.fmt, item.layout, item.K, item.N, item.rows, cache[key])

            r = prepared(item, make)
            if r:
                ready.append(r)
        if ready:
            session(ready, writer, "grouped")
        del ready, weights
        torch.cuda.empty_cache()
        if time.perf_counter() - last > WRITE_EVERY_S:
            writer.flush()
            last = time.perf_counter()
            log(f"kernels: {counts['grouped']}/{len(items)} records, {last - t0:.0f} s")
    writer.flush()
    return {
        "records": counts["grouped"],
        "neighbour_records": counts["neighbours"],
        "planned": len(items),
        "planned_neighbours": len(neighbours),
        "truncated": truncated,
        "seconds": time.perf_counter() - t0,
        "errors": errors[:100],
        "n_errors": len(errors),
        "calls": calls,
        "warmup_calls": PROFILE_WARMUP_CALLS,
        "flush_marker": marker,
        "budget_s": budget_s,
    }


# ---- files, validation, summary (pure Python) ---------------------------------------------------------


def load(path: str | Path) -> dict[str, Any]:
    """A dataset file (``.json`` or ``.json.gz``); a missing ``.json`` is looked for as ``.json.gz`` too."""
    p = Path(path)
    if not p.exists() and p.suffix == ".json" and p.with_suffix(".json.gz").exists():
        p = p.with_suffix(".json.gz")
    try:
        raw = gzip.open(p, "rt").read() if p.suffix == ".gz" else p.read_text()
        return json.loads(raw)
    except (OSError, ValueError) as exc:
        raise GroupedGemmError(f"cannot read dataset {str(p)!r}: {exc}") from exc


def validate_records(data: Mapping[str, Any]) -> list[str]:
    """Problems in a grouped / probe / neighbour dataset (empty: valid): the schema tag, each record's REQUIRED_FIELDS,
    positive times, and for grouped records ``len(rows) == G`` and the strides lists of the operand ranks."""
    problems = []
    if data.get("schema") != SCHEMA_TAG:
        problems.append(f"schema is {data.get('schema')!r}, expected {SCHEMA_TAG!r}")
    if not isinstance(data.get("meta"), Mapping):
        problems.append("meta block missing")
    records = data.get("records")
    if not isinstance(records, list):
        return [*problems, "records list missing"]
    for i, r in enumerate(records):
        op = r.get("op")
        if op not in REQUIRED_FIELDS:
            problems.append(f"records[{i}].op is {op!r}; valid: {', '.join(REQUIRED_FIELDS)}")
            continue
        problems += [f"records[{i}] ({op}) lacks {f!r}" for f in REQUIRED_FIELDS[op] if f not in r]
        if op == "probe":
            continue
        t = r.get("time_s")
        if not (isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0):
            problems.append(f"records[{i}].time_s must be a positive number, got {t!r}")
        if op in ("fwd", "wgrad"):
            if isinstance(r.get("rows"), list) and len(r["rows"]) != r.get("G"):
                problems.append(f"records[{i}]: {len(r['rows'])} rows for G = {r.get('G')}")
            want = (2, 3) if op == "fwd" else (2, 2)
            for key, n in zip(("a_strides", "b_strides"), want, strict=True):
                if isinstance(r.get(key), list) and len(r[key]) != n:
                    problems.append(f"records[{i}].{key} has {len(r[key])} entries, expected {n}")
    return problems


def _records(folder: Path, name: str, suffix: str) -> list[dict[str, Any]]:
    try:
        return list(load(folder / name.format(suffix=suffix)).get("records", []))
    except GroupedGemmError:
        return []


def _m_bucket(rows_mean: float) -> str:
    for hi in (64, 256, 1024, 4096):
        if rows_mean <= hi:
            return f"<={hi}"
    return ">4096"


_BUCKETS = ("<=64", "<=256", "<=1024", "<=4096", ">4096")


def summarize(folder: str | Path, *, suffix: str = "", families: Sequence[str] | None = None) -> str:
    """Tables of the datasets in ``folder``: probes, record counts per op/format/layout/family, median TFLOP/s by G
    and mean rows per group (fwd bf16 a_row_b_col and fp8), the median fp8 / bf16 speed-up on the same vectors, the
    event-minus-kernel gap, and the fp8 neighbours' times with the step to the next neighbour. ``families``: the
    grouped tables over these families only."""
    folder = Path(folder)
    lines: list[str] = []
    probes = [r for r in _records(folder, PROBE_FILE, suffix) if r.get("op") == "probe"]
    if probes:
        lines.append(f"probes ({len(probes)}): name, status (expected)")
        for r in probes:
            err = f"  {r.get('error', '')[:110]}" if r.get("status") in ("refused", "crashed") else ""
            lines.append(f"  {r['name']:<44} {r['status']:<8} ({r.get('expect')}){err}")
    fams = None if families is None else set(families)

    def keep(r: Mapping[str, Any]) -> bool:
        return r.get("op") in ("fwd", "wgrad") and (fams is None or r.get("family") in fams)

    ev = [r for r in _records(folder, TIME_FILE, suffix) if keep(r)]
    kr = [r for r in _records(folder, KERNELS_FILE, suffix) if keep(r)]
    k_by_id = {r["id"]: r for r in kr}
    lines.append(f"grouped: {len(ev)} event records, {len(kr)} kernel records in {folder}")
    cnt = Counter((r["op"], r["dtype"], r["layout"], r["family"]) for r in ev)
    fams = sorted({k[3] for k in cnt})
    combos = sorted({k[:3] for k in cnt})
    if combos:
        lines.append(f"  {'op/dtype/layout':<26} " + " ".join(f"{f[:10]:>10}" for f in fams))
        for c in combos:
            lines.append(f"  {'/'.join(c):<26} " + " ".join(f"{cnt[(*c, f)]:>10}" for f in fams))
    for op in ("fwd", "wgrad"):
        for dtype, layout in (("bf16", "a_row_b_col" if op == "fwd" else "a_col_b_row"), ("fp8_e4m3", "a_row_b_col")):
            sel = [r for r in ev if r["op"] == op and r["dtype"] == dtype and r["layout"] == layout]
            if not sel:
                continue
            cells: dict[tuple[int, str], list[float]] = defaultdict(list)
            for r in sel:
                cells[(r["G"], _m_bucket(r["total_rows"] / r["G"]))].append(r["tflops"])
            lines.append(f"median TFLOP/s, {op} {dtype} {layout} (event; rows: G, columns: mean rows per group)")
            lines.append("  " + f"{'G':>5} " + " ".join(f"{b:>8}" for b in _BUCKETS))
            for g in sorted({k[0] for k in cells}):
                vals = [
                    f"{statistics.median(cells[(g, b)]):>8.0f}" if cells.get((g, b)) else f"{'-':>8}" for b in _BUCKETS
                ]
                lines.append("  " + f"{g:>5} " + " ".join(vals))
    pairs: dict[tuple[str, int, str], list[float]] = defaultdict(list)
    base = {(r["shape_id"], r["vector"]): r for r in ev if r["dtype"] == "bf16" and r["layout"] == "a_row_b_col"}
    base.update({(r["shape_id"], r["vector"]): r for r in ev if r["dtype"] == "bf16" and r["layout"] == "a_col_b_row"})
    for r in ev:
        b = base.get((r["shape_id"], r["vector"]))
        if r["dtype"] == "fp8_e4m3" and b:
            pairs[(r["op"], r["G"], _m_bucket(r["total_rows_requested"] / r["G"]))].append(b["time_s"] / r["time_s"])
    if pairs:
        lines.append(
            "median bf16 time / fp8 time on the same group vector (fp8 padded; fwd vs bf16 a_row_b_col, "
            "wgrad vs bf16 a_col_b_row)"
        )
        for op in ("fwd", "wgrad"):
            gs = sorted({k[1] for k in pairs if k[0] == op})
            if not gs:
                continue
            lines.append(f"  {op:<5} {'G':>4} " + " ".join(f"{b:>7}" for b in _BUCKETS))
            for g in gs:
                vals = [
                    f"{statistics.median(pairs[(op, g, b)]):>7.2f}" if pairs.get((op, g, b)) else f"{'-':>7}"
                    for b in _BUCKETS
                ]
                lines.append(f"  {'':<5} {g:>4} " + " ".join(vals))
    gaps = [(r["time_s"] - k_by_id[r["id"]]["time_s"]) * 1e6 for r in ev if r["id"] in k_by_id]
    if gaps:
        lines.append(
            f"event - kernel gap over {len(gaps)} items: median {statistics.median(gaps):.2f} us, "
            f"p20 {quantile(gaps, 0.2):.2f}, p80 {quantile(gaps, 0.8):.2f}"
        )
    mains = Counter(
        f"{(r.get('main_kernel_info') or {}).get('library')} {(r.get('main_kernel_info') or {}).get('schedule')} "
        f"{r['dtype']}"
        for r in kr
    )
    if mains:
        lines.append(
            "main kernel (library, schedule, dtype): " + ", ".join(f"{k} x{n}" for k, n in mains.most_common(6))
        )
    nb = [r for r in _records(folder, NB_TIME_FILE, suffix) if r.get("op") == "gemm"]
    nbk = {r["id"]: r for r in _records(folder, NB_KERNELS_FILE, suffix)}
    if nb:
        lines.append("fp8 neighbours (x @ W.T, event median us per pass; kernel us; step % to the previous size)")
        by: dict[tuple[str, str, int, int, int], dict[int, float]] = defaultdict(dict)
        for r in nb:
            by[(r["series"], r["scaling"], r["M"], r["K"], r["N"])][r["pass"]] = r["time_s"]
        prev: dict[tuple[str, str], float] = {}
        for key in sorted(by, key=lambda k: (k[0], k[1], k[2], k[3], k[4])):
            ser, sc, M, K, N = key
            t = by[key]
            mean = statistics.fmean(t.values())
            kid = f"nb_{ser}_{M}x{K}x{N}_{sc}_p0"
            kt = nbk.get(kid, {}).get("time_s")
            step = f"{(mean / prev[(ser, sc)] - 1) * 100:+6.1f}" if (ser, sc) in prev else f"{'':>6}"
            prev[(ser, sc)] = mean
            passes = " ".join(f"{t[p] * 1e6:8.1f}" if p in t else f"{'-':>8}" for p in range(NEIGHBOUR_PASSES))
            ktxt = f"{kt * 1e6:8.1f}" if kt else f"{'-':>8}"
            lines.append(f"  {ser:<8} {sc:<10} {M:>5}x{K:>5}x{N:>5} {passes} {ktxt} {step}")
    return "\n".join(lines)


# ---- CLI -------------------------------------------------------------------------------------------


def _positive(kind: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {kind} (a number above 0), got {text!r}") from None
        if not (math.isfinite(v) and v > 0):
            raise argparse.ArgumentTypeError(f"expected {kind} above 0, got {text!r}")
        return v

    return parse


def _families(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in FAMILIES]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"unknown families {bad!r}; valid: {', '.join(FAMILIES)}")
    return names


def _calls(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of calls >= 1, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of calls >= 1, got {text!r}")
    return v


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m perfmodel.bench.grouped_gemm", description=__doc__.split("\n\n")[0])
    p.add_argument("phase", choices=("plan", "probe", "time", "kernels", "summary"))
    p.add_argument("--out", type=Path, default=None, help="output folder (required for probe, time, kernels, summary)")
    p.add_argument("--seed", type=int, default=0, help="seed of the group sizes, random shapes and the run order")
    p.add_argument(
        "--budget-s",
        type=_positive("seconds"),
        default=None,
        help=f"time: plan and stop at this many seconds (default {TIME_BUDGET_S:.0f}); kernels: stop "
        f"starting shapes after it (default {KERNELS_BUDGET_S:.0f})",
    )
    p.add_argument("--warmup-ms", type=_positive("a time in ms"), default=WARMUP_MS, help="do_bench warmup, ms")
    p.add_argument("--rep-ms", type=_positive("a time in ms"), default=REP_MS, help="do_bench rep, ms")
    p.add_argument("--families", type=_families, default=None, help="only these families, e.g. deepseek_v3,random")
    p.add_argument("--quick", action="store_true", help="a smoke test: one cheap shape per family, 4 neighbours")
    p.add_argument("--dry-run", action="store_true", help="print the plan and estimated times; no torch, no GPU")
    p.add_argument("--suffix", default="", help="added to the output file names")
    p.add_argument("--calls", type=_calls, default=PROFILED_CALLS, help="kernels: profiled calls per item")
    p.add_argument("--resume", action="store_true", help="probe: keep the probes already in the file, run the rest")
    p.add_argument(
        "--probe-file",
        type=Path,
        default=None,
        help="time/kernels: skip the items whose probe did not pass in this probe file",
    )
    p.add_argument(
        "--only-ids-from",
        type=Path,
        default=None,
        help="kernels: only the items (ids) of this time-phase file, so a cut time phase is matched",
    )
    return p


def _command(argv: Sequence[str]) -> str:
    return "python -m perfmodel.bench.grouped_gemm " + shlex.join(list(argv))


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _plan_meta(args: argparse.Namespace, info: PlanInfo) -> dict[str, Any]:
    return {
        "seed": args.seed,
        "quick": args.quick,
        "families": list(info.candidates),
        "shapes_candidates": info.candidates,
        "shapes_kept": info.kept,
        "plan_budget_s": info.budget_s,
        "plan_estimated_s": info.estimated_s,
        "g_set": list(G_SET),
        "max_rows_per_group": MAX_ROWS_PER_GROUP,
        "max_total_rows": MAX_TOTAL_ROWS,
        "skew_alphas": list(SKEW_ALPHAS),
        "empty_fraction": EMPTY_FRACTION,
        "fwd_variants": [list(v) for v in FWD_VARIANTS],
        "wgrad_variants": [list(v) for v in WGRAD_VARIANTS],
        "models": [dataclasses.asdict(m) for m in MOE_MODELS],
    }


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if args.phase == "summary":
        if args.out is None:
            raise SystemExit("summary needs --out DIR (the folder with the datasets)")
        print(summarize(args.out, suffix=args.suffix, families=args.families))
        return 0
    budget = args.budget_s if args.budget_s is not None else TIME_BUDGET_S
    plan_budget: float | None = budget if args.phase in ("plan", "time") else TIME_BUDGET_S
    if args.phase == "kernels" and args.only_ids_from is not None:
        plan_budget = None  # the time file says which items ran
    items, neighbours, info = plan_items(
        seed=args.seed,
        budget_s=plan_budget,
        warmup_ms=args.warmup_ms,
        rep_ms=args.rep_ms,
        quick=args.quick,
        families=args.families,
    )
    text = plan_summary(items, neighbours, info, seed=args.seed, warmup_ms=args.warmup_ms, rep_ms=args.rep_ms)
    if args.phase == "plan" or args.dry_run:
        print(text)
        if args.phase == "probe":
            print(f"probes: {len(probe_cases())}")
        if args.phase == "plan" and args.out is not None and not args.dry_run:
            path = args.out / PLAN_FILE.format(suffix=args.suffix)
            path.parent.mkdir(parents=True, exist_ok=True)
            body = {
                "meta": {"command": _command(argv), **_plan_meta(args, info)},
                "items": [i.fields() for i in items],
                "neighbours": [n.fields() for n in neighbours],
            }
            path.write_text(json.dumps(body) + "\n")
            print(f"wrote {path}")
        return 0
    if args.out is None:
        raise SystemExit(f"{args.phase} needs --out DIR")
    require_cuda()
    args.out.mkdir(parents=True, exist_ok=True)
    import torch

    meta = _meta(_command(argv))
    section: dict[str, Any] = {"gpu_state_before": gpu_state(), **_plan_meta(args, info)}
    unsafe: set[tuple[str, str, str, str]] = set()
    wrong: set[tuple[str, str, str, str]] = set()
    if args.probe_file is not None and args.phase in ("time", "kernels"):
        try:
            probe_records = load(args.probe_file).get("records", [])
            unsafe, wrong = unsafe_from_probes(probe_records), wrong_from_probes(probe_records)
        except GroupedGemmError as exc:
            _log(f"{args.phase}: no probe file ({exc}); nothing skipped")
        section["probe_file"] = args.probe_file.name
        section["unsafe_from_probes"] = sorted("_".join(u) for u in unsafe)
        section["wrong_from_probes"] = sorted("_".join(u) for u in wrong)
    if args.phase == "probe":
        path = args.out / PROBE_FILE.format(suffix=args.suffix)
        w = DatasetWriter(path, meta)
        done: set[str] = set()
        if args.resume and path.exists():
            old = load(path)
            w.records = list(old.get("records", []))
            w.meta.setdefault("sections", old.get("meta", {}).get("sections", {}))
            for r in w.records:
                if r.get("status") == "started":  # the process died inside it
                    r.update(status="crashed", error="the process ended during this probe (no Python exception)")
            done = {r["name"] for r in w.records if r.get("op") == "probe"}
        runs = w.meta.setdefault("sections", {}).setdefault("grouped_gemm_probe", {"runs": []})
        runs["op_schemas"] = _op_schemas(torch)
        run_info: dict[str, Any] = {"gpu_state_before": gpu_state(), "resumed_after": len(done)}
        runs["runs"].append(run_info)
        rc = run_probes(w, probe_cases(), done=done, tol={BF16: 1e-2, FP8: 2e-2}, log=_log)
        run_info["gpu_state_after"] = gpu_state()
        run_info["exit"] = rc
        w.flush()
        if rc == PROBE_CRASH_EXIT:  # the CUDA context is dead: leave without torch's teardown (it may abort or hang)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(rc)
        return rc
    if args.phase == "time":
        w = DatasetWriter(args.out / TIME_FILE.format(suffix=args.suffix), meta)
        nw = DatasetWriter(args.out / NB_TIME_FILE.format(suffix=args.suffix), meta)
        w.meta["sections"] = {"grouped_gemm_time": section}
        nw.meta = {**meta, "sections": {"grouped_gemm_time": section}}
        _warm_gpu(torch, 0.0 if args.quick else GPU_WARM_S)
        section.update(
            run_time(
                w,
                nw,
                items,
                neighbours,
                budget_s=budget,
                warmup_ms=args.warmup_ms,
                rep_ms=args.rep_ms,
                unsafe=unsafe,
                wrong=wrong,
                log=_log,
            )
        )
    else:
        if args.only_ids_from is not None:
            keep = {r.get("id") for r in load(args.only_ids_from).get("records", [])}
            nb_path = args.only_ids_from.parent / NB_TIME_FILE.format(suffix=args.suffix)
            try:
                keep_nb = {r.get("id") for r in load(nb_path).get("records", [])}
            except GroupedGemmError:
                keep_nb = {n.id for n in neighbours}
            items = [i for i in items if i.id in keep]
            neighbours = [n for n in neighbours if n.id in keep_nb]
            section["only_ids_from"] = args.only_ids_from.name
        w = DatasetWriter(args.out / KERNELS_FILE.format(suffix=args.suffix), meta)
        nw = DatasetWriter(args.out / NB_KERNELS_FILE.format(suffix=args.suffix), meta)
        w.meta["sections"] = {"grouped_gemm_kernels": section}
        nw.meta = {**meta, "sections": {"grouped_gemm_kernels": section}}
        _warm_gpu(torch, 0.0 if args.quick else GPU_WARM_S)
        kb = KERNELS_BUDGET_S if args.budget_s is None else args.budget_s
        section.update(
            run_kernels(w, nw, items, neighbours, budget_s=kb, calls=args.calls, unsafe=unsafe, wrong=wrong, log=_log)
        )
    section["gpu_state_after"] = gpu_state()
    w.flush()
    nw.flush()
    _log(
        f"{args.phase}: {section['records']}/{len(items)} grouped, {section['neighbour_records']} neighbour records "
        f"in {section['seconds']:.0f} s -> {w.path}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
