"""Which Linear layers of a model should train in float8: one table per model, GPU and step size.

``report(model_or_shapes, tokens=..., gpu=...)`` prices every distinct ``nn.Linear`` shape with
:func:`perfmodel.float8.linear_time` (fwd + bwd: three GEMMs plus the recipe's casts) under bf16 and
each candidate recipe, picks per shape the fastest recipe that reaches ``min_speedup`` (the rule of
:func:`perfmodel.float8.should_use` and :func:`perfmodel.float8.module_filter`), and sums the step.

Units: times in seconds inside (:class:`Report`, ``to_dict``); µs and ms only in ``__str__``.
A row's ``count`` is how many Linears of that shape one step runs; totals are sums of
``count × time``, i.e. the Linear layers' share of a training step (attention, norms, the optimizer
and communication are not in it).
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from .._backend import check_flag, check_ratio, check_size, time_model_arg
from ..errors import InvalidShapeError, PerfModelError
from ..float8.published import known_wrong
from ..float8.torchao_code import TORCHAO_VERSION, torchao_code, torchao_missing_reason
from ..models.base import Provenance
from ..models.errorbars import ErrorBar
from ..models.estimated import ESTIMATES
from ..models.registry import ModelLike
from ..presets import ModelPreset, get_preset
from ..specs.gpu import GPUS, GPULike, GPUSpec, get_gpu
from ..specs.spec import attached_time_model
from .text import format_report

__all__ = [
    "TORCHAO_VERSION",
    "Report",
    "ReportRow",
    "ReportTotals",
    "parse_shape",
    "report",
    "torchao_code",
    "torchao_missing_reason",
]

_ALIGN = 16  # float8 GEMM kernels (torch._scaled_mm) need K and N to be multiples of 16
_SHAPE = re.compile(r"^\s*(\d+)\s*[xX×,]\s*(\d+)\s*$")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReportRow:
    """One distinct Linear shape ``nn.Linear(K, N)`` run on ``M`` tokens, ``count`` times per step.

    Attributes:
        names: the Linears of this shape (module names with layer indices folded to ``*``).
        K, N: in_features and out_features; M: tokens each instance sees.
        count: instances per step.
        times_s: recipe -> fwd+bwd seconds of one instance; ``"bf16"`` is the baseline.
        eligible: K and N are multiples of 16 (otherwise float8 kernels cannot run it).
        decision: the recipe to enable, or ``"bf16"``.
        reason: why bf16 is kept (empty when a recipe is enabled).
        close_call: the decision could flip within the measured spread of the model's speedups
            (:attr:`Report.speedup_error_bar` straddles ``min_speedup`` around the deciding speedup: the
            chosen recipe's, or the best recipe's where bf16 is kept). False where there is no bar.
        padded: ``(K, N)`` rounded up to multiples of 16 where the shape is not eligible (float8 needs them; on a
            Hopper GPU a feature size not a multiple of 8 also sends the bf16 GEMMs to cuBLAS's pre-Hopper
            kernels, :func:`perfmodel.gemm_kernel`), else ``None``.
        padded_s: recipe -> fwd+bwd seconds of one instance at :attr:`padded` (``"bf16"`` included; empty without
            one): what padding the layer's features (a change to the model) would buy, under the same model.
    """

    names: tuple[str, ...]
    K: int
    N: int
    M: int
    count: int
    times_s: Mapping[str, float]
    eligible: bool
    decision: str
    reason: str = ""
    close_call: bool = False
    padded: tuple[int, int] | None = None
    padded_s: Mapping[str, float] = dataclasses.field(default_factory=lambda: MappingProxyType({}))

    @property
    def padding(self) -> tuple[str, float] | None:
        """``(recipe, seconds)``: the fastest choice at :attr:`padded` where it beats :attr:`chosen_s` by at least
        10 % (padding pays), else ``None``."""
        if not self.padded_s:
            return None
        best = min(self.padded_s, key=lambda r: self.padded_s[r])
        return (best, self.padded_s[best]) if self.padded_s[best] < 0.9 * self.chosen_s else None

    @property
    def float8_padded_to(self) -> tuple[int, int] | None:
        """``(K, N)`` padded to multiples of 16 where float8 cannot run this shape: its float8 times and speedups are
        then prices of that padded shape (what padding the layer would buy), not of a run of this one; else
        ``None``."""
        return None if self.eligible or self.padded is None else self.padded

    @property
    def bf16_s(self) -> float:
        """Seconds of one instance in bf16."""
        return self.times_s["bf16"]

    @property
    def speedups(self) -> dict[str, float]:
        """recipe -> ``bf16_s / time`` (> 1: faster than bf16), recipes only."""
        return {r: self.bf16_s / t for r, t in self.times_s.items() if r != "bf16"}

    @property
    def chosen_s(self) -> float:
        """Seconds of one instance under :attr:`decision`."""
        return self.times_s[self.decision]

    @property
    def saved_s(self) -> float:
        """Seconds saved per step by the decision: ``(bf16_s - chosen_s) · count``."""
        return (self.bf16_s - self.chosen_s) * self.count

    def to_dict(self) -> dict[str, Any]:
        """Plain types only (JSON-ready); times in seconds."""
        return {
            "names": list(self.names),
            "K": self.K,
            "N": self.N,
            "M": self.M,
            "count": self.count,
            "times_s": dict(self.times_s),
            "speedups": self.speedups,
            "eligible": self.eligible,
            "decision": self.decision,
            "reason": self.reason,
            "close_call": self.close_call,
            "saved_s": self.saved_s,
            "padded": None if self.padded is None else list(self.padded),
            "float8_padded_to": None if self.float8_padded_to is None else list(self.float8_padded_to),
            "padded_s": dict(self.padded_s),
        }


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReportTotals:
    """Step time of all the Linears, seconds, under each policy.

    Attributes:
        bf16_s: bf16 everywhere.
        best_s: the per-row :attr:`ReportRow.decision` (best recipe per shape, where it pays).
        everywhere_s: recipe -> that recipe on every eligible Linear (bf16 on the others).
        filtered_s: recipe -> that recipe where it reaches ``min_speedup``, bf16 elsewhere
            (what ``convert_to_float8_training`` with :func:`perfmodel.float8.module_filter` does).
    """

    bf16_s: float
    best_s: float
    everywhere_s: Mapping[str, float]
    filtered_s: Mapping[str, float]

    @property
    def best_recipe(self) -> str:
        """The single recipe with the shortest filtered step (ties: the earlier recipe); ``"bf16"`` when
        no recipe was compared (a GPU without float8)."""
        return min(self.filtered_s, key=lambda r: self.filtered_s[r], default="bf16")

    def to_dict(self) -> dict[str, Any]:
        """Plain types only; seconds."""
        return {
            "bf16_s": self.bf16_s,
            "best_s": self.best_s,
            "everywhere_s": dict(self.everywhere_s),
            "filtered_s": dict(self.filtered_s),
            "best_recipe": self.best_recipe,
        }


@dataclasses.dataclass(frozen=True, kw_only=True)
class Report:
    """The float8 decision for every Linear shape of a model; ``str(report)`` is a readable table.

    Attributes:
        title: what was analysed (a preset name, the module's class, or "N shapes").
        gpu: canonical GPU name.
        tokens: tokens per step (batch × sequence length).
        time_model: name of the time model used.
        recipes: the candidate recipes (the bf16 baseline is implicit).
        min_speedup: a recipe is enabled only from this speedup on.
        rows, totals: see :class:`ReportRow`, :class:`ReportTotals`.
        dynamic_shapes, fuse_input_with_prev, fuse_grad_output_with_prev, cache_weight_cast: the cast
            options priced (see :class:`perfmodel.float8.recipes.CastOptions`).
        provenance: where the time model comes from and its expected error (:class:`~perfmodel.models.base.Provenance`).
        no_float8_reason: why no recipe was compared (the GPU has no float8 GEMMs, e.g. an A100); the
            answer is then bf16 everywhere. Empty otherwise.
        time_model_arg: the time model name ``report`` was given (``time_model="roofline"``), ``None`` for
            the GPU's default (or a model object); the printed ``module_filter`` passes it on.
        calibration_attached: the GPU carried a calibration you attached (``dataclasses.replace(gpu,
            calibration=...)``).
        calibration_file: the JSON that calibration was read from, when known (the CLI's ``--calibration``);
            the printed code loads it.
        gpu_modified: the GPU was a :class:`~perfmodel.specs.gpu.GPUSpec` that differs from the table's
            entry of that name (``dataclasses.replace`` of peaks, bandwidth, ...), which the printed
            code, naming the GPU, cannot carry.
        seq_len, batch: the step's sequence length and batch (``tokens = batch × seq_len``) when given.
        speedup_error_bar: p10–p90 of measured/predicted float8 speedup for this answer's provenance class
            (:func:`perfmodel.float8.speedup_error_bar`); ``None`` where the class was never validated.
        step: with ``seq_len``, the whole decoder layer priced by the step model
            (:class:`perfmodel.step.StepReport`) for the recipe whose chosen groups give the fastest layer;
            ``step_by_recipe`` holds it for every candidate recipe. ``None`` without ``seq_len`` or where the
            step model does not cover the model (``step_note`` says why: MoE, MLA, shapes only).
            ``step_unpriced``: work of the preset's layer the step model has no kernel for (its times leave
            it out), ``""`` when none.
    """

    title: str
    gpu: str
    tokens: int
    time_model: str
    recipes: tuple[str, ...]
    min_speedup: float
    rows: tuple[ReportRow, ...]
    totals: ReportTotals
    dynamic_shapes: bool = False
    fuse_input_with_prev: bool = False
    fuse_grad_output_with_prev: bool = False
    cache_weight_cast: bool = False
    provenance: Provenance | None = None
    no_float8_reason: str = ""
    time_model_arg: str | None = None
    calibration_attached: bool = False
    calibration_file: str | None = None
    gpu_modified: bool = False
    seq_len: int | None = None
    batch: int = 1
    step: Any = None
    step_by_recipe: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    step_note: str = ""
    step_unpriced: str = ""
    step_layer_arg: str | None = None
    speedup_error_bar: ErrorBar | None = None

    @property
    def speedup(self) -> float:
        """Step speedup of the Linears under :attr:`recommendation` (1.0 for bf16)."""
        rec = self.recommendation
        return 1.0 if rec == "bf16" else self.totals.bf16_s / self.totals.filtered_s[rec]

    @property
    def recommendation(self) -> str:
        """The one recipe to enable where it pays (:attr:`ReportTotals.best_recipe`), or ``"bf16"`` when
        no recipe makes these Linears faster."""
        best = self.totals.best_recipe
        return best if best != "bf16" and self.totals.bf16_s > self.totals.filtered_s[best] else "bf16"

    @property
    def reason(self) -> str:
        """Why bf16 is recommended (empty when a recipe is)."""
        if self.recommendation != "bf16":
            return ""
        if self.no_float8_reason:
            return self.no_float8_reason
        return f"no recipe reaches {self.min_speedup:g}x on any Linear at {self.tokens} tokens on {self.gpu}"

    def filter_options(self) -> dict[str, Any]:
        """The keywords of :func:`perfmodel.float8.module_filter` that reproduce this table's decisions."""
        return {
            "min_speedup": self.min_speedup,
            "dynamic_shapes": self.dynamic_shapes,
            "fuse_input_with_prev": self.fuse_input_with_prev,
            "fuse_grad_output_with_prev": self.fuse_grad_output_with_prev,
            "cache_weight_cast": self.cache_weight_cast,
            "time_model": self.time_model_arg,
        }

    def torchao_code(self) -> str | None:
        """The torchao code enabling :attr:`recommendation` (see :func:`torchao_code`); ``None`` for bf16
        or a recipe torchao does not offer."""
        rec = self.recommendation
        if rec == "bf16":
            return None
        return torchao_code(rec, self.gpu, self.tokens, self.filter_options(), calibration_file=self.calibration_file)

    def enabled(self) -> dict[str, list[str]]:
        """decision -> the Linear names it applies to (``"bf16"``: kept in bf16)."""
        out: dict[str, list[str]] = {}
        for row in self.rows:
            out.setdefault(row.decision, []).extend(row.names)
        return out

    @property
    def alignment_note(self) -> str:
        """:data:`perfmodel.models.estimated.ALIGNMENT_NOT_MODELLED` where this answer's provenance is an estimate
        and a row has a GEMM the H200's misalignment rule would price as misaligned (that rule does not transfer;
        :func:`perfmodel.models.estimated.alignment_note`), else ``""``."""
        from ..models.estimated import alignment_note, linear_gemms

        return alignment_note(self.provenance, [g for r in self.rows for g in linear_gemms(r.M, r.K, r.N)])

    def to_dict(self) -> dict[str, Any]:
        """Plain types only (JSON-ready); every time in seconds."""
        return {
            "title": self.title,
            "gpu": self.gpu,
            "tokens": self.tokens,
            "time_model": self.time_model,
            "recipes": list(self.recipes),
            "min_speedup": self.min_speedup,
            "dynamic_shapes": self.dynamic_shapes,
            "fuse_input_with_prev": self.fuse_input_with_prev,
            "fuse_grad_output_with_prev": self.fuse_grad_output_with_prev,
            "cache_weight_cast": self.cache_weight_cast,
            "rows": [r.to_dict() for r in self.rows],
            "totals": self.totals.to_dict(),
            "recommendation": {
                "recipe": self.recommendation,
                "speedup": self.speedup,
                "reason": self.reason,
                "keep_bf16": [] if self.recommendation == "bf16" else self._kept(),
                "torchao_version": TORCHAO_VERSION,
                "torchao_code": self.torchao_code(),
                "torchao_missing": "" if self.recommendation == "bf16" else torchao_missing_reason(self.recommendation),
            },
            "provenance": None if self.provenance is None else self.provenance.to_dict(),
            "alignment_note": self.alignment_note,
            "known_wrong": [dataclasses.asdict(d) for r in self.recipes for d in known_wrong(self.gpu, r)],
            "speedup_error_bar": None if self.speedup_error_bar is None else self.speedup_error_bar.to_dict(),
            "seq_len": self.seq_len,
            "batch": self.batch,
            "step": None
            if self.step is None
            else {
                "best": self.step.to_dict(),
                "by_recipe": {r: st.to_dict() for r, st in self.step_by_recipe.items()},
            },
            "step_note": self.step_note,
            "step_unpriced": self.step_unpriced,
        }

    def _kept(self) -> list[str]:
        """The Linears :attr:`recommendation` leaves in bf16 (where it does not reach ``min_speedup``)."""
        rec = self.recommendation
        pays = [row.eligible and rec != "bf16" and row.speedups[rec] >= self.min_speedup for row in self.rows]
        return [n for row, p in zip(self.rows, pays, strict=True) if not p for n in row.names]

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict(), indent=indent)

    def __str__(self) -> str:
        return format_report(self)


# ------------------------------------------------------------------------------------------------
# Inputs
# ------------------------------------------------------------------------------------------------
def parse_shape(text: str) -> tuple[int, int]:
    """``"4096x14336"`` (also ``X``, ``×`` or ``,``) -> ``(4096, 14336)``: (in_features K, out_features N).

    Raises:
        InvalidShapeError: with the text and the expected form.
    """
    m = _SHAPE.match(text) if isinstance(text, str) else None
    if m is None or int(m[1]) <= 0 or int(m[2]) <= 0:
        raise InvalidShapeError(
            f"bad Linear shape {text!r}: expected 'KxN' with positive integers, e.g. '4096x14336' "
            "(in_features x out_features)"
        )
    return int(m[1]), int(m[2])


def _fold(fqn: str) -> str:
    """``layers.3.attn.wq`` -> ``layers.*.attn.wq``: one name for a Linear repeated per layer/expert."""
    return re.sub(r"(?<=\.)\d+(?=\.|$)|^\d+(?=\.|$)", "*", fqn) or "(root)"


def _is_module(obj: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)


def _one_size(name: str, value: Any) -> int:
    """``value`` as one positive integer (:func:`check_size`'s rules); a report prices one configuration, so an
    array or a symbol is a named error."""
    v = check_size(name, value)
    if getattr(v, "ndim", 0) or (not isinstance(v, (int, float)) and not hasattr(v, "__index__")):
        raise PerfModelError(
            f"report prices one configuration: {name} must be one number, got {value!r}; for arrays or symbols "
            "use perfmodel.float8.linear_time or perfmodel.step.layer_time"
        )
    return int(v)


def _pair(name: str, value: Any) -> tuple[int, int]:
    if isinstance(value, str):
        return parse_shape(value)
    try:
        k, n = value
    except (TypeError, ValueError):
        raise InvalidShapeError(f"shape of {name!r} must be (K, N) or 'KxN', got {value!r}") from None
    return int(check_size(f"K of {name!r}", k)), int(check_size(f"N of {name!r}", n))


def _entries(obj: Any, tokens: int) -> tuple[str, list[tuple[str, int, int, int, int]]]:
    """``(title, [(name, K, N, M, count), ...])`` from any accepted input."""
    if isinstance(obj, str) and _SHAPE.match(obj):
        k, n = parse_shape(obj)
        return "1 shape", [(f"{k}x{n}", k, n, tokens, 1)]
    if isinstance(obj, (str, ModelPreset)):
        preset = get_preset(obj)
        return f"{preset.name} ({preset.layers} layers)", [
            (lin.name, lin.in_features, lin.out_features, lin.tokens(tokens), preset.total_count(lin))
            for lin in preset.linears
        ]
    from ..presets import LayerShape

    if isinstance(obj, LayerShape):
        return f"{obj.name} (one decoder layer)", [
            (lin.name, lin.in_features, lin.out_features, tokens, 1) for lin in obj.linears()
        ]
    if _is_module(obj):
        import torch

        found = [
            (_fold(fqn), int(m.in_features), int(m.out_features), tokens, 1)
            for fqn, m in obj.named_modules()
            if isinstance(m, torch.nn.Linear)
        ]
        if not found:
            raise PerfModelError(f"{type(obj).__name__} has no nn.Linear modules to analyse")
        return type(obj).__name__, found
    if isinstance(obj, Mapping):
        out = [(str(name), *_pair(str(name), v), tokens, 1) for name, v in obj.items()]
    elif isinstance(obj, Iterable) and not isinstance(obj, (str, bytes)):
        out = []
        for v in obj:
            k, n = _pair(str(v), v)
            out.append((f"{k}x{n}", k, n, tokens, 1))
    else:
        raise PerfModelError(
            f"cannot analyse {type(obj).__name__}: pass an nn.Module, a preset name or ModelPreset, a mapping "
            "name -> (K, N), or an iterable of (K, N) / 'KxN'"
        )
    if not out:
        raise PerfModelError("no Linear shapes given")
    return f"{len(out)} shape{'s' * (len(out) > 1)}", out


def _group(entries: list[tuple[str, int, int, int, int]]) -> list[tuple[tuple[str, ...], int, int, int, int]]:
    """Merge entries of identical ``(K, N, M)``: names joined in order (no repeats), counts summed."""
    groups: dict[tuple[int, int, int], tuple[list[str], int]] = {}
    for name, k, n, m, count in entries:
        names, total = groups.get((k, n, m), ([], 0))
        if name not in names:
            names.append(name)
        groups[k, n, m] = (names, total + count)
    return [(tuple(names), k, n, m, c) for (k, n, m), (names, c) in groups.items()]


# ------------------------------------------------------------------------------------------------
# The report
# ------------------------------------------------------------------------------------------------
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
    tokens = _one_size("tokens", tokens)
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

    def step(choice: np.ndarray) -> float:
        return float(np.sum(choice * counts))

    totals = ReportTotals(
        bf16_s=step(times["bf16"]),
        best_s=float(sum(r.chosen_s * r.count for r in rows)),
        everywhere_s=MappingProxyType({r: step(np.where(eligible, times[r], times["bf16"])) for r in names}),
        filtered_s=MappingProxyType({r: step(np.where(pays[r], times[r], times["bf16"])) for r in names}),
    )
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
