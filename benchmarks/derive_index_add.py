"""The 64-bit scatter-add's rate from our timing of it alone (``python -m perfmodel.bench.index_add``).

    python benchmarks/derive_index_add.py benchmarks/data/<folder>/index_add.json.gz [--docs docs/validation/moe.md]

For each width ``d`` the bench times ``index_add_`` at two routed-row counts one top-k step apart, on either side of
torch's 32-bit index limit (same bytes within 0.002 %, different kernels). Their time per byte, 64-bit over 32-bit,
is what the generic kernel costs over the 2-D one on that board; ``EAGER_SLOWDOWN["index_add_64bit"]`` is
``EAGER_SLOWDOWN["index_add"]`` (the in-block rate of the 2-D kernel, from the fit families' H200 profiles) times the
median of those ratios over the widths. Also printed: every case's bytes per second and, for the score multiply
(``y * s[:, None]``), the same ratio across the limit (TensorIterator splits such a tensor into 32-bit pieces). No
block wall is read here.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfmodel.moe.block_constants import EAGER_SLOWDOWN, index_add_rate  # noqa: E402

BEGIN, END = "<!-- index-add:begin -->", "<!-- index-add:end -->"


def load(path: Path) -> dict[str, Any]:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


def _wide(r: dict[str, Any]) -> bool:
    """Whether the case's ``index_add_`` (or the same tensors under the score multiply) is past torch's limit."""
    return index_add_rate(r["dim"], r["rows"], r["targets"]) == "index_add_64bit"


def edge_ratios(doc: dict[str, Any], kernel: str = "index_add") -> dict[int, float]:
    """Per width: time per byte just above the limit over time per byte just below it (the pair one top-k apart)."""
    out: dict[int, float] = {}
    recs = [r for r in doc["records"] if r["kernel"] == kernel and "time_s" in r]
    for d in sorted({r["dim"] for r in recs}):
        mine = sorted((r for r in recs if r["dim"] == d), key=lambda r: r["rows"])
        below = [r for r in mine if not _wide(r)]
        above = [r for r in mine if _wide(r)]
        if below and above and above[0]["rows"] - below[-1]["rows"] == above[0]["top_k"]:
            lo, hi = below[-1], above[0]
            out[d] = (hi["time_s"] / hi["bytes"]) / (lo["time_s"] / lo["bytes"])
    return out


def factor(doc: dict[str, Any]) -> float:
    """``EAGER_SLOWDOWN["index_add"]`` x the median 64-bit / 32-bit ratio over the widths."""
    r = edge_ratios(doc)
    if not r:
        raise SystemExit("no width has a timed pair across the limit")
    return EAGER_SLOWDOWN["index_add"] * float(np.median(list(r.values())))


def table(doc: dict[str, Any]) -> str:
    m = doc["meta"]
    head = f"Measured {m['date_utc']} on {m['gpu']} ({m['gpu_uuid']}), torch {m['torch']}, {m['timing']}.\n\n"
    rows = ["| kernel | d | routed rows | elements | index_add offsets | launches | time ms | GB/s (priced bytes) |",
            "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |"]  # fmt: skip
    for r in doc["records"]:
        if "time_s" not in r:
            continue
        path = ("64-bit" if _wide(r) else "32-bit") if r["kernel"] == "index_add" else "—"
        rows.append(f"| {r['kernel']} | {r['dim']} | {r['rows']} | {r['elements']} | {path} | "
                    f"{r.get('launches', '')} | {r['time_s'] * 1e3:.3f} | {r['bytes_per_s'] / 1e9:.0f} |")  # fmt: skip
    ia, bm = edge_ratios(doc), edge_ratios(doc, "bcast_mul")
    tail = (
        "\n\nAcross the limit, time per byte above over below: index_add "
        + ", ".join(f"d {d}: {v:.3f}" for d, v in ia.items())
        + "; score multiply "
        + ", ".join(f"d {d}: {v:.3f}" for d, v in bm.items())
        + f'. `EAGER_SLOWDOWN["index_add_64bit"]` = {EAGER_SLOWDOWN["index_add"]:g} x median = {factor(doc):.2f}.'
    )
    return head + "\n".join(rows) + tail


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path)
    ap.add_argument("--docs", type=Path, help=f"write the table between {BEGIN} and {END} in this file")
    a = ap.parse_args(argv)
    doc = load(a.data)
    text = table(doc)
    print(text)
    if a.docs:
        s = a.docs.read_text()
        i, j = s.index(BEGIN) + len(BEGIN), s.index(END)
        a.docs.write_text(s[:i] + "\n" + text + "\n" + s[j:])
        print(f"wrote {a.docs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
