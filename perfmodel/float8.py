"""float8 training of ``nn.Linear``: predicted fwd+bwd time per recipe, speedup, and the decision.

``linear_time(M, K, N, recipe)`` adds up the three GEMMs of a Linear's forward and backward
(see :mod:`perfmodel.recipes` for shapes and the casting kernels each recipe launches), each
priced by the GPU's time model (:func:`perfmodel.registry.time_model`). The decision API compares a
recipe with the bf16 baseline on the same model. Every function takes ints, floats, numpy
arrays (a whole grid of shapes in one call) or sympy expressions.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ._backend import check_shapes, check_size, namespace
from ._counting import gemm_bytes, gemm_flops
from .errors import PerfModelError, UnsupportedFormatError
from .formats import get_format
from .hardware import GPULike, GPUSpec, get_gpu
from .perfdata import PerfData
from .recipes import RECIPES, CastOptions, Kernel, Recipe, get_recipe, recipe_names
from .registry import ModelLike, resolve
from .timemodel import Provenance

__all__ = [
    "RECIPES",
    "CastOptions",
    "GemmCall",
    "KernelCall",
    "LinearTime",
    "Recipe",
    "best_recipe",
    "break_even_tokens",
    "get_recipe",
    "linear_time",
    "module_filter",
    "recipe_names",
    "report",  # noqa: F822  (handed on lazily by __getattr__ below)
    "should_use",
    "speedup",
    "supported_recipes",
]


@dataclasses.dataclass(frozen=True, kw_only=True)
class GemmCall:
    """One of the three GEMMs, with its predicted time (s)."""

    name: str
    M: Any
    K: Any
    N: Any
    dtype: str
    scaling: str | None
    time_s: Any


@dataclasses.dataclass(frozen=True, kw_only=True)
class KernelCall:
    """A casting kernel with its predicted time (s)."""

    kernel: Kernel
    time_s: Any


@dataclasses.dataclass(frozen=True, kw_only=True)
class LinearTime:
    """Predicted fwd+bwd time of ``nn.Linear(K, N)`` on ``M`` tokens under one recipe.

    ``total_s = gemm_s + cast_s + launch_s``: the three GEMMs, the memory-bound cast kernels and
    the tiny launch-only kernels, all in seconds. ``provenance`` says where the time model comes
    from (measured, transferred, estimated, roofline) and its expected error.
    """

    M: Any
    K: Any
    N: Any
    recipe: Recipe
    gpu: GPUSpec
    model: str
    gemms: tuple[GemmCall, ...]
    kernels: tuple[KernelCall, ...]
    gemm_s: Any
    cast_s: Any
    launch_s: Any
    total_s: Any
    provenance: Provenance | None = None

    @property
    def cast_bytes(self) -> Any:
        """Bytes moved by the cast kernels."""
        return sum((k.kernel.bytes for k in self.kernels), 0)

    def perfdata(self, label: str = "") -> PerfData:
        """The whole step as one roofline point (FLOPs of the 3 GEMMs; GEMM + cast bytes)."""
        flops = sum((gemm_flops(g.M, g.K, g.N) for g in self.gemms), 0)
        nbytes = (
            sum((gemm_bytes(g.M, g.K, g.N, g.dtype, "bf16", scaling=g.scaling) for g in self.gemms), 0)
            + self.cast_bytes
        )
        return PerfData(
            time_s=self.total_s,
            flops=flops,
            bytes=nbytes,
            dtype=self.recipe.output_dtype,
            gpu=self.gpu,
            label=label or f"linear {self.recipe.name}",
            source="predicted",
            meta={
                "M": self.M,
                "K": self.K,
                "N": self.N,
                "recipe": self.recipe.name,
                "provenance": self.provenance,
            },
        )

    def table(self) -> str:
        """A readable per-kernel breakdown (numeric shapes only)."""
        rows = [f"{self.recipe.name} on {self.gpu.name}, M={self.M} K={self.K} N={self.N} ({self.model} model)"]
        for g in self.gemms:
            rows.append(f"  gemm   {g.name:<28} {g.dtype:<9} {float(g.time_s) * 1e6:10.2f} us")
        for k in self.kernels:
            kind = "launch" if k.kernel.launch_only else f"{float(k.kernel.bytes) / 1e6:8.1f} MB"
            rows.append(f"  cast   {k.kernel.name:<28} {kind:<9} {float(k.time_s) * 1e6:10.2f} us")
        rows.append(
            f"  total  gemm {float(self.gemm_s) * 1e6:.2f} + cast {float(self.cast_s) * 1e6:.2f}"
            f" + launch {float(self.launch_s) * 1e6:.2f} = {float(self.total_s) * 1e6:.2f} us"
        )
        return "\n".join(rows)


def _options(
    fuse_input_with_prev, fuse_grad_output_with_prev, cache_weight_cast, torch_compile_limitations, dynamic_shapes
) -> CastOptions:
    return CastOptions(
        fuse_input_with_prev=fuse_input_with_prev,
        fuse_grad_output_with_prev=fuse_grad_output_with_prev,
        cache_weight_cast=cache_weight_cast,
        torch_compile_limitations=torch_compile_limitations,
        dynamic_shapes=dynamic_shapes,
    )


def supported_recipes(gpu: GPULike = "H100") -> list[str]:
    """Recipes whose GEMM formats all have a peak on ``gpu`` (mxfp8 needs Blackwell-class MX units)."""
    spec = get_gpu(gpu)
    return [r.name for r in RECIPES.values() if all(spec.supports(d) for d in r.gemm_dtypes())]


def linear_time(
    M: Any,
    K: Any,
    N: Any,
    recipe: str | Recipe | None = None,
    gpu: GPULike = "H100",
    *,
    fuse_input_with_prev: bool = False,
    fuse_grad_output_with_prev: bool = False,
    cache_weight_cast: bool = False,
    torch_compile_limitations: bool = False,
    dynamic_shapes: bool = False,
    model: ModelLike = None,
) -> LinearTime:
    """Predicted fwd+bwd time of ``nn.Linear(K, N, bias=False)`` on ``M`` tokens, seconds, by kernel.

    ``recipe`` is a name of :data:`RECIPES` (``None``: the bf16 baseline). The cast options are
    described in :class:`CastOptions`. ``model`` overrides the GPU's time model.

    Raises:
        UnknownRecipeError, UnsupportedFormatError (recipe's format has no peak on ``gpu``),
        InvalidShapeError.
    """
    check_shapes(M, K, N)
    return _linear_time(
        M,
        K,
        N,
        recipe,
        gpu,
        fuse_input_with_prev=fuse_input_with_prev,
        fuse_grad_output_with_prev=fuse_grad_output_with_prev,
        cache_weight_cast=cache_weight_cast,
        torch_compile_limitations=torch_compile_limitations,
        dynamic_shapes=dynamic_shapes,
        model=model,
    )


def _linear_time(
    M,
    K,
    N,
    recipe,
    gpu,
    *,
    fuse_input_with_prev=False,
    fuse_grad_output_with_prev=False,
    cache_weight_cast=False,
    torch_compile_limitations=False,
    dynamic_shapes=False,
    model=None,
) -> LinearTime:
    """:func:`linear_time` without the shape checks (callers have checked them once)."""
    rec, spec = get_recipe(recipe), get_gpu(gpu)
    tm, prov = resolve(spec, model)
    for d in rec.gemm_dtypes():
        if not spec.supports(d):
            raise UnsupportedFormatError(
                f"recipe {rec.name!r} needs {d} GEMMs, which {spec.name} has no peak for. "
                f"Recipes on {spec.name}: {', '.join(supported_recipes(spec))}."
            )
    shapes = (("output", M, K, N), ("grad_input", M, N, K), ("grad_weight", K, M, N))
    gemms = []
    for (name, m, k, n), dtype in zip(shapes, rec.gemm_dtypes(), strict=True):
        fmt = get_format(dtype)
        scaling = None if fmt.bits >= 16 else rec.scaling
        # every operand of a Linear's GEMMs is contiguous along K or N (x, W, grad_output), never M
        t = tm.gemm_time_s(m, k, n, fmt=fmt, scaling=scaling, out_fmt=get_format("bf16"), gpu=spec, lead_dims=(K, N))
        factor = tm.step_gemm_factor(fmt, scaling)  # GEMMs inside a step vs timed alone (calibrated)
        if factor != 1.0:
            t = t * factor
        gemms.append(GemmCall(name=name, M=m, K=k, N=n, dtype=fmt.name, scaling=scaling, time_s=t))
    opts = _options(
        fuse_input_with_prev, fuse_grad_output_with_prev, cache_weight_cast, torch_compile_limitations, dynamic_shapes
    )
    kernels = []
    cast_s: Any = 0
    launch_s: Any = 0
    for k in rec.cast_kernels(M, K, N, opts):
        if k.launch_only:
            t = tm.launch_time_s(gpu=spec)
            launch_s = launch_s + t
        else:
            t = tm.memory_kernel_time_s(k.bytes, gpu=spec, recipe=opts.cast_key(rec.name), tensor=k.tensor)
            cast_s = cast_s + t
        kernels.append(KernelCall(kernel=k, time_s=t))
    gemm_s = gemms[0].time_s + gemms[1].time_s + gemms[2].time_s
    return LinearTime(
        M=M,
        K=K,
        N=N,
        recipe=rec,
        gpu=spec,
        model=tm.name,
        gemms=tuple(gemms),
        kernels=tuple(kernels),
        gemm_s=gemm_s,
        cast_s=cast_s,
        launch_s=launch_s,
        total_s=gemm_s + cast_s + launch_s,
        provenance=prov,
    )


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
    model: ModelLike = None,
) -> Any:
    """Predicted fwd+bwd speedup of ``recipe`` over bf16: ``t_bf16 / t_recipe`` (> 1: faster).
    Options as in :func:`linear_time`."""
    check_shapes(M, K, N)
    opts = dict(
        fuse_input_with_prev=fuse_input_with_prev,
        fuse_grad_output_with_prev=fuse_grad_output_with_prev,
        cache_weight_cast=cache_weight_cast,
        dynamic_shapes=dynamic_shapes,
        model=model,
    )
    base = _linear_time(M, K, N, None, gpu, model=model).total_s
    return base / _linear_time(M, K, N, recipe, gpu, **opts).total_s


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
    model: ModelLike = None,
) -> Any:
    """True where ``speedup(...) >= min_speedup`` (bool, bool array, or a sympy relation)."""
    if not min_speedup > 0:
        raise PerfModelError(f"min_speedup must be > 0, got {min_speedup!r}")
    s = speedup(
        M,
        K,
        N,
        recipe,
        gpu,
        fuse_input_with_prev=fuse_input_with_prev,
        fuse_grad_output_with_prev=fuse_grad_output_with_prev,
        cache_weight_cast=cache_weight_cast,
        dynamic_shapes=dynamic_shapes,
        model=model,
    )
    result = s >= min_speedup
    return bool(result) if isinstance(result, (bool, np.bool_)) else result


def best_recipe(
    M: Any,
    K: Any,
    N: Any,
    gpu: GPULike = "H100",
    *,
    recipes: Sequence[str] | None = None,
    dynamic_shapes: bool = False,
    model: ModelLike = None,
) -> Any:
    """The fastest of ``recipes`` (default: bf16 and every torchao recipe ``gpu`` supports).

    Returns a name, or an array of names for array shapes. Ties go to the earlier recipe (bf16 first).
    """
    spec = get_gpu(gpu)
    if recipes is None:
        recipes = [r for r in supported_recipes(spec) if r == "bf16" or RECIPES[r].torchao_name]
    names = [get_recipe(r).name for r in recipes]
    if not names:
        raise PerfModelError("best_recipe needs at least one recipe")
    times = [linear_time(M, K, N, r, spec, dynamic_shapes=dynamic_shapes, model=model).total_s for r in names]
    if namespace(M, K, N).name == "sympy":
        raise PerfModelError("best_recipe needs numbers or arrays; substitute the symbols first")
    stacked = np.stack(np.broadcast_arrays(*[np.asarray(t, dtype=float) for t in times]))
    idx = np.argmin(stacked, axis=0)
    out = np.asarray(names, dtype=object)[idx]
    return str(out) if np.ndim(out) == 0 else out


def _break_even_symbolic(K, N, recipe, spec, opts) -> Any:
    import sympy

    M = sympy.Symbol("M", positive=True)
    # the large-shape regime: compute-bound GEMMs, bandwidth-bound casts, additive launches
    base = linear_time(M, K, N, None, spec, model="original").total_s
    fp8 = linear_time(M, K, N, recipe, spec, model="original", **opts).total_s
    roots = [r for r in sympy.solve(sympy.Eq(base, fp8), M) if r.is_real is not False]
    if len(roots) != 1:
        raise PerfModelError(f"no unique symbolic break-even for {recipe!r}: roots {roots}")
    return roots[0]


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
    model: ModelLike = None,
) -> Any:
    """Smallest token count ``M`` from which ``recipe`` is at least ``min_speedup`` times faster.

    Numeric ``K``, ``N`` (ints or arrays): exact on the model — the speedup is evaluated at every
    power of two up to ``max_tokens`` and the last crossing is refined by integer bisection, so the
    answer is the smallest ``M`` with ``speedup(M) >= min_speedup`` for all sampled larger ``M``.
    Returns ``None`` (scalar) or ``-1`` (array entries) where even ``max_tokens`` does not pay.

    Symbolic ``K``/``N``: the closed form in the large-shape regime (GEMMs at their compute roof,
    casts at their bandwidth roof, the ``"original"`` model's assumptions), from ``sympy.solve``.
    """
    check_size("K", K), check_size("N", N), check_size("max_tokens", max_tokens)
    spec = get_gpu(gpu)
    opts = dict(
        fuse_input_with_prev=fuse_input_with_prev,
        fuse_grad_output_with_prev=fuse_grad_output_with_prev,
        cache_weight_cast=cache_weight_cast,
        dynamic_shapes=dynamic_shapes,
    )
    if namespace(K, N).name == "sympy":
        if min_speedup != 1.0:
            raise PerfModelError("the symbolic break-even is defined for min_speedup=1 only")
        return _break_even_symbolic(K, N, recipe, spec, opts)

    scalar = np.ndim(K) == 0 and np.ndim(N) == 0
    Kb, Nb = np.broadcast_arrays(np.asarray(K, dtype=np.int64), np.asarray(N, dtype=np.int64))

    def ok(m: np.ndarray) -> np.ndarray:
        return np.asarray(speedup(m, Kb, Nb, recipe, spec, model=model, **opts)) >= min_speedup

    powers = [1 << i for i in range(int(max_tokens).bit_length()) if (1 << i) <= max_tokens]
    grid = np.stack([ok(np.full(Kb.shape, p, dtype=np.int64)) for p in powers])  # [P, ...]
    never = ~grid[-1]
    # index of the last power that does NOT pay (-1: even M=1 pays)
    fails = ~grid
    last_fail = np.where(fails.any(axis=0), len(powers) - 1 - np.argmax(fails[::-1], axis=0), -1)
    lo = np.where(last_fail >= 0, np.asarray(powers)[np.maximum(last_fail, 0)], 0).astype(np.int64)
    hi = np.where(last_fail >= 0, np.asarray(powers)[np.minimum(last_fail + 1, len(powers) - 1)], 1)
    hi = hi.astype(np.int64)
    while True:  # invariant: ok(hi) or never; not ok(lo) unless lo == 0
        active = (hi - lo > 1) & ~never
        if not active.any():
            break
        mid = np.where(active, (lo + hi) // 2, hi)
        good = ok(np.maximum(mid, 1))
        hi = np.where(active & good, mid, hi)
        lo = np.where(active & ~good, mid, lo)
    result = np.where(never, -1, np.maximum(hi, 1))
    if scalar:
        return None if never.item() else int(result.item())
    return result


TokensLike = int | Mapping[str, int] | Callable[[str], int]


def module_filter(
    gpu: GPULike = "H100",
    tokens: TokensLike = 8192,
    recipe: str | Recipe = "tensorwise",
    *,
    min_speedup: float = 1.0,
    exclude: Iterable[str] = (),
    dynamic_shapes: bool = False,
    model: ModelLike = None,
) -> Callable[[Any, str], bool]:
    """A ``module_filter_fn(module, fqn) -> bool`` for torchao's ``convert_to_float8_training``.

    It converts an ``nn.Linear`` when ``should_use(tokens, in_features, out_features, ...)`` holds,
    both feature sizes are multiples of 16 (float8 GEMM kernels need it), and no string of
    ``exclude`` occurs in its fully-qualified name. Other modules return ``False``
    (torchao asks about every module; only Linears are swapped).

    ``tokens`` is the number of rows a Linear sees per step (batch × sequence length): one int for
    every layer, or per layer — a mapping from fully-qualified-name substrings to tokens (the
    longest matching key wins; layers no key matches use the ``"*"`` entry, else are not converted)
    or a callable ``fqn -> tokens``. Routed MoE experts see ``tokens · top_k / experts``.
    ``dynamic_shapes``: the model is compiled with a dynamic token dimension (see :class:`CastOptions`).
    """
    spec, rec = get_gpu(gpu), get_recipe(recipe)
    tokens_of = _tokens_lookup(tokens)
    _linear_time(16, 16, 16, rec, spec, model=model)  # fail now on unsupported recipe/GPU
    excluded = tuple(exclude)
    cache: dict[tuple[int, int, int], bool] = {}

    def module_filter_fn(module: Any, fqn: str) -> bool:
        if not _is_linear(module) or any(e in fqn for e in excluded):
            return False
        k, n = int(module.in_features), int(module.out_features)
        m = tokens_of(fqn)
        if k % 16 or n % 16 or m is None:
            return False
        if (m, k, n) not in cache:
            cache[m, k, n] = should_use(
                m, k, n, rec, spec, min_speedup=min_speedup, dynamic_shapes=dynamic_shapes, model=model
            )
        return cache[m, k, n]

    label = tokens if isinstance(tokens, int) else "per-layer"
    module_filter_fn.__name__ = f"perfmodel_filter_{rec.name}_{spec.name}_{label}"
    return module_filter_fn


def _tokens_lookup(tokens: TokensLike) -> Callable[[str], int | None]:
    """Normalise ``module_filter``'s ``tokens`` to ``fqn -> tokens | None`` (checked values)."""
    if isinstance(tokens, Mapping):
        table = {str(k): int(check_size(f"tokens[{k!r}]", v)) for k, v in tokens.items()}
        if not table:
            raise PerfModelError("tokens mapping is empty; give at least one 'fqn part': tokens entry")
        keys = sorted((k for k in table if k != "*"), key=len, reverse=True)

        def lookup(fqn: str) -> int | None:
            return next((table[k] for k in keys if k in fqn), table.get("*"))

        return lookup
    if callable(tokens):

        def call(fqn: str) -> int:
            return int(check_size(f"tokens({fqn!r})", tokens(fqn)))

        return call
    check_size("tokens", tokens)
    return lambda fqn: tokens


def _is_linear(module: Any) -> bool:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(module, torch.nn.Module):
        return isinstance(module, torch.nn.Linear)  # subclasses too (torchao's Float8Linear)
    return hasattr(module, "in_features") and hasattr(module, "out_features")  # duck-typed stand-ins


def __getattr__(name: str) -> Any:
    # ``perfmodel.float8.report`` is :func:`perfmodel.report.report`, which sits on the floor above
    # (it prices whole models with the functions here). Handed on lazily, by name, so that importing
    # float8 never imports the report: the layers stay one-way.
    if name == "report":
        import importlib

        return importlib.import_module(f"{__package__}.report").report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
