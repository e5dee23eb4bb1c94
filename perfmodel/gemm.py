"""GEMM cost of ``C[M, N] = A[M, K] @ B[K, N]``: FLOPs, bytes, and predicted time on a GPU.

The public home of the GEMM formulas. FLOPs and bytes are counted in :mod:`perfmodel.counting`
(1 FMA = 2 FLOP; bytes per kernel: operands read once, output written once, plus scales); time
comes from the GPU's time model, chosen by :mod:`perfmodel.models.registry` (a calibration measured on
that GPU, transferred from another GPU of its architecture, an estimate, or the roofline — each
answer with its :class:`~perfmodel.models.base.Provenance`); ``time_model=`` overrides it for one call.
The time models themselves are in :mod:`perfmodel.models.base` (roofline, the original 2024 model)
and :mod:`perfmodel.models.calibrated` (the shape-aware calibrated model).
"""

from __future__ import annotations

from typing import Any

from ._backend import check_shapes, guard_eligible, is_symbolic, time_model_arg
from .counting import (
    LAYOUTS,
    SCALINGS,
    Scaling,
    check_fp8_alignment,
    check_layout,
    fp8_condition,
    gemm_bytes,
    gemm_flops,
    resolve_scaling,
)
from .errors import PerfModelError, choices_message
from .formats import FormatLike, get_format
from .models.base import EVENT_OVERHEAD_S, ORIGINAL, ROOFLINE, TIMINGS, Roofline, TimeModel, gemm_kernel_time_s
from .models.errorbars import ErrorBar, error_bar, mark_outside, shape_family
from .models.registry import ModelLike, resolve, time_model
from .perfdata import PerfData
from .specs.gpu import GPULike, get_gpu

__all__ = [
    "EVENT_OVERHEAD_S",
    "LAYOUTS",
    "ORIGINAL",
    "ROOFLINE",
    "SCALINGS",
    "TIMINGS",
    "ModelLike",
    "Roofline",
    "Scaling",
    "TimeModel",
    "check_layout",
    "check_timing",
    "event_overhead_s",
    "gemm_bytes",
    "gemm_error_bar",
    "gemm_flops",
    "gemm_perfdata",
    "gemm_time_s",
    "resolve_scaling",
    "time_model",
]


def gemm_time_s(
    M: Any,
    K: Any,
    N: Any,
    dtype: FormatLike = "bf16",
    gpu: GPULike = "H100",
    scaling: str | None = None,
    *,
    out_dtype: FormatLike = "bf16",
    time_model: ModelLike = None,
    model: ModelLike = None,
    layout: str = "rc",
    timing: str = "kernel",
) -> Any:
    """Predicted seconds for one GEMM ``[M, K] @ [K, N]`` on ``gpu``.

    Uses the model :func:`perfmodel.models.registry.time_model` picks for ``gpu`` (measured, transferred or
    estimated calibration, else the roofline); ``time_model`` overrides (``"roofline"``, ``"original"``,
    ``"calibrated"``, ``"tiles"`` or a TimeModel object; ``model=`` is its deprecated old name). Where the answer
    comes from: :func:`perfmodel.provenance` (``gemm_perfdata(...).meta["provenance"]`` carries it).

    ``layout``: the operands' majorness in torch's row-major terms (:data:`LAYOUTS`): ``"rc"`` (B
    column-major, ``x @ W.T``, a Linear's forward; the default), ``"rr"`` (``x @ W``, its grad_input),
    ``"cr"`` (A column-major, ``gO.T @ x``, its grad_weight). cuBLAS picks other kernels per layout, and
    a misaligned leading dimension (K or N for ``rr``/``rc``, M or N for ``cr``) sends it to slow
    pre-Hopper kernels. fp8 ``torch._scaled_mm`` runs ``"rc"`` only.

    ``timing``: ``"kernel"`` (the GPU kernel time a profiler and a training step see; the default) or
    ``"event"`` (what timing one call with CUDA events or ``triton.testing.do_bench`` shows: the kernel
    plus the launch gap, :data:`EVENT_OVERHEAD_S` where the model has no measured one; the tile model has
    its own fit on event times, :mod:`perfmodel.models.tiles`, checked against ``do_bench(fn)`` at its defaults:
    ``docs/validation.md``).

    >>> round(gemm_time_s(8192, 8192, 8192, "bf16", "H100-2.4TB", time_model="original") * 1e3, 3)
    1.853
    """
    spec = get_gpu(gpu)  # resolved once, here at the edge
    tm = resolve(spec, time_model_arg(time_model, model, "gemm_time_s"))[0]
    return _gemm_time(M, K, N, dtype, spec, scaling, out_dtype, tm, layout, timing)


def _gemm_time(
    M: Any, K: Any, N: Any, dtype: FormatLike, spec: Any, scaling: Any, out_dtype: FormatLike, tm: Any, layout, timing
) -> Any:
    """:func:`gemm_time_s` on a resolved GPU spec and time model (every input checked here)."""
    M, K, N = check_shapes(M, K, N)
    fmt, out_fmt = get_format(dtype), get_format(out_dtype)
    scaling = resolve_scaling(fmt, scaling)
    layout, timing = check_layout(layout, fmt), check_timing(timing)
    check_fp8_alignment(K, N, fmt)
    spec.peak_flops_per_s(fmt)  # raises UnsupportedFormatError early, with the GPU's formats
    t = None
    if timing == "event":
        event = getattr(tm, "event_gemm_time_s", None)  # a model fitted on event times (the tile model)
        t = event(M, K, N, fmt=fmt, scaling=scaling, out_fmt=out_fmt, gpu=spec, layout=layout) if event else None
    if t is None:
        t = gemm_kernel_time_s(tm, M, K, N, fmt=fmt, scaling=scaling, out_fmt=out_fmt, gpu=spec, layout=layout)
        t = t + event_overhead_s(tm) if timing == "event" else t
    if fmt.bits <= 8 and is_symbolic(t):  # symbolic K/N: no time where torch._scaled_mm cannot run the shape
        t = guard_eligible(t, fp8_condition(K, N))
    return t


def check_timing(timing: Any) -> str:
    """``timing`` if it is ``"kernel"`` or ``"event"``; else a named error listing them."""
    if not isinstance(timing, str) or timing not in TIMINGS:
        raise PerfModelError(
            choices_message(
                "timing", timing, TIMINGS, "kernel: GPU kernel time (profilers); event: CUDA events / do_bench."
            )
        )
    return timing


def event_overhead_s(tm: Any) -> float:
    """The launch gap CUDA-event timing of one call adds: the model's measured one, else :data:`EVENT_OVERHEAD_S`."""
    measured = getattr(tm, "event_overhead_s", None)
    return float(measured()) if callable(measured) else EVENT_OVERHEAD_S


def gemm_perfdata(
    M: Any,
    K: Any,
    N: Any,
    dtype: FormatLike = "bf16",
    gpu: GPULike = "H100",
    scaling: str | None = None,
    *,
    out_dtype: FormatLike = "bf16",
    time_model: ModelLike = None,
    model: ModelLike = None,
    label: str = "",
    layout: str = "rc",
    timing: str = "kernel",
) -> PerfData:
    """The predicted GEMM as a :class:`PerfData` point (time, FLOPs, bytes, format, GPU); its
    ``meta["provenance"]`` is the :class:`~perfmodel.models.base.Provenance` of the answer and
    ``meta["error_bar"]`` its :class:`~perfmodel.models.errorbars.ErrorBar` (see :func:`gemm_error_bar`).
    ``time_model`` as in :func:`gemm_time_s` (``model=``: its deprecated old name)."""
    spec = get_gpu(gpu)  # the GPU and its time model resolved once for the time, the provenance and the bar
    tm, prov = resolve(spec, time_model_arg(time_model, model, "gemm_perfdata"))
    fmt = get_format(dtype)
    return PerfData(
        time_s=_gemm_time(M, K, N, fmt, spec, scaling, out_dtype, tm, layout, timing),
        flops=gemm_flops(M, K, N),
        bytes=gemm_bytes(M, K, N, fmt, out_dtype, scaling=scaling),
        dtype=fmt,
        gpu=spec,
        label=label or f"gemm {M}x{K}x{N} {fmt.name}",
        source="predicted",
        meta={
            "M": M,
            "K": K,
            "N": N,
            "scaling": resolve_scaling(fmt, scaling),
            "layout": layout,
            "timing": timing,
            "provenance": prov,
            "error_bar": _error_bar(M, K, N, prov, layout, timing),
        },
    )


def gemm_error_bar(
    M: Any,
    K: Any,
    N: Any,
    dtype: FormatLike = "bf16",
    gpu: GPULike = "H100",
    *,
    time_model: ModelLike = None,
    model: ModelLike = None,
    layout: str = "rc",
    timing: str = "kernel",
) -> ErrorBar | None:
    """The error bar of :func:`gemm_time_s`'s answer: p10–p90 of measured/predicted for the answer's
    provenance class and the shape's family (:func:`perfmodel.models.errorbars.shape_family`; the class's "all"
    bar for arrays and symbols), ``None`` where the class was never validated (your own model). ``time_model`` as
    in :func:`gemm_time_s` (``model=``: its deprecated old name).

    >>> bar = gemm_error_bar(8192, 4096, 14336, "bf16", "H200")
    >>> bar.family, bar.kind, bar.low < 1 < bar.high
    ('llm', 'measured', True)
    """
    layout, timing = check_layout(layout, dtype), check_timing(timing)
    spec = get_gpu(gpu)
    tm, prov = resolve(spec, time_model_arg(time_model, model, "gemm_error_bar"))
    # the same named errors as the answer it qualifies (shapes, format, GPU, model scope)
    _gemm_time(M, K, N, dtype, spec, None, "bf16", tm, layout, timing)
    return _error_bar(M, K, N, prov, layout, timing)


def _error_bar(M: Any, K: Any, N: Any, prov: Any, layout: str, timing: str) -> ErrorBar | None:
    """:func:`gemm_error_bar` of a checked GEMM whose answer has provenance ``prov``."""
    try:
        family = shape_family(M, K, N, layout)
    except PerfModelError:  # arrays, symbols: no single family
        family = "all"
    which = "tiles" if prov.time_model == "tiles" else ""  # the tile model has bars of its own
    bar = error_bar("gemm_time", prov.kind, family, timing, model=which, checked_on=prov.checked_on)  # type: ignore[arg-type]
    return mark_outside(bar, prov, (M, K, N))
