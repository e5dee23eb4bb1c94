"""The validation command's one writer: markdown tables with fixed number formats, and the generated blocks of the docs.

Every table the validation command writes (``python benchmarks/validate.py``) goes through here, so that the docs are
one format and regenerate byte for byte:

* :func:`table` — a markdown table: one header row, the ``|---|`` rule, the rows in the order given (the callers give
  them in a fixed order: a tuple of kinds, sorted keys), each cell as :func:`cell` writes it;
* :func:`pct`, :func:`pair`, :func:`num` — the fixed float formats (a percentage to one decimal, "MdAPE / p90" to
  one decimal and a whole number, a plain number to given digits); ``nan`` and ``None`` write ``—``;
* :class:`Block` and :func:`write_blocks` — a generated block is the text between ``<!-- name:begin -->`` and
  ``<!-- name:end -->`` in a doc; writing replaces only that text (hand-written prose around it stays) and refuses a
  doc without the markers (:class:`BlockError` names the doc, the block and the fix).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from perfmodel.errors import PerfModelError

__all__ = [
    "DASH",
    "SUMMARY_HEAD",
    "Block",
    "BlockError",
    "block_text",
    "cell",
    "markers",
    "num",
    "pair",
    "pct",
    "table",
    "write_blocks",
]

DASH = "—"  # an empty or undefined cell
#: the columns of docs/validation.md's summary tables (each subcommand writes its model's rows)
SUMMARY_HEAD = ("model", "scored on", "held out", "MdAPE / p90 % (or share right)", "floor (run-to-run)")


class BlockError(PerfModelError, LookupError):
    """A doc without the markers of a generated block (or with them out of order)."""


def num(x: Any, digits: int = 1) -> str:
    """``x`` with ``digits`` decimals (``—`` for ``None`` or nan); an int as is."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return DASH
    if isinstance(x, int) and not isinstance(x, bool):
        return str(x)
    return f"{float(x):.{digits}f}"


def pct(x: Any, digits: int = 1) -> str:
    """A percentage: ``4.2 %`` (``—`` for ``None`` or nan)."""
    got = num(x, digits)
    return got if got == DASH else f"{got} %"


def pair(st: dict[str, Any] | None) -> str:
    """``MdAPE / p90`` of an :func:`perfmodel.calibrate.ape_stats` dict: ``4.2 / 17`` (``—`` when empty)."""
    if not st or not st.get("n"):
        return DASH
    return f"{num(st['mdape'], 1)} / {num(st['p90'], 0)}"


def cell(x: Any) -> str:
    """One table cell: strings as they are, numbers by :func:`num` (ints whole, floats to one decimal)."""
    if isinstance(x, str):
        return x
    return num(x)


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A markdown table of ``rows`` under ``header``, in the order given (no trailing newline)."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"a row of {len(row)} cells under a header of {len(header)}: {list(row)!r}")
        out.append("| " + " | ".join(cell(c) for c in row) + " |")
    return "\n".join(out)


def markers(name: str) -> tuple[str, str]:
    """The begin and end markers of the generated block ``name``."""
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Block:
    """One generated block: ``body`` goes between ``name``'s markers in ``doc``."""

    doc: Path
    name: str
    body: str


def block_text(text: str, name: str, *, doc: Path | str = "the doc") -> str:
    """What lies between ``name``'s markers in ``text``, without the newlines next to them."""
    begin, end = markers(name)
    i = text.find(begin)
    j = text.find(end, i + len(begin)) if i >= 0 else -1
    if i < 0 or j < 0:
        raise BlockError(
            f"{doc} has no generated block {name!r} (the lines {begin} and {end}); add them where the block goes"
        )
    return text[i + len(begin) : j].strip("\n")


def _replace(text: str, name: str, body: str, doc: Path) -> str:
    begin, end = markers(name)
    block_text(text, name, doc=doc)  # both markers, in order
    i = text.index(begin) + len(begin)
    j = text.index(end, i)
    return f"{text[:i]}\n{body.strip(chr(10))}\n{text[j:]}"


def write_blocks(blocks: Iterable[Block]) -> list[Path]:
    """Each block's body into its doc (one read and one write per doc); the docs written, in order."""
    by_doc: dict[Path, list[Block]] = {}
    for b in blocks:
        by_doc.setdefault(b.doc, []).append(b)
    for doc, bs in by_doc.items():
        text = doc.read_text()
        for b in bs:
            text = _replace(text, b.name, b.body, doc)
        doc.write_text(text)
    return list(by_doc)
