"""The fwd+bwd time of ``nn.Linear`` under a float8 recipe, kernel by kernel (public names: :mod:`perfmodel.float8`).

``linear_time(M, K, N, recipe)`` adds up the three GEMMs of a Linear's forward and backward
(see :mod:`perfmodel.float8.recipes` for shapes and the casting kernels each recipe launches), each
priced by the GPU's time model (:func:`perfmodel.models.registry.time_model`).

Eligibility: float8 GEMMs (``torch._scaled_mm``) need ``K`` and ``N`` (in_features, out_features) to be
multiples of 16 — torchao's own filter checks the same. A shape that is not is still priced (what it
would cost), but :attr:`LinearTime.eligible` says it cannot run, and every decision function treats it
as "keep bf16".
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .._backend import check_flag, check_shapes, describe_value, is_symbolic, time_model_arg
from ..counting import FP8_GEMM_ALIGN, fp8_aligned, fp8_condition, gemm_bytes, gemm_flops
from ..errors import IneligibleShapeError, PerfModelError, UnsupportedFormatError
from ..formats import get_format
from ..models.base import Provenance, gemm_kernel_time_s
from ..models.calibrated import CalibratedModel
from ..models.errorbars import ErrorBar, error_bar, mark_outside, shape_family
from ..models.kernel_choice import kernel_class
from ..models.registry import ModelLike, resolve
from ..perfdata import PerfData
from ..specs.gpu import GPULike, GPUSpec, get_gpu
from .recipes import RECIPES, CastOptions, Kernel, Recipe, get_recipe

FP8_ALIGN = FP8_GEMM_ALIGN  # re-exported: the float8 Linear rule is the GEMM rule (perfmodel.counting)

__all__ = [
    "FP8_ALIGN",
    "GemmCall",
    "KernelCall",
    "LinearTime",
    "eligible",
    "linear_time",
    "supported_recipes",
]


def eligible(K: Any, N: Any) -> Any:
    """True where float8 can run ``nn.Linear(K, N)``: both multiples of :data:`FP8_ALIGN` (bool or bool
    array; sympy numbers are checked; for sympy expressions with free symbols, the sympy condition
    ``Eq(Mod(K, 16), 0) & Eq(Mod(N, 16), 0)``, which a substitution decides — ``True`` already for
    ``K = 16*j`` with ``j`` an integer symbol)."""
    if any(is_symbolic(v) and not v.is_number for v in (K, N)):
        return fp8_condition(K, N)
    k, n = fp8_aligned(K), fp8_aligned(N)
    if isinstance(k, np.ndarray) or isinstance(n, np.ndarray):
        return np.asarray(k) & np.asarray(n)
    return k and n


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
    layout: str = "rc"


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
    from (measured, transferred, estimated, roofline) and its expected error. ``eligible`` is False
    (or False entries) where the recipe's float8 GEMMs cannot run the shape (K or N not a multiple
    of 16): the times are then what it would cost, not something torchao can run. For symbolic ``K``/``N``
    ``eligible`` is a sympy condition (:func:`eligible`) and the times are prices, as for numbers; the
    decisions (:func:`perfmodel.float8.speedup`, ``should_use``, ``break_even_tokens``) carry the condition.
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
    eligible: Any = True

    def __repr__(self) -> str:
        d = describe_value
        runs = ""
        if self.ineligible_reason:
            runs = "; float8 cannot run this shape (the times are a price)"
            if is_symbolic(self.eligible):
                runs = f"; float8 runs it only where {self.eligible}"
            elif np.ndim(self.eligible) > 0:
                runs = "; float8 cannot run some of these shapes (see eligible)"
        src = f"; {self.provenance.kind}" if self.provenance is not None else ""
        zero = isinstance(self.launch_s, (int, float)) and self.launch_s == 0
        launches = "" if zero else f", launches {d(self.launch_s, 's')}"
        return (
            f"LinearTime(M={d(self.M)}, K={d(self.K)}, N={d(self.N)}, {self.recipe.name} on {self.gpu.name}: fwd+bwd "
            f"{d(self.total_s, 's')} (GEMMs {d(self.gemm_s, 's')}, casts {d(self.cast_s, 's')}{launches}){runs}{src})"
        )

    def __str__(self) -> str:
        prov = f"\n  provenance: {self.provenance.line()}" if self.provenance is not None else ""
        why = f"\n  {self.ineligible_reason}" if self.ineligible_reason else ""
        return f"{self!r}{why}{prov}\n  every GEMM and kernel: .table()"

    @property
    def ineligible_reason(self) -> str:
        """Why float8 cannot run this shape ('' where it can)."""
        if self.recipe.name == "bf16" or self.eligible is True:
            return ""
        if is_symbolic(self.eligible):
            if bool(self.eligible == True):  # noqa: E712 - sympy.true
                return ""
            return (
                f"float8 GEMMs (torch._scaled_mm) need K and N multiples of {FP8_ALIGN}: this symbolic shape runs "
                f"in float8 only where {self.eligible} (keep it in bf16 elsewhere)"
            )
        if bool(np.all(self.eligible)):
            return ""
        return (
            f"float8 GEMMs (torch._scaled_mm) need K and N multiples of {FP8_ALIGN}; "
            f"nn.Linear(K={self.K}, N={self.N}) is not: keep it in bf16"
        )

    @property
    def error_bar(self) -> ErrorBar | None:
        """p10–p90 of measured/predicted Linear (fwd+bwd) time for this answer's provenance class and the
        forward GEMM's shape family (:mod:`perfmodel.models.errorbars`); ``None`` without a validated class."""
        if self.provenance is None:
            return None
        try:
            family = shape_family(self.M, self.K, self.N)
        except PerfModelError:  # arrays, symbols
            family = "all"
        which = "tiles" if self.provenance.time_model == "tiles" else ""
        bar = error_bar(
            "linear_time", self.provenance.kind, family, "kernel", model=which, checked_on=self.provenance.checked_on
        )
        M, K, N = self.M, self.K, self.N  # forward, grad_input, grad_weight GEMMs
        return mark_outside(bar, self.provenance, (M, K, N), (M, N, K), (K, M, N))

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
                "error_bar": self.error_bar,
            },
        )

    def table(self) -> str:
        """A readable per-kernel breakdown (numeric shapes only): each GEMM with its layout and, on a Hopper GPU,
        the class of kernel cuBLAS runs for it (:func:`perfmodel.gemm_kernel`)."""
        rows = [f"{self.recipe.name} on {self.gpu.name}, M={self.M} K={self.K} N={self.N} ({self.model} model)"]
        for g in self.gemms:
            cls = _kernel_class(g) if self.gpu.arch == "90" else ""
            rows.append(f"  gemm   {g.name:<28} {g.dtype:<11} {g.layout:<3} {cls:<13} {float(g.time_s) * 1e6:10.2f} us")
        for k in self.kernels:
            kind = "launch" if k.kernel.launch_only else f"{float(k.kernel.bytes) / 1e6:8.1f} MB"
            rows.append(f"  cast   {k.kernel.name:<28} {kind:<11} {'':<17} {float(k.time_s) * 1e6:10.2f} us")
        rows.append(
            f"  total  gemm {float(self.gemm_s) * 1e6:.2f} + cast {float(self.cast_s) * 1e6:.2f}"
            f" + launch {float(self.launch_s) * 1e6:.2f} = {float(self.total_s) * 1e6:.2f} us"
        )
        return "\n".join(rows)


def _kernel_class(g: GemmCall) -> str:
    """The kernel class cuBLAS runs for one of a Linear's GEMMs; ``"not /16"`` for an fp8 GEMM it cannot run (the
    table still prices it: what it would cost)."""
    try:
        return str(kernel_class(g.M, g.K, g.N, g.dtype, layout=g.layout))
    except IneligibleShapeError:
        return f"not /{FP8_GEMM_ALIGN}"
    except UnsupportedFormatError:  # a format the kernel-choice rule does not cover
        return ""


def _scaled(t: Any, factor: float, tm: Any) -> Any:
    """``t · factor``; in place where ``t`` is a float64 grid the calibrated model has just made for this GEMM (its
    own buffer: a pass and a temporary less), else a new value."""
    if isinstance(tm, CalibratedModel) and isinstance(t, np.ndarray) and t.dtype == np.float64 and t.flags.owndata:
        return np.multiply(t, factor, out=t)
    return t * factor


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
    time_model: ModelLike = None,
    model: ModelLike = None,
) -> LinearTime:
    """Predicted fwd+bwd time of ``nn.Linear(K, N, bias=False)`` on ``M`` tokens, seconds, by kernel.

    ``recipe`` is a name of :data:`RECIPES` (``None``: the bf16 baseline). The cast options are
    described in :class:`CastOptions`. ``time_model`` overrides the GPU's time model (``"roofline"``,
    ``"original"``, ``"calibrated"``, ``"tiles"`` or a TimeModel object; ``model=`` is its deprecated old name).

    Raises:
        UnknownRecipeError, UnsupportedFormatError (recipe's format has no peak on ``gpu``),
        InvalidShapeError.
    """
    M, K, N = check_shapes(M, K, N)
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
        time_model=time_model_arg(time_model, model, "linear_time"),
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
    time_model=None,
    resolved=None,
) -> LinearTime:
    """:func:`linear_time` without the shape checks (callers have checked them once); ``resolved``: the
    ``(time model, provenance)`` pair :func:`perfmodel.models.registry.resolve` gives for ``gpu`` and
    ``time_model``, where a caller pricing a grid block by block has resolved it once."""
    rec, spec = get_recipe(recipe), get_gpu(gpu)
    for flag, value in (
        ("fuse_input_with_prev", fuse_input_with_prev),
        ("fuse_grad_output_with_prev", fuse_grad_output_with_prev),
        ("cache_weight_cast", cache_weight_cast),
        ("torch_compile_limitations", torch_compile_limitations),
        ("dynamic_shapes", dynamic_shapes),
    ):
        check_flag(flag, value)
    tm, prov = resolved if resolved is not None else resolve(spec, time_model)
    for d in rec.gemm_dtypes():
        if not spec.supports(d):
            raise UnsupportedFormatError(
                f"recipe {rec.name!r} needs {d} GEMMs, which {spec.name} has no peak for. "
                f"Recipes on {spec.name}: {', '.join(supported_recipes(spec))}."
            )
    # (name, M', K', N', the bf16 layout): y = x @ W.T is rc, gI = gO @ W is rr, gW^T = x^T @ gO is cr, whose
    # leading dimensions are the features K, N (never the token count, which is the reduction dimension)
    shapes = (("output", M, K, N, "rc"), ("grad_input", M, N, K, "rr"), ("grad_weight", K, M, N, "cr"))
    gemms = []
    for (name, m, k, n, layout), dtype in zip(shapes, rec.gemm_dtypes(), strict=True):
        fmt = get_format(dtype)
        scaling = None if fmt.bits >= 16 else rec.scaling
        layout = layout if fmt.bits >= 16 else "rc"  # torchao's casts produce _scaled_mm's rc operands
        t = gemm_kernel_time_s(
            tm, m, k, n, fmt=fmt, scaling=scaling, out_fmt=get_format("bf16"), gpu=spec, lead_dims=(K, N), layout=layout
        )
        factor = tm.step_gemm_factor(fmt, scaling)  # GEMMs inside a step vs timed alone (calibrated)
        if factor != 1.0:
            t = _scaled(t, factor, tm)
        gemms.append(GemmCall(name=name, M=m, K=k, N=n, dtype=fmt.name, scaling=scaling, layout=layout, time_s=t))
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
        eligible=True if rec.name == "bf16" else eligible(K, N),
    )
