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

# ruff: noqa: F401  (the old flat module's names stay importable from here; __all__ is its public list)

from __future__ import annotations

from .build import _build_lm, _float8, _fsdp, _init_world1, _sac_wrapper
from .cli import _plan_text, _selftest, main
from .config import (
    _8B,
    _70B,
    _MEM_STATS,
    AC_MODES,
    MODES,
    PLAN,
    RECIPES,
    SELFTEST_SHAPE,
    SHAPES,
    MemConfig,
    _c,
    get_config,
    select,
)
from .estimate import estimate_kwargs, estimate_record
from .files import _smi, _versions, _Writer, file_meta
from .step import _build, _counted, _inductor, _local_bytes, _mem, _sync, _timed, run_one
from .sweep import _child_cmd, _collect, _expected_s, _last_json, _line, _spawn, run_configs, warm

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
