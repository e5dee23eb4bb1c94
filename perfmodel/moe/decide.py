"""float8 decisions for the routed experts of an MoE layer: speedup, enable/skip, break-even tokens, the filters.

``speedup = bf16 block time / recipe block time`` (fwd + bwd, :func:`perfmodel.moe.block.expert_block_time`), on
the same per-expert counts. The block's shared experts are priced in both (bf16, or ``shared_recipe`` on the
recipe side), so the speedup is the whole block's, as a user timing the MoE layer's feed-forward sees it.

What the conversion looks like:

* torchao (0.17): ``quantize_(model, Float8TrainingOpConfig.from_recipe(Float8TrainingRecipe.FP8_ROWWISE),
  filter_fn=fn)`` calls ``fn(module, fqn)`` per module (``torchao/prototype/moe_training/conversion_utils.py``,
  ``_swap_params``) and swaps the parameters of those that pass; :func:`filter_fn` returns such an ``fn``.
* torchtitan v0.2.x: ``--quantize.grouped_mm.float8.fqns="experts"`` (``Float8GroupedMMConverter``: a module is
  converted when one of the strings is a substring of its fqn; ``torchtitan/config/job_config.py``);
  :func:`fqns` returns that list. torchtitan's main branch (2026-08, ``Float8GroupedExpertsConverter``) converts
  every ``GroupedExperts`` and takes no list: there, the answer is whether to add the converter at all
  (:func:`should_use`).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable
from typing import Any

from ..errors import InvalidShapeError
from ..models.base import split_clauses
from ..presets import ModelPreset, MoEShape
from ..specs.gpu import get_gpu
from .block import (
    ALIGN,
    GEMM_DENSE_LOAD,
    GEMM_DENSE_SPEEDUP_ERROR,
    LONG_STEP_ERROR,
    LONG_STEP_TOKENS,
    SPEEDUP_ERROR_BAR,
    TWIN_ERROR,
    TWIN_LONG_STEP_ERROR,
    ExpertBlockTime,
    as_moe_shape,
    expert_block_time,
    h200_twin,
    is_long_step,
    twin_long_step_shape,
    twin_speedup_direction,
    twin_speedup_error,
)

__all__ = [
    "BlockDecision",
    "BreakEven",
    "block_decision",
    "break_even_tokens",
    "filter_fn",
    "fqns",
    "routed_experts_section",
    "should_use",
    "speedup",
]


@dataclasses.dataclass(frozen=True)
class BlockDecision:
    """bf16 against ``recipe`` for one block: both :class:`ExpertBlockTime` s, ``speedup``, ``use`` (speedup >=
    ``min_speedup``), and ``reason``. ``close_call``: the speedup lies within the model's measured speedup error
    (:data:`~perfmodel.moe.block.SPEEDUP_ERROR_BAR` p90, H200 event-law blocks) of ``min_speedup``, so the call can
    be wrong (the reason says so; measure before deciding); False where the block is not validated.
    ``gemm_dense``: the bf16 block's tensor load is at least :data:`~perfmodel.moe.block.GEMM_DENSE_LOAD` on a
    validated H200 block, where the model's speedup has been low a little more often than high (59 % of 61
    held-out configurations, predicted / measured down to 0.88): the reason says so, and ``close_call`` uses that
    regime's error (:data:`~perfmodel.moe.block.GEMM_DENSE_SPEEDUP_ERROR`). ``long_step``: a validated H200 block of
    more than :data:`~perfmodel.moe.block.LONG_STEP_TOKENS` tokens, beyond every fit, where the model over-predicted
    the speedup more often than not (88 % of 34 measured configurations, predicted / measured up to 1.15): the reason
    says the speedup is likely lower, and ``close_call`` uses that error (:data:`~perfmodel.moe.block.LONG_STEP_ERROR`)
    instead of the GEMM-dense one; on the H100 SXM that direction did not hold for families held out by shape
    (:data:`~perfmodel.moe.block.TWIN_LONG_STEP_ERROR`: over-predicted in 18 of 31) but did for the llama4 expert shape
    (:data:`~perfmodel.moe.block.TWIN_LONG_STEP_BY_SHAPE`, round 13), and a twin's reason says which
    (``gemm_dense`` still says whether the block is GEMM-dense). On a twin of the H200's board that is not the H200
    (:func:`~perfmodel.moe.block.h200_board`: H100-SXM, H800) a block is validated with the H200's terms transferred:
    the block times carry the block factor our H100 SXM measured (:data:`~perfmodel.moe.block.TWIN_BLOCK_FACTOR`)
    and the bar is widened to :data:`~perfmodel.moe.block.TWIN_ERROR` (our H100 SXM, six rounds: rounds 8-11 each
    priced with the factor fitted on the other three, rounds 12 and 14 pre-registered with it); the reason states that
    error, and a direction only where the measured configurations show one
    (:func:`~perfmodel.moe.block.twin_speedup_direction`). ``speedup_p90``: that p90 of |predicted / measured - 1|
    of the speedup, as a fraction (0.13: 13 %), the one ``close_call`` uses; None where the block is not validated."""

    bf16: ExpertBlockTime
    fp8: ExpertBlockTime
    speedup: float
    use: bool
    min_speedup: float
    reason: str
    close_call: bool = False
    gemm_dense: bool = False
    long_step: bool = False
    speedup_p90: float | None = None

    @property
    def verdict(self) -> str:
        """``"convert"`` where ``use``, else ``"keep bf16"``."""
        return "convert" if self.use else "keep bf16"

    def _head(self) -> str:
        b, f = self.bf16, self.fp8
        close = " (a close call: measure before deciding)" if self.close_call else ""
        return (
            f"{b.config.name} on {b.gpu}, {b.tokens} tokens: bf16 {b.total_s * 1e3:.3f} ms, {f.recipe} "
            f"{f.total_s * 1e3:.3f} ms -> {self.speedup:.3f}x: {self.verdict}{close}"
        )

    def __repr__(self) -> str:
        return f"BlockDecision({self._head()})"

    def __str__(self) -> str:
        why = split_clauses(self.reason)
        blocks = [f"  bf16 block: {self.bf16!r}", f"  {self.fp8.recipe} block: {self.fp8!r}"]
        return "\n".join([self._head(), *(f"  {c}" for c in why), *blocks])


def _with_experts(config: Any, experts: int | None) -> MoEShape:
    m = as_moe_shape(config)
    if experts is None:
        return m
    if isinstance(experts, bool) or not isinstance(experts, numbers.Integral) or experts < m.top_k:
        raise InvalidShapeError(
            f"experts must be a whole number >= top_k ({m.top_k}): the routed experts on this GPU, got {experts!r}"
        )
    return dataclasses.replace(m, experts=int(experts))


def _min_speedup(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) or v <= 0:
        raise InvalidShapeError(f"min_speedup must be a finite number > 0, got {v!r}")
    return float(v)


def block_decision(
    preset_or_config: Any,
    *,
    tokens: Any,
    gpu: Any = "H200",
    recipe: str = "rowwise",
    min_speedup: float = 1.0,
    experts: int | None = None,
    **block: Any,
) -> BlockDecision:
    """Price the block in bf16 and in ``recipe`` (same counts) and decide. ``block``: the other keywords of
    :func:`~perfmodel.moe.block.expert_block_time` (counts, skew, fused_gate_up, shared_recipe, compiled, timing,
    time_model). ``experts``: routed experts on this GPU (expert parallelism), default the preset's."""
    ms = _min_speedup(min_speedup)
    m = _with_experts(preset_or_config, experts)
    shared = block.pop("shared_recipe", None)
    spec = get_gpu(gpu)  # a name or a GPUSpec of the user's (dataclasses.replace): resolved once
    b = expert_block_time(m, tokens=tokens, gpu=spec, recipe="bf16", **block)
    f = expert_block_time(m, tokens=tokens, gpu=spec, recipe=recipe, shared_recipe=shared, **block)
    s = b.total_s / f.total_s
    use = s >= ms
    quant = sum(k.seconds for k in f.kernels if k.kind == "quant")
    gem_b = sum(k.seconds for k in b.kernels if k.kind == "gemm")
    gem_f = sum(k.seconds for k in f.kernels if k.kind == "gemm")
    reason = (
        f"{recipe} saves {(gem_b - gem_f) * 1e3:.3f} ms of grouped GEMMs and adds {quant * 1e3:.3f} ms of "
        f"quantization{_beyond_kernels(b, f)}: speedup {s:.3f} {'>=' if use else '<'} {ms:g}"
    )
    validated = f.error_bar.get("p50") is not None
    long_step = validated and is_long_step(spec, "bf16", b.event_law, b.tokens)
    dense = validated and b.tensor_load >= GEMM_DENSE_LOAD
    bar = LONG_STEP_ERROR["speedup"] if long_step else GEMM_DENSE_SPEEDUP_ERROR if dense else SPEEDUP_ERROR_BAR
    twin = validated and h200_twin(spec)
    bar = twin_speedup_error(spec, bar)
    p90 = bar["p90"] / 100
    close = validated and abs(s / ms - 1) < p90
    if long_step:
        e = LONG_STEP_ERROR["speedup"]
        reason += (
            f"; beyond {LONG_STEP_TOKENS} tokens per step, where the H200 measurements at 65536-131072 tokens found "
            f"the model over-predicting the speedup more often than not (predicted / measured median "
            f"{e['median_ratio']:.3f}, up to {e['max_ratio']:.2f}, {int(e['n'])} configurations: round 7's held-out "
            f"families and the fit families' own)"
        )
        reason += _twin_long_step(b.gpu, b.config) if twin else ", so the speedup is likely lower than this"
    elif dense and not twin:  # the GEMM-dense regime's error was measured up to LONG_STEP_TOKENS only, on the H200
        e = GEMM_DENSE_SPEEDUP_ERROR
        reason += (
            f"; a GEMM-dense block (bf16 tensor load {b.tensor_load:.2f} >= {GEMM_DENSE_LOAD:g}): on the H200 the "
            f"model's speedup for such blocks was low more often than high (measured / predicted median "
            f"{1 / e['median_ratio']:.3f}, up to {1 / e['min_ratio']:.2f}, {e['n']} held-out configurations), so the "
            f"speedup may be higher than this"
        )
    if twin:  # beyond LONG_STEP_TOKENS the direction is the long steps' own, stated above
        e, d = TWIN_ERROR["speedup"], None if long_step else twin_speedup_direction()
        reason += (
            f"; the H200's board terms transferred to the {b.gpu} with the block factor our H100 SXM measured: there "
            f"the speedup (rounds 8-11 each priced with the factor fitted on the others, rounds 12 and 14 "
            f"pre-registered with it) came out at predicted / measured median {e['median_ratio']:.3f} "
            f"({e['min_ratio']:.2f}-{e['max_ratio']:.2f}, over-predicted in "
            f"{e['over'] * 100:.0f} % of {int(e['n'])} configurations, 8192-131072 tokens)"
            + (f", so the speedup is likely {d} than this" if d else "")
        )
    if close:
        where = "long-step " if long_step else "GEMM-dense " if dense else "pre-registered "
        where += "H200 blocks" + (" and H100 SXM blocks (post-selection)" if twin else "")
        reason += (
            f"; a close call: within the model's speedup error of {ms:g} (p90 {100 * p90:.0f} % on {where}, "
            "docs/validation/moe.md), so measure before deciding"
        )
    return BlockDecision(
        bf16=b,
        fp8=f,
        speedup=s,
        use=use,
        min_speedup=ms,
        reason=reason,
        close_call=close,
        gemm_dense=dense,
        long_step=long_step,
        speedup_p90=p90 if validated else None,
    )


def _beyond_kernels(b: ExpertBlockTime, f: ExpertBlockTime) -> str:
    """The reason's clause on the seconds each block's time holds beyond its kernels (the event law's host wait and
    sustained-run seconds, :data:`~perfmodel.moe.block.EVENT_LAW`, or the host constants), so that the reason's sums
    add up to the speedup; empty where both are their kernels' sum (``timing="kernel"``)."""
    extra = [(x, x.total_s - sum(k.seconds for k in x.kernels)) for x in (b, f)]
    if all(abs(e) < 1e-3 * x.total_s for x, e in extra):
        return ""
    parts = []
    for x, e in extra:
        what = f"{x.recipe} {'+' if e >= 0 else '-'}{abs(e) * 1e3:.3f} ms"
        if x.power_cap_factor > 1.0:
            what += f" (the power cap: kernels x{x.power_cap_factor:.3f})"
        parts.append(what)
    return f", and beyond the kernels the event time (host waits, sustained run) adds {', '.join(parts)}"


def _twin_long_step(gpu: str, m: MoEShape) -> str:
    """The long-step clause's end on a twin of the H200's board: whether our H100 SXM's long steps showed the H200's
    direction (:data:`~perfmodel.moe.block.TWIN_LONG_STEP_ERROR`, families held out by shape), and what it measured
    for this expert shape where round 13 timed it (:data:`~perfmodel.moe.block.TWIN_LONG_STEP_BY_SHAPE`), whose
    direction, where it has one, is the answer's."""
    t, pooled = TWIN_LONG_STEP_ERROR["speedup"], twin_speedup_direction(long_step=True)
    lead = {"lower": "so did", "higher": "the other way on"}.get(pooled, "not so on")
    seen = (
        f"our H100 SXM's {int(t['n'])} blocks of more than {LONG_STEP_TOKENS} tokens (families held out by shape): "
        f"predicted / measured median {t['median_ratio']:.3f}, {t['min_ratio']:.2f}-{t['max_ratio']:.2f}, "
        f"over-predicted in {t['over'] * 100:.0f} %"
    )
    mine, d = "", pooled
    shape = twin_long_step_shape(m.dim, m.moe_inter)
    if shape is not None:  # the shape's own measured direction, where it has one, is the answer's
        s, sd = shape
        mine = (
            f"; for this expert shape (dim {m.dim}, moe_inter {m.moe_inter}: {s['families']}, round 13, in-shape) "
            f"it measured predicted / measured {s['min_ratio']:.2f}-{s['max_ratio']:.2f} (median "
            f"{s['median_ratio']:.3f}, {int(s['n'])} configurations)"
        )
        d = sd or pooled
    tail = f", so the speedup on the {gpu} is likely {d} than this" if d else f": no direction is known on the {gpu}"
    return f"; {lead} {seen}{mine}{tail}"


def speedup(preset_or_config: Any, *, tokens: Any, gpu: Any = "H200", recipe: str = "rowwise", **kw: Any) -> float:
    """bf16 block time / ``recipe`` block time (fwd + bwd): > 1 means float8 is faster. Keywords as
    :func:`block_decision`."""
    kw.pop("min_speedup", None)
    return block_decision(preset_or_config, tokens=tokens, gpu=gpu, recipe=recipe, **kw).speedup


def should_use(
    preset_or_config: Any,
    *,
    tokens: Any,
    gpu: Any = "H200",
    recipe: str = "rowwise",
    min_speedup: float = 1.0,
    **kw: Any,
) -> bool:
    """True where the block's float8 speedup is at least ``min_speedup``. Keywords as :func:`block_decision`."""
    return block_decision(preset_or_config, tokens=tokens, gpu=gpu, recipe=recipe, min_speedup=min_speedup, **kw).use


@dataclasses.dataclass(frozen=True)
class BreakEven:
    """The smallest tokens per step (on this GPU, a multiple of 16) at which the block's speedup reaches
    ``min_speedup``; ``None`` if not up to ``max_tokens``.

    Attributes:
        tokens: tokens per step (``T``; the block routes ``T * top_k`` rows). tokens_per_expert: the mean routed
            rows per expert at that point, ``T * top_k / experts``. speedup: the speedup there.
        monotone: False where the speedup on the search grid falls below ``min_speedup`` again above the
            crossing (then ``crossings`` lists the grid intervals where it crosses upward). note: a sentence.
    """

    tokens: int | None
    tokens_per_expert: float | None
    speedup: float | None
    min_speedup: float
    monotone: bool
    crossings: tuple[tuple[int, int], ...]
    note: str


def break_even_tokens(
    preset_or_config: Any,
    *,
    gpu: Any = "H200",
    recipe: str = "rowwise",
    experts: int | None = None,
    min_speedup: float = 1.0,
    max_tokens: int = 1 << 20,
    **block: Any,
) -> BreakEven:
    """Smallest tokens per step at which ``speedup >= min_speedup`` (balanced routing, or ``skew=``): a doubling grid
    16, 32, ... up to ``max_tokens``, then bisection over multiples of 16 inside the first upward crossing.
    Both the tokens per step and per expert are returned (:class:`BreakEven`). ``counts=`` is refused (a count
    vector belongs to one token count)."""
    if block.get("counts") is not None:
        raise InvalidShapeError("break_even_tokens searches token counts: pass skew= or balanced routing, not counts=")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, numbers.Integral) or max_tokens < 16:
        raise InvalidShapeError(f"max_tokens must be a whole number >= 16, got {max_tokens!r}")
    ms = _min_speedup(min_speedup)
    m = _with_experts(preset_or_config, experts)

    def s_of(t: int) -> float:
        return speedup(m, tokens=t, gpu=gpu, recipe=recipe, **block)

    grid = [16 << i for i in range(int(math.log2(max_tokens // 16)) + 1)]
    vals = [s_of(t) for t in grid]
    ok = [v >= ms for v in vals]
    crossings = tuple((grid[i - 1], grid[i]) for i in range(1, len(grid)) if ok[i] and not ok[i - 1])
    monotone = all(ok[j] for j in range(ok.index(True), len(ok))) if any(ok) else True
    if not any(ok):
        best = max(vals)
        note = f"speedup stays below {ms:g} up to {grid[-1]} tokens (largest {best:.3f} at {grid[vals.index(best)]})"
        return BreakEven(None, None, None, ms, monotone, crossings, note)
    first = ok.index(True)
    if first == 0:
        lo_t, hi_t = 0, 16
    else:
        lo_t, hi_t = grid[first - 1], grid[first]
    while hi_t - lo_t > 16:  # bisection on multiples of 16: s(lo) < ms <= s(hi)
        mid = (lo_t + hi_t) // 32 * 16
        if s_of(mid) >= ms:
            hi_t = mid
        else:
            lo_t = mid
    d = block_decision(m, tokens=hi_t, gpu=gpu, recipe=recipe, min_speedup=ms, **block)  # one pricing: s and regime
    s_hi = d.speedup
    note = f"speedup reaches {ms:g} at {hi_t} tokens per step ({hi_t * m.top_k / m.experts:.1f} rows per expert)"
    if not monotone:
        note += "; not monotone: it falls below again above that on the doubling grid (see crossings)"
    twin = d.fp8.error_bar.get("p50") is not None and h200_twin(gpu)
    direction = twin_speedup_direction(d.long_step) if twin else None
    shape = twin_long_step_shape(m.dim, m.moe_inter) if twin and d.long_step else None
    if shape is not None and shape[1] is not None:
        s, sd = shape
        note += (
            f"; on the H100 SXM this expert shape's blocks of more than {LONG_STEP_TOKENS} tokens ({s['families']}, "
            f"round 13) were {'over' if sd == 'lower' else 'under'}-predicted in all {int(s['n'])} (predicted / "
            f"measured median {s['median_ratio']:.3f}): the break-even is likely "
            f"{'later, if there is one' if sd == 'lower' else 'earlier'}"
        )
    elif direction is not None:
        e = (TWIN_LONG_STEP_ERROR if d.long_step else TWIN_ERROR)["speedup"]
        note += (
            f"; on the H100 SXM the model's speedup was {'over' if direction == 'lower' else 'under'}-predicted in "
            f"{max(e['over'], 1 - e['over']) * 100:.0f} % of the measured configurations"
            + (f" of more than {LONG_STEP_TOKENS} tokens" if d.long_step else "")
            + f" (predicted / measured median {e['median_ratio']:.3f}): the break-even is likely "
            f"{'later' if direction == 'lower' else 'earlier'}" + (", if there is one" if direction == "lower" else "")
        )
    elif twin and d.long_step:
        e, t = LONG_STEP_ERROR["speedup"], TWIN_LONG_STEP_ERROR["speedup"]
        note += (
            f"; beyond {LONG_STEP_TOKENS} tokens per step the H200 over-predicted the speedup in "
            f"{e['over'] * 100:.0f} % of its measured configurations, our H100 SXM in {t['over'] * 100:.0f} % of its "
            f"{int(t['n'])}: no direction is known for the break-even on the {d.fp8.gpu}"
        )
    elif d.long_step:
        e = LONG_STEP_ERROR["speedup"]
        note += (
            f"; beyond {LONG_STEP_TOKENS} tokens per step, where the model over-predicted the speedup on the H200 "
            f"more often than not (65536-131072 tokens: predicted / measured median {e['median_ratio']:.3f}, up to "
            f"{e['max_ratio']:.2f}): the break-even is likely later, if there is one"
        )
    return BreakEven(hi_t, hi_t * m.top_k / m.experts, s_hi, ms, monotone, crossings, note)


def _is_routed_experts(module: Any, fqn: str) -> bool:
    """The routed-experts module: fqn ends with "experts" (not "shared_experts"/"shared_expert"), or a module with
    3-D ``w1``, ``w2``, ``w3`` parameters (torchtitan's ``GroupedExperts``)."""
    last = fqn.rsplit(".", 1)[-1]
    if last.startswith("shared_expert"):
        return False
    if last == "experts":
        return True
    ws = [getattr(module, n, None) for n in ("w1", "w2", "w3")]
    return all(w is not None and getattr(w, "ndim", 0) == 3 for w in ws)


def filter_fn(
    preset_or_config: Any, *, tokens: Any, gpu: Any = "H200", recipe: str = "rowwise", **kw: Any
) -> Callable[[Any, str], bool]:
    """A ``filter_fn(module, fqn) -> bool`` for torchao's ``quantize_(model, config, filter_fn=...)``: True for the
    routed-experts module when the block pays (:func:`should_use` with ``kw``), False for everything else (the
    shared experts, the router and attention stay with the dense float8 path). The decision is made once, here;
    the callable carries it as ``fn.decision`` (:class:`BlockDecision`)."""
    d = block_decision(preset_or_config, tokens=tokens, gpu=gpu, recipe=recipe, **kw)

    def fn(module: Any, fqn: str) -> bool:
        return d.use and _is_routed_experts(module, fqn)

    fn.decision = d  # type: ignore[attr-defined]
    fn.__doc__ = f"routed experts in {recipe}: {d.verdict} ({d.reason})"
    return fn


def fqns(preset_or_config: Any, *, tokens: Any, gpu: Any = "H200", recipe: str = "rowwise", **kw: Any) -> list[str]:
    """The list for torchtitan's ``--quantize.grouped_mm.float8.fqns`` (v0.2.x; substring match on module fqns):
    ``["experts"]`` when the block pays, ``[]`` when it does not. Every MoE layer of a preset has the same block, so
    the answer is all or none."""
    return ["experts"] if block_decision(preset_or_config, tokens=tokens, gpu=gpu, recipe=recipe, **kw).use else []


def routed_experts_section(
    preset: ModelPreset | str, *, tokens: int, gpu: Any = "H200", recipes: tuple[str, ...] = ("rowwise",), **kw: Any
) -> tuple[str, list[dict[str, Any]]]:
    """The CLI's "Routed experts (grouped GEMMs, perfmodel.moe)" section for an MoE preset: text and JSON rows.
    Recipes the block does not price (tensorwise, ...) or the GPU cannot run are listed as skipped."""
    from ..errors import PerfModelError
    from .block import RECIPES

    m = as_moe_shape(preset)
    lines = [
        "",
        "Routed experts (grouped GEMMs, perfmodel.moe):",
        f"  {m.name}: {m.experts} experts, top-{m.top_k}, dim {m.dim}, moe_inter {m.moe_inter}, shared width "
        f"{m.shared_width}; {tokens} tokens; the block a grouped-GEMM MoE layer runs (torchtitan's GroupedExperts: "
        "router, permutation, torch._grouped_mm / torchao's _scaled_grouped_mm, quantization, shared experts), "
        "fwd+bwd; the per-expert rows above are the other layout, one nn.Linear per expert",
    ]
    rows: list[dict[str, Any]] = []
    for r in recipes:
        if r not in RECIPES or r == "bf16":
            lines.append(f"  {r}: not a grouped-GEMM recipe of torchao's moe_training (rowwise, mxfp8): skipped")
            continue
        try:
            d = block_decision(m, tokens=tokens, gpu=gpu, recipe=r, **kw)
        except PerfModelError as e:
            lines.append(f"  {r}: skipped ({e})")
            continue
        verdict = d.verdict + (
            " (a close call, within the model's error: measure before deciding)" if d.close_call else ""
        )
        lines.append(
            f"  {r}: block bf16 {d.bf16.total_s * 1e3:.3f} ms vs {r} {d.fp8.total_s * 1e3:.3f} ms (fwd+bwd, align "
            f"{ALIGN[r]}) -> speedup {d.speedup:.3f}: {verdict}"
        )
        why = split_clauses(d.reason)  # one clause per line: the reason's text, nothing dropped
        lines.append(f"    {why[0]} (eager, as torchao 0.17 runs it without torch.compile)")
        lines += [f"      {c}" for c in why[1:]]
        if r == "rowwise" and "compiled" not in kw:
            c = block_decision(m, tokens=tokens, gpu=gpu, recipe=r, compiled=True, **kw)
            lines.append(
                f"    under torch.compile (the weight casts fused; an estimate): {c.fp8.total_s * 1e3:.3f} ms -> "
                f"speedup {c.speedup:.3f}: {c.verdict}"
            )
        filt = 'lambda mod, fqn: fqn.rsplit(".", 1)[-1] == "experts"' if d.use else "lambda mod, fqn: False"
        lines.append(f"    torchao: quantize_(model, Float8TrainingOpConfig.from_recipe(...), filter_fn={filt})")
        lines.append(f"    torchtitan v0.2: --quantize.grouped_mm.float8.fqns={'experts' if d.use else '(none)'}")
        lines.append("    provenance:")
        lines += [f"      - {c}" for c in split_clauses(d.fp8.provenance)]
        rows.append(
            {
                "recipe": r,
                "bf16_ms": d.bf16.total_s * 1e3,
                "recipe_ms": d.fp8.total_s * 1e3,
                "speedup": d.speedup,
                "use": d.use,
                "close_call": d.close_call,
                "gemm_dense": d.gemm_dense,
                "long_step": d.long_step,
                "reason": d.reason,
                "provenance": d.fp8.provenance,
            }
        )
    return "\n".join(lines), rows
