"""GEMM counting: FLOPs and bytes of ``C[M, N] = A[M, K] @ B[K, N]``, and which scalings a format takes.

Counting rules (used by every formula in perfmodel):
* 1 FMA = 2 FLOP, so a GEMM does ``2·M·K·N`` FLOP (the usual convention; see e.g. Kaplan et al.
  2020, "Scaling Laws for Neural Language Models", §2.1).
* Bytes are device-memory traffic counted per kernel: each operand read once and the output
  written once (perfect on-chip reuse), plus the scale tensors of scaled formats.

The public names are imported from :mod:`perfmodel.gemm` (and the package root); this module sits
below the time models, which price these counts.
"""

from __future__ import annotations

from typing import Any, Literal

from ._backend import check_shapes, is_symbolic, namespace
from .errors import PerfModelError, UnsupportedFormatError, choices_message
from .formats import Format, FormatLike, get_format

__all__ = ["FP8_GEMM_ALIGN", "SCALINGS", "Scaling", "fp8_aligned", "gemm_bytes", "gemm_flops", "resolve_scaling"]

#: float8 GEMM kernels need K and N to be multiples of this (``torch._scaled_mm``: "both dimensions of mat2 must
#: be divisible by 16"; torchao's float8 filter checks a Linear's in_features and out_features the same way).
FP8_GEMM_ALIGN = 16


def fp8_aligned(size: Any) -> Any:
    """Whether a float8 GEMM dimension (K or N) is a multiple of :data:`FP8_GEMM_ALIGN`: a bool, a bool array
    for arrays; a sympy symbol is taken as aligned, a sympy number is checked."""
    if is_symbolic(size):
        return not size.is_number or int(size) % FP8_GEMM_ALIGN == 0
    return size % FP8_GEMM_ALIGN == 0  # numbers and arrays alike


Scaling = Literal["tensorwise", "rowwise", "blockwise", "mx"]
#: Scaling granularities of low-precision GEMMs. ``mx``: the block scaling built into MX/NVFP4 formats.
SCALINGS: tuple[str, ...] = ("tensorwise", "rowwise", "blockwise", "mx")
_SCALE_BYTES = 4  # fp32 scale factors (tensorwise, rowwise, blockwise)
_BLOCK = 128  # blockwise: 1x128 activation tiles, 128x128 weight tiles (DeepSeek-V3 report, §3.3)


def resolve_scaling(fmt: Format, scaling: str | None) -> str | None:
    """Check ``scaling`` against ``fmt`` and fill the default.

    High-precision formats take no scaling (``None``); fp8/int8 default to ``"tensorwise"`` and accept
    ``tensorwise|rowwise|blockwise``; block-scaled formats (mxfp8, mxfp4, nvfp4) only ``"mx"``.
    """
    if scaling is not None and (not isinstance(scaling, str) or scaling not in SCALINGS):
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
    M, K, N = check_shapes(M, K, N)
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
    M, K, N = check_shapes(M, K, N)
    fmt, out_fmt = get_format(dtype), get_format(out_dtype)
    return _gemm_bytes(M, K, N, fmt, out_fmt, resolve_scaling(fmt, scaling))
