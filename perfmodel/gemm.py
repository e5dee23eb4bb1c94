"""GEMM cost of ``C[M, N] = A[M, K] @ B[K, N]``: FLOPs, bytes, and predicted time on a GPU.

The public home of the GEMM formulas. FLOPs and bytes are counted in :mod:`perfmodel._counting`
(1 FMA = 2 FLOP; bytes per kernel: operands read once, output written once, plus scales); time
comes from the GPU's time model, chosen by :mod:`perfmodel.registry` (a calibration measured on
that GPU, transferred from another GPU of its architecture, an estimate, or the roofline — each
answer with its :class:`~perfmodel.timemodel.Provenance`); ``model=`` overrides it for one call.
The time models themselves are in :mod:`perfmodel.timemodel` (roofline, the original 2024 model)
and :mod:`perfmodel.calibrated_model` (the shape-aware calibrated model).
"""

from __future__ import annotations

from typing import Any

from ._backend import check_shapes
from ._counting import SCALINGS, Scaling, gemm_bytes, gemm_flops, resolve_scaling
from .formats import FormatLike, get_format
from .hardware import GPULike, get_gpu
from .perfdata import PerfData
from .registry import ModelLike, provenance, time_model
from .timemodel import ORIGINAL, ROOFLINE, Roofline, TimeModel

__all__ = [
    "ORIGINAL",
    "ROOFLINE",
    "SCALINGS",
    "ModelLike",
    "Roofline",
    "Scaling",
    "TimeModel",
    "gemm_bytes",
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
    model: ModelLike = None,
) -> Any:
    """Predicted seconds (GPU kernel time) for one GEMM ``[M, K] @ [K, N]`` on ``gpu``.

    Uses the model :func:`perfmodel.registry.time_model` picks for ``gpu`` (measured, transferred or
    estimated calibration, else the roofline); ``model`` overrides. Where the answer comes from:
    :func:`perfmodel.provenance` (``gemm_perfdata(...).meta["provenance"]`` carries it).

    >>> round(gemm_time_s(8192, 8192, 8192, "bf16", "H100-2.4TB", model="original") * 1e3, 3)
    1.853
    """
    M, K, N = check_shapes(M, K, N)
    spec = get_gpu(gpu)
    fmt, out_fmt = get_format(dtype), get_format(out_dtype)
    scaling = resolve_scaling(fmt, scaling)
    spec.peak_flops_per_s(fmt)  # raises UnsupportedFormatError early, with the GPU's formats
    return time_model(spec, model).gemm_time_s(M, K, N, fmt=fmt, scaling=scaling, out_fmt=out_fmt, gpu=spec)


def gemm_perfdata(
    M: Any,
    K: Any,
    N: Any,
    dtype: FormatLike = "bf16",
    gpu: GPULike = "H100",
    scaling: str | None = None,
    *,
    out_dtype: FormatLike = "bf16",
    model: ModelLike = None,
    label: str = "",
) -> PerfData:
    """The predicted GEMM as a :class:`PerfData` point (time, FLOPs, bytes, format, GPU); its
    ``meta["provenance"]`` is the :class:`~perfmodel.timemodel.Provenance` of the answer."""
    fmt = get_format(dtype)
    return PerfData(
        time_s=gemm_time_s(M, K, N, fmt, gpu, scaling, out_dtype=out_dtype, model=model),
        flops=gemm_flops(M, K, N),
        bytes=gemm_bytes(M, K, N, fmt, out_dtype, scaling=scaling),
        dtype=fmt,
        gpu=get_gpu(gpu),
        label=label or f"gemm {M}x{K}x{N} {fmt.name}",
        source="predicted",
        meta={
            "M": M,
            "K": K,
            "N": N,
            "scaling": resolve_scaling(fmt, scaling),
            "provenance": provenance(gpu, model),
        },
    )
