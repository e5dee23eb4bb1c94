"""What the grouped-GEMM sweep runs: the shapes of every family, the stratified seeded order, the cut at the time
budget (:func:`plan_items`), the estimated phase times and the plan's text summary. Pure Python.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .config import (
    BF16,
    DO_BENCH_HOST_S,
    EMPTY_FRACTION,
    EST_BF16_FLOPS,
    EST_BYTES_PER_S,
    EST_FILL_BYTES_PER_S,
    EST_FP8_FLOPS,
    EST_LAUNCH_S,
    EST_TILE_K,
    EST_TILE_ROWS,
    FAMILIES,
    FLUSH_S,
    FP8,
    FWD_VARIANTS,
    G_SET,
    GPU_WARM_S,
    KERNELS_BUDGET_S,
    KERNELS_ITEM_OVERHEAD_S,
    KERNELS_SHAPE_OVERHEAD_S,
    KERNELS_STARTUP_S,
    MAX_ITEM_KERNEL_S,
    MAX_ROWS_PER_GROUP,
    MAX_TOTAL_ROWS,
    MIN_REPS,
    MIN_ROWS_PER_GROUP,
    MOE_MODELS,
    PROFILE_WARMUP_CALLS,
    PROFILED_CALLS,
    QUICK_MAX_KERNEL_S,
    QUICK_SHAPES_PER_FAMILY,
    RANDOM_FAMILY,
    RANDOM_FWD_PAIRS,
    RANDOM_G_PER_PAIR,
    RANDOM_KN,
    RANDOM_WGRAD_PAIRS,
    REP_MS,
    SKEW_ALPHAS,
    TIME_BUDGET_S,
    TIME_ITEM_OVERHEAD_S,
    TIME_SHAPE_OVERHEAD_S,
    TIME_STARTUP_S,
    WARMUP_MS,
    WGRAD_VARIANTS,
    GroupedGemmError,
    MoEModel,
)
from .items import (
    GroupedItem,
    NeighbourItem,
    _check_int,
    _round_up,
    balanced_rows,
    dirichlet_rows,
    empty_rows,
    neighbour_items,
    pick_empty,
)

__all__ = [
    "PlanInfo",
    "estimate_item_kernel_s",
    "estimate_kernels_phase_s",
    "estimate_time_phase_s",
    "plan_items",
    "plan_summary",
]


def estimate_item_kernel_s(item: GroupedItem) -> float:
    """Rough kernel time of one call, seconds (sizing only): the larger of FLOP time (rows rounded up per group to
    EST_TILE_ROWS in fwd, tokens per group to EST_TILE_K in wgrad) and byte time, plus EST_LAUNCH_S."""
    peak = EST_FP8_FLOPS if item.fmt == FP8 else EST_BF16_FLOPS
    if item.form == "fwd":
        eff = sum(_round_up(r, EST_TILE_ROWS) for r in item.rows if r)
    else:
        eff = sum(_round_up(r, EST_TILE_K) for r in item.rows if r)
    flop_s = 2 * eff * item.K * item.N / peak
    return max(flop_s, item.min_bytes() / EST_BYTES_PER_S) + EST_LAUNCH_S


def _bench_budget_ms(kernel_s: float, warmup_ms: float, rep_ms: float) -> tuple[float, float]:
    """do_bench (warmup, rep), ms: at least one kernel of warm-up and MIN_REPS timed runs."""
    t = kernel_s * 1e3
    return max(warmup_ms, t), max(rep_ms, MIN_REPS * t)


def _do_bench_wall_s(kernel_s: float, warmup_ms: float, rep_ms: float) -> float:
    """Wall time of one do_bench call: 5 estimate runs, the warm-up (no flush) and the timed runs (each after the
    L2 flush), seconds."""
    warm, rep = _bench_budget_ms(kernel_s, warmup_ms, rep_ms)
    per = kernel_s + FLUSH_S
    n_rep = max(1, int(rep * 1e-3 / per))
    n_warm = max(1, int(warm * 1e-3 / per))
    return DO_BENCH_HOST_S + (5 + n_rep) * per + n_warm * kernel_s


def _time_item_s(k: float, warmup_ms: float, rep_ms: float) -> float:
    return TIME_ITEM_OVERHEAD_S + _do_bench_wall_s(k, warmup_ms, rep_ms)


def _shape_overhead_s(items: Sequence[GroupedItem]) -> float:
    weights = sum({(i.fmt, i.layout): i.weight_bytes() for i in items}.values())
    return TIME_SHAPE_OVERHEAD_S + weights / EST_FILL_BYTES_PER_S


def estimate_time_phase_s(
    items: Sequence[GroupedItem],
    neighbours: Sequence[NeighbourItem] = (),
    *,
    warmup_ms: float = WARMUP_MS,
    rep_ms: float = REP_MS,
) -> float:
    """Estimated wall time of the ``time`` phase, seconds: startup, every do_bench call, the weights of each shape."""
    total = TIME_STARTUP_S + GPU_WARM_S
    total += sum(_time_item_s(n.kernel_s(), warmup_ms, rep_ms) for n in neighbours)
    for shape in _by_shape(items).values():
        total += _shape_overhead_s(shape) + sum(
            _time_item_s(estimate_item_kernel_s(i), warmup_ms, rep_ms) for i in shape
        )
    return total


def estimate_kernels_phase_s(
    items: Sequence[GroupedItem], neighbours: Sequence[NeighbourItem] = (), *, calls: int = PROFILED_CALLS
) -> float:
    """Estimated wall time of the ``kernels`` phase, seconds."""
    n = PROFILE_WARMUP_CALLS + calls
    total = KERNELS_STARTUP_S + KERNELS_SHAPE_OVERHEAD_S * (len(neighbours) > 0)
    total += sum(KERNELS_ITEM_OVERHEAD_S + n * (x.kernel_s() + FLUSH_S) for x in neighbours)
    for shape in _by_shape(items).values():
        total += KERNELS_SHAPE_OVERHEAD_S + _shape_overhead_s(shape)
        total += sum(KERNELS_ITEM_OVERHEAD_S + n * (estimate_item_kernel_s(i) + FLUSH_S) for i in shape)
    return total


def _by_shape(items: Iterable[GroupedItem]) -> dict[int, list[GroupedItem]]:
    out: dict[int, list[GroupedItem]] = {}
    for i in items:
        out.setdefault(i.group, []).append(i)
    return out


def _log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    if hi <= lo:
        return lo
    return max(lo, min(hi, round(math.exp(rng.uniform(math.log(lo), math.log(hi))))))


@dataclasses.dataclass(frozen=True)
class _Shape:
    form: str
    family: str
    K: int
    N: int
    G: int
    roles: tuple[str, ...]


def _model_shapes(model: MoEModel) -> list[_Shape]:
    """fwd (K, N): (h, 2i) w13 fwd, (2i, h) w13 dgrad, (h, i) w1/w3 fwd and w2 dgrad, (i, h) w2 fwd and w1/w3 dgrad;
    wgrad (K, N) of out [G, N, K]: (h, 2i) w13, (h, i) w1/w3, (i, h) w2 (weights [G, out, in]); equal (K, N) merged."""
    h, i = model.hidden, model.inter
    fwd: dict[tuple[int, int], list[str]] = {}
    for kn, roles in (
        ((h, 2 * i), ["w13_fwd"]),
        ((2 * i, h), ["w13_dgrad"]),
        ((h, i), ["w1_fwd", "w3_fwd", "w2_dgrad"]),
        ((i, h), ["w2_fwd", "w1_dgrad", "w3_dgrad"]),
    ):
        fwd.setdefault(kn, []).extend(r for r in roles if r not in fwd.get(kn, []))
    wgrad: dict[tuple[int, int], list[str]] = {}
    for kn, roles in (((h, 2 * i), ["w13_wgrad"]), ((h, i), ["w1_wgrad", "w3_wgrad"]), ((i, h), ["w2_wgrad"])):
        wgrad.setdefault(kn, []).extend(r for r in roles if r not in wgrad.get(kn, []))
    gs = [g for g in G_SET if g <= model.experts]
    out = []
    for form, table in (("fwd", fwd), ("wgrad", wgrad)):
        for (K, N), roles in table.items():
            out += [_Shape(form, model.name, K, N, g, tuple(roles)) for g in gs]
    return out


def _random_shapes(seed: int) -> list[_Shape]:
    rng = random.Random(f"random_kn:{seed}")
    out = []
    for form, n in (("fwd", RANDOM_FWD_PAIRS), ("wgrad", RANDOM_WGRAD_PAIRS)):
        for _ in range(n):
            K = _round_up(_log_uniform(rng, *RANDOM_KN), 16)
            N = _round_up(_log_uniform(rng, *RANDOM_KN), 16)
            for g in sorted(rng.sample(G_SET, RANDOM_G_PER_PAIR)):
                out.append(_Shape(form, RANDOM_FAMILY, K, N, g, ()))
    # distinct (form, K, N, G): a repeated draw is kept once
    seen: set[tuple[str, int, int, int]] = set()
    uniq = []
    for s in out:
        key = (s.form, s.K, s.N, s.G)
        if key not in seen:
            seen.add(key)
            uniq.append(s)
    return uniq


def _max_m(shape: _Shape) -> int:
    """Largest mean rows per group for the shape: MAX_ROWS_PER_GROUP, MAX_TOTAL_ROWS / G, and bf16 FLOP time at
    most MAX_ITEM_KERNEL_S."""
    by_time = int(MAX_ITEM_KERNEL_S * EST_BF16_FLOPS / (2 * shape.G * shape.K * shape.N))
    return max(MIN_ROWS_PER_GROUP, min(MAX_ROWS_PER_GROUP, MAX_TOTAL_ROWS // shape.G, by_time))


def _vectors(
    shape: _Shape, seed: int, shape_index: int
) -> list[tuple[str, int, tuple[tuple[str, Any], ...], list[int]]]:
    """The group-size vectors of a shape: (dist, m, dist_param, rows). G >= 2: balanced, skewed (alpha SKEW_ALPHAS
    cycled by the shape's index in its family), empty; G = 1: two balanced at distinct m."""
    rng = random.Random(f"vectors:{seed}:{shape.form}:{shape.family}:{shape.K}x{shape.N}:G{shape.G}")
    hi = _max_m(shape)
    out: list[tuple[str, int, tuple[tuple[str, Any], ...], list[int]]] = []
    if shape.G == 1:
        ms: list[int] = []
        for _ in range(100):
            m = _log_uniform(rng, MIN_ROWS_PER_GROUP, hi)
            if m not in ms:
                ms.append(m)
            if len(ms) == 2:
                break
        return [("balanced", m, (), balanced_rows(1, m)) for m in ms]
    m = _log_uniform(rng, MIN_ROWS_PER_GROUP, hi)
    out.append(("balanced", m, (), balanced_rows(shape.G, m)))
    alpha = SKEW_ALPHAS[shape_index % len(SKEW_ALPHAS)]
    m = _log_uniform(rng, MIN_ROWS_PER_GROUP, hi)
    param: tuple[tuple[str, Any], ...] = (("kind", "dirichlet"), ("alpha", alpha), ("seed", f"vectors:{seed}"))
    out.append(("skewed", m, param, dirichlet_rows(shape.G, m, rng, alpha)))
    m = _log_uniform(rng, MIN_ROWS_PER_GROUP, hi)
    gone = pick_empty(shape.G, rng)
    out.append(
        (
            "empty",
            m,
            (("empty_groups", tuple(gone)), ("fraction", EMPTY_FRACTION)),
            empty_rows(shape.G, shape.G * m, gone),
        )
    )
    return out


def _shape_items(shape: _Shape, vectors: Sequence[Any], group: int) -> list[GroupedItem]:
    variants = FWD_VARIANTS if shape.form == "fwd" else WGRAD_VARIANTS
    items = []
    for v, (dist, m, param, rows) in enumerate(vectors):
        for fmt, layout, padding in variants:
            items.append(
                GroupedItem(
                    form=shape.form,
                    family=shape.family,
                    K=shape.K,
                    N=shape.N,
                    G=shape.G,
                    fmt=fmt,
                    layout=layout,
                    dist=dist,
                    m=m,
                    dist_param=tuple(param),
                    rows_requested=tuple(rows),
                    padding=padding,
                    roles=shape.roles,
                    group=group,
                    vector=v,
                )
            )
    return items


def _stratified(shapes_by_family: Mapping[str, list[Any]], rng: random.Random) -> list[Any]:
    """All shapes in one order where every prefix holds each family in proportion to its size: each family's list
    shuffled, its j-th shape keyed (j + u) / n (u uniform per family), then sorted by key."""
    keyed = []
    for fam in sorted(shapes_by_family):
        lst = list(shapes_by_family[fam])
        rng.shuffle(lst)
        u = rng.random()
        keyed += [((j + u) / len(lst), fam, j, s) for j, s in enumerate(lst)]
    keyed.sort(key=lambda t: (t[0], t[1], t[2]))
    return [t[3] for t in keyed]


@dataclasses.dataclass
class PlanInfo:
    """What :func:`plan_items` kept and cut: shapes per family before and after the cut, the budget."""

    candidates: dict[str, int]
    kept: dict[str, int]
    budget_s: float | None
    estimated_s: float


def plan_items(
    *,
    seed: int = 0,
    budget_s: float | None = TIME_BUDGET_S,
    warmup_ms: float = WARMUP_MS,
    rep_ms: float = REP_MS,
    quick: bool = False,
    families: Sequence[str] | None = None,
) -> tuple[list[GroupedItem], list[NeighbourItem], PlanInfo]:
    """The grouped items in run order, the neighbour items (run first), and what was cut.

    Shapes (form, family, K, N, G) of every family are put in a stratified seeded order (:func:`_stratified`), then
    taken while the estimated time phase (:func:`estimate_time_phase_s`, neighbours included) stays within
    ``budget_s`` (None: no cut): the cut drops the same share of every family, never a family. ``quick``:
    QUICK_SHAPES_PER_FAMILY cheap shapes per family and QUICK_NEIGHBOURS neighbours, no budget cut."""
    _check_int("seed", seed, -(2**63))
    if budget_s is not None and not (isinstance(budget_s, (int, float)) and math.isfinite(budget_s) and budget_s > 0):
        raise GroupedGemmError(f"budget_s must be a positive number of seconds or None, got {budget_s!r}")
    fams = list(FAMILIES if families is None else families)
    unknown = [f for f in fams if f not in FAMILIES]
    if unknown or not fams:
        raise GroupedGemmError(f"unknown families {unknown!r}; valid: {', '.join(FAMILIES)}")
    by_family: dict[str, list[tuple[_Shape, int]]] = {}
    for model in MOE_MODELS:
        if model.name in fams:
            by_family[model.name] = [(s, j) for j, s in enumerate(_model_shapes(model))]
    if RANDOM_FAMILY in fams:
        by_family[RANDOM_FAMILY] = [(s, j) for j, s in enumerate(_random_shapes(seed))]
    order = _stratified(by_family, random.Random(f"order:{seed}"))
    neighbours = neighbour_items(seed, quick=quick)
    candidates = {f: len(v) for f, v in by_family.items()}
    kept: Counter[str] = Counter()
    items: list[GroupedItem] = []
    est = estimate_time_phase_s([], neighbours, warmup_ms=warmup_ms, rep_ms=rep_ms)
    ids: set[str] = set()
    for shape, j in order:
        if quick and kept[shape.family] >= QUICK_SHAPES_PER_FAMILY:
            continue
        new = _shape_items(shape, _vectors(shape, seed, j), sum(kept.values()))
        if quick and any(estimate_item_kernel_s(i) > QUICK_MAX_KERNEL_S for i in new):
            continue
        cost = _shape_overhead_s(new) + sum(_time_item_s(estimate_item_kernel_s(i), warmup_ms, rep_ms) for i in new)
        if not quick and budget_s is not None and est + cost > budget_s:
            break  # a prefix of the stratified order: the same share of every family
        dup = [i.id for i in new if i.id in ids]
        if dup:  # pragma: no cover - ids carry form, family, K, N, G, vector index, format and layout
            raise GroupedGemmError(f"duplicate item ids in the plan: {dup[:3]}")
        ids.update(i.id for i in new)
        items += new
        est += cost
        kept[shape.family] += 1
    info = PlanInfo(candidates=candidates, kept=dict(kept), budget_s=None if quick else budget_s, estimated_s=est)
    return items, neighbours, info


def _fmt_counter(counter: Mapping[Any, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(counter.items(), key=lambda kv: str(kv[0])))


def plan_summary(
    items: Sequence[GroupedItem],
    neighbours: Sequence[NeighbourItem],
    info: PlanInfo,
    *,
    seed: int,
    warmup_ms: float = WARMUP_MS,
    rep_ms: float = REP_MS,
    kernels_budget_s: float = KERNELS_BUDGET_S,
) -> str:
    """The plan as text: constants, shapes kept per family, items per form/format/layout, estimated phase times."""
    lines = [
        f"grouped_gemm plan, seed {seed}",
        f"  G_SET {list(G_SET)} (up to each model's experts); m log-uniform {MIN_ROWS_PER_GROUP}..{MAX_ROWS_PER_GROUP}"
        f" rows per group, T <= {MAX_TOTAL_ROWS}, items <= {MAX_ITEM_KERNEL_S * 1e3:.0f} ms (estimated)",
        f"  vectors: balanced, skewed (Dirichlet alpha {', '.join(f'{a:g}' for a in SKEW_ALPHAS)}), empty "
        f"({EMPTY_FRACTION:.0%} of groups, >= 1); G=1: two balanced",
        "  fwd: " + ", ".join(f"{f} {lay}" + (f" pad{p}" if p else "") for f, lay, p in FWD_VARIANTS),
        "  wgrad: " + ", ".join(f"{f} {lay}" + (f" pad{p}" if p else "") for f, lay, p in WGRAD_VARIANTS),
        f"  do_bench warmup {warmup_ms:g} ms, rep {rep_ms:g} ms (raised to {MIN_REPS} kernels), L2 flushed",
        "shapes kept / candidates per family: "
        + ", ".join(f"{f} {info.kept.get(f, 0)}/{n}" for f, n in sorted(info.candidates.items())),
        f"items: {len(items)} grouped + {len(neighbours)} fp8 neighbours",
    ]
    by = Counter((i.form, i.fmt, i.layout) for i in items)
    lines += [f"  {form:<5} {fmt:<17} {lay:<12} {n:>5}" for (form, fmt, lay), n in sorted(by.items())]
    lines.append(f"  vectors by dist: {_fmt_counter(Counter(i.dist for i in items if i.fmt == BF16))} (bf16 items)")
    lines.append(f"  G: {_fmt_counter(Counter(i.G for i in items))}")
    t = estimate_time_phase_s(items, neighbours, warmup_ms=warmup_ms, rep_ms=rep_ms)
    k = estimate_kernels_phase_s(items, neighbours)
    budget = "no cut" if info.budget_s is None else f"budget {info.budget_s:.0f} s"
    lines.append(
        f"estimated: time phase {t:.0f} s ({budget}), kernels phase {k:.0f} s (budget {kernels_budget_s:.0f} s)"
    )
    return "\n".join(lines)
