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

# ruff: noqa: F401  (the old flat module's names stay importable from here; __all__ is its public list)

from __future__ import annotations

from ..float8.torchao_code import TORCHAO_VERSION, torchao_code, torchao_missing_reason
from .build import _linear_times, _moe_note, _no_float8_reason, _padded_times, _steps, report
from .inputs import _SHAPE, _entries, _fold, _group, _is_module, _one_size, _pair, parse_shape
from .result import Report
from .rows import _ALIGN, ReportRow, ReportTotals
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
