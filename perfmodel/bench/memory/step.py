"""One configuration in this process: build, three steps, the allocator's figures and the timed steps
(:func:`run_one`)."""

from __future__ import annotations

import contextlib
import itertools
import statistics
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from .build import _build_lm, _float8, _fsdp, _init_world1, _sac_wrapper
from .config import _MEM_STATS, MemConfig

__all__ = ["run_one"]


def _local_bytes(t: Any) -> int:
    t = t.to_local() if hasattr(t, "to_local") else t
    return int(t.numel() * t.element_size())


def _counted(model: Any, opt: Any) -> dict[str, int]:
    """Bytes of parameters, gradients and optimizer states (local shards), counted tensor by tensor."""
    params = sum(_local_bytes(p) for p in model.parameters())
    grads = sum(_local_bytes(p.grad) for p in model.parameters() if p.grad is not None)
    states = sum(_local_bytes(v) for st in opt.state.values() for v in st.values() if hasattr(v, "numel"))
    n = sum((p.to_local() if hasattr(p, "to_local") else p).numel() for p in model.parameters())
    return {"param_bytes": params, "grad_bytes": grads, "optimizer_state_bytes": states, "param_count": int(n)}


def _mem(torch: Any, device: Any) -> dict[str, Any]:
    if device.type != "cuda":
        return {}
    st = torch.cuda.memory_stats(device)
    return {
        "max_memory_allocated": int(torch.cuda.max_memory_allocated(device)),
        "memory_allocated": int(torch.cuda.memory_allocated(device)),
        "memory_reserved": int(torch.cuda.memory_reserved(device)),
        "max_memory_reserved": int(torch.cuda.max_memory_reserved(device)),
        "stats": {k: int(st.get(k, 0)) for k in _MEM_STATS},
    }


def _inductor(cfg: MemConfig) -> dict[str, Any]:
    """Inductor flags torchtitan sets: ``emulate_precision_casts`` for rowwise float8 (pytorch#150859)."""
    import torch._inductor.config as icfg

    flags = {}
    if cfg.recipe == "rowwise" and hasattr(icfg, "emulate_precision_casts"):
        icfg.emulate_precision_casts = True
        flags["emulate_precision_casts"] = True
    return flags


def _build(torch: Any, cfg: MemConfig, device: Any, shape: Mapping[str, Any], info: dict[str, Any]) -> Callable:
    """Model, optimizer and one training step of ``cfg`` on ``device`` (module doc's order)."""
    import torch.nn.functional as F

    from .._decoder import rope_tables

    fsdp = cfg.mode == "fsdp" and device.type == "cuda"
    with torch.device(device):
        model, dc = _build_lm(torch, shape, cfg.layers, torch.bfloat16 if cfg.mode == "bf16" else torch.float32)
    if cfg.recipe != "bf16":
        info["float8_config"] = _float8(model, cfg)
    for i in range(len(model.layers)):
        if cfg.ac == "full":
            from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

            model.layers[i] = checkpoint_wrapper(model.layers[i], preserve_rng_state=False)
        elif cfg.ac == "selective":
            model.layers[i] = _sac_wrapper(model.layers[i])
        if cfg.compile:
            model.layers[i].compile(fullgraph=True)
    if fsdp:
        info["fsdp_head"] = _fsdp(torch, model, _init_world1(torch, device))
    try:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=device.type == "cuda")
        info["optimizer"] = "AdamW(fused)" if device.type == "cuda" else "AdamW(default)"
    except (RuntimeError, ValueError, TypeError):
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5, foreach=True)
        info["optimizer"] = "AdamW(foreach)"
    precompute = None
    if cfg.fp8_all_gather and fsdp:
        from torchao.float8 import precompute_float8_dynamic_scale_for_fsdp as precompute

    def loss_fn(logits: Any, labels: Any) -> Any:
        return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(0, 1))

    loss = torch.compile(loss_fn) if cfg.compile else loss_fn
    gen = torch.Generator(device=device).manual_seed(0)
    tokens = torch.randint(0, shape["vocab"], (cfg.batch, cfg.seq), device=device, generator=gen)
    labels = torch.randint(0, shape["vocab"], (cfg.batch, cfg.seq), device=device, generator=gen)
    cos, sin = rope_tables(dc, cfg.seq, device)
    amp = cfg.mode == "amp" or (cfg.mode == "fsdp" and not fsdp)  # fsdp on CPU (selftest): autocast instead
    ctx = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) if amp else contextlib.nullcontext

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        with ctx():
            out = loss(model(tokens, cos, sin), labels)
        out.backward()
        opt.step()
        if precompute is not None:
            precompute(model)

    step.model, step.opt = model, opt  # type: ignore[attr-defined]
    return step


def _sync(torch: Any, device: Any) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(torch: Any, device: Any, step: Callable, n: int) -> list[float]:
    """Seconds of ``n`` back-to-back steps (CUDA events between steps; CPU: perf_counter)."""
    out = []
    if device.type == "cuda":
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
        ev[0].record()
        for i in range(n):
            step()
            ev[i + 1].record()
        _sync(torch, device)
        return [a.elapsed_time(b) * 1e-3 for a, b in itertools.pairwise(ev)]
    for _ in range(n):
        t = time.perf_counter()
        step()
        out.append(time.perf_counter() - t)
    return out


def run_one(cfg: MemConfig, *, device: str = "cuda", shape: Mapping[str, Any] | None = None,
            timed_budget_s: float = 4.0, warm_only: bool = False) -> dict[str, Any]:  # fmt: skip
    """Build and train ``cfg`` in this process; the record (``status`` ``ok`` / ``oom`` / ``error``). Never
    raises for a failure of the configuration itself (the record says what failed, and where)."""
    t_start = time.perf_counter()
    import torch

    dev = torch.device(device)
    if dev.type == "cuda":
        dev = torch.device("cuda", dev.index or 0)  # set_device and NCCL need an index
        torch.cuda.set_device(dev)
    shape = dict(shape or cfg.shape())
    rec: dict[str, Any] = {"op": "train_memory", "name": cfg.name, "config": cfg.to_dict(), "shape": shape,
                           "status": "error", "phase": "import", "device": str(dev)}  # fmt: skip
    if dev.type == "cuda":
        rec["gpu"] = {
            "name": torch.cuda.get_device_name(dev),
            "total_memory": torch.cuda.get_device_properties(dev).total_memory,
        }
    info: dict[str, Any] = {}
    rec["info"] = info
    try:
        if cfg.recipe != "bf16" or cfg.fp8_all_gather:
            rec["phase"] = "import torchao"
            import torchao

            info["torchao"] = getattr(torchao, "__version__", None)
        info["inductor_flags"] = _inductor(cfg) if cfg.compile else {}
        rec["phase"] = "build"
        step = _build(torch, cfg, dev, shape, info)
        _sync(torch, dev)
        rec["after_build"] = _mem(torch, dev)
        if dev.type == "cuda":
            torch.cuda.reset_peak_memory_stats(dev)
        rec["phase"] = "step 1"
        t = time.perf_counter()
        step()
        _sync(torch, dev)
        rec["first_step_s"] = time.perf_counter() - t
        rec["after_step1"] = _mem(torch, dev)
        if warm_only:
            rec.update(status="ok", phase="warm")
            return rec
        rec["phase"] = "steps 2-3"
        t = time.perf_counter()
        step()
        step()
        _sync(torch, dev)
        rec["warm_step_wall_s"] = (time.perf_counter() - t) / 2
        rec["after_3_steps"] = _mem(torch, dev)
        rec["counted"] = _counted(step.model, step.opt)
        if dev.type == "cuda":
            torch.cuda.reset_peak_memory_stats(dev)
        n = max(2, min(8, int(timed_budget_s / max(rec["warm_step_wall_s"], 1e-3))))
        rec["phase"] = "timed steps"
        times = _timed(torch, dev, step, n)
        rec["timed"] = _mem(torch, dev)  # peak of the steady timed steps
        med = statistics.median(times)
        rec.update(step_time_s=med, step_time_s_all=times, timed_steps=n, tokens_per_s=cfg.tokens / med)
        rec.update(status="ok", phase="done")
    except torch.OutOfMemoryError as exc:
        rec.update(status="oom", error=str(exc)[:1500], at_oom=_mem(torch, dev))
    except Exception as exc:  # a configuration failing is a record, not a crash
        text = f"{type(exc).__name__}: {exc}"
        oom = "OutOfMemoryError" in text or "CUDA out of memory" in text  # e.g. wrapped by dynamo
        rec.update(status="oom" if oom else "error", error=text[:1500], traceback=traceback.format_exc()[-3000:])
        if dev.type == "cuda":
            rec["at_oom" if oom else "at_error"] = _mem(torch, dev)
    rec["seconds"] = time.perf_counter() - t_start
    return rec
