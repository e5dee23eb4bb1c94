"""What Triton's own Proton viewer reads from profiles, saved as JSON so perfmodel's reader can be
checked against it in CI without triton or hatchet installed.

``python -m perfmodel.bench.viewer_ref tests/data/h200_proton_*.hatchet --out tests/data/viewer_reference.json``

Needs ``triton`` (for ``triton.profiler.viewer``) and ``llnl-hatchet``; no GPU. For each file it
records the frames (path of names, exclusive and inclusive metrics), the totals at the root, the
sums over all leaves, the viewer's ``util`` per kernel frame, and, per include pattern, what
``viewer.parse(["time/s"], file, include=pattern)`` keeps (leaf sums after the filter).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["PATTERNS", "main", "viewer_reference"]

PATTERNS = (".*matmul.*", ".*fp8.*", ".*nvjet.*", "triton_.*", ".*cublas.*", ".*vector_add.*", ".*step0.*")
METRICS = ("time (ns)", "count", "flops8", "flops16", "bytes")


def _num(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _path(node: Any) -> list[str]:
    names = []
    while node is not None:
        names.append(node.frame["name"])
        node = node.parents[0] if node.parents else None
    return names[::-1]


def _leaf_sums(gf: Any) -> dict[str, float]:
    df = gf.dataframe
    sums = {m: 0.0 for m in METRICS if m in df.columns}
    n = 0
    for node in gf.graph.traverse():
        if node.children or node not in df.index:
            continue
        n += 1
        for m in sums:
            sums[m] += _num(df.loc[node, m]) or 0.0
    return {**sums, "leaves": n}


def viewer_reference(paths: Sequence[str | Path]) -> dict[str, Any]:
    """The reference dictionary for ``paths`` (see module doc)."""
    from triton.profiler import viewer

    out: dict[str, Any] = {
        "generated_with": {
            "triton": metadata.version("triton"),
            "llnl-hatchet": metadata.version("llnl-hatchet"),
            "function": "triton.profiler.viewer.read / parse / derive_metrics",
        },
        "units": {"time (ns)": "ns", "bytes": "B", "flops8": "FLOP", "flops16": "FLOP", "util": "fraction"},
        "files": {},
    }
    for path in map(Path, paths):
        gf, inclusive, _exclusive, device_info = viewer.read(str(path))
        df = gf.dataframe
        frames = []
        for node in gf.graph.traverse():
            row = df.loc[node]
            frames.append(
                {
                    "path": _path(node),
                    "exclusive": {m: _num(row[m]) for m in METRICS if m in df.columns and _num(row[m]) is not None},
                    "inclusive": {
                        m: _num(row[f"{m} (inc)"])
                        for m in METRICS
                        if f"{m} (inc)" in df.columns and _num(row[f"{m} (inc)"]) is not None
                    },
                }
            )
        root = gf.graph.roots[0]
        entry: dict[str, Any] = {
            "device_info": device_info,
            "inclusive_metrics": list(inclusive),
            "root_inclusive": {m: _num(df.loc[root, f"{m} (inc)"]) for m in METRICS if f"{m} (inc)" in df.columns},
            "all_leaves": _leaf_sums(gf),
            "frames": frames,
        }
        gf_u, inc_u, exc_u, dev_u = viewer.read(str(path))
        try:
            viewer.derive_metrics(gf_u, ["util"], inc_u, exc_u, dev_u)
            entry["util"] = {
                " / ".join(_path(node)): _num(gf_u.dataframe.loc[node, "util"])
                for node in gf_u.graph.traverse()
                if _num(gf_u.dataframe.loc[node, "util"]) is not None
            }
        except Exception as exc:  # util needs flops or bytes on kernel frames
            entry["util_error"] = f"{type(exc).__name__}: {exc}"
        queries = {}
        for pattern in PATTERNS:
            try:
                gf_q, _ = viewer.parse(["time/s"], str(path), include=pattern)
            except Exception as exc:  # hatchet raises EmptyFilter when nothing matches
                if type(exc).__name__ != "EmptyFilter":
                    queries[pattern] = {"error": f"{type(exc).__name__}: {exc}"}
                continue
            sums = _leaf_sums(gf_q)
            if sums["leaves"] and sums.get("time (ns)", 0) > 0:
                queries[pattern] = sums
        entry["include_queries"] = queries
        out["files"][path.name] = entry
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m perfmodel.bench.viewer_ref", description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+", type=Path)
    p.add_argument("--out", required=True, type=Path)
    args = p.parse_args(argv)
    args.out.write_text(json.dumps(viewer_reference(args.files), indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    from perfmodel.bench._device import run_cli

    raise SystemExit(run_cli(main))
