"""MoE experts: grouped GEMMs (:mod:`perfmodel.moe.grouped`), the routed-expert block fwd+bwd
(:mod:`perfmodel.moe.block`), its float8 decisions (:mod:`perfmodel.moe.decide`) and expert parallelism's
all-to-all estimate (:mod:`perfmodel.moe.comms`).

``pm.moe.grouped_gemm_time_s(group_sizes, K, N, dtype=..., op=..., timing=...)`` prices one
``torch._grouped_mm`` / ``torch._scaled_grouped_mm`` call; see ``docs/moe.md``. The Triton MoE-bench workflow that
``pm.moe`` named before 2026-12-03 lives in :mod:`perfmodel.measured.moe_bench` (Experts never imports Measured):
its old names reached here raise an ``AttributeError`` naming the new path (a lazy forward would make Experts
depend on Measured, which the layering forbids).
"""

from __future__ import annotations

from .block import (
    BlockKernel,
    ExpertBlockTime,
    block_group_sizes,
    expert_block_time,
    expert_block_time_s,
    h200_board,
    skewed_counts,
)
from .comms import AllToAllTime, ep_all_to_all
from .decide import (
    BlockDecision,
    BreakEven,
    block_decision,
    break_even_tokens,
    filter_fn,
    fqns,
    routed_experts_section,
    should_use,
    speedup,
)
from .grouped import (
    GroupedGemmTime,
    KernelConfig,
    balanced_group_sizes,
    grouped_gemm,
    grouped_gemm_time_s,
    grouped_gemm_time_s_balanced,
    roofline_grouped_gemm_time_s,
    size_class,
)

__all__ = [
    "AllToAllTime",
    "BlockDecision",
    "BlockKernel",
    "BreakEven",
    "ExpertBlockTime",
    "GroupedGemmTime",
    "KernelConfig",
    "balanced_group_sizes",
    "block_decision",
    "block_group_sizes",
    "break_even_tokens",
    "ep_all_to_all",
    "expert_block_time",
    "expert_block_time_s",
    "filter_fn",
    "fqns",
    "grouped_gemm",
    "grouped_gemm_time_s",
    "grouped_gemm_time_s_balanced",
    "h200_board",
    "roofline_grouped_gemm_time_s",
    "routed_experts_section",
    "should_use",
    "size_class",
    "skewed_counts",
    "speedup",
]

#: names of the MoE-bench workflow that ``pm.moe`` held before 2026-12-03 (now perfmodel.measured.moe_bench)
_BENCH_NAMES = frozenset(
    {
        "LogEntry",
        "MOE_BATCH_RANGES",
        "add_roofline_cli",
        "batch_series",
        "batches_from_ranges",
        "has_native_mx4",
        "profile_path",
        "read_log_metadata",
        "roofline_chart",
        "run_roofline",
    }
)


def __getattr__(name: str):
    """The old MoE-bench names: a named ``AttributeError`` saying where they live now. Not a forward: Experts never
    imports Measured, not even lazily (``tests/layers.json``; Measured is to import Experts for the bench chart)."""
    if name in _BENCH_NAMES:
        raise AttributeError(
            f"perfmodel.moe.{name} moved: pm.moe is now the grouped-GEMM model (since 2026-12-03); the Triton "
            f"MoE-bench workflow is perfmodel.measured.moe_bench.{name} (from perfmodel.measured import moe_bench)"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
