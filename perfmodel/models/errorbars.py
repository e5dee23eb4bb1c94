"""Error bars: how far measurements fell from the model's predictions, per provenance class and shape family.

An :class:`ErrorBar` is the p10–p90 range of ``measured / predicted`` over data no fit saw, for one
quantity (``"gemm_time"``; ``"linear_time"``, a Linear's fwd+bwd; ``"speedup"``, its float8 speedup),
one provenance class (``measured``, ``transferred``, ``estimated``, ``roofline``: see
:class:`perfmodel.models.base.Provenance`), one shape family (:data:`SHAPE_FAMILIES`, or ``"all"``) and,
for times, one timing (``"kernel"`` / ``"event"``).
A prediction ``t`` with the bar ``(low, high)`` means: 80 % of the validation measurements of its class
and family lay in ``[t·low, t·high]``.

The table (``perfmodel/calibrations/error_bars.json``) is written by ``python benchmarks/validate.py
gemm --write`` from the committed data and checked against it by the test suite:

* ``measured``, GEMM time: the shipped H200 calibration on the 2026-12-01 H200 layout sweep, held out by
  shape (the 3961 of its 4725 GEMMs in bf16 ``rr``/``rc``/``cr`` and fp8 ``rc`` whose shapes are in no fit;
  ``benchmarks/data/h200_2026-12-01``; the in-sample figures are kept beside the bars as ``in_sample``), per
  family and timing;
* ``roofline``, GEMM time: the constant-fraction roofline on the same GEMMs;
* ``measured`` with ``time_model="tiles"``: the H200 tile model on the layout sweep's seed-2037 and 2071 to 2086
  sessions pooled (in no fit, each measured after its formula fits were committed, 2071 to 2086 after its
  learned correction too; ten GPUs), held out by shape (only their GEMMs of shapes no fit session measured),
  per family and timing;
* ``estimated``, GEMM time: the estimated models on published GEMM throughput of GB200, B200, MI300X,
  A100 (``benchmarks/published/gemm_throughput.json``; 21 shapes, one bar for all families);
* ``measured``, Linear time and speedup: held-out H200 Linear layers (leave one shape out; fwd+bwd,
  static compiles, every recipe); ``roofline`` Linear time: the roofline on the same Linears;
* ``transferred`` and ``roofline``, speedup: torchao's published H100 rowwise table (216 shapes).

Where a class has no bar of its own the lookup says so rather than inventing one: a ``transferred`` GEMM
or Linear time borrows the ``measured`` bar and an ``estimated`` Linear time its GEMM-time bar, marked
``borrowed`` with the reason; ``estimated`` speedups and ``user`` models have none (``None``). A GEMM outside the
sizes its model was measured on (the tile model records them: ``Provenance.measured_range``) keeps its bar,
marked ``borrowed`` as an extrapolation (:func:`mark_outside`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import numbers
from typing import Any, Literal

from .._files import CALIBRATIONS
from ..counting import layout_lead_dims
from ..errors import PerfModelError, choices_message
from .calibrated import fallback_kernels

__all__ = [
    "QUANTITIES",
    "SCHEMA",
    "SHAPE_FAMILIES",
    "TRANSFER_BARS",
    "ErrorBar",
    "error_bar",
    "error_bar_table",
    "mark_outside",
    "shape_family",
]

SCHEMA = "perfmodel.error_bars/1"
#: Shape families, in the order :func:`shape_family` tests them.
SHAPE_FAMILIES: tuple[str, ...] = ("unaligned", "small_m", "square", "llm", "random")
#: What a bar is about.
QUANTITIES: tuple[str, ...] = ("gemm_time", "linear_time", "speedup")
_TABLE = CALIBRATIONS / "error_bars.json"
SMALL_M = 256  # M up to this is "small_m": decode and small-batch GEMMs, launch- and memory-bound
LLM_MULTIPLE = 128  # K and N multiples of this are "llm": the hidden and FFN sizes of published models


def _positive_integer(x: float) -> bool:
    return math.isfinite(x) and x.is_integer() and x >= 1


def shape_family(M: Any, K: Any, N: Any, layout: str = "rc") -> str:
    """The family of GEMM ``[M, K] @ [K, N]`` in ``layout`` (``"rr"``, ``"rc"``, ``"cr"``), the first that fits:

    * ``unaligned``: cuBLAS runs a pre-Hopper fallback kernel, 5–6× slower on the H200
      (:func:`perfmodel.models.calibrated.fallback_kernels`): a leading dimension of the layout (K or N for
      ``rr``/``rc``, M or N for ``cr``) is not a multiple of 8 and M > 1, or K < 8 (a one-row GEMM runs
      Hopper or gemv kernels: ``small_m``);
    * ``small_m``: ``M <= 256`` (decode, small batches);
    * ``square``: ``M == K == N``;
    * ``llm``: K and N multiples of 128 (every hidden and FFN size of the model presets);
    * ``random``: any other aligned shape.

    Integer sizes only (numpy integers included); arrays and symbols have no single family: use
    ``"all"`` with :func:`error_bar`.
    """
    for name, v in (("M", M), ("K", K), ("N", N)):
        try:
            ok = not isinstance(v, bool) and isinstance(v, numbers.Real) and _positive_integer(float(v))
        except OverflowError:  # an int too large for a float
            ok = False
        if not ok:
            raise PerfModelError(
                f"shape_family: {name} must be one positive integer, got {v!r} "
                "(arrays and symbols have no single family: use family='all')"
            )
    if layout not in ("rr", "rc", "cr"):
        raise PerfModelError(choices_message("layout", layout, ("rr", "rc", "cr")))
    M, K, N = int(M), int(K), int(N)
    if fallback_kernels(M, K, *layout_lead_dims(layout, M, K, N)):  # the rule that prices cuBLAS's fallback kernels
        return "unaligned"
    if M <= SMALL_M:
        return "small_m"
    if M == K == N:
        return "square"
    if K % LLM_MULTIPLE == 0 and N % LLM_MULTIPLE == 0:
        return "llm"
    return "random"


@dataclasses.dataclass(frozen=True, kw_only=True)
class ErrorBar:
    """The p10–p90 range of ``measured / predicted`` for one quantity, provenance class and family.

    Attributes:
        quantity: ``"gemm_time"``, ``"linear_time"`` or ``"speedup"``.
        kind: the provenance class the bar was measured for.
        family: a :data:`SHAPE_FAMILIES` name or ``"all"``.
        timing: ``"kernel"``, ``"event"`` or ``"any"`` (speedups; published throughput of unknown timing).
        low, high: p10 and p90 of ``measured / predicted`` (dimensionless; ``low <= 1 <= high`` usually).
        median: the median of the same ratio (a bias when far from 1).
        n: measurements the bar comes from.
        basis: what they are (data set, GPU, model).
        borrowed: why this class uses another class's bar (empty when the bar is its own).
        model: the time model the bar was measured for within its class: ``""`` the class's default
            model, ``"tiles"`` the H200 tile model (``time_model="tiles"``).
    """

    quantity: str
    kind: str
    family: str
    timing: str
    low: float
    high: float
    median: float
    n: int
    basis: str
    borrowed: str = ""
    model: str = ""

    def __post_init__(self) -> None:
        for name in ("low", "high", "median"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise PerfModelError(f"ErrorBar.{name} must be a positive finite ratio, got {v!r}")
        if self.low > self.high:
            raise PerfModelError(f"ErrorBar: low ({self.low}) is above high ({self.high})")

    def interval(self, value: Any) -> tuple[Any, Any]:
        """``(value·low, value·high)``: where 80 % of the class's measurements of ``value`` fell."""
        return value * self.low, value * self.high

    def straddles(self, value: Any, threshold: Any) -> Any:
        """Whether ``threshold`` lies inside ``value``'s bar, ``value·low < threshold <= value·high``: a
        decision "``value`` reaches ``threshold``" that the measured spread could flip (a close call)."""
        return (value * self.low < threshold) & (threshold <= value * self.high)

    @property
    def pct(self) -> tuple[float, float]:
        """The bar in percent of the prediction: ``((low-1)·100, (high-1)·100)``."""
        return (self.low - 1) * 100, (self.high - 1) * 100

    def short(self) -> str:
        """``-6 %/+9 %`` style, for tables."""
        lo, hi = self.pct
        return f"{lo:+.0f} %/{hi:+.0f} %"

    def __str__(self) -> str:
        what = {"gemm_time": "GEMM time", "linear_time": "Linear time"}.get(self.quantity, "float8 speedup")
        fam = "all shapes" if self.family == "all" else f"{self.family} shapes"
        timing = f", {self.timing} time" if self.timing in ("kernel", "event") else ""
        own = f"; {self.borrowed}" if self.borrowed else ""
        return (
            f"{self.short()} {what} (p10-p90 of measured/predicted, {self.kind} class, {fam}{timing}, "
            f"n={self.n}; {self.basis}{own})"
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain types (JSON-ready)."""
        return dataclasses.asdict(self)


@functools.lru_cache(maxsize=1)
def error_bar_table() -> tuple[ErrorBar, ...]:
    """Every bar of the shipped table (``perfmodel/calibrations/error_bars.json``)."""
    data = json.loads(_TABLE.read_text())
    if data.get("schema") != SCHEMA:
        raise PerfModelError(f"{_TABLE}: schema {data.get('schema')!r}, expected {SCHEMA!r}")
    return tuple(ErrorBar(**b) for b in data["bars"])


#: The transferred model's own bars on a GPU it was measured on, by GPU name (docs/validation.md, "The H100 SXM,
#: measured"; the answers of that table GPU carry them: ``Provenance.checked_on``). p10, median and p90 of
#: measured / predicted on the pre-registered dense check of two H100 SXM boards, pooled
#: (benchmarks/data/h100_2026-12-06dense and -b2, ``benchmarks/validate_dense_transfer.py`` ``bars``;
#: tests/test_dense_transfer.py recomputes them): the 1858 GEMMs of the three formats whose shapes the calibration
#: held out, timed with CUDA events; the 144 static Linear steps' kernel times (bf16 and three recipes) and their 108
#: float8 speedups, of the 18 shapes the H200 calibration's cast terms were fitted on (in-sample by shape, on
#: another GPU).
_H100_CHECK = "H100-SXM, measured 2026-12-06 (two boards, pre-registered: the H200 calibration's dense sweeps)"


def _transfer_bar(quantity: str, timing: str, low: float, high: float, median: float, n: int, what: str) -> ErrorBar:
    return ErrorBar(quantity=quantity, kind="transferred", family="all", timing=timing, low=low, high=high,
                    median=median, n=n, basis=f"{_H100_CHECK}, {what}")  # fmt: skip


TRANSFER_BARS: dict[str, tuple[ErrorBar, ...]] = {
    "H100-SXM": (
        _transfer_bar("gemm_time", "event", 0.8704, 1.1640, 1.0128, 1858, "GEMMs of the shapes held out, 3 formats"),
        _transfer_bar("linear_time", "kernel", 0.9777, 1.1034, 1.0311, 144,
                      "static Linear fwd+bwd, bf16 + 3 recipes, shapes of the fit"),
        _transfer_bar("speedup", "any", 0.9228, 1.0214, 0.9693, 108,
                      "static Linear float8 speedups, 3 recipes, shapes of the fit (over-predicted: measured / "
                      "predicted median 0.97)"),
    ),
}  # fmt: skip


def _check(name: str, value: Any, valid: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in valid:
        raise PerfModelError(choices_message(name, value, valid))
    return value


def mark_outside(bar: ErrorBar | None, prov: Any, *gemms: tuple[Any, Any, Any]) -> ErrorBar | None:
    """``bar``, marked (``borrowed``, with the sizes) where GEMMs ``(M, K, N)`` lie outside the sizes the answer's
    model was measured on (``prov``: a :class:`perfmodel.models.base.Provenance`, its ``outside_measured``): an
    extrapolation, whose bar was measured inside them. ``bar`` unchanged otherwise (or ``None``)."""
    note = prov.outside_measured(*gemms) if bar is not None and prov is not None else ""
    if not note:
        return bar
    return dataclasses.replace(bar, borrowed=f"{note}: an extrapolation; the bar is the measured range's")


def error_bar(
    quantity: Literal["gemm_time", "linear_time", "speedup"],
    kind: str,
    family: str = "all",
    timing: str = "kernel",
    *,
    model: str = "",
    checked_on: str = "",
) -> ErrorBar | None:
    """The bar for ``quantity`` of provenance class ``kind`` on ``family`` shapes, timed as ``timing``
    (``time_model="tiles"``: the tile model's own bars, ``None`` where it has none). ``checked_on``: the GPU a
    ``transferred`` answer's model was measured on (``Provenance.checked_on``): its own bar where it has one for the
    quantity and timing (:data:`TRANSFER_BARS`; over all families), else the class's.

    Falls back from the family to ``"all"`` and from the timing to ``"any"``; a ``transferred`` GEMM time
    borrows the ``measured`` bar (marked ``borrowed``). ``None`` where nothing was measured for the class
    (``estimated`` speedups, ``user`` models).
    """
    from .base import PROVENANCE_KINDS, TIMINGS

    _check("quantity", quantity, QUANTITIES)
    _check("kind", kind, PROVENANCE_KINDS)
    _check("family", family, (*SHAPE_FAMILIES, "all"))
    _check("timing", timing, TIMINGS)
    _check("model", model, ("", "tiles"))
    if not isinstance(checked_on, str):
        raise PerfModelError(f"checked_on must be a GPU name (a str, '' for none), got {checked_on!r}")
    if checked_on and kind == "transferred" and not model:
        for b in TRANSFER_BARS.get(checked_on, ()):
            if b.quantity == quantity and b.timing in (timing, "any"):
                return b
    bars = error_bar_table()

    def find(k: str, q: str) -> ErrorBar | None:
        for fam in dict.fromkeys((family, "all")):
            for tim in (timing, "any"):
                for b in bars:
                    if (b.quantity, b.kind, b.family, b.timing, b.model) == (q, k, fam, tim, model):
                        return b
        return None

    own = find(kind, quantity)
    if own is not None or model:
        return own
    if kind == "transferred" and quantity != "speedup":
        b = find("measured", quantity)
        if b is not None:
            own = sorted({t.timing for t in TRANSFER_BARS.get(checked_on, ()) if t.quantity == quantity})
            why = (f"the measured GPU's bar: {checked_on}'s own check of this quantity is by {', '.join(own)} time"
                   if own else "the measured GPU's bar: transfers were validated on float8 speedups only")  # fmt: skip
            return dataclasses.replace(b, kind=kind, borrowed=why)
    if kind == "estimated" and quantity == "linear_time":
        b = find(kind, "gemm_time")
        if b is not None:
            return dataclasses.replace(
                b, quantity=quantity, borrowed="its GEMM-time bar: Linear times were not validated for this class"
            )
    return None
