"""Training steps of decoder stacks under FSDP2 or tensor parallelism, built as torchtitan builds them
(run by ``torchrun -m perfmodel.bench.dist train``; the configs are :func:`.dist.train_plan`).

Build order of one config (torchtitan's ``parallelize_llama``)::

    build_stack (fp32 master weights for FSDP; bf16 weights for TP-only, which has no FSDP to cast)
    -> torchao convert_to_float8_training (tensorwise, tensorwise + enable_fsdp_float8_all_gather, rowwise)
    -> TP: parallelize_module per layer (ColwiseParallel wq/wk/wv/w1/w3, RowwiseParallel wo/w2 to
       Shard(1), SequenceParallel norms, PrepareModuleInput Shard(1) -> Replicate; torchao's Float8*
       styles for tensorwise) [async TP: symmetric memory for the group + inductor _micro_pipeline_tp]
    -> AC: checkpoint_wrapper per layer (full AC configs)
    -> layer.compile(fullgraph=True) per layer (default inductor mode)
    -> FSDP: fully_shard per layer (reshard_after_forward=True), then the root;
       MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)
    -> AdamW (fused; foreach if fused is refused)

One step: ``zero_grad(set_to_none)``, ``out = model(x, cos, sin)``, ``out.backward(grad_out)`` (a fixed
random bf16 gradient, no loss head), ``optimizer.step()``, and for float8 all-gather
``precompute_float8_dynamic_scale_for_fsdp(model)``. No gradient clipping, no embedding or output layer.
Inputs: ``x [batch, seq, dim]`` bf16 per rank (FSDP) or the rank's ``seq / world`` slice (TP).

Timing: ``warmup_steps`` steps (the first compiles; its wall time is ``first_step_s``), then
``timed_steps`` back-to-back steps with a CUDA event between consecutive steps (default stream; FSDP
and TP make it wait for their collectives), the element-wise maximum over ranks, median and
20th/80th percentiles. Then, with nothing else changed, ``profile_steps`` steps under torch.profiler
on rank 0 (every rank runs them; a sync and a 20 ms sleep between steps so the steps split at the
largest gaps): the kernel list per step and the communication/compute overlap of
:func:`.dist.steps_overlap`.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import os
import statistics
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ._device import split_steps, summarize_steps
from ._dist_core import DistContext, TrainConfig, gpu_activities, kernel_category, steps_overlap, time_stats
from .linear import _is_fp8_gemm, _is_gemm

__all__ = ["run_train"]

Log = Callable[[str], None]
_STEP_SLEEP_S = 0.02


def _float8_config(cfg: TrainConfig) -> Any:
    from torchao.float8 import Float8LinearConfig

    if cfg.fp8_all_gather:
        return Float8LinearConfig(enable_fsdp_float8_all_gather=True)  # tensorwise + fp8 all-gather
    return Float8LinearConfig.from_recipe_name(cfg.recipe)


def _apply_tp(layers: Any, mesh: Any, float8_tensorwise: bool) -> None:
    """torchtitan's ``apply_tp`` for the transformer blocks (no embedding / output layer here)."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        PrepareModuleInput,
        RowwiseParallel,
        SequenceParallel,
        parallelize_module,
    )

    if float8_tensorwise:  # float8 all-gather of activations in TP (tensorwise only, as torchtitan)
        from torchao.float8.float8_tensor_parallel import (
            Float8ColwiseParallel as colwise,
        )
        from torchao.float8.float8_tensor_parallel import (
            Float8RowwiseParallel as rowwise,
        )
        from torchao.float8.float8_tensor_parallel import (
            PrepareFloat8ModuleInput as prepare,
        )
    else:
        colwise, rowwise, prepare = ColwiseParallel, RowwiseParallel, PrepareModuleInput
    for layer in layers:
        plan = {
            "attention_norm": SequenceParallel(),
            "attention": prepare(input_layouts=(Shard(1), None, None), desired_input_layouts=(Replicate(), None, None)),
            "attention.wq": colwise(),
            "attention.wk": colwise(),
            "attention.wv": colwise(),
            "attention.wo": rowwise(output_layouts=Shard(1)),
            "ffn_norm": SequenceParallel(),
            "feed_forward": prepare(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
            "feed_forward.w1": colwise(),
            "feed_forward.w2": rowwise(output_layouts=Shard(1)),
            "feed_forward.w3": colwise(),
        }
        parallelize_module(layer, mesh, plan)


def _enable_async_tp(mesh: Any) -> None:
    """Symmetric memory for the TP group (torchtitan's ``_maybe_enable_async_tp``), refused unless
    multicast is disabled in the environment. The inductor flag is set by :func:`_inductor_flags`."""
    if os.environ.get("TORCH_SYMM_MEM_DISABLE_MULTICAST") != "1" or os.environ.get("NCCL_NVLS_ENABLE") != "0":
        raise RuntimeError("async TP refused: TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and NCCL_NVLS_ENABLE=0 must be set")
    from torch.distributed._symmetric_memory import enable_symm_mem_for_group

    enable_symm_mem_for_group(mesh.get_group().group_name)


@contextlib.contextmanager
def _inductor_flags(cfg: TrainConfig) -> Iterator[dict[str, Any]]:
    """Inductor settings of a config, restored afterwards: ``emulate_precision_casts`` for rowwise
    (torchtitan sets it, pytorch#150859), ``_micro_pipeline_tp`` for async TP."""
    import torch._inductor.config as icfg

    want: dict[str, Any] = {}
    if cfg.recipe == "rowwise":
        want["emulate_precision_casts"] = True
    if cfg.async_tp:
        want["_micro_pipeline_tp"] = True
    before = {k: getattr(icfg, k) for k in want if hasattr(icfg, k)}
    for k, v in want.items():
        setattr(icfg, k, v)
    try:
        yield want
    finally:
        for k, v in before.items():
            setattr(icfg, k, v)


def _build(ctx: DistContext, cfg: TrainConfig, mesh: Any, *, backend: str, compile_wrap: bool) -> dict[str, Any]:
    """The model, optimizer and step function of ``cfg`` (see the module doc for the order)."""
    torch = ctx.torch
    from ._decoder import build_stack, rope_tables

    fsdp = cfg.parallel == "fsdp"
    with ctx.device:  # construct and initialise on the GPU (a 70B layer is 0.86 G weights: slow on one CPU thread)
        model = build_stack(
            cfg.layer, cfg.n_layers, device=ctx.device, dtype=torch.float32 if fsdp else torch.bfloat16, seed=0
        )
    if cfg.recipe != "bf16":
        from torchao.float8 import convert_to_float8_training

        convert_to_float8_training(model, config=_float8_config(cfg))
    if not fsdp:
        _apply_tp(model.layers, mesh, float8_tensorwise=cfg.recipe == "tensorwise")
        if cfg.async_tp:
            _enable_async_tp(mesh)
    if cfg.ac == "full":
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

        for i in range(len(model.layers)):
            model.layers[i] = checkpoint_wrapper(model.layers[i], preserve_rng_state=False)
    for i in range(len(model.layers)):
        if compile_wrap:
            model.layers[i] = torch.compile(model.layers[i], backend=backend, fullgraph=True)
        else:
            model.layers[i].compile(backend=backend, fullgraph=True)
    if fsdp:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for layer in model.layers:
            fully_shard(layer, mesh=mesh, mp_policy=mp, reshard_after_forward=True)
        fully_shard(model, mesh=mesh, mp_policy=mp, reshard_after_forward=True)
    try:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
        opt_impl = "fused"
    except (RuntimeError, ValueError, TypeError):
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5, foreach=True)
        opt_impl = "foreach"
    precompute = None
    if cfg.fp8_all_gather:
        from torchao.float8 import precompute_float8_dynamic_scale_for_fsdp as precompute

    s_local = cfg.seq // ctx.world if not fsdp else cfg.seq
    gen = torch.Generator(device=ctx.device).manual_seed(1000 + ctx.rank)
    x = torch.randn(cfg.batch, s_local, cfg.layer.dim, device=ctx.device, dtype=torch.bfloat16, generator=gen)
    grad_out = torch.randn(x.shape, device=ctx.device, dtype=torch.bfloat16, generator=gen)
    cos, sin = rope_tables(cfg.layer, cfg.seq, ctx.device)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        out = model(x, cos, sin)
        out.backward(grad_out)
        opt.step()
        if precompute is not None:
            precompute(model)

    return {"model": model, "opt": opt, "step": step, "optimizer": f"AdamW({opt_impl})"}


def _step_times(ctx: DistContext, step: Callable[[], None], n: int) -> tuple[list[float], float]:
    """Per-step seconds of ``n`` back-to-back steps (CUDA events between steps; CPU: perf_counter)
    and the host wall seconds per step."""
    torch = ctx.torch
    ctx.sync()
    t0 = time.perf_counter()
    if ctx.cuda:
        events = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
        events[0].record()
        for i in range(n):
            step()
            events[i + 1].record()
        ctx.sync()
        times = [a.elapsed_time(b) * 1e-3 for a, b in itertools.pairwise(events)]
    else:
        times = []
        for _ in range(n):
            t = time.perf_counter()
            step()
            times.append(time.perf_counter() - t)
    return times, (time.perf_counter() - t0) / n


def _profile(ctx: DistContext, step: Callable[[], None], n: int) -> dict[str, Any] | None:
    """``n`` steps, profiled on rank 0 (CUDA activity), every rank stepping; the kernel summary and
    overlap (rank 0's dict; None on other ranks or without CUDA)."""
    if n <= 0:
        return None
    from torch.profiler import ProfilerActivity, profile

    use = ctx.rank == 0 and ctx.cuda
    cm = profile(activities=[ProfilerActivity.CUDA]) if use else contextlib.nullcontext()
    ctx.sync()
    with cm as prof:
        for _ in range(n):
            step()
            ctx.sync()
            time.sleep(_STEP_SLEEP_S)  # step boundaries = the largest idle gaps
    if not use:
        return None
    steps = split_steps(gpu_activities(prof), n)
    summary = summarize_steps(steps)
    for k in summary["kernels"]:
        k["category"] = kernel_category(k["name"])
    out = steps_overlap(steps)
    out.update(
        profile_steps=len(steps),
        step_kernel_time_s=summary["step_kernel_time_s"],
        kernels_per_step=summary["kernels_per_step"],
        gemm_kernels_per_step=sum(k["calls"] for k in summary["kernels"] if _is_gemm(k["name"])),
        fp8_gemm_kernels_per_step=sum(k["calls"] for k in summary["kernels"] if _is_fp8_gemm(k["name"])),
        kernels=summary["kernels"],
    )
    return out


def _measure(
    ctx: DistContext,
    cfg: TrainConfig,
    mesh: Any,
    *,
    backend: str,
    compile_wrap: bool,
    warmup_steps: int,
    timed_steps: int,
    profile_steps: int,
) -> dict[str, Any]:
    """Build, warm up (compile), time, then profile one config; the record (rank 0's view)."""
    torch = ctx.torch
    from torch._dynamo.utils import counters

    graphs0, breaks0 = counters["stats"]["unique_graphs"], sum(counters["graph_break"].values())
    with _inductor_flags(cfg) as flags:
        t_build = time.perf_counter()
        built = _build(ctx, cfg, mesh, backend=backend, compile_wrap=compile_wrap)
        build_s = time.perf_counter() - t_build
        step, optimizer = built["step"], built["optimizer"]
        ctx.sync()
        after_build = 0.0
        if ctx.cuda:  # the peak of training (and compiling), not of building the unsharded model
            after_build = float(torch.cuda.memory_allocated(ctx.device))
            torch.cuda.reset_peak_memory_stats(ctx.device)
        t = time.perf_counter()
        step()
        ctx.sync()
        first_step_s = time.perf_counter() - t
        for _ in range(max(warmup_steps - 1, 0)):
            step()
        ctx.sync()
        graphs = counters["stats"]["unique_graphs"] - graphs0
        breaks = sum(counters["graph_break"].values()) - breaks0
        ctx.dist.barrier()
        times, wall = _step_times(ctx, step, timed_steps)
        worst = ctx.max_over_ranks(times)
        per_rank = [r[0] for r in ctx.gather_floats([statistics.median(times)])]
        mem = [0.0, 0.0, after_build]
        if ctx.cuda:
            mem[:2] = [
                float(torch.cuda.max_memory_allocated(ctx.device)),
                float(torch.cuda.max_memory_reserved(ctx.device)),
            ]
        mems = ctx.gather_floats(mem)
        prof = _profile(ctx, step, profile_steps)
        del built, step
    stats = time_stats(worst, "step_time_s")
    tokens = cfg.tokens_per_step_per_gpu(ctx.world)
    flops = cfg.flops_per_step_per_gpu(ctx.world)
    rec: dict[str, Any] = {
        "op": "train_step",
        "status": "ok",
        "config": cfg.name,
        "priority": cfg.priority,
        "parallel": cfg.parallel,
        "fsdp_degree": ctx.world if cfg.parallel == "fsdp" else 1,
        "tp_degree": ctx.world if cfg.parallel == "tp" else 1,
        "world_size": ctx.world,
        "layer": cfg.layer_name,
        "dim": cfg.layer.dim,
        "ffn": cfg.layer.ffn,
        "heads": cfg.layer.heads,
        "kv_heads": cfg.layer.kv_heads,
        "head_dim": cfg.layer.head_dim,
        "n_layers": cfg.n_layers,
        "batch": cfg.batch,
        "seq": cfg.seq,
        "recipe": cfg.recipe,
        "fp8_all_gather": cfg.fp8_all_gather,
        "ac": cfg.ac,
        "async_tp": cfg.async_tp,
        "param_dtype": "bf16",
        "master_dtype": "fp32" if cfg.parallel == "fsdp" else "bf16",
        "reduce_dtype": "fp32" if cfg.parallel == "fsdp" else None,
        "reshard_after_forward": True if cfg.parallel == "fsdp" else None,
        "compile": f"per layer, {'torch.compile(layer)' if compile_wrap else 'layer.compile()'}, fullgraph",
        "compile_backend": backend,
        "inductor_flags": flags,
        "optimizer": optimizer,
        **stats,
        "step_time_s_all": worst,
        "step_time_s_per_rank": per_rank,
        "step_wall_time_s": wall,
        "first_step_s": first_step_s,
        "build_s": build_s,
        "dynamo_unique_graphs": graphs,
        "dynamo_graph_breaks": breaks,
        "warmup_steps": warmup_steps,
        "timed_steps": timed_steps,
        "tokens_per_step_per_gpu": tokens,
        "tokens_per_s_per_gpu": tokens / stats["step_time_s"],
        "model_flops_per_step_per_gpu": flops,
        "tflops_per_gpu": flops / stats["step_time_s"] / 1e12,
        "peak_memory_allocated_bytes": [m[0] for m in mems] if ctx.cuda else None,
        "peak_memory_reserved_bytes": [m[1] for m in mems] if ctx.cuda else None,
        "memory_allocated_after_build_bytes": [m[2] for m in mems] if ctx.cuda else None,
    }
    if prof is not None:
        rec.update(prof)
    return rec


def _cleanup(ctx: DistContext) -> None:
    gc.collect()
    if ctx.cuda:
        ctx.torch.cuda.empty_cache()
    ctx.torch._dynamo.reset()


def run_train(
    ctx: DistContext,
    writer: Any,
    configs: Sequence[TrainConfig],
    *,
    t_start: float,
    budget_s: float = 480.0,
    deadline_s: float = 560.0,
    warmup_steps: int = 3,
    timed_steps: int = 10,
    profile_steps: int = 3,
    backend: str = "inductor",
    compile_wrap: bool = False,
    log: Log = print,
) -> dict[str, Any]:
    """Measure the configs in order, sequentially, all ranks together. A config starts only while
    less than ``budget_s`` seconds have passed since ``t_start`` (a ``time.perf_counter()`` value) and
    its estimate ends before ``deadline_s`` (rank 0 decides). A config failing on any rank gives an
    error record (``status`` ``error``) and the sweep goes on. Returns a summary for meta."""
    torch = ctx.torch
    from torch.distributed.device_mesh import init_device_mesh

    dynamo = torch._dynamo
    for name, value in (("cache_size_limit", 64), ("recompile_limit", 64)):
        if hasattr(dynamo.config, name):
            setattr(dynamo.config, name, value)
    meshes = {p: init_device_mesh(ctx.device.type, (ctx.world,), mesh_dim_names=(p,)) for p in ("fsdp", "tp")}
    results: list[dict[str, Any]] = []
    ratios: list[float] = []  # measured / estimated seconds of the configs run so far
    for cfg in configs:
        elapsed = time.perf_counter() - t_start
        # estimates scaled up (never down) by what the configs so far really took
        est = cfg.estimate_s(ctx.world) * max(1.0, statistics.median(ratios) if ratios else 1.0)
        go = ctx.broadcast_flag(elapsed < budget_s and elapsed + est <= deadline_s)
        if not go:
            results.append({"config": cfg.name, "status": "skipped", "at_s": elapsed, "estimate_s": est})
            log(f"train: skip {cfg.name} (at {elapsed:.0f} s, estimate {est:.0f} s)")
            continue
        log(f"train: {cfg.name} starts at {elapsed:.0f} s (estimate {est:.0f} s)")
        t0 = time.perf_counter()
        rec: dict[str, Any] | None = None
        err = ""
        try:
            rec = _measure(
                ctx,
                cfg,
                meshes[cfg.parallel],
                backend=backend,
                compile_wrap=compile_wrap,
                warmup_steps=warmup_steps,
                timed_steps=timed_steps,
                profile_steps=profile_steps,
            )
        except Exception as exc:  # one config failing must not end the sweep
            err = "".join(traceback.format_exception_only(type(exc), exc)).strip()[-1500:]
            log(f"train: {cfg.name} failed on rank {ctx.rank}: {err}")
            if ctx.rank == 0:
                traceback.print_exc()
        _cleanup(ctx)
        ok = ctx.all_true(rec is not None)
        seconds = time.perf_counter() - t0
        ratios.append(seconds / cfg.estimate_s(ctx.world))
        if not ok:
            errors = [None] * ctx.world
            ctx.dist.all_gather_object(errors, err or None)
            rec = {
                "op": "train_step",
                "status": "error",
                "config": cfg.name,
                "priority": cfg.priority,
                "parallel": cfg.parallel,
                "recipe": cfg.recipe,
                "error": next((e for e in errors if e), "failed on another rank"),
                "error_per_rank": errors,
            }
        assert rec is not None
        rec["config_seconds"] = seconds
        if writer is not None:
            writer.add(rec, flush=True)
        results.append({"config": cfg.name, "status": rec["status"], "seconds": seconds, "estimate_s": est})
        if ok:
            log(
                f"train: {cfg.name}: step {rec['step_time_s'] * 1e3:.1f} ms "
                f"(p20 {rec['step_time_s_p20'] * 1e3:.1f}, p80 {rec['step_time_s_p80'] * 1e3:.1f}), "
                f"{rec['tokens_per_s_per_gpu']:.0f} tok/s/GPU, {rec['tflops_per_gpu']:.0f} TFLOP/s/GPU, first step "
                f"{rec['first_step_s']:.0f} s, exposed comm "
                f"{(rec.get('exposed_comm_s') or 0) * 1e3:.1f} ms, {seconds:.0f} s"
            )
    return {
        "results": results,
        "seconds_total": time.perf_counter() - t_start,
        "budget_s": budget_s,
        "deadline_s": deadline_s,
        "warmup_steps": warmup_steps,
        "timed_steps": timed_steps,
        "profile_steps": profile_steps,
        "step_sleep_s_profile": _STEP_SLEEP_S,
        "grad_clip": None,
    }
