"""The kernels of one decoder-layer training step (fwd + bwd) and their prices (public face: :mod:`perfmodel.step`).

Counting rules: ``T = batch · seq_len`` tokens, ``d`` hidden, ``f`` ffn, ``q = heads · head_dim``,
``kv = kv_heads · head_dim``; activations are bf16 (2 bytes); bytes are each kernel's device-memory
reads plus writes, every input read once; 1 FMA = 2 FLOP. What each kernel is, and why it is counted
so, comes from the kernel lists of the H200 layer sweep (``docs/step.md``, "What the GPU ran").

Kinds and their price (``p``: :class:`~perfmodel.step.params.LayerParams`; ``bw``: the GPU's HBM
bandwidth; ``peak``: its dense bf16 FLOP/s)::

    gemm          the GPU time model's GEMM (perfmodel.float8.linear_time) x p.gemm_factor(group)
    attention     p.elementwise_latency_s + FLOP / (p.attention_{fwd,bwd}_fraction x peak)
                  + rows x p.attention_{fwd,bwd}_row_s x peak_ref / peak     (rows = batch · heads · seq_len)
    memory        p.elementwise_latency_s + bytes / (p.elementwise_bw_fraction x bw)
    cast          the GPU time model's cast kernel (recipe, tensor kind) x p.cast_factor(recipe/group): the kernels
                  inductor fuses a group's casts into differ per group (norm, SwiGLU, attention output)
    launch        the GPU time model's launch-only kernel (a scale's second reduction stage)
    fused_amax    bytes / bw x p.fused_amax_cost      (an amax inductor fused into the producing kernel)
    norm_bwd_cast bytes / bw x p.norm_bwd_cast_cost   (tensorwise q/k/v: the transposed cast in the norm bwd)
    mix_order_cast bytes / bw x p.mix_order_cast_cost (the same cast in inductor's persistent mix-order kernel,
                  :func:`mix_order_cast`; ``norm_bwd_cast_cost`` where the parameters have no such cost)

The ``gemm`` and ``cast`` factors correct the calibrated model's Linear-step prices to layer steps; with
another time model (``"roofline"``, ``"original"``, your own) they are 1.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .._backend import namespace
from ..float8 import linear_time
from ..float8.recipes import CastOptions, Recipe
from ..presets import LayerShape
from ..specs.gpu import GPUSpec
from .params import LayerParams

__all__ = [
    "FUSED_GRAD_OUTPUT",
    "FUSED_INPUT",
    "MIX_ORDER_MAX_COLS",
    "MIX_ORDER_MIN_NUMEL",
    "MIX_ORDER_MIN_ROWS",
    "RawKernel",
    "StepKernel",
    "mix_order_cast",
    "price",
    "raw_kernels",
    "step_kind",
]

_BF16 = 2  # bytes per activation element

#: group -> its input is produced by an inductor kernel the input's amax fuses into (observed kernel names:
#: ``triton_red_fused__to_copy_abs_add_max_mean_mul_pow_rsqrt`` = RMSNorm + amax; ``triton_red_fused_abs_max_mul_silu``
#: = SwiGLU + amax); ``o``'s input is cuDNN's attention output, so its amax runs alone.
FUSED_INPUT: dict[str, bool] = {"qkv": True, "o": False, "w13": True, "w1": True, "w2": True}
#: Linear -> its grad_output comes out of an inductor kernel its amax fuses into: q, k from the RoPE backward
#: (``..._abs_add_max_mul_neg_select_stack_transpose``), wo from the ffn-norm backward, w1 and w3 from the
#: activation backward; v's from cuDNN (dV) and w2's from outside the layer (the next layer's backward) run alone.
FUSED_GRAD_OUTPUT: dict[str, bool] = {
    "wq": True,
    "wk": True,
    "wv": False,
    "wo": True,
    "w1": True,
    "w3": True,
    "w2": False,
}


#: Inductor's shape test for a *mix-order reduction* — one kernel for a reduction over rows and one over
#: columns of the same [rows, cols] tensor (the RMSNorm backward over the hidden size and the norm-weight
#: gradient over the tokens): rows·cols >= 5·2**20, rows >= 2·cols, rows >= 4096, cols <= 16384 (torch 2.11,
#: ``torch/_inductor/scheduler.py``, ``MixOrderReduction.can_fuse``; the kernel is always generated persistent,
#: ``codegen/simd.py``, ``_generate_kernel_code_for_mix_order_reduction``).
MIX_ORDER_MIN_NUMEL = 5 * 2**20
MIX_ORDER_MIN_ROWS = 4096
MIX_ORDER_MAX_COLS = 16384


def mix_order_cast(hidden: Any, batch: Any, seq_len: Any) -> Any:
    """Whether inductor fuses tensorwise q/k/v's transposed float8 cast of the attention-norm output into its
    persistent mix-order reduction kernel of the norm backward (``triton_per_fused__scaled_mm_..._div_expand_
    ..._t_transpose_view_*``), which stores the cast 3 times, one byte at a time across rows, and runs ~10x
    longer than the bf16 kernel.

    True when the mix-order shape test holds for ``rows = batch · seq_len`` tokens and ``cols = hidden``
    (:data:`MIX_ORDER_MIN_NUMEL`, :data:`MIX_ORDER_MIN_ROWS`, :data:`MIX_ORDER_MAX_COLS`, rows >= 2·cols)
    **and batch == 1** — an empirical condition: with batch 2, 3 and 4 at the same token counts inductor put
    the cast into a separate looped kernel instead (H200, torch 2.11, torchao 0.17; ``docs/step.md``). The
    caller adds "tensorwise, and wq, wk, wv all converted" (q alone does not fuse the cast). A bool, a bool
    array, or a sympy condition."""
    T = batch * seq_len
    xp = namespace(hidden, batch, seq_len)
    if xp.name == "sympy":
        import sympy

        return sympy.And(
            sympy.Ge(T * hidden, MIX_ORDER_MIN_NUMEL),
            sympy.Ge(T, 2 * hidden),
            sympy.Ge(T, MIX_ORDER_MIN_ROWS),
            sympy.Le(hidden, MIX_ORDER_MAX_COLS),
            sympy.Eq(batch, 1),
        )
    fires = (
        (T * hidden >= MIX_ORDER_MIN_NUMEL)
        & (T >= 2 * hidden)
        & (T >= MIX_ORDER_MIN_ROWS)
        & (hidden <= MIX_ORDER_MAX_COLS)
        & (batch == 1)
    )
    return fires if xp.name == "numpy" and getattr(fires, "ndim", 0) else bool(fires)


@dataclasses.dataclass(frozen=True, kw_only=True)
class RawKernel:
    """A kernel before the layer parameters price it: ``base_s`` is the time model's own price (gemm, cast,
    launch kinds), ``bytes`` / ``flops`` the work (memory, attention, fused kinds)."""

    name: str
    part: str  # gemm | cast | attention | other
    phase: str  # fwd | bwd
    kind: str  # gemm | attention_fwd | attention_bwd | memory | cast | launch | fused_amax | norm_bwd_cast
    #: | mix_order_cast
    group: str | None = None
    key: str = ""  # gemm group for gemm kernels, recipe for casts
    base_s: Any = 0
    bytes: Any = 0
    flops: Any = 0
    rows: Any = 0  # attention kinds: query rows x heads


@dataclasses.dataclass(frozen=True, kw_only=True)
class StepKernel:
    """One kernel of the step with its predicted GPU time (seconds, as a profiler sums it).

    ``part``: gemm | cast | attention | other; ``phase``: fwd | bwd | recompute (re-run forward kernels of
    activation checkpointing); ``group``: the Linear group it belongs to (None: the layer's own)."""

    name: str
    part: str
    phase: str
    kind: str
    time_s: Any
    group: str | None = None
    bytes: Any = 0
    flops: Any = 0
    step_s: Any = None  # its seconds in a CUDA-event-timed step: time_s x LayerTime.step_factors[its kind]


def step_kind(raw: RawKernel) -> str:
    """The step-factor kind of a kernel (:data:`perfmodel.step.params.STEP_FACTOR_KINDS`): tensor-core work
    in 16-bit (bf16/fp16 GEMMs, SDPA) or in float8, or memory-bound (everything else)."""
    if raw.kind == "gemm":
        return "fp8_tensor_core" if raw.key.startswith("fp8") else "bf16_tensor_core"
    if raw.kind in ("attention_fwd", "attention_bwd"):
        return "bf16_tensor_core"
    return "memory"


def _memory(name: str, phase: str, nbytes: Any, part: str = "other") -> RawKernel:
    return RawKernel(name=name, part=part, phase=phase, kind="memory", bytes=nbytes)


def _elementwise(layer: LayerShape, T: Any) -> list[RawKernel]:
    """The layer's own memory-bound kernels (bf16 step), as inductor generated them on the H200::

    fwd  attention_norm      x -> n1                                   R 2Td        W 2Td
         rope_q, rope_k      q, k -> rotated (fp32 math)               R 2Tq|2Tkv   W same
         ffn_norm            x, attn_out -> h = x + attn_out, n2       R 4Td        W 4Td
         activation          swiglu: g1, g3 -> silu(g1)*g3             R 4Tf        W 2Tf   (gelu: R 2Tf W 2Tf)
         residual            h, mlp_out -> out                         R 4Td        W 2Td
    bwd  activation_bwd      da, g1, g3 -> dg1, dg3                    R 6Tf        W 4Tf   (gelu: R 4Tf W 2Tf)
         ffn_norm_bwd        dn2, h, dout -> dh                        R 6Td        W 2Td
         rope_q_bwd, _k_bwd  as forward
         attention_norm_bwd  dx_q, dx_k, dx_v, x, dh -> dx             R 10Td       W 2Td
         norm weight grads   2 small reductions (latency only)
    """
    d, f, q, kv = layer.hidden, layer.ffn, layer.q_dim, layer.kv_dim
    gated = layer.activation == "swiglu"
    ks = [_memory("attention_norm", "fwd", 2 * _BF16 * T * d)]
    if layer.rope:
        ks += [_memory("rope_q", "fwd", 2 * _BF16 * T * q), _memory("rope_k", "fwd", 2 * _BF16 * T * kv)]
    ks += [
        _memory("ffn_norm", "fwd", 4 * _BF16 * T * d),
        _memory("activation", "fwd", (3 if gated else 2) * _BF16 * T * f),
        _memory("residual", "fwd", 3 * _BF16 * T * d),
        _memory("activation_bwd", "bwd", (5 if gated else 3) * _BF16 * T * f),
        _memory("ffn_norm_bwd", "bwd", 4 * _BF16 * T * d),
    ]
    if layer.rope:
        ks += [_memory("rope_q_bwd", "bwd", 2 * _BF16 * T * q), _memory("rope_k_bwd", "bwd", 2 * _BF16 * T * kv)]
    ks += [
        _memory("attention_norm_bwd", "bwd", 6 * _BF16 * T * d),
        _memory("norm_weight_grad", "bwd", 0),
        _memory("norm_weight_grad", "bwd", 0),
    ]
    return ks


def _attention(layer: LayerShape, batch: Any, seq_len: Any) -> list[RawKernel]:
    """Causal SDPA fwd + bwd (cuDNN flash kernels on sm90) and the helper kernels cuDNN launches::

    sdpa_fwd       2·b·s²·H·hd FLOP  (QKᵀ and PV, 4·b·s²·H·hd, halved by the causal mask), b·s·H query rows
    sdpa_bwd       2.5 x forward    (five matmuls against two), the same rows
    dot_do_o       O, dO -> rowsum(dO·O) fp32         R 2Tq·2  W 4TH
    convert_dq     dQ fp32 -> bf16                    R 4Tq    W 2Tq
    reduce_head    GQA only, dK and dV: per-query-head partials -> kv heads   R 2Tq  W 2Tkv  (x2)
    """
    T = batch * seq_len
    fwd_flops = 2 * batch * seq_len * seq_len * layer.heads * layer.head_dim
    rows = batch * seq_len * layer.heads
    q, kv = layer.q_dim, layer.kv_dim
    ks = [
        RawKernel(name="sdpa_fwd", part="attention", phase="fwd", kind="attention_fwd", flops=fwd_flops, rows=rows),
        RawKernel(
            name="sdpa_bwd", part="attention", phase="bwd", kind="attention_bwd", flops=2.5 * fwd_flops, rows=rows
        ),
        _memory("sdpa_bwd.dot_do_o", "bwd", 2 * _BF16 * T * q + 4 * T * layer.heads, part="attention"),
        _memory("sdpa_bwd.convert_dq", "bwd", 4 * T * q + _BF16 * T * q, part="attention"),
    ]
    if layer.heads != layer.kv_heads:
        ks += [
            _memory(f"sdpa_bwd.reduce_head_{t}", "bwd", _BF16 * T * q + _BF16 * T * kv, part="attention")
            for t in ("dk", "dv")
        ]
    return ks


def _gemm_group(dtype: str, scaling: str | None) -> str:
    return dtype if scaling is None else f"{dtype}/{scaling}"


def _cast_phase(tensor: str, name: str) -> str:
    """Forward: the casts the forward GEMM needs (input and weight along K); the rest run in backward."""
    if tensor == "grad_output" or name.endswith("along_M") or name.endswith("along_N"):
        return "bwd"
    return "fwd"


def raw_kernels(
    layer: LayerShape,
    *,
    batch: Any,
    seq_len: Any,
    recipe: Recipe,
    converted: frozenset[str],
    spec: GPUSpec,
    time_model: Any,
    mix_order: bool | None = None,
) -> list[RawKernel]:
    """Every kernel of one fwd + bwd step of ``layer``, unpriced (see the module doc).

    ``converted``: canonical Linear names run in ``recipe`` (the others in bf16); ``mix_order``: whether
    inductor has the mix-order reduction (:func:`mix_order_cast`; ``None``: as the fitted stack, torch 2.11).
    """
    T = batch * seq_len
    ks: list[RawKernel] = []
    by_name = {lin.name: lin for lin in layer.linears()}
    group_of = {n: g for g, names in layer.groups.items() for n in names}
    for name, lin in by_name.items():
        lt = linear_time(
            T, lin.in_features, lin.out_features, recipe if name in converted else None, spec, time_model=time_model
        )
        for g in lt.gemms:
            ks.append(
                RawKernel(
                    name=f"{name}.{g.name}",
                    part="gemm",
                    phase="fwd" if g.name == "output" else "bwd",
                    kind="gemm",
                    group=group_of[name],
                    key=_gemm_group(g.dtype, g.scaling),
                    base_s=g.time_s,
                    flops=2 * g.M * g.K * g.N,
                )
            )
    ks += _attention(layer, batch, seq_len)
    ks += _elementwise(layer, T)
    ks += _casts(layer, batch, seq_len, recipe, converted, spec, time_model, mix_order is not False)
    return ks


def _casts(
    layer: LayerShape,
    batch: Any,
    seq_len: Any,
    recipe: Recipe,
    converted: frozenset[str],
    spec: GPUSpec,
    time_model: Any,
    mix_order: bool = True,
) -> list[RawKernel]:
    """float8 cast kernels per group, as torchao + inductor ran them on the H200 (``docs/step.md``):

    * a group's Linears share one input: its casts run once (inductor eliminates the identical amax and cast
      of the same tensor — one input cast kernel per group in every kernel list, not one per Linear);
    * the input's amax fuses into the producing norm / activation kernel (:data:`FUSED_INPUT`), a
      grad_output's into the producing backward kernel (:data:`FUSED_GRAD_OUTPUT`): the standalone amax
      disappears, the producer slows down by ``fused_amax_cost`` HBM passes over those bytes;
    * weights and grad_outputs are cast per Linear;
    * tensorwise with q/k/v converted: the transposed cast of the attention-norm output for the grad_weight
      GEMMs is fused into the attention-norm backward, which slows it down (``norm_bwd_cast``); with all three
      converted, where :func:`mix_order_cast` holds, into inductor's persistent mix-order kernel instead
      (``mix_order_cast``, much slower).
    """
    T = batch * seq_len
    out: list[RawKernel] = []
    if not converted or recipe.name == "bf16":
        return out
    for group, names in layer.groups.items():
        conv = [n for n in names if n in converted]
        for i, name in enumerate(conv):
            # i > 0: the group's input was cast for its first converted Linear
            out += _linear_casts(layer, group, name, T, recipe, spec, time_model, shared=i > 0)
        if conv and group == "qkv" and recipe.scaling == "tensorwise":
            out += _qkv_transposed_cast(layer, batch, seq_len, all_three=mix_order and set(names) <= set(conv))
    return out


def _linear_casts(
    layer: LayerShape,
    group: str,
    name: str,
    T: Any,
    recipe: Recipe,
    spec: GPUSpec,
    time_model: Any,
    *,
    shared: bool,
) -> list[RawKernel]:
    """One converted Linear's cast kernels (``shared``: without the input's, cast already for the group) and, where
    an amax fuses into its producer (:data:`FUSED_INPUT`, :data:`FUSED_GRAD_OUTPUT`), the bytes that producer
    reads more (``fused_amax``)."""
    out: list[RawKernel] = []
    lin = next(lin for lin in layer.linears() if lin.name == name)
    K, N = lin.in_features, lin.out_features
    fuse_in = FUSED_INPUT.get(group, False)
    fuse_go = FUSED_GRAD_OUTPUT.get(name, False) and (layer.rope or name not in ("wq", "wk"))
    fused = recipe.cast_kernels(T, K, N, CastOptions(fuse_input_with_prev=fuse_in, fuse_grad_output_with_prev=fuse_go))
    alone = recipe.cast_kernels(T, K, N, CastOptions())
    for k in fused:
        if shared and k.tensor == "input":
            continue
        common = {"name": f"{name}.{k.name}", "part": "cast", "phase": _cast_phase(k.tensor, k.name), "group": group}
        if k.launch_only:
            out.append(RawKernel(**common, kind="launch", base_s=time_model.launch_time_s(gpu=spec)))
            continue
        base_s = time_model.memory_kernel_time_s(k.bytes, gpu=spec, recipe=recipe.name, tensor=k.tensor)
        out.append(RawKernel(**common, kind="cast", key=cast_key(recipe.name, group), base_s=base_s, bytes=k.bytes))
    for tensor, on in (("input", fuse_in and not shared), ("grad_output", fuse_go)):
        if not on:
            continue
        saved = sum((k.bytes for k in alone if k.tensor == tensor and not k.launch_only), 0) - sum(
            (k.bytes for k in fused if k.tensor == tensor and not k.launch_only), 0
        )
        out.append(
            RawKernel(
                name=f"{name}.{tensor}.amax_fused_into_producer",
                part="cast",
                phase="fwd" if tensor == "input" else "bwd",
                kind="fused_amax",
                group=group,
                bytes=saved,
            )
        )
    return out


def _qkv_transposed_cast(layer: LayerShape, batch: Any, seq_len: Any, *, all_three: bool) -> list[RawKernel]:
    """Tensorwise q/k/v's transposed cast of the attention-norm output, fused into the attention-norm backward
    (``norm_bwd_cast``) or, where ``all_three`` (wq, wk, wv converted, the mix-order reduction on) and
    :func:`mix_order_cast` holds, into inductor's persistent mix-order kernel (``mix_order_cast``)."""
    T = batch * seq_len
    nbytes = 3 * T * layer.hidden
    fires: Any = False
    if all_three:
        fires = mix_order_cast(layer.hidden, batch, seq_len)
    xp = namespace(nbytes, fires)
    out = [
        RawKernel(
            name="qkv.input.transposed_cast_in_attention_norm_bwd",
            part="cast",
            phase="bwd",
            kind="norm_bwd_cast",
            group="qkv",
            bytes=xp.where(fires, 0 * nbytes, nbytes),
        )
    ]
    if fires is not False:
        out.append(
            RawKernel(
                name="qkv.input.transposed_cast_in_mix_order_norm_bwd",
                part="cast",
                phase="bwd",
                kind="mix_order_cast",
                group="qkv",
                bytes=xp.where(fires, nbytes, 0 * nbytes),
            )
        )
    return out


def cast_key(recipe: str, group: str | None) -> str:
    """The cast-factor key of a group's cast kernels, ``"tensorwise/qkv"`` (:meth:`LayerParams.cast_factor` falls
    back to the recipe's factor where no group's was fitted)."""
    return f"{recipe}/{group}" if group else recipe


def price(
    raw: RawKernel, params: LayerParams, spec: GPUSpec, *, calibrated: bool, calibrated_casts: bool | None = None
) -> Any:
    """Seconds of one kernel (formulas in the module doc); ``calibrated``: apply the in-layer GEMM and cast
    factors (they correct the calibrated model, so other time models get 1); ``calibrated_casts`` (default:
    ``calibrated``): the cast factors alone — a time model whose casts are the calibrated model's but whose
    GEMMs are not (the tile model) gets the cast factors and no GEMM factor."""
    casts = calibrated if calibrated_casts is None else calibrated_casts
    bw = spec.mem_bw_bytes_per_s
    if raw.kind == "gemm":
        return raw.base_s * params.gemm_factor(raw.key) if calibrated else raw.base_s
    if raw.kind == "cast":
        return raw.base_s * params.cast_factor(raw.key) if casts else raw.base_s
    if raw.kind == "launch":
        return raw.base_s
    if raw.kind in ("attention_fwd", "attention_bwd"):
        fwd = raw.kind == "attention_fwd"
        fraction = params.attention_fwd_fraction if fwd else params.attention_bwd_fraction
        row_s = params.attention_fwd_row_s if fwd else params.attention_bwd_row_s
        peak = spec.peak_flops_per_s("bf16" if spec.supports("bf16") else "fp16")
        t = params.elementwise_latency_s + raw.flops / (fraction * peak)
        if row_s:
            t = t + raw.rows * row_s * params.reference.peaks_flops_per_s["bf16"] / peak
        return t
    if raw.kind == "memory":
        return params.elementwise_latency_s + raw.bytes / (params.elementwise_bw_fraction * bw)
    if raw.kind == "fused_amax":
        return raw.bytes / bw * params.fused_amax_cost
    if raw.kind == "norm_bwd_cast":
        return raw.bytes / bw * params.norm_bwd_cast_cost
    if raw.kind == "mix_order_cast":
        cost = params.mix_order_cast_cost
        return raw.bytes / bw * (params.norm_bwd_cast_cost if cost is None else cost)
    raise AssertionError(f"unknown kernel kind {raw.kind!r}")
