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
* ``pieces``: bf16 pieces alone with do_bench: router fwd, permutation (plan + gather), each grouped GEMM in its
  fwd, dgrad and wgrad form, SwiGLU, unpermute, shared expert fwd+bwd.
* ``seed``: Triton's own ``triton_kernels/bench/bench_mlp.py`` (see :func:`run_seed`) writing Proton profiles.
* ``selftest``: tiny shapes; the block against a per-token float64 loop reference (values and gradients) on CPU or
  GPU; on a GPU also the fp8 conversion (converted parameters, output error) and one timed call.

torch, triton and torchao are imported only inside functions: importing this module imports none of them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import random
import shlex
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import PerfModelError

__all__ = [
    "ALIGN",
    "MODELS",
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
    "plan_items",
    "run_items",
    "seed_batches",
]

SCHEMA = "perfmodel.bench.moe_block/1"


class MoEBlockError(PerfModelError, ValueError):
    """A bad argument to the MoE block bench (model names, token counts, routing, budgets, files)."""


# ---- models (each number from the model's published config.json; cited per row) -------------------------------


@dataclasses.dataclass(frozen=True)
class BlockConfig:
    """One MoE layer's routed-expert block: ``dim`` (hidden size), ``inter`` (one routed expert's intermediate
    size), ``experts`` (experts on this GPU = the grouped GEMMs' groups), ``top_k``, ``shared_inter`` (the shared
    expert's intermediate size, 0 = none), ``score_func``, ``router_experts`` (the router's outputs; differs from
    ``experts`` only for a local-experts variant), ``source``."""

    name: str
    dim: int
    inter: int
    experts: int
    top_k: int
    shared_inter: int
    score_func: str
    router_experts: int
    source: str

    @property
    def expert_params(self) -> int:
        """Routed-expert parameters on this GPU (w1, w2, w3)."""
        return 3 * self.experts * self.dim * self.inter


MODELS: tuple[BlockConfig, ...] = (
    # deepseek-ai/DeepSeek-V2-Lite config.json (the torchtitan deepseek_v3 "16B" flavour has the same MoE):
    # hidden_size 2048, moe_intermediate_size 1408, n_routed_experts 64, num_experts_per_tok 6, n_shared_experts 2,
    # scoring_func softmax. Shared expert intermediate = 2 x 1408.
    BlockConfig("deepseek_v3_16b", 2048, 1408, 64, 6, 2 * 1408, "softmax", 64,
                "DeepSeek-V2-Lite config.json / torchtitan deepseek_v3 16B: hidden_size, moe_intermediate_size, "
                "n_routed_experts, num_experts_per_tok, n_shared_experts=2"),
    # deepseek-ai/DeepSeek-V3 config.json: hidden_size 7168, moe_intermediate_size 2048, n_routed_experts 256,
    # num_experts_per_tok 8, n_shared_experts 1, scoring_func sigmoid (n_group 8 / topk_group 4 not modelled).
    BlockConfig("deepseek_v3", 7168, 2048, 256, 8, 2048, "sigmoid", 256,
                "DeepSeek-V3 config.json: hidden_size, moe_intermediate_size, n_routed_experts, num_experts_per_tok, "
                "n_shared_experts=1, scoring_func=sigmoid"),
    # The same layer as one of EP=8 GPUs holds it: 256 / 8 = 32 local experts, top-8 routing, T tokens per GPU
    # (after the all-to-all each GPU receives T*k rows on average: the same per-expert load). The router keeps its
    # 256 outputs; the forced routing picks among the 32 local experts. No all-to-all is timed.
    BlockConfig("deepseek_v3_ep8", 7168, 2048, 32, 8, 2048, "sigmoid", 256,
                "DeepSeek-V3 config.json as above; local-experts variant 256/EP8 = 32 experts on this GPU"),
    # Qwen/Qwen3-30B-A3B config.json: hidden_size 2048, moe_intermediate_size 768, num_experts 128,
    # num_experts_per_tok 8, no shared expert, softmax router (norm_topk_prob true).
    BlockConfig("qwen3_30b_a3b", 2048, 768, 128, 8, 0, "softmax", 128,
                "Qwen3-30B-A3B config.json: hidden_size, moe_intermediate_size, num_experts, num_experts_per_tok"),
    # meta-llama/Llama-4-Scout-17B-16E config.json text_config: hidden_size 5120, intermediate_size 8192,
    # num_local_experts 16, num_experts_per_tok 1; one shared expert of intermediate_size; sigmoid router.
    BlockConfig("llama4_scout", 5120, 8192, 16, 1, 8192, "sigmoid", 16,
                "Llama-4-Scout-17B-16E config.json text_config: hidden_size, intermediate_size, num_local_experts, "
                "num_experts_per_tok; shared expert"),
    # meta-llama/Llama-4-Maverick-17B-128E config.json text_config: hidden_size 5120, intermediate_size 8192,
    # num_local_experts 128, num_experts_per_tok 1; shared expert; sigmoid router. All 128 experts on one GPU.
    BlockConfig("llama4_maverick", 5120, 8192, 128, 1, 8192, "sigmoid", 128,
                "Llama-4-Maverick-17B-128E config.json text_config: hidden_size, intermediate_size, "
                "num_local_experts, num_experts_per_tok; shared expert"),
    # mistralai/Mixtral-8x7B-v0.1 config.json: hidden_size 4096, intermediate_size 14336, num_local_experts 8,
    # num_experts_per_tok 2, softmax router, no shared expert.
    BlockConfig("mixtral_8x7b", 4096, 14336, 8, 2, 0, "softmax", 8,
                "Mixtral-8x7B-v0.1 config.json: hidden_size, intermediate_size, num_local_experts, "
                "num_experts_per_tok"),
    # openai/gpt-oss-120b config.json: hidden_size 2880, intermediate_size 2880, num_local_experts 128,
    # experts_per_token 4, softmax over the top-k logits. Its expert biases and clamped SwiGLU are not modelled.
    BlockConfig("gpt_oss_120b", 2880, 2880, 128, 4, 0, "softmax", 128,
                "gpt-oss-120b config.json: hidden_size, intermediate_size, num_local_experts, experts_per_token"),
)  # fmt: skip
MODEL_BY_NAME: dict[str, BlockConfig] = {m.name: m for m in MODELS}

TOKENS: tuple[int, ...] = (8192, 4096, 16384, 32768)  # priority order: every model at 8192 first
ROUTINGS: tuple[str, ...] = ("balanced", "skewed")  # "natural" (the router's own top-k) is accepted too
ALL_ROUTINGS: tuple[str, ...] = ("balanced", "skewed", "natural")
RECIPES: tuple[str, ...] = ("bf16", "fp8_rowwise")
ALIGN: Mapping[str, int] = {"bf16": 8, "fp8_rowwise": 16}  # token-group alignment (rows), see module doc
SKEW_ALPHA = 1.0  # Dirichlet concentration of the skewed expert popularity
SEED = 0
WARMUP_MS = 25.0  # do_bench's own defaults
REP_MS = 100.0
MAX_MEMORY_BYTES = 120e9  # items estimated above this are planned as skipped (the H200 has ~141 GB)
PROFILE_ITERS = 3
EST_FLOPS_PER_S = {"bf16": 600e12, "fp8_rowwise": 850e12}  # sizing only (grouped GEMM, measured ~ in db778b4)
EST_BYTES_PER_S = 3.0e12
EST_HOST_CALL_S = {"bf16": 2.5e-3, "fp8_rowwise": 5e-3}  # eager fwd+bwd host time (Python + launches)
EST_ITEM_SETUP_S = 1.0
EST_FIRST_FP8_S = {"time": 12.0, "kernels": 3.0}  # Triton JIT (cached on disk after the time phase) + autotune
# of torchao's cast kernels, once per process and model dims
WRITE_NAMES = {
    "time": "moe_block_time.json",
    "kernels": "moe_block_kernels.json",
    "pieces": "moe_block_pieces.json",
    "selftest": "moe_block_selftest.json",
    "plan": "moe_block_plan.json",
    "seed": "moe_seed_status.json",
}


# ---- pure-Python shape rules (tested on CPU) ------------------------------------------------------------------


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def max_rows(tokens: int, top_k: int, experts: int, align: int) -> int:
    """Rows the grouped GEMMs run on: ``round_up(T*k + E*align, align)`` (static, no host sync; torchtitan's
    ``padded_max_len``)."""
    for name, v in (("tokens", tokens), ("top_k", top_k), ("experts", experts), ("align", align)):
        if not isinstance(v, int) or v < 1:
            raise MoEBlockError(f"{name} must be a positive int, got {v!r}")
    return _round_up(tokens * top_k + experts * align, align)


def padded_group_sizes(counts: Sequence[int], align: int, total: int) -> list[int]:
    """Each expert's rows in the grouped GEMM: ``max(round_up(count, align), align)``; the last group also takes
    ``total - sum`` (the static remainder). Raises :class:`MoEBlockError` if ``total`` is too small."""
    if align < 1:
        raise MoEBlockError(f"align must be >= 1, got {align}")
    sizes = [max(_round_up(int(c), align), align) for c in counts]
    rest = total - sum(sizes)
    if not sizes or rest < 0:
        raise MoEBlockError(f"total rows {total} < padded group sizes {sum(sizes)} (counts {list(counts)[:8]}...)")
    sizes[-1] += rest
    return sizes


def balanced_counts(tokens: int, top_k: int, experts: int) -> list[int]:
    """Per-expert rows of round-robin routing (token t picks experts ``(t*k + j) % E``, j < k)."""
    n = tokens * top_k
    return [n // experts + (1 if e < n % experts else 0) for e in range(experts)]


def dirichlet_weights(experts: int, alpha: float, seed: int) -> list[float]:
    """Expert popularity for skewed routing: a Dirichlet(alpha) draw from ``random.Random(seed)`` (sums to 1)."""
    if experts < 1 or not alpha > 0:
        raise MoEBlockError(f"experts must be >= 1 and alpha > 0, got {experts}, {alpha}")
    rng = random.Random(seed)
    g = [rng.gammavariate(alpha, 1.0) for _ in range(experts)]
    s = sum(g)
    return [v / s for v in g]


def permutation_reference(
    idx: Sequence[Sequence[int]], experts: int, align: int, total: int
) -> tuple[list[int], list[int], list[int]]:
    """Pure-Python reference of the block's permutation: for every GEMM row (slot) the token it holds (``T`` for a
    pad row), the flat routed position ``t*k + j`` (``T*k`` for pad), and the padded group sizes."""
    T = len(idx)
    k = len(idx[0]) if T else 0
    flat = [e for row in idx for e in row]
    counts = [0] * experts
    for e in flat:
        counts[e] += 1
    order = sorted(range(len(flat)), key=lambda p: (flat[p], p))  # stable sort by expert
    sizes = padded_group_sizes(counts, align, total)
    slot_tok, slot_pos = [], []
    c0 = 0
    for e in range(experts):
        mine = order[c0 : c0 + counts[e]]
        c0 += counts[e]
        for r in range(sizes[e]):
            if r < len(mine):
                slot_pos.append(mine[r])
                slot_tok.append(mine[r] // k)
            else:
                slot_pos.append(T * k)
                slot_tok.append(T)
    return slot_tok, slot_pos, sizes


# ---- plan ----------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class BlockItem:
    """One measurement: a model's block at ``tokens`` tokens per step (per GPU) with ``routing``."""

    model: str
    tokens: int
    routing: str

    def __post_init__(self) -> None:
        if self.model not in MODEL_BY_NAME:
            raise MoEBlockError(f"unknown model {self.model!r}; valid: {', '.join(MODEL_BY_NAME)}")
        if not isinstance(self.tokens, int) or self.tokens < 1:
            raise MoEBlockError(f"tokens must be a positive int, got {self.tokens!r}")
        if self.routing not in ALL_ROUTINGS:
            raise MoEBlockError(f"unknown routing {self.routing!r}; valid: {', '.join(ALL_ROUTINGS)}")

    @property
    def id(self) -> str:
        return f"{self.model}-T{self.tokens}-{self.routing}"

    @property
    def cfg(self) -> BlockConfig:
        return MODEL_BY_NAME[self.model]

    def expert_flops_fwd(self, recipe: str) -> int:
        """FLOP of the three expert GEMMs' forward on the padded rows (2 FLOP per multiply-add)."""
        c = self.cfg
        return 2 * max_rows(self.tokens, c.top_k, c.experts, ALIGN[recipe]) * c.dim * c.inter * 3

    def shared_flops_fwd(self) -> int:
        return 2 * self.tokens * self.cfg.dim * self.cfg.shared_inter * 3


def estimate_memory_bytes(item: BlockItem, recipe: str) -> float:
    """Peak GPU memory of one fwd+bwd, bytes (sizing only): bf16 expert weights and grads, fp8's float32 weight
    temporaries (torchao casts ``B_t.to(float32) * scale``: two fp32 copies of one weight at a time) and fp8 copies,
    and the activations saved for backward."""
    c = item.cfg
    p1 = c.experts * c.dim * c.inter
    R = max_rows(item.tokens, c.top_k, c.experts, ALIGN[recipe])
    weights = 2 * 3 * p1 * 2 + 2 * 3 * c.dim * c.shared_inter * 2
    act = R * (c.dim * 2 * 3 + c.inter * 2 * 8) + item.tokens * (c.dim * 2 * 8 + c.shared_inter * 2 * 6)
    extra = (8 + 2 * 3) * p1 if recipe == "fp8_rowwise" else 0
    return float(weights + act + extra)


def _call_s(item: BlockItem, recipe: str) -> float:
    fl = 3 * (item.expert_flops_fwd(recipe) + item.shared_flops_fwd())
    c = item.cfg
    byt = 3 * 3 * c.expert_params * 2 + 20 * max_rows(item.tokens, c.top_k, c.experts, 16) * (c.dim + c.inter)
    return max(fl / EST_FLOPS_PER_S[recipe] + byt / EST_BYTES_PER_S, EST_HOST_CALL_S[recipe])


def _do_bench_wall_s(call_s: float) -> float:
    """do_bench: 1 + 5 estimate runs, then warmup/rep runs (at least one of each), plus the 256 MB flush."""
    n = max(1, math.ceil(WARMUP_MS * 1e-3 / call_s)) + max(1, math.ceil(REP_MS * 1e-3 / call_s))
    return (6 + n) * (call_s + 1e-4)


def estimate_item_s(item: BlockItem, recipes: Sequence[str] = RECIPES, *, phase: str = "time") -> float:
    """Wall seconds one item takes in ``phase`` (time: fwd and fwd+bwd do_bench per recipe; kernels: warm-up plus
    profiled iterations per recipe), plus weight setup."""
    c = item.cfg
    s = EST_ITEM_SETUP_S + 3 * c.expert_params * 2 / 0.3e12
    for r in recipes:
        t = _call_s(item, r)
        if phase == "time":
            s += _do_bench_wall_s(t / 3) + _do_bench_wall_s(t) + 3 * t
        else:
            s += (3 + 2 * PROFILE_ITERS) * t + 1.0
    return s


def plan_items(
    models: Sequence[str] | None = None,
    tokens: Sequence[int] = TOKENS,
    routings: Sequence[str] = ROUTINGS,
) -> list[BlockItem]:
    """Items in priority order: for each token count (in the given order), each routing, each model. A budget cut
    of any prefix therefore covers every model at the first token count first."""
    names = list(models) if models else [m.name for m in MODELS]
    return [BlockItem(m, t, r) for t in tokens for r in routings for m in names]


def fits_memory(item: BlockItem, recipe: str, limit: float = MAX_MEMORY_BYTES) -> bool:
    return estimate_memory_bytes(item, recipe) <= limit


# ---- results: atomic JSON rewrite after every record ------------------------------------------------------------


class Recorder:
    """A dataset file ``{"schema", "meta", "records", "status"}`` rewritten atomically (tmp + rename) on every
    :meth:`add`, so a phase killed at any point leaves valid JSON holding everything it finished."""

    def __init__(self, path: str | Path, meta: Mapping[str, Any], *, resume: bool = False) -> None:
        self.path = Path(path)
        self.meta = dict(meta)
        self.records: list[dict[str, Any]] = []
        self.status: dict[str, Any] = {"finished": False}
        if resume and self.path.exists():
            try:
                old = json.loads(self.path.read_text())
            except (OSError, ValueError):
                old = {}
            self.records = list(old.get("records", []))
            cur = (old.get("status") or {}).get("current")
            if cur and cur not in self.done_ids():  # the last process died inside this item (CUDA context, kill)
                self.records.append({"id": cur, "status": "error", "error_type": "ProcessDied",
                                     "error": "the process ended while measuring this item"})  # fmt: skip
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.flush()

    def done_ids(self) -> set[str]:
        return {r["id"] for r in self.records if "id" in r and r.get("status") in ("ok", "error", "skipped_memory")}

    def add(self, record: Mapping[str, Any]) -> None:
        self.records.append(dict(record))
        self.flush()

    def finish(self, **status: Any) -> None:
        self.status.update(status, finished=True)
        self.flush()

    def flush(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        data = {"schema": SCHEMA, "meta": self.meta, "status": self.status, "records": self.records}
        tmp.write_text(json.dumps(data, default=_json_default))
        os.replace(tmp, self.path)


def _json_default(o: Any) -> Any:
    if isinstance(o, float) and not math.isfinite(o):
        return None
    return str(o)


Measure = Callable[[BlockItem], list[dict[str, Any]]]


def run_items(
    items: Sequence[BlockItem],
    measure: Measure,
    *,
    budget_s: float,
    recorder: Recorder,
    estimate: Callable[[BlockItem], float],
    clock: Callable[[], float] = time.monotonic,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Measure ``items`` in order while ``elapsed + estimate(item) <= budget_s``; each failing item is recorded
    (``status="error"``, the exception's type, message, last traceback lines) and the loop goes on; items already in
    the recorder (``--resume``) are skipped; the rest are listed as ``skipped_budget`` in the final status."""
    t0 = clock()
    done = recorder.done_ids()
    skipped: list[str] = []
    n_ok = n_err = 0
    for it in items:
        if it.id in done:
            continue
        elapsed = clock() - t0
        est = estimate(it)
        if elapsed + est > budget_s:
            skipped.append(it.id)
            continue
        log(f"[{elapsed:6.1f} s] {it.id} (est {est:.1f} s)")
        recorder.status["current"] = it.id
        recorder.flush()
        try:
            recs = measure(it)
        except Exception as exc:
            n_err += 1
            recorder.status.pop("current", None)
            recorder.add(_error_record(it, exc))
            log(f"  error: {type(exc).__name__}: {str(exc)[:300]}")
            _after_error()
            continue
        for r in recs:
            recorder.records.append(dict(r))
        recorder.status.pop("current", None)
        recorder.flush()
        n_ok += 1
    status = {"ok_items": n_ok, "error_items": n_err, "skipped_budget": skipped, "elapsed_s": clock() - t0}
    recorder.finish(**status)
    return status


def _error_fields(exc: BaseException) -> dict[str, Any]:
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return {"status": "error", "error_type": type(exc).__name__, "error": str(exc)[:2000],
            "traceback_tail": "".join(tb[-3:])[-3000:]}  # fmt: skip


def _error_record(it: BlockItem, exc: BaseException) -> dict[str, Any]:
    return {"id": it.id, "model": it.model, "tokens": it.tokens, "routing": it.routing} | _error_fields(exc)


def _after_error() -> None:
    """Free cached GPU memory after a failure (an OOM leaves the allocator's cache full)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        try:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        except Exception:
            pass


# ---- the block (torch) ------------------------------------------------------------------------------------------

_CLASSES: dict[str, Any] = {}


def _classes(torch: Any) -> dict[str, Any]:
    """The block's nn.Module classes, made once torch is imported."""
    if _CLASSES:
        return _CLASSES
    nn, F = torch.nn, torch.nn.functional

    class GroupedExperts(nn.Module):
        """torchtitan's layout: w1, w3 ``[E, inter, dim]``, w2 ``[E, dim, inter]``."""

        def __init__(self, E: int, dim: int, inter: int, loop: bool = False) -> None:
            super().__init__()
            self.w1 = nn.Parameter(torch.empty(E, inter, dim))
            self.w2 = nn.Parameter(torch.empty(E, dim, inter))
            self.w3 = nn.Parameter(torch.empty(E, inter, dim))
            self.loop = loop  # per-expert matmuls instead of torch._grouped_mm (CPU fallback)

        def forward(self, x: Any, offs: Any) -> Any:
            if self.loop:
                return _experts_loop(torch, self.w1, self.w2, self.w3, x, offs)
            h = F.silu(torch._grouped_mm(x, self.w1.transpose(-2, -1), offs=offs))
            h = h * torch._grouped_mm(x, self.w3.transpose(-2, -1), offs=offs)
            return torch._grouped_mm(h, self.w2.transpose(-2, -1), offs=offs)

    class SharedExpert(nn.Module):
        def __init__(self, dim: int, inter: int) -> None:
            super().__init__()
            self.w1 = nn.Linear(dim, inter, bias=False)
            self.w2 = nn.Linear(inter, dim, bias=False)
            self.w3 = nn.Linear(dim, inter, bias=False)

        def forward(self, x: Any) -> Any:
            return self.w2(F.silu(self.w1(x)) * self.w3(x))

    class MoEBlock(nn.Module):
        def __init__(self, cfg: BlockConfig, align: int, loop: bool = False) -> None:
            super().__init__()
            self.cfg, self.align = cfg, align
            self.gate = nn.Linear(cfg.dim, cfg.router_experts, bias=False)
            self.experts = GroupedExperts(cfg.experts, cfg.dim, cfg.inter, loop)
            self.shared_experts = SharedExpert(cfg.dim, cfg.shared_inter) if cfg.shared_inter else None
            self.forced: Any = None  # (T, k) int64 expert indices, or None: the router's own top-k

        def route(self, x: Any) -> tuple[Any, Any]:
            logits = self.gate(x).float()
            scores = torch.sigmoid(logits) if self.cfg.score_func == "sigmoid" else F.softmax(logits, dim=-1)
            idx = torch.topk(scores[:, : self.cfg.experts], self.cfg.top_k, dim=-1, sorted=False).indices
            if self.forced is not None:
                idx = self.forced
            return scores.gather(1, idx), idx

        def forward(self, x: Any) -> Any:
            T, dim = x.shape
            top, idx = self.route(x)
            with torch.no_grad():
                slot_tok, slot_pos, offs = permute_plan(torch, idx, self.cfg.experts, self.align)
            xp = torch.cat([x, x.new_zeros(1, dim)]).index_select(0, slot_tok)
            y = self.experts(xp, offs)
            s = torch.cat([top.reshape(-1), top.new_zeros(1)]).index_select(0, slot_pos)
            out = x.new_zeros(T + 1, dim).index_add(0, slot_tok, y * s.to(y.dtype)[:, None])[:T]
            if self.shared_experts is not None:
                out = out + self.shared_experts(x)
            return out

    _CLASSES.update(MoEBlock=MoEBlock, GroupedExperts=GroupedExperts, SharedExpert=SharedExpert)
    return _CLASSES


def _experts_loop(torch: Any, w1: Any, w2: Any, w3: Any, x: Any, offs: Any) -> Any:
    F = torch.nn.functional
    outs, start = [], 0
    for e, end in enumerate(offs.tolist()):
        xe = x[start:end]
        outs.append((F.silu(xe @ w1[e].t()) * (xe @ w3[e].t())) @ w2[e].t())
        start = end
    if start < x.shape[0]:
        outs.append(x.new_zeros(x.shape[0] - start, w2.shape[1]))
    return torch.cat(outs)


def permute_plan(torch: Any, idx: Any, experts: int, align: int) -> tuple[Any, Any, Any]:
    """Sync-free permutation of routed rows (see module doc): per GEMM row the token (``T`` = pad) and the flat
    routed position (``T*k`` = pad), and the int32 group ends ``offs``."""
    T, k = idx.shape
    total = max_rows(T, k, experts, align)
    flat = idx.reshape(-1)
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=experts)
    sizes = torch.clamp_min((counts + align - 1) // align * align, align)
    sizes = torch.cat([sizes[:-1], sizes[-1:] + (total - sizes.sum())])
    ends = torch.cumsum(sizes, 0)
    starts = ends - sizes
    cstarts = torch.cumsum(counts, 0) - counts
    j = torch.arange(total, device=idx.device)
    g = torch.clamp(torch.searchsorted(ends, j, right=True), max=experts - 1)
    r = j - starts[g]
    valid = r < counts[g]
    src = torch.where(valid, cstarts[g] + r, torch.zeros_like(r))
    pos = torch.where(valid, order[src], torch.full_like(r, T * k))
    tok = torch.where(valid, pos // k, torch.full_like(r, T))
    return tok, pos, ends.to(torch.int32)


def routing_indices(torch: Any, cfg: BlockConfig, tokens: int, routing: str, seed: int = SEED) -> Any:
    """(T, k) int64 expert indices on the CPU: ``balanced`` round-robin (token t: experts ``(t*k + j) % E``),
    ``skewed`` k distinct experts per token drawn (seeded) from Dirichlet(SKEW_ALPHA) popularity; ``natural``: None."""
    E, k = cfg.experts, cfg.top_k
    if routing == "balanced":
        return torch.arange(tokens * k, dtype=torch.int64).reshape(tokens, k) % E
    if routing == "skewed":
        w = torch.tensor(dirichlet_weights(E, SKEW_ALPHA, seed + E), dtype=torch.float64)
        gen = torch.Generator().manual_seed(seed)
        return torch.multinomial(w.expand(tokens, E), k, replacement=False, generator=gen)
    if routing == "natural":
        return None
    raise MoEBlockError(f"unknown routing {routing!r}; valid: {', '.join(ALL_ROUTINGS)}")


def build_block(torch: Any, cfg: BlockConfig, recipe: str, *, device: Any, dtype: Any, seed: int = SEED,
                loop: bool = False) -> Any:  # fmt: skip
    """The block with weights ~ N(0, 0.02) (seeded), on ``device`` in ``dtype``; ``recipe`` sets the alignment."""
    cls = _classes(torch)["MoEBlock"]
    torch.manual_seed(seed)
    with torch.device(device):
        blk = cls(cfg, ALIGN[recipe], loop)
    with torch.no_grad():
        for p in blk.parameters():
            p.normal_(0.0, 0.02)
    return blk.to(dtype)


def convert_fp8(torch: Any, block: Any) -> list[str]:
    """torchao 0.17 float8 rowwise MoE conversion of ``block.experts`` (``quantize_`` with a filter on the fqn
    ``experts``; the shared expert's fqn ``shared_experts`` does not match); returns the converted parameter names."""
    from torchao.prototype.moe_training.config import Float8TrainingOpConfig, Float8TrainingRecipe
    from torchao.quantization.quant_api import quantize_

    config = Float8TrainingOpConfig.from_recipe(Float8TrainingRecipe.FP8_ROWWISE)
    quantize_(block, config=config, filter_fn=lambda mod, fqn: fqn == "experts")
    block.align = ALIGN["fp8_rowwise"]
    return [n for n, p in block.named_parameters() if "Wrapper" in type(p).__name__ + type(p.data).__name__]


def reference_forward(torch: Any, block: Any, x: Any, idx: Any, w1: Any = None) -> Any:
    """Per-token float64 loop: ``sum_j score_j * FFN_{e_j}(x_t) + shared(x_t)`` with the block's own weights
    (``w1``: a float64 leaf to use instead of the block's, for its gradient)."""
    F = torch.nn.functional
    d = lambda t: t.detach().double()  # noqa: E731
    x64 = x.double()
    logits = x64 @ d(block.gate.weight).t()
    scores = torch.sigmoid(logits) if block.cfg.score_func == "sigmoid" else F.softmax(logits, dim=-1)
    top = scores.gather(1, idx)
    w2, w3 = d(block.experts.w2), d(block.experts.w3)
    w1 = d(block.experts.w1) if w1 is None else w1
    out = torch.zeros_like(x64)
    for e in range(block.cfg.experts):
        t, j = (idx == e).nonzero(as_tuple=True)
        if t.numel():
            h = F.silu(x64[t] @ w1[e].t()) * (x64[t] @ w3[e].t())
            out = out.index_add(0, t, (h @ w2[e].t()) * top[t, j][:, None])
    if block.shared_experts is not None:
        s = block.shared_experts
        out = out + (F.silu(x64 @ d(s.w1.weight).t()) * (x64 @ d(s.w3.weight).t())) @ d(s.w2.weight).t()
    return out


def _rel(torch: Any, a: Any, b: Any) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-30))


# ---- GPU phases -------------------------------------------------------------------------------------------------


def _bench(fn: Callable[[], Any]) -> dict[str, float]:
    from ._device import bench

    return bench(fn, warmup_ms=WARMUP_MS, rep_ms=REP_MS)


def _prepared(torch: Any, item: BlockItem, recipe: str) -> tuple[Any, Any, Any, dict[str, Any]]:
    """Block, input (requires grad), output gradient and the routing facts of ``item``."""
    blk = build_block(torch, item.cfg, recipe, device="cuda", dtype=torch.bfloat16)
    idx = routing_indices(torch, item.cfg, item.tokens, item.routing)
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(item.tokens, item.cfg.dim, device="cuda", dtype=torch.bfloat16, generator=gen)
    x.requires_grad_(True)
    g = torch.randn(item.tokens, item.cfg.dim, device="cuda", dtype=torch.bfloat16, generator=gen)
    if idx is None:  # natural routing: the counts the router gives on this input
        with torch.no_grad():
            _, idx = blk.route(x)
        idx = idx.cpu()
    else:
        blk.forced = idx.cuda()
    return blk, x, g, {"idx": idx}


def _routing_facts(torch: Any, item: BlockItem, idx: Any, recipe: str) -> dict[str, Any]:
    c = item.cfg
    counts = torch.bincount(idx.reshape(-1), minlength=c.experts).tolist()
    total = max_rows(item.tokens, c.top_k, c.experts, ALIGN[recipe])
    return {"counts": counts, "group_rows": padded_group_sizes(counts, ALIGN[recipe], total), "rows": total,
            "align": ALIGN[recipe], "routed_rows": item.tokens * c.top_k}  # fmt: skip


def _fwd_bwd_fns(torch: Any, blk: Any, x: Any, g: Any) -> tuple[Callable[[], Any], Callable[[], Any]]:
    params = [p for p in blk.parameters() if p.requires_grad]

    def fwd() -> Any:
        return blk(x)

    def fwd_bwd() -> None:
        x.grad = None
        for p in params:
            p.grad = None
        blk(x).backward(g)

    return fwd, fwd_bwd


def _peak_bytes(torch: Any, fn: Callable[[], Any]) -> tuple[int, int]:
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    return int(torch.cuda.max_memory_allocated()), int(base)


def _base_record(item: BlockItem, recipe: str) -> dict[str, Any]:
    c = item.cfg
    return {
        "id": item.id, "model": c.name, "tokens": item.tokens, "routing": item.routing, "recipe": recipe,
        "dim": c.dim, "inter": c.inter, "experts": c.experts, "top_k": c.top_k, "shared_inter": c.shared_inter,
        "router_experts": c.router_experts, "score_func": c.score_func, "compiled": False,
        "skew_alpha": SKEW_ALPHA if item.routing == "skewed" else None,
        "expert_flops_fwd": item.expert_flops_fwd(recipe), "shared_flops_fwd": item.shared_flops_fwd(),
    }  # fmt: skip


def measure_time(item: BlockItem, recipes: Sequence[str] = RECIPES) -> list[dict[str, Any]]:
    """do_bench of fwd and fwd+bwd for each recipe (bf16 first; fp8 converts the same block in place, so the
    weights are identical and no second copy is held). A failing recipe is recorded and the next one still runs."""
    from ._device import require_cuda

    torch = require_cuda()
    recs: list[dict[str, Any]] = []
    blk, x, g, facts = _prepared(torch, item, "bf16")
    ref_out = None
    for recipe in recipes:
        rec = _base_record(item, recipe) | _routing_facts(torch, item, facts["idx"], recipe)
        try:
            if not fits_memory(item, recipe):
                rec.update(status="skipped_memory", est_memory_bytes=estimate_memory_bytes(item, recipe))
                recs.append(rec)
                continue
            if recipe == "fp8_rowwise":
                rec["converted"] = convert_fp8(torch, blk)
            elif recipe != "bf16":
                raise MoEBlockError(f"unknown recipe {recipe!r}; valid: {', '.join(RECIPES)}")
            fwd, fwd_bwd = _fwd_bwd_fns(torch, blk, x, g)
            with torch.no_grad():
                out = blk(x).float()
            if ref_out is None:
                ref_out = out
            else:
                rec["rel_err_vs_bf16"] = _rel(torch, out, ref_out)
            del out
            fwd_bwd()
            peak, base = _peak_bytes(torch, fwd_bwd)
            rec.update(peak_memory_bytes=peak, memory_before_bytes=base)
            f = _bench(fwd)
            fb = _bench(fwd_bwd)
            rec["status"] = "ok"
            for key, r in (("fwd_s", f), ("fwd_bwd_s", fb)):
                rec.update({key: r["time_s"], f"{key}_p20": r["time_s_p20"], f"{key}_p80": r["time_s_p80"],
                            f"{key}_mean": r["time_s_mean"], f"{key}_reps": r["reps"]})  # fmt: skip
        except Exception as exc:
            rec.update(_error_fields(exc))
            _after_error()
        recs.append(rec)
    del blk, x, g
    _after_error()
    return recs


def _profile_kernels(torch: Any, fn: Callable[[], Any], iters: int) -> dict[str, Any]:
    from torch.profiler import ProfilerActivity, profile

    from ._device import kernel_times_s

    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    per: dict[str, list[float]] = {}
    for name, _, dur in kernel_times_s(prof):
        per.setdefault(name, []).append(dur)
    kernels = sorted(
        ({"name": k, "time_s": sum(v) / iters, "calls": len(v) / iters} for k, v in per.items()),
        key=lambda r: -r["time_s"],
    )
    return {"iters": iters, "kernel_time_s": sum(k["time_s"] for k in kernels), "kernels": kernels}


def measure_kernels(item: BlockItem, recipes: Sequence[str] = RECIPES) -> list[dict[str, Any]]:
    """torch.profiler pass: kernels of the forward and of fwd+bwd per iteration, per recipe (no do_bench here)."""
    from ._device import require_cuda

    torch = require_cuda()
    recs = []
    blk, x, g, facts = _prepared(torch, item, "bf16")
    for recipe in recipes:
        rec = _base_record(item, recipe) | _routing_facts(torch, item, facts["idx"], recipe)
        try:
            if not fits_memory(item, recipe):
                rec.update(status="skipped_memory")
                recs.append(rec)
                continue
            if recipe == "fp8_rowwise":
                convert_fp8(torch, blk)
            fwd, fwd_bwd = _fwd_bwd_fns(torch, blk, x, g)
            rec.update(status="ok", fwd=_profile_kernels(torch, fwd, PROFILE_ITERS),
                       fwd_bwd=_profile_kernels(torch, fwd_bwd, PROFILE_ITERS))  # fmt: skip
        except Exception as exc:
            rec.update(_error_fields(exc))
            _after_error()
        recs.append(rec)
    del blk, x, g
    _after_error()
    return recs


def measure_pieces(item: BlockItem) -> list[dict[str, Any]]:
    """bf16 pieces alone (do_bench each): router fwd / fwd+bwd, permute (plan + gather), the grouped GEMMs in fwd,
    dgrad and wgrad form (w13 = one of w1/w3, w2), SwiGLU fwd, unpermute (weighted scatter-add), shared expert."""
    from ._device import require_cuda

    torch = require_cuda()
    F = torch.nn.functional
    blk, x, g, facts = _prepared(torch, item, "bf16")
    c = item.cfg
    with torch.no_grad():
        top, idx = blk.route(x)
        tok, pos, offs = permute_plan(torch, idx, c.experts, blk.align)
        xp = torch.cat([x, x.new_zeros(1, c.dim)]).index_select(0, tok)
        R = xp.shape[0]
        h1 = torch._grouped_mm(xp, blk.experts.w1.transpose(-2, -1), offs=offs)
        hh = F.silu(h1) * h1
        gy = torch.randn(R, c.dim, device="cuda", dtype=torch.bfloat16)
        gh = torch.randn(R, c.inter, device="cuda", dtype=torch.bfloat16)
    w1, w2 = blk.experts.w1.detach(), blk.experts.w2.detach()
    xd = x.detach()

    def router_fb() -> None:
        t, _ = blk.route(x)
        t.sum().backward()

    def unpermute() -> Any:
        s = torch.cat([top.reshape(-1), top.new_zeros(1)]).index_select(0, pos)
        return xd.new_zeros(item.tokens + 1, c.dim).index_add(0, tok, xp * s.to(xp.dtype)[:, None])[: item.tokens]

    pieces: dict[str, Callable[[], Any]] = {
        "router_fwd": lambda: blk.route(xd),
        "router_fwd_bwd": router_fb,
        "permute": lambda: torch.cat([xd, xd.new_zeros(1, c.dim)]).index_select(
            0, permute_plan(torch, idx, c.experts, blk.align)[0]
        ),
        "permute_plan": lambda: permute_plan(torch, idx, c.experts, blk.align),
        "gemm_w13_fwd": lambda: torch._grouped_mm(xp, w1.transpose(-2, -1), offs=offs),
        "gemm_w13_dgrad": lambda: torch._grouped_mm(gh, w1, offs=offs),
        "gemm_w13_wgrad": lambda: torch._grouped_mm(gh.t(), xp, offs=offs),
        "gemm_w2_fwd": lambda: torch._grouped_mm(hh, w2.transpose(-2, -1), offs=offs),
        "gemm_w2_dgrad": lambda: torch._grouped_mm(gy, w2, offs=offs),
        "gemm_w2_wgrad": lambda: torch._grouped_mm(gy.t(), hh, offs=offs),
        "swiglu_fwd": lambda: F.silu(h1) * h1,
        "unpermute": unpermute,
    }
    if blk.shared_experts is not None:
        se = blk.shared_experts

        def shared_fb() -> None:
            for p in se.parameters():
                p.grad = None
            se(x).backward(g)

        pieces["shared_fwd"] = lambda: se(xd)
        pieces["shared_fwd_bwd"] = shared_fb
    rec = _base_record(item, "bf16") | _routing_facts(torch, item, facts["idx"], "bf16")
    rec.update(status="ok", pieces={})
    for name, fn in pieces.items():
        try:
            fn()
            r = _bench(fn)
            rec["pieces"][name] = {"time_s": r["time_s"], "time_s_p20": r["time_s_p20"],
                                   "time_s_p80": r["time_s_p80"], "reps": r["reps"]}  # fmt: skip
        except Exception as exc:
            rec["pieces"][name] = {"error": f"{type(exc).__name__}: {str(exc)[:500]}"}
    return [rec]


# ---- selftest -----------------------------------------------------------------------------------------------------

SELFTEST_CFG = BlockConfig("tiny", 64, 32, 8, 2, 48, "softmax", 8, "selftest")
SELFTEST_CFG_SIGMOID = BlockConfig("tiny_sigmoid", 64, 48, 4, 1, 0, "sigmoid", 6, "selftest")


def selftest_case(torch: Any, cfg: BlockConfig, routing: str, device: str, tokens: int = 40,
                  loop: bool | None = None) -> dict[str, Any]:  # fmt: skip
    """Block (float32 on CPU, bf16 on GPU) against :func:`reference_forward` in float64: output and gradients of
    x and w1 (relative errors); the grouped GEMM where it runs, else the per-expert loop."""
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    if loop is None:
        loop = not _grouped_mm_runs(torch, device, dtype)
    blk = build_block(torch, cfg, "bf16", device=device, dtype=dtype, seed=3, loop=loop)
    idx = routing_indices(torch, cfg, tokens, routing, seed=5)
    x = torch.randn(tokens, cfg.dim, device=device, dtype=dtype, generator=torch.Generator(device).manual_seed(7))
    x.requires_grad_(True)
    if idx is None:
        _, idx = blk.route(x.detach())
    else:
        blk.forced = idx.to(device)
    out = blk(x)
    out.float().square().sum().backward()
    xr = x.detach().double().requires_grad_(True)
    w1r = blk.experts.w1.detach().double().requires_grad_(True)
    ref = reference_forward(torch, blk, xr, idx.to(device), w1=w1r)
    ref.square().sum().backward()
    return {
        "model": cfg.name, "routing": routing, "device": device, "dtype": str(dtype), "loop": loop,
        "out_rel_err": _rel(torch, out.detach(), ref.detach()),
        "x_grad_rel_err": _rel(torch, x.grad, xr.grad),
        "w1_grad_rel_err": _rel(torch, blk.experts.w1.grad, w1r.grad),
        "all_finite": bool(torch.isfinite(out).all()),
    }  # fmt: skip


def _grouped_mm_runs(torch: Any, device: str, dtype: Any) -> bool:
    try:
        a = torch.ones(16, 16, device=device, dtype=dtype)
        b = torch.ones(2, 16, 16, device=device, dtype=dtype)
        torch._grouped_mm(a, b.transpose(-2, -1), offs=torch.tensor([8, 16], device=device, dtype=torch.int32))
        return True
    except (RuntimeError, AttributeError, NotImplementedError, TypeError):
        return False


SELFTEST_TOL = {"cpu": 1e-5, "cuda": 3e-2}  # float32 vs float64; bf16 operands (METHOD.md: 1e-3..1e-2, per tensor)


def run_selftest(device: str | None = None) -> dict[str, Any]:
    """Self-test on tiny shapes: CPU (float32) or GPU (bf16 grouped GEMM; fp8 conversion if torchao imports).
    Returns ``{"ok": bool, "cases": [...], "fp8": {...}}``; a missing torchao is reported in ``fp8`` but does not
    fail the selftest (the bf16 block is still checked)."""
    import torch

    dev = device or ("cuda" if torch.cuda.is_available() else "cpu")
    tol = SELFTEST_TOL["cpu" if dev == "cpu" else "cuda"]
    cases = []
    for cfg, routing in ((SELFTEST_CFG, "balanced"), (SELFTEST_CFG, "skewed"), (SELFTEST_CFG_SIGMOID, "natural")):
        c = selftest_case(torch, cfg, routing, dev)
        c["ok"] = c["all_finite"] and max(c["out_rel_err"], c["x_grad_rel_err"], c["w1_grad_rel_err"]) < tol
        cases.append(c)
    res: dict[str, Any] = {"device": dev, "tolerance": tol, "cases": cases}
    ok = all(c["ok"] for c in cases)
    if dev != "cpu":
        res["fp8"] = _selftest_fp8(torch)
        ok = ok and (res["fp8"].get("ok", False) or res["fp8"].get("error_type") == "ModuleNotFoundError")
    res["ok"] = ok
    return res


def _selftest_fp8(torch: Any) -> dict[str, Any]:
    """fp8 conversion on a small real-shaped block: converted params, output/grad error vs bf16, one timing."""
    cfg = BlockConfig("small", 1024, 512, 8, 2, 512, "softmax", 8, "selftest")
    item_tokens = 2048
    try:
        blk = build_block(torch, cfg, "bf16", device="cuda", dtype=torch.bfloat16)
        blk.forced = routing_indices(torch, cfg, item_tokens, "skewed").cuda()
        x = torch.randn(item_tokens, cfg.dim, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        ref = blk(x)
        ref.float().square().sum().backward()
        gref = blk.experts.w2.grad.float().clone()
        blk.zero_grad(set_to_none=True)
        conv = convert_fp8(torch, blk)
        out = blk(x)
        out.float().square().sum().backward()
        r = {"converted": conv, "out_rel_err": _rel(torch, out.detach(), ref.detach()),
             "w2_grad_rel_err": _rel(torch, blk.experts.w2.grad.float(), gref)}  # fmt: skip
        _, fwd_bwd = _fwd_bwd_fns(torch, blk, x, torch.randn_like(x))
        r["fwd_bwd_s"] = _bench(fwd_bwd)["time_s"]
        r["ok"] = sorted(conv) == ["experts.w1", "experts.w2", "experts.w3"] and r["out_rel_err"] < 0.1
        return r
    except Exception as exc:
        return {"ok": False, "error_type": type(exc).__name__, "error": str(exc)[:2000]}


# ---- seed: Triton's bench_mlp -----------------------------------------------------------------------------------

# The seed (shared/seeds/000_*.txt, parse_moe_kernel_perf.py): roofline_mlp(..., 5120, 8192, 128, 4, x, w, TP=1,
# EP=1, name="llama4-maverick") for x-w in fp8-fp8 and (no native mx4 on Hopper) bf16-mx4, batches from
# range(128, 512, 32) + range(512, 32000, 128);
# profiles at {root}/{name}/{x}-{w}-TP{TP}-EP{EP}/profiles/batch-{batch}.hatchet
SEED_CASE = {"name": "llama4-maverick", "dim1": 5120, "dim2": 8192, "n_expts_tot": 128, "n_expts_act": 4,
             "TP": 1, "EP": 1}  # fmt: skip
SEED_DTYPES: tuple[tuple[str, str], ...] = (("fp8", "fp8"), ("bf16", "mx4"))


def seed_batches(lo: int = 128, hi: int = 8192) -> list[int]:
    """~20 total-token batches from the seed's set, spread log-uniformly from ``lo`` to ``hi``; each is in
    ``range(128, 512, 32)`` or ``range(512, 32000, 128)`` and a multiple of ``n_expts_tot / n_expts_act = 32``
    (bench_mlp takes ``batch_per_expt = batch * 4 / 128``). Ordered so a budget cut keeps the span."""
    allowed = set(range(128, 512, 32)) | set(range(512, 32000, 128))
    picks = sorted({min(allowed, key=lambda b: abs(math.log(b / (lo * (hi / lo) ** (i / 20))))) for i in range(21)})
    order, seen = [], set()
    for step in (20, 10, 5, 2, 1):  # coarse first: a cut keeps the ends and the middle
        for i in range(0, len(picks), step):
            if picks[i] not in seen:
                seen.add(picks[i])
                order.append(picks[i])
    if picks[-1] not in seen:
        order.insert(1, picks[-1])
    return order


def run_seed(tk_dir: Path, root: Path, dtypes: tuple[str, str], batches: Sequence[int], *, budget_s: float,
             log: Callable[[str], None] = print) -> dict[str, Any]:  # fmt: skip
    """Run Triton's ``bench/bench_mlp.py::bench_mlp`` (the 3.6-era bench with upstream #8860 + #8877) for the seed's
    case at each total-token ``batch``: its Proton profile is written to the seed's layout instead of a temporary
    file, and ``roofline.parse_profile`` (needs llnl-hatchet, absent on the device) is skipped. Existing profiles
    are kept (resume). Stops starting batches past ``budget_s``."""
    sys.path[:0] = [str(tk_dir), str(tk_dir / "bench")]
    import bench_mlp  # type: ignore[import-not-found]

    c = SEED_CASE
    x, w = dtypes
    folder = root / c["name"] / f"{x}-{w}-TP{c['TP']}-EP{c['EP']}" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    target: dict[str, Path] = {}
    saved = (bench_mlp.tempfile.mktemp, bench_mlp.roofline.parse_profile)
    bench_mlp.tempfile.mktemp = lambda *a, **k: str(target["path"])  # proton appends ".hatchet"
    bench_mlp.roofline.parse_profile = lambda *a, **k: None
    try:
        return _seed_loop(bench_mlp, folder, dtypes, batches, target, budget_s, log)
    finally:
        bench_mlp.tempfile.mktemp, bench_mlp.roofline.parse_profile = saved


def _seed_loop(bench_mlp: Any, folder: Path, dtypes: tuple[str, str], batches: Sequence[int],
               target: dict[str, Path], budget_s: float, log: Callable[[str], None]) -> dict[str, Any]:  # fmt: skip
    c = SEED_CASE
    x, w = dtypes
    t0 = time.monotonic()
    status: dict[str, Any] = {"dtypes": f"{x}-{w}", "done": [], "errors": {}, "skipped_budget": []}
    last = 0.0
    for b in batches:
        out = folder / f"batch-{b}.hatchet"
        if out.exists():
            status["done"].append(b)
            continue
        if time.monotonic() - t0 + 1.5 * last > budget_s:
            status["skipped_budget"].append(b)
            continue
        target["path"] = folder / f"batch-{b}"
        bpe = b * c["n_expts_act"] // c["n_expts_tot"]
        t1 = time.monotonic()
        try:
            bench_mlp.bench_mlp(bpe, c["dim1"], c["dim2"], c["n_expts_tot"], c["n_expts_act"], x, w, c["TP"], c["EP"])
            status["done"].append(b)
        except Exception as exc:
            status["errors"][str(b)] = f"{type(exc).__name__}: {str(exc)[:500]}"
            _proton_finalize()
        last = time.monotonic() - t1
        log(f"seed {x}-{w} batch {b}: {last:.1f} s")
    status["elapsed_s"] = time.monotonic() - t0
    return status


def _proton_finalize() -> None:
    """Close a Proton session a failed batch left open (else the next ``proton.start`` fails)."""
    try:
        import triton.profiler as proton

        proton.finalize()
    except Exception:
        pass


# ---- metadata, CLI -------------------------------------------------------------------------------------------------


def _smi(args: Sequence[str]) -> str | None:
    import subprocess

    try:
        r = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=20, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() or None


def collect_meta(command: str) -> dict[str, Any]:
    """Date, GPU name / UUID / driver (nvidia-smi), torch / triton / torchao versions, the exact command."""
    from importlib import metadata

    def ver(n: str) -> str | None:
        try:
            return metadata.version(n)
        except metadata.PackageNotFoundError:
            return None

    meta: dict[str, Any] = {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command": command,
        "python": sys.version.split()[0], "torch": ver("torch"), "triton": ver("triton"), "torchao": ver("torchao"),
        "nvidia_smi_L": _smi(["-L"]),
        "gpu": _smi(["--query-gpu=name,uuid,driver_version,clocks.max.sm,power.limit", "--format=csv,noheader"]),
        "warmup_ms": WARMUP_MS, "rep_ms": REP_MS, "align": dict(ALIGN), "skew_alpha": SKEW_ALPHA,
        "compiled": False, "env": {k: v for k, v in os.environ.items() if k.startswith(("TORCH", "TRITON"))},
    }  # fmt: skip
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        meta.update(gpu_name=p.name, sm_count=p.multi_processor_count, gpu_memory_bytes=p.total_memory,
                    cuda=torch.version.cuda)  # fmt: skip
    return meta


def _int_list(text: str) -> list[int]:
    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers like 4096,8192, got {text!r}") from None
    if not vals or min(vals) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return vals


def _name_list(valid: Iterable[str]) -> Callable[[str], list[str]]:
    valid = list(valid)

    def parse(text: str) -> list[str]:
        names = [v.strip() for v in text.split(",") if v.strip()]
        bad = [n for n in names if n not in valid]
        if bad or not names:
            raise argparse.ArgumentTypeError(f"unknown {bad or text!r}; valid: {', '.join(valid)}")
        return names

    return parse


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m perfmodel.bench.moe_block", description=__doc__.split("\n\n")[0])
    p.add_argument("phase", choices=["plan", "time", "kernels", "pieces", "seed", "selftest"])
    p.add_argument("--out", type=Path, default=Path("out"), help="output folder (created)")
    p.add_argument("--budget-s", type=float, default=120.0, help="stop starting items past this (seconds)")
    p.add_argument("--models", type=_name_list(MODEL_BY_NAME), default=None, help="comma list (default: all)")
    p.add_argument("--tokens", type=_int_list, default=list(TOKENS), help="tokens per step, priority order")
    p.add_argument("--routings", type=_name_list(ALL_ROUTINGS), default=list(ROUTINGS))
    p.add_argument("--recipes", type=_name_list(RECIPES), default=list(RECIPES))
    p.add_argument("--resume", action="store_true", help="keep the records already in the phase's file")
    p.add_argument("--device", default=None, help="selftest: cpu or cuda (default: cuda if available)")
    p.add_argument("--tk-dir", type=Path, default=Path(".tk/triton_kernels"), help="seed: python/triton_kernels")
    p.add_argument("--seed-root", type=Path, default=None, help="seed: profile root (default OUT/seed_logs)")
    p.add_argument("--seed-dtypes", default="fp8-fp8,bf16-mx4", help="seed: x-w pairs")
    p.add_argument("--seed-batches", type=_int_list, default=None, help="seed: total tokens (default ~20)")
    return p


def _log(msg: str) -> None:
    print(msg, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry; exit 0 on success, 1 if a selftest failed, 2 on bad arguments."""
    args = build_parser().parse_args(argv)
    if not args.budget_s > 0:
        print("error: --budget-s must be > 0", file=sys.stderr)
        return 2
    command = "python -m perfmodel.bench.moe_block " + shlex.join(list(sys.argv[1:] if argv is None else argv))
    args.out.mkdir(parents=True, exist_ok=True)
    items = plan_items(args.models, args.tokens, args.routings)
    if args.phase == "plan":
        rows = [{"id": it.id, "est_time_s": estimate_item_s(it, args.recipes),
                 "est_kernels_s": estimate_item_s(it, args.recipes, phase="kernels"),
                 "est_memory_bytes": {r: estimate_memory_bytes(it, r) for r in args.recipes},
                 "fits": {r: fits_memory(it, r) for r in args.recipes}} for it in items]  # fmt: skip
        total, kept = 0.0, 0
        for r in rows:
            if total + r["est_time_s"] <= args.budget_s:
                total, kept = total + r["est_time_s"], kept + 1
        (args.out / WRITE_NAMES["plan"]).write_text(json.dumps({"items": rows, "budget_s": args.budget_s}))
        _log(f"{len(rows)} items; at --budget-s {args.budget_s:.0f}: about {kept} fit ({total:.0f} s estimated)")
        for r in rows[:kept]:
            _log(f"  {r['id']:<40} {r['est_time_s']:6.1f} s")
        return 0
    if args.phase == "selftest":
        res = run_selftest(args.device)
        Recorder(args.out / WRITE_NAMES["selftest"], collect_meta(command)).finish(**res)
        _log(json.dumps(res, indent=1, default=str)[:4000])
        return 0 if res["ok"] else 1
    if args.phase == "seed":
        return _main_seed(args, command)
    from ._device import require_cuda

    require_cuda()
    rec = Recorder(args.out / WRITE_NAMES[args.phase], collect_meta(command), resume=args.resume)
    if args.phase == "pieces":
        st = run_items(items, measure_pieces, budget_s=args.budget_s, recorder=rec,
                       estimate=lambda it: 3.0 + 14 * _do_bench_wall_s(_call_s(it, "bf16") / 9), log=_log)  # fmt: skip
    else:
        fn = measure_time if args.phase == "time" else measure_kernels
        first: set[tuple[int, int]] = set()

        def est(it: BlockItem) -> float:  # the first fp8 item of each (dim, inter) pays Triton JIT + autotune
            key = (it.cfg.dim, it.cfg.inter)
            extra = EST_FIRST_FP8_S[args.phase] if "fp8_rowwise" in args.recipes and key not in first else 0.0
            return estimate_item_s(it, args.recipes, phase=args.phase) + extra

        def measure(it: BlockItem) -> list[dict[str, Any]]:
            first.add((it.cfg.dim, it.cfg.inter))
            return fn(it, args.recipes)

        st = run_items(items, measure, budget_s=args.budget_s, recorder=rec, estimate=est, log=_log)
    _log(f"{args.phase}: {st['ok_items']} ok, {st['error_items']} failed, {len(st['skipped_budget'])} not started "
         f"(budget), {st['elapsed_s']:.0f} s")  # fmt: skip
    if args.phase == "time":
        _print_table(rec.records)
    return 0


def _main_seed(args: argparse.Namespace, command: str) -> int:
    root = args.seed_root or (args.out / "seed_logs")
    batches = args.seed_batches or seed_batches()
    pairs = [tuple(p.split("-")) for p in args.seed_dtypes.split(",") if p]
    rec = Recorder(args.out / WRITE_NAMES["seed"], collect_meta(command))
    t0 = time.monotonic()
    for i, pair in enumerate(pairs):
        left = args.budget_s - (time.monotonic() - t0)
        share = left / (len(pairs) - i)
        try:
            st = run_seed(args.tk_dir, root, pair, batches, budget_s=share, log=_log)  # type: ignore[arg-type]
        except Exception as exc:
            st = {"dtypes": "-".join(pair), "error": f"{type(exc).__name__}: {str(exc)[:1000]}"}
        rec.add(st)
    rec.finish(elapsed_s=time.monotonic() - t0, root=str(root), batches=batches)
    return 0


def _print_table(records: Sequence[Mapping[str, Any]]) -> None:
    by: dict[str, dict[str, Mapping[str, Any]]] = {}
    for r in records:
        if "recipe" in r:
            by.setdefault(r["id"], {})[r["recipe"]] = r
    _log(f"{'item':<40} {'bf16 fb ms':>10} {'fp8 fb ms':>10} {'speedup':>8} {'fp8 err':>8}")
    for k, v in by.items():
        b, f = v.get("bf16", {}), v.get("fp8_rowwise", {})
        tb, tf = b.get("fwd_bwd_s"), f.get("fwd_bwd_s")
        sp = f"{tb / tf:8.2f}" if tb and tf else f"{'-':>8}"
        err = f.get("rel_err_vs_bf16")
        _log(f"{k:<40} {tb * 1e3 if tb else float('nan'):10.3f} {tf * 1e3 if tf else float('nan'):10.3f} {sp} "
             f"{err if err is not None else float('nan'):8.4f} {f.get('status', '')}")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
