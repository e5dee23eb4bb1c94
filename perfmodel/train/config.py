"""A training job's shape as the cluster model sees it: the model's layer and sizes, the parallel layout and its
process groups, checked once (public face: :mod:`perfmodel.train`).

Layout (torchtitan's device mesh, outermost first: ``dp_replicate, dp_shard, tp``; TP ranks are neighbours,
so a TP group of ``tp <= gpus_per_node`` GPUs sits inside one node and an FSDP group takes every
``tp``-th GPU)::

    n_gpus   = dp_replicate · dp_shard · tp
    fsdp group (dp_shard ranks):   GPUs per node = max(1, min(dp_shard, gpus_per_node // tp))
    tp group   (tp ranks):         GPUs per node = min(tp, gpus_per_node)
    replicate group (HSDP):        GPUs per node = max(1, gpus_per_node // (tp · dp_shard))
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
from typing import Any

import numpy as np

from .._backend import MAX_SIZE, check_size, is_symbolic, short_repr
from ..errors import (
    IneligibleLinearError,
    InvalidParallelismError,
    InvalidShapeError,
    PerfModelError,
    UnsupportedLayerError,
    choices_message,
)
from ..float8.recipes import Recipe, get_recipe
from ..presets import LayerShape, ModelPreset, MoEShape, get_preset
from ..specs.gpu import GPUSpec

__all__ = [
    "Groups",
    "ModelSizes",
    "TrainConfig",
    "check_config",
    "model_sizes",
    "shard_layer",
    "with_convert",
]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ModelSizes:
    """Parameter counts of the model (elements).

    Dense models: ``layer`` is the decoder layer, ``layer_params`` its Linears and two norm weights. MoE models
    (``moe`` set; GQA MoE presets, priced by :func:`perfmodel.step.layer_time`): ``layer`` is the MoE layer's
    attention half (its ``ffn`` is the dense layers' MLP width, or ``moe_inter`` where there are none: not used for
    MoE layers), ``layer_params`` one MoE layer with **all** its experts
    (``attention_linear_params + router_params + expert_params + shared_expert_params + 2·hidden``), and the
    model has ``moe_layers`` MoE layers and ``layers - moe_layers`` dense layers of ``dense_layer_params`` each.
    """

    name: str
    layer: LayerShape
    layers: int
    vocab: int
    layer_params: int  # one decoder layer: its Linears and two norm weights (MoE: one MoE layer, every expert)
    layer_linear_params: int
    embedding_params: int  # vocab · hidden (untied from the output layer)
    output_params: int  # hidden · vocab, plus the final norm's hidden
    total_params: int
    moe: MoEShape | None = None
    moe_layers: int = 0  # MoE models: layers with the routed-expert block
    dense_ffn: int = 0  # MoE models: the dense layers' MLP width (0: none)
    attention_linear_params: int = 0  # MoE models: q, k, v, o of one layer
    expert_params: int = 0  # MoE models: one layer's routed experts, experts · 3 · dim · moe_inter
    shared_expert_params: int = 0  # MoE models: one layer's shared experts, 3 · dim · shared_experts · shared_inter
    router_params: int = 0  # MoE models: one layer's router, dim · experts
    dense_layer_params: int = 0  # MoE models: one dense layer (attention, SwiGLU MLP of dense_ffn, two norms)

    @property
    def is_moe(self) -> bool:
        """Whether the model has MoE layers."""
        return self.moe is not None

    @property
    def dense_layers(self) -> int:
        """Decoder layers without experts (every layer of a dense model)."""
        return self.layers - self.moe_layers if self.is_moe else self.layers

    @property
    def non_embedding_params(self) -> int:
        """Every parameter but the embedding: every layer (MoE: every expert) plus the output layer."""
        if self.is_moe:
            return (
                self.moe_layers * self.layer_params + self.dense_layers * self.dense_layer_params + self.output_params
            )
        return self.layers * self.layer_params + self.output_params

    @property
    def active_layer_params(self) -> float:
        """Parameters one token uses in one MoE layer: attention, router, its ``top_k`` routed experts, the shared
        experts and two norms (a dense model: :attr:`layer_params`)."""
        if not self.is_moe:
            return self.layer_params
        m = self.moe
        routed = self.expert_params * m.top_k // m.experts
        return self.attention_linear_params + self.router_params + routed + self.shared_expert_params + 2 * m.dim

    @property
    def active_non_embedding_params(self) -> float:
        """Parameters the ``6·N`` model-FLOP count uses: per token, every dense layer, each MoE layer's active
        parameters (:attr:`active_layer_params`: ``top_k`` routed experts + shared experts, not all experts) and the
        output layer (dense models: :attr:`non_embedding_params`)."""
        if not self.is_moe:
            return self.non_embedding_params
        dense = self.dense_layers * self.dense_layer_params
        return self.moe_layers * self.active_layer_params + dense + self.output_params

    @property
    def active_params(self) -> float:
        """Active parameters with the embedding (what MoE model cards quote: Mixtral 8x7B 12.9 B)."""
        return self.active_non_embedding_params + self.embedding_params


def _vocab(value: Any) -> int:
    """``vocab=`` as a token count: ``0`` (no embedding or output layer) or a positive integer.

    Raises:
        InvalidShapeError: a bool (``False`` is not ``0``), an array or symbol, or anything
            :func:`~perfmodel._backend.check_size` refuses; the message says what is valid.
    """
    valid = f"0 (no embedding or output layer) or a positive integer up to {MAX_SIZE:.3g} (tokens in the vocabulary)"
    if isinstance(value, (bool, np.bool_)) or isinstance(value, np.ndarray) or is_symbolic(value):
        raise InvalidShapeError(f"vocab must be {valid}, got {type(value).__name__} {short_repr(value)}")
    if isinstance(value, (numbers.Real, np.integer, np.floating)) and value == 0:
        return 0
    return check_size("vocab", value)


def model_sizes(model: str | ModelPreset | LayerShape, *, layers: int | None, vocab: int | None) -> ModelSizes:
    """The layer and parameter counts of ``model`` (a preset name, a preset, or one layer's shape).

    ``vocab``: tokens in the vocabulary, ``0`` for no embedding and output layer (``None``: the preset's, or
    ``0`` for a LayerShape); a bool, array or symbol is refused (:class:`InvalidShapeError`)."""
    if isinstance(model, LayerShape):
        if layers is None:
            raise PerfModelError("a LayerShape model needs layers= (how many decoder layers the model stacks)")
        lay, n, v, name = model, layers, vocab if vocab is not None else 0, model.name
    else:
        preset = get_preset(model) if not isinstance(model, ModelPreset) else model
        if preset.layer is None and preset.moe is not None:
            from .moe import moe_sizes

            v = _vocab(vocab if vocab is not None else _head_vocab(preset))
            return ModelSizes(**moe_sizes(preset, layers=layers, vocab=v))
        if preset.layer is None:
            raise UnsupportedLayerError(
                f"{preset.name}: the cluster model prices dense decoder layers only; {preset.layer_note or 'no layer'}"
                ". MoE and MLA models are not modeled (perfmodel.float8.report still prices their Linears)."
            )
        lay, n, name = preset.layer, layers if layers is not None else preset.layers, preset.name
        v = vocab if vocab is not None else _head_vocab(preset)
    n = check_size("layers", n)
    v = _vocab(v)
    lin = sum(s.in_features * s.out_features for s in lay.linears())
    per_layer = lin + 2 * lay.hidden
    emb, out = v * lay.hidden, v * lay.hidden + lay.hidden
    return ModelSizes(
        name=name,
        layer=lay,
        layers=n,
        vocab=v,
        layer_params=per_layer,
        layer_linear_params=lin,
        embedding_params=emb,
        output_params=out,
        total_params=n * per_layer + emb + out,
    )


def _head_vocab(preset: ModelPreset) -> int:
    head = [lin for lin in preset.linears if lin.layers == 1 and lin.name in ("lm_head", "output")]
    return head[0].out_features if head else 0


@dataclasses.dataclass(frozen=True, kw_only=True)
class Groups:
    """One process group: its size and how many of its GPUs share a node."""

    size: int
    per_node: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """A checked job: sizes, layout, recipe and options."""

    sizes: ModelSizes
    gpu: GPUSpec
    n_gpus: int
    tp: int
    dp_shard: int
    dp_replicate: int
    seq_len: Any
    batch_per_gpu: Any
    recipe: Recipe
    float8_all_gather: bool
    async_tp: bool
    ac: str
    converted: tuple[str, ...]
    fsdp: Groups
    tp_group: Groups
    replicate: Groups
    mix_order_norm_bwd: bool | None = None
    compile: bool = False  # layers and loss under torch.compile: the memory model's COMPILED constants
    ep: int = 1  # expert-parallel degree (MoE models; out of the dp_shard ranks, torchtitan's rule)
    ep_group: Groups | None = None  # MoE models: the EP group (ep neighbouring FSDP ranks)
    expert_fsdp: Groups | None = None  # MoE models: the group that shards each expert (dp_shard / ep ranks)
    dense_converted: tuple[
        str, ...
    ] = ()  # MoE models: the dense layers' Linears in float8 (perfmodel.train.moe.dense_converted)

    @functools.cached_property
    def fp8_gathered_params(self) -> int:
        """Weights of one (whole, unsharded) layer that FSDP2 all-gathers in float8: the converted Linears'
        with ``float8_all_gather``, else 0."""
        if not self.float8_all_gather:
            return 0
        return sum(
            lin.in_features * lin.out_features for lin in self.sizes.layer.linears() if lin.name in self.converted
        )

    @functools.cached_property
    def tokens_per_rank(self) -> Any:
        """Tokens one data-parallel rank (a TP group) processes per step: ``batch_per_gpu · seq_len``."""
        return self.batch_per_gpu * self.seq_len

    @functools.cached_property
    def sharded_layer(self) -> LayerShape:
        """The decoder layer as one of the ``tp`` ranks holds it (:func:`shard_layer`), built once per config."""
        return shard_layer(self.sizes.layer, self.tp)


#: the largest job priced: 2**24 GPUs (the collectives' group sizes are checked as sizes up to 2**40 ranks,
#: far above any cluster; this keeps the message about the GPU count, not an internal group)
MAX_GPUS = 2**24


def _int(name: str, value: Any, valid: str) -> int:
    """A parallel degree or GPU count: a positive whole ``int``, ``float`` or numpy integer/float scalar.

    Raises:
        InvalidParallelismError: a bool, NaN or infinity, a fraction, a value below 1, or not a number.
    """
    if isinstance(value, (np.integer, np.floating)) and not isinstance(value, np.bool_):
        value = value.item()  # numpy scalars: as Python numbers
    if isinstance(value, bool) or is_symbolic(value) or not isinstance(value, (int, float)):
        raise InvalidParallelismError(f"{name} must be {valid}, got {type(value).__name__} {short_repr(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidParallelismError(f"{name} must be {valid}, got {value!r} (not a finite number)")
    if value != int(value) or value < 1:
        raise InvalidParallelismError(f"{name} must be {valid}, got {value!r}")
    return int(value)


def _check_sequence_parallel(seq: Any, batch: Any, tp: int) -> None:
    """Sequence parallelism (every ``tp > 1`` job here, as torchtitan runs TP) shards each sequence along its
    length across the ``tp`` ranks: ``seq_len`` must be a multiple of ``tp`` (torchtitan asserts the same).
    A symbolic ``seq_len`` is taken on trust unless sympy can tell it is not a multiple.

    Raises:
        InvalidParallelismError: ``seq_len`` (an element of it, for arrays) not divisible by ``tp``.
    """
    if tp == 1:
        return
    if isinstance(seq, np.ndarray):
        bad = np.flatnonzero(np.mod(seq, tp).reshape(-1) != 0)
        if not bad.size:
            return
        first = _plain_size(seq.reshape(-1)[bad[0]].item())
        what = f"seq_len has {bad.size} element(s) not divisible by tp={tp}, e.g. {first}"
    elif is_symbolic(seq):
        if (seq % tp).is_zero is not False:
            return
        what = f"seq_len={short_repr(seq)} is not divisible by tp={tp}"
    else:
        if seq % tp == 0:
            return
        what = f"seq_len={_plain_size(seq)} is not divisible by tp={tp}"
    raise InvalidParallelismError(
        f"{what}: sequence parallelism (which perfmodel.train runs with every tp > 1, as torchtitan does) splits "
        f"each sequence's tokens across the {tp} TP ranks, so seq_len must be a multiple of {tp}; batch_per_gpu "
        f"(here {short_repr(_plain_size(batch))}) does not change that, the split is along the sequence. Use such "
        "a seq_len, or a tp that divides it"
    )


def _plain_size(x: Any) -> Any:
    """A size for a message: ``8`` rather than ``8.0``; arrays and symbols as they are."""
    return int(x) if isinstance(x, float) and x.is_integer() else x


def shard_layer(layer: LayerShape, tp: int) -> LayerShape:
    """The layer as one TP rank holds it: heads, KV heads and FFN width divided by ``tp`` (hidden and
    head_dim whole; :func:`check_config` has checked that ``tp`` divides them)."""
    if tp == 1:
        return layer
    return dataclasses.replace(
        layer,
        name=f"{layer.name}/tp{tp}",
        ffn=layer.ffn // tp,
        heads=layer.heads // tp,
        kv_heads=(layer.kv_heads or layer.heads) // tp,
        head_dim=layer.head_dim,
    )


def _converted(layer: LayerShape, tp: int, convert: Any) -> tuple[str, ...]:
    """Canonical names of the Linears ``convert`` puts in float8, eligibility judged on the layer as one of the
    ``tp`` ranks holds it (what the GEMMs run on): ``None`` leaves out the ones sharding makes ineligible.

    Raises:
        UnknownLinearError: a name that is not one of the layer's. IneligibleLinearError: a named Linear whose
            sharded K or N is not a multiple of 16.
    """
    from ..step.layer import converted_linears

    try:
        return converted_linears(shard_layer(layer, tp), convert)
    except IneligibleLinearError as exc:
        if tp == 1:
            raise
        raise IneligibleLinearError(
            f"{exc} (shapes as one of tp={tp} ranks holds them: TP splits heads, KV heads and ffn by {tp}; "
            "convert=None converts only the Linears that stay eligible)"
        ) from None


def check_config(
    sizes: ModelSizes,
    gpu: GPUSpec,
    *,
    n_gpus: Any,
    tp: Any,
    dp_replicate: Any,
    pp: Any,
    cp: Any,
    seq_len: Any,
    batch_per_gpu: Any,
    recipe: Any,
    float8_all_gather: Any,
    async_tp: Any,
    ac: str,
    convert: Any = None,
    mix_order_norm_bwd: Any = None,
    ep: Any = 1,
    compile: Any = False,
) -> TrainConfig:
    """Validate a job and derive its process groups (every problem a named error saying what is valid).
    ``ep``: expert-parallel degree of an MoE model (:func:`check_ep`: out of the FSDP shard ranks; 1 for dense).
    ``convert``: the layer's Linears in float8 (names as :func:`perfmodel.step.layer_time` takes them);
    ``None``: every one eligible as a TP rank holds it (K and N multiples of 16 after ``tp`` sharding; the
    others stay bf16 and are absent from :attr:`TrainConfig.converted`)."""
    n, t, r = _check_layout(sizes, n_gpus=n_gpus, tp=tp, dp_replicate=dp_replicate, pp=pp, cp=cp)
    seq = check_size("seq_len", seq_len)
    batch = check_size("batch_per_gpu", batch_per_gpu)
    _check_sequence_parallel(seq, batch, t)
    rec = get_recipe(recipe)
    _check_options(rec, t, float8_all_gather, async_tp, compile, mix_order_norm_bwd, ac)
    converted = _job_converted(sizes, gpu, rec, t, convert, seq, batch, ac)
    _check_fp8_all_gather(float8_all_gather, rec, converted)
    from .moe import check_ep, dense_converted

    dp = n // (t * r)
    e = check_ep(sizes, _int("ep", ep, "a positive integer (expert-parallel degree)"), tp=t, dp_shard=dp)
    fsdp, tpg, rep, ep_group, efsdp = _groups(sizes, gpu, n=n, tp=t, dp_replicate=r, dp_shard=dp, ep=e)
    return TrainConfig(
        sizes=sizes,
        gpu=gpu,
        n_gpus=n,
        tp=t,
        dp_shard=dp,
        dp_replicate=r,
        seq_len=seq,
        batch_per_gpu=batch,
        recipe=rec,
        float8_all_gather=float8_all_gather,
        async_tp=async_tp,
        ac=ac,
        converted=converted,
        fsdp=fsdp,
        tp_group=tpg,
        replicate=rep,
        mix_order_norm_bwd=mix_order_norm_bwd,
        compile=compile,
        ep=e,
        ep_group=ep_group,
        expert_fsdp=efsdp,
        dense_converted=dense_converted(sizes, rec, convert, converted),
    )


def _check_layout(
    sizes: ModelSizes, *, n_gpus: Any, tp: Any, dp_replicate: Any, pp: Any, cp: Any
) -> tuple[int, int, int]:
    """``(n_gpus, tp, dp_replicate)`` as ints: the degrees checked, no pipeline or context parallelism, whole TP groups
    and replicas, and ``tp`` dividing the heads, KV heads, ffn and vocabulary it shards.

    Raises:
        InvalidParallelismError: any of these; the message says what is valid."""
    n = _int("n_gpus", n_gpus, "a positive integer (GPUs in the job)")
    if n > MAX_GPUS:
        raise InvalidParallelismError(f"n_gpus must be at most {MAX_GPUS:,} (GPUs in the job), got {n:,}")
    t = _int("tp", tp, "a positive integer (tensor-parallel degree)")
    r = _int("dp_replicate", dp_replicate, "a positive integer (HSDP replicas; 1 = plain FSDP)")
    for name, v in (("pp", pp), ("cp", cp)):
        if _int(name, v, "a positive integer") != 1:
            what = "pipeline" if name == "pp" else "context"
            raise InvalidParallelismError(
                f"{name}={v}: {what} parallelism is not modeled by perfmodel.train (FSDP2, HSDP and TP are); "
                f"pass {name}=1"
            )
    if n % (t * r):
        raise InvalidParallelismError(
            f"n_gpus={n} is not divisible by tp·dp_replicate={t * r}: the job must split into whole TP groups "
            "and replicas"
        )
    lay = sizes.layer
    kv = lay.kv_heads or lay.heads
    for what, count in (("heads", lay.heads), ("kv_heads", kv), ("ffn", lay.ffn), ("vocab", sizes.vocab or t)):
        if count % t:
            raise InvalidParallelismError(
                f"{sizes.name}: {what}={count} is not divisible by tp={t}; TP shards them across the TP ranks "
                f"(valid tp: divisors of {count})"
            )
    return n, t, r


def _check_options(
    rec: Recipe,
    tp: int,
    float8_all_gather: Any,
    async_tp: Any,
    compile: Any,
    mix_order_norm_bwd: Any,
    ac: str,
) -> None:
    """The job's switches: bools (``mix_order_norm_bwd`` also ``None``), float8 all-gather only with the tensorwise
    recipe, async TP only with ``tp > 1``, ``ac`` one of :data:`perfmodel.step.layer.AC_MODES`.

    Raises:
        PerfModelError, InvalidParallelismError: one of them is wrong; the message says what is valid."""
    from ..step.layer import AC_MODES

    for flag, value in (("float8_all_gather", float8_all_gather), ("async_tp", async_tp), ("compile", compile)):
        if not isinstance(value, bool):
            raise PerfModelError(f"{flag} must be True or False, got {value!r}")
    if mix_order_norm_bwd is not None and not isinstance(mix_order_norm_bwd, bool):
        raise PerfModelError(f"mix_order_norm_bwd must be True, False or None, got {mix_order_norm_bwd!r}")
    _check_fp8_all_gather(float8_all_gather, rec, None)
    if async_tp and tp == 1:
        raise InvalidParallelismError("async_tp=True needs tp > 1 (it overlaps TP's collectives with its GEMMs)")
    if ac not in AC_MODES:
        raise PerfModelError(choices_message("ac", ac, AC_MODES))


def _job_converted(
    sizes: ModelSizes, gpu: GPUSpec, rec: Recipe, tp: int, convert: Any, seq: Any, batch: Any, ac: str
) -> tuple[str, ...]:
    """The decoder layer's Linears in float8 (:attr:`TrainConfig.converted`), after the MoE job's checks and the
    check that ``gpu`` runs the recipe's GEMMs.

    Raises:
        PerfModelError: ``gpu`` has no peak for a GEMM dtype of ``rec``; the errors of
            :func:`perfmodel.train.moe.check_moe_job` and of :func:`_converted` / ``moe_converted``."""
    from .moe import check_moe_job, moe_converted

    if sizes.is_moe:
        check_moe_job(sizes, seq, batch, ac)
    for d in rec.gemm_dtypes():
        if not gpu.supports(d):
            raise PerfModelError(f"recipe {rec.name!r} needs {d} GEMMs, which {gpu.name} has no peak for")
    if sizes.is_moe:
        return moe_converted(sizes, rec, convert)
    return () if rec.name == "bf16" else _converted(sizes.layer, tp, convert)


def _groups(
    sizes: ModelSizes, gpu: GPUSpec, *, n: int, tp: int, dp_replicate: int, dp_shard: int, ep: int
) -> tuple[Groups, Groups, Groups, Groups | None, Groups | None]:
    """The FSDP, TP, replicate, EP and expert-FSDP groups (the last two ``None`` for a dense model) with their GPUs
    per node (module doc), after checking that the job fills whole nodes.

    Raises:
        InvalidParallelismError: ``n`` GPUs with this ``tp`` do not fill whole nodes of ``gpu``'s interconnect."""
    t, r, dp, e = tp, dp_replicate, dp_shard, ep
    per_node = gpu.interconnect.gpus_per_node if gpu.interconnect is not None else 1
    fsdp = Groups(size=dp, per_node=max(1, min(dp, per_node // t)))
    tpg = Groups(size=t, per_node=min(t, per_node))
    rep = Groups(size=r, per_node=max(1, min(r, per_node // (t * dp))))
    ep_group = efsdp = None
    if sizes.is_moe:  # mesh dp_shard = (dp_shard / ep) x ep, EP ranks neighbours (torchtitan)
        ep_group = Groups(size=e, per_node=min(e, per_node))
        efsdp = Groups(size=dp // e, per_node=max(1, min(dp // e, per_node // e)))
    if n > per_node and (n % per_node or (per_node % t and t < per_node)):
        raise InvalidParallelismError(
            f"n_gpus={n} with tp={t} does not fill whole nodes of {per_node} {gpu.name} GPUs: the model needs every "
            f"node to hold the same share of each process group (use a multiple of {per_node} GPUs and a tp that "
            f"divides {per_node} or is a multiple of it)"
        )
    return fsdp, tpg, rep, ep_group, efsdp


def _check_fp8_all_gather(float8_all_gather: bool, rec: Recipe, converted: tuple[str, ...] | None) -> None:
    """float8 all-gather needs the tensorwise recipe and (``converted`` given) at least one converted Linear.

    Raises:
        PerfModelError: either is missing; the message says what is needed."""
    if float8_all_gather and rec.name != "tensorwise":
        raise PerfModelError(
            f"float8_all_gather=True needs recipe='tensorwise' (torchao casts FSDP2 all-gathers to float8 with "
            f"tensorwise scales only), got recipe={rec.name!r}"
        )
    if float8_all_gather and converted is not None and not converted:
        raise PerfModelError("float8_all_gather=True needs at least one Linear in float8 (convert= names none)")


def with_convert(cfg: TrainConfig, convert: Any, *, float8_all_gather: bool) -> TrainConfig:
    """``cfg`` (already checked by :func:`check_config`) with other Linears in float8 and float8 all-gather on or
    off: the checks that depend on them are repeated, the rest of the job is not checked or built again.

    Raises:
        UnknownLinearError, IneligibleLinearError: as :func:`check_config`. PerfModelError: float8 all-gather
            without the tensorwise recipe or a converted Linear.
    """
    if not isinstance(float8_all_gather, bool):
        raise PerfModelError(f"float8_all_gather must be True or False, got {float8_all_gather!r}")
    _check_fp8_all_gather(float8_all_gather, cfg.recipe, None)
    from .moe import dense_converted, moe_converted

    if cfg.sizes.is_moe:
        converted = moe_converted(cfg.sizes, cfg.recipe, convert)
    else:
        converted = () if cfg.recipe.name == "bf16" else _converted(cfg.sizes.layer, cfg.tp, convert)
    _check_fp8_all_gather(float8_all_gather, cfg.recipe, converted)
    dense = dense_converted(cfg.sizes, cfg.recipe, convert, converted)
    return dataclasses.replace(cfg, converted=converted, float8_all_gather=float8_all_gather, dense_converted=dense)
