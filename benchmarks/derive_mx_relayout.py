"""Write perfmodel/calibrations/h200_mxfp8_relayout.json from our H200 timing of torchao's mxfp8 scale re-layouts.

    python benchmarks/derive_mx_relayout.py [--data benchmarks/data/h200_2026-12-03f/mxfp8_relayout.json.gz]

The file keeps every timed case (kernel, rows, cols, groups, median event time) and where it was measured;
``perfmodel.moe.mx_relayout`` prices a re-layout at the measured case nearest in log(rows, cols, groups). No
number is fitted; published figures (torchao's README) are not read here.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "perfmodel" / "calibrations" / "h200_mxfp8_relayout.json"
DATA = ROOT / "benchmarks" / "data" / "h200_2026-12-03f" / "mxfp8_relayout.json.gz"


def build(doc: dict) -> dict:
    recs = [[r["kernel"], r["rows"], r["cols"], r["groups"], r["time_s"]] for r in doc["records"] if "time_s" in r]
    m = doc["meta"]
    return {
        "schema": "perfmodel.calibrations.mxfp8_relayout/1",
        "what": "torchao 0.17 mxfp8 scale re-layout kernels (prototype/moe_training/kernels/mxfp8/quant.py), "
        "triton.testing.do_bench median event time, L2 flushed",
        "measured": {k: m[k] for k in ("date_utc", "gpu", "gpu_uuid", "torch", "triton", "torchao")},
        "source": str(DATA.relative_to(ROOT)),
        "command": "python -m perfmodel.bench.mxfp8_kernels --kernels "
        "rearrange_2d_K_groups,rearrange_2d_M_groups,rearrange_per_group_3d",
        "fields": ["kernel", "rows", "cols", "groups", "time_s"],
        "records": recs,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    a = ap.parse_args(argv)
    doc = json.loads(gzip.decompress(a.data.read_bytes()))
    OUT.write_text(json.dumps(build(doc), indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
