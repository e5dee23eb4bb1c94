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

import numpy as np

from ._backend import check_shapes, is_symbolic, namespace
from .errors import IneligibleShapeError, PerfModelError, UnsupportedFormatError, choices_message
from .formats import Format, FormatLike, get_format

__all__ = [
    "ALIGN",
    "FP8_GEMM_ALIGN",
    "LAYOUTS",
    "SCALINGS",
    "Scaling",
    "alignment",
    "check_fp8_alignment",
    "check_layout",
    "fp8_aligned",
    "fp8_condition",
    "gemm_bytes",
    "gemm_flops",
    "layout_lead_dims",
    "misaligned",
    "padded_shape",
    "resolve_scaling",
]

#: float8 GEMM kernels need K and N to be multiples of this (``torch._scaled_mm``: "both dimensions of mat2 must
#: be divisible by 16"; torchao's float8 filter checks a Linear's in_features and out_features the same way).
FP8_GEMM_ALIGN = 16


def fp8_aligned(size: Any) -> Any:
    """Whether a float8 GEMM dimension (K or N) is a multiple of :data:`FP8_GEMM_ALIGN`: a bool, a bool array
    for arrays; a sympy symbol is taken as aligned, a sympy number is checked."""
    if is_symbolic(size):
        return not size.is_number or int(size) % FP8_GEMM_ALIGN == 0
    if isinstance(size, np.ndarray):
        return _multiple_of(size, FP8_GEMM_ALIGN)
    return size % FP8_GEMM_ALIGN == 0  # numbers


def _multiple_of(x: np.ndarray, p: int) -> np.ndarray:
    """``x % p == 0`` elementwise for a power of two ``p``, the same booleans at a fraction of the cost: integer
    arrays by a bit mask; float arrays as ``x - floor(x / p) * p == 0`` (scaling by a power of two is exact, the
    difference is the exact remainder, and inf/NaN give NaN there, so False, as ``%`` does); numpy's float
    ``%`` is a floored divmod, ~8x slower than these three passes."""
    if x.dtype.kind in "iu":
        return (x & (p - 1)) == 0
    if x.dtype.kind != "f":
        return x % p == 0
    with np.errstate(invalid="ignore"):
        r = np.floor(x * (1.0 / p))
        r *= p
        np.subtract(x, r, out=r)
        return r == 0


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
    if all(isinstance(x, np.ndarray) and x.dtype == np.float64 and x.shape == M.shape for x in (M, K, N)):
        return _gemm_bytes_inplace(M, K, N, fmt, out_fmt, scaling)
    return (
        (M * K + K * N) * fmt.bytes_per_element
        + M * N * out_fmt.bytes_per_element
        + _scale_bytes(M, K, N, fmt, scaling)
    )


def _add_output_bytes(out: np.ndarray, mn: np.ndarray, a: int, c: int, scratch: np.ndarray) -> None:
    """In place: ``out`` (the operands' element count M·K + K·N) becomes the GEMM's bytes without scales,
    ``out · a + mn · c`` (``a``, ``c``: input and output bytes per element; ``mn``: M·N, read only unless it is
    ``scratch``, which takes ``mn · c``), skipping the passes that change nothing and folding ``a == c`` into one
    multiply (:func:`_gemm_bytes_inplace`, the float8 grid)."""
    if a == c:  # (M·K + K·N + M·N) · a
        out += mn
        if a != 1:
            out *= a
        return
    if a != 1:
        out *= a
    if c != 1:
        out += np.multiply(mn, c, out=scratch)
    else:
        out += mn


def _gemm_bytes_inplace(M, K, N, fmt: Format, out_fmt: Format, scaling) -> np.ndarray:
    """:func:`_gemm_bytes` on float64 arrays of one shape in two buffers, skipping the passes that change nothing
    (a factor 1, 0 scale bytes) and folding equal element sizes (bf16 in and out) into one multiply: every term is
    a whole number of bytes, exact in float64 up to 2**53, so the same floats as the formula's order."""
    out = M * K
    tmp = K * N
    out += tmp
    np.multiply(M, N, out=tmp)
    _add_output_bytes(out, tmp, fmt.bytes_per_element, out_fmt.bytes_per_element, tmp)
    scale = _scale_bytes(M, K, N, fmt, scaling)
    if not (isinstance(scale, int) and scale == 0):
        out += scale
    return out


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


ALIGN = 8  # elements: cuBLAS's fast (TMA) paths need 16-byte rows for 2-byte elements


def alignment(x: Any) -> Any:
    """Largest power of two (1, 2, 4, 8) dividing ``x`` (elementwise on arrays)."""
    x = np.asarray(x).astype(np.int64) | ALIGN  # 8 caps the answer (and 0, divisible by all, gives 8)
    return x & -x  # the lowest set bit: the largest power of two dividing x (two's complement: also for x < 0)


#: Operand layouts of ``[M, K] @ [K, N]`` in torch's row-major terms, A then B: ``r`` row-major, ``c``
#: column-major (a transposed contiguous tensor). ``rc``: ``x @ W.T`` (a Linear's forward, the default);
#: ``rr``: ``x @ W`` (its grad_input GEMM); ``cr``: ``gO.T @ x`` (its grad_weight GEMM).
LAYOUTS: tuple[str, ...] = ("rr", "rc", "cr")


def layout_lead_dims(layout: str, M: Any, K: Any, N: Any) -> tuple[Any, Any]:
    """The two dimensions whose alignment decides cuBLAS's kernel in ``layout``: the contiguous (leading)
    dimensions of A and of the output. ``rr`` and ``rc``: ``(K, N)``; ``cr`` (A column-major, its leading
    dimension is M): ``(M, N)`` — measured: every bf16 ``cr`` GEMM with M or N not a multiple of 8 ran a
    pre-Hopper (sm75/sm80) kernel, while K did not matter (benchmarks/data/h200_2026-12-01)."""
    return (M, N) if layout == "cr" else (K, N)


def misaligned(a: Any, b: Any) -> Any:
    """Whether leading dimensions ``a``, ``b`` send cuBLAS to its fallback kernels (either not a multiple
    of :data:`ALIGN`): a bool, a bool array, or a sympy condition."""
    if namespace(a, b).name == "sympy":
        return _off_sym(a, b, ALIGN)
    # min(alignment(a), alignment(b)) < ALIGN, by one bit mask on the two (truncated, as alignment() does) ints
    out = ((np.asarray(a).astype(np.int64) | np.asarray(b).astype(np.int64)) & (ALIGN - 1)) != 0
    return out if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else bool(out)


def padded_shape(M: Any, K: Any, N: Any, layout: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The nearest shape cuBLAS runs with its Hopper kernels to a 16-bit GEMM it sends to its fallback kernels
    (:func:`fallback_kernels`; float arrays, broadcast): the layout's leading dimensions (:func:`layout_lead_dims`:
    K and N for ``rr``/``rc``, M and N for ``cr``) rounded up to multiples of :data:`ALIGN`, and K at least
    :data:`ALIGN`; one row keeps M = 1 and gets K and N rounded up (one row runs the Hopper kernels when K and N are
    multiples of 8, whatever the layout). A dimension already aligned stays as it is. The tile model's fallback
    features price this shape; :func:`perfmodel.gemm_kernel` reports it as ``aligned_shape``."""
    if layout not in LAYOUTS:
        raise PerfModelError(choices_message("padded_shape: layout", layout, LAYOUTS))
    M, K, N = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (M, K, N)))

    def up(x: np.ndarray) -> np.ndarray:
        return np.ceil(x / ALIGN) * ALIGN

    if layout != "cr":
        return M, up(K), up(N)
    one = M == 1
    return np.where(one, M, up(M)), np.where(one, up(K), np.maximum(K, ALIGN)), up(N)


def _off_sym(a: Any, b: Any, p: int) -> Any:
    """The sympy condition "``a`` or ``b`` is not a multiple of ``p``"."""
    import sympy

    return sympy.Or(sympy.Ne(sympy.Mod(a, p), 0), sympy.Ne(sympy.Mod(b, p), 0))


def check_layout(layout: Any, fmt: FormatLike = "bf16") -> str:
    """``layout`` if it is one of :data:`LAYOUTS` and ``fmt`` can run it; else a named error listing them."""
    if not isinstance(layout, str) or layout not in LAYOUTS:
        raise PerfModelError(choices_message("layout", layout, LAYOUTS, "rc: x @ W.T, rr: x @ W, cr: gO.T @ x."))
    f = get_format(fmt)
    if layout != "rc" and f.bits <= 8:
        raise UnsupportedFormatError(
            f"{f.name} GEMMs (torch._scaled_mm) run layout 'rc' only (A row-major, B column-major), not {layout!r}"
        )
    return layout


def fp8_condition(K: Any, N: Any) -> Any:
    """The sympy condition under which a float8 GEMM of symbolic ``K``/``N`` can run,
    ``Eq(Mod(K, 16), 0) & Eq(Mod(N, 16), 0)`` (:data:`FP8_GEMM_ALIGN`); ``True``/``False`` where neither has free
    symbols (a bool array for arrays). Symbolic answers are guarded by it
    (:func:`perfmodel._backend.guard_eligible`)."""
    if not any(is_symbolic(v) and not v.is_number for v in (K, N)):
        k, n = fp8_aligned(K), fp8_aligned(N)
        if isinstance(k, np.ndarray) or isinstance(n, np.ndarray):
            return np.asarray(k) & np.asarray(n)
        return bool(k and n)
    import sympy

    return sympy.And(*(sympy.Eq(sympy.Mod(v, FP8_GEMM_ALIGN), 0) for v in (K, N)))


def check_fp8_alignment(K: Any, N: Any, fmt: FormatLike) -> None:
    """A named error if an 8-bit GEMM's ``K`` or ``N`` is not a multiple of :data:`FP8_GEMM_ALIGN`
    (``torch._scaled_mm`` refuses it; a float8 Linear of such a shape stays in bf16, see
    :func:`perfmodel.float8.linear_time`'s ``eligible``). Symbols pass here; symbolic answers carry the condition
    (:func:`fp8_condition`)."""
    if get_format(fmt).bits > 8:
        return
    for name, v in (("K", K), ("N", N)):
        bad = ~np.asarray(fp8_aligned(v), dtype=bool).reshape(-1)
        if bad.any():
            first = np.asarray(v).reshape(-1)[np.argmax(bad)]
            first = int(first) if float(first).is_integer() else first
            raise IneligibleShapeError(
                f"{get_format(fmt).name} GEMMs (torch._scaled_mm) need K and N to be multiples of {FP8_GEMM_ALIGN}; "
                f"{name}={first} is not: pad it to a multiple of {FP8_GEMM_ALIGN} or price the GEMM in bf16"
            )
