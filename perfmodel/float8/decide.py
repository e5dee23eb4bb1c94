"""The float8 decision: speedup over bf16, should_use, best_recipe, break-even tokens (public: :mod:`perfmodel.float8`).

Every function compares a recipe with the bf16 baseline on the same time model and takes ints,
floats, numpy arrays of any integer or float dtype (a whole grid of shapes in one call) or sympy
expressions.

Shapes float8 cannot run (``K`` or ``N`` not a multiple of 16, see :func:`perfmodel.float8.eligible`)
are part of the answer: ``should_use`` is False and ``best_recipe`` is ``"bf16"`` there; a scalar
``speedup`` or ``break_even_tokens`` raises :class:`~perfmodel.errors.IneligibleShapeError` saying why;
array inputs get a ``numpy.ma.MaskedArray`` whose masked entries are the ineligible shapes (never NaN,
and distinct from break-even's "never", which is ``-1``).

Symbolic ``K``/``N`` carry their eligibility: ``speedup`` and ``break_even_tokens`` return
``Piecewise((answer, Eq(Mod(K, 16), 0) & Eq(Mod(N, 16), 0)), (float8_ineligible, True))``, whose
otherwise-branch is no number (:func:`perfmodel._backend.ineligible`: ``float()`` of it raises
``IneligibleShapeError``), and ``should_use`` returns ``And(eligibility, speedup >= min_speedup)``, so no
substitution of a shape the numeric call refuses yields a speedup or ``True``. Masked arrays as inputs are
refused (:class:`~perfmodel.errors.MaskedInputError`): pass ``a.compressed()`` or ``a.filled(v)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._backend import (
    check_compatible,
    check_flag,
    check_ratio,
    check_shapes,
    check_size,
    guard_eligible,
    is_symbolic,
    namespace,
    short_repr,
    time_model_arg,
)
from ..errors import IneligibleShapeError, NoClosedFormError, PerfModelError
from ..models.base import ORIGINAL, Roofline
from ..models.calibrated import CalibratedModel
from ..models.errorbars import ErrorBar
from ..models.registry import ModelLike, gpu_error_bar, resolve
from ..models.registry import time_model as _pick_time_model
from ..models.shipped import ShippedCalibration
from ..specs.gpu import GPULike, get_gpu
from .linear import FP8_ALIGN, _linear_time, eligible, supported_recipes
from .recipes import RECIPES, CastOptions, Recipe, get_recipe

__all__ = [
    "BREAK_EVEN_EXACT_UP_TO",
    "best_recipe",
    "break_even_tokens",
    "should_use",
    "speedup",
    "speedup_error_bar",
]

#: break_even_tokens checks every multiple of 16 tokens up to here, which is exact on perfmodel's time
#: models (see the function's doc); above it, a geometric grid of 16 points per doubling.
BREAK_EVEN_EXACT_UP_TO = 1 << 20


def _ineligible_error(recipe: Recipe, K: Any, N: Any) -> IneligibleShapeError:
    return IneligibleShapeError(
        f"recipe {recipe.name!r} cannot run nn.Linear(K={K}, N={N}): float8 GEMMs (torch._scaled_mm) need K and "
        f"N to be multiples of {FP8_ALIGN}. Keep this Linear in bf16 (should_use() is False for it)."
    )


def _masked(values: Any, ok: Any) -> Any:
    """``values`` as a masked array where ``ok`` is False (unchanged where every entry is ok)."""
    values, ok = np.asarray(values), np.asarray(ok, dtype=bool)
    if values.shape != ok.shape or values.base is not None or not values.flags.writeable:
        values, ok = (np.array(a) for a in np.broadcast_arrays(values, ok))  # an array of its own
    if ok.all():
        return values
    return np.ma.masked_array(values, mask=~ok)


#: numpy grids of more shapes than this are priced in blocks of this many: each block's temporaries stay in the
#: CPU's cache (10**6 shapes price ~2.5x faster than in one pass, ``benchmarks/bench_eval.py``) and the memory a
#: call needs beyond its inputs and output stays that of one block, at any grid size. Elementwise formulas: the
#: same numbers as one pass.
BLOCK = 1 << 16
#: the block size of the shared-term path (:mod:`perfmodel.float8.grid`, the calibrated model on float64 grids), which
#: keeps ~35 work arrays of a block alive (8.75 MiB at 2**15 shapes): on this repository's 2-core machine (8 MiB L3)
#: 2**15 priced 10**6 shapes best, 2**13 ~20 % and 2**17 ~10 % slower (per-block Python cost below, cache spills above)
GRID_BLOCK = 1 << 15


def _speedup(M, K, N, rec: Recipe, gpu, opts: dict[str, Any]) -> tuple[Any, Any]:
    """(t_bf16 / t_recipe, eligible) without checks; numpy grids above :data:`BLOCK` shapes block by block."""
    if isinstance(M, np.ndarray) or isinstance(K, np.ndarray) or isinstance(N, np.ndarray):
        shape = np.broadcast_shapes(np.shape(M), np.shape(K), np.shape(N))
        if math.prod(shape) > min(BLOCK, GRID_BLOCK):
            return _speedup_blocks(M, K, N, shape, rec, gpu, opts)
    return _speedup_one(M, K, N, rec, gpu, opts)


def _speedup_one(
    M, K, N, rec: Recipe, gpu, opts: dict[str, Any], resolved: Any = None, pool: dict[Any, np.ndarray] | None = None
) -> tuple[Any, Any]:
    fast = _speedup_grid(M, K, N, rec, gpu, opts, resolved, pool)
    if fast is not None:
        return fast
    base = _linear_time(M, K, N, None, gpu, time_model=opts["time_model"], resolved=resolved).total_s
    lt = _linear_time(M, K, N, rec, gpu, **opts, resolved=resolved)
    return base / lt.total_s, lt.eligible


def _speedup_grid(
    M, K, N, rec: Recipe, gpu, opts: dict[str, Any], resolved: Any, pool: dict[Any, np.ndarray] | None = None
) -> tuple[Any, Any] | None:
    """:func:`_speedup_one` on a float64 grid under the calibrated model, the terms its six GEMMs share computed once
    (:mod:`perfmodel.float8.grid`: the same numbers); ``None`` where that path does not apply (the caller then prices
    Linear by Linear). ``pool``: the work buffers of a grid's earlier blocks (:class:`~.grid.GridTerms`)."""
    if not isinstance(M, np.ndarray):  # numbers and sympy: the generic path
        return None
    from .grid import GridTerms, applies, linear_total_s  # on first use: the CLI's scalar answers skip it

    spec = get_gpu(gpu)
    tm = resolved[0] if resolved is not None else resolve(spec, opts["time_model"])[0]
    cal = applies(tm, M, K, N)
    if cal is None or not all(spec.supports(d) for d in rec.gemm_dtypes()):
        return None  # unsupported formats: the generic path raises its named error
    cast = CastOptions(**{k: v for k, v in opts.items() if k != "time_model"})
    for flag in ("fuse_input_with_prev", "fuse_grad_output_with_prev", "cache_weight_cast", "dynamic_shapes"):
        check_flag(flag, opts[flag])
    shape = M.shape
    terms = GridTerms(M.reshape(-1), K.reshape(-1), N.reshape(-1), pool)
    base = linear_total_s(terms, RECIPES["bf16"], spec, cal, CastOptions(), np.empty(M.size))  # returned: our own
    total = linear_total_s(terms, rec, spec, cal, cast, terms.buffer("total")) if base is not None else None
    if total is None:
        return None
    np.divide(base, total, out=base)
    return base.reshape(shape), True if rec.name == "bf16" else terms.eligible().reshape(shape)


def _flat(x: Any, shape: tuple[int, ...]) -> Any:
    """``x`` as a flat array of ``shape``'s size (a view where it already has that shape), a number as it is."""
    if np.ndim(x) == 0:
        return x
    if np.shape(x) == shape:
        return np.reshape(x, -1)
    return np.broadcast_to(x, shape).reshape(-1)  # a copy: the broadcast dimensions become real


def _speedup_blocks(M, K, N, shape, rec: Recipe, gpu, opts: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_speedup_one` on a numpy grid, :data:`BLOCK` shapes at a time (:data:`GRID_BLOCK` on the shared-term
    path), into one output of ``shape``; the shared-term path reuses the first block's work buffers."""
    size = math.prod(shape)
    m, k, n = (_flat(x, shape) for x in (M, K, N))
    s_out, ok_out = np.empty(shape), np.empty(shape, dtype=bool)
    s, ok = s_out.reshape(-1), ok_out.reshape(-1)  # flat views to write into

    def part(x: Any, i: int, block: int) -> Any:
        return x if np.ndim(x) == 0 else x[i : i + block]

    resolved = resolve(gpu, opts["time_model"])  # once for every block
    from .grid import applies

    block = GRID_BLOCK if applies(resolved[0], m, k, n) is not None else BLOCK
    pool: dict[Any, np.ndarray] = {}  # the work buffers of the first block, reused by the others
    for i in range(0, size, block):
        s[i : i + block], ok[i : i + block] = _speedup_one(
            part(m, i, block), part(k, i, block), part(n, i, block), rec, gpu, opts, resolved, pool
        )
    return s_out, ok_out


def speedup_error_bar(
    gpu: GPULike = "H100", *, time_model: ModelLike = None, model: ModelLike = None
) -> ErrorBar | None:
    """p10–p90 of measured/predicted float8 speedup for ``gpu``'s provenance class (with ``time_model=``: that
    model's; ``model=`` is its deprecated old name), from :mod:`perfmodel.models.errorbars`; ``None`` where the
    class was never validated on speedups (estimated architectures, models you supply).
    ``bar.straddles(s, min_speedup)`` says whether a decision on speedup ``s`` is a close call.

    >>> bar = speedup_error_bar("H100")
    >>> bar.kind, bool(bar.straddles(1.03, 1.0)), bool(bar.straddles(1.5, 1.0))
    ('transferred', True, False)
    """
    return gpu_error_bar(gpu, "speedup", time_model=time_model_arg(time_model, model, "speedup_error_bar"))


def speedup(
    M: Any,
    K: Any,
    N: Any,
    recipe: str | Recipe = "tensorwise",
    gpu: GPULike = "H100",
    *,
    fuse_input_with_prev: bool = False,
    fuse_grad_output_with_prev: bool = False,
    cache_weight_cast: bool = False,
    dynamic_shapes: bool = False,
    time_model: ModelLike = None,
    model: ModelLike = None,
) -> Any:
    """Predicted fwd+bwd speedup of ``recipe`` over bf16: ``t_bf16 / t_recipe`` (> 1: faster).

    Options as in :func:`perfmodel.float8.linear_time` (``time_model=``: ``"roofline"``, ``"original"``,
    ``"calibrated"``, ``"tiles"`` or a TimeModel object; ``model=`` is its deprecated old name).

    Raises:
        IneligibleShapeError: a scalar shape the recipe cannot run (arrays: masked entries instead).
    """
    M, K, N = check_shapes(M, K, N)
    rec, gpu = get_recipe(recipe), get_gpu(gpu)  # the GPU resolved once, a spec passed down
    opts = dict(
        fuse_input_with_prev=fuse_input_with_prev,
        fuse_grad_output_with_prev=fuse_grad_output_with_prev,
        cache_weight_cast=cache_weight_cast,
        dynamic_shapes=dynamic_shapes,
        time_model=time_model_arg(time_model, model, "speedup"),
    )
    s, ok = _speedup(M, K, N, rec, gpu, opts)
    if namespace(M, K, N).name == "numpy":
        return _masked(s, ok)
    if is_symbolic(ok):  # symbolic K/N: the answer carries its eligibility (module doc)
        return guard_eligible(s, ok)
    if not bool(ok):
        raise _ineligible_error(rec, K, N)
    return s


def should_use(
    M: Any,
    K: Any,
    N: Any,
    recipe: str | Recipe = "tensorwise",
    gpu: GPULike = "H100",
    *,
    min_speedup: float = 1.0,
    fuse_input_with_prev: bool = False,
    fuse_grad_output_with_prev: bool = False,
    cache_weight_cast: bool = False,
    dynamic_shapes: bool = False,
    time_model: ModelLike = None,
    model: ModelLike = None,
) -> Any:
    """True where ``speedup(...) >= min_speedup`` and float8 can run the shape (bool, bool array, or a
    sympy relation for symbolic shapes)."""
    min_speedup = check_ratio("min_speedup", min_speedup)
    M, K, N = check_shapes(M, K, N)
    rec, gpu = get_recipe(recipe), get_gpu(gpu)  # the GPU resolved once, a spec passed down
    opts = dict(
        fuse_input_with_prev=fuse_input_with_prev,
        fuse_grad_output_with_prev=fuse_grad_output_with_prev,
        cache_weight_cast=cache_weight_cast,
        dynamic_shapes=dynamic_shapes,
        time_model=time_model_arg(time_model, model, "should_use"),
    )
    s, ok = _speedup(M, K, N, rec, gpu, opts)
    if namespace(M, K, N).name == "sympy":
        import sympy

        return sympy.And(ok, s >= min_speedup)  # False on every substitution float8 cannot run
    result = (np.asarray(s) >= min_speedup) & np.asarray(ok, dtype=bool)
    return bool(result) if result.ndim == 0 else result


def best_recipe(
    M: Any,
    K: Any,
    N: Any,
    gpu: GPULike = "H100",
    *,
    recipes: list[str] | tuple[str, ...] | None = None,
    dynamic_shapes: bool = False,
    time_model: ModelLike = None,
    model: ModelLike = None,
) -> Any:
    """The fastest of ``recipes`` (default: bf16 and every torchao recipe ``gpu`` supports) that can run
    the shape; ``"bf16"`` where no float8 recipe can.

    Returns a name, or an array of names for array shapes. Ties go to the earlier recipe (bf16 first).
    """
    time_model = time_model_arg(time_model, model, "best_recipe")
    M, K, N = check_shapes(M, K, N)
    if namespace(M, K, N).name == "sympy":
        raise PerfModelError("best_recipe needs numbers or arrays; substitute the symbols first")
    spec = get_gpu(gpu)
    if recipes is None:
        recipes = [r for r in supported_recipes(spec) if r == "bf16" or RECIPES[r].torchao_name]
    elif isinstance(recipes, (str, Recipe)):
        recipes = [recipes]
    elif not isinstance(recipes, (list, tuple)) or not all(isinstance(r, (str, Recipe)) for r in recipes):
        raise PerfModelError(
            f"best_recipe: recipes must be a recipe name or a list of them (e.g. ['bf16', 'tensorwise']; names: "
            f"{', '.join(RECIPES)}), got {short_repr(recipes)}"
        )
    names = [get_recipe(r).name for r in recipes]
    if not names:
        raise PerfModelError("best_recipe needs at least one recipe, e.g. recipes=['bf16', 'tensorwise']")
    times = []
    for r in names:
        lt = _linear_time(M, K, N, r, spec, dynamic_shapes=dynamic_shapes, time_model=time_model)
        times.append(np.where(np.asarray(lt.eligible, dtype=bool), np.asarray(lt.total_s, dtype=float), np.inf))
    stacked = np.stack(np.broadcast_arrays(*times))
    if "bf16" not in names:  # nothing eligible: the answer is bf16 anyway
        stacked = np.concatenate([stacked, np.full((1, *stacked.shape[1:]), np.inf)])
        names = [*names, "bf16"]
    idx = np.argmin(stacked, axis=0)
    idx = np.where(np.isinf(stacked.min(axis=0)), names.index("bf16"), idx)
    out = np.asarray(names, dtype=object)[idx]
    return str(out) if np.ndim(out) == 0 else out


def _break_even_symbolic(K, N, rec: Recipe, spec, min_speedup: float, opts: dict[str, Any]) -> Any:
    import sympy

    tm = _pick_time_model(spec, opts["time_model"])
    if tm.name != "original":
        raise NoClosedFormError(
            f"no closed-form break-even for symbolic K, N with the {tm.name!r} model of {spec.name}: it prices "
            "GEMMs with tile and wave quantization (ceil(M / tile)) and clock throttling (a log term), which "
            "have no closed-form inverse in M. Pass numbers for K and N (sympy numbers work, and answer the "
            "same as ints), or time_model='original' for the large-shape closed form"
        )
    M = sympy.Symbol("M", positive=True)
    base = _linear_time(M, K, N, None, spec, time_model=opts["time_model"]).total_s
    fp8 = _linear_time(M, K, N, rec, spec, **opts).total_s
    try:
        roots = [r for r in sympy.solve(sympy.Eq(base, min_speedup * fp8), M) if r.is_real is not False]
    except NotImplementedError:
        raise NoClosedFormError(
            f"no closed-form break-even for {rec.name!r}: its scale tensors are per block of tokens "
            "(ceil(M / block)), which has no closed-form inverse in M; pass numbers for K and N"
        ) from None
    if len(roots) != 1:
        raise NoClosedFormError(f"no unique closed-form break-even for {rec.name!r}: sympy found roots {roots}")
    return guard_eligible(roots[0], eligible(K, N))


def _token_grid(max_tokens: int) -> np.ndarray:
    """1..15, every multiple of 16 up to min(max_tokens, 2**20), then 16 points per doubling, and max_tokens."""
    exact = min(max_tokens, BREAK_EVEN_EXACT_UP_TO)
    grid = [np.arange(1, min(16, exact + 1)), np.arange(16, exact + 1, 16)]
    if max_tokens > BREAK_EVEN_EXACT_UP_TO:
        steps = int(np.ceil(16 * np.log2(max_tokens / BREAK_EVEN_EXACT_UP_TO)))
        grid.append(np.unique(np.round(BREAK_EVEN_EXACT_UP_TO * 2.0 ** (np.arange(1, steps + 1) / 16))))
    grid.append(np.array([max_tokens]))
    g = np.unique(np.concatenate(grid).astype(np.int64))
    return g[g <= max_tokens]


def break_even_tokens(
    K: Any,
    N: Any,
    recipe: str | Recipe = "tensorwise",
    gpu: GPULike = "H100",
    *,
    min_speedup: float = 1.0,
    max_tokens: int = 1 << 24,
    fuse_input_with_prev: bool = False,
    fuse_grad_output_with_prev: bool = False,
    cache_weight_cast: bool = False,
    dynamic_shapes: bool = False,
    time_model: ModelLike = None,
    model: ModelLike = None,
) -> Any:
    """The token count ``M`` from which ``recipe`` stays at least ``min_speedup`` times faster than bf16.

    Numeric ``K``, ``N`` (ints, floats, sympy numbers or arrays): the smallest ``M`` such that
    ``speedup(m) >= min_speedup`` for every ``m`` from ``M`` to ``max_tokens`` on perfmodel's time model —
    a wave-quantization dip above a first crossing moves the answer past the dip. It is exact up to
    :data:`BREAK_EVEN_EXACT_UP_TO` (2**20) tokens: every multiple of 16 is checked, and between two
    multiples of 16 every ``ceil(M / tile)`` of the models is constant (tiles are multiples of 16) and the
    speedup monotone, so integer bisection in the last failing interval finds the boundary. Above 2**20
    tokens a geometric grid of 16 points per doubling is checked; one more row of tiles changes a GEMM's
    time there by less than 0.03 %. Returns ``None`` (scalar) or ``-1`` (array entries) where even
    ``max_tokens`` does not pay; sympy numbers in give a sympy Integer out.

    Symbolic ``K``/``N`` with free symbols: the closed form of the ``"original"`` model (GEMMs at their
    compute roof, casts at their bandwidth roof), from ``sympy.solve``; the calibrated and roofline
    models have no closed-form inverse, and say so (:class:`~perfmodel.errors.NoClosedFormError`).

    Raises:
        IneligibleShapeError: scalar ``K``/``N`` the recipe cannot run (arrays: masked entries).
    """
    min_speedup = check_ratio("min_speedup", min_speedup)
    max_tokens = int(check_size("max_tokens", max_tokens))
    K, N = check_size("K", K), check_size("N", N)
    check_compatible(K=K, N=N)
    rec, spec = get_recipe(recipe), get_gpu(gpu)
    opts = dict(
        fuse_input_with_prev=fuse_input_with_prev,
        fuse_grad_output_with_prev=fuse_grad_output_with_prev,
        cache_weight_cast=cache_weight_cast,
        dynamic_shapes=dynamic_shapes,
        time_model=time_model_arg(time_model, model, "break_even_tokens"),
    )
    sympy_numbers = False
    if is_symbolic(K) or is_symbolic(N):
        if not all(getattr(v, "is_number", True) for v in (K, N)):
            return _break_even_symbolic(K, N, rec, spec, min_speedup, opts)
        K, N, sympy_numbers = int(K), int(N), True
    scalar = np.ndim(K) == 0 and np.ndim(N) == 0
    Kb, Nb = (a.astype(np.int64) for a in np.broadcast_arrays(np.asarray(K), np.asarray(N)))
    ok_shape = np.asarray(eligible(Kb, Nb), dtype=bool)
    if scalar and not ok_shape.item():
        raise _ineligible_error(rec, int(Kb), int(Nb))
    flat_K, flat_N = Kb.reshape(-1), Nb.reshape(-1)
    grid = _token_grid(max_tokens)
    result = np.full(flat_K.shape, -1, dtype=np.int64)
    if _monotone_in_tokens(_pick_time_model(spec, opts["time_model"])):
        chunk = 1024  # pairs at a time: the block search prices ~2 * len(grid) / _SEARCH_BLOCK points a pair
    else:
        chunk = max(1, 2_000_000 // len(grid))  # every grid point of every pair
    for start in range(0, flat_K.size, chunk):
        k, n = flat_K[start : start + chunk], flat_N[start : start + chunk]
        result[start : start + chunk] = _break_even_grid(k, n, grid, rec, spec, min_speedup, opts)
    result = result.reshape(Kb.shape)
    if scalar:
        m = int(result)
        if m < 0:
            return None
        if sympy_numbers:
            import sympy

            return sympy.Integer(m)
        return m
    return _masked(result, ok_shape)


#: break_even_tokens' search checks the token grid in blocks of this many points (see :func:`_last_failure`)
_SEARCH_BLOCK = 256
#: the relative margin by which a block's lower bound must clear ``min_speedup`` to be skipped unpriced: far above
#: the rounding of the time formulas (a few ulps), so a skipped block holds no failing point
_SEARCH_MARGIN = 1e-9


def _monotone_in_tokens(tm: Any) -> bool:
    """Whether ``tm`` prices every GEMM and cast of a Linear in non-decreasing time as the token count M grows, from
    M = 16 on: the roofline, the original model and the calibrated model (tiles, waves, ``K + k_overhead``, the
    throttle factor and bytes all grow with M; the fallback-kernel choice is fixed once M >= 8) — not the tile
    model (boosted trees) nor a model you supply, which :func:`_last_failure` prices at every grid point."""
    if isinstance(tm, ShippedCalibration):
        tm = tm.load()
    if isinstance(tm, CalibratedModel):
        own = type(tm)
        return all(getattr(own, f) is getattr(CalibratedModel, f) for f in ("gemm_time_s", "memory_kernel_time_s"))
    return tm is ORIGINAL or type(tm) is Roofline


def _last_failure(K, N, grid, rec, spec, min_speedup, opts) -> np.ndarray:
    """Per (K[i], N[i]): the largest index of ``grid`` (token counts, ascending) where ``speedup < min_speedup``,
    -1 where there is none; the same indices as pricing every grid point.

    On a model whose times grow with M (:func:`_monotone_in_tokens`), the speedup anywhere in a block of grid
    points ``[a, b]`` (a >= 16) is at least ``t_bf16(a) / t_recipe(b)``: blocks whose bound clears ``min_speedup``
    hold no failure and are not priced point by point; the others are, from the top down, until one holds a
    failure (its largest one is the answer). Other models: every grid point.
    """
    S, G = len(K), len(grid)

    def ok(m: np.ndarray, k: np.ndarray, n: np.ndarray) -> np.ndarray:
        s, _ = _speedup(m.astype(np.float64), k.astype(np.float64), n.astype(np.float64), rec, spec, opts)
        return np.asarray(s) >= min_speedup

    if not _monotone_in_tokens(_pick_time_model(spec, opts["time_model"])):
        good = ok(np.repeat(grid, S), np.tile(K, G), np.tile(N, G)).reshape(G, S)
        fails = ~good
        return np.where(fails.any(axis=0), G - 1 - np.argmax(fails[::-1], axis=0), -1)
    B = _SEARCH_BLOCK
    starts = np.arange(0, G, B)
    ends = np.minimum(starts + B, G) - 1
    nb = len(starts)
    k_rep, n_rep = np.repeat(K, nb).astype(np.float64), np.repeat(N, nb).astype(np.float64)
    lo = np.tile(grid[starts], S).astype(np.float64)
    hi = np.tile(grid[ends], S).astype(np.float64)
    t_low = _linear_time(lo, k_rep, n_rep, None, spec, time_model=opts["time_model"]).total_s
    t_high = _linear_time(hi, k_rep, n_rep, rec, spec, **opts).total_s
    # a block is safe where its bound clears min_speedup; blocks starting below 16 tokens are always priced
    safe = ((t_low / t_high >= min_speedup * (1 + _SEARCH_MARGIN)) & (lo >= 16)).reshape(S, nb)
    last = np.full(S, -1, dtype=np.int64)
    todo = ~safe  # blocks still to price, per pair
    active = todo.any(axis=1)
    offsets = np.arange(B)
    while active.any():
        rows = np.flatnonzero(active)
        block = nb - 1 - np.argmax(todo[rows, ::-1], axis=1)  # each pair's highest block still to price
        idx = np.minimum(starts[block][:, None] + offsets, G - 1)  # the last block's padding repeats its end
        fail = ~ok(grid[idx].reshape(-1), np.repeat(K[rows], B), np.repeat(N[rows], B)).reshape(len(rows), B)
        fail &= starts[block][:, None] + offsets <= ends[block][:, None]
        found = fail.any(axis=1)
        last[rows[found]] = idx[found, B - 1 - np.argmax(fail[found, ::-1], axis=1)]
        todo[rows, block] = False
        active[rows[found]] = False
        active[rows] &= todo[rows].any(axis=1)
    return last


def _break_even_grid(K, N, grid, rec, spec, min_speedup, opts) -> np.ndarray:
    """Break-even per (K[i], N[i]) on the token ``grid``, refined by integer bisection (-1: never)."""

    def ok(m: np.ndarray, k: np.ndarray, n: np.ndarray) -> np.ndarray:
        s, _ = _speedup(m.astype(np.float64), k.astype(np.float64), n.astype(np.float64), rec, spec, opts)
        return np.asarray(s) >= min_speedup

    G = len(grid)
    last_fail = _last_failure(K, N, grid, rec, spec, min_speedup, opts)
    never = last_fail == G - 1
    lo = np.where(last_fail >= 0, grid[np.maximum(last_fail, 0)], 0).astype(np.int64)
    hi = np.where(last_fail >= 0, grid[np.minimum(last_fail + 1, G - 1)], 1).astype(np.int64)
    while True:  # invariant: ok(hi) (or never); not ok(lo) unless lo == 0
        active = (hi - lo > 1) & ~never
        if not active.any():
            break
        mid = np.where(active, (lo + hi) // 2, hi)
        g = ok(np.maximum(mid, 1), K, N)
        hi = np.where(active & g, mid, hi)
        lo = np.where(active & ~g, mid, lo)
    return np.where(never, -1, np.maximum(hi, 1))
