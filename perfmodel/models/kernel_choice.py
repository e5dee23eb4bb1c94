"""Which kernel cuBLAS runs for one GEMM on a Hopper GPU, and why: :func:`gemm_kernel`.

A bf16 GEMM's time depends first on which class of kernel cuBLAS picks for it, and the class follows from the
operand layout's leading dimensions: one not a multiple of 8 elements sends cuBLAS from its Hopper kernels to
pre-Hopper CUTLASS kernels, 5–6× slower (``docs/validation.md``, "Operand layouts, timing and cuBLAS's kernel
choice"). :func:`gemm_kernel` says which class a GEMM gets, why, whether it splits K, and the nearest shape that
runs the Hopper kernels instead (pad the dimension named, e.g. a vocabulary of 50257 to 50264)::

    >>> k = gemm_kernel(2103, 2272, 7472, "bf16", "H200", layout="cr")
    >>> k.kernel, k.alignment, k.aligned_shape
    ('cutlass_sm75', 1, (2104, 2272, 7472))

The classes (:data:`KERNELS`), by the names in cuBLAS's kernels as the profiler records them:

* ``"hopper"``: cuBLAS's Hopper kernels (``nvjet_sm90_…``; a few shapes get ``sm90_xmma_…``), TMA loads and
  warpgroup MMA: every fp8 ``torch._scaled_mm`` and every bf16 GEMM with aligned leading dimensions;
* ``"cutlass_sm80"``: CUTLASS sm80 kernels with 2-element (4-byte) loads (``…_align2``): leading dimensions all
  even, not all multiples of 8;
* ``"cutlass_sm75"``: CUTLASS sm75 kernels with 1-element loads (``…_align1``): a leading dimension odd;
* ``"gemv"``: cuBLAS's matrix-vector kernels (``gemvx``), for one row (M = 1) with K or N not a multiple of 8
  (K ≥ 8: one row with K < 8, which no sweep measured, gets the fallback class the models price it with);
* ``"gemmSN"``: cuBLAS's few-row kernel (``gemmSN_…``), which it ran instead of the CUTLASS fallback for 1368 of
  the sweeps' 3854 ``rr``/``rc`` GEMMs of 2 to 16 rows with a misaligned leading dimension
  (``KERNEL_RULE_AGREEMENT["alternative"]``; which ones, we have no rule for): never the answer, but the
  :attr:`GemmKernel.alternative` of those GEMMs.

The measured side is :func:`kernel_class_of`: the class of a kernel a profiler recorded, from its name
(:attr:`perfmodel.measured.proton.Kernel.gemm_kernel` on a Proton profile), so a profile and a prediction speak of the
same
classes.

**Where the rules come from.** They were read off the H200 layout sweeps of 2026-12-01 (torch 2.11, cuBLAS of
CUDA 13.0; ``benchmarks/data/h200_2026-12-01``; the profiler's kernel names): :data:`KERNEL_RULE_AGREEMENT` is how
many GEMMs of every sweep (those and the later ones, of 2026-12-01 and 02) ran the class the rule gives
(``python benchmarks/validate.py kernel-choice``; mostly a description of the data the rule was read from),
:data:`KERNEL_RULE_HELD_OUT` the same on the sweeps measured after it was read (its
held-out score). The split-K answer is the H200 tile model's
(:meth:`perfmodel.models.tiles.TileModel.split_k`: whether the formula's fastest candidate splits K), fitted on the
seed-0 sessions only, so the other sessions score it: :data:`SPLIT_K_AGREEMENT`. On another Hopper GPU (the same
cuBLAS kernels; not measured there) the class is ``transferred`` and the split-K answer is ``None``; other
architectures get a named error (their kernels differ: Ampere has no Hopper kernels, Blackwell was not measured).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np

from .._backend import check_shapes, is_symbolic
from ..counting import (
    ALIGN,
    alignment,
    check_fp8_alignment,
    check_layout,
    layout_lead_dims,
    padded_shape,
    resolve_scaling,
)
from ..errors import InvalidShapeError, PerfModelError, UnsupportedFormatError
from ..formats import FormatLike, get_format
from ..specs.gpu import GPULike, get_gpu, list_gpus
from .calibrated import fallback_kernels

__all__ = [
    "KERNELS",
    "KERNEL_RULE_AGREEMENT",
    "KERNEL_RULE_HELD_OUT",
    "SPLIT_K_AGREEMENT",
    "GemmKernel",
    "alternative",
    "gemm_kernel",
    "kernel_class",
    "kernel_class_of",
]

#: kernel class -> what it is (module doc)
KERNELS: dict[str, str] = {
    "hopper": "cuBLAS Hopper kernel (nvjet, sm90)",
    "cutlass_sm80": "CUTLASS sm80 align2 kernel (pre-Hopper fallback, 2-element loads)",
    "cutlass_sm75": "CUTLASS sm75 align1 kernel (pre-Hopper fallback, 1-element loads)",
    "gemv": "cuBLAS gemv kernel (one row)",
    "gemmSN": "cuBLAS gemmSN kernel (few rows)",
}
#: the rule's agreement with the kernels cuBLAS ran for the bf16 GEMMs of every H200 layout sweep (2026-12-01 and
#: 02; all three layouts; every fp8 GEMM ran a Hopper kernel; ``python benchmarks/validate.py kernel-choice``, which a
#: test re-runs): GEMMs, those that ran the class the rule gives, and those that ran its alternative (gemmSN)
KERNEL_RULE_AGREEMENT: dict[str, int] = {"gemms": 230561, "right": 229105, "alternative": 1368}
#: the same on the bf16 GEMMs of the sweeps measured after the rule was read (seeds 2049 to 2086 and 3003, on twenty
#: GPUs none of the others ran on; the same script): the rule's held-out score
KERNEL_RULE_HELD_OUT: dict[str, int] = {"gemms": 140008, "right": 139142, "alternative": 806}
#: the tile model's split-K answer against the kernels cuBLAS ran for the bf16 GEMMs (gemv ones aside) of the
#: sessions its formula was not fitted on (every layout sweep but seed 0's two; the same script): GEMMs, right
#: answers, and the right answers of "never split" on the same GEMMs (the baseline)
SPLIT_K_AGREEMENT: dict[str, int] = {"gemms": 224006, "right": 202474, "never": 160077}
#: the GPU the rules and the split-K model were measured on
MEASURED_GPU = "H200"
#: GEMMs of up to this many rows with a misaligned leading dimension, in ``rr``/``rc``, may get gemmSN
FEW_ROWS = 16


@dataclasses.dataclass(frozen=True)
class GemmKernel:
    """The kernel class cuBLAS runs for one GEMM (:func:`gemm_kernel`).

    Attributes:
        kernel: the class, a key of :data:`KERNELS`.
        description: what it is, in words.
        reason: why this class: the layout's leading dimensions and their alignment.
        lead_dims: the two dimensions whose alignment decides it (``(("K", 4096), ("N", 11008))``; ``cr``: M, N).
        alignment: the largest power of two (1, 2, 4, 8) dividing both leading dimensions (and K, where K < 8),
            in elements; 8 means aligned (for one row the class follows K and N alone).
        aligned_shape: the nearest larger ``(M, K, N)`` that runs the Hopper kernels (its misaligned dimensions
            rounded up to multiples of 8), ``None`` where this one does.
        alternative: a class cuBLAS runs instead for some GEMMs like this one (``"gemmSN"``), else ``None``.
        split_k: whether the kernel splits K (the H200 tile model's formula); ``None`` where not modelled (another
            GPU, gemv kernels).
        kind: ``"measured"`` (the GPU the rules were read on) or ``"transferred"`` (another Hopper GPU).
        basis: where the answer comes from and how often it held.
    """

    kernel: str
    description: str
    reason: str
    lead_dims: tuple[tuple[str, int], tuple[str, int]]
    alignment: int
    aligned_shape: tuple[int, int, int] | None
    alternative: str | None
    split_k: bool | None
    kind: str
    basis: str

    def line(self) -> str:
        """One line for the CLI: the class, why, its alternative and split-K."""
        text = f"{self.description} — {self.reason}"
        if self.alternative:
            text += f"; for about a third of such GEMMs cuBLAS runs its {self.alternative} kernel instead"
        if self.split_k is not None:
            text += f"; split-K: {'yes' if self.split_k else 'no'}"
        return text


#: kernel-name patterns of the classes (module doc), tried in order: the names the profiler records for cuBLAS's
#: kernels on the H200 (torch 2.11, CUDA 13.0), e.g. ``nvjet_sm90_tst_128x256_64x4_2x1_v_bz_NNT``,
#: ``sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize…``,
#: ``cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_nn_align1``, ``internal::gemvx::kernel<…>``,
#: ``gemmSN_NN_kernel<…>``
_NAME_CLASSES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"gemmSN"), "gemmSN"),
    (re.compile(r"^nvjet_sm90_|(?:^|\W)sm90_xmma_gemm"), "hopper"),
    (re.compile(r"(?:^|\W)cutlass_80_"), "cutlass_sm80"),
    (re.compile(r"(?:^|\W)cutlass_75_"), "cutlass_sm75"),
    (re.compile(r"gemv"), "gemv"),
)


def kernel_class_of(name: str) -> str | None:
    """The class (a key of :data:`KERNELS`) of a kernel a profiler recorded, from its name; ``None`` for a kernel
    of none of them (a Triton kernel, an elementwise one, a split-K reduction). The measured side of
    :func:`gemm_kernel`: :attr:`perfmodel.measured.proton.Kernel.gemm_kernel` and
    ``python benchmarks/validate.py kernel-choice``
    read profiles with it.

    >>> kernel_class_of("cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_nn_align1")
    'cutlass_sm75'
    """
    if not isinstance(name, str):
        raise PerfModelError(f"a kernel name is a string, got {type(name).__name__} {name!r}")
    return next((cls for pattern, cls in _NAME_CLASSES if pattern.search(name)), None)


def kernel_class(M: Any, K: Any, N: Any, dtype: FormatLike = "bf16", *, layout: str = "rc") -> np.ndarray:
    """The kernel class (a key of :data:`KERNELS`) of each GEMM ``[M, K] @ [K, N]`` in ``layout``: the rule of
    :func:`gemm_kernel` on numbers or arrays (broadcast), a numpy array of strings. Checked like
    :func:`perfmodel.gemm_time_s` (sizes, format, layout, fp8 alignment); sympy sizes are a named error (the
    class depends on divisibility)."""
    return _classes(*_checked(M, K, N, dtype, layout))


def _checked(M: Any, K: Any, N: Any, dtype: FormatLike, layout: str) -> tuple[Any, Any, Any, Any, str]:
    """The sizes (checked whole numbers, normalised), the format and the layout of a kernel-class question, or
    the named error of the first that is wrong: :func:`kernel_class`'s and :func:`gemm_kernel`'s one check."""
    M, K, N = check_shapes(M, K, N)
    if any(is_symbolic(x) for x in (M, K, N)):
        raise InvalidShapeError(
            "the kernel class depends on the sizes' divisibility: give numbers or arrays, not sympy expressions"
        )
    for name, v in (("M", M), ("K", K), ("N", N)):
        if not np.all(np.mod(v, 1) == 0):
            raise InvalidShapeError(f"{name} must be whole numbers for a kernel class, got {v!r}")
    fmt = _check_format(dtype)
    layout = check_layout(layout, fmt)
    check_fp8_alignment(K, N, fmt)
    return M, K, N, fmt, layout


def _classes(M: Any, K: Any, N: Any, fmt: Any, layout: str) -> np.ndarray:
    """The rule on checked inputs (:func:`_checked`): the class of each GEMM, broadcast."""
    M, K, N = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (M, K, N)))
    if fmt.bits <= 8:
        return np.full(M.shape, "hopper", dtype=object).astype(str)
    a, b = layout_lead_dims(layout, M, K, N)
    align = _alignment(a, b, K)
    one_row_off = (M == 1) & ((np.mod(K, ALIGN) != 0) | (np.mod(N, ALIGN) != 0))
    fallback = np.where(align == 1, "cutlass_sm75", "cutlass_sm80")
    # the rule the models price with (fallback_kernels); one row with K >= 8 runs gemv or Hopper kernels
    return np.where(fallback_kernels(M, K, a, b), fallback, np.where(one_row_off, "gemv", "hopper"))


#: the formats the rule covers: bf16 (measured), fp16 (the same element size: transferred), fp8 (Hopper only)
FORMATS = ("bf16", "fp16", "fp8_e4m3", "fp8_e5m2")


def _check_format(dtype: FormatLike) -> Any:
    fmt = get_format(dtype)
    if fmt.name not in FORMATS:
        raise UnsupportedFormatError(
            f"the kernel-choice rule covers {', '.join(FORMATS)} GEMMs, not {fmt.name} (its kernels and their "
            "alignment rules were not measured)"
        )
    return fmt


def _alignment(a: Any, b: Any, K: Any) -> np.ndarray:
    """The largest power of two up to 8 dividing the leading dimensions ``a``, ``b`` and, where K < 8, K."""
    return np.minimum(np.minimum(alignment(a), alignment(b)), np.where(K < ALIGN, alignment(K), ALIGN))


def alternative(kernel: str, M: int, layout: str) -> str | None:
    """The class cuBLAS runs instead for some GEMMs of class ``kernel`` (:attr:`GemmKernel.alternative`):
    ``"gemmSN"`` for a CUTLASS fallback GEMM of at most :data:`FEW_ROWS` rows in ``rr``/``rc``, else ``None``."""
    few = layout in ("rr", "rc") and M <= FEW_ROWS
    return "gemmSN" if few and kernel in ("cutlass_sm75", "cutlass_sm80") else None


def _padded(M: int, K: int, N: int, layout: str) -> tuple[int, int, int]:
    """:func:`perfmodel.models.calibrated.padded_shape` of one GEMM, as ints: its :attr:`GemmKernel.aligned_shape`."""
    Mp, Kp, Np = padded_shape(M, K, N, layout)
    return int(Mp), int(Kp), int(Np)


def gemm_kernel(
    M: Any,
    K: Any,
    N: Any,
    dtype: FormatLike = "bf16",
    gpu: GPULike = "H100",
    scaling: str | None = None,
    *,
    layout: str = "rc",
) -> GemmKernel:
    """Which kernel class cuBLAS runs for ``[M, K] @ [K, N]`` in ``layout`` (``"rc"``: ``x @ W.T``, ``"rr"``:
    ``x @ W``, ``"cr"``: ``gO.T @ x``) on a Hopper ``gpu``, and why (module doc). One GEMM, in numbers; for
    arrays of shapes, :func:`kernel_class`. ``gpu`` defaults to the H100, as :func:`perfmodel.gemm_time_s` does:
    its class is ``transferred`` from the H200, where the rule was read and where split-K is modelled.

    >>> gemm_kernel(4096, 4096, 11008, "bf16", "H200").kernel
    'hopper'
    >>> k = gemm_kernel(1, 4096, 50257, "bf16", "H200", layout="rr")
    >>> k.kernel, k.aligned_shape
    ('gemv', (1, 4096, 50264))

    Raises:
        InvalidShapeError: sizes that are not positive whole numbers, arrays, sympy expressions.
        PerfModelError: a GPU that is not a Hopper (its kernels were not measured), an unknown layout.
        UnsupportedFormatError: a format the rule does not cover (:data:`FORMATS`).
        IneligibleShapeError: an fp8 GEMM whose K or N is not a multiple of 16 (``torch._scaled_mm`` refuses it).
    """
    for name, v in (("M", M), ("K", K), ("N", N)):
        if isinstance(v, np.ndarray) or is_symbolic(v):
            raise InvalidShapeError(
                f"gemm_kernel takes one GEMM; {name} is {'an array' if isinstance(v, np.ndarray) else 'symbolic'} "
                "(use kernel_class for arrays of shapes; a kernel class needs numbers)"
            )
    spec = get_gpu(gpu)
    if spec.arch != "90":
        hopper = [g for g in list_gpus() if get_gpu(g).arch == "90"]
        raise PerfModelError(
            f"gemm_kernel knows cuBLAS's kernel choice on Hopper GPUs only (measured on the {MEASURED_GPU}); "
            f"{spec.name} is sm{spec.arch}. Valid GPUs: {', '.join(hopper)}"
        )
    M, K, N, fmt, layout = _checked(M, K, N, dtype, layout)
    kernel = str(_classes(M, K, N, fmt, layout))
    M, K, N = (int(x) for x in (M, K, N))
    scaling = resolve_scaling(fmt, scaling)
    a, b = layout_lead_dims(layout, M, K, N)
    lead = ("M", "N") if layout == "cr" else ("K", "N")
    dims = ((lead[0], int(a)), (lead[1], int(b)))
    align = int(_alignment(a, b, K))
    measured_gpu = spec == get_gpu(MEASURED_GPU)  # the table's H200, not a spec built from it
    kind = "measured" if measured_gpu and fmt.name != "fp16" else "transferred"
    shape = None
    said = f"{layout}'s leading dimensions {dims[0][0]} = {dims[0][1]} and {dims[1][0]} = {dims[1][1]}"
    if fmt.bits <= 8:
        reason = f"fp8 torch._scaled_mm (K = {K} and N = {N}, multiples of 16)"
    elif M == 1 and kernel in ("gemv", "hopper"):
        off = [f"{d} = {v}" for d, v in (("K", K), ("N", N)) if v % ALIGN]
        reason = (
            f"one row, {' and '.join(off)} not {'a multiple' if len(off) == 1 else 'multiples'} of {ALIGN}"
            if off
            else f"one row, K and N multiples of {ALIGN}"
        )
        shape = _padded(M, K, N, layout) if off else None
    elif kernel == "hopper":
        reason = f"{said}: multiples of {ALIGN}"
    else:
        off = [
            f"{d} = {v}" for d, v in dims if v % ALIGN and not (d == "K" and K < ALIGN) and not (d == "M" and M == 1)
        ]
        off += [f"K = {K} < {ALIGN}"] if K < ALIGN else []
        what = "odd" if align == 1 else f"{align}-aligned"
        reason = f"{said}: {' and '.join(off)} ({what}; cuBLAS's Hopper kernels need multiples of {ALIGN})"
        shape = _padded(M, K, N, layout)
    split = None
    if measured_gpu and kernel != "gemv":
        from .registry import tile_kinds  # the formula kinds only: split-K reads no learned correction

        split = bool(tile_kinds(spec).split_k(M, K, N, fmt=fmt, scaling=scaling, gpu=spec, layout=layout)[0])
    return GemmKernel(
        kernel=kernel,
        description=KERNELS[kernel],
        reason=reason,
        lead_dims=dims,
        alignment=align,
        aligned_shape=shape,
        alternative=alternative(kernel, M, layout),
        split_k=split,
        kind=kind,
        basis=_basis(spec.name if not measured_gpu else None, fmt.name),
    )


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f} %" if b else "n/a"


def _basis(other_gpu: str | None, fmt: str) -> str:
    """Where the answer comes from: the rule's agreement, and split-K's on the measured GPU (``other_gpu``: the
    name of the GPU it was transferred to, ``None`` on the measured one)."""
    r, h, s = KERNEL_RULE_AGREEMENT, KERNEL_RULE_HELD_OUT, SPLIT_K_AGREEMENT
    text = (
        f"rule read off the {MEASURED_GPU} layout sweeps (2026-12-01 and 02, cuBLAS of CUDA 13.0): the class of "
        f"{_pct(r['right'], r['gemms'])} of their {r['gemms']} bf16 GEMMs (its alternative: "
        f"{_pct(r['alternative'], r['gemms'])}); held out, {_pct(h['right'], h['gemms'])} of {h['gemms']} measured "
        f"after it (its alternative: {_pct(h['alternative'], h['gemms'])})"
    )
    if other_gpu is not None:
        where = f"a modified {other_gpu} spec" if other_gpu == MEASURED_GPU else f"the {other_gpu}"
        text += f"; transferred to {where} (same architecture, not measured there); split-K not modelled"
    elif fmt == "fp16":
        text += "; transferred to fp16 (the same element size, not measured)"
    if other_gpu is None:
        text += (
            f"; split-K from the tile model's formula, right on {_pct(s['right'], s['gemms'])} of {s['gemms']} bf16 "
            f"GEMMs it was not fitted on (never splitting: {_pct(s['never'], s['gemms'])})"
        )
    return text
