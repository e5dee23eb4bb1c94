"""Sweep of one ``nn.Linear(K, N, bias=False)`` fwd+bwd step, bf16 and torchao float8, compiled.

One step is ``y = lin(x); y.backward(grad_out)`` with bf16 weights and inputs, ``x.requires_grad``,
a pre-made ``grad_out`` and every grad set to None first (so no accumulation kernels). The float8
recipes convert the module with ``torchao.float8.convert_to_float8_training`` and
``Float8LinearConfig.from_recipe_name(recipe)``. Everything runs under ``torch.compile`` (default
mode). Per record: the GPU kernels of a step from torch.profiler (per-step sum, median over steps;
each kernel's time and calls per step), and the wall time of a step from CUDA events.

Dataflow of one tensorwise float8 step (torchao/float8/float8_linear.py), for reading the kernel lists::

    fwd:  x_bf16 -> amax -> x_fp8 ;  W_bf16 -> amax -> W_fp8 ;  out = _scaled_mm(x_fp8, W_fp8^T)
    bwd:  g_bf16 -> amax -> g_fp8 ;  grad_input  = _scaled_mm(g_fp8, W_fp8)
                                     grad_weight = _scaled_mm(g_fp8^T, x_fp8)   (reduction over M)

Inductor fuses the casts into a few ``triton_*`` kernels; the GEMMs run in cuBLAS (tensorwise) or
CUTLASS (rowwise).
"""

from __future__ import annotations

import importlib
import re
import statistics
import time
from collections.abc import Callable, Sequence
from itertools import groupby
from typing import Any

from ._device import kernel_times_s, require_cuda, split_steps, summarize_steps
from .dataset import DatasetWriter
from .plan import LinearSpec

__all__ = ["DYNAMIC_MODES", "run_linear"]

Log = Callable[[str], None]
# m: mark M dynamic (one compile per K, N, recipe); auto: torch.compile's default (static first,
# M made dynamic at the first recompile); static: dynamic=False (one compile per record); all: dynamic=True
DYNAMIC_MODES = ("m", "auto", "static", "all")
_COMPILE_DYNAMIC = {"m": None, "auto": None, "static": False, "all": True}


def _configure_dynamo(dynamo: Any) -> None:
    """Room for one compiled graph per shape and recipe (defaults would fall back to eager)."""
    cfg = dynamo.config
    for name in ("cache_size_limit", "recompile_limit"):
        if hasattr(cfg, name):
            setattr(cfg, name, 1024)
    for name in ("accumulated_cache_size_limit", "accumulated_recompile_limit"):
        if hasattr(cfg, name):
            setattr(cfg, name, 4096)


def _make_module(torch: Any, K: int, N: int, recipe: str) -> Any:
    model = torch.nn.Sequential(torch.nn.Linear(K, N, bias=False, device="cuda", dtype=torch.bfloat16))
    if recipe != "bf16":
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training

        convert_to_float8_training(model, config=Float8LinearConfig.from_recipe_name(recipe))
    return model


def _is_fp8_gemm(name: str) -> bool:
    """cuBLAS fp8 kernels on sm90 are ``nvjet_sm90_q...`` (``qq``: e4m3 x e4m3, ``qr``: e4m3 x e5m2);
    CUTLASS ones name their element types."""
    low = name.lower()
    if low.startswith("triton"):
        return False
    return re.match(r"nvjet_sm\d+_q", low) is not None or any(t in low for t in ("e4m3", "e5m2", "float8"))


def _is_gemm(name: str) -> bool:
    low = name.lower()
    return not low.startswith("triton") and any(t in low for t in ("gemm", "cutlass", "xmma", "sm90", "nvjet"))


def _measure(
    torch: Any,
    dynamo: Any,
    model: Any,
    compiled: Any,
    spec: LinearSpec,
    dynamic: str,
    warmup_steps: int,
    profile_steps: int,
    event_steps: int,
) -> dict[str, Any]:
    """One record: first step (compiles), warm-up, profiled steps, CUDA-event-timed steps."""
    from torch.profiler import ProfilerActivity, profile

    x = torch.randn(spec.M, spec.K, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    grad_out = torch.randn(spec.M, spec.N, device="cuda", dtype=torch.bfloat16)
    if dynamic == "m":
        dynamo.maybe_mark_dynamic(x, 0)

    def step() -> None:
        x.grad = None
        model.zero_grad(set_to_none=True)
        compiled(x).backward(grad_out)

    torch.cuda.synchronize()
    ts = time.perf_counter()
    step()
    torch.cuda.synchronize()
    first_step_s = time.perf_counter() - ts
    for _ in range(warmup_steps):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(profile_steps):
            step()
            torch.cuda.synchronize()
            time.sleep(0.003)  # step boundaries = the largest idle gaps (split_steps)
    summary = summarize_steps(split_steps(kernel_times_s(prof), profile_steps))
    walls = []
    for _ in range(event_steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        torch.cuda.synchronize()
        walls.append(start.elapsed_time(end) * 1e-3)
    kernel_s = summary["step_kernel_time_s"]
    return {
        "op": "linear",
        "M": spec.M,
        "K": spec.K,
        "N": spec.N,
        "recipe": spec.recipe,
        "compiled": True,
        "compile_mode": "default",
        "dynamic": dynamic,
        "step_kernel_time_s": kernel_s,
        "step_kernel_time_s_all": summary["step_kernel_time_s_all"],
        "step_wall_time_s": statistics.median(walls),
        "step_wall_time_s_all": walls,
        "first_step_s": first_step_s,
        "kernels_per_step": summary["kernels_per_step"],
        "gemm_kernels_per_step": sum(k["calls"] for k in summary["kernels"] if _is_gemm(k["name"])),
        "fp8_gemm_kernels_per_step": sum(k["calls"] for k in summary["kernels"] if _is_fp8_gemm(k["name"])),
        "tflops_kernel": spec.flops / kernel_s / 1e12 if kernel_s else None,
        "kernels": summary["kernels"],
    }


def run_linear(
    writer: DatasetWriter,
    specs: Sequence[LinearSpec],
    *,
    dynamic: str = "m",
    budget_s: float = 300.0,
    warmup_steps: int = 2,
    profile_steps: int = 5,
    event_steps: int = 5,
    log: Log = print,
) -> dict[str, Any]:
    """Measure every spec, one compile per (K, N, recipe) group when ``dynamic="m"``; stop starting
    new groups once ``budget_s`` is spent. Returns a summary (compile seconds per group) for meta."""
    if dynamic not in DYNAMIC_MODES:
        raise ValueError(f"dynamic must be one of {', '.join(DYNAMIC_MODES)}, got {dynamic!r}")
    torch = require_cuda()
    dynamo = importlib.import_module("torch._dynamo")
    _configure_dynamo(dynamo)
    torch.manual_seed(0)
    t0 = time.perf_counter()
    groups = []
    truncated = False
    for (K, N, recipe), items in groupby(specs, key=lambda s: (s.K, s.N, s.recipe)):
        items = list(items)
        if time.perf_counter() - t0 > budget_s:
            truncated = True
            log(f"linear: budget {budget_s:.0f}s spent; skipping K={K} N={N} {recipe} and the rest")
            break
        dynamo.reset()
        group: dict[str, Any] = {"K": K, "N": N, "recipe": recipe, "dynamic": dynamic, "first_step_s": []}
        try:
            model = _make_module(torch, K, N, recipe)
            compiled = torch.compile(model, dynamic=_COMPILE_DYNAMIC[dynamic])
            for spec in items:
                rec = _measure(torch, dynamo, model, compiled, spec, dynamic, warmup_steps, profile_steps, event_steps)
                group["first_step_s"].append(rec["first_step_s"])
                group.setdefault("step_wall_time_s", []).append(rec["step_wall_time_s"])
                writer.add(rec, flush=True)
                log(
                    f"linear: M={spec.M} K={K} N={N} {recipe:>18}: kernels {rec['step_kernel_time_s'] * 1e3:7.3f}"
                    f" ms, wall {rec['step_wall_time_s'] * 1e3:7.3f} ms, first step {rec['first_step_s']:5.1f} s,"
                    f" {len(rec['kernels'])} kernels, {rec['fp8_gemm_kernels_per_step']:.0f} fp8 GEMMs"
                )
        except Exception as exc:  # one recipe failing to compile must not end the sweep
            group["error"] = f"{type(exc).__name__}: {str(exc)[:500]}"
            log(f"linear: K={K} N={N} {recipe} failed: {group['error']}")
        if group["first_step_s"]:
            group["compile_s_estimate"] = group["first_step_s"][0] - group["step_wall_time_s"][0]
        groups.append(group)
        model = compiled = None
        torch.cuda.empty_cache()
    return {
        "groups": groups,
        "truncated": truncated,
        "seconds_total": time.perf_counter() - t0,
        "warmup_steps": warmup_steps,
        "profile_steps": profile_steps,
        "event_steps": event_steps,
    }
