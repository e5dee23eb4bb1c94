"""What every CLI answer prints around its numbers: JSON, aligned tables, the header's provenance words, the
``provenance:`` line (with the roofline caveat) and the error-bar line."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = ["_error_bar_line", "_heading", "_print_json", "_provenance_line", "_table"]


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2))


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str) -> str:
    """Aligned text table; ``align`` has one ``<`` or ``>`` per column."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    fmt = "  ".join(f"{{:{a}{w}}}" for a, w in zip(align, widths, strict=True))
    lines = [fmt.format(*headers), "  ".join("-" * w for w in widths)]
    lines += [fmt.format(*r) for r in cells]
    return "\n".join(line.rstrip() for line in lines)


def _provenance_line(prov: Any) -> str:
    """The one line printed under every answer: where it comes from and how sure it is."""
    line = f"provenance: {prov.line()}"
    if prov.kind == "roofline":
        line += (
            "\ncaveat: a roofline answer with spec-sheet peaks; where measured it overestimated float8 speedups "
            "(docs/validation.md). Calibrate this GPU: python -m perfmodel.bench all, then perfmodel calibrate."
        )
    return line


def _heading(prov: Any) -> str:
    """The provenance class and time model every header names (:meth:`perfmodel.models.base.Provenance.heading`),
    e.g. ``"estimated answer, calibrated model"``."""
    return prov.heading()


def _error_bar_line(bar: Any, where: str) -> str:
    """The line printed under an answer with its error bar (or that its class has none)."""
    if bar is None:
        return "error bar: not measured for this class of model"
    return f"error bar: {bar} — {where}"
