"""The decoder-layer step model: :func:`layer_time`, :func:`best_convert` and their types (public face:
:mod:`perfmodel.step`, whose module doc has the formulas)."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable
from typing import Any

from .._backend import check_compatible, check_size, describe_value, namespace
from ..errors import (
    IneligibleLinearError,
    ModuleShapeError,
    MoEPresetError,
    PerfModelError,
    UnknownLinearError,
    UnsupportedFormatError,
    UnsupportedLayerError,
    choices_message,
)
from ..float8.recipes import Recipe, get_recipe
from ..models.base import ExpectedError, Provenance
from ..models.registry import ModelLike, resolve
from ..models.tiles import TileModel
from ..presets import LayerShape, ModelPreset, get_preset
from ..specs.gpu import GPULike, GPUSpec, get_gpu
from .kernels import RawKernel, StepKernel, price, raw_kernels, step_kind
from .names import resolve_convert
from .params import LAYER_ASSUMPTIONS, STEP_FACTOR_KINDS, LayerParams, shipped

__all__ = [
    "AC_MODES",
    "FP8_ALIGN",
    "MLP_GROUPS",
    "MLP_KERNELS",
    "IneligibleLinearError",
    "LayerTime",
    "ModuleShapeError",
    "UnsupportedLayerError",
    "best_convert",
    "choose_groups",
    "eligible_groups",
    "layer_time",
    "resolve_layer",
]

#: activation checkpointing modes
AC_MODES: tuple[str, ...] = ("none", "selective", "full")
#: float8 GEMMs need K and N multiples of 16 (torch._scaled_mm)
FP8_ALIGN = 16
#: the MLP's Linear groups and its own kernels, left out by ``layer_time(..., mlp=False)`` (the attention half)
MLP_GROUPS: frozenset[str] = frozenset({"w13", "w1", "w2"})
MLP_KERNELS: frozenset[str] = frozenset({"activation", "activation_bwd"})


def resolve_layer(layer: str | ModelPreset | LayerShape) -> tuple[LayerShape, int]:
    """``(LayerShape, number of such layers in the model)`` from a preset name, a preset or a LayerShape (1).

    Raises:
        UnknownPresetError, UnsupportedLayerError (a preset without a dense decoder layer, or another type).
    """
    if isinstance(layer, LayerShape):
        return layer, 1
    if isinstance(layer, (str, ModelPreset)):
        preset = get_preset(layer)
        if preset.layer is None and preset.moe is not None:
            raise MoEPresetError(
                f"{preset.name} is an MoE model, not a dense decoder layer ({preset.layer_note}). Its MoE layer: "
                f"perfmodel.step.layer_time({preset.name!r}, ...) (GQA attention presets); its routed experts: "
                f"perfmodel.moe.expert_block_time({preset.name!r}, tokens=...) and "
                f"perfmodel.moe.speedup; its Linears one by one: perfmodel.float8.report({preset.name!r}, ...)"
            )
        if preset.layer is None:
            raise UnsupportedLayerError(
                f"{preset.name} has no decoder layer the step model prices: {preset.layer_note or 'no LayerShape'}. "
                f"Its Linears one by one: perfmodel.float8.report({preset.name!r}, ...)"
            )
        return preset.layer, preset.layers
    raise UnsupportedLayerError(
        f"layer must be a preset name, a ModelPreset or a perfmodel.presets.LayerShape, got {type(layer).__name__}"
    )


def eligible_groups(layer: LayerShape) -> tuple[str, ...]:
    """Groups whose Linears all have K and N multiples of 16 (float8 GEMMs need it), in layer order."""
    shapes = {lin.name: lin for lin in layer.linears()}
    return tuple(
        g
        for g, names in layer.groups.items()
        if all(shapes[n].in_features % FP8_ALIGN == 0 and shapes[n].out_features % FP8_ALIGN == 0 for n in names)
    )


#: A compiled layer step's host (launch) time measured on the H200 machines' CPUs: 2.0-2.8 ms in bf16, 2.7-5.6 ms
#: with float8 Linears on one (``host_step_s`` of benchmarks/data/h200_2026-12-01/h200_layer_host_2026-12-01.json),
#: 3.0-3.7 and 3.1-5.9 ms on another, moving by 22-42 % between processes (``h200_layer_hostrep_*``). A step
#: with less GPU time than HOST_BOUND_KERNEL_S may wait for its launches (docs/step.md, "The steps are not host-free").
HOST_STEP_S = (2.0e-3, 5.9e-3)
HOST_BOUND_KERNEL_S = 7e-3


@dataclasses.dataclass(frozen=True, kw_only=True)
class LayerTime:
    """Predicted fwd + bwd step of one decoder layer.

    ``step_s = gemm_s + cast_s + attention_s + other_s`` (seconds of a step timed with CUDA events back to
    back); ``kernel_s`` is the summed kernel time a profiler reports; ``in_step_factor = step_s / kernel_s``;
    ``step_factors``: kernel kind -> the factor its kernels' time gets in this step (``1 + (f − 1) ·
    min(1, boost_window / kernel_s)`` with ``f`` the kind's
    :attr:`~perfmodel.step.params.LayerParams.step_factors`); ``recompute_s`` the part of ``step_s`` that
    activation checkpointing re-runs. ``kernels`` lists every kernel with its kernel seconds (``time_s``)
    and step seconds (``step_s``).
    """

    layer: LayerShape
    gpu: GPUSpec
    seq_len: Any
    batch: Any
    tokens: Any
    recipe: Recipe
    converted: tuple[str, ...]
    groups: tuple[str, ...]
    ac: str
    kernels: tuple[StepKernel, ...]
    gemm_s: Any
    cast_s: Any
    attention_s: Any
    other_s: Any
    recompute_s: Any
    kernel_s: Any
    step_s: Any
    in_step_factor: Any
    step_factors: dict[str, Any]
    time_model: str
    provenance: Provenance

    def __repr__(self) -> str:
        d = describe_value
        conv = ", ".join(self.converted) or "none"
        return (
            f"LayerTime({self.layer.name} on {self.gpu.name}, batch {d(self.batch)} x seq {d(self.seq_len)}, "
            f"{self.recipe.name} (converted: {conv}): step {d(self.step_s, 's')} (GEMMs {d(self.gemm_s, 's')}, casts "
            f"{d(self.cast_s, 's')}, attention {d(self.attention_s, 's')}, other {d(self.other_s, 's')}); "
            f"{len(self.kernels)} kernels; {self.provenance.kind})"
        )

    def __str__(self) -> str:
        return f"{self!r}\n  provenance: {self.provenance.line()}\n  every kernel: .table()"

    @property
    def host_bound_risk(self) -> Any:
        """Whether this step's GPU time (``kernel_s``) is under :data:`HOST_BOUND_KERNEL_S`: then the host's launches
        (2.0–5.9 ms per compiled step, measured on the H200 machines' CPUs) can decide its CUDA-event time, which the
        model does not price; one such step's measured float8 savings spread over ~70 points of the bf16 step across
        runs (processes and machines; docs/step.md); with CUDA graphs they came within 6 points of the model's. A
        bool (a bool array, a sympy condition for arrays and symbols)."""
        k = self.kernel_s
        if hasattr(k, "free_symbols"):
            import sympy

            return sympy.Lt(k, HOST_BOUND_KERNEL_S)
        return k < HOST_BOUND_KERNEL_S

    @property
    def parts(self) -> dict[str, Any]:
        """Part -> step seconds (they add up to ``step_s``)."""
        return {"gemm": self.gemm_s, "cast": self.cast_s, "attention": self.attention_s, "other": self.other_s}

    def to_dict(self) -> dict[str, Any]:
        """Plain types (JSON-ready; numeric shapes only)."""
        return {
            "layer": self.layer.to_dict(),
            "gpu": self.gpu.name,
            "seq_len": _plain(self.seq_len),
            "batch": _plain(self.batch),
            "tokens": _plain(self.tokens),
            "recipe": self.recipe.name,
            "converted": list(self.converted),
            "groups": list(self.groups),
            "ac": self.ac,
            "step_s": _plain(self.step_s),
            "kernel_s": _plain(self.kernel_s),
            "parts_s": {k: _plain(v) for k, v in self.parts.items()},
            "recompute_s": _plain(self.recompute_s),
            "in_step_factor": _plain(self.in_step_factor),
            "step_factors": {k: _plain(v) for k, v in self.step_factors.items()},
            "time_model": self.time_model,
            "provenance": self.provenance.to_dict(),
        }

    def table(self) -> str:
        """A readable breakdown by part and by kernel (numeric shapes only: a named error for a result of arrays or
        symbols, whose fields hold the arrays and expressions themselves)."""
        if getattr(self.step_s, "ndim", 0) or hasattr(self.step_s, "free_symbols"):
            raise PerfModelError(
                "LayerTime.table() prints one configuration; this result holds arrays or symbols (seq_len / batch): "
                "read its fields (step_s, parts, kernels) or call layer_time with numbers"
            )
        conv = ", ".join(self.converted) or "none"
        rows = [
            f"{self.layer.name} on {self.gpu.name}: batch {self.batch} x seq {self.seq_len}, {self.recipe.name} "
            f"({conv}), ac {self.ac} — step {float(self.step_s) * 1e3:.3f} ms ({self.time_model} model)",
        ]
        for part, t in self.parts.items():
            rows.append(f"  {part:<10} {float(t) * 1e3:9.3f} ms")
        for k in self.kernels:
            rows.append(f"    {k.part:<9} {k.phase:<9} {k.name:<46} {float(k.time_s) * 1e6:10.1f} us")
        return "\n".join(rows)


def _plain(value: Any) -> Any:
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def _check_ac(ac: str) -> str:
    key = ac.strip().lower() if isinstance(ac, str) else ac
    if key not in AC_MODES:
        raise PerfModelError(choices_message("activation checkpointing mode", ac, AC_MODES))
    return key


def _recomputed(raw: list[RawKernel], layer: LayerShape, ac: str) -> list[RawKernel]:
    """The forward kernels activation checkpointing re-runs in backward."""
    if ac == "none":
        return []
    fwd = [k for k in raw if k.phase == "fwd"]
    if ac == "full":
        # the backward needs every forward output but the layer's last two: w2's output and the residual add
        # that consumes it (AOT autograd's partitioner recomputes only what backward reads)
        return [k for k in fwd if k.name not in ("w2.output", "residual")]
    # selective (torchtitan op-SAC): SDPA and every other Linear output saved; the rest re-runs
    order = [lin.name for lin in layer.linears()]
    rerun_gemm = {f"{n}.output" for i, n in enumerate(order) if i % 2 == 1}
    return [k for k in fwd if (k.kind != "gemm" or k.name in rerun_gemm) and not k.kind.startswith("attention")]


def _provenance(prov: Provenance, params: LayerParams, spec: GPUSpec, *, tiles: bool = False) -> Provenance:
    held = dict(params.residuals).get("heldout", {})
    layer_src = (
        f"layer parameters (attention and elementwise rates, fused casts, in-layer and in-step factors) fitted on "
        f"the same {params.reference.name} data: {params.source}"
    )
    if tiles:  # the layer hold-out was scored with the calibrated model's GEMMs, not the tile model's
        expected = dataclasses.replace(
            prov.expected_error,
            basis=f"{prov.expected_error.basis}; standalone GEMMs — layer steps were validated with the default "
            "calibrated model, not with the tile model (docs/step.md)",
        )
    elif prov.kind == "measured" and held:
        expected = ExpectedError(
            speedup_pct=held.get("speedup_mdape_pct"),
            basis=f"{params.reference.name} decoder layers held out by size, float8 step speedup (docs/step.md)",
        )
    else:
        expected = dataclasses.replace(
            prov.expected_error,
            basis=f"{prov.expected_error.basis}; Linear steps — layer steps validated on the "
            f"{params.reference.name} only (docs/step.md)",
        )
    same = params.reference.matches(spec)
    return dataclasses.replace(
        prov,
        source=f"{prov.source}; {layer_src}",
        summary=f"{prov.summary}; decoder-layer model fitted on {params.reference.name} layer steps",
        assumptions=prov.assumptions if same else (*prov.assumptions, *LAYER_ASSUMPTIONS),
        expected_error=expected,
    )


def converted_linears(lay: LayerShape, convert: str | Iterable[str] | None) -> tuple[str, ...]:
    """Canonical names (layer order) of the Linears ``convert`` puts in float8: ``None`` — every eligible
    one (K and N multiples of :data:`FP8_ALIGN`); names as :func:`layer_time` takes them.

    Raises:
        UnknownLinearError: a name that is not one of the layer's; IneligibleLinearError: a named Linear
            float8 cannot run.
    """
    chosen = resolve_convert(lay, convert)
    shapes = {lin.name: lin for lin in lay.linears()}
    bad = sorted(n for n in chosen if shapes[n].in_features % FP8_ALIGN or shapes[n].out_features % FP8_ALIGN)
    if bad and convert is not None:
        raise IneligibleLinearError(
            f"{lay.name}: {', '.join(f'{n} ({shapes[n].in_features}x{shapes[n].out_features})' for n in bad)} "
            f"cannot run in float8: K and N must be multiples of {FP8_ALIGN}. Leave them out of convert="
        )
    return tuple(lin.name for lin in lay.linears() if lin.name in chosen and lin.name not in bad)


def layer_time(
    layer: str | ModelPreset | LayerShape,
    *,
    gpu: GPULike,
    seq_len: Any,
    batch: Any = 1,
    recipe: str | Recipe | None = "bf16",
    convert: str | Iterable[str] | None = None,
    ac: str = "none",
    time_model: ModelLike = None,
    layer_params: LayerParams | None = None,
    mix_order_norm_bwd: bool | None = None,
    mlp: bool = True,
) -> LayerTime:
    """Predicted fwd + bwd step of one decoder layer on ``batch · seq_len`` tokens, seconds, by part.

    Dense layers only: :func:`perfmodel.step.layer_time` (:mod:`perfmodel.step.dispatch`) sends MoE layers to
    :func:`perfmodel.step.moe_layer.moe_layer_time`.

    Args:
        layer: a preset name (``"llama3-8b"``), a :class:`~perfmodel.presets.ModelPreset` or a
            :class:`~perfmodel.presets.LayerShape`.
        gpu: a GPU name or spec.
        seq_len, batch: sequence length and sequences per step (int, float, numpy array or sympy).
        recipe: ``"bf16"`` (or ``None``) or a float8 recipe of :data:`perfmodel.float8.recipes.RECIPES`.
        convert: the Linears in ``recipe``: group names (``"qkv"``, ``"o"``, ``"w13"``, ``"w2"``), canonical
            (``"wq"``), torchtitan (``"attention.wq"``) or Hugging Face (``"q_proj"``) names; ``None``: every
            eligible Linear (K and N multiples of 16). Ignored for bf16.
        ac: activation checkpointing, one of :data:`AC_MODES`.
        time_model: overrides the GPU's time model (``"roofline"``, ``"original"``, ``"calibrated"`` or a
            model object), as ``model=`` does in :mod:`perfmodel.float8`.
        layer_params: overrides the shipped layer parameters (:mod:`perfmodel.calibrate.layer` fits them).
        mix_order_norm_bwd: whether torch.compile has inductor's *mix-order reduction* (one persistent kernel for
            the RMSNorm backward and its weight gradient; torch 2.10 and later, pytorch/pytorch#165370), into
            which it fuses tensorwise q/k/v's transposed float8 cast at batch 1 — a kernel ~10x slower than the
            bf16 one (:func:`perfmodel.step.kernels.mix_order_cast`, ``docs/step.md``). ``None`` (default): as
            the stack the layer parameters were fitted on (torch 2.11: yes); ``False`` for torch 2.9 and older.
        mlp: ``False`` prices the layer without its MLP (the attention half: norms, q/k/v/o, RoPE, SDPA, the
            residual adds; no w1/w3/w2, activation or MLP casts, step factors from the half's own kernel time), as
            the MoE path prices the attention of an MoE layer.

    Raises:
        UnknownPresetError, UnsupportedLayerError, UnknownLinearError, IneligibleLinearError,
        UnknownRecipeError, UnsupportedFormatError, InvalidShapeError, PerfModelError (bad ``ac``).
    """
    if not isinstance(mlp, bool):
        raise PerfModelError(f"mlp must be True or False, got {mlp!r}")
    lay, _ = resolve_layer(layer)
    seq_len, batch = check_size("seq_len", seq_len), check_size("batch", batch)
    check_compatible(seq_len=seq_len, batch=batch)
    check_size("tokens per step (batch x seq_len)", batch * seq_len)
    spec, rec, ac = get_gpu(gpu), get_recipe(recipe), _check_ac(ac)
    converted = _converted_set(lay, spec, rec, convert, mlp)
    tm, prov = resolve(spec, time_model)
    params = _layer_params(layer_params)
    calibrated = getattr(tm, "reference", None) is not None
    # the tile model prices GEMMs itself and casts with the calibrated model (its base): cast factors, no GEMM one
    tiles = isinstance(tm, TileModel)
    calibrated_casts = calibrated or (tiles and getattr(tm.base, "reference", None) is not None)
    if mix_order_norm_bwd is not None and not isinstance(mix_order_norm_bwd, bool):
        raise PerfModelError(f"mix_order_norm_bwd must be True, False or None, got {mix_order_norm_bwd!r}")
    raw = raw_kernels(
        lay,
        batch=batch,
        seq_len=seq_len,
        recipe=rec,
        converted=converted,
        spec=spec,
        time_model=tm,
        mix_order=mix_order_norm_bwd,
    )
    if not mlp:
        raw = [k for k in raw if k.group not in MLP_GROUPS and k.name not in MLP_KERNELS]
    again = _recomputed(raw, lay, ac)
    kernels, kernel_s, factors = _step_kernels(
        raw, again, params, spec, calibrated=calibrated, calibrated_casts=calibrated_casts
    )
    return _layer_result(
        lay,
        spec,
        seq_len=seq_len,
        batch=batch,
        recipe=rec,
        converted=converted,
        ac=ac,
        kernels=kernels,
        kernel_s=kernel_s,
        factors=factors,
        time_model=str(getattr(tm, "name", type(tm).__name__)),
        provenance=_provenance(prov, params, spec, tiles=tiles),
    )


def _converted_set(
    lay: LayerShape, spec: GPUSpec, rec: Recipe, convert: str | Iterable[str] | None, mlp: bool
) -> frozenset[str]:
    """The Linears :func:`layer_time` runs in ``rec`` (none for bf16; without the MLP's when ``mlp`` is off), after
    checking that ``spec`` has the recipe's GEMMs.

    Raises:
        UnsupportedFormatError: ``spec`` has no peak for a GEMM dtype of ``rec``; UnknownLinearError,
            IneligibleLinearError: as :func:`converted_linears`."""
    for d in rec.gemm_dtypes():
        if not spec.supports(d):
            raise UnsupportedFormatError(f"recipe {rec.name!r} needs {d} GEMMs, which {spec.name} has no peak for")
    converted = frozenset() if rec.name == "bf16" else frozenset(converted_linears(lay, convert))
    if not mlp:
        converted = converted - {n for g in MLP_GROUPS for n in lay.groups.get(g, ())}
    return converted


def _layer_params(layer_params: LayerParams | None) -> LayerParams:
    """``layer_params``, or the shipped ones for ``None``.

    Raises:
        PerfModelError: not a :class:`LayerParams`."""
    params = layer_params if layer_params is not None else shipped()
    if not isinstance(params, LayerParams):
        raise PerfModelError(
            f"layer_params must be a LayerParams (perfmodel.calibrate.layer.fit, or LayerParams.from_dict of a fitted "
            f"file), got {type(params).__name__}"
        )
    return params


def _step_kernels(
    raw: list[RawKernel],
    again: list[RawKernel],
    params: LayerParams,
    spec: GPUSpec,
    *,
    calibrated: bool,
    calibrated_casts: bool,
) -> tuple[list[StepKernel], Any, dict[str, Any]]:
    """The step's kernels priced (``raw`` as they are, ``again`` as ``"recompute"``), their summed kernel seconds,
    and each step-factor kind's factor (``1 + (f − 1) · min(1, boost_window / kernel_s)``)."""
    priced = [
        (tag, k, price(k, params, spec, calibrated=calibrated, calibrated_casts=calibrated_casts))
        for tag, ks in (("", raw), ("recompute", again))
        for k in ks
    ]
    kernel_s = sum((t for _, _, t in priced), 0)
    # the share of the step that a step starting from idle runs at its first clocks (module doc), and the factor
    # each kind's kernels get from it
    boosted = 1 if params.boost_window_s is None else namespace(kernel_s).min(1, params.boost_window_s / kernel_s)
    factors = {kind: 1 + (params.step_factor(kind) - 1) * boosted for kind in STEP_FACTOR_KINDS}
    kernels = [
        StepKernel(
            name=k.name,
            part=k.part,
            phase=k.phase if tag == "" else tag,
            kind=k.kind,
            time_s=t,
            group=k.group,
            bytes=k.bytes,
            flops=k.flops,
            step_s=t * factors[step_kind(k)],
        )
        for tag, k, t in priced
    ]
    return kernels, kernel_s, factors


def _layer_result(
    lay: LayerShape,
    spec: GPUSpec,
    *,
    seq_len: Any,
    batch: Any,
    recipe: Recipe,
    converted: frozenset[str],
    ac: str,
    kernels: list[StepKernel],
    kernel_s: Any,
    factors: dict[str, Any],
    time_model: str,
    provenance: Provenance,
) -> LayerTime:
    """The :class:`LayerTime` of priced ``kernels``: step seconds by part, the recomputed share, the converted
    Linears and whole groups in layer order."""
    sums = {p: sum((k.step_s for k in kernels if k.part == p), 0) for p in ("gemm", "cast", "attention", "other")}
    step_s = sums["gemm"] + sums["cast"] + sums["attention"] + sums["other"]
    recompute = sum((k.step_s for k in kernels if k.phase == "recompute"), 0)
    groups = tuple(g for g, names in lay.groups.items() if names and all(n in converted for n in names))
    return LayerTime(
        layer=lay,
        gpu=spec,
        seq_len=seq_len,
        batch=batch,
        tokens=batch * seq_len,
        recipe=recipe,
        converted=tuple(lin.name for lin in lay.linears() if lin.name in converted),
        groups=groups,
        ac=ac,
        kernels=tuple(kernels),
        gemm_s=sums["gemm"],
        cast_s=sums["cast"],
        attention_s=sums["attention"],
        other_s=sums["other"],
        recompute_s=recompute,
        kernel_s=kernel_s,
        step_s=step_s,
        in_step_factor=step_s / kernel_s,
        step_factors=factors,
        time_model=time_model,
        provenance=provenance,
    )


def _subsets(groups: tuple[str, ...]) -> list[tuple[str, ...]]:
    return [c for n in range(len(groups) + 1) for c in itertools.combinations(groups, n)]


def best_convert(
    layer: str | ModelPreset | LayerShape,
    *,
    gpu: GPULike,
    seq_len: Any,
    batch: Any = 1,
    recipe: str | Recipe = "tensorwise",
    ac: str = "none",
    min_gain: float = 0.0,
    candidates: Iterable[Iterable[str]] | None = None,
    time_model: ModelLike = None,
    layer_params: LayerParams | None = None,
) -> tuple[str, ...]:
    """The groups of Linears to convert to ``recipe``: the subset of the eligible groups with the shortest
    predicted step (every subset is priced as a whole, so shared casts and fusions count), or ``()`` when no
    subset is at least ``min_gain`` (a fraction: 0.02 = 2 %) faster than bf16. Ties go to fewer groups.

    ``candidates`` restricts the choice to the given subsets (each an iterable of group names), e.g. the
    subsets that were measured. Needs numeric ``seq_len`` and ``batch``. Dense layers; MoE ones:
    :func:`perfmodel.step.best_convert` (:mod:`perfmodel.step.dispatch`).
    """
    lay, _ = resolve_layer(layer)
    opts = dict(gpu=gpu, seq_len=seq_len, batch=batch, ac=ac, time_model=time_model, layer_params=layer_params)

    def step_of(sub: tuple[str, ...]) -> float:
        if not sub:
            return float(layer_time(lay, recipe="bf16", **opts).step_s)
        return float(layer_time(lay, recipe=recipe, convert=sub, **opts).step_s)

    return choose_groups(
        lay.name, tuple(lay.groups), eligible_groups(lay), step_of,
        seq_len=seq_len, batch=batch, min_gain=min_gain, candidates=candidates,
    )  # fmt: skip


def choose_groups(
    name: str,
    groups: tuple[str, ...],
    elig: tuple[str, ...],
    step_of: Any,
    *,
    seq_len: Any,
    batch: Any,
    min_gain: float,
    candidates: Iterable[Iterable[str]] | None,
) -> tuple[str, ...]:
    """:func:`best_convert`'s search over subsets of ``elig`` (or ``candidates``), ``step_of(subset)`` -> step
    seconds (``()``: bf16); shared by the dense and the MoE path."""
    if namespace(seq_len, batch).name == "sympy" or any(getattr(v, "ndim", 0) for v in (seq_len, batch)):
        raise PerfModelError("best_convert needs one number each for seq_len and batch (no arrays or symbols)")
    ok = isinstance(min_gain, (int, float)) and not isinstance(min_gain, bool) and 0 <= min_gain < 1
    if not ok:
        raise PerfModelError(f"min_gain must be a fraction in [0, 1) (0.02 = 2 % faster than bf16), got {min_gain!r}")
    base = step_of(())
    if candidates is None:
        subsets = _subsets(elig)
    else:
        if isinstance(candidates, (str, bytes)) or not isinstance(candidates, Iterable):
            raise PerfModelError(
                f"candidates must be an iterable of subsets of groups, e.g. [('qkv',), ('w13', 'w2')], got "
                f"{candidates!r}"
            )
        subsets = []
        for c in candidates:
            if isinstance(c, str):
                c = (c,)  # one group named alone
            elif not isinstance(c, Iterable):
                raise PerfModelError(f"each candidate must be a group name or an iterable of them, got {c!r}")
            sub = tuple(g for g in groups if g in set(c))
            unknown = set(c) - set(groups)
            if unknown:
                raise UnknownLinearError(choices_message(f"group of {name!r}", sorted(unknown)[0], groups))
            subsets.append(sub)
    best, best_t = (), base
    for sub in sorted(subsets, key=len):
        if not sub or any(g not in elig for g in sub):
            continue
        t = step_of(sub)
        if t < best_t * (1 - 1e-9):
            best, best_t = sub, t
    return best if best and base / best_t >= 1 + min_gain else ()
