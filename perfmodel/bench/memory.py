"""Peak memory and step time of real training steps on one GPU, to check :func:`perfmodel.train.estimate`'s
``memory`` / ``fits`` against the CUDA caching allocator (issue 34, item 1).

``python -m perfmodel.bench.memory {plan,warm,run,one,selftest} --out DIR --deadline-s S``

* ``plan``: the configurations in priority order with the estimate's peak memory and step (no torch).
* ``run``: each configuration in its own subprocess (``one``), in order, until the deadline; an OOM, a crash
  or a timeout is a record and the sweep goes on. Writes ``DIR/memory.json`` after every record.
* ``warm``: compiles the ``compile=True`` configurations, several processes at once, so that ``run`` finds
  inductor's cache warm (same ``TORCHINDUCTOR_CACHE_DIR``); nothing it measures is kept.
* ``one --config NAME``: one configuration in this process; prints one JSON record (last stdout line).
* ``selftest``: a tiny model through every code path, on CPU or GPU (no FSDP on CPU).

The model (torchtitan's Llama, :mod:`._decoder` layers): token embedding ``vocab x dim``, ``layers`` decoder
layers, final RMSNorm, untied output Linear ``dim -> vocab`` (kept bf16 by the float8 filter, as torchtitan),
loss ``F.cross_entropy(logits.flatten(0, 1).float(), labels)`` (torchtitan's; compiled with the model when
``compile``). Build order (torchtitan's ``parallelize_llama``): float8 conversion -> activation checkpointing per
layer -> ``layer.compile(fullgraph=True)`` -> FSDP2 ``fully_shard`` (embedding, each layer, ``[norm, output]``,
root; ``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)``, fp32 parameters; the last layer and
the head keep their weights after forward) -> fused AdamW (fp32 states).

Modes: ``fsdp`` — FSDP2 on a world of 1 (what ``estimate`` assumes); ``amp`` — plain single GPU, fp32
parameters and gradients under ``torch.autocast(bf16)``; ``bf16`` — plain single GPU, bf16 parameters,
gradients and AdamW states. ``ac``: ``none``; ``selective`` — torchtitan's op-level SAC (saves matmul,
attention, ``_scaled_mm`` and ``max`` outputs, recomputes every second ``mm``); ``full`` — every layer
checkpointed (``checkpoint_wrapper``).

Measured per record (after three steps): ``torch.cuda.max_memory_allocated`` over those steps (reset after the
build), ``memory_reserved`` / ``max_memory_reserved``, ``memory_stats`` key figures, the memory after the
build and after step 1, the steady peak of the timed steps, the bytes of parameters / gradients / optimizer
states counted tensor by tensor, the step time (median of CUDA-event-timed steps) and tokens/s. An OOM record
keeps the allocator's figures at the failure and its message.

torch is imported inside functions only: ``plan`` and the tests of the subprocess logic touch no GPU.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fnmatch
import itertools
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import PerfModelError

__all__ = [
    "AC_MODES",
    "MODES",
    "PLAN",
    "RECIPES",
    "SHAPES",
    "MemConfig",
    "estimate_kwargs",
    "estimate_record",
    "get_config",
    "main",
    "run_configs",
    "run_one",
    "select",
]

MODES = ("fsdp", "amp", "bf16")
AC_MODES = ("none", "selective", "full")
RECIPES = ("bf16", "tensorwise", "rowwise")
#: Llama-style shapes that are not perfmodel presets: dim, ffn, heads, kv_heads, head_dim, vocab, rope theta
#: (Llama 3.2 1B: huggingface.co/meta-llama/Llama-3.2-1B config.json; its embedding is tied, ours is not)
SHAPES: dict[str, dict[str, Any]] = {
    "llama3.2-1b": dict(
        dim=2048, ffn=8192, heads=32, kv_heads=8, head_dim=64, vocab=128256, layers=16, rope_theta=500000.0
    ),
}
_MEM_STATS = (
    "allocated_bytes.all.peak",
    "active_bytes.all.peak",
    "reserved_bytes.all.peak",
    "requested_bytes.all.peak",
    "inactive_split_bytes.all.peak",
    "allocated_bytes.all.current",
    "reserved_bytes.all.current",
    "num_alloc_retries",
    "num_ooms",
    "num_device_alloc",
    "num_device_free",
    "num_sync_all_streams",
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class MemConfig:
    """One training configuration on one GPU (sizes in tokens and layers; see the module doc)."""

    name: str
    model: str  # a perfmodel preset (Llama-style) or a key of SHAPES
    layers: int
    seq: int
    batch: int
    ac: str = "none"
    mode: str = "fsdp"
    recipe: str = "bf16"
    fp8_all_gather: bool = False
    compile: bool = False
    vocab: int | None = None  # None: the model's
    expect: str = ""  # "oom" / "near": chosen to test est.fits at the GPU's limit
    note: str = ""

    def __post_init__(self) -> None:
        for field, value, valid in (
            ("mode", self.mode, MODES),
            ("ac", self.ac, AC_MODES),
            ("recipe", self.recipe, RECIPES),
        ):
            if value not in valid:
                raise PerfModelError(f"MemConfig {self.name}: {field}={value!r}; valid: {', '.join(valid)}")
        if self.fp8_all_gather and (self.recipe != "tensorwise" or self.mode != "fsdp"):
            raise PerfModelError(f"MemConfig {self.name}: fp8_all_gather needs recipe='tensorwise' and mode='fsdp'")
        for field in ("layers", "seq", "batch"):
            v = getattr(self, field)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise PerfModelError(f"MemConfig {self.name}: {field} must be a positive int, got {v!r}")

    @property
    def tokens(self) -> int:
        return self.seq * self.batch

    def shape(self) -> dict[str, Any]:
        """dim, ffn, heads, kv_heads, head_dim, vocab, rope_theta of the model (vocab overridden by ``vocab``)."""
        if self.model in SHAPES:
            s = dict(SHAPES[self.model])
        else:
            from ..presets import get_preset

            p = get_preset(self.model)
            lay = p.layer
            if lay is None or lay.activation != "swiglu" or lay.norm != "rmsnorm" or not lay.rope:
                raise PerfModelError(f"{self.model}: not a Llama-style preset (RMSNorm, SwiGLU, RoPE); use one that is")
            head = [lin.out_features for lin in p.linears if lin.layers == 1 and lin.name in ("lm_head", "output")]
            s = dict(
                dim=lay.hidden,
                ffn=lay.ffn,
                heads=lay.heads,
                kv_heads=lay.kv_heads or lay.heads,
                head_dim=lay.head_dim or lay.hidden // lay.heads,
                vocab=head[0] if head else 0,
                layers=p.layers,
                rope_theta=500000.0,
            )
        if self.vocab is not None:
            s["vocab"] = self.vocab
        return s

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "vocab": self.shape()["vocab"], "tokens": self.tokens}


def _c(name: str, model: str, layers: int, seq: int, batch: int, **kw: Any) -> MemConfig:
    return MemConfig(name=name, model=model, layers=layers, seq=seq, batch=batch, **kw)


_8B, _70B = "llama3-8b", "llama3-70b"
#: priority order (most valuable first): the estimate's own setup (FSDP2, world 1) across AC modes and shapes,
#: float8 with and without float8 all-gather, the configurations at the GPU's limit, compile, then the rest.
PLAN: tuple[MemConfig, ...] = (
    _c("fsdp_8b_L2_s8k_b1_none", _8B, 2, 8192, 1),
    _c("fsdp_8b_L2_s8k_b1_full", _8B, 2, 8192, 1, ac="full"),
    _c("fsdp_8b_L2_s8k_b1_sel", _8B, 2, 8192, 1, ac="selective"),
    _c("fsdp_70b_L1_s8k_b1_none", _70B, 1, 8192, 1),
    _c("fsdp_8b_L4_s8k_b2_none", _8B, 4, 8192, 2),
    _c("fsdp_8b_L4_s8k_b2_none_tw", _8B, 4, 8192, 2, recipe="tensorwise"),
    _c("fsdp_8b_L4_s8k_b2_none_tw_fp8ag", _8B, 4, 8192, 2, recipe="tensorwise", fp8_all_gather=True),
    _c("fsdp_8b_L4_s8k_b8_none_oom", _8B, 4, 8192, 8, expect="oom", note="estimate 126 GiB: above 95 % of the GPU"),
    _c("fsdp_8b_L4_s8k_b6_none_near", _8B, 4, 8192, 6, expect="near", note="estimate 104 GiB; fp32 loss adds more"),
    _c("fsdp_8b_L2_s8k_b1_none_compile", _8B, 2, 8192, 1, compile=True),
    _c("fsdp_8b_L2_s8k_b1_sel_compile", _8B, 2, 8192, 1, ac="selective", compile=True),
    _c("amp_8b_L4_s8k_b2_none", _8B, 4, 8192, 2, mode="amp"),
    _c("fsdp_1b_L16_s8k_b2_sel", "llama3.2-1b", 16, 8192, 2, ac="selective"),
    _c("fsdp_70b_L1_s8k_b4_none_near", _70B, 1, 8192, 4, expect="near", note="estimate 102 GiB; fp32 loss adds more"),
    _c("fsdp_8b_L4_s8k_b2_none_rw", _8B, 4, 8192, 2, recipe="rowwise"),
    _c("fsdp_8b_L2_s8k_b1_none_tw_compile", _8B, 2, 8192, 1, recipe="tensorwise", compile=True),
    _c("fsdp_8b_L4_s8k_b2_full_tw_fp8ag", _8B, 4, 8192, 2, ac="full", recipe="tensorwise", fp8_all_gather=True),
    _c("fsdp_70b_L1_s8k_b1_full_tw_fp8ag", _70B, 1, 8192, 1, ac="full", recipe="tensorwise", fp8_all_gather=True),
    _c("fsdp_qwen7b_L2_s8k_b2_none", "qwen2.5-7b", 2, 8192, 2),
    _c("amp_8b_L4_s8k_b2_none_tw", _8B, 4, 8192, 2, mode="amp", recipe="tensorwise"),
    _c("bf16_8b_L4_s8k_b2_none", _8B, 4, 8192, 2, mode="bf16"),
    _c("fsdp_8b_L4_s4k_b4_full", _8B, 4, 4096, 4, ac="full"),
    _c("fsdp_8b_L4_s8k_b8_full_near", _8B, 4, 8192, 8, ac="full", expect="near", note="full AC: logits dominate"),
    _c("fsdp_70b_L2_s8k_b2_full_near", _70B, 2, 8192, 2, ac="full", expect="near"),
    _c("fsdp_8b_L2_s8k_b1_none_tw", _8B, 2, 8192, 1, recipe="tensorwise", note="eager pair of the compiled one"),
    _c("fsdp_8b_L2_s8k_b1_none_rw_compile", _8B, 2, 8192, 1, recipe="rowwise", compile=True),
    # compiled steps as torchtitan runs them: float8 all-gather against its pair, and stacks where the loss moment
    # (not the end of backward) is the compiled peak
    _c("fsdp_8b_L4_s8k_b2_none_compile", _8B, 4, 8192, 2, compile=True),
    _c("fsdp_8b_L4_s8k_b2_none_tw_compile", _8B, 4, 8192, 2, recipe="tensorwise", compile=True),
    _c(
        "fsdp_8b_L4_s8k_b2_none_tw_fp8ag_compile",
        _8B,
        4,
        8192,
        2,
        recipe="tensorwise",
        fp8_all_gather=True,
        compile=True,
    ),
    _c("fsdp_8b_L4_s8k_b4_sel_compile", _8B, 4, 8192, 4, ac="selective", compile=True),
    _c("fsdp_70b_L1_s8k_b2_none_tw_compile", _70B, 1, 8192, 2, recipe="tensorwise", compile=True),
    _c(
        "fsdp_70b_L1_s8k_b2_none_tw_fp8ag_compile",
        _70B,
        1,
        8192,
        2,
        recipe="tensorwise",
        fp8_all_gather=True,
        compile=True,
    ),
)
#: the tiny model ``selftest`` runs (dim 128, vocab 256; 361 088 parameters with 2 layers)
SELFTEST_SHAPE = dict(dim=128, ffn=256, heads=2, kv_heads=1, head_dim=64, vocab=256, layers=2, rope_theta=10000.0)


def get_config(name: str, plan: Sequence[MemConfig] = PLAN) -> MemConfig:
    """The plan's configuration called ``name`` (raises :class:`PerfModelError` listing the valid names)."""
    for cfg in plan:
        if cfg.name == name:
            return cfg
    raise PerfModelError(f"no memory configuration {name!r}; valid: {', '.join(c.name for c in plan)}")


def select(patterns: str, plan: Sequence[MemConfig] = PLAN) -> list[MemConfig]:
    """The configurations whose names match one of the comma-separated shell ``patterns`` (empty: all), in
    plan order. A pattern that matches none raises :class:`PerfModelError`."""
    pats = [p.strip() for p in patterns.split(",") if p.strip()]
    if not pats:
        return list(plan)
    for p in pats:
        if not any(fnmatch.fnmatchcase(c.name, p) for c in plan):
            raise PerfModelError(f"pattern {p!r} matches no configuration; valid: {', '.join(c.name for c in plan)}")
    return [c for c in plan if any(fnmatch.fnmatchcase(c.name, p) for p in pats)]


# ---- the estimate's side (pure) ------------------------------------------------------------------


def estimate_kwargs(record: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments of :func:`perfmodel.train.estimate` for a record (or ``MemConfig.to_dict()``): one
    H200, ``n_gpus=1`` (FSDP2 on a world of 1 is the estimate's own setup; ``amp`` and ``bf16`` runs are
    mapped to the same call, so their gap is what plain single-GPU training changes), the preset or its
    :class:`~perfmodel.presets.LayerShape`, layers, seq_len, batch, recipe, float8 all-gather, AC and vocab."""
    cfg = record.get("config", record)
    model: Any = cfg["model"]
    if model in SHAPES:
        from ..presets import LayerShape

        s = SHAPES[model]
        model = LayerShape(name=model, hidden=s["dim"], ffn=s["ffn"], heads=s["heads"], kv_heads=s["kv_heads"],
                           head_dim=s["head_dim"])  # fmt: skip
    return dict(
        model=model,
        gpu="H200",
        n_gpus=1,
        seq_len=int(cfg["seq"]),
        batch_per_gpu=int(cfg["batch"]),
        recipe=cfg["recipe"],
        float8_all_gather=bool(cfg["fp8_all_gather"]),
        ac=cfg["ac"],
        layers=int(cfg["layers"]),
        vocab=int(cfg["vocab"]),
    )


def estimate_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """What :func:`perfmodel.train.estimate` says for the record (peak bytes by part, fits, step seconds), or
    ``{"error": ...}`` when it refuses the configuration."""
    from ..train import estimate

    try:
        est = estimate(**estimate_kwargs(record))
    except PerfModelError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {
        "memory_bytes": float(est.memory_bytes),
        "memory": {k: float(v) for k, v in est.memory.items()},
        "fits": bool(est.fits),
        "step_s": float(est.step_s),
        "tokens_per_s_per_gpu": float(est.tokens_per_s_per_gpu),
    }


# ---- one configuration (GPU, or CPU for selftest) ------------------------------------------------


def _init_world1(torch: Any, device: Any) -> Any:
    """A process group of one rank (env ``MASTER_ADDR=127.0.0.1``, a free port) and its 1-D mesh."""
    import socket

    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    if not dist.is_initialized():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
        if device.type == "cuda":
            dist.init_process_group("nccl", rank=0, world_size=1, device_id=device)
        else:
            dist.init_process_group("gloo", rank=0, world_size=1)
    return init_device_mesh(device.type, (1,), mesh_dim_names=("fsdp",))


def _sac_wrapper(module: Any) -> Any:
    """torchtitan's op-level selective AC: save matmul / attention / ``_scaled_mm`` / ``max`` outputs, except
    every second ``mm`` (counted separately in forward and recompute)."""
    from collections import defaultdict
    from functools import partial

    import torch
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    aten = torch.ops.aten
    names = ("mm", "_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention",
             "_scaled_dot_product_cudnn_attention", "_scaled_mm", "max")  # fmt: skip
    save = {getattr(aten, n).default for n in names if hasattr(aten, n)}
    if hasattr(torch.ops, "_c10d_functional"):
        save.add(torch.ops._c10d_functional.reduce_scatter_tensor.default)

    def policy(meta: dict[str, int], ctx: Any, func: Any, *args: Any, **kwargs: Any) -> Any:
        key = f"{'recompute' if ctx.is_recompute else 'forward'}_mm_count"
        if func == aten.mm.default:
            meta[key] += 1
        keep = func in save and not (func == aten.mm.default and meta[key] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE

    def context_fn() -> Any:
        return create_selective_checkpoint_contexts(partial(policy, defaultdict(int)))

    return checkpoint_wrapper(module, context_fn=context_fn, preserve_rng_state=False)


def _build_lm(torch: Any, shape: Mapping[str, Any], layers: int, dtype: Any) -> Any:
    """Embedding, ``layers`` decoder layers (:mod:`._decoder`), final norm, output Linear (module doc)."""
    from torch import nn

    from ._decoder import DecoderConfig, build_layer

    dc = DecoderConfig(dim=shape["dim"], ffn=shape["ffn"], heads=shape["heads"], kv_heads=shape["kv_heads"],
                       head_dim=shape["head_dim"], rope_theta=shape["rope_theta"])  # fmt: skip
    dev = torch.get_default_device()

    class LM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok_embeddings = nn.Embedding(shape["vocab"], dc.dim)
            self.layers = nn.ModuleList(build_layer(dc, device=dev, dtype=dtype, seed=i) for i in range(layers))
            self.norm = type(self.layers[0].attention_norm)(dc.dim, dc.norm_eps)
            self.output = nn.Linear(dc.dim, shape["vocab"], bias=False)

        def forward(self, tokens: Any, cos: Any, sin: Any) -> Any:
            h = self.tok_embeddings(tokens)
            for layer in self.layers:
                h = layer(h, cos, sin)
            return self.output(self.norm(h))

    model = LM()
    nn.init.normal_(model.tok_embeddings.weight, std=0.02)
    nn.init.normal_(model.output.weight, std=dc.dim**-0.5)
    return model.to(dtype=dtype), dc


def _float8(model: Any, cfg: MemConfig) -> str:
    """torchao's ``convert_to_float8_training`` on every decoder Linear (the output layer stays bf16)."""
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    if cfg.fp8_all_gather:
        f8 = Float8LinearConfig(enable_fsdp_float8_all_gather=True)
    else:
        f8 = Float8LinearConfig.from_recipe_name(cfg.recipe)
    convert_to_float8_training(model, config=f8, module_filter_fn=lambda mod, fqn: fqn != "output")
    return repr(f8)[:600]


def _fsdp(torch: Any, model: Any, mesh: Any) -> str:
    """torchtitan's FSDP2 wrapping; returns how the head was grouped."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    kw = dict(mesh=mesh, mp_policy=mp)
    fully_shard(model.tok_embeddings, **kw, reshard_after_forward=True)
    n = len(model.layers)
    for i, layer in enumerate(model.layers):
        fully_shard(layer, **kw, reshard_after_forward=i < n - 1)
    try:
        fully_shard([model.norm, model.output], **kw, reshard_after_forward=False)
        head = "fully_shard([norm, output], reshard_after_forward=False)"
    except (TypeError, ValueError, AssertionError):
        fully_shard(model.output, **kw, reshard_after_forward=False)
        head = "fully_shard(output, reshard_after_forward=False) (a list was refused)"
    fully_shard(model, **kw)
    return head


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

    from ._decoder import rope_tables

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


# ---- the sweep: one subprocess per configuration ---------------------------------------------------


def _child_cmd(cfg: MemConfig, extra: Sequence[str] = ()) -> list[str]:
    return [sys.executable, "-m", "perfmodel.bench.memory", "one", "--config", cfg.name, *extra]


def _last_json(text: str) -> dict[str, Any] | None:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


def _spawn(cmd: Sequence[str], timeout_s: float) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """Run ``cmd``; its JSON record (last stdout line starting ``{``) and how it ended."""
    t = time.perf_counter()
    try:
        p = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout_s)
        how = {"rc": p.returncode, "stderr_tail": p.stderr[-2500:], "wall_s": time.perf_counter() - t}
        return _last_json(p.stdout), how
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        return None, {"rc": None, "timeout_s": timeout_s, "stderr_tail": err[-2500:], "wall_s": time.perf_counter() - t}


def _expected_s(cfg: MemConfig, warmed: bool) -> float:
    """A guess of one configuration's wall seconds (process start, build, steps; compile cold or warm)."""
    return 14.0 + (0 if not cfg.compile else (15.0 if warmed else 60.0)) + (6.0 if cfg.model == _70B else 0.0)


def run_configs(
    configs: Sequence[MemConfig],
    *,
    deadline_s: float,
    write: Callable[[dict[str, Any]], None],
    child_cmd: Callable[[MemConfig], list[str]] = _child_cmd,
    cap_s: float = 150.0,
    warmed: bool = False,
    estimate: bool = True,
    clock: Callable[[], float] = time.perf_counter,
    log: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Each configuration in its own subprocess, in order. One starts only if its guessed seconds fit before
    ``deadline_s`` (seconds from now); each is killed at ``min(cap_s, time left)``. Every configuration gives
    a record passed to ``write``: the child's (``ok`` / ``oom`` / ``error``), or ``crash`` (no record, rc),
    ``timeout``, ``skipped``. ``estimate``: add :func:`estimate_record` to each."""
    t0 = clock()
    out = []
    for cfg in configs:
        left = deadline_s - (clock() - t0)
        base = {"op": "train_memory", "name": cfg.name, "config": cfg.to_dict()}
        guess = _expected_s(cfg, warmed)
        if guess > left:
            rec = {**base, "status": "skipped", "why": f"{left:.0f} s left, guessed {guess:.0f} s"}
        else:
            log(f"memory: {cfg.name} starts ({left:.0f} s left)")
            child, how = _spawn(child_cmd(cfg), max(1.0, min(cap_s, left)))
            if child is not None:
                rec = {**base, **child}
            elif how["rc"] is None:
                rec = {**base, "status": "timeout"}
            else:
                rec = {**base, "status": "crash"}
            rec["process"] = how
        if estimate:
            rec["estimate"] = estimate_record(rec)
        out.append(rec)
        write(rec)
        log(f"memory: {cfg.name}: {_line(rec)}")
    return out


def _line(rec: Mapping[str, Any]) -> str:
    gib = 2.0**30
    peak = (rec.get("after_3_steps") or rec.get("at_oom") or {}).get("max_memory_allocated")
    est = (rec.get("estimate") or {}).get("memory_bytes")
    parts = [rec.get("status", "?")]
    if peak:
        parts.append(f"peak {peak / gib:.1f} GiB")
    if est:
        parts.append(f"estimate {est / gib:.1f} GiB")
    if rec.get("step_time_s"):
        parts.append(f"step {rec['step_time_s'] * 1e3:.0f} ms, {rec['tokens_per_s']:,.0f} tok/s")
    if rec.get("error"):
        parts.append(str(rec["error"])[:160])
    return "; ".join(parts)


def warm(
    configs: Sequence[MemConfig],
    *,
    deadline_s: float,
    parallel: int = 2,
    child_cmd: Callable[[MemConfig, Sequence[str]], list[str]] = _child_cmd,
    min_left_s: float = 45.0,
) -> list[dict[str, Any]]:
    """Compile the ``compile`` configurations ``parallel`` at a time (``one --warm-only``) so that a later
    ``run`` finds inductor's cache warm. A batch starts only with ``min_left_s`` left; every process still
    alive at the deadline, or when this function is left by an exception (SIGTERM: see :func:`main`), is
    killed. Returns how each ended."""
    todo = [c for c in configs if c.compile]
    t0 = time.perf_counter()
    results: list[dict[str, Any]] = []
    live: list[subprocess.Popen] = []
    try:
        for i in range(0, len(todo), parallel):
            if deadline_s - (time.perf_counter() - t0) < min_left_s:
                results += [{"name": c.name, "status": "skipped"} for c in todo[i:]]
                break
            batch = todo[i : i + parallel]
            live = [subprocess.Popen(child_cmd(c, ["--warm-only"]), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True) for c in batch]  # fmt: skip
            for c, p in zip(batch, live, strict=True):
                results.append(_collect(c, p, max(1.0, deadline_s - (time.perf_counter() - t0))))
    finally:
        for p in live:
            if p.poll() is None:
                p.kill()
    return results


def _collect(cfg: MemConfig, p: subprocess.Popen, timeout_s: float) -> dict[str, Any]:
    """How one warm-up process ended (killed after ``timeout_s``)."""
    try:
        so, se = p.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        return {"name": cfg.name, "status": "timeout", "timeout_s": timeout_s}
    rec = _last_json(so) or {}
    return {"name": cfg.name, "status": rec.get("status", "crash"), "rc": p.returncode,
            "first_step_s": rec.get("first_step_s"), "error": rec.get("error"), "stderr_tail": se[-800:]}  # fmt: skip


def _versions() -> dict[str, Any]:
    """torch / triton / torchao as this process imported them (torchao: its import error, if any)."""
    import torch

    out: dict[str, Any] = {"torch": torch.__version__, "cuda": torch.version.cuda}
    for name in ("triton", "torchao"):
        try:
            out[name] = getattr(__import__(name), "__version__", "?")
        except Exception as exc:
            out[name] = f"import failed: {type(exc).__name__}: {exc}"[:300]
    return out


# ---- files and meta ------------------------------------------------------------------------------


def _smi() -> str | None:
    try:
        q = "--query-gpu=name,uuid,driver_version,memory.total,clocks.max.sm,power.limit"
        p = subprocess.run(["nvidia-smi", q, "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
        return p.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def file_meta(command: str) -> dict[str, Any]:
    """Date (UTC), the command, GPU name / UUID / driver / memory (nvidia-smi), package versions (read from
    package metadata: this process never initialises CUDA, so the children have the GPU to themselves)."""
    import datetime
    import platform
    from importlib import metadata

    def ver(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": command,
        "script_command": os.environ.get("PERFMODEL_BENCH_COMMAND"),  # set by benchmarks/gpu_memory.sh
        "gpu": _smi(),
        "python": platform.python_version(),
        "torch": ver("torch"),
        "triton": ver("triton"),
        "torchao": ver("torchao"),
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
        "env": {k: v for k, v in os.environ.items() if k.startswith(("TORCHINDUCTOR_", "PYTORCH_", "NCCL_"))},
    }


class _Writer:
    """``{"schema", "meta", "records"}`` rewritten atomically after every record."""

    def __init__(self, path: Path, meta: dict[str, Any]) -> None:
        self.path, self.doc = path, {"schema": "perfmodel.bench.memory/1", "meta": meta, "records": []}

    def __call__(self, rec: dict[str, Any]) -> None:
        self.doc["records"].append(rec)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.doc, indent=1, default=str) + "\n")
        tmp.replace(self.path)


# ---- CLI -----------------------------------------------------------------------------------------


def _plan_text(configs: Sequence[MemConfig]) -> str:
    gib = 2.0**30
    lines = [f"{'#':>2} {'name':<36} {'est GiB':>8} {'fits':>5} {'est ms':>7} {'guess s':>7}"]
    total = 0.0
    for i, c in enumerate(configs, 1):
        e = estimate_record(c.to_dict())
        g = _expected_s(c, warmed=True)
        total += g
        mem = (
            f"{e['memory_bytes'] / gib:8.1f} {e['fits']!s:>5} {e['step_s'] * 1e3:7.0f}"
            if "error" not in e
            else "  refused"
        )
        lines.append(f"{i:>2} {c.name:<36} {mem} {g:7.0f}  {c.expect}")
    lines.append(f"total {total:.0f} s guessed with a warm inductor cache (+ ~60 s warm phase)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m perfmodel.bench.memory", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("command", choices=["plan", "warm", "run", "one", "selftest"])
    p.add_argument("--out", type=Path, default=Path("out"), help="output folder (run: memory.json there)")
    p.add_argument("--deadline-s", type=float, default=200.0, help="run/warm: end before this many seconds")
    p.add_argument("--configs", default="", help="comma-separated names or shell patterns (default: all)")
    p.add_argument("--config", default="", help="one: the configuration's name")
    p.add_argument("--warm-only", action="store_true", help="one: build and run step 1 only")
    p.add_argument("--warmed", action="store_true", help="run: the cache is warm (guess compile at 15 s)")
    p.add_argument("--cap-s", type=float, default=150.0, help="run: kill one configuration after this")
    p.add_argument("--device", default="cuda", help="one/selftest: cuda or cpu")
    a = p.parse_args(argv)
    if a.command in ("run", "warm"):  # a SIGTERM (the shell's timeout) unwinds, so the children are killed
        import signal

        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    command = "python -m perfmodel.bench.memory " + shlex.join(list(sys.argv[1:] if argv is None else argv))
    if a.command == "plan":
        print(_plan_text(select(a.configs)))
        return 0
    if a.command == "one":
        rec = run_one(get_config(a.config), device=a.device, warm_only=a.warm_only)
        rec["versions"] = _versions()
        print(json.dumps(rec, default=str), flush=True)
        with contextlib.suppress(Exception):
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()
        return 0
    if a.command == "selftest":
        return _selftest(a.device, a.out)
    if a.command == "warm":
        res = warm(select(a.configs), deadline_s=a.deadline_s)
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "memory_warm.json").write_text(json.dumps({"meta": file_meta(command), "warm": res}, indent=1))
        print(json.dumps([{k: r.get(k) for k in ("name", "status", "first_step_s")} for r in res]))
        return 0
    writer = _Writer(a.out / "memory.json", file_meta(command))
    run_configs(select(a.configs), deadline_s=a.deadline_s, write=writer, cap_s=a.cap_s, warmed=a.warmed)
    return 0


def _selftest(device: str, out: Path) -> int:
    """A tiny model through each mode and AC mode (float8 only on CUDA with torchao); prints one line each."""
    cfgs = [MemConfig(name=f"selftest_{m}_{ac}", model="llama3-8b", layers=2, seq=32, batch=1, ac=ac, mode=m)
            for m, ac in (("fsdp", "none"), ("amp", "selective"), ("bf16", "full"))]  # fmt: skip
    if device == "cuda":
        cfgs.append(MemConfig(name="selftest_fsdp_tw_fp8ag", model="llama3-8b", layers=2, seq=32, batch=1,
                              recipe="tensorwise", fp8_all_gather=True))  # fmt: skip
    bad = 0
    for c in cfgs:
        rec = run_one(c, device=device, shape=SELFTEST_SHAPE, timed_budget_s=0.05)
        bad += rec["status"] != "ok"
        print(json.dumps({k: rec.get(k) for k in ("name", "status", "step_time_s", "counted", "error")}, default=str))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
