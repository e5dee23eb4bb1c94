"""Model FLOPs utilisation of a mixed-precision training step, predicted or from a measured run.

One bf16 peak is the wrong denominator once some GEMMs run in float8: torchtitan switches its MFU off whenever
float8 or MX training is on for that reason (pytorch/torchtitan PR 2451). perfmodel knows the format of each
GEMM of each Linear, so it can divide by the peak the step could reach if every FLOP ran at its own format's
peak::

    flops_per_token = Σ_f F_f                      F_f: model FLOPs per token that run in format f
    peak_mixed      = Σ_f F_f / Σ_f (F_f / peak_f)  the step's peak: each FLOP at its format's dense peak
    achieved        = flops_per_token · tokens/s per GPU
    mfu             = achieved / peak_mixed         (mfu_bf16 = achieved / peak_bf16, torchtitan's old figure)

The FLOPs are torchtitan's model-FLOPs count (``6·N + 12·L·heads·head_dim·seq`` per token, N the
non-embedding parameters; ``torchtitan/models/utils.py`` ``get_dense_model_nparams_and_flops``), split by
format: a Linear's ``6·K·N`` FLOPs per token are three GEMMs of ``2·K·N`` each — output, grad-input,
grad-weight — in the formats its recipe gives them (:meth:`perfmodel.float8.recipes.Recipe.gemm_dtypes`; e.g.
``rowwise_with_gw_hp`` keeps the grad-weight GEMM in bf16). Linears left in bf16, the output layer, the norm
weights and attention's ``12·L·heads·head_dim·seq`` count at the bf16 peak (torchtitan keeps the output layer
bf16; SDPA runs in bf16). Peaks are the dense tensor-core figures of :mod:`perfmodel.specs` (datasheet).

MoE models count the **active** parameters per token (each MoE layer's ``top_k`` routed experts, shared experts
and router, not every expert), with the routed experts' GEMMs in the experts' recipe when ``"experts"`` is
converted (torchao ``moe_training``: rowwise on Hopper, mxfp8 on Blackwell).

These are the same FLOPs :func:`perfmodel.train.estimate` counts (``est.model_flops_per_step``), so a predicted
and a measured MFU of one configuration compare like for like.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any

import numpy as np

from .._backend import is_symbolic
from .._files import short_repr
from ..errors import InvalidShapeError
from ..float8.recipes import Recipe
from ..specs.gpu import GPUSpec
from .config import TrainConfig

__all__ = ["MFU", "StepFlops", "mfu_from_run", "predicted_mfu", "step_flops"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class StepFlops:
    """Model FLOPs of one token of a configuration, by the format they run in.

    Attributes:
        per_token: format name -> FLOPs per token (``"bf16"``, ``"fp8_e4m3"``, ``"fp8_e5m2"``, ``"mxfp8"``).
        gpu: the GPU whose peaks :meth:`peak_flops_per_s` uses.
    """

    per_token: dict[str, Any]
    gpu: GPUSpec

    @property
    def total_per_token(self) -> Any:
        """Model FLOPs per token, every format."""
        return sum(self.per_token.values(), 0)

    def peak_flops_per_s(self) -> Any:
        """The step's peak FLOP/s: ``Σ F_f / Σ (F_f / peak_f)`` (every FLOP at its format's dense peak)."""
        seconds = sum((f / self.gpu.peak_flops_per_s(fmt) for fmt, f in self.per_token.items()), 0)
        return self.total_per_token / seconds

    def share(self, fmt: str) -> Any:
        """Fraction of the FLOPs that run in ``fmt`` (0 when none do)."""
        return self.per_token.get(fmt, 0) / self.total_per_token


def step_flops(config: TrainConfig) -> StepFlops:
    """Model FLOPs per token of a checked training configuration, split by the format each GEMM runs in.

    The decoder layer's Linears count whole (model FLOPs: tensor parallelism splits the work, not the count);
    the converted ones (``config.converted``) in their recipe's GEMM formats, the rest in bf16.
    """
    sizes, lay, rec = config.sizes, config.sizes.layer, config.recipe
    per_token: dict[str, Any] = {}

    def add(fmt: str, flops: Any) -> None:
        per_token[fmt] = per_token.get(fmt, 0) + flops

    converted = set(config.converted) if rec.name != "bf16" else set()
    if sizes.is_moe:
        return _moe_step_flops(config, add, per_token)
    for lin in lay.linears():
        params = lin.in_features * lin.out_features * sizes.layers
        formats = rec.gemm_dtypes() if lin.name in converted else ("bf16", "bf16", "bf16")
        for fmt in formats:  # output, grad_input, grad_weight: 2·K·N FLOPs per token each
            add(fmt, 2 * params)
    norms = sizes.layers * (sizes.layer_params - sizes.layer_linear_params)
    add("bf16", 6 * (norms + sizes.output_params))
    add("bf16", 12 * sizes.layers * lay.heads * lay.head_dim * config.seq_len)
    return StepFlops(per_token=per_token, gpu=config.gpu)


def _moe_step_flops(config: TrainConfig, add: Any, per_token: dict[str, Any]) -> StepFlops:
    """:func:`step_flops` of an MoE model: per token, every layer's attention Linears, each MoE layer's router, its
    ``top_k`` routed experts (in the experts' recipe when ``"experts"`` is converted) and shared experts (bf16), the
    dense layers' MLP; norms, output layer and attention at the bf16 peak (the active parameters' 6·N)."""
    sizes, lay, rec = config.sizes, config.sizes.layer, config.recipe
    m = sizes.moe
    fp8 = rec.gemm_dtypes()
    conv, dconv = set(config.converted), set(config.dense_converted)
    for lin in lay.linears():
        if lin.name not in ("wq", "wk", "wv", "wo"):
            continue
        kn = lin.in_features * lin.out_features
        for layers, names in ((sizes.moe_layers, conv), (sizes.dense_layers, dconv)):
            for fmt in fp8 if lin.name in names else ("bf16",) * 3:
                add(fmt, 2 * kn * layers)
    routed = sizes.moe_layers * sizes.expert_params * m.top_k // m.experts
    for fmt in fp8 if "experts" in conv else ("bf16",) * 3:
        add(fmt, 2 * routed)
    add("bf16", 6 * sizes.moe_layers * (sizes.router_params + sizes.shared_expert_params))
    dense = dataclasses.replace(lay, ffn=sizes.dense_ffn) if sizes.dense_layers else None
    for lin in dense.linears() if dense is not None else ():
        if lin.name in ("w1", "w3", "w2"):
            for fmt in fp8 if lin.name in dconv else ("bf16",) * 3:
                add(fmt, 2 * lin.in_features * lin.out_features * sizes.dense_layers)
    add("bf16", 6 * (2 * m.dim * sizes.layers + sizes.output_params))
    add("bf16", 12 * sizes.layers * lay.heads * lay.head_dim * config.seq_len)
    return StepFlops(per_token=per_token, gpu=config.gpu)


@dataclasses.dataclass(frozen=True, kw_only=True)
class MFU:
    """Model FLOPs utilisation of one GPU.

    Attributes:
        mfu: achieved model FLOP/s over the mixed-precision peak (:meth:`StepFlops.peak_flops_per_s`).
        mfu_bf16: the same FLOP/s over the dense bf16 peak (torchtitan's figure; above the honest one's
            meaning for float8 steps: a float8 step can exceed 100 %).
        achieved_flops_per_s: model FLOP/s of one GPU.
        peak_flops_per_s, bf16_peak_flops_per_s: the two denominators.
        tokens_per_s_per_gpu: the throughput it was computed from.
        flops: the per-format FLOP count.
        source: ``"predicted"`` (from :func:`perfmodel.train.estimate`) or ``"measured"`` (a run's throughput).
    """

    mfu: Any
    mfu_bf16: Any
    achieved_flops_per_s: Any
    peak_flops_per_s: Any
    bf16_peak_flops_per_s: float
    tokens_per_s_per_gpu: Any
    flops: StepFlops
    source: str

    def __str__(self) -> str:
        if is_symbolic(self.mfu) or np.ndim(self.mfu) > 0:
            return f"MFU ({self.source}): {short_repr(self.mfu)} of the mixed-precision peak"
        shares = ", ".join(
            f"{fmt} {float(f / self.flops.total_per_token):.0%}" for fmt, f in sorted(self.flops.per_token.items())
        )
        return (
            f"MFU {float(self.mfu):.1%} of the mixed-precision peak ({float(self.peak_flops_per_s) / 1e12:,.0f} "
            f"TFLOP/s: FLOPs {shares}); {float(self.mfu_bf16):.1%} of the bf16 peak "
            f"({self.bf16_peak_flops_per_s / 1e12:,.0f} TFLOP/s, torchtitan's figure); "
            f"{float(self.achieved_flops_per_s) / 1e12:,.1f} TFLOP/s achieved per GPU ({self.source})"
        )


def _mfu(flops: StepFlops, tokens_per_s_per_gpu: Any, source: str) -> MFU:
    achieved = flops.total_per_token * tokens_per_s_per_gpu
    peak = flops.peak_flops_per_s()
    bf16 = flops.gpu.peak_flops_per_s("bf16")
    return MFU(
        mfu=achieved / peak,
        mfu_bf16=achieved / bf16,
        achieved_flops_per_s=achieved,
        peak_flops_per_s=peak,
        bf16_peak_flops_per_s=bf16,
        tokens_per_s_per_gpu=tokens_per_s_per_gpu,
        flops=flops,
        source=source,
    )


def _positive(name: str, value: Any, valid: str) -> float:
    """A measured throughput or time: a finite number above 0 (bools, arrays, symbols refused)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.integer, np.floating)):
        raise InvalidShapeError(f"{name} must be {valid}, got {type(value).__name__} {short_repr(value)}")
    v = float(value)
    if not math.isfinite(v) or v <= 0:
        raise InvalidShapeError(f"{name} must be {valid}, got {value!r}")
    return v


def mfu_from_run(
    model: Any,
    *,
    gpu: Any,
    seq_len: int,
    tokens_per_s_per_gpu: float | None = None,
    step_s: float | None = None,
    batch_per_gpu: int | None = None,
    tp: int = 1,
    n_gpus: int | None = None,
    recipe: str | Recipe | None = "bf16",
    convert: Any = None,
    layers: int | None = None,
    vocab: int | None = None,
) -> MFU:
    """MFU of a measured training run, against the mixed-precision peak (and, labelled, the bf16 peak).

    Give the run's throughput as torchtitan logs it, ``tokens_per_s_per_gpu`` (its ``tps``: tokens per step of a
    data-parallel rank over step time and ``tp``), or its ``step_s`` with ``batch_per_gpu``. ``model``,
    ``recipe``, ``convert``, ``layers`` and ``vocab`` as :func:`perfmodel.train.estimate` takes them; the FLOPs
    counted are the same as the estimate's ``model_flops_per_step``.

    Raises:
        InvalidShapeError: neither or both of ``tokens_per_s_per_gpu`` and ``step_s``, a throughput or step time
            that is not a finite number above 0 (a run with zero tokens), ``step_s`` without ``batch_per_gpu``.
        InvalidParallelismError, UnknownPresetError, UnknownRecipeError, UnknownGPUError: as
            :func:`perfmodel.train.estimate`.
    """
    from ..specs.gpu import get_gpu
    from .config import check_config, model_sizes

    if (tokens_per_s_per_gpu is None) == (step_s is None):
        raise InvalidShapeError(
            "give exactly one of tokens_per_s_per_gpu= (torchtitan's tps) and step_s= (with batch_per_gpu=)"
        )
    if step_s is not None and batch_per_gpu is None:
        raise InvalidShapeError("step_s= needs batch_per_gpu= (sequences per data-parallel rank) to count tokens")
    spec = get_gpu(gpu)
    sizes = model_sizes(model, layers=layers, vocab=vocab)
    cfg = check_config(
        sizes,
        spec,
        n_gpus=n_gpus if n_gpus is not None else tp,
        tp=tp,
        dp_replicate=1,
        pp=1,
        cp=1,
        seq_len=seq_len,
        batch_per_gpu=batch_per_gpu if batch_per_gpu is not None else 1,
        recipe=recipe,
        float8_all_gather=False,
        async_tp=False,
        ac="none",
        convert=convert,
    )
    if tokens_per_s_per_gpu is not None:
        tps = _positive("tokens_per_s_per_gpu", tokens_per_s_per_gpu, "a finite number of tokens/s above 0")
    else:
        s = _positive("step_s", step_s, "a finite step time in seconds above 0")
        tps = cfg.tokens_per_rank / (s * cfg.tp)
    return _mfu(step_flops(cfg), tps, "measured")


def predicted_mfu(config: TrainConfig, tokens_per_s_per_gpu: Any) -> MFU:
    """The MFU of a predicted step (:attr:`perfmodel.train.TrainEstimate.mfu_report`)."""
    return _mfu(step_flops(config), tokens_per_s_per_gpu, "predicted")
