"""Predict a layer sweep before measuring it: the step model's step and kernel time for every config of the
planned sizes, and the groups its filter picks among the configs that will be measured (pre-registration).

    python benchmarks/predict_layer.py --sizes d5120 -o predicted.json
    # with the layer parameters of another commit (how h200_layer_fresh_d5120_predicted_2026-12-01.json was made):
    git show 3709b61:perfmodel/calibrations/h200_layer.json > /tmp/layer.json
    python benchmarks/predict_layer.py --sizes d5120 --layer-params /tmp/layer.json -o predicted.json
    # the mix-order rule's test configs (perfmodel.bench.layer.MIX_ORDER_CASES), the filter's picks (FILTER_CASES):
    python benchmarks/predict_layer.py --plan mix_order -o predicted.json
    python benchmarks/predict_layer.py --plan filter -o predicted.json

The output (``perfmodel.predictions/1``) is what ``python benchmarks/validate.py step`` scores the measurement against.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfmodel.bench import layer as L  # noqa: E402
from perfmodel.calibrate import layer as cl  # noqa: E402
from perfmodel.step import best_convert  # noqa: E402
from perfmodel.step.params import SHIPPED_LAYER_FILE, load_layer_params  # noqa: E402

RECIPES = ("tensorwise", "rowwise", "rowwise_with_gw_hp")


def predictions(sizes: list[str], params_file: Path, plan: str = "sweep") -> dict[str, Any]:
    """The predictions document for the configs :func:`perfmodel.bench.layer.layer_plan` plans for ``sizes``
    (``plan="mix_order"`` or ``"filter"``: :func:`perfmodel.bench.layer.named_plan`'s, ``sizes`` ignored); each
    record says whether the model expects inductor's mix-order norm-backward variant (``mix_order_cast``); the
    ``filter`` plan's document also holds the filter's free choice per case and recipe."""
    params = load_layer_params(params_file)
    specs = L.named_plan(plan) if plan != "sweep" else L.layer_plan(sizes=[L.layer_size(s) for s in sizes])
    records = []
    for s in specs:
        rec = L.base_record(s)  # the record the sweep will write, measurements empty
        lt = cl.LayerCase(rec).predict(params)
        records.append(
            {k: rec[k] for k in ("id", "case", "recipe", "subset", "converted")}
            | {
                "step_s": float(lt.step_s),
                "kernel_s": float(lt.kernel_s),
                "mix_order_cast": any(k.kind == "mix_order_cast" and float(k.bytes) > 0 for k in lt.kernels),
            }
        )
    choices = {}
    if plan == "filter":  # the filter's free choice (any of the 16 group subsets) per case and float8 recipe
        for case in sorted({s.case for s in specs}):
            c = cl.LayerCase(L.base_record(next(s for s in specs if s.case == case)))
            for recipe in sorted({s.recipe for s in specs if s.case == case} - {"bf16"}):
                opts = dict(gpu="H200", seq_len=c.seq_len, batch=c.batch, recipe=recipe, layer_params=params)
                choices[f"{case} {recipe}"] = list(best_convert(c.layer, **opts))
    for case in sorted({s.case for s in specs} if plan == "sweep" else ()):
        c = cl.LayerCase(L.base_record(next(s for s in specs if s.case == case)))
        for recipe in RECIPES:
            cands = [tuple(s.groups) for s in specs if s.case == case and s.recipe == recipe and s.subset != "q"]
            opts = dict(gpu="H200", seq_len=c.seq_len, batch=c.batch, recipe=recipe, layer_params=params)
            choices[f"{case} {recipe}"] = list(best_convert(c.layer, candidates=[*cands, ()], **opts))
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    return {
        "schema": "perfmodel.predictions/1",
        "meta": {
            "date": datetime.date.today().isoformat(),
            "what": "the step model's predictions for "
            + (", ".join(sizes) if plan == "sweep" else f"the {plan} plan")
            + " before it was measured",
            "commit": commit,
            "model": str(params_file.relative_to(ROOT)) if params_file.is_relative_to(ROOT) else str(params_file),
            "gpu": "H200",
        },
        "records": records,
        "choices": choices,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="d5120", help="comma-separated layer sizes (perfmodel.bench.layer)")
    ap.add_argument("--plan", default="sweep", choices=L.PLANS, help="sweep (of --sizes), mix_order or filter")
    ap.add_argument("--layer-params", type=Path, default=SHIPPED_LAYER_FILE, help="a layer calibration JSON")
    ap.add_argument("-o", "--out", type=Path, help="write here (default: print)")
    args = ap.parse_args()
    doc = predictions([s.strip() for s in args.sizes.split(",") if s.strip()], args.layer_params.resolve(), args.plan)
    text = json.dumps(doc, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
