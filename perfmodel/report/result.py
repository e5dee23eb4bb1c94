"""The :class:`Report`: the float8 decision for every Linear shape of a model (``str(report)`` is its text)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from ..float8.published import known_wrong
from ..float8.torchao_code import TORCHAO_VERSION, torchao_code, torchao_missing_reason
from ..models.base import Provenance
from ..models.errorbars import ErrorBar
from .rows import ReportRow, ReportTotals
from .text import format_report

__all__ = ["Report"]


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
