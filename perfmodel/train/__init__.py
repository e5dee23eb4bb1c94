"""Training-step estimates at cluster scale: FSDP2 (optionally with float8 all-gather), HSDP and tensor
parallelism with sequence parallelism (vanilla or async), as torchtitan runs them.

::

    import perfmodel.train as train
    est = train.estimate("llama3-70b", gpu="H100", n_gpus=256, tp=8, seq_len=8192, batch_per_gpu=16,
                         recipe="tensorwise", float8_all_gather=True, ac="full")
    est.step_s, est.tokens_per_s_per_gpu, est.memory_bytes, est.fits
    print(est)                     # the breakdown: compute by part, each collective, exposed vs overlapped

One rank's step is::

    step_s = L · (layer_fwd + layer_bwd)        decoder layers, TP-sharded, from perfmodel.step (+ async TP chunking)
           + output layer + loss + embedding    bf16 output Linear over vocab / tp, compiled cross-entropy
           + overhead                            optimizer step and FSDP2's copies (fitted, see _train_compute)
           + exposed communication               FSDP / HSDP / TP collectives the compute does not hide

with the collectives priced by :mod:`perfmodel.models.collectives` (bandwidths of the GPU's fabric and the inter-node
network; estimated from published NCCL figures) and their overlap as in :mod:`perfmodel.train.comm`.
``tokens_per_s_per_gpu = batch_per_gpu · seq_len / (step_s · tp)`` (torchtitan's TPS: a TP group shares
its ranks' batch).

Where the numbers come from: the layer compute is the step model's (its provenance: measured on the H200,
transferred to other Hopper GPUs, estimated elsewhere); the optimizer/FSDP overhead is fitted on one-GPU
FSDP2 steps measured on an H200 (``perfmodel/calibrations/h200_train.json``); the collectives are an
estimate from published figures. ``est.provenance`` says so, with the error measured against published
multi-GPU float8 runs (``docs/validation.md``, "Training at cluster scale").

MoE models (the GQA MoE presets: mixtral-8x7b, qwen3-30b-a3b, llama4-scout, llama4-maverick, gpt-oss-120b) with
``ep=`` (expert parallelism out of the FSDP shard ranks, ``tp = 1``): each MoE layer is
:func:`perfmodel.step.layer_time` (attention half + routed-expert block + EP all-to-all, serial), dense layers
``dense_layer=True``; parameter counts with every expert, 6·N model FLOPs with the active ones (docs/train.md,
"MoE models").

Not modeled (refused by name): pipeline and context parallelism, MLA layers (DeepSeek), TP of MoE models,
activation checkpointing of MoE layers, arrays or symbols for an MoE model's seq_len / batch_per_gpu / layers.
Assumed (not measured by us): the activation memory a layer saves, the loss kernel's bytes, that communication
kernels do not slow the GEMMs they overlap.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import numpy as np

from .._backend import is_symbolic
from .._files import short
from ..errors import PerfModelError
from ..float8.published import known_wrong_lines
from ..float8.recipes import Recipe
from ..models.base import ExpectedError, Provenance
from ..models.registry import ModelLike
from ..presets import LayerShape, ModelPreset
from ..specs.gpu import GPULike, get_gpu
from ..step.layer import _plain
from . import memory as _memory
from .comm import CommCall, CommPlan, comm_plan
from .compute import (
    LayerCompute,
    TrainParams,
    dense_layer_compute,
    layer_compute,
    mean_layer_compute,
    memory_bytes,
    other_compute,
    overhead_bytes,
    shipped_train_params,
)
from .config import ModelSizes, TrainConfig, check_config, model_sizes, shard_layer, with_convert
from .grid import TrainEstimateGrid, is_grid, price_grid
from .mfu import MFU, StepFlops, mfu_from_run, predicted_mfu, step_flops
from .moe import moe_dict, moe_table_lines, one_value

__all__ = [
    "MEMORY_HEADROOM",
    "MFU",
    "TOKENS_PER_S_BIAS",
    "TRAIN_EXPECTED_ERROR",
    "CommCall",
    "StepFlops",
    "TrainEstimate",
    "TrainEstimateGrid",
    "TrainParams",
    "estimate",
    "mfu_from_run",
    "step_flops",
]

#: a configuration "fits" when its estimated peak memory is below this share of the GPU's memory (the rest is left
#: for the CUDA context and the caching allocator's fragmentation: :data:`perfmodel.train.memory.RESERVE_SHARE`)
MEMORY_HEADROOM = 1 - _memory.RESERVE_SHARE
MEMORY_CHECKED = _memory.CHECKED
#: how far absolute throughput was from published runs (docs/validation.md, "Training at cluster scale"): shown
#: beside multi-GPU step times, never applied (published runs validate the model; they do not tune it)
TOKENS_PER_S_BIAS = (
    "predicted tokens/s per GPU were a median 55 % above 28 published multi-GPU runs (bf16 and float8 alike)"
)
#: measured error of :func:`estimate` (docs/validation.md, "Training at cluster scale"; a test checks it)
TRAIN_EXPECTED_ERROR = ExpectedError(
    speedup_pct=6.6,
    decisions_pct=81.5,
    basis="float8/bf16 step speedup of 28 published multi-GPU runs (H100, B200, MI300X; 22 of 27 clear "
    "directions right); absolute tokens/s per GPU median 54 % too high",
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainEstimate:
    """One training step of one GPU in a sharded job.

    Attributes:
        config: the checked job (model sizes, layout, recipe, options).
        step_s: seconds per step.
        tokens_per_s_per_gpu: ``batch_per_gpu · seq_len / (step_s · tp)``.
        compute_s: part -> seconds (``layers``, ``output``, ``loss``, ``embedding``, ``overhead``); their sum
            plus :attr:`exposed_comm_s` is :attr:`step_s`.
        layer: one decoder layer's compute (:class:`~perfmodel.train.compute.LayerCompute`); an MoE model's MoE
            layer (attention half + expert block + all-to-all; ``layer.layer_time`` its
            :class:`~perfmodel.step.MoELayerTime`).
        dense_layer: an MoE model's dense layer (``None`` for dense models and MoE models without dense layers).
        comm: every collective of the step (:class:`CommCall`), its time and count.
        exposed_comm_s, overlapped_comm_s: communication time the compute does not / does hide;
            ``exposed_comm_s = exposed_fsdp_s + exposed_tp_s`` (FSDP/HSDP's and TP's).
        memory: part -> bytes of one GPU's peak memory (estimate); :attr:`memory_bytes` their sum.
        fits: :attr:`memory_bytes` below ``MEMORY_HEADROOM`` of the GPU's memory.
        model_flops_per_step: torchtitan's ``(6·N + 12·L·heads·head_dim·seq) · tokens`` per rank.
        provenance: where the answer comes from, part by part, and its measured error.

    ``str(est)`` is :meth:`table` for one configuration and :meth:`summary` (the configuration line, step and
    tokens/s as arrays or expressions) when ``seq_len``, ``batch_per_gpu`` or ``layers`` is an array or symbol.
    """

    config: TrainConfig
    step_s: Any
    tokens_per_s_per_gpu: Any
    compute_s: dict[str, Any]
    layer: LayerCompute
    comm: tuple[CommCall, ...]
    exposed_comm_s: Any
    overlapped_comm_s: Any
    exposed_fsdp_s: Any
    exposed_tp_s: Any
    memory: dict[str, Any]
    memory_bytes: Any
    fits: Any
    model_flops_per_step: Any
    provenance: Provenance
    dense_layer: LayerCompute | None = None

    @property
    def mfu_report(self) -> MFU:
        """The predicted MFU, against the mixed-precision peak and the bf16 peak (:mod:`perfmodel.train.mfu`)."""
        return predicted_mfu(self.config, self.tokens_per_s_per_gpu)

    @property
    def mfu(self) -> Any:
        """Model FLOPs utilisation: model FLOP/s of one GPU over the peak of the step's format mix (every FLOP at
        its own format's dense peak; for bf16 steps the bf16 peak). :attr:`mfu_bf16` is the bf16-peak figure."""
        return self.mfu_report.mfu

    @property
    def mfu_bf16(self) -> Any:
        """Model FLOP/s of one GPU over its dense bf16 peak (torchtitan's MFU; a float8 step can pass 100 %)."""
        return self.model_flops_per_step / self.config.tp / self.step_s / self.config.gpu.peak_flops_per_s("bf16")

    def to_dict(self) -> dict[str, Any]:
        """Plain types (JSON-ready); seconds and bytes."""
        c = self.config
        return {
            "model": c.sizes.name,
            "gpu": c.gpu.name,
            "n_gpus": c.n_gpus,
            "tp": c.tp,
            "dp_shard": c.dp_shard,
            "dp_replicate": c.dp_replicate,
            "seq_len": _plain(c.seq_len),
            "batch_per_gpu": _plain(c.batch_per_gpu),
            "recipe": c.recipe.name,
            "converted": list(c.converted),
            "float8_all_gather": c.float8_all_gather,
            "async_tp": c.async_tp,
            "ac": c.ac,
            "ep": c.ep,
            "layers": c.sizes.layers,
            "step_s": _plain(self.step_s),
            "tokens_per_s_per_gpu": _plain(self.tokens_per_s_per_gpu),
            "mfu": _plain(self.mfu),
            "mfu_bf16": _plain(self.mfu_bf16),
            "compute_s": {k: _plain(v) for k, v in self.compute_s.items()},
            "layer_s": {"fwd": _plain(self.layer.fwd_s), "bwd": _plain(self.layer.bwd_s)},
            "comm": [x.to_dict() for x in self.comm],
            "exposed_comm_s": _plain(self.exposed_comm_s),
            "exposed_fsdp_s": _plain(self.exposed_fsdp_s),
            "exposed_tp_s": _plain(self.exposed_tp_s),
            "overlapped_comm_s": _plain(self.overlapped_comm_s),
            "memory_bytes": _plain(self.memory_bytes),
            "memory": {k: _plain(v) for k, v in self.memory.items()},
            "fits": _plain(self.fits),
            "provenance": self.provenance.to_dict(),
            **({"moe": moe_dict(self)} if c.sizes.is_moe else {}),
        }

    def _header(self) -> str:
        """The configuration line: model, layout, tokens per rank, recipe and what it converts, AC."""
        c = self.config
        lay = (
            f"{c.n_gpus} GPUs = {c.dp_replicate} x {c.dp_shard} (FSDP) x {c.tp} (TP)"
            if c.dp_replicate > 1
            else f"{c.n_gpus} GPUs = {c.dp_shard} (FSDP) x {c.tp} (TP{', async' if c.async_tp else ''})"
        )
        fp8ag = ", float8 all-gather" if c.float8_all_gather else ""
        every = tuple(lin.name for lin in c.sizes.layer.linears())
        conv = (
            f" on {', '.join(c.converted) or 'no Linear'}" if c.recipe.name != "bf16" and c.converted != every else ""
        )
        return (
            f"{c.sizes.name} ({c.sizes.layers} layers) on {c.gpu.name}: {lay}; seq {_num(c.seq_len)} x batch "
            f"{_num(c.batch_per_gpu)} per rank, {c.recipe.name}{conv}{fp8ag}, AC {c.ac}"
        )

    def filter_code(self) -> dict[str, Any] | None:
        """How to apply the Linears this estimate converts (``config.converted``, what ``convert="auto"`` chose):
        the torchao ``module_filter_fn`` and torchtitan's ``filter_fqns`` (:func:`perfmodel.step.choice_code`);
        ``None`` for bf16 or a model that is not a preset (a LayerShape: name its Linears yourself)."""
        from ..presets import PRESETS
        from ..step.filter import choice_code

        c = self.config
        if c.recipe.name == "bf16" or c.sizes.name not in PRESETS or c.sizes.is_moe:
            return None  # MoE models: perfmodel.moe's filter_fn / fqns convert the experts
        return choice_code(c.sizes.name, c.converted, c.recipe.name)

    @property
    def is_scalar(self) -> bool:
        """True when the estimate is one configuration (numbers), False for numpy-array or sympy results."""
        c = self.config
        values = (c.seq_len, c.batch_per_gpu, c.sizes.layers, self.step_s)
        return not any(is_symbolic(v) or np.ndim(v) > 0 for v in values)

    def table(self, baseline: TrainEstimate | None = None) -> str:
        """A readable breakdown of one configuration, what is validated first: the float8/bf16 speedup with its
        measured error (when ``baseline``, the bf16 estimate of the same job, is given), whether it fits in memory,
        then step in ms with the measured bias of absolute throughput, compute by part, every collective (MB, ms),
        memory by part in GB, provenance. A configuration that does not fit says so first and shows no step time
        or MFU (it would not run).

        Raises:
            PerfModelError: an array or symbolic estimate (``seq_len``, ``batch_per_gpu`` or ``layers`` a numpy
                array or sympy expression, see :attr:`is_scalar`); ``str(est)`` gives :meth:`summary` instead.
        """
        c = self.config
        if not self.is_scalar:
            raise PerfModelError(
                "table() prints one configuration, but this estimate is "
                f"{'symbolic' if self._symbolic else 'an array'} (seq_len={_num(c.seq_len)}, batch_per_gpu="
                f"{_num(c.batch_per_gpu)}, layers={_num(c.sizes.layers)}); pass one number each for seq_len, "
                "batch_per_gpu and layers, or read the fields (step_s, tokens_per_s_per_gpu, compute_s, comm, "
                "memory_bytes) directly; str(est) prints a short summary"
            )
        lines = [self._header()]
        gb = float(self.memory_bytes) / 1e9
        cap = f"{c.gpu.mem_bytes / 1e9:.0f} GB" if c.gpu.mem_bytes else "(GPU memory not known)"
        if not bool(self.fits):
            lines.append(
                f"  DOES NOT FIT: estimated peak memory {gb:.1f} GB is above {MEMORY_HEADROOM:.0%} of {cap}; no step "
                "time or MFU shown (the job would not run). Shard more (tp, n_gpus), checkpoint more (ac) or "
                "shorten seq_len / batch_per_gpu."
            )
            lines += self._memory_lines()
            checked = _memory.MOE_NOTE if c.sizes.is_moe else MEMORY_CHECKED
            lines.append(f"provenance: {self.provenance.kind} (memory: {checked})")
            return "\n".join(lines)
        if baseline is not None:
            lines.append(self._speedup_line(baseline))
            lines += [f"  {x}" for x in known_wrong_lines(c.gpu, c.recipe)]
        lines.append(
            f"  step            {float(self.step_s) * 1e3:10.1f} ms   {float(self.tokens_per_s_per_gpu):,.0f} "
            f"tokens/s per GPU, MFU {float(self.mfu):.1%} of the mixed-precision peak"
            + (f" ({float(self.mfu_bf16):.1%} of bf16's)" if c.recipe.name != "bf16" else "")
        )
        if c.n_gpus > 1:
            lines.append(f"  {'':15} absolute figures: {TOKENS_PER_S_BIAS} (not corrected)")
        for part, t in self.compute_s.items():
            lines.append(f"  {part:<15} {float(t) * 1e3:10.1f} ms")
            if part == "layers" and c.sizes.is_moe:
                lines += moe_table_lines(self)
        ms = {k: float(getattr(self, k)) * 1e3 for k in ("exposed_comm_s", "exposed_fsdp_s", "exposed_tp_s")}
        lines.append(
            f"  comm exposed    {ms['exposed_comm_s']:10.1f} ms   (FSDP {ms['exposed_fsdp_s']:.1f}, TP "
            f"{ms['exposed_tp_s']:.1f}; hidden under compute: {float(self.overlapped_comm_s) * 1e3:.1f} ms)"
        )
        width = 11 if c.sizes.is_moe else 9  # "expert_fsdp"
        for x in self.comm:
            lines.append(
                f"    {x.group:<{width}} {x.op:<14} {x.name:<36} {float(x.nbytes) / 1e6:9.1f} MB x {x.calls:<5} "
                f"{float(x.time_s) * 1e3:8.3f} ms each"
            )
        limit = MEMORY_HEADROOM * (c.gpu.mem_bytes or float("inf"))
        near = float(self.memory_bytes) * (1 + _memory.MAX_HELD_OUT_ERROR) > limit
        fit_word = (
            f"fits, but within the model's largest held-out error ({_memory.MAX_HELD_OUT_ERROR:.1%}) of the limit"
            if near
            else "fits"
        )
        checked = _memory.MOE_NOTE if c.sizes.is_moe else MEMORY_CHECKED
        lines.append(f"  memory          {gb:10.1f} GB of {cap}: {fit_word} ({checked})")
        lines += self._memory_lines()[1:]
        lines.append(f"provenance: {self.provenance.line()}")
        return "\n".join(lines)

    def _memory_lines(self) -> list[str]:
        """The memory total and its parts, GB (:func:`perfmodel.train.memory.peak_memory`)."""
        gb = float(self.memory_bytes) / 1e9
        parts = ", ".join(f"{k} {float(v) / 1e9:.1f}" for k, v in self.memory.items())
        checked = _memory.MOE_NOTE if self.config.sizes.is_moe else MEMORY_CHECKED
        return [f"  memory          {gb:10.1f} GB ({checked})", f"    by part (GB): {parts}"]

    def _speedup_line(self, baseline: TrainEstimate) -> str:
        """``recipe vs bf16: 1.105x faster`` with the speedup's measured error on published runs."""
        if baseline.config.recipe.name != "bf16":
            raise PerfModelError(f"baseline must be the bf16 estimate of the same job, got {baseline.config.recipe}")
        sp = float(baseline.step_s / self.step_s)
        verdict = "faster" if sp >= 1 else "slower"
        err = self.provenance.expected_error
        how = []
        if err.speedup_pct is not None:
            how.append(f"±{err.speedup_pct:.1f} % median error")
        if err.decisions_pct is not None:
            how.append(f"{err.decisions_pct:.0f} % of clear decisions right")
        where = "published multi-GPU runs" if self.config.n_gpus > 1 else "H200 layer steps"
        sure = f"{', '.join(how)} on {where}" if how else "error not measured"
        return (
            f"  {self.config.recipe.name} vs bf16: {sp:.3f}x ({verdict}; bf16 step "
            f"{float(baseline.step_s) * 1e3:.1f} ms); {sure}"
        )

    @property
    def _symbolic(self) -> bool:
        c = self.config
        return any(is_symbolic(v) for v in (c.seq_len, c.batch_per_gpu, c.sizes.layers, self.step_s))

    def summary(self) -> str:
        """A short text for any estimate: the configuration line, then the step (seconds) and tokens/s per GPU
        as they are (numbers, numpy arrays or sympy expressions, shortened)."""
        kind = "symbolic" if self._symbolic else "array"
        return (
            f"{self._header()}\n  step_s = {_short(self.step_s)} s; tokens/s per GPU = "
            f"{_short(self.tokens_per_s_per_gpu)} ({kind} estimate: table() prints one configuration; read "
            "the fields, or pass one number each for seq_len, batch_per_gpu and layers)"
        )

    def __str__(self) -> str:
        return self.table() if self.is_scalar else self.summary()


def _num(x: Any) -> str:
    """A size for the text: ``8192``, not ``8192.0``; arrays and symbols as they print (shortened)."""
    if is_symbolic(x) or np.ndim(x) > 0:
        return _short(x)
    v = _plain(x)
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def _short(x: Any) -> str:
    """A value of any backend for the text, bounded in length (a long array or expression is cut)."""
    if isinstance(x, np.ndarray):
        text = np.array2string(x, precision=4, threshold=8, separator=", ")
    else:
        text = str(x) if is_symbolic(x) else str(_plain(x))
    return short(text, 160)


def _flops_per_step(cfg: TrainConfig) -> Any:
    s, lay = cfg.sizes, cfg.sizes.layer
    # MoE: 6·N over the active parameters per token (top_k routed experts + shared), not every expert
    per_token = 6 * s.active_non_embedding_params + 12 * s.layers * lay.heads * lay.head_dim * cfg.seq_len
    return per_token * cfg.tokens_per_rank


def _provenance(cfg: TrainConfig, layer: LayerCompute, params: TrainParams, network: Any) -> Provenance:
    compute = layer.layer_time.provenance
    multi = cfg.n_gpus > 1
    kind = compute.kind if not multi or compute.kind in ("roofline", "user") else "estimated"
    net = ""
    if multi:
        from ..models.collectives import get_network

        name = get_network(network, gpu=cfg.gpu).name
        net = f"; collectives: estimated (perfmodel.models.collectives, {name} between nodes)"
    summary = f"layers: {compute.summary}; optimizer/FSDP overhead: {params.source}{net}"
    expected = TRAIN_EXPECTED_ERROR if multi else compute.expected_error
    extra: tuple[str, ...] = ()
    if cfg.sizes.is_moe:
        # the published multi-GPU runs behind TRAIN_EXPECTED_ERROR are dense: no MoE step error is claimed
        expected = compute.expected_error
        if cfg.ep > 1:
            summary += "; EP all-to-all added serially (not overlapped)"
        summary += f"; {_memory.MOE_NOTE}"
        extra = ("EP all-to-all added serially, not overlapped with compute", _memory.MOE_NOTE)
    return Provenance(
        kind=kind,
        gpu=cfg.gpu.name,
        time_model=compute.time_model,
        source=summary,
        summary=summary,
        assumptions=(*compute.assumptions, *extra),
        expected_error=expected,
    )


def _auto_candidates(
    sizes: ModelSizes, base: TrainConfig, seq_len: Any, batch: Any, float8_all_gather: bool
) -> list[Any]:
    """``convert="auto"``: every subset of the groups eligible as one of the ``tp`` ranks holds the layer, as
    ``convert=`` values (``"none"`` for the empty one, left out with float8 all-gather, which needs a converted
    Linear). An MoE model: subsets of qkv, o and experts (:func:`perfmodel.step.moe_layer.moe_eligible_groups`)."""
    from ..step.layer import _subsets, eligible_groups

    tp = base.tp
    if sizes.is_moe:
        from ..step.moe_layer import moe_eligible_groups, resolve_moe_layer

        groups = moe_eligible_groups(resolve_moe_layer(sizes.name)[0], base.recipe)
        subs = [list(sub) or "none" for sub in _subsets(groups)]
        return [x for x in subs if not (x == "none" and float8_all_gather)]

    if is_symbolic(seq_len) or is_symbolic(batch) or any(getattr(v, "ndim", 0) for v in (seq_len, batch)):
        raise PerfModelError('convert="auto" needs one number each for seq_len and batch_per_gpu (no arrays, symbols)')
    subs = [list(sub) or "none" for sub in _subsets(eligible_groups(shard_layer(sizes.layer, tp)))]
    subs = [s for s in subs if not (s == "none" and float8_all_gather)]
    if not subs:
        where = f" as one of tp={tp} ranks holds it" if tp > 1 else ""
        raise PerfModelError(f"{sizes.name}: no Linear of the layer{where} can run in float8 (K and N multiples of 16)")
    return subs


def estimate(
    model: str | ModelPreset | LayerShape,
    *,
    gpu: GPULike,
    n_gpus: int,
    tp: int = 1,
    seq_len: Any,
    batch_per_gpu: Any,
    recipe: str | Recipe | None = "bf16",
    convert: str | Iterable[str] | None = None,
    float8_all_gather: bool = False,
    async_tp: bool = False,
    ac: str | None = None,
    layers: int | None = None,
    network: Any = None,
    dp_replicate: int = 1,
    pp: int = 1,
    cp: int = 1,
    vocab: int | None = None,
    time_model: ModelLike = None,
    train_params: TrainParams | None = None,
    mix_order_norm_bwd: bool | None = None,
    ep: int = 1,
) -> TrainEstimate | TrainEstimateGrid:
    """Predicted training step of one GPU in an FSDP2 (+ TP, HSDP) job, or of many jobs at once.

    Every numeric knob may be a numpy array (they broadcast together): ``seq_len``, ``batch_per_gpu`` and
    ``layers`` run through the formulas as arrays and give a :class:`TrainEstimate` of arrays; an array for
    ``n_gpus``, ``tp``, ``dp_replicate``, ``pp`` or ``cp`` gives a
    :class:`~perfmodel.train.grid.TrainEstimateGrid` (each distinct layout priced once, every field an array of
    the broadcast shape, ``.at(i, ...)`` one job's full estimate). Elements the scalar call would refuse are
    refused together, by index (:func:`perfmodel.train.grid.refuse`); ``fits`` is per element.

    Args:
        model: a preset name (``"llama3-70b"``, see ``perfmodel models``), a preset, or one decoder layer's
            :class:`~perfmodel.presets.LayerShape` (then ``layers=`` is required, ``vocab=`` optional).
        gpu: GPU name or spec; its ``interconnect`` prices the intra-node collectives.
        n_gpus: GPUs in the job (``dp_replicate · dp_shard · tp``). It, ``tp``, ``dp_replicate``, ``pp`` and
            ``cp`` are whole numbers: ``int``, a whole ``float`` or a numpy integer/float scalar (no bools), or
            numpy arrays of them (one job per element, see above).
        tp: tensor-parallel degree (sequence parallel, as torchtitan runs it); ``1``: FSDP only. Sequence
            parallelism splits each sequence across the TP ranks, so ``seq_len`` must be a multiple of ``tp``.
        seq_len, batch_per_gpu: sequence length (tokens) and sequences per data-parallel rank (int, numpy
            array or sympy expression; with arrays or symbols every field follows them, ``str(est)`` is a
            short summary and :meth:`TrainEstimate.table` refuses).
        recipe: ``"bf16"`` or a float8 recipe (the output layer stays bf16 as in torchtitan).
        convert: the decoder layers' Linears in ``recipe``: ``None`` — every eligible one (K and N multiples
            of 16 as one TP rank holds them, i.e. after ``tp`` sharding; the others stay bf16, and
            ``est.config.converted`` and the table's "on ..." list the converted ones); group or Linear
            names as :func:`perfmodel.step.layer_time` takes them (``["w13", "w2"]``, ``["wq", "wo"]``,
            Hugging Face names; one ineligible after sharding is refused); ``"auto"`` — the subset of the
            sharded layer's eligible groups (qkv, o, w13, w2) whose whole step, communication included, is
            shortest (ties go to fewer groups; needs numeric ``seq_len`` and ``batch_per_gpu``). Ignored for
            bf16.
        float8_all_gather: FSDP2 all-gathers the weights in float8 (torchao, tensorwise only).
        async_tp: torch's micro-pipelined async TP (needs ``tp > 1``).
        ac: activation checkpointing, ``"none"``, ``"selective"`` (torchtitan's op-level policy) or ``"full"``;
            ``None`` (default): ``"selective"`` for dense models, ``"none"`` for MoE models (the only one priced).
        ep: expert-parallel degree of an MoE model (``tp = 1``; :func:`perfmodel.train.config.check_ep`: the EP
            ranks come out of the FSDP shard ranks, so ``ep`` divides ``dp_shard`` and the experts, leaving at least
            ``top_k`` experts per GPU); ``1`` for dense models.
        layers, vocab: override the preset's layer count and vocabulary (tokens; ``0``: no embedding and
            output layer; a bool is refused).
        network: the inter-node network (a :class:`perfmodel.models.collectives.Network` or its name); ``None``: the
            GPU's default (:func:`perfmodel.models.collectives.default_network`).
        dp_replicate: HSDP replicas (gradients all-reduced across them); ``1``: plain FSDP.
        pp, cp: pipeline and context parallel degrees; anything but 1 is refused (not modeled).
        time_model: the GEMM/cast time model (as ``model=`` elsewhere in perfmodel).
        train_params: overrides the fitted optimizer/FSDP overhead parameters.
        mix_order_norm_bwd: as :func:`perfmodel.step.layer_time` takes it (``None``: the fitted stack's
            inductor, torch 2.11; ``False`` for torch 2.9 and older).

    Raises:
        InvalidParallelismError: n_gpus, tp, dp_replicate, pp or cp not a positive whole finite number,
            n_gpus not divisible by tp·dp_replicate, heads, KV heads, FFN, vocab or seq_len not divisible by
            tp, pp/cp > 1, async TP without TP, a multi-GPU job on a GPU without a known interconnect.
            IneligibleLinearError: a Linear named in convert= that float8 cannot run (after sharding).
            ep not dividing the experts or dp_shard, tp > 1 for an MoE model, ep > 1 for a dense one.
            UnsupportedLayerError: MLA models (MoEPresetError), ac other than "none" for an MoE model.
            InvalidShapeError (also arrays or symbols for an MoE model's seq_len, batch_per_gpu, layers),
            UnknownPresetError, UnknownRecipeError, UnknownNetworkError, PerfModelError for other bad inputs.
    """
    spec = get_gpu(gpu)  # resolved once: everything below gets the spec
    knobs = dict(n_gpus=n_gpus, tp=tp, dp_replicate=dp_replicate, pp=pp, cp=cp)
    knobs.update(seq_len=seq_len, batch_per_gpu=batch_per_gpu, layers=layers)
    if is_grid(knobs):
        if isinstance(convert, str) and convert.strip().lower() == "auto":
            raise PerfModelError(
                'convert="auto" prices one layout at a time: pass one number each for n_gpus, tp, dp_replicate, '
                "pp and cp (and seq_len, batch_per_gpu), or name the Linears to convert"
            )
        fixed = dict(
            gpu=spec,
            vocab=vocab,
            recipe=recipe,
            convert=convert,
            float8_all_gather=float8_all_gather,
            async_tp=async_tp,
            ac=ac,
            network=network,
            time_model=time_model,
            train_params=train_params,
            mix_order_norm_bwd=mix_order_norm_bwd,
            ep=ep,
        )
        from ..step.moe_layer import is_moe

        if is_moe(model):  # the expert block takes one token count: one seq_len / batch / layers per call
            return price_grid(lambda **one: estimate(model, **fixed, **one_value(model, one)), knobs)
        return price_grid(lambda **one: estimate(model, **fixed, **one), knobs)
    sizes: ModelSizes = model_sizes(model, layers=layers, vocab=vocab)
    if ac is None:
        ac = "none" if sizes.is_moe else "selective"
    job = dict(
        n_gpus=n_gpus,
        tp=tp,
        dp_replicate=dp_replicate,
        pp=pp,
        cp=cp,
        seq_len=seq_len,
        batch_per_gpu=batch_per_gpu,
        recipe=recipe,
        float8_all_gather=float8_all_gather,
        async_tp=async_tp,
        ac=ac,
        mix_order_norm_bwd=mix_order_norm_bwd,
        ep=ep,
    )
    if not (isinstance(convert, str) and convert.strip().lower() == "auto"):
        cfg = check_config(sizes, spec, **job, convert=convert)
        return _priced(cfg, network=network, time_model=time_model, train_params=train_params)
    # "auto": the fastest whole step over the group subsets; ties go to fewer groups (subsets come by size).
    # The job is checked first (its tp decides which groups stay eligible after sharding)
    # once (TrainConfig built once per call); each candidate is that config with other Linears converted
    base = check_config(sizes, spec, **{**job, "float8_all_gather": False}, convert="none")
    ests = [
        _priced(
            with_convert(base, conv, float8_all_gather=float8_all_gather),
            network=network,
            time_model=time_model,
            train_params=train_params,
        )
        for conv in _auto_candidates(sizes, base, seq_len, batch_per_gpu, float8_all_gather)
    ]
    best = ests[0]
    for est in ests[1:]:
        if float(est.step_s) < float(best.step_s) * (1 - 1e-9):
            best = est
    return best


def _priced(
    cfg: TrainConfig, *, network: Any, time_model: ModelLike, train_params: TrainParams | None
) -> TrainEstimate:
    """One checked job's step: compute, communication, memory, provenance."""
    spec, sizes = cfg.gpu, cfg.sizes
    params = train_params if train_params is not None else shipped_train_params()
    if not isinstance(params, TrainParams):
        raise PerfModelError(
            f"train_params must be a TrainParams (perfmodel.calibrate.train fits one), got {type(params).__name__}"
        )
    layer = layer_compute(cfg, time_model=time_model, network=network)
    dense = dense_layer_compute(cfg, time_model=time_model)
    other = other_compute(cfg, time_model=time_model)
    plan: CommPlan = comm_plan(cfg, mean_layer_compute(cfg, layer, dense) if sizes.is_moe else layer, network=network)
    overhead = overhead_bytes(cfg) / (params.overhead_bw_fraction * spec.mem_bw_bytes_per_s)
    if sizes.is_moe:
        layers_s = sizes.moe_layers * layer.step_s + (sizes.dense_layers * dense.step_s if dense is not None else 0)
    else:
        layers_s = sizes.layers * layer.step_s
    compute = {"layers": layers_s, **other, "overhead": overhead}
    step = sum(compute.values(), 0) + plan.exposed_s
    mem = memory_bytes(cfg)
    total_mem = sum(mem.values(), 0)
    cap = spec.mem_bytes if spec.mem_bytes else float("inf")
    return TrainEstimate(
        config=cfg,
        step_s=step,
        tokens_per_s_per_gpu=cfg.tokens_per_rank / (step * cfg.tp),
        compute_s=compute,
        layer=layer,
        comm=plan.calls,
        exposed_comm_s=plan.exposed_s,
        overlapped_comm_s=plan.overlapped_s,
        exposed_fsdp_s=plan.exposed_fsdp_s,
        exposed_tp_s=plan.exposed_tp_s,
        memory=mem,
        memory_bytes=total_mem,
        fits=_memory.fits(total_mem, cap),
        model_flops_per_step=_flops_per_step(cfg),
        provenance=_provenance(cfg, layer, params, network),
        dense_layer=dense,
    )
