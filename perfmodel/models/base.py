"""Time models: what turns FLOPs and bytes into seconds, and where an answer comes from.

A *time model* implements :class:`TimeModel`. Two are constant-fraction rooflines, defined here:

* :class:`Roofline` (:data:`ROOFLINE`): ``max(FLOP / (peak·gemm_fraction), bytes / (bw·mem_fraction),
  launch)`` with the fractions of the GPU's :class:`~perfmodel.specs.gpu.Efficiency`.
* :data:`ORIGINAL`: the torchao float8 roofline of 2024 — GEMMs cost ``FLOP / (peak·fraction)`` only
  (no memory term, no launch floor); memory kernels cost ``bytes / (bw·fraction)``; each tiny
  kernel one launch. Kept to reproduce :mod:`perfmodel.compat.roofline_utils` exactly.

The shape-aware calibrated model is :class:`perfmodel.models.calibrated.CalibratedModel`; which model
a GPU gets, and the :class:`Provenance` of its answers, is decided by :mod:`perfmodel.models.registry`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from .._backend import namespace
from ..counting import _gemm_bytes, gemm_flops
from ..errors import PerfModelError, UnknownOptionError
from ..formats import Format
from ..specs.gpu import GPUSpec

__all__ = [
    "EVENT_OVERHEAD_S",
    "ORIGINAL",
    "PROVENANCE_KINDS",
    "ROOFLINE",
    "TIMINGS",
    "ExpectedError",
    "Provenance",
    "ProvenanceKind",
    "Roofline",
    "TimeModel",
    "gemm_kernel_time_s",
    "split_clauses",
]

#: ``timing=`` values: GPU kernel time (what profilers sum and a training step sees) or the time CUDA events
#: (``triton.testing.do_bench``) show for one call.
TIMINGS: tuple[str, ...] = ("kernel", "event")
#: What timing one call with CUDA events adds to its kernel time, seconds, where a model has no measure of
#: its own: the median gap over 4725 GEMMs on an H200 (event minus profiled kernel time, 2.91 µs; p20 0.67,
#: p80 4.22 µs; benchmarks/data/h200_2026-12-01). It is the launch path's cost, not the GPU's.
EVENT_OVERHEAD_S = 2.91e-6

ProvenanceKind = Literal["measured", "transferred", "estimated", "roofline", "user"]
#: Where an answer comes from, best first. ``user``: a time model you attached or passed yourself.
PROVENANCE_KINDS: tuple[str, ...] = ("measured", "transferred", "estimated", "roofline", "user")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExpectedError:
    """How far off answers of one provenance class were, measured against data the model never saw.

    Attributes:
        gemm_time_pct: median absolute percentage error of GEMM time (``None``: not measured).
        speedup_pct: median absolute percentage error of the float8 fwd+bwd speedup of a Linear.
        decisions_pct: share of enable/skip decisions that agreed with measurement, on shapes whose
            measured speedup is more than 5 % away from 1 (``None``: not measured).
        basis: what these were measured on (data set, GPU, where the table is).
    """

    gemm_time_pct: float | None = None
    speedup_pct: float | None = None
    decisions_pct: float | None = None
    basis: str

    def __str__(self) -> str:
        parts = []
        if self.gemm_time_pct is not None:
            parts.append(f"±{self.gemm_time_pct:.1f} % GEMM time")
        if self.speedup_pct is not None:
            parts.append(f"±{self.speedup_pct:.1f} % float8 speedup")
        if self.decisions_pct is not None:
            parts.append(f"{self.decisions_pct:.0f} % of clear decisions right")
        return (", ".join(parts) or "not validated") + f" (median; {self.basis})"

    def to_dict(self) -> dict[str, Any]:
        """Plain types (JSON-ready)."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Provenance:
    """Where a GPU's answers come from and how sure they are.

    Attributes:
        kind: ``measured`` (fitted on measurements of this very GPU), ``transferred`` (a calibration
            of another GPU of the same architecture, rescaled by this GPU's spec), ``estimated`` (the
            nearest measured architecture adjusted by published measurements), ``roofline`` (spec-sheet
            peaks times constant fractions) or ``user`` (a time model you attached or passed).
        gpu: the GPU the answer is for.
        time_model: the name of the time model (``"calibrated"``, ``"roofline"``, ...).
        source: what it was fitted on / transferred from / estimated from, with dates and files.
        summary: the same in a few words, for one-line answers (default: ``source``).
        assumptions: what the transfer or estimate assumes and no measurement of ours could identify.
        expected_error: measured error of this class (see :class:`ExpectedError`).
        measured_range: ``(("M", lo, hi), ("K", lo, hi), ("N", lo, hi))``: the GEMM sizes the model's
            measurements covered, where the model records them (the tile model); empty: not recorded.
        checked_on: for a ``transferred`` answer, the GPU whose measurements checked the transfer (its
            ``expected_error`` and error bars are that check's: ``perfmodel.models.errorbars.TRANSFER_BARS``);
            empty: not checked on this GPU.
    """

    kind: ProvenanceKind
    gpu: str
    time_model: str
    source: str
    summary: str = ""
    assumptions: tuple[str, ...] = ()
    expected_error: ExpectedError
    measured_range: tuple[tuple[str, int, int], ...] = ()
    checked_on: str = ""

    def __post_init__(self) -> None:
        if self.kind not in PROVENANCE_KINDS:
            raise ValueError(f"Provenance.kind must be one of {', '.join(PROVENANCE_KINDS)}, got {self.kind!r}")
        object.__setattr__(self, "assumptions", tuple(self.assumptions))
        if not self.summary:
            object.__setattr__(self, "summary", self.source)

    def outside_measured(self, *gemms: tuple[Any, Any, Any]) -> str:
        """Why GEMMs ``(M, K, N)`` (numbers or arrays) lie outside :attr:`measured_range` — e.g. ``"M = 131072
        is outside the measured M 1–65536"`` — or ``""`` where they are all inside it (or it is not recorded,
        or a size is symbolic)."""
        out = []
        bounds = {dim: (lo, hi) for dim, lo, hi in self.measured_range}
        for gemm in gemms:
            for dim, size in zip("MKN", gemm, strict=True):
                if dim not in bounds:
                    continue
                lo, hi = bounds[dim]
                try:
                    a = np.asarray(size, dtype=np.float64)
                except (TypeError, ValueError):  # sympy: no number to compare
                    continue
                if a.size and (a.min() < lo or a.max() > hi):
                    bad = float(a.max() if a.max() > hi else a.min())
                    note = f"{dim} = {bad:.0f} is outside the measured {dim} {lo}–{hi}"
                    if note not in out:
                        out.append(note)
        return "; ".join(out)

    def heading(self) -> str:
        """The words every answer's header carries about where it comes from, e.g. ``"estimated answer, calibrated
        model"``: the provenance class (measured / transferred / estimated / roofline / user) first, then the time
        model's name. The one home of that header (the CLI's and the float8 report's)."""
        return f"{self.kind} answer, {self.time_model} model"

    def line(self) -> str:
        """One line for a CLI or a table: kind, what it comes from, expected error."""
        return f"{self.kind} — {self.summary}; expected error {self.expected_error}"

    def __str__(self) -> str:
        return self.line()

    def __repr__(self) -> str:
        """One line, :meth:`line` (the source, assumptions and ranges: the fields, or :meth:`to_dict`)."""
        return f"Provenance({self.line()})"

    def to_dict(self) -> dict[str, Any]:
        """Plain types (JSON-ready)."""
        return {
            "kind": self.kind,
            "gpu": self.gpu,
            "time_model": self.time_model,
            "source": self.source,
            "summary": self.summary,
            "assumptions": list(self.assumptions),
            "expected_error": self.expected_error.to_dict(),
            **({"measured_range": [list(r) for r in self.measured_range]} if self.measured_range else {}),
        }


_OPEN, _CLOSE = "([{", ")]}"


def split_clauses(text: str, sep: str = "; ") -> list[str]:
    """The top-level clauses of a provenance or reason sentence: ``text`` split at each ``sep`` outside brackets
    (``()``, ``[]``, ``{}``), each clause stripped, empty ones dropped. Joining them with ``sep`` gives ``text`` back
    (up to the stripped spaces), so a display may print one clause per line and lose nothing; an unbalanced bracket
    keeps everything after it in one clause.

    Raises:
        UnknownOptionError: ``text`` is not a str, or ``sep`` is not a non-empty str.

    >>> split_clauses("a (b; c); d [e; f]; g")
    ['a (b; c)', 'd [e; f]', 'g']
    """
    if not isinstance(text, str) or not isinstance(sep, str) or not sep:
        raise UnknownOptionError(
            f"split_clauses takes a str and a non-empty str separator, got {type(text).__name__} {text!r:.80}, "
            f"separator {sep!r}"
        )
    out: list[str] = []
    depth, start, i = 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE and depth:
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            out.append(text[start:i])
            start = i = i + len(sep)
            continue
        i += 1
    out.append(text[start:])
    return [c.strip() for c in out if c.strip()]


@runtime_checkable
class TimeModel(Protocol):
    """What a time model provides. All methods take shapes/bytes as int, float, ndarray or sympy."""

    name: str

    def gemm_time_s(
        self,
        M: Any,
        K: Any,
        N: Any,
        *,
        fmt: Format,
        scaling: str | None,
        out_fmt: Format,
        gpu: GPUSpec,
        lead_dims: tuple[Any, Any] | None = None,
        layout: str = "rc",
    ) -> Any:
        """Kernel seconds for one GEMM. ``layout``: the operands' majorness (``rr``, ``rc``, ``cr``: see
        :data:`perfmodel.models.calibrated.LAYOUTS`); ``lead_dims``: the dimensions whose alignment decides
        the kernel, where not the layout's own. Models without a layout effect ignore both."""
        ...

    def memory_kernel_time_s(
        self, bytes_moved: Any, *, gpu: GPUSpec, recipe: str | None = None, tensor: str | None = None
    ) -> Any:
        """Seconds for one memory-bound kernel (cast, copy) moving ``bytes_moved`` bytes; ``recipe`` and
        ``tensor`` name the float8 recipe and tensor a cast belongs to (a calibrated model prices them apart)."""
        ...

    def launch_time_s(self, *, gpu: GPUSpec) -> Any:
        """Seconds for one tiny kernel whose traffic is negligible (a scale reduction's 2nd stage)."""
        ...

    def step_gemm_factor(self, fmt: Format, scaling: str | None) -> float:
        """Multiplier for a GEMM inside a training step against the same GEMM timed alone (1.0: none)."""
        ...


def gemm_kernel_time_s(tm: Any, M: Any, K: Any, N: Any, *, layout: str = "rc", **kwargs: Any) -> Any:
    """``tm.gemm_time_s(M, K, N, layout=layout, **kwargs)``: one GEMM's kernel time under any time model (the
    :class:`TimeModel` protocol's ``gemm_time_s`` takes ``layout``)."""
    try:
        return tm.gemm_time_s(M, K, N, layout=layout, **kwargs)
    except TypeError as exc:
        if "layout" not in str(exc):
            raise
        raise PerfModelError(
            f"time model {getattr(tm, 'name', type(tm).__name__)!r}: its gemm_time_s takes no layout= ({exc}); the "
            "TimeModel protocol's gemm_time_s(M, K, N, *, dtype, scaling, gpu, layout) does: add layout: str = 'rc'"
        ) from None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Roofline:
    """The roofline with achievable fractions and a launch floor, from ``gpu.efficiency``.

    ``gemm_time = max(2MKN / (peak(fmt)·gemm_fraction(fmt)), gemm_bytes / (bw·mem_bw_fraction), launch)``;
    ``memory_kernel_time = max(bytes / (bw·mem_bw_fraction), launch)``.

    Attributes:
        memory_term: include the bandwidth term for GEMMs (skinny GEMMs are memory-bound).
        launch_floor: no kernel takes less than ``gpu.launch_overhead_s``.
    """

    memory_term: bool = True
    launch_floor: bool = True
    name: str = "roofline"

    def gemm_time_s(self, M, K, N, *, fmt, scaling, out_fmt, gpu, lead_dims=None, layout="rc"):
        xp = namespace(M, K, N)
        t = gemm_flops(M, K, N) / gpu.achievable_flops_per_s(fmt)
        if self.memory_term:
            t = xp.max(t, _gemm_bytes(M, K, N, fmt, out_fmt, scaling) / gpu.achievable_mem_bw_bytes_per_s)
        if self.launch_floor:
            t = xp.max(t, gpu.launch_overhead_s)
        return t

    def memory_kernel_time_s(self, bytes_moved, *, gpu, recipe=None, tensor=None):
        t = bytes_moved / gpu.achievable_mem_bw_bytes_per_s
        if self.launch_floor:
            t = namespace(bytes_moved).max(t, gpu.launch_overhead_s)
        return t

    def launch_time_s(self, *, gpu):
        return gpu.launch_overhead_s

    def step_gemm_factor(self, fmt, scaling):
        return 1.0


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Original:
    """torchao's 2024 float8 roofline: compute-only GEMMs, bandwidth-only casts, 1 launch per tiny kernel."""

    name: str = "original"

    def gemm_time_s(self, M, K, N, *, fmt, scaling, out_fmt, gpu, lead_dims=None, layout="rc"):
        return gemm_flops(M, K, N) / gpu.peak_flops_per_s(fmt) / gpu.efficiency.gemm(fmt)

    def memory_kernel_time_s(self, bytes_moved, *, gpu, recipe=None, tensor=None):
        return bytes_moved / gpu.mem_bw_bytes_per_s / gpu.efficiency.mem_bw_fraction

    def launch_time_s(self, *, gpu):
        return gpu.launch_overhead_s

    def step_gemm_factor(self, fmt, scaling):
        return 1.0


ROOFLINE = Roofline()
ORIGINAL = _Original()
