"""The plan: items, memory and time estimates."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from .config import (
    ALIGN,
    ALL_ROUTINGS,
    EST_BYTES_PER_S,
    EST_FLOPS_PER_S,
    EST_HOST_CALL_S,
    EST_ITEM_SETUP_S,
    MAX_MEMORY_BYTES,
    MODEL_BY_NAME,
    MODELS,
    PROFILE_ITERS,
    RECIPES,
    REP_MS,
    ROUTINGS,
    TOKENS,
    WARMUP_MS,
    BlockConfig,
    MoEBlockError,
)
from .shapes import max_rows

__all__ = [
    "BlockItem",
    "estimate_item_s",
    "estimate_memory_bytes",
    "fits_memory",
    "plan_items",
    "rep_ms_for",
]

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


def rep_ms_for(call_s: float, min_reps: int = 1) -> float:
    """do_bench's ``rep`` (ms) that times at least ``min_reps`` runs of a call of ``call_s`` seconds: ``REP_MS``
    (always for ``min_reps`` 1: do_bench's own count), or ``min_reps`` calls' worth (plus 5 %) where that is longer.
    do_bench runs ``max(1, int(rep / estimate))`` timed calls, so with the default ``REP_MS`` (100 ms) every call
    over 100 ms is timed once.

    Raises:
        MoEBlockError: ``min_reps`` not an int >= 1, or ``call_s`` not a finite number > 0.
    """
    if isinstance(min_reps, bool) or not isinstance(min_reps, int) or min_reps < 1:
        raise MoEBlockError(f"min_reps must be an integer >= 1, got {min_reps!r}")
    if not (isinstance(call_s, (int, float)) and math.isfinite(call_s) and call_s > 0):
        raise MoEBlockError(f"call_s must be a finite number of seconds > 0, got {call_s!r}")
    return REP_MS if min_reps == 1 else max(REP_MS, min_reps * call_s * 1e3 * 1.05)


def _do_bench_wall_s(call_s: float, min_reps: int = 1) -> float:
    """do_bench: 1 + 5 estimate runs, then warmup/rep runs (at least one warm-up, at least ``min_reps`` timed), plus
    the 256 MB flush."""
    n = max(1, math.ceil(WARMUP_MS * 1e-3 / call_s)) + max(min_reps, math.ceil(REP_MS * 1e-3 / call_s))
    return (6 + n) * (call_s + 1e-4)


def estimate_item_s(
    item: BlockItem, recipes: Sequence[str] = RECIPES, *, phase: str = "time", min_reps: int = 1
) -> float:
    """Wall seconds one item takes in ``phase`` (time: fwd and fwd+bwd do_bench per recipe, each timing at least
    ``min_reps`` runs; kernels: warm-up plus profiled iterations per recipe), plus weight setup."""
    c = item.cfg
    s = EST_ITEM_SETUP_S + 3 * c.expert_params * 2 / 0.3e12
    for r in recipes:
        t = _call_s(item, r)
        if phase == "time":
            s += _do_bench_wall_s(t / 3, min_reps) + _do_bench_wall_s(t, min_reps) + 3 * t
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
