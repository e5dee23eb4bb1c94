"""The decoder-layer sweep's records: the fields every ``layer`` record carries, the compile modes, step-time
statistics, the kernel classes and per-step kernel summary, and the text table of a dataset (:func:`format_table`).
"""

from __future__ import annotations

import collections
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from .plan import RECIPES, LayerSpec

__all__ = [
    "COMPILE_MODES",
    "RECORD_FIELDS",
    "base_record",
    "format_table",
    "kernel_class",
    "kernel_summary",
    "step_stats",
]


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
    from ..linear import _is_fp8_gemm, _is_gemm

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
