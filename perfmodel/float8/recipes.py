"""float8 training recipes and the casting kernels each one launches for an ``nn.Linear``.

Tensors of ``y = x @ W.T`` (``nn.Linear(K, N, bias=False)`` on ``M`` tokens):
``x`` is ``[M, K]``, ``W`` is ``[N, K]``, ``grad_output`` (``gO``) is ``[M, N]``. The three GEMMs:

* output       ``y  = x  @ W.T``   ``[M, K] @ [K, N]``   -> ``gemm(M, K, N)``
* grad_input   ``gI = gO @ W``     ``[M, N] @ [N, K]``   -> ``gemm(M, N, K)``
* grad_weight  ``gW = gO.T @ x``   ``[N, M] @ [M, K]``   -> ``gemm(K, M, N)`` (FLOPs of ``K×M·M×N``)

Counting rule: a kernel's bytes are what it reads plus what it writes in device memory; input
tensors are bf16 (2 bytes), float8 outputs 1 byte, fp32 scales 4 bytes, E8M0 scales 1 byte.
Tiny kernels whose traffic is negligible (the second stage of an amax reduction, a reciprocal)
are ``launch_only``: they cost one kernel launch.

Sources for the dataflows: torchao ``float8/float8_linear.py`` and ``float8/config.py``
(recipes ``tensorwise``, ``rowwise``, ``rowwise_with_gw_hp``), torchao ``prototype/mx_formats``
(``mxfp8``: 1x32 blocks along the reduction dim, dim0 and dim1 cast kernels) and
``prototype/blockwise_fp8_training`` (1x128 activation and 128x128 weight blocks, DeepSeek-V3
technical report §3.3), and torchao's 2024 roofline model (``dynamic``/``delayed``, reproduced in
:mod:`perfmodel.compat.roofline_utils`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Literal

from .._backend import namespace
from ..errors import UnknownRecipeError, choices_message

__all__ = [
    "RECIPES",
    "CastOptions",
    "Kernel",
    "Recipe",
    "get_recipe",
    "recipe_names",
    "tensor_cast_kernels",
]

_HP = 2  # bytes of a bf16 element
_F8 = 1  # bytes of a float8 element
_FP32 = 4  # bytes of an fp32 scale

Tensor = Literal["input", "weight", "grad_output"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Kernel:
    """One casting kernel: what it reads and writes (bytes), or a launch-only tiny kernel."""

    name: str
    tensor: str
    read_bytes: Any = 0
    write_bytes: Any = 0
    launch_only: bool = False
    dataflow: str = ""

    @property
    def bytes(self) -> Any:
        """``read_bytes + write_bytes`` (one of them itself where the other is the int 0: a grid is not copied)."""
        r, w = self.read_bytes, self.write_bytes
        if type(w) is int and w == 0:
            return r
        if type(r) is int and r == 0:
            return w
        return r + w


@dataclasses.dataclass(frozen=True, kw_only=True)
class CastOptions:
    """Options that change which casting kernels run.

    Attributes:
        fuse_input_with_prev: the input's amax reduction runs in the previous op's epilogue
            (its standalone amax kernel disappears; the original model assumes this).
        fuse_grad_output_with_prev: the same for grad_output (fused into the next layer's backward).
        cache_weight_cast: the float8 weight is cast once and reused across micro-batches
            (gradient accumulation): no weight casts per step.
        torch_compile_limitations: model the 2024 torch.compile issues of the original model
            (pytorch#130015 extra fp8 read; pytorch#128063 delayed cast not fused). Only ``dynamic``
            and ``delayed`` know them.
        dynamic_shapes: the step was compiled with a dynamic token dimension (``mark_dynamic`` or
            torch.compile's automatic dynamic shapes after a recompile). Inductor then generates
            slower cast kernels; a calibrated model prices them apart (same kernels and bytes).
    """

    fuse_input_with_prev: bool = False
    fuse_grad_output_with_prev: bool = False
    cache_weight_cast: bool = False
    torch_compile_limitations: bool = False
    dynamic_shapes: bool = False

    def cast_key(self, recipe: str) -> str:
        """The key a calibration prices this recipe's casts under: ``"rowwise"`` or ``"rowwise+dynamic"``."""
        return f"{recipe}+dynamic" if self.dynamic_shapes else recipe


@dataclasses.dataclass(frozen=True, kw_only=True)
class Recipe:
    """A float8 (or other low-precision) training recipe for ``nn.Linear``.

    Attributes:
        name: registry key.
        description: one line.
        output_dtype, grad_input_dtype, grad_weight_dtype: the format of each GEMM's inputs.
        scaling: the scaling granularity of the low-precision GEMMs (see :data:`perfmodel.gemm.SCALINGS`).
        cast_kernels: ``(M, K, N, options) -> list[Kernel]`` — the casts one fwd+bwd step launches.
        torchao_name: torchao's name for the recipe, if torchao offers it: a ``Float8LinearConfig``
            recipe name (``convert_to_float8_training``), or for ``mxfp8`` the MX training recipe of
            ``quantize_`` (the printed code: :mod:`perfmodel.float8.torchao_code`).
    """

    name: str
    description: str
    output_dtype: str
    grad_input_dtype: str
    grad_weight_dtype: str
    scaling: str | None
    cast_kernels: Callable[[Any, Any, Any, CastOptions], list[Kernel]] = dataclasses.field(repr=False)  # a function
    torchao_name: str | None = None

    def gemm_dtypes(self) -> tuple[str, str, str]:
        """Formats of the output, grad_input and grad_weight GEMMs."""
        return (self.output_dtype, self.grad_input_dtype, self.grad_weight_dtype)

    def __str__(self) -> str:
        return self.name


# ---------------------------------------------------------------------------------------------
# Per-tensor casts
# ---------------------------------------------------------------------------------------------
def tensor_cast_kernels(
    tensor: str,
    dim0: Any,
    dim1: Any,
    scaling: str,
    *,
    fuse_with_prev: bool = False,
    torch_compile_limitations: bool = False,
) -> list[Kernel]:
    """Kernels of the original (2024) model that cast one bf16 tensor to float8, rows and columns.

    ``scaling`` is ``"dynamic"`` or ``"delayed"``; ``numel = dim0·dim1``.

    dynamic::

        kernel 1:          x_bf16 -> amax stage 1 -> tmp          read 2·numel (0 if fused with prev)
        kernel 2 (launch): tmp -> amax stage 2 -> amax
        kernel 3:          x_bf16, amax -> x_fp8 (row + col major) read 2·numel, write 2·numel
                           (+ numel read of fp8 with torch.compile limitations, pytorch#130015)

    delayed::

        kernel 1:          x_bf16 -> amax stage 1 + to_float8 -> x_fp8 (row + col major), tmp
                                                    read 2·numel (0 if fused), write 2·numel
        kernel 2 (launch): tmp -> amax stage 2 -> amax
        kernel 3 (launch): scale -> reciprocal -> inv_scale
        with torch.compile limitations (pytorch#128063) kernel 1 only reduces, and
        kernel 4:          x_bf16, scale -> x_fp8 (row + col major) read 2·numel + numel, write 2·numel
    """
    if scaling not in ("dynamic", "delayed"):
        raise UnknownRecipeError(choices_message("scaling type", scaling, ("dynamic", "delayed")))
    numel = dim0 * dim1
    hp = _HP * numel  # a bf16 copy of the tensor, bytes; also 2 fp8 copies (_F8 = _HP / 2): one array, not three
    first_read = 0 if fuse_with_prev else hp
    tc_read = _F8 * numel if torch_compile_limitations else 0
    cast_read = hp + tc_read if torch_compile_limitations else hp
    fp8_pair = hp if 2 * _F8 == _HP else 2 * _F8 * numel
    stage2 = Kernel(name=f"{tensor}.amax_stage2", tensor=tensor, launch_only=True, dataflow="tmp -> amax")
    if scaling == "dynamic":
        kernels = (
            []
            if fuse_with_prev
            else [
                Kernel(
                    name=f"{tensor}.amax_stage1",
                    tensor=tensor,
                    read_bytes=first_read,
                    dataflow=f"{tensor}_bf16 -> amax stage 1 -> tmp",
                ),
            ]
        )
        return [
            *kernels,
            stage2,
            Kernel(
                name=f"{tensor}.cast_row_col",
                tensor=tensor,
                read_bytes=cast_read,
                write_bytes=fp8_pair,
                dataflow=f"{tensor}_bf16, amax -> {tensor}_fp8 (row + col major)",
            ),
        ]
    reciprocal = Kernel(
        name=f"{tensor}.reciprocal", tensor=tensor, launch_only=True, dataflow="scale -> reciprocal -> inv_scale"
    )
    if not torch_compile_limitations:
        return [
            Kernel(
                name=f"{tensor}.amax_cast_row_col",
                tensor=tensor,
                read_bytes=first_read,
                write_bytes=fp8_pair,
                dataflow=f"{tensor}_bf16 -> amax stage 1 + cast -> {tensor}_fp8 (row + col major), tmp",
            ),
            stage2,
            reciprocal,
        ]
    return [
        Kernel(
            name=f"{tensor}.amax_stage1",
            tensor=tensor,
            read_bytes=first_read,
            dataflow=f"{tensor}_bf16 -> amax stage 1 -> tmp",
        ),
        stage2,
        reciprocal,
        Kernel(
            name=f"{tensor}.cast_row_col",
            tensor=tensor,
            read_bytes=hp + tc_read,
            write_bytes=fp8_pair,
            dataflow=f"{tensor}_bf16, scale -> {tensor}_fp8 (row + col major)",
        ),
    ]


def _axis_cast(
    tensor: str, rows: Any, cols: Any, *, along: str, contiguous: bool, scale_bytes: Any, fuse_with_prev: bool
) -> list[Kernel]:
    """Cast a ``[rows, cols]`` bf16 tensor to fp8 with one scale per group along ``along``.

    A reduction along the contiguous dim fuses amax and cast in one kernel (a whole row is in
    one program). Along the strided dim it takes two: a column amax, then the cast that also
    writes the transposed layout the GEMM needs.
    """
    numel = rows * cols
    cast = Kernel(
        name=f"{tensor}.cast_along_{along}",
        tensor=tensor,
        read_bytes=_HP * numel,
        write_bytes=_F8 * numel + scale_bytes,
        dataflow=f"{tensor}_bf16 -> amax per group along {along} -> {tensor}_fp8 + scales",
    )
    if contiguous:
        return [cast]
    amax = (
        []
        if fuse_with_prev
        else [
            Kernel(
                name=f"{tensor}.amax_along_{along}",
                tensor=tensor,
                read_bytes=_HP * numel,
                dataflow=f"{tensor}_bf16 -> amax along {along} (strided) -> scales",
            )
        ]
    )
    cast = dataclasses.replace(cast, dataflow=f"{tensor}_bf16, scales -> {tensor}_fp8 (transposed layout)")
    return [*amax, cast]


def _scales(kind: str, groups_of: Any, other: Any, block: int) -> Any:
    """Scale bytes for ``other`` rows each scaled in groups of ``block`` along a dim of ``groups_of``."""
    xp = namespace(groups_of, other)
    if kind == "rowwise":
        return other * _FP32
    if kind == "mx":
        return other * xp.cdiv(groups_of, block) * 1  # E8M0: 1 byte
    return other * xp.cdiv(groups_of, block) * _FP32  # blockwise 1x128 groups, fp32


def _tensorwise(M, K, N, o: CastOptions) -> list[Kernel]:
    # torchao tensorwise under torch.compile: per tensor an amax reduction (two stages), then one
    # cast writing the row-major copy and the transposed copy the other GEMM needs.
    ks = tensor_cast_kernels("input", M, K, "dynamic", fuse_with_prev=o.fuse_input_with_prev)
    if not o.cache_weight_cast:
        ks += tensor_cast_kernels("weight", N, K, "dynamic")
    ks += tensor_cast_kernels("grad_output", M, N, "dynamic", fuse_with_prev=o.fuse_grad_output_with_prev)
    return ks


def _grouped(kind: str, block: int, *, gw_high_precision: bool = False):
    """Rowwise / mx / blockwise: each GEMM scales its operands along its own reduction dim."""

    def kernels(M, K, N, o: CastOptions) -> list[Kernel]:
        def cast(tensor, rows, cols, along_rows: bool, fuse: bool) -> list[Kernel]:
            # along_rows: groups run along dim 1 (contiguous); else along dim 0 (strided)
            n_groups_dim, other = (cols, rows) if along_rows else (rows, cols)
            if kind == "blockwise" and tensor == "weight":  # 128x128 tiles: scales for both dims
                xp = namespace(rows, cols)
                sb = xp.cdiv(rows, block) * xp.cdiv(cols, block) * _FP32
            else:
                sb = _scales(kind, n_groups_dim, other, block)
            along = {
                ("input", True): "K",
                ("input", False): "M",
                ("weight", True): "K",
                ("weight", False): "N",
                ("grad_output", True): "N",
                ("grad_output", False): "M",
            }
            contiguous = along_rows or kind in ("mx", "blockwise")  # dedicated dim1 cast kernels
            return _axis_cast(
                tensor,
                rows,
                cols,
                along=along[tensor, along_rows],
                contiguous=contiguous,
                scale_bytes=sb,
                fuse_with_prev=fuse,
            )

        ks = cast("input", M, K, True, o.fuse_input_with_prev)  # out GEMM: x along K
        if not o.cache_weight_cast:
            ks += cast("weight", N, K, True, False)  # out GEMM: W along K
            ks += cast("weight", N, K, False, False)  # grad_input GEMM: W along N
        ks += cast("grad_output", M, N, True, o.fuse_grad_output_with_prev)  # grad_input: gO along N
        if not gw_high_precision:
            ks += cast("input", M, K, False, o.fuse_input_with_prev)  # grad_weight: x along M
            ks += cast("grad_output", M, N, False, o.fuse_grad_output_with_prev)  # grad_weight: gO along M
        return ks

    return kernels


def _none(M, K, N, o: CastOptions) -> list[Kernel]:
    return []


_ALL = (
    Recipe(
        name="bf16",
        description="baseline: three bf16 GEMMs, no casts",
        output_dtype="bf16",
        grad_input_dtype="bf16",
        grad_weight_dtype="bf16",
        scaling=None,
        cast_kernels=_none,
    ),
    Recipe(
        name="dynamic",
        description="original 2024 model: dynamic per-tensor scaling",
        output_dtype="fp8_e4m3",
        grad_input_dtype="fp8_e4m3",
        grad_weight_dtype="fp8_e4m3",
        scaling="tensorwise",
        cast_kernels=lambda M, K, N, o: _original("dynamic", M, K, N, o),
    ),
    Recipe(
        name="delayed",
        description="original 2024 model: delayed per-tensor scaling (amax history)",
        output_dtype="fp8_e4m3",
        grad_input_dtype="fp8_e4m3",
        grad_weight_dtype="fp8_e4m3",
        scaling="tensorwise",
        cast_kernels=lambda M, K, N, o: _original("delayed", M, K, N, o),
    ),
    Recipe(
        name="tensorwise",
        description="torchao: dynamic per-tensor scales, e4m3 fwd / e5m2 grads",
        output_dtype="fp8_e4m3",
        grad_input_dtype="fp8_e5m2",
        grad_weight_dtype="fp8_e5m2",
        scaling="tensorwise",
        cast_kernels=_tensorwise,
        torchao_name="tensorwise",
    ),
    Recipe(
        name="rowwise",
        description="torchao: per-row scales along each GEMM's reduction dim, e4m3",
        output_dtype="fp8_e4m3",
        grad_input_dtype="fp8_e4m3",
        grad_weight_dtype="fp8_e4m3",
        scaling="rowwise",
        cast_kernels=_grouped("rowwise", 1),
        torchao_name="rowwise",
    ),
    Recipe(
        name="rowwise_with_gw_hp",
        description="torchao: rowwise, grad_weight GEMM kept in bf16",
        output_dtype="fp8_e4m3",
        grad_input_dtype="fp8_e4m3",
        grad_weight_dtype="bf16",
        scaling="rowwise",
        cast_kernels=_grouped("rowwise", 1, gw_high_precision=True),
        torchao_name="rowwise_with_gw_hp",
    ),
    Recipe(
        name="mxfp8",
        description="torchao MX: e4m3 with one E8M0 scale per 32 along the reduction dim",
        output_dtype="mxfp8",
        grad_input_dtype="mxfp8",
        grad_weight_dtype="mxfp8",
        scaling="mx",
        cast_kernels=_grouped("mx", 32),
        torchao_name="mxfp8",
    ),
    Recipe(
        name="blockwise",
        description="DeepSeek-V3 style: 1x128 activation, 128x128 weight fp32 scales",
        output_dtype="fp8_e4m3",
        grad_input_dtype="fp8_e4m3",
        grad_weight_dtype="fp8_e4m3",
        scaling="blockwise",
        cast_kernels=_grouped("blockwise", 128),
    ),
)


def _original(scaling: str, M, K, N, o: CastOptions) -> list[Kernel]:
    """The original model: input and grad_output cast once (row + col major), weight once;
    the weight is saved from forward to backward (no second cast)."""
    tc = o.torch_compile_limitations
    ks = tensor_cast_kernels(
        "input", M, K, scaling, fuse_with_prev=o.fuse_input_with_prev, torch_compile_limitations=tc
    )
    if not o.cache_weight_cast:
        ks += tensor_cast_kernels("weight", K, N, scaling, torch_compile_limitations=tc)
    ks += tensor_cast_kernels(
        "grad_output", M, N, scaling, fuse_with_prev=o.fuse_grad_output_with_prev, torch_compile_limitations=tc
    )
    return ks


#: name -> :class:`Recipe`
RECIPES: Mapping[str, Recipe] = MappingProxyType({r.name: r for r in _ALL})


def recipe_names() -> list[str]:
    """Registry names, baseline first."""
    return list(RECIPES)


def get_recipe(recipe: str | Recipe | None) -> Recipe:
    """Resolve a recipe by name (``None`` -> the bf16 baseline), a :class:`Recipe`, or a torchao
    ``Float8LinearRecipeName`` enum member (matched by its value, torch not imported).

    Raises:
        UnknownRecipeError: naming the value and the valid recipes (a ``ValueError``).
    """
    if recipe is None:
        return RECIPES["bf16"]
    if isinstance(recipe, Recipe):
        return recipe
    key = getattr(recipe, "value", recipe)  # enum member -> its string value
    if isinstance(key, str) and key.strip().lower() in RECIPES:
        return RECIPES[key.strip().lower()]
    raise UnknownRecipeError(choices_message("recipe", recipe, RECIPES))
