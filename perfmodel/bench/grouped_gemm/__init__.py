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

# ruff: noqa: F401  (the old flat module's names stay importable from here; __all__ is its public list)

from __future__ import annotations

from ..dataset import DatasetWriter
from .cli import build_parser, main
from .config import (
    BF16,
    DO_BENCH_HOST_S,
    EMPTY_FRACTION,
    EST_BF16_FLOPS,
    EST_BYTES_PER_S,
    EST_FILL_BYTES_PER_S,
    EST_FP8_FLOPS,
    EST_LAUNCH_S,
    EST_TILE_K,
    EST_TILE_ROWS,
    FAMILIES,
    FLUSH_BYTES,
    FLUSH_S,
    FP8,
    FWD_VARIANTS,
    G_SET,
    GPU_WARM_S,
    KERNELS_BUDGET_S,
    KERNELS_FILE,
    KERNELS_ITEM_OVERHEAD_S,
    KERNELS_SHAPE_OVERHEAD_S,
    KERNELS_STARTUP_S,
    MAX_ITEM_KERNEL_S,
    MAX_ROWS_PER_GROUP,
    MAX_TOTAL_ROWS,
    MIN_REPS,
    MIN_ROWS_PER_GROUP,
    MOE_MODELS,
    NB_KERNELS_FILE,
    NB_TIME_FILE,
    NEIGHBOUR_BIG,
    NEIGHBOUR_FAMILY,
    NEIGHBOUR_PASSES,
    NEIGHBOUR_SCALINGS,
    NEIGHBOURS_4096,
    NEIGHBOURS_VOCAB,
    PADDING_WHY,
    PLAN_FILE,
    PROBE_CRASH_EXIT,
    PROBE_FILE,
    PROFILE_WARMUP_CALLS,
    PROFILED_CALLS,
    QUICK_MAX_KERNEL_S,
    QUICK_NEIGHBOURS,
    QUICK_SHAPES_PER_FAMILY,
    RANDOM_FAMILY,
    RANDOM_FWD_PAIRS,
    RANDOM_G_PER_PAIR,
    RANDOM_KN,
    RANDOM_WGRAD_PAIRS,
    REP_MS,
    REQUIRED_FIELDS,
    SCHEMA_TAG,
    SKEW_ALPHAS,
    TIME_BUDGET_S,
    TIME_FILE,
    TIME_ITEM_OVERHEAD_S,
    TIME_SHAPE_OVERHEAD_S,
    TIME_STARTUP_S,
    WARMUP_MS,
    WGRAD_VARIANTS,
    WRITE_EVERY_S,
    GroupedGemmError,
    Log,
    MoEModel,
)
from .items import (
    GroupedItem,
    NeighbourItem,
    apportion,
    balanced_rows,
    dirichlet_rows,
    empty_rows,
    expected_strides,
    neighbour_items,
    offsets,
    pad_rows,
    pick_empty,
)
from .kernels import parse_kernel_name, run_kernels, split_at_markers, summarize_calls
from .plan import (
    PlanInfo,
    _model_shapes,
    _random_shapes,
    estimate_item_kernel_s,
    estimate_kernels_phase_s,
    estimate_time_phase_s,
    plan_items,
    plan_summary,
)
from .probe import (
    PROBE_G,
    PROBE_K,
    PROBE_N,
    PROBE_ROWS,
    ProbeCase,
    _skip_reason,
    _wrong_probes,
    probe_cases,
    run_probes,
    unsafe_from_probes,
    wrong_from_probes,
)
from .summary import load, summarize, validate_records
from .timing import run_time

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
