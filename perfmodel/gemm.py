"""GEMM cost: FLOPs, bytes and time of ``C[M, N] = A[M, K] @ B[K, N]``, with a pluggable time model.

Counting rules (used by every formula in perfmodel):
* 1 FMA = 2 FLOP, so a GEMM does ``2·M·K·N`` FLOP (the usual convention; see e.g. Kaplan et al.
  2020, "Scaling Laws for Neural Language Models", §2.1).
* Bytes are device-memory traffic counted per kernel: each operand read once and the output
  written once (perfect on-chip reuse), plus the scale tensors of scaled formats.

Time models
-----------
A *time model* turns FLOPs and bytes into seconds. Every ``GPUSpec`` may carry its own
(``gpu.calibration``, fitted on measurements by :mod:`perfmodel.calibrate`); otherwise
:data:`ROOFLINE` is used. Callers never change: ``gemm_time_s(..., gpu="H200")`` picks the model
of that GPU, and ``model=`` overrides it for one call.

* :class:`Roofline` (default): ``max(FLOP / (peak·gemm_fraction), bytes / (bw·mem_fraction), launch)``.
* :data:`ORIGINAL`: the torchao float8 roofline of 2024 — GEMMs cost ``FLOP / (peak·fraction)`` only
  (no memory term, no launch floor); memory kernels cost ``bytes / (bw·fraction)``; each tiny
  kernel one launch. Kept to reproduce :mod:`perfmodel.compat.roofline_utils` exactly.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, Protocol, runtime_checkable

from ._backend import check_shapes, namespace
from .errors import PerfModelError, UnsupportedFormatError, choices_message
from .formats import Format, FormatLike, get_format
from .hardware import GPULike, GPUSpec, get_gpu
from .perfdata import PerfData

__all__ = [
    "ORIGINAL",
    "ROOFLINE",
    "SCALINGS",
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

Scaling = Literal["tensorwise", "rowwise", "blockwise", "mx"]
#: Scaling granularities of low-precision GEMMs. ``mx``: the block scaling built into MX/NVFP4 formats.
SCALINGS: tuple[str, ...] = ("tensorwise", "rowwise", "blockwise", "mx")
_SCALE_BYTES = 4  # fp32 scale factors (tensorwise, rowwise, blockwise)
_BLOCK = 128  # blockwise: 1x128 activation tiles, 128x128 weight tiles (DeepSeek-V3 report, §3.3)


@runtime_checkable
class TimeModel(Protocol):
    """What a time model provides. All methods take shapes/bytes as int, float, ndarray or sympy."""

    name: str

    def gemm_time_s(
        self,
        M: Any,
        K: Any,
        N: Any,
        *,
        fmt: Format,
        scaling: str | None,
        out_fmt: Format,
        gpu: GPUSpec,
        lead_dims: tuple[Any, Any] | None = None,
    ) -> Any:
        """Seconds for one GEMM. ``lead_dims``: the operands' leading dimensions where they are not
        ``(K, N)`` (row-major A and B); a model that prices misaligned rows uses them."""
        ...

    def memory_kernel_time_s(
        self, bytes_moved: Any, *, gpu: GPUSpec, recipe: str | None = None, tensor: str | None = None
    ) -> Any:
        """Seconds for one memory-bound kernel (cast, copy) moving ``bytes_moved`` bytes; ``recipe`` and
        ``tensor`` name the float8 recipe and tensor a cast belongs to (a calibrated model prices them apart)."""
        ...

    def launch_time_s(self, *, gpu: GPUSpec) -> Any:
        """Seconds for one tiny kernel whose traffic is negligible (a scale reduction's 2nd stage)."""
        ...

    def step_gemm_factor(self, fmt: Format, scaling: str | None) -> float:
        """Multiplier for a GEMM inside a training step against the same GEMM timed alone (1.0: none)."""
        ...


@dataclasses.dataclass(frozen=True, kw_only=True)
class Roofline:
    """The roofline with achievable fractions and a launch floor, from ``gpu.efficiency``.

    ``gemm_time = max(2MKN / (peak(fmt)·gemm_fraction(fmt)), gemm_bytes / (bw·mem_bw_fraction), launch)``;
    ``memory_kernel_time = max(bytes / (bw·mem_bw_fraction), launch)``.

    Attributes:
        memory_term: include the bandwidth term for GEMMs (skinny GEMMs are memory-bound).
        launch_floor: no kernel takes less than ``gpu.launch_overhead_s``.
    """

    memory_term: bool = True
    launch_floor: bool = True
    name: str = "roofline"

    def gemm_time_s(self, M, K, N, *, fmt, scaling, out_fmt, gpu, lead_dims=None):
        xp = namespace(M, K, N)
        t = gemm_flops(M, K, N) / gpu.achievable_flops_per_s(fmt)
        if self.memory_term:
            t = xp.max(t, _gemm_bytes(M, K, N, fmt, out_fmt, scaling) / gpu.achievable_mem_bw_bytes_per_s)
        if self.launch_floor:
            t = xp.max(t, gpu.launch_overhead_s)
        return t

    def memory_kernel_time_s(self, bytes_moved, *, gpu, recipe=None, tensor=None):
        t = bytes_moved / gpu.achievable_mem_bw_bytes_per_s
        if self.launch_floor:
            t = namespace(bytes_moved).max(t, gpu.launch_overhead_s)
        return t

    def launch_time_s(self, *, gpu):
        return gpu.launch_overhead_s

    def step_gemm_factor(self, fmt, scaling):
        return 1.0


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Original:
    """torchao's 2024 float8 roofline: compute-only GEMMs, bandwidth-only casts, 1 launch per tiny kernel."""

    name: str = "original"

    def gemm_time_s(self, M, K, N, *, fmt, scaling, out_fmt, gpu, lead_dims=None):
        return gemm_flops(M, K, N) / gpu.peak_flops_per_s(fmt) / gpu.efficiency.gemm(fmt)

    def memory_kernel_time_s(self, bytes_moved, *, gpu, recipe=None, tensor=None):
        return bytes_moved / gpu.mem_bw_bytes_per_s / gpu.efficiency.mem_bw_fraction

    def launch_time_s(self, *, gpu):
        return gpu.launch_overhead_s

    def step_gemm_factor(self, fmt, scaling):
        return 1.0


ROOFLINE = Roofline()
ORIGINAL = _Original()
_MODELS = {"roofline": ROOFLINE, "original": ORIGINAL}
ModelLike = str | TimeModel | None


def time_model(gpu: GPUSpec, model: ModelLike = None) -> TimeModel:
    """The model to use: ``model`` if given (an object or ``"roofline"``/``"original"``/``"calibrated"``),
    else the GPU's calibration, else :data:`ROOFLINE`."""
    if model is None:
        return gpu.calibration if gpu.calibration is not None else ROOFLINE
    if isinstance(model, str):
        if model == "calibrated":
            if gpu.calibration is None:
                raise PerfModelError(
                    f"{gpu.name} has no calibration; use model='roofline', or fit one with "
                    "`perfmodel calibrate` (GPUs shipped with one: see docs/validation.md)"
                )
            return gpu.calibration
        if model not in _MODELS:
            raise PerfModelError(choices_message("time model", model, [*_MODELS, "calibrated"]))
        return _MODELS[model]
    if not isinstance(model, TimeModel):
        raise PerfModelError(f"model must be a name or a TimeModel, got {type(model).__name__}")
    return model


def resolve_scaling(fmt: Format, scaling: str | None) -> str | None:
    """Check ``scaling`` against ``fmt`` and fill the default.

    High-precision formats take no scaling (``None``); fp8/int8 default to ``"tensorwise"`` and accept
    ``tensorwise|rowwise|blockwise``; block-scaled formats (mxfp8, mxfp4, nvfp4) only ``"mx"``.
    """
    if scaling is not None and scaling not in SCALINGS:
        raise PerfModelError(choices_message("scaling", scaling, SCALINGS, "Or None for the format's default."))
    if fmt.block_scaled:
        if scaling not in (None, "mx"):
            raise UnsupportedFormatError(f"{fmt.name} carries its own block scales: scaling must be 'mx' or None")
        return "mx"
    if fmt.bits >= 16:
        if scaling is not None:
            raise UnsupportedFormatError(f"{fmt.name} GEMMs are unscaled: scaling must be None, got {scaling!r}")
        return None
    if scaling == "mx":
        raise UnsupportedFormatError(f"scaling 'mx' needs an MX format (mxfp8, mxfp4, nvfp4), not {fmt.name}")
    return scaling or "tensorwise"


def gemm_flops(M: Any, K: Any, N: Any) -> Any:
    """FLOPs of one GEMM ``[M, K] @ [K, N]``: ``2·M·K·N`` (1 FMA = 2 FLOP)."""
    check_shapes(M, K, N)
    return 2 * M * K * N


def _scale_bytes(M, K, N, fmt: Format, scaling: str | None):
    xp = namespace(M, K, N)
    if scaling is None:
        return 0
    if scaling == "tensorwise":
        return 2 * _SCALE_BYTES  # one fp32 per operand
    if scaling == "rowwise":
        return (M + N) * _SCALE_BYTES  # A: one per row (M), B: one per column (N)
    if scaling == "blockwise":
        # A: 1x128 tiles along K; B: 128x128 tiles
        return (M * xp.cdiv(K, _BLOCK) + xp.cdiv(K, _BLOCK) * xp.cdiv(N, _BLOCK)) * _SCALE_BYTES
    # mx: one scale per `scale_block` elements along K, for both operands
    return (M + N) * xp.cdiv(K, fmt.scale_block) * fmt.scale_bits // 8


def _gemm_bytes(M, K, N, fmt: Format, out_fmt: Format, scaling):
    return (
        (M * K + K * N) * fmt.bytes_per_element
        + M * N * out_fmt.bytes_per_element
        + _scale_bytes(M, K, N, fmt, scaling)
    )


def gemm_bytes(
    M: Any,
    K: Any,
    N: Any,
    dtype: FormatLike = "bf16",
    out_dtype: FormatLike = "bf16",
    *,
    scaling: str | None = None,
) -> Any:
    """Minimum device-memory bytes of one GEMM: read A and B once, write C once, plus scales.

    ``(M·K + K·N)·bytes(dtype) + M·N·bytes(out_dtype) + scale bytes``, where scale bytes are 8
    (tensorwise), ``4·(M+N)`` (rowwise), ``4·(M·⌈K/128⌉ + ⌈K/128⌉·⌈N/128⌉)`` (blockwise) or
    ``(M+N)·⌈K/block⌉`` E8M0/E4M3 bytes (mx).
    """
    check_shapes(M, K, N)
    fmt, out_fmt = get_format(dtype), get_format(out_dtype)
    return _gemm_bytes(M, K, N, fmt, out_fmt, resolve_scaling(fmt, scaling))


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
    """Predicted seconds for one GEMM ``[M, K] @ [K, N]`` on ``gpu``.

    Uses ``gpu``'s calibrated model when it has one, else :class:`Roofline`; ``model`` overrides.

    >>> round(gemm_time_s(8192, 8192, 8192, "bf16", "H100-2.4TB", model="original") * 1e3, 3)
    1.853
    """
    check_shapes(M, K, N)
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
    """The predicted GEMM as a :class:`PerfData` point (time, FLOPs, bytes, format, GPU)."""
    fmt = get_format(dtype)
    return PerfData(
        time_s=gemm_time_s(M, K, N, fmt, gpu, scaling, out_dtype=out_dtype, model=model),
        flops=gemm_flops(M, K, N),
        bytes=gemm_bytes(M, K, N, fmt, out_dtype, scaling=scaling),
        dtype=fmt,
        gpu=get_gpu(gpu),
        label=label or f"gemm {M}x{K}x{N} {fmt.name}",
        source="predicted",
        meta={"M": M, "K": K, "N": N, "scaling": resolve_scaling(fmt, scaling)},
    )
