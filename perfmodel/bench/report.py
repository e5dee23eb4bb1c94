"""A short text summary of the datasets in a folder (``python -m perfmodel.bench report --out DIR``).

Pure Python: reads the JSON files written by the sweeps, prints the headline figures (record counts
per op/format/recipe, best GEMM TFLOP/s, copy TB/s, launch µs, compile seconds).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

__all__ = ["load_records", "summarize"]


def load_records(folder: str | Path) -> dict[str, dict[str, Any]]:
    """``{file stem: dataset}`` for every ``*.json`` dataset (with ``records``) in ``folder``."""
    out = {}
    for path in sorted(Path(folder).glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("records"), list):
            out[path.stem] = data
    return out


def summarize(folder: str | Path) -> str:
    """The summary table as text."""
    datasets = load_records(folder)
    records = [r for d in datasets.values() for r in d["records"]]
    names = ", ".join(f"{k} ({len(v['records'])})" for k, v in datasets.items())
    lines = [f"datasets: {names or 'none'}"]
    gemm = [r for r in records if r.get("op") == "gemm"]
    if gemm:
        by_fmt: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in gemm:
            by_fmt[r["dtype"] + ("" if r.get("scaling") is None else "_" + r["scaling"])].append(r)
        lines.append("gemm format            records  families                         best TFLOP/s (M,K,N)")
        for fmt, rs in by_fmt.items():
            best = max(rs, key=lambda r: r.get("tflops") or 0)
            fam = dict(Counter(r.get("family") for r in rs))
            lines.append(
                f"  {fmt:<22} {len(rs):>6}  {json.dumps(fam):<32} {best.get('tflops', 0):7.1f} "
                f"({best['M']},{best['K']},{best['N']})"
            )
    copies = [r for r in records if r.get("op") == "copy"]
    if copies:
        best = max(copies, key=lambda r: r["bytes"] / r["time_s"])
        lines.append(
            f"copy: best {best['bytes'] / best['time_s'] / 1e9:.0f} GB/s (read+write) at "
            f"{best['size_bytes'] / 2**20:.0f} MiB; {len(copies)} sizes"
        )
    casts = [r for r in records if r.get("op") == "cast"]
    if casts:
        top = max(r["elements"] for r in casts)
        lines.append(
            f"cast @{top} elements: "
            + ", ".join(
                f"{r['variant']} {r['time_s'] * 1e6:.0f} us ({r['bytes'] / r['time_s'] / 1e9:.0f} GB/s)"
                for r in casts
                if r["elements"] == top
            )
        )
    launches = [r for r in records if r.get("op") == "launch"]
    if launches:
        lines.append(
            "launch: " + ", ".join(f"{r['kernel']}/{r['method']} {r['time_s'] * 1e6:.2f} us" for r in launches)
        )
    linear = [r for r in records if r.get("op") == "linear"]
    if linear:
        lines.append("linear recipe           records  dynamic  first-step s (median)  fp8 gemms/step")
        by_recipe: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for r in linear:
            by_recipe[(r["recipe"], str(r.get("dynamic")))].append(r)
        for (recipe, dyn), rs in by_recipe.items():
            firsts = sorted(r["first_step_s"] for r in rs)
            lines.append(
                f"  {recipe:<22} {len(rs):>6}  {dyn:<7}  {firsts[len(firsts) // 2]:8.2f} (max {firsts[-1]:.1f})"
                f"        {max(r.get('fp8_gemm_kernels_per_step', 0) for r in rs):.0f}"
            )
        for d in datasets.values():
            for sec in d.get("meta", {}).get("sections", {}).values():
                for g in sec.get("groups", []):
                    lines.append(
                        f"  compile K={g['K']} N={g['N']} {g['recipe']}: first steps "
                        + ", ".join(f"{s:.1f}" for s in g["first_step_s"])
                        + " s"
                    )
    return "\n".join(lines)
