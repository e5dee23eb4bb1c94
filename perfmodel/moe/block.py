"""The routed-expert block of one MoE layer, fwd + bwd, kernel by kernel (``pm.moe.expert_block_time``).

The block is torchtitan's ``MoE`` / ``GroupedExperts`` layout as our H200 bench runs it
(:mod:`perfmodel.bench.moe_block`, eager, no ``torch.compile``):

* **router**: ``gate = Linear(dim, E)`` (bf16 GEMM ``T x dim x E``), logits cast to float32, softmax or sigmoid,
  ``topk``; the scores gathered at the chosen experts;
* **permute**: the ``T * top_k`` routed rows sorted by expert (stable argsort of int64 indices), each expert's group
  padded to ``max(round_up(n, align), align)`` rows (``align`` 8 in bf16 = 16 bytes, 16 for fp8 rowwise:
  torchtitan's ``TOKEN_GROUP_ALIGN_SIZE_M``, ``Float8GroupedExpertsConverter.PAD_MULTIPLE``), a static total
  ``R = round_up(T*k + E*align, align)`` whose remainder the last group absorbs (torchtitan's
  ``generate_permute_indices``), one ``index_select`` of ``[x; 0]`` by token;
* **experts**: ``h = silu(x @ w1^T) * (x @ w3^T)``, ``y = h @ w2^T`` as ``torch._grouped_mm`` calls
  (:func:`perfmodel.moe.grouped.grouped_gemm`; w1 and w3 are two calls, or one ``N = 2 inter`` call with
  ``fused_gate_up``); bwd: for each weight a dgrad (``op="dgrad"``) and a wgrad (``op="wgrad"``) grouped GEMM;
* **unpermute**: ``zeros(T+1, dim).index_add(0, token, y * score)[:T]`` (weighted scatter-add);
* **shared experts**: a dense SwiGLU MLP of width ``shared_experts * shared_inter`` on all ``T`` tokens, priced as
  three ``nn.Linear`` by :func:`perfmodel.float8.linear_time` with ``shared_recipe`` (default bf16: torchao's MoE
  conversion with ``filter_fn`` on ``"experts"`` leaves them to the dense float8 path, i.e. bf16 unless converted).

``recipe="rowwise"`` adds what torchao 0.17's ``prototype/moe_training`` launches per grouped GEMM
(``torchao/prototype/moe_training/fp8_grouped_mm.py``, ``_Float8GroupedMM``, tag v0.17.0, read 2026-12-03):

* fwd: ``triton_fp8_rowwise_2d_scale_and_cast(A)`` (one Triton kernel, two passes over each row, the 2nd from L2
  as its docstring says: read 2 B + write 1 B per element + 4 B per row); the weight ``B_t [E, K, N]`` in eager torch
  (``tensor_to_scale``: ``abs``, ``amax`` over K; ``B_t.to(float32) * scales``; ``to_fp8_saturated``: ``clamp``,
  ``.to(e4m3)``: 6 streaming kernels, 33 B per element, plus the tiny scale ops), ``reciprocal`` of both scales,
  ``torch._scaled_grouped_mm``;
* bwd: ``triton_fp8_rowwise_2d_scale_and_cast(grad_out)``; ``triton_fp8_rowwise_3d_transpose_rhs(B_t)`` (a scale
  kernel reading the weight and a cast kernel reading it again and writing it transposed in fp8: 5 B per element,
  plus the ``torch.full`` of the scale buffer); the dgrad ``_scaled_grouped_mm``;
  ``triton_fp8_per_group_colwise_scales_dual(grad_out, A)`` (one kernel: per-group column scales of both operands,
  read 2 B + write 1 B per element); the wgrad ``_scaled_grouped_mm``.
  ``pad_token_groups_for_grouped_mm`` is asserted off in 0.17: the 16-row padding is the permutation's (above), so
  it costs rows (in every GEMM and kernel), not a pad kernel.

``recipe="mxfp8"`` (Blackwell; ``mxfp8_grouped_mm.py``): 1x32-block quantization of the activations along K and
of the weights (one pass each), scale re-layout kernels, 32-row group padding; the GEMMs are priced as fp8 grouped
GEMMs by the non-Hopper roofline estimate of :mod:`perfmodel.moe.grouped`. **Estimated**, and labelled so.

Memory kernels are priced by the GPU's time model (``memory_kernel_time_s``: fixed latency + bytes at its copy
bandwidth; :func:`perfmodel.models.registry.resolve`), tiny ones by ``launch_time_s``. Byte counts of the eager
bookkeeping (argsort passes, the permutation plan) are estimates written next to each kernel.
"""

from __future__ import annotations

import dataclasses
import numbers
import random
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import (
    IneligibleShapeError,
    InvalidShapeError,
    NoClosedFormError,
    UnknownOptionError,
    UnsupportedFormatError,
)
from ..models.base import EVENT_OVERHEAD_S
from ..models.registry import resolve
from ..presets import ModelPreset, MoEShape, get_preset
from ..specs.gpu import get_gpu
from .grouped import check_timing, grouped_gemm

__all__ = [
    "ALIGN",
    "KINDS",
    "PHASES",
    "RECIPES",
    "BlockKernel",
    "ExpertBlockTime",
    "as_moe_shape",
    "block_group_sizes",
    "expert_block_time",
    "expert_block_time_s",
    "skewed_counts",
]

#: ``recipe=`` values of the block
RECIPES: tuple[str, ...] = ("bf16", "rowwise", "mxfp8")
#: token-group alignment (rows) per recipe: bf16 8 (16 bytes), fp8 rowwise 16 (torchtitan PAD_MULTIPLE), mxfp8 32
#: (torchao's mxfp8 grouped GEMM pads to its 32-element block)
ALIGN: Mapping[str, int] = {"bf16": 8, "rowwise": 16, "mxfp8": 32}
PHASES: tuple[str, ...] = ("fwd", "bwd")
KINDS: tuple[str, ...] = ("router", "permute", "gemm", "quant", "act", "unpermute", "shared")
#: bytes per element of torchao 0.17's eager weight quantization in the rowwise fwd: abs (2+2), amax (2),
#: to(float32) (2+4), * scales (4+4), clamp (4+4), to(e4m3) (4+1)
_W_FWD_BYTES = {"abs": 4, "amax": 2, "to_fp32": 6, "mul_scale": 8, "clamp": 8, "to_fp8": 5}
#: the same chain under ``torch.compile`` (inductor fuses the pointwise ops into an amax reduction reading the weight
#: and a cast kernel reading it again and writing fp8): 2 + (2 + 1) bytes per element; an estimate (not measured)
_W_FWD_BYTES_COMPILED = {"amax": 2, "cast": 3}
#: radix-sort passes over the (key, index) pairs of the stable argsort (int64 keys of < 2^16 experts): estimate
_SORT_PASSES = 4
#: small int64 kernels of the permutation plan over the R padded rows (bincount, clamp, cumsum, searchsorted,
#: gathers, where; :func:`perfmodel.bench.moe_block.permute_plan`), each ~24 B per row: estimate
_PLAN_KERNELS = 14


@dataclasses.dataclass(frozen=True)
class BlockKernel:
    """One kernel of the block: ``name``, ``phase`` ("fwd"/"bwd"), ``seconds``, ``bytes`` (device memory moved),
    ``flops`` (GEMMs; 0 for memory kernels), ``kind`` (one of :data:`KINDS`), ``note`` (how it was priced)."""

    name: str
    phase: str
    seconds: float
    bytes: float
    flops: float
    kind: str
    note: str = ""


@dataclasses.dataclass(frozen=True)
class ExpertBlockTime:
    """Predicted fwd and fwd+bwd time of one MoE layer's routed-expert block.

    Attributes:
        fwd_s, bwd_s, total_s: seconds (``total_s = fwd_s + bwd_s``; ``timing="event"`` adds one CUDA-event
            overhead to ``fwd_s`` and to ``total_s``, as one ``do_bench`` call of each sees it).
        kernels: every kernel priced (:class:`BlockKernel`), in launch order.
        recipe, shared_recipe, gpu, tokens, counts (routed rows per expert, before padding), group_sizes (rows
        per group the GEMMs run), config (the :class:`~perfmodel.presets.MoEShape`), timing.
        provenance: where the numbers come from. error_bar: what is known of the error (block-level
            validation, where measured; else the grouped GEMMs' held-out bars and a note).
    """

    fwd_s: float
    bwd_s: float
    total_s: float
    kernels: tuple[BlockKernel, ...]
    recipe: str
    shared_recipe: str
    gpu: str
    tokens: int
    counts: np.ndarray
    group_sizes: np.ndarray
    config: MoEShape
    timing: str
    provenance: str
    error_bar: dict[str, Any]

    def by_kind(self) -> dict[str, float]:
        """Seconds per kind (:data:`KINDS`), fwd + bwd."""
        out = dict.fromkeys(KINDS, 0.0)
        for k in self.kernels:
            out[k.kind] += k.seconds
        return out

    def table(self) -> str:
        """A readable per-kernel breakdown, then the sums by kind."""
        c = self.config
        rows = [
            f"{c.name} expert block, {self.recipe} (shared experts {self.shared_recipe}) on {self.gpu}, "
            f"T={self.tokens}, E={c.experts}, top-{c.top_k}, rows {int(self.group_sizes.sum())}"
        ]
        for k in self.kernels:
            rows.append(
                f"  {k.phase:<3} {k.kind:<9} {k.name:<34} {k.bytes / 1e6:9.1f} MB {k.flops / 1e9:9.1f} GFLOP "
                f"{k.seconds * 1e6:9.1f} us"
            )
        kinds = ", ".join(f"{n} {s * 1e3:.3f}" for n, s in self.by_kind().items() if s)
        rows.append(f"  by kind (ms): {kinds}")
        rows.append(f"  fwd {self.fwd_s * 1e3:.3f} ms + bwd {self.bwd_s * 1e3:.3f} ms = {self.total_s * 1e3:.3f} ms")
        rows.append(f"  {self.provenance}")
        return "\n".join(rows)


# -------------------------------------------------------------------------------------------------
# inputs
# -------------------------------------------------------------------------------------------------
def as_moe_shape(config: Any) -> MoEShape:
    """An :class:`~perfmodel.presets.MoEShape` from a preset name or :class:`ModelPreset` with an MoE block, a
    ``MoEShape``, or a mapping / object with ``dim``, ``moe_inter`` (or ``inter``), ``experts``, ``top_k`` and
    optionally ``shared_inter`` (total shared width), ``router`` (or ``score_func``), ``name``.

    Raises:
        UnknownPresetError: a name that is not a preset. InvalidShapeError: a dense preset, or bad fields.
    """
    if isinstance(config, MoEShape):
        return config
    if isinstance(config, (str, ModelPreset)):
        preset = get_preset(config)
        if preset.moe is None:
            from ..presets import moe_presets

            raise InvalidShapeError(
                f"{preset.name} is a dense model (no MoE block); perfmodel.moe prices MoE presets: "
                f"{', '.join(moe_presets())}, or a MoEShape"
            )
        return preset.moe
    get = config.get if isinstance(config, Mapping) else (lambda k, d=None: getattr(config, k, d))
    inter = get("moe_inter", get("inter"))
    shared = get("shared_inter", 0) or 0
    fields = {
        "name": str(get("name", "custom")),
        "dim": get("dim"),
        "moe_inter": inter,
        "experts": get("experts"),
        "top_k": get("top_k"),
        "shared_experts": 1 if shared else 0,
        "shared_inter": shared,
        "router": get("router", get("score_func", "softmax")),
        "source": str(get("source", "") or "user-supplied"),
        "router_experts": get("router_experts", None),
    }
    if any(fields[k] is None for k in ("dim", "moe_inter", "experts", "top_k")):
        raise InvalidShapeError(
            "an MoE config needs dim, moe_inter (or inter), experts and top_k; got "
            f"{ {k: fields[k] for k in ('dim', 'moe_inter', 'experts', 'top_k')} }"
        )
    return MoEShape(**fields)


def _tokens(tokens: Any) -> int:
    if type(tokens).__module__.startswith("sympy"):
        raise NoClosedFormError(
            "expert_block_time has no closed form in symbolic tokens (padding maxima, the kernel switch and the "
            "static last group); use pm.moe.grouped_gemm_time_s_balanced for one grouped GEMM, or numbers"
        )
    if isinstance(tokens, bool) or not isinstance(tokens, numbers.Real) or not float(tokens).is_integer() or tokens < 1:
        raise InvalidShapeError(f"tokens must be a whole number >= 1 (tokens per step on this GPU), got {tokens!r}")
    return int(tokens)


def skewed_counts(tokens: int, experts: int, top_k: int, skew: Any) -> np.ndarray:
    """Rows per expert (int64, sums to ``tokens * top_k``, each at most ``tokens``: a token picks distinct experts)
    for a named skew: ``("dirichlet", alpha, seed)`` — expert popularity drawn as our bench draws it
    (``random.Random(seed).gammavariate(alpha, 1)``, normalised; :func:`perfmodel.bench.moe_block.dirichlet_weights`)
    — or ``("zipf", s)`` — popularity ``1 / rank**s``. The expected counts are rounded by largest remainder.

    Raises:
        InvalidShapeError: an unknown skew name, a non-positive alpha or s.
    """
    if not isinstance(skew, (tuple, list)) or not skew or skew[0] not in ("dirichlet", "zipf"):
        raise InvalidShapeError(f"skew must be ('dirichlet', alpha, seed) or ('zipf', s), got {skew!r}")
    if skew[0] == "dirichlet":
        if len(skew) != 3 or not isinstance(skew[1], numbers.Real) or not skew[1] > 0:
            raise InvalidShapeError(f"('dirichlet', alpha, seed) needs alpha > 0 and an int seed, got {skew!r}")
        rng = random.Random(skew[2])
        w = np.array([rng.gammavariate(float(skew[1]), 1.0) for _ in range(experts)])
    else:
        if len(skew) != 2 or not isinstance(skew[1], numbers.Real) or not skew[1] > 0:
            raise InvalidShapeError(f"('zipf', s) needs s > 0, got {skew!r}")
        w = 1.0 / np.arange(1, experts + 1, dtype=float) ** float(skew[1])
    return _round_capped(w / w.sum(), tokens * top_k, tokens)


def _round_capped(w: np.ndarray, total: int, cap: int) -> np.ndarray:
    """Largest-remainder rounding of ``total * w`` with every entry <= ``cap`` (water-filling the excess)."""
    x = total * w
    for _ in range(w.size):
        over = x > cap
        if not over.any():
            break
        excess = float((x[over] - cap).sum())
        x[over] = cap
        free = ~over & (x < cap)
        x[free] += excess * x[free] / x[free].sum() if x[free].sum() > 0 else excess / max(int(free.sum()), 1)
    base = np.floor(x).astype(np.int64)
    short = total - int(base.sum())
    order = np.argsort(-(x - base), kind="stable")
    for i in order:
        if short <= 0:
            break
        if base[i] < cap:
            base[i] += 1
            short -= 1
    return base


def _counts(counts: Any, skew: Any, tokens: int, moe: MoEShape) -> np.ndarray:
    E, k = moe.experts, moe.top_k
    if counts is not None and skew is not None:
        raise InvalidShapeError("pass counts= (the per-expert vector) or skew= (a named skew), not both")
    if skew is not None:
        return skewed_counts(tokens, E, k, skew)
    if counts is None:
        q, r = divmod(tokens * k, E)
        out = np.full(E, q, dtype=np.int64)
        out[:r] += 1
        return out
    try:
        a = np.asarray(counts)
    except ValueError:
        a = None
    if a is None or a.dtype == object or a.ndim != 1:
        raise InvalidShapeError("counts must be a 1-D vector of whole numbers, one per routed expert")
    if a.size != E:
        raise InvalidShapeError(f"counts has {a.size} entries but the block has {E} routed experts (G must equal E)")
    if a.dtype == bool or not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)):
        raise InvalidShapeError(f"counts must be whole numbers, got dtype {a.dtype}")
    if np.issubdtype(a.dtype, np.floating) and (not np.all(np.isfinite(a)) or np.any(a != np.round(a))):
        raise InvalidShapeError("counts must be whole numbers of rows; a fractional or non-finite one was given")
    if np.any(a < 0):
        raise InvalidShapeError(f"counts must be >= 0 rows each, got {a.min()}")
    a = a.astype(np.int64)
    if int(a.sum()) != tokens * k:
        raise InvalidShapeError(
            f"counts sum to {int(a.sum())}, but tokens * top_k = {tokens} * {k} = {tokens * k} routed rows: "
            "each token is routed to exactly top_k experts"
        )
    if int(a.max()) > tokens:
        raise InvalidShapeError(
            f"an expert has {int(a.max())} rows but there are only {tokens} tokens (a token picks distinct experts)"
        )
    return a


def block_group_sizes(counts: Any, align: int, *, static_rows: bool = True) -> np.ndarray:
    """Rows per group the expert GEMMs run: ``max(round_up(n, align), align)`` per expert; with ``static_rows``
    the last group also takes the static remainder up to ``round_up(sum(counts) + E*align, align)``."""
    c = np.asarray(counts, dtype=np.int64)
    g = np.maximum(-(-c // align) * align, align)
    if static_rows:
        total = -(-(int(c.sum()) + c.size * align) // align) * align
        g[-1] += total - int(g.sum())
    return g


# -------------------------------------------------------------------------------------------------
# pricing
# -------------------------------------------------------------------------------------------------
class _Pricer:
    """Collects :class:`BlockKernel` s priced on one GPU with one time model."""

    def __init__(self, spec: Any, time_model: Any) -> None:
        self.spec, self.time_model = spec, time_model
        self.tm, self.prov = resolve(spec, time_model if time_model not in ("calibrated",) else None)
        self.kernels: list[BlockKernel] = []
        self.gemm_notes: set[str] = set()
        self.bars: list[dict[str, Any]] = []

    def mem(self, name: str, phase: str, kind: str, nbytes: float, note: str = "") -> None:
        t = float(self.tm.memory_kernel_time_s(float(nbytes), gpu=self.spec))
        self.kernels.append(BlockKernel(name, phase, t, float(nbytes), 0.0, kind, note))

    def tiny(self, name: str, phase: str, kind: str, n: int = 1) -> None:
        t = float(self.tm.launch_time_s(gpu=self.spec)) * n
        self.kernels.append(BlockKernel(name, phase, t, 0.0, 0.0, kind, f"{n} launch-only kernel(s)"))

    def grouped(self, name: str, phase: str, g: np.ndarray, K: int, N: int, dtype: str, op: str) -> None:
        r = grouped_gemm(
            g, K, N, dtype=dtype, scaling="rowwise" if dtype == "fp8" else None, op=op, timing="kernel",
            gpu=self.spec, time_model=self.time_model,
        )  # fmt: skip
        self.gemm_notes.add(r.provenance)
        if r.error_bar:
            self.bars.append(r.error_bar)
        self.kernels.append(BlockKernel(name, phase, float(r.time_s), float(r.bytes), float(r.flops), "gemm", r.kernel))

    def linear(self, name: str, M: int, K: int, N: int, recipe: str | None, kind: str) -> None:
        from ..float8.linear import linear_time

        lt = linear_time(M, K, N, recipe, self.spec, model=self._dense_model())
        for gc, phase in zip(lt.gemms, ("fwd", "bwd", "bwd"), strict=True):
            fl = 2.0 * gc.M * gc.K * gc.N
            self.kernels.append(BlockKernel(f"{name}.{gc.name}", phase, float(gc.time_s), 0.0, fl, kind, gc.dtype))
        for kc in lt.kernels:
            phase = "fwd" if kc.kernel.name.endswith("along_K") else "bwd"
            nb = 0.0 if kc.kernel.launch_only else float(kc.kernel.bytes)
            self.kernels.append(BlockKernel(f"{name}.{kc.kernel.name}", phase, float(kc.time_s), nb, 0.0, kind))

    def _dense_model(self) -> Any:
        return None if self.time_model in (None, "calibrated") else self.time_model


def _router(p: _Pricer, T: int, m: MoEShape) -> None:
    d, E, k = m.dim, m.router_width, m.top_k  # the router scores all of the model's experts
    p.linear("router.gate", T, d, E, None, "router")  # bf16 in every recipe (torchao converts experts only)
    p.mem("router.logits_to_fp32", "fwd", "router", T * E * (2 + 4))
    p.mem(f"router.{m.router}", "fwd", "router", T * E * (4 + 4))
    p.mem("router.topk", "fwd", "router", T * E * 4 + T * k * (4 + 8))
    p.mem("router.gather_scores", "fwd", "router", T * k * (8 + 4 + 4))
    # bwd: scatter of the top-k score grads into [T, E] (zeros + scatter), softmax/sigmoid bwd, cast bwd
    p.mem("router.scatter_grad", "bwd", "router", T * E * 4 + T * k * (4 + 8))
    p.mem(f"router.{m.router}_bwd", "bwd", "router", T * E * (4 + 4 + 4))
    p.mem("router.grad_to_bf16", "bwd", "router", T * E * (4 + 2))


def _permute(p: _Pricer, T: int, m: MoEShape, R: int) -> None:
    d, k = m.dim, m.top_k
    n = T * k
    p.mem("permute.argsort", "fwd", "permute", _SORT_PASSES * 2 * 16 * n, f"estimate: {_SORT_PASSES} radix passes")
    p.mem("permute.plan", "fwd", "permute", _PLAN_KERNELS * 24 * R, f"estimate: {_PLAN_KERNELS} int64 kernels")
    p.tiny("permute.plan_small", "fwd", "permute", _PLAN_KERNELS - 1)  # their launch latencies beyond one kernel
    p.mem("permute.cat_pad_row", "fwd", "permute", T * d * 2 + (T + 1) * d * 2)
    p.mem("permute.index_select", "fwd", "permute", R * d * 2 * 2 + R * 8)
    # bwd of the gather: zeros(T+1, d) + index_add of R rows (read-modify-write of the target row per add)
    p.mem("permute.bwd_zeros", "bwd", "permute", (T + 1) * d * 2)
    p.mem("permute.bwd_index_add", "bwd", "permute", R * d * 2 * 3 + R * 8)
    p.mem("permute.bwd_slice_copy", "bwd", "permute", T * d * 2 * 2)


def _unpermute(p: _Pricer, T: int, m: MoEShape, R: int) -> None:
    d = m.dim
    p.mem("unpermute.scores_select", "fwd", "unpermute", R * (8 + 4 + 4))
    p.mem("unpermute.mul_score", "fwd", "unpermute", R * d * 2 * 2 + R * 2)
    p.mem("unpermute.zeros", "fwd", "unpermute", (T + 1) * d * 2)
    p.mem("unpermute.index_add", "fwd", "unpermute", R * d * 2 * 3 + R * 8)
    p.mem("unpermute.bwd_index_select", "bwd", "unpermute", R * d * 2 * 2 + R * 8)
    p.mem("unpermute.bwd_mul_score", "bwd", "unpermute", R * d * 2 * 2 + R * 2)
    p.mem("unpermute.bwd_score_grad", "bwd", "unpermute", R * d * 2 * 2 + R * 4)


def _swiglu(p: _Pricer, rows: int, f: int, kind: str, prefix: str) -> None:
    # fwd: silu(g) (2+2 B), * u (2+2+2 B); bwd: g_s = gh * u, g_u = gh * s (6 B each), silu_backward (2+2+2 B)
    p.mem(f"{prefix}.silu", "fwd", kind, rows * f * 4)
    p.mem(f"{prefix}.mul", "fwd", kind, rows * f * 6)
    p.mem(f"{prefix}.bwd_mul_grads", "bwd", kind, rows * f * 12)
    p.mem(f"{prefix}.bwd_silu", "bwd", kind, rows * f * 6)


def _quant_rowwise(p: _Pricer, tag: str, R: int, g: np.ndarray, E: int, K: int, N: int, compiled: bool = False) -> None:
    """torchao 0.17 ``_Float8GroupedMM`` around ``x[R, K] @ w[E, K, N]``: the casts of fwd, dgrad and wgrad."""
    # fwd: A rowwise (Triton, 2 passes, 2nd from L2), weight in eager torch (6 streaming kernels), reciprocals
    p.mem(f"{tag}.A_rowwise_cast", "fwd", "quant", R * K * 3 + R * 4, "triton_fp8_rowwise_2d_scale_and_cast")
    w = E * K * N
    chain = _W_FWD_BYTES_COMPILED if compiled else _W_FWD_BYTES
    how = "torch.compile-fused (estimate)" if compiled else "eager tensor_to_scale / to_fp8_saturated"
    for op, b in chain.items():
        p.mem(f"{tag}.w_{op}", "fwd", "quant", w * b, how)
    p.tiny(f"{tag}.scale_ops", "fwd", "quant", 5)  # amax_to_scale (clamp, div, pow-2 rounding) + 2 reciprocals
    # bwd: grad_out rowwise, weight transposed (scale + cast kernels, scale buffer fill), dual colwise, reciprocals
    p.mem(f"{tag}.gO_rowwise_cast", "bwd", "quant", R * N * 3 + R * 4, "triton_fp8_rowwise_2d_scale_and_cast")
    p.mem(f"{tag}.w_t_scales", "bwd", "quant", w * 2 + E * K * 4, "triton_fp8_rowwise_3d_transpose_rhs (scales)")
    p.mem(f"{tag}.w_t_cast", "bwd", "quant", w * 3 + E * K * 4, "triton_fp8_rowwise_3d_transpose_rhs (cast)")
    p.tiny(f"{tag}.w_t_scale_fill", "bwd", "quant", 1)
    p.mem(
        f"{tag}.colwise_dual", "bwd", "quant", R * (N + K) * 3 + g.size * (N + K) * 4,
        "triton_fp8_per_group_colwise_scales_dual",
    )  # fmt: skip
    p.tiny(f"{tag}.reciprocals_bwd", "bwd", "quant", 4)


def _quant_mxfp8(p: _Pricer, tag: str, R: int, E: int, K: int, N: int) -> None:
    """torchao's mxfp8 grouped GEMM casts (1x32 blocks, one pass each, e8m0 scale per 32 elements), estimated."""
    s = 1 / 32
    p.mem(f"{tag}.A_dim0", "fwd", "quant", R * K * (2 + 1 + s), "estimate: mxfp8 dim0 quantize")
    p.mem(f"{tag}.w_dim0", "fwd", "quant", E * K * N * (2 + 1 + s), "estimate: mxfp8 3-D quantize")
    p.tiny(f"{tag}.scale_blocked_layout", "fwd", "quant", 2)
    p.mem(f"{tag}.gO_dim0", "bwd", "quant", R * N * (2 + 1 + s), "estimate")
    p.mem(f"{tag}.w_other_dim", "bwd", "quant", E * K * N * (2 + 1 + s), "estimate")
    p.mem(f"{tag}.gO_dim1", "bwd", "quant", R * N * (2 + 1 + s), "estimate")
    p.mem(f"{tag}.A_dim1", "bwd", "quant", R * K * (2 + 1 + s), "estimate")
    p.tiny(f"{tag}.scale_blocked_layout_bwd", "bwd", "quant", 4)


def _experts(p: _Pricer, m: MoEShape, g: np.ndarray, recipe: str, fused: bool, compiled: bool) -> None:
    d, f, E = m.dim, m.moe_inter, m.experts
    R = int(g.sum())
    dt = "bf16" if recipe == "bf16" else "fp8"
    gates = [("w13", d, 2 * f)] if fused else [("w1", d, f), ("w3", d, f)]
    for name, K, N in gates:
        if recipe == "rowwise":
            _quant_rowwise(p, f"experts.{name}", R, g, E, K, N, compiled)
        elif recipe == "mxfp8":
            _quant_mxfp8(p, f"experts.{name}", R, E, K, N)
        p.grouped(f"experts.{name}.fwd", "fwd", g, K, N, dt, "fwd")
    _swiglu(p, R, f, "act", "experts.swiglu")
    if recipe == "rowwise":
        _quant_rowwise(p, "experts.w2", R, g, E, f, d, compiled)
    elif recipe == "mxfp8":
        _quant_mxfp8(p, "experts.w2", R, E, f, d)
    p.grouped("experts.w2.fwd", "fwd", g, f, d, dt, "fwd")
    p.grouped("experts.w2.dgrad", "bwd", g, f, d, dt, "dgrad")
    p.grouped("experts.w2.wgrad", "bwd", g, f, d, dt, "wgrad")
    for name, K, N in gates:
        p.grouped(f"experts.{name}.dgrad", "bwd", g, K, N, dt, "dgrad")
        p.grouped(f"experts.{name}.wgrad", "bwd", g, K, N, dt, "wgrad")
    if not fused:  # autograd adds the two input grads of x (w1 and w3 paths)
        p.mem("experts.x_grad_add", "bwd", "act", R * d * 6)


def _shared(p: _Pricer, T: int, m: MoEShape, recipe: str) -> None:
    s, d = m.shared_width, m.dim
    r = None if recipe == "bf16" else recipe
    for name, K, N in (("w1", d, s), ("w3", d, s), ("w2", s, d)):
        p.linear(f"shared.{name}", T, K, N, r, "shared")
    _swiglu(p, T, s, "shared", "shared.swiglu")
    p.mem("shared.add_out", "fwd", "shared", T * d * 6)
    p.mem("shared.x_grad_adds", "bwd", "shared", 2 * T * d * 6)  # w1/w3 input grads, then into x's grad


def _check_recipe(recipe: str, shared_recipe: str | None, spec: Any, m: MoEShape, fused: bool) -> str:
    if recipe not in RECIPES:
        raise UnknownOptionError(f"recipe={recipe!r}: the expert block takes one of {', '.join(RECIPES)}")
    if recipe == "mxfp8" and not spec.supports("mxfp8"):
        raise UnsupportedFormatError(
            f"recipe='mxfp8' needs MX tensor cores (Blackwell); {spec.name} has none. On Hopper use 'rowwise'"
        )
    if recipe != "bf16":
        dims = {"dim": m.dim, "moe_inter": m.moe_inter if not fused else 2 * m.moe_inter}
        bad = {k: v for k, v in dims.items() if v % 16}
        if bad:
            raise IneligibleShapeError(
                f"{m.name}: fp8 grouped GEMMs need K and N multiples of 16 (torchao asserts it); "
                f"{', '.join(f'{k} = {v}' for k, v in bad.items())} is not: keep the experts in bf16"
            )
    sr = "bf16" if shared_recipe is None else shared_recipe
    if m.shared_width and sr != "bf16":
        from ..float8.recipes import get_recipe

        get_recipe(sr)
    return sr


def expert_block_time(
    config_or_preset: Any,
    *,
    tokens: Any,
    gpu: Any = "H200",
    recipe: str = "bf16",
    counts: Any = None,
    skew: Any = None,
    fused_gate_up: bool = False,
    shared_recipe: str | None = None,
    static_rows: bool = True,
    compiled: bool = False,
    timing: str = "event",
    time_model: Any = None,
) -> ExpertBlockTime:
    """Predict one MoE layer's routed-expert block, fwd + bwd, on one GPU.

    Args:
        config_or_preset: an MoE preset name (``"deepseek-v3-16b"``), a :class:`ModelPreset` with ``.moe``, a
            :class:`~perfmodel.presets.MoEShape`, or a mapping with dim, moe_inter, experts, top_k (see
            :func:`as_moe_shape`). ``experts`` is the experts on this GPU (expert parallelism: E / EP).
        tokens: tokens of the step on this GPU (after an EP all-to-all: the tokens whose rows it receives / top_k).
        recipe: "bf16", "rowwise" (torchao 0.17 ``moe_training`` fp8 rowwise on Hopper) or "mxfp8" (Blackwell,
            estimated).
        counts: routed rows per expert (length ``experts``, sums to ``tokens * top_k``); None: balanced.
        skew: instead of counts, ``("dirichlet", alpha, seed)`` or ``("zipf", s)`` (:func:`skewed_counts`).
        fused_gate_up: w1 and w3 as one ``N = 2 * moe_inter`` grouped GEMM (default False: torchtitan's
            ``GroupedExperts`` and our bench run two calls).
        shared_recipe: the shared experts' dense recipe (default bf16: torchao's MoE conversion leaves them).
        static_rows: the permutation's static row total, remainder to the last group (torchtitan; default True).
        compiled: the block runs under ``torch.compile`` (torchtitan's advice for float8 MoE): the eager weight
            quantization chain of the rowwise fwd (33 B per weight element) becomes two fused kernels (5 B);
            everything else is priced as eager. An estimate: our block measurements are eager.
        timing: "event" (one do_bench call of fwd and of fwd+bwd: kernel sum + one launch overhead) or "kernel"
            (sum of GPU kernel times).
        time_model: None, "calibrated" or "roofline" (grouped GEMMs and the dense parts).

    Raises:
        InvalidShapeError (bad tokens, counts, skew or config), IneligibleShapeError (fp8 with a dim not /16),
        UnknownOptionError, UnsupportedFormatError (mxfp8 on Hopper), NoClosedFormError (symbolic tokens).
    """
    m = as_moe_shape(config_or_preset)
    T = _tokens(tokens)
    check_timing(timing)
    if not all(isinstance(v, bool) for v in (fused_gate_up, static_rows, compiled)):
        raise InvalidShapeError("fused_gate_up, static_rows and compiled must be True or False")
    spec = get_gpu(gpu)
    sr = _check_recipe(recipe, shared_recipe, spec, m, fused_gate_up)
    c = _counts(counts, skew, T, m)
    g = block_group_sizes(c, ALIGN[recipe], static_rows=static_rows)
    p = _Pricer(spec, time_model)
    _router(p, T, m)
    _permute(p, T, m, int(g.sum()))
    _experts(p, m, g, recipe, fused_gate_up, compiled)
    _unpermute(p, T, m, int(g.sum()))
    if m.shared_width:
        _shared(p, T, m, sr)
    fwd = sum(k.seconds for k in p.kernels if k.phase == "fwd")
    bwd = sum(k.seconds for k in p.kernels if k.phase == "bwd")
    extra = EVENT_OVERHEAD_S if timing == "event" else 0.0
    return ExpertBlockTime(
        fwd_s=fwd + extra,
        bwd_s=bwd,
        total_s=fwd + bwd + extra,
        kernels=tuple(p.kernels),
        recipe=recipe,
        shared_recipe=sr if m.shared_width else "none",
        gpu=spec.name,
        tokens=T,
        counts=c,
        group_sizes=g,
        config=m,
        timing=timing,
        provenance=_provenance(p, recipe),
        error_bar=_error_bar(p),
    )


def _provenance(p: _Pricer, recipe: str) -> str:
    kinds = sorted({n.split(":")[0].split(" (")[0] for n in p.gemm_notes})
    mx = "estimated (mxfp8 on Blackwell: fp8 grouped-GEMM roofline + mxfp8 cast estimates)"
    head = mx if recipe == "mxfp8" else f"grouped GEMMs {', '.join(kinds)}"
    return (
        f"{head}; dense parts (router, shared experts, memory kernels) {p.prov.kind} ({p.tm.name} model); "
        "the block sum itself is not fitted (eager host gaps and inter-kernel L2 reuse not modelled)"
    )


def _error_bar(p: _Pricer) -> dict[str, Any]:
    if not p.bars:
        return {"p50": None, "p90": None, "basis": "no measured error for this GPU or recipe (estimate)"}
    return {
        "p50": None,
        "p90": None,
        "gemm_p50_max": max(b["p50"] for b in p.bars),
        "gemm_p90_max": max(b["p90"] for b in p.bars),
        "basis": "block not yet validated against a measured block; gemm_*: the grouped GEMMs' held-out error bars "
        "(benchmarks/data/h200_2026-12-03, docs/moe.md)",
    }


def expert_block_time_s(config_or_preset: Any, *, tokens: Any, **kwargs: Any) -> Any:
    """``total_s`` of :func:`expert_block_time` (seconds); a 1-D array of ``tokens`` gives one time per entry
    (balanced or named-skew routing only: a counts vector belongs to one token count)."""
    if isinstance(tokens, (list, tuple, np.ndarray)):
        arr = np.asarray(tokens)
        if arr.ndim != 1:
            raise InvalidShapeError("tokens must be a number or a 1-D array of numbers")
        if kwargs.get("counts") is not None:
            raise InvalidShapeError("counts= belongs to one token count; pass skew= or balanced routing with arrays")
        return np.array([expert_block_time(config_or_preset, tokens=t, **kwargs).total_s for t in arr.tolist()])
    return expert_block_time(config_or_preset, tokens=tokens, **kwargs).total_s
