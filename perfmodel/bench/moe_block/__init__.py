"""MoE routed-expert block fwd+bwd on one GPU: bf16 against torchao float8 rowwise (``prototype/moe_training``).

``python -m perfmodel.bench.moe_block {plan,time,kernels,pieces,seed,selftest} --out DIR [--budget-s S]``

The block (self-contained, no torchtitan; it follows torchtitan's ``MoE`` / ``GroupedExperts`` layout so torchao's
converter finds the same parameters):

* router: ``gate = Linear(dim, router_experts)``, scores = softmax or sigmoid in float32, ``topk``; with forced
  routing (``balanced``, ``skewed``) the top-k still runs and its indices are then replaced (as torchtitan's
  ``_debug_force_load_balance`` does), the scores gathered at the forced indices;
* permutation (no host sync): the routed rows sorted by expert (stable ``argsort``), each expert's group padded to a
  multiple of ``align`` (at least ``align`` rows; 8 in bf16 = 16 bytes, 16 in fp8 rowwise: torchtitan's
  ``TOKEN_GROUP_ALIGN_SIZE_M``), a static total ``max_rows = round_up(T*k + E*align, align)`` whose remainder the
  last group absorbs (torchtitan's ``generate_permute_indices``); one ``index_select`` of ``[x; 0]`` by token;
* experts: ``experts.w1`` / ``w3`` ``[E, inter, dim]``, ``experts.w2`` ``[E, dim, inter]`` (torchtitan's
  ``GroupedExperts``); ``h = silu(x @ w1^T) * (x @ w3^T)``, ``y = h @ w2^T``, each a ``torch._grouped_mm(x,
  w.transpose(-2, -1), offs=offs)``: the call torchao's ``Float8TrainingWeightWrapperTensor`` intercepts;
* unpermute: ``out = zeros(T+1, dim).index_add(0, token, y * score)[:T]`` (weighted scatter-add; pad rows go to the
  dropped row ``T``); plus the shared expert (dense SwiGLU ``Linear`` s, bf16 in both recipes) where the model has one.

fp8 = ``quantize_(block, Float8TrainingOpConfig.from_recipe(Float8TrainingRecipe.FP8_ROWWISE), filter_fn=fqn ==
"experts")`` (torchao 0.17.0): the three expert GEMMs, fwd and both grads, become ``torch._scaled_grouped_mm`` with
dynamic rowwise scales (torchao's Triton cast kernels); router, permutation and the shared expert stay bf16.

Phases (each its own process; results rewritten atomically after every record, so a killed phase leaves what it
finished; every phase stops starting items when its ``--budget-s`` would be exceeded by the next item's estimate):

* ``plan``: the items, their estimated time and memory (pure Python).
* ``time``: per item (model, tokens, routing) and recipe: ``fwd_s`` (forward with autograd recording) and
  ``fwd_bwd_s`` with ``triton.testing.do_bench`` (warmup 25 ms, rep 100 ms, its default 256 MB L2 flush before every
  run; median, p20, p80), the peak memory of one fwd+bwd, the per-expert counts and padded group sizes, and the fp8
  output's relative error against bf16 on the same input. Eager mode (no torch.compile).
* ``kernels``: the same items under ``torch.profiler``: each GPU kernel's name, time and calls per iteration, for the
  forward alone and for fwd+bwd (the backward is the difference).
* ``pieces``: bf16 pieces alone with do_bench (:func:`piece_fns`): router fwd and fwd+bwd, the permutation plan, the
  gather, each grouped GEMM in its fwd, dgrad and wgrad form, SwiGLU, unpermute, shared expert fwd and fwd+bwd; each
  record names its GEMMs' shapes in perfmodel.moe's convention, so ``benchmarks/score_block_pieces.py`` can price them.
* ``seed``: Triton's own ``triton_kernels/bench/bench_mlp.py`` (see :func:`run_seed`) writing Proton profiles.
* ``selftest``: tiny shapes; the block against a per-token float64 loop reference (values and gradients) on CPU or
  GPU; on a GPU also the fp8 conversion (converted parameters, output error) and one timed call.

torch, triton and torchao are imported only inside functions: importing this module imports none of them.

Modules: ``config`` (model table, constants, :class:`MoEBlockError`), ``shapes`` (pure-Python shape rules),
``plan`` (items, estimates), ``results`` (:class:`Recorder`, :func:`run_items`), ``block`` (the torch block),
``measure`` (GPU phases), ``selftest``, ``seed`` (Triton's bench_mlp), ``cli`` (metadata, :func:`main`). Every name
the former single module defined is re-exported here.
"""

from __future__ import annotations

from .block import (  # noqa: F401
    _CLASSES,
    _classes,
    _experts_loop,
    _rel,
    build_block,
    convert_fp8,
    permute_plan,
    reference_forward,
    routing_indices,
)
from .cli import _int_list, _log, _main_seed, _name_list, _print_table, _smi, build_parser, collect_meta, main  # noqa: F401
from .config import (  # noqa: F401
    ALIGN,
    ALL_ROUTINGS,
    EST_BYTES_PER_S,
    EST_FIRST_FP8_S,
    EST_FLOPS_PER_S,
    EST_HOST_CALL_S,
    EST_ITEM_SETUP_S,
    MAX_MEMORY_BYTES,
    MODEL_BY_NAME,
    MODELS,
    PIECE_GEMMS,
    PROFILE_ITERS,
    RECIPES,
    REP_MS,
    ROUTINGS,
    SCHEMA,
    SEED,
    SKEW_ALPHA,
    TOKENS,
    WARMUP_MS,
    WRITE_NAMES,
    BlockConfig,
    MoEBlockError,
)
from .measure import (  # noqa: F401
    _base_record,
    _bench,
    _fwd_bwd_fns,
    _peak_bytes,
    _prepared,
    _profile_kernels,
    _routing_facts,
    measure_kernels,
    measure_pieces,
    measure_time,
    piece_fns,
)
from .plan import (  # noqa: F401
    BlockItem,
    _call_s,
    _do_bench_wall_s,
    estimate_item_s,
    estimate_memory_bytes,
    fits_memory,
    plan_items,
    rep_ms_for,
)
from .results import Measure, Recorder, _after_error, _error_fields, _error_record, _json_default, run_items  # noqa: F401
from .seed import SEED_CASE, SEED_DTYPES, _proton_finalize, _seed_loop, run_seed, seed_batches  # noqa: F401
from .selftest import (  # noqa: F401
    SELFTEST_CFG,
    SELFTEST_CFG_SIGMOID,
    SELFTEST_TOL,
    _grouped_mm_runs,
    _selftest_fp8,
    run_selftest,
    selftest_case,
)
from .shapes import _round_up, balanced_counts, dirichlet_weights, max_rows, padded_group_sizes, permutation_reference  # noqa: F401

__all__ = [
    "ALIGN",
    "MODELS",
    "PIECE_GEMMS",
    "RECIPES",
    "ROUTINGS",
    "TOKENS",
    "BlockConfig",
    "BlockItem",
    "MoEBlockError",
    "Recorder",
    "balanced_counts",
    "build_parser",
    "dirichlet_weights",
    "estimate_item_s",
    "estimate_memory_bytes",
    "main",
    "max_rows",
    "padded_group_sizes",
    "permutation_reference",
    "piece_fns",
    "plan_items",
    "rep_ms_for",
    "run_items",
    "seed_batches",
]
