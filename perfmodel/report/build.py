""":func:`report`: price every Linear shape in bf16 and each recipe, pick per shape, sum the step."""

from __future__ import annotations

from collections.abc import Iterable
from types import MappingProxyType
from typing import Any

import numpy as np

from .._backend import check_flag, check_ratio, time_model_arg
from ..errors import PerfModelError
from ..models.estimated import ESTIMATES
from ..models.registry import ModelLike
from ..presets import ModelPreset, get_preset
from ..specs.gpu import GPUS, GPULike, GPUSpec, get_gpu
from ..specs.spec import attached_time_model
from .inputs import _SHAPE, _entries, _group, _one_size
from .result import Report
from .rows import _ALIGN, ReportRow, ReportTotals

__all__ = ["report"]


def report(
    model_or_shapes: Any,
    *,
    tokens: int | None = None,
    gpu: GPULike = "H100",
    recipes: Iterable[str] | None = None,
    min_speedup: float = 1.0,
    time_model: ModelLike = None,
    model: ModelLike = None,
    fuse_input_with_prev: bool = False,
    fuse_grad_output_with_prev: bool = False,
    cache_weight_cast: bool = False,
    dynamic_shapes: bool = False,
    seq_len: int | None = None,
    batch: int = 1,
) -> Report:
    """Predict, per distinct Linear shape, whether a float8 recipe beats bf16, and by how much per step.

    Args:
        model_or_shapes: a ``torch.nn.Module`` (its ``nn.Linear`` modules, identical shapes grouped),
            a preset name or :class:`~perfmodel.presets.ModelPreset`, a mapping name -> ``(K, N)``,
            or an iterable of ``(K, N)`` tuples or ``"KxN"`` strings (K = in_features, N = out_features).
        tokens: rows each Linear sees per step (batch × sequence length); MoE experts of a preset
            see ``tokens · top_k / experts``.
        gpu: name or :class:`~perfmodel.specs.gpu.GPUSpec`.
        recipes: candidate recipes; default every torchao recipe ``gpu`` supports.
        min_speedup: enable a recipe on a shape only from this fwd+bwd speedup on.
        time_model: time model override (``"roofline"``, ``"original"``, ``"calibrated"`` or an object); ``model=``
            is its deprecated old name (``model_or_shapes`` is the network).
        fuse_input_with_prev, fuse_grad_output_with_prev, cache_weight_cast, dynamic_shapes: see
            :class:`perfmodel.float8.recipes.CastOptions`.
        seq_len, batch: the step's sequence length and batch size per GPU: ``tokens`` defaults to
            ``batch × seq_len``, and a dense preset (or a :class:`~perfmodel.presets.LayerShape`) is also priced as
            a whole decoder layer by :mod:`perfmodel.step` (attention, norms, casts that fuse or share an
            input), with the groups of Linears to convert (:attr:`Report.step`).

    Raises:
        UnknownGPUError, UnknownRecipeError, UnsupportedFormatError (recipe not on ``gpu``),
        UnknownPresetError, InvalidShapeError, PerfModelError (bad ``min_speedup``, nothing to analyse).
    """
    from .. import float8  # here, not at the top: float8 re-exports report (no import cycle either way)

    model = time_model_arg(time_model, model, "report")  # below, ``model`` is the time model
    tokens, seq_len, batch = _step_size(tokens, seq_len, batch)
    min_speedup = check_ratio("min_speedup", min_speedup)
    flags = {
        name: check_flag(name, value)
        for name, value in (
            ("fuse_input_with_prev", fuse_input_with_prev),
            ("fuse_grad_output_with_prev", fuse_grad_output_with_prev),
            ("cache_weight_cast", cache_weight_cast),
            ("dynamic_shapes", dynamic_shapes),
        )
    }
    spec = get_gpu(gpu)
    names, no_float8 = _recipe_names(recipes, spec)
    title, entries = _entries(model_or_shapes, tokens)
    grouped = _group(entries)
    M = np.array([g[3] for g in grouped], dtype=np.int64)
    K = np.array([g[1] for g in grouped], dtype=np.int64)
    N = np.array([g[2] for g in grouped], dtype=np.int64)
    counts = np.array([g[4] for g in grouped], dtype=np.int64)
    opts = dict(flags, time_model=model)
    base, times = _linear_times(M, K, N, spec, names, model, opts)
    eligible = (K % _ALIGN == 0) & (N % _ALIGN == 0)
    pays = {r: eligible & (times["bf16"] / times[r] >= min_speedup) for r in names}
    padded = _padded_times(M, K, N, eligible, spec, names, model, opts)

    bar = float8.speedup_error_bar(spec, time_model=model) if names else None
    rows = _rows(grouped, names, times, eligible, pays, padded, bar, min_speedup, spec)
    totals = _totals(rows, names, times, eligible, pays, counts)
    return Report(
        title=title,
        gpu=spec.name,
        tokens=tokens,
        time_model=base.model,
        recipes=tuple(names),
        min_speedup=min_speedup,
        rows=tuple(rows),
        totals=totals,
        **flags,
        provenance=base.provenance,
        speedup_error_bar=bar,
        no_float8_reason=no_float8,
        time_model_arg=model if isinstance(model, str) else None,
        calibration_attached=attached_time_model(spec) is not None,
        gpu_modified=spec != GPUS.get(spec.name),
        seq_len=seq_len,
        batch=batch if seq_len is not None else 1,
        **(_steps(model_or_shapes, spec, names, seq_len, batch, model, min_speedup) if seq_len is not None else {}),
    )


def _step_size(tokens: Any, seq_len: Any, batch: Any) -> tuple[int, int | None, Any]:
    """``(tokens, seq_len, batch)`` of the step, checked: ``tokens`` defaults to ``batch × seq_len`` and must equal
    it when both are given; without ``seq_len``, ``batch`` must stay 1 (``seq_len`` stays ``None``)."""
    if seq_len is not None:
        seq_len, batch = _one_size("seq_len", seq_len), _one_size("batch", batch)
        if tokens is None:
            tokens = seq_len * batch
        elif _one_size("tokens", tokens) != seq_len * batch:
            raise PerfModelError(
                f"tokens={tokens} but batch x seq_len = {batch} x {seq_len} = {batch * seq_len}: give one or the other"
            )
    elif tokens is None:
        raise PerfModelError("report needs tokens= (tokens per step) or seq_len= (and batch=, default 1)")
    elif _one_size("batch", batch) != 1:
        raise PerfModelError(
            f"batch={batch} needs seq_len= (tokens per step = batch x seq_len); with tokens= give the tokens per step "
            "and leave batch at 1"
        )
    return _one_size("tokens", tokens), seq_len, batch


def _recipe_names(recipes: Iterable[str] | None, spec: GPUSpec) -> tuple[list[str], str]:
    """The float8 recipes to compare with bf16 (canonical names, in order, no duplicates, no ``"bf16"``) and, where
    ``recipes`` is left out and ``spec`` runs none, why (``""`` otherwise)."""
    from .. import float8  # as in report()

    no_float8 = ""
    if recipes is None:
        names = [r for r in float8.supported_recipes(spec) if float8.RECIPES[r].torchao_name]
        if not names:
            no_float8 = _no_float8_reason(spec)
    else:
        names = [float8.get_recipe(r).name for r in ([recipes] if isinstance(recipes, str) else recipes)]
    names = list(dict.fromkeys(r for r in names if r != "bf16"))
    if not names and not no_float8:
        candidates = [r for r in float8.supported_recipes(spec) if r != "bf16"]
        raise PerfModelError(
            f"recipes {list(recipes or [])!r} leave no float8 recipe to compare with bf16; pass some of "
            f"{', '.join(candidates) or '(none: ' + spec.name + ' has no float8)'}, or leave recipes out for the "
            "default"
        )
    return names, no_float8


def _rows(
    grouped: list[Any],
    names: list[str],
    times: dict[str, np.ndarray],
    eligible: np.ndarray,
    pays: dict[str, np.ndarray],
    padded: dict[int, dict[str, Any]],
    bar: Any,
    min_speedup: float,
    spec: GPUSpec,
) -> list[ReportRow]:
    """One :class:`ReportRow` per distinct shape: its times, the recipe chosen (or why bf16 stays) and whether the
    speedup error bar makes it a close call."""
    rows = []
    for i, (row_names, k, n, m, count) in enumerate(grouped):
        best = min(names, key=lambda r: times[r][i], default="bf16")  # ties: the earlier recipe
        if not names:
            decision, reason = "bf16", f"no float8 GEMMs on {spec.name}"
        elif not eligible[i]:
            decision, reason = "bf16", f"K, N not multiples of {_ALIGN}"
        elif pays[best][i]:
            decision, reason = best, ""
        else:
            decision, reason = "bf16", f"best ({best}) {times['bf16'][i] / times[best][i]:.2f}x < {min_speedup:g}x"
        rows.append(
            ReportRow(
                names=row_names,
                K=k,
                N=n,
                M=m,
                count=count,
                eligible=bool(eligible[i]),
                decision=decision,
                reason=reason,
                close_call=bool(
                    bar is not None and eligible[i] and bar.straddles(times["bf16"][i] / times[best][i], min_speedup)
                ),
                times_s=MappingProxyType({r: float(t[i]) for r, t in times.items()}),
                **padded.get(i, {}),
            )
        )
    return rows


def _totals(
    rows: list[ReportRow],
    names: list[str],
    times: dict[str, np.ndarray],
    eligible: np.ndarray,
    pays: dict[str, np.ndarray],
    counts: np.ndarray,
) -> ReportTotals:
    """Step seconds (every Linear, times its count) of bf16, the decisions, and each recipe everywhere it runs or
    only where it pays."""

    def step(choice: np.ndarray) -> float:
        return float(np.sum(choice * counts))

    return ReportTotals(
        bf16_s=step(times["bf16"]),
        best_s=float(sum(r.chosen_s * r.count for r in rows)),
        everywhere_s=MappingProxyType({r: step(np.where(eligible, times[r], times["bf16"])) for r in names}),
        filtered_s=MappingProxyType({r: step(np.where(pays[r], times[r], times["bf16"])) for r in names}),
    )


def _padded_times(
    M: np.ndarray,
    K: np.ndarray,
    N: np.ndarray,
    eligible: np.ndarray,
    spec: GPUSpec,
    names: list[str],
    model: ModelLike,
    opts: dict[str, Any],
) -> dict[int, dict[str, Any]]:
    """Row index -> the :class:`ReportRow` fields ``padded`` and ``padded_s`` of each shape float8 cannot run: K and N
    rounded up to multiples of 16, priced in bf16 and every recipe by the same model."""
    idx = np.flatnonzero(~eligible)
    if idx.size == 0:
        return {}
    Kp, Np = (-(-x[idx] // _ALIGN) * _ALIGN for x in (K, N))
    _, t = _linear_times(M[idx], Kp, Np, spec, names, model, opts)
    return {
        int(i): {
            "padded": (int(Kp[j]), int(Np[j])),
            "padded_s": MappingProxyType({r: float(v[j]) for r, v in t.items()}),
        }
        for j, i in enumerate(idx)
    }


def _linear_times(
    M: np.ndarray,
    K: np.ndarray,
    N: np.ndarray,
    spec: GPUSpec,
    names: list[str],
    model: ModelLike,
    opts: dict[str, Any],
) -> tuple[Any, dict[str, np.ndarray]]:
    """The bf16 :class:`perfmodel.float8.LinearTime` of each shape (its model and provenance) and recipe -> fwd+bwd
    seconds per shape (``"bf16"`` first; the recipes with the report's cast options ``opts``), one array call each."""
    from .. import float8  # as in report()

    base = float8.linear_time(M, K, N, None, spec, time_model=model)
    t = {"bf16": base.total_s} | {r: float8.linear_time(M, K, N, r, spec, **opts).total_s for r in names}
    return base, {r: np.broadcast_to(np.asarray(v, dtype=float), M.shape) for r, v in t.items()}


def _steps(
    obj: Any, spec: GPUSpec, recipes: list[str], seq_len: int, batch: int, model: ModelLike, min_speedup: float = 1.0
) -> dict[str, Any]:
    """The step-model fields of :class:`Report` for a dense preset or a LayerShape (a note otherwise); the layer's
    groups pay from ``min_speedup`` on, as the Linears do (``min_gain = min_speedup − 1``)."""
    from .. import step as step_model  # floor 3 beside this module; imported when a step is asked for
    from ..presets import LayerShape

    if isinstance(obj, (str, ModelPreset)) and not _SHAPE.match(obj if isinstance(obj, str) else ""):
        preset = get_preset(obj)
        if preset.layer is None:
            return {"step_note": _moe_note(preset)}
        arg: Any = preset.name
    elif isinstance(obj, LayerShape):
        arg = obj
    else:
        return {"step_note": "the step model needs a dense preset (--model) or a LayerShape, not Linear shapes alone"}
    if not recipes:
        return {"step_note": "no float8 recipe to compare on this GPU"}
    gain = max(0.0, float(min_speedup) - 1.0)
    by = {
        r: step_model.step_report(
            arg, gpu=spec, seq_len=seq_len, batch=batch, recipe=r, time_model=model, min_gain=gain
        )
        for r in recipes
    }
    best = max(by.values(), key=lambda st: st.speedup_best)
    return {
        "step": best,
        "step_by_recipe": MappingProxyType(by),
        "step_layer_arg": arg if isinstance(arg, str) else None,
        "step_unpriced": get_preset(arg).layer_unpriced if isinstance(arg, str) else "",
    }


def _moe_note(preset: ModelPreset) -> str:
    moe = "; routed experts as grouped GEMMs: perfmodel.moe.block_decision (the CLI prints them)" if preset.moe else ""
    return (
        f"{preset.name} is not a dense decoder: the step model does not price MoE routing, token permutation, "
        "grouped expert GEMMs or MLA attention; its Linears are priced one by one above" + moe
    )


def _no_float8_reason(spec: GPUSpec) -> str:
    """Why no torchao float8 recipe runs on ``spec``: it has no float8 GEMMs."""
    if spec.supports("fp8_e4m3"):
        return f"no torchao float8 recipe runs on {spec.name}, so every Linear stays in bf16"
    est = ESTIMATES.get(spec.arch)
    family = f"{est.family.split(' (')[0]}, " if est is not None else ""
    return (
        f"{spec.name} ({family}arch {spec.arch}) has no float8 tensor cores: torchao's float8 training needs "
        "fp8 GEMMs (NVIDIA sm89 and newer: Ada, Hopper, Blackwell; AMD MI300 and newer), so every Linear "
        "stays in bf16"
    )
