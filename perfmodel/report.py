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

from ._backend import check_size
from .errors import InvalidShapeError, PerfModelError
from .hardware import GPULike, get_gpu
from .presets import ModelPreset, get_preset
from .registry import ModelLike
from .timemodel import Provenance

__all__ = ["Report", "ReportRow", "ReportTotals", "parse_shape", "report"]

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
            "saved_s": self.saved_s,
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
        """The single recipe with the shortest filtered step (ties: the earlier recipe)."""
        return min(self.filtered_s, key=lambda r: self.filtered_s[r])

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
        dynamic_shapes: priced for a dynamic token dimension (see :class:`perfmodel.recipes.CastOptions`).
        provenance: where the time model comes from and its expected error (:class:`~perfmodel.timemodel.Provenance`).
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
    provenance: Provenance | None = None

    def enabled(self) -> dict[str, list[str]]:
        """decision -> the Linear names it applies to (``"bf16"``: kept in bf16)."""
        out: dict[str, list[str]] = {}
        for row in self.rows:
            out.setdefault(row.decision, []).extend(row.names)
        return out

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
            "rows": [r.to_dict() for r in self.rows],
            "totals": self.totals.to_dict(),
            "provenance": None if self.provenance is None else self.provenance.to_dict(),
        }

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict(), indent=indent)

    def __str__(self) -> str:
        return _format(self)


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
    tokens: int,
    gpu: GPULike = "H100",
    recipes: Iterable[str] | None = None,
    min_speedup: float = 1.0,
    model: ModelLike = None,
    fuse_input_with_prev: bool = False,
    fuse_grad_output_with_prev: bool = False,
    cache_weight_cast: bool = False,
    dynamic_shapes: bool = False,
) -> Report:
    """Predict, per distinct Linear shape, whether a float8 recipe beats bf16, and by how much per step.

    Args:
        model_or_shapes: a ``torch.nn.Module`` (its ``nn.Linear`` modules, identical shapes grouped),
            a preset name or :class:`~perfmodel.presets.ModelPreset`, a mapping name -> ``(K, N)``,
            or an iterable of ``(K, N)`` tuples or ``"KxN"`` strings (K = in_features, N = out_features).
        tokens: rows each Linear sees per step (batch × sequence length); MoE experts of a preset
            see ``tokens · top_k / experts``.
        gpu: name or :class:`~perfmodel.hardware.GPUSpec`.
        recipes: candidate recipes; default every torchao recipe ``gpu`` supports.
        min_speedup: enable a recipe on a shape only from this fwd+bwd speedup on.
        model: time model override (``"roofline"``, ``"original"``, ``"calibrated"`` or an object).
        fuse_input_with_prev, fuse_grad_output_with_prev, cache_weight_cast, dynamic_shapes: see
            :class:`perfmodel.recipes.CastOptions`.

    Raises:
        UnknownGPUError, UnknownRecipeError, UnsupportedFormatError (recipe not on ``gpu``),
        UnknownPresetError, InvalidShapeError, PerfModelError (bad ``min_speedup``, nothing to analyse).
    """
    from . import float8  # here, not at the top: float8 re-exports report (no import cycle either way)

    tokens = int(check_size("tokens", tokens))
    if isinstance(min_speedup, bool) or not isinstance(min_speedup, (int, float)) or not min_speedup > 0:
        raise PerfModelError(f"min_speedup must be a number > 0, got {min_speedup!r}")
    spec = get_gpu(gpu)
    if recipes is None:
        names = [r for r in float8.supported_recipes(spec) if float8.RECIPES[r].torchao_name]
    else:
        names = [float8.get_recipe(r).name for r in ([recipes] if isinstance(recipes, str) else recipes)]
    names = list(dict.fromkeys(r for r in names if r != "bf16"))
    if not names:
        raise PerfModelError(f"no float8 recipe to compare with bf16 on {spec.name}; pass recipes=[...]")
    title, entries = _entries(model_or_shapes, tokens)
    grouped = _group(entries)
    M = np.array([g[3] for g in grouped], dtype=np.int64)
    K = np.array([g[1] for g in grouped], dtype=np.int64)
    N = np.array([g[2] for g in grouped], dtype=np.int64)
    counts = np.array([g[4] for g in grouped], dtype=np.int64)
    opts = dict(
        fuse_input_with_prev=fuse_input_with_prev,
        fuse_grad_output_with_prev=fuse_grad_output_with_prev,
        cache_weight_cast=cache_weight_cast,
        dynamic_shapes=dynamic_shapes,
        model=model,
    )
    base = float8.linear_time(M, K, N, None, spec, model=model)
    times = {"bf16": np.broadcast_to(np.asarray(base.total_s, dtype=float), M.shape)}
    for r in names:
        t = float8.linear_time(M, K, N, r, spec, **opts).total_s
        times[r] = np.broadcast_to(np.asarray(t, dtype=float), M.shape)
    eligible = (K % _ALIGN == 0) & (N % _ALIGN == 0)
    pays = {r: eligible & (times["bf16"] / times[r] >= min_speedup) for r in names}

    rows = []
    for i, (row_names, k, n, m, count) in enumerate(grouped):
        best = min(names, key=lambda r: times[r][i])  # ties: the earlier recipe
        if not eligible[i]:
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
                times_s=MappingProxyType({r: float(t[i]) for r, t in times.items()}),
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
        min_speedup=float(min_speedup),
        rows=tuple(rows),
        totals=totals,
        dynamic_shapes=dynamic_shapes,
        provenance=base.provenance,
    )


# ------------------------------------------------------------------------------------------------
# Text
# ------------------------------------------------------------------------------------------------
def _names(names: tuple[str, ...], width: int) -> str:
    text = ", ".join(names)
    return text if len(text) <= width else text[: width - 1] + "…"


def _format(rep: Report) -> str:
    """The aligned table of ``str(report)``: µs per Linear, ms per step."""
    tot = rep.totals
    n_linears = sum(r.count for r in rep.rows)
    lines = [
        f"float8 training of the Linear layers of {rep.title} on {rep.gpu}: {rep.tokens} tokens per step, "
        f"{rep.time_model} model, enable from {rep.min_speedup:g}x",
        "Per Linear: fwd+bwd time in µs (speedup over bf16). Per step: saved = (bf16 - chosen) x count, ms.",
        "",
    ]
    name_w = min(34, max(len("linear"), *(len(", ".join(r.names)) for r in rep.rows)))
    rec_w = {r: max(len(r), 17) for r in rep.recipes}
    head = (
        f"{'linear':<{name_w}} {'K':>6} {'N':>6} {'M':>6} {'count':>5} {'bf16':>9} "
        + " ".join(f"{r:>{rec_w[r]}}" for r in rep.recipes)
        + f"  {'decision':<18} {'saved ms':>9}"
    )
    lines += [head, "-" * len(head)]
    for row in rep.rows:
        cells = []
        for r in rep.recipes:
            t, s = row.times_s[r], row.speedups[r]
            cells.append(f"{f'{t * 1e6:.1f} ({s:.2f}x)':>{rec_w[r]}}")
        if not row.reason:
            decision = row.decision
        elif not row.eligible:
            decision = "bf16 (not /16)"
        else:
            decision = "bf16 (slower)" if max(row.speedups.values()) < 1 else f"bf16 (<{rep.min_speedup:g}x)"
        lines.append(
            f"{_names(row.names, name_w):<{name_w}} {row.K:>6} {row.N:>6} {row.M:>6} {row.count:>5} "
            f"{row.bf16_s * 1e6:>9.1f} " + " ".join(cells) + f"  {decision:<18} {row.saved_s * 1e3:>9.2f}"
        )
    policies = [("bf16 everywhere", tot.bf16_s), ("best recipe per shape (the decisions)", tot.best_s)]
    for r in rep.recipes:
        policies.append((f"{r} on every Linear it can run", tot.everywhere_s[r]))
        policies.append((f"{r} only where it pays", tot.filtered_s[r]))
    label_w = max(len(label) for label, _ in policies)
    what = "this Linear" if n_linears == 1 else f"these {n_linears} Linears"
    lines += [
        "",
        f"Step time of {what} (fwd+bwd):",
        f"  {'policy':<{label_w}} {'ms':>10} {'speedup':>8} {'saved ms':>10}",
    ]
    for label, seconds in policies:
        lines.append(
            f"  {label:<{label_w}} {seconds * 1e3:>10.2f} {tot.bf16_s / seconds:>7.2f}x "
            f"{(tot.bf16_s - seconds) * 1e3:>10.2f}"
        )
    best = tot.best_recipe
    kept = [n for row in rep.rows if row.decision == "bf16" for n in row.names]
    lines.append("")
    gain = tot.bf16_s / tot.filtered_s[best]
    if gain > 1.0:
        extra = f", min_speedup={rep.min_speedup:g}" if rep.min_speedup != 1.0 else ""
        extra += ", dynamic_shapes=True" if rep.dynamic_shapes else ""
        marginal = " — marginal (< 5 %), measure before switching" if gain < 1.05 else ""
        lines.append(
            f"Recommendation: {best} where it pays, {gain:.2f}x on these Linears{marginal}; "
            f"keep bf16 for: {', '.join(kept) or 'none'}."
        )
        lines.append(f"  convert_to_float8_training(model, config=Float8LinearConfig.from_recipe_name({best!r}),")
        lines.append(
            f"      module_filter_fn=perfmodel.float8.module_filter(gpu={rep.gpu!r}, tokens={rep.tokens}, "
            f"recipe={best!r}{extra}))"
        )
        if any(row.M != rep.tokens for row in rep.rows):
            lines.append(
                f"  note: module_filter prices every Linear at M={rep.tokens}; routed experts see fewer "
                "tokens (column M) — exclude those the table keeps in bf16."
            )
    else:
        lines.append(
            f"Recommendation: keep bf16 — no recipe reaches {rep.min_speedup:g}x on any Linear at "
            f"{rep.tokens} tokens on {rep.gpu}."
        )
    if rep.provenance is not None:
        lines.append(f"provenance: {rep.provenance.line()}")
    return "\n".join(lines)
