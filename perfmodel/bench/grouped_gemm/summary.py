"""Reading back the grouped-GEMM datasets: :func:`load`, :func:`validate_records` and the text
:func:`summarize` (counts, TFLOP/s by G and rows per group, fp8 over bf16, the neighbour steps, probes). Pure Python.
"""

from __future__ import annotations

import gzip
import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._device import quantile
from .config import (
    KERNELS_FILE,
    NB_KERNELS_FILE,
    NB_TIME_FILE,
    NEIGHBOUR_PASSES,
    PROBE_FILE,
    REQUIRED_FIELDS,
    SCHEMA_TAG,
    TIME_FILE,
    GroupedGemmError,
)

__all__ = ["load", "summarize", "validate_records"]


def load(path: str | Path) -> dict[str, Any]:
    """A dataset file (``.json`` or ``.json.gz``); a missing ``.json`` is looked for as ``.json.gz`` too."""
    p = Path(path)
    if not p.exists() and p.suffix == ".json" and p.with_suffix(".json.gz").exists():
        p = p.with_suffix(".json.gz")
    try:
        raw = gzip.open(p, "rt").read() if p.suffix == ".gz" else p.read_text()
        return json.loads(raw)
    except (OSError, ValueError) as exc:
        raise GroupedGemmError(f"cannot read dataset {str(p)!r}: {exc}") from exc


def validate_records(data: Mapping[str, Any]) -> list[str]:
    """Problems in a grouped / probe / neighbour dataset (empty: valid): the schema tag, each record's REQUIRED_FIELDS,
    positive times, and for grouped records ``len(rows) == G`` and the strides lists of the operand ranks."""
    problems = []
    if data.get("schema") != SCHEMA_TAG:
        problems.append(f"schema is {data.get('schema')!r}, expected {SCHEMA_TAG!r}")
    if not isinstance(data.get("meta"), Mapping):
        problems.append("meta block missing")
    records = data.get("records")
    if not isinstance(records, list):
        return [*problems, "records list missing"]
    for i, r in enumerate(records):
        op = r.get("op")
        if op not in REQUIRED_FIELDS:
            problems.append(f"records[{i}].op is {op!r}; valid: {', '.join(REQUIRED_FIELDS)}")
            continue
        problems += [f"records[{i}] ({op}) lacks {f!r}" for f in REQUIRED_FIELDS[op] if f not in r]
        if op == "probe":
            continue
        t = r.get("time_s")
        if not (isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0):
            problems.append(f"records[{i}].time_s must be a positive number, got {t!r}")
        if op in ("fwd", "wgrad"):
            if isinstance(r.get("rows"), list) and len(r["rows"]) != r.get("G"):
                problems.append(f"records[{i}]: {len(r['rows'])} rows for G = {r.get('G')}")
            want = (2, 3) if op == "fwd" else (2, 2)
            for key, n in zip(("a_strides", "b_strides"), want, strict=True):
                if isinstance(r.get(key), list) and len(r[key]) != n:
                    problems.append(f"records[{i}].{key} has {len(r[key])} entries, expected {n}")
    return problems


def _records(folder: Path, name: str, suffix: str) -> list[dict[str, Any]]:
    try:
        return list(load(folder / name.format(suffix=suffix)).get("records", []))
    except GroupedGemmError:
        return []


def _m_bucket(rows_mean: float) -> str:
    for hi in (64, 256, 1024, 4096):
        if rows_mean <= hi:
            return f"<={hi}"
    return ">4096"


_BUCKETS = ("<=64", "<=256", "<=1024", "<=4096", ">4096")


def _probe_lines(probes: Sequence[Mapping[str, Any]]) -> list[str]:
    """The probes table: name, status, expected status (and the error of a refused or crashed one)."""
    if not probes:
        return []
    lines = [f"probes ({len(probes)}): name, status (expected)"]
    for r in probes:
        err = f"  {r.get('error', '')[:110]}" if r.get("status") in ("refused", "crashed") else ""
        lines.append(f"  {r['name']:<44} {r['status']:<8} ({r.get('expect')}){err}")
    return lines


def _count_lines(ev: Sequence[Mapping[str, Any]]) -> list[str]:
    """Event record counts per op/dtype/layout (rows) and family (columns)."""
    lines: list[str] = []
    cnt = Counter((r["op"], r["dtype"], r["layout"], r["family"]) for r in ev)
    fams = sorted({k[3] for k in cnt})
    combos = sorted({k[:3] for k in cnt})
    if combos:
        lines.append(f"  {'op/dtype/layout':<26} " + " ".join(f"{f[:10]:>10}" for f in fams))
        for c in combos:
            lines.append(f"  {'/'.join(c):<26} " + " ".join(f"{cnt[(*c, f)]:>10}" for f in fams))
    return lines


def _tflops_lines(ev: Sequence[Mapping[str, Any]]) -> list[str]:
    """Median event TFLOP/s by G and mean rows per group, per op for bf16 (its training layout) and fp8."""
    lines: list[str] = []
    for op in ("fwd", "wgrad"):
        for dtype, layout in (("bf16", "a_row_b_col" if op == "fwd" else "a_col_b_row"), ("fp8_e4m3", "a_row_b_col")):
            sel = [r for r in ev if r["op"] == op and r["dtype"] == dtype and r["layout"] == layout]
            if not sel:
                continue
            cells: dict[tuple[int, str], list[float]] = defaultdict(list)
            for r in sel:
                cells[(r["G"], _m_bucket(r["total_rows"] / r["G"]))].append(r["tflops"])
            lines.append(f"median TFLOP/s, {op} {dtype} {layout} (event; rows: G, columns: mean rows per group)")
            lines.append("  " + f"{'G':>5} " + " ".join(f"{b:>8}" for b in _BUCKETS))
            for g in sorted({k[0] for k in cells}):
                vals = [
                    f"{statistics.median(cells[(g, b)]):>8.0f}" if cells.get((g, b)) else f"{'-':>8}" for b in _BUCKETS
                ]
                lines.append("  " + f"{g:>5} " + " ".join(vals))
    return lines


def _speedup_lines(ev: Sequence[Mapping[str, Any]]) -> list[str]:
    """Median bf16 time / fp8 time on the same group vector, by op, G and mean rows per group."""
    lines: list[str] = []
    pairs: dict[tuple[str, int, str], list[float]] = defaultdict(list)
    base = {(r["shape_id"], r["vector"]): r for r in ev if r["dtype"] == "bf16" and r["layout"] == "a_row_b_col"}
    base.update({(r["shape_id"], r["vector"]): r for r in ev if r["dtype"] == "bf16" and r["layout"] == "a_col_b_row"})
    for r in ev:
        b = base.get((r["shape_id"], r["vector"]))
        if r["dtype"] == "fp8_e4m3" and b:
            pairs[(r["op"], r["G"], _m_bucket(r["total_rows_requested"] / r["G"]))].append(b["time_s"] / r["time_s"])
    if not pairs:
        return lines
    lines.append(
        "median bf16 time / fp8 time on the same group vector (fp8 padded; fwd vs bf16 a_row_b_col, "
        "wgrad vs bf16 a_col_b_row)"
    )
    for op in ("fwd", "wgrad"):
        gs = sorted({k[1] for k in pairs if k[0] == op})
        if not gs:
            continue
        lines.append(f"  {op:<5} {'G':>4} " + " ".join(f"{b:>7}" for b in _BUCKETS))
        for g in gs:
            vals = [
                f"{statistics.median(pairs[(op, g, b)]):>7.2f}" if pairs.get((op, g, b)) else f"{'-':>7}"
                for b in _BUCKETS
            ]
            lines.append(f"  {'':<5} {g:>4} " + " ".join(vals))
    return lines


def _kernel_lines(ev: Sequence[Mapping[str, Any]], kr: Sequence[Mapping[str, Any]]) -> list[str]:
    """The event-minus-kernel gap per item and the most common main kernels (library, schedule, dtype)."""
    lines: list[str] = []
    k_by_id = {r["id"]: r for r in kr}
    gaps = [(r["time_s"] - k_by_id[r["id"]]["time_s"]) * 1e6 for r in ev if r["id"] in k_by_id]
    if gaps:
        lines.append(
            f"event - kernel gap over {len(gaps)} items: median {statistics.median(gaps):.2f} us, "
            f"p20 {quantile(gaps, 0.2):.2f}, p80 {quantile(gaps, 0.8):.2f}"
        )
    mains = Counter(
        f"{(r.get('main_kernel_info') or {}).get('library')} {(r.get('main_kernel_info') or {}).get('schedule')} "
        f"{r['dtype']}"
        for r in kr
    )
    if mains:
        lines.append(
            "main kernel (library, schedule, dtype): " + ", ".join(f"{k} x{n}" for k, n in mains.most_common(6))
        )
    return lines


def _neighbour_lines(nb: Sequence[Mapping[str, Any]], nbk: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The fp8 neighbours: event median per pass, kernel time, step to the previous size of the series."""
    if not nb:
        return []
    lines = ["fp8 neighbours (x @ W.T, event median us per pass; kernel us; step % to the previous size)"]
    by: dict[tuple[str, str, int, int, int], dict[int, float]] = defaultdict(dict)
    for r in nb:
        by[(r["series"], r["scaling"], r["M"], r["K"], r["N"])][r["pass"]] = r["time_s"]
    prev: dict[tuple[str, str], float] = {}
    for key in sorted(by, key=lambda k: (k[0], k[1], k[2], k[3], k[4])):
        ser, sc, M, K, N = key
        t = by[key]
        mean = statistics.fmean(t.values())
        kid = f"nb_{ser}_{M}x{K}x{N}_{sc}_p0"
        kt = nbk.get(kid, {}).get("time_s")
        step = f"{(mean / prev[(ser, sc)] - 1) * 100:+6.1f}" if (ser, sc) in prev else f"{'':>6}"
        prev[(ser, sc)] = mean
        passes = " ".join(f"{t[p] * 1e6:8.1f}" if p in t else f"{'-':>8}" for p in range(NEIGHBOUR_PASSES))
        ktxt = f"{kt * 1e6:8.1f}" if kt else f"{'-':>8}"
        lines.append(f"  {ser:<8} {sc:<10} {M:>5}x{K:>5}x{N:>5} {passes} {ktxt} {step}")
    return lines


def summarize(folder: str | Path, *, suffix: str = "", families: Sequence[str] | None = None) -> str:
    """Tables of the datasets in ``folder``: probes, record counts per op/format/layout/family, median TFLOP/s by G
    and mean rows per group (fwd bf16 a_row_b_col and fp8), the median fp8 / bf16 speed-up on the same vectors, the
    event-minus-kernel gap, and the fp8 neighbours' times with the step to the next neighbour. ``families``: the
    grouped tables over these families only."""
    folder = Path(folder)
    probes = [r for r in _records(folder, PROBE_FILE, suffix) if r.get("op") == "probe"]
    lines = _probe_lines(probes)
    fams = None if families is None else set(families)

    def keep(r: Mapping[str, Any]) -> bool:
        return r.get("op") in ("fwd", "wgrad") and (fams is None or r.get("family") in fams)

    ev = [r for r in _records(folder, TIME_FILE, suffix) if keep(r)]
    kr = [r for r in _records(folder, KERNELS_FILE, suffix) if keep(r)]
    lines.append(f"grouped: {len(ev)} event records, {len(kr)} kernel records in {folder}")
    lines += _count_lines(ev) + _tflops_lines(ev) + _speedup_lines(ev) + _kernel_lines(ev, kr)
    nb = [r for r in _records(folder, NB_TIME_FILE, suffix) if r.get("op") == "gemm"]
    nbk = {r["id"]: r for r in _records(folder, NB_KERNELS_FILE, suffix)}
    lines += _neighbour_lines(nb, nbk)
    return "\n".join(lines)
