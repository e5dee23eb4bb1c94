"""Validation report: the calibrated H200 model against held-out H200 measurements.

Recomputes everything from the committed data (``benchmarks/data/h200_2026-11-30/h200_*.json.gz``):
fits :class:`perfmodel.calibrate.Calibrator` on the training split (a deterministic hash of each
shape), then scores on the held-out split, next to constant-fraction rooflines scored on the same
shapes:

* **original** — torchao's 2024 model: GEMMs at 60 % of the datasheet peak (no memory term, no
  floor), casts at 92 % of the bandwidth, 2 µs per tiny kernel, its ``dynamic`` cast kernels;
* **roofline 0.78** — ``max(FLOP / (0.78·peak), bytes / (0.92·BW), 2 µs)`` with our recipe kernels.

    python benchmarks/validate.py gemm            # print the report
    python benchmarks/validate.py gemm --write    # also rewrite docs/validation/{gemm,published,layouts,errorbars}.md,
                                                  # the summary's rows, the PNG, the shipped
                                                  # perfmodel/calibrations/h200.json and error_bars.json
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]  # the repository (this file is benchmarks/harness/*.py)
sys.path.insert(0, str(ROOT))

import perfmodel as pm  # noqa: E402
from benchmarks.harness import tables  # noqa: E402
from benchmarks.harness.calibrate_tiles import SWEEP_DATES, sweep_path  # noqa: E402
from benchmarks.harness.validate_tiles import fit_shapes, kind_of  # noqa: E402
from perfmodel import float8  # noqa: E402
from perfmodel.calibrate import (  # noqa: E402
    Calibrator,
    _fit_casts,
    _fit_step_gemm,
    _step_gemm_ratio,
    ape_stats,
    is_dynamic,
    is_heldout,
    load_dataset,
    read_data_json,
)
from perfmodel.errors import CalibrationError  # noqa: E402
from perfmodel.models.errorbars import SCHEMA as ERRORBARS_SCHEMA  # noqa: E402
from perfmodel.models.errorbars import SHAPE_FAMILIES, shape_family  # noqa: E402
from perfmodel.models.tiles import fallback_mask  # noqa: E402
from perfmodel.specs.gpu import GPUS, Efficiency  # noqa: E402

DATA = ROOT / "benchmarks" / "data" / "h200_2026-11-30"  # the raw 2026-11-30 sweeps (gzipped; not in the wheel)
FRESH = DATA / "fresh"  # measured after the fit; never fitted on
DOC = ROOT / "docs" / "validation.md"
PNG = ROOT / "docs" / "img" / "validation_h200.png"
SHIPPED = ROOT / "perfmodel" / "calibrations" / "h200.json"
BEGIN, END = "<!-- validation:begin -->", "<!-- validation:end -->"
PUBLISHED_BEGIN, PUBLISHED_END = "<!-- published:begin -->", "<!-- published:end -->"
PUBLISHED = ROOT / "benchmarks" / "published"  # other projects' numbers: scored against, never fitted on
LAYOUT_SWEEP = ROOT / "benchmarks" / "data" / "h200_2026-12-01"  # measured after the fit; never fitted on
#: the layout-sweep sessions the tile model's error bars come from, pooled: benchmarks/harness/validate_tiles.py's
#: FRESH_SESSIONS (a test holds the two equal), each in no fit and measured after the formula fits
TILES_FRESH_SESSIONS = ("_fresh2037", *(f"_fresh{seed}" for seed in range(2071, 2087)))
#: how many distinct GPUs those sessions ran on (benchmarks/harness/validate_tiles.py's FRESH_GPUS; a test holds it)
TILES_FRESH_GPUS = 10


@functools.cache
def _layout_sweep(timing: str, session: str = "") -> tuple[dict[str, Any], ...] | None:
    """The records of one layout-sweep file (read once per run): ``timing`` "kernel" (profiled) or "event"
    (do_bench); ``session`` "" (seed 0), "_repeat" (seed 0 again), "_fresh" (seed 2026) or "_fresh_repeat" (seed
    2026 again). ``None`` if absent."""
    path = sweep_path("kernels" if timing == "kernel" else "time", session, LAYOUT_SWEEP)
    return tuple(read_data_json(path)["records"]) if path.exists() else None


LAYOUTS_BEGIN, LAYOUTS_END = "<!-- layouts:begin -->", "<!-- layouts:end -->"
ERRORBARS_BEGIN, ERRORBARS_END = "<!-- errorbars:begin -->", "<!-- errorbars:end -->"
ERROR_BARS = ROOT / "perfmodel" / "calibrations" / "error_bars.json"
MIN_FAMILY_N = 20  # a family gets a bar of its own from this many measurements on (else it uses "all")
FAMILIES = ("llm", "square", "small_m", "random", "odd")
HELDOUT = 0.3
GEMM_GROUPS = {
    "bf16": ("bf16", None),
    "fp8_e4m3/tensorwise": ("fp8_e4m3", "tensorwise"),
    "fp8_e4m3/rowwise": ("fp8_e4m3", "rowwise"),
}
RECIPES = ("tensorwise", "rowwise", "rowwise_with_gw_hp")
CLOSE_CALL = 0.05  # decisions on shapes whose measured speedup is within 5 % of 1 are reported apart


def baselines(spec: pm.GPUSpec) -> dict[str, tuple[pm.GPUSpec, str]]:
    """The constant-fraction models scored next to ours: name -> (GPU spec, time model name)."""
    original = dataclasses.replace(spec, calibration=None, efficiency=GPUS["H100-2.4TB"].efficiency)
    flat = dataclasses.replace(
        spec,
        calibration=None,
        efficiency=Efficiency(
            gemm_fraction=0.78,
            mem_bw_fraction=0.92,
            launch_overhead_s=2e-6,
            source="constant-fraction baseline of the validation report",
        ),
    )
    return {"original 60%/92%": (original, "original"), "roofline 0.78": (flat, "roofline")}


def score_gemms(
    records: list[dict[str, Any]],
    models: dict[str, tuple[pm.GPUSpec, str | None]],
    event_overhead_s: float,
    points: dict[str, Any],
    prefix: str,
) -> dict[str, Any]:
    """APE statistics of every model on ``records`` (GEMM sweep records), per format group."""
    out: dict[str, Any] = {}
    for group, (dtype, scaling) in GEMM_GROUPS.items():
        rs = [r for r in records if r["op"] == "gemm" and r["dtype"] == dtype and r.get("scaling") == scaling]
        if not rs:
            continue
        M, K, N, t = (np.array([r[f] for r in rs]) for f in ("M", "K", "N", "time_s"))
        out[group] = {}
        for name, (spec, model) in models.items():
            pred = np.asarray(pm.gemm_time_s(M, K, N, dtype, spec, scaling, time_model=model), float)
            if model is None:  # ours predicts kernel time; the sweep timed calls with CUDA events
                pred = pred + event_overhead_s
            out[group][name] = ape_stats(pred, t)
            points.setdefault(f"{prefix} {group}", {})[name] = (pred.tolist(), t.tolist())
    return out


def score_fresh(models: dict[str, tuple[pm.GPUSpec, str | None]], event_overhead_s: float) -> dict[str, Any]:
    """The fitted model on measurements taken after the fit, of shapes no dataset held (``data/fresh``)."""
    files = sorted(FRESH.glob("h200_*.json.gz"))
    if not files:
        return {}
    recs = load_dataset(files)["records"]
    fresh: dict[str, Any] = {"gemm": score_gemms(recs, models, event_overhead_s, {}, "fresh"), "linear": {}}
    steps: dict[tuple[int, int, int], dict[str, float]] = defaultdict(dict)
    for r in recs:
        if r["op"] == "linear" and not is_dynamic(r):
            steps[r["M"], r["K"], r["N"]][r["recipe"]] = r["step_kernel_time_s"]
    for recipe in RECIPES:
        shapes = [s for s, v in steps.items() if "bf16" in v and recipe in v]
        if not shapes:
            continue
        meas = np.array([steps[s]["bf16"] / steps[s][recipe] for s in shapes])
        spec = models["perfmodel calibrated"][0]
        pred = np.array([float(float8.speedup(*s, recipe, spec)) for s in shapes])
        fresh["linear"][recipe] = {
            **ape_stats(pred, meas),
            "agree": int(np.sum((pred >= 1) == (meas >= 1))),
            "shapes": [list(s) for s in shapes],
        }
    return fresh


def evaluate(files: list[Path]) -> dict[str, Any]:
    """Fit on the training split and score every model on the held-out split."""
    data = load_dataset(files)
    cal = Calibrator(gpu="H200", heldout_fraction=HELDOUT).fit(data)
    ours = cal.gpu_
    models = {"perfmodel calibrated": (ours, None), **baselines(ours)}
    recs = data["records"]
    report: dict[str, Any] = {"meta": data["meta"], "gemm": {}, "linear": {}, "decisions": {}, "points": {}}

    heldout = [r for r in recs if r["op"] == "gemm" and is_heldout(r["M"], r["K"], r["N"], fraction=HELDOUT)]
    report["gemm"] = score_gemms(heldout, models, cal.model_.kernels.event_overhead_s, report["points"], "gemm")

    # Linear steps: leave one shape out. For every measured (compile mode, shape), refit the cast and
    # in-step parameters on the other shapes (the GEMM model stays the train-split fit above) and
    # predict its speedup; the constant-fraction baselines have nothing to fit and are scored as they are.
    lin_recs = [r for r in recs if r["op"] == "linear"]
    by_shape: dict[tuple[str, tuple[int, int, int]], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in lin_recs:
        by_shape["dynamic M" if is_dynamic(r) else "static", (r["M"], r["K"], r["N"])][r["recipe"]].append(
            r["step_kernel_time_s"]
        )
    base = dataclasses.replace(cal.model_, casts={}, step_gemm_factors={})
    # each record's in-step GEMM ratio under ``base``, priced once (every fold refits on the others with that model)
    step_ratio = {id(r): _step_gemm_ratio(r, base, ours) for r in lin_recs}
    pairs: dict[str, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    linear_times: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for (compile_, shape), times in sorted(by_shape.items()):
        rest = [r for r in lin_recs if (r["M"], r["K"], r["N"]) != shape]
        loo = dataclasses.replace(
            base,
            casts=_fit_casts(rest, base),
            step_gemm_factors=_fit_step_gemm(rest, base, ours, lambda r, *_: step_ratio[id(r)]),
        )
        specs = {"perfmodel calibrated": (dataclasses.replace(ours, calibration=loo), None), **baselines(ours)}
        if compile_ == "static":  # Linear times (bf16 and every recipe): the linear_time error bars
            for recipe in ("bf16", *RECIPES):
                if recipe in times:
                    # the roofline as users get it: the H200's own efficiency, not the 0.78 baseline's
                    for name, spec, model in (
                        ("perfmodel calibrated", specs["perfmodel calibrated"][0], None),
                        ("roofline", ours, "roofline"),
                    ):
                        rec = None if recipe == "bf16" else recipe
                        pred = float(float8.linear_time(*shape, rec, spec, time_model=model).total_s)
                        linear_times[name].append((pred, float(np.median(times[recipe]))))
        for recipe in RECIPES:
            if "bf16" not in times or recipe not in times:
                continue
            meas = float(np.median(times["bf16"]) / np.median(times[recipe]))
            for name, (spec, model) in specs.items():
                if model == "original":  # its own recipe: dynamic scaling, amax fused with the previous op
                    kw = {"fuse_input_with_prev": True, "fuse_grad_output_with_prev": True}
                    fp8 = float8.linear_time(*shape, "dynamic", spec, time_model=model, **kw).total_s
                else:
                    fp8 = float8.linear_time(
                        *shape, recipe, spec, time_model=model, dynamic_shapes=compile_ == "dynamic M"
                    ).total_s
                pred = float(float8.linear_time(*shape, None, spec, time_model=model).total_s / fp8)
                pairs[f"{recipe} ({compile_})"][name].append((pred, meas))
    for row in sorted(pairs, key=lambda r: (r.endswith("M)"), r)):
        report["linear"][row], report["decisions"][row] = {}, {}
        for name, pm_pairs in pairs[row].items():
            pred, meas = np.array(pm_pairs).T
            report["linear"][row][name] = ape_stats(pred, meas)
            agree = int(np.sum((pred >= 1) == (meas >= 1)))
            clear = np.abs(meas - 1) > CLOSE_CALL  # measured gain or loss beyond the close-call band
            report["decisions"][row][name] = {
                "n": len(pred),
                "agree": agree,
                "share": agree / len(pred),
                "n_clear": int(clear.sum()),
                "agree_clear": int(np.sum(((pred >= 1) == (meas >= 1)) & clear)),
            }
            report["points"].setdefault(f"speedup {row}", {})[name] = (pred.tolist(), meas.tolist())
    report["linear_time_points"] = {k: np.array(v).T.tolist() for k, v in linear_times.items()}
    report["fresh"] = score_fresh(models, cal.model_.kernels.event_overhead_s)
    report["calibration"] = cal.model_
    # the fit's inputs, by shape and group (what makes a GEMM of another sweep in-sample by shape)
    report["fit_shapes"], report["group_key"] = cal.fit_shapes_, cal.group_key
    gemm = [r for r in recs if r["op"] == "gemm"]
    heldout = sum(is_heldout(r["M"], r["K"], r["N"], fraction=HELDOUT) for r in gemm)
    report["counts"] = {
        "gemm_train": len(gemm) - heldout,
        "gemm_heldout": heldout,
        "linear_static": sum(1 for c, _ in by_shape if c == "static"),
        "linear_dynamic": sum(1 for c, _ in by_shape if c != "static"),
    }
    return report


def _cell(st: dict[str, float]) -> str:
    return f"{st['mdape']:.1f} / {st['p90']:.1f} / {st['max']:.0f}"


def _pair(st: dict[str, float]) -> str:
    return f"{st['mdape']:.1f} / {st['p90']:.1f}"


def markdown(rep: dict[str, Any]) -> str:
    """The report's tables as markdown."""
    names = list(next(iter(rep["gemm"].values())).keys())
    c = rep["counts"]
    out = [
        f"GEMMs: {c['gemm_train']} measurements fitted, {c['gemm_heldout']} held out ({HELDOUT:.0%} of "
        f"shapes by a hash of (M, K, N)). Linear steps: {c['linear_static']} static and "
        f"{c['linear_dynamic']} dynamic-M shapes, each predicted with the cast parameters refitted "
        "without it (leave one shape out).",
        "",
        "**GEMM time, held-out shapes** — absolute percentage error, MdAPE / p90 / max (%):",
        "",
        "| format | n | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for group, by_model in rep["gemm"].items():
        n = next(iter(by_model.values()))["n"]
        out.append(f"| {group} | {n} | " + " | ".join(_cell(s) for s in by_model.values()) + " |")
    out += [
        "",
        "**Linear fwd+bwd float8 speedup over bf16** — APE of the speedup, MdAPE / p90 / max (%):",
        "",
        "| recipe (compile) | n | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for row, by_model in rep["linear"].items():
        n = next(iter(by_model.values()))["n"]
        out.append(f"| {row} | {n} | " + " | ".join(_cell(s) for s in by_model.values()) + " |")
    out += [
        "",
        "**Enable/skip decisions that agree with measurement** (speedup ≥ 1 predicted vs measured); "
        f"in brackets, among shapes whose measured speedup is more than {CLOSE_CALL:.0%} away from 1:",
        "",
        "| recipe (compile) | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for row, by_model in rep["decisions"].items():
        out.append(
            f"| {row} | "
            + " | ".join(
                f"{d['agree']}/{d['n']} ({d['share']:.0%}) [{d['agree_clear']}/{d['n_clear']}]"
                for d in by_model.values()
            )
            + " |"
        )
    fresh = rep.get("fresh")
    if fresh:
        out += [
            "",
            "**Fresh shapes, measured after the fit** (`benchmarks/data/h200_2026-11-30/fresh/`: a new seed of "
            "the random GEMM family, the hardest one, and static Linear shapes none of the datasets had) — "
            "MdAPE / p90 / max (%):",
            "",
            "| GEMM format | n | " + " | ".join(names) + " |",
            "|---|---|" + "---|" * len(names),
        ]
        for group, by_model in fresh["gemm"].items():
            n = next(iter(by_model.values()))["n"]
            out.append(f"| {group} | {n} | " + " | ".join(_cell(s) for s in by_model.values()) + " |")
        out += ["", "| Linear speedup, static | n | perfmodel calibrated | decisions agree |", "|---|---|---|---|"]
        for recipe, st in fresh["linear"].items():
            out.append(f"| {recipe} | {st['n']} | {_cell(st)} | {st['agree']}/{st['n']} |")
    return "\n".join(out)


# -------------------------------------------------------------------------------------------------
# Published measurements of GPUs we did not measure (validation only: nothing is fitted on them)
# -------------------------------------------------------------------------------------------------
def _speedup_stats(pred: np.ndarray, meas: np.ndarray) -> dict[str, Any]:
    clear = np.abs(meas - 1) > CLOSE_CALL
    agree = (pred >= 1) == (meas >= 1)
    return {
        **ape_stats(pred, meas),
        "n_clear": int(clear.sum()),
        "agree_clear": int(agree[clear].sum()),
        "agree": int(agree.sum()),
        "bias": float(np.median(pred / meas)),
    }


def score_published_float8() -> dict[str, Any]:
    """Every cell of torchao's published H100 float8 tables against ``float8.speedup(M, K, N, recipe, gpu)``:
    the bare Linear, fwd+bwd, on the default H100 (SXM, transferred from the H200 calibration), on
    Meta's 2.4 TB/s 500 W H100 variant (the torchtitan pages' H100s), and with the two rooflines."""
    data = json.loads((PUBLISHED / "torchao_h100_float8.json").read_text())
    out: dict[str, Any] = {}
    for ds in data["datasets"]:
        rows = np.array(ds["rows"], dtype=float)
        M, K, N = (rows[:, i].astype(np.int64) for i in range(3))
        meas = rows[:, 3]
        recipe = ds["recipe"]
        models = {
            "perfmodel (transferred, H100-SXM)": ("H100", None),
            "perfmodel (transferred, H100-2.4TB)": ("H100-2.4TB", None),
            "roofline (H100-SXM)": ("H100", "roofline"),
            "original 60%/92% (H100-2.4TB)": ("H100-2.4TB", "original"),
        }
        out[ds["name"]] = {"recipe": recipe, "n": len(meas), "source": ds["source"].get("url", "")}
        for name, (gpu, model) in models.items():
            pred = np.asarray(float8.speedup(M, K, N, recipe, gpu, time_model=model), dtype=float)
            out[ds["name"]][name] = _speedup_stats(pred, meas)
    return out


def score_published_gemm() -> dict[str, Any]:
    """Published GEMM throughput of non-Hopper GPUs (not used by the estimates) against the estimated model
    and the roofline: APE of GEMM time."""
    data = json.loads((PUBLISHED / "gemm_throughput.json").read_text())
    out: dict[str, Any] = {}
    for ds in data["datasets"]:
        rows = np.array(ds["rows"], dtype=float)
        M, K, N = (rows[:, i].astype(np.int64) for i in range(3))
        meas = 2.0 * M * K * N / (rows[:, 3] * 1e12)
        out[ds["name"]] = {"gpu": ds["gpu"], "dtype": ds["dtype"], "n": len(meas)}
        for name, model in (("perfmodel (estimated)", None), ("roofline", "roofline")):
            pred = np.asarray(pm.gemm_time_s(M, K, N, ds["dtype"], ds["gpu"], ds["scaling"], time_model=model), float)
            out[ds["name"]][name] = {**ape_stats(pred, meas), "ape": (np.abs(pred - meas) / meas * 100).tolist()}
    all_ape = [a for d in out.values() for a in d["perfmodel (estimated)"]["ape"]]
    out["_all"] = {"n": len(all_ape), "mdape": float(np.median(all_ape))}
    return out


def markdown_published(pub: dict[str, Any], gemm: dict[str, Any]) -> str:
    """The published-data tables as markdown."""
    out = [
        "**torchao's published H100 float8 speedups** (LayerNorm → Linear → Sigmoid fwd+bwd, compiled; "
        "`benchmarks/published/`; the transferred rows are **post-selection**: the transfer rule was chosen on this "
        "table: the log of the transfer rules), predicted by the bare Linear "
        "`float8.speedup(M, K, N, recipe, gpu)` — "
        "APE of the speedup MdAPE / p90 / max (%), enable/skip agreement on cells more than "
        f"{CLOSE_CALL:.0%} away from 1, and the median predicted/measured ratio:",
        "",
        "| table | n | model | MdAPE / p90 / max | decisions (clear) | median pred/meas |",
        "|---|---|---|---|---|---|",
    ]
    for name, d in pub.items():
        for model, st in d.items():
            if not isinstance(st, dict) or "mdape" not in st:
                continue
            clear = f"{st['agree_clear']}/{st['n_clear']}" if st["n_clear"] else "-"
            if st["n_clear"]:
                clear += f" ({st['agree_clear'] / st['n_clear']:.0%})"
            out.append(f"| {name} ({d['recipe']}) | {d['n']} | {model} | {_cell(st)} | {clear} | {st['bias']:.2f} |")
    out += [
        "",
        "**Published GEMM throughput of GPUs with an estimated model** (figures the estimates were not built "
        "from; `benchmarks/published/gemm_throughput.json`) — APE of GEMM time, MdAPE / p90 / max (%):",
        "",
        "| data set | GPU | format | n | perfmodel (estimated) | roofline |",
        "|---|---|---|---|---|---|",
    ]
    for name, d in gemm.items():
        if name.startswith("_"):
            continue
        out.append(
            f"| {name} | {d['gpu']} | {d['dtype']} | {d['n']} | {_cell(d['perfmodel (estimated)'])} | "
            f"{_cell(d['roofline'])} |"
        )
    out.append(f"| all | | | {gemm['_all']['n']} | MdAPE {gemm['_all']['mdape']:.1f} | |")
    out += [
        "",
        "**What each estimate is built from** (`perfmodel/models/estimated.py`; published GEMM and "
        "bandwidth figures only, each with its source):",
        "",
        "| architecture | written against | figures | assumptions |",
        "|---|---|---|---|",
    ]
    from perfmodel.models.estimated import ESTIMATES

    for est in ESTIMATES.values():
        out.append(
            f"| {est.family} | {est.representative} | "
            + "<br>".join(est.sources())
            + " | "
            + "<br>".join(est.assumptions)
            + " |"
        )
    return "\n".join(out)


# -------------------------------------------------------------------------------------------------
# The 2026-12-01 layout sweep: every shape in bf16 rr / rc / cr and fp8 rc, event and kernel time,
# cuBLAS kernel names. Measured a day after the fit and never fitted on: an independent sweep.
# -------------------------------------------------------------------------------------------------
def _gemm_pred(r: dict[str, Any], timing: str) -> float:
    fmt = pm.get_format(r["dtype"])
    layout = r.get("layout", "rc") if fmt.bits >= 16 else "rc"
    return float(pm.gemm_time_s(r["M"], r["K"], r["N"], fmt, "H200", r.get("scaling"), layout=layout, timing=timing))


def score_layout_sweep() -> dict[str, Any]:
    """The shipped model on the layout sweep: kernel time per (format, layout, family), event time, the
    run-to-run floor against the 2026-11-30 sweep, and which kernels cuBLAS chose."""
    kern, event = list(_layout_sweep("kernel")), list(_layout_sweep("event"))
    out: dict[str, Any] = {"kernel": {}, "event": {}, "repeat": {}, "choice": {}}
    groups: dict[tuple[str, str, str], list[tuple[float, float]]] = defaultdict(list)
    for r in kern:
        group = r["dtype"] + (f"/{r['scaling']}" if r.get("scaling") else "")
        groups[group, r["layout"], r["family"]].append((_gemm_pred(r, "kernel"), r["time_s"]))
        groups[group, r["layout"], "all"].append((_gemm_pred(r, "kernel"), r["time_s"]))
    for (group, layout, family), pairs in sorted(groups.items()):
        pred, meas = np.array(pairs).T
        out["kernel"].setdefault(f"{group} {layout}", {})[family] = ape_stats(pred, meas)
    pred = np.array([_gemm_pred(r, "event") for r in event])
    meas = np.array([r["time_s"] for r in event])
    out["event"] = ape_stats(pred, meas)
    by_id = {r["id"]: r["time_s"] for r in kern}
    gaps = np.array([r["time_s"] - by_id[r["id"]] for r in event if r["id"] in by_id]) * 1e6
    out["event"]["gap_us"] = {q: float(np.percentile(gaps, q)) for q in (20, 50, 80)}
    # the same GEMM (shape, format, layout) timed on both days, both with CUDA events
    old = {}
    for r in load_dataset(sorted(DATA.glob("h200_gemm_*.json.gz")))["records"]:
        old[r["M"], r["K"], r["N"], r["dtype"], r.get("scaling"), r.get("layout", "rc")] = r["time_s"]
    pairs = [
        (r["time_s"], old[key])
        for r in event
        if (key := (r["M"], r["K"], r["N"], r["dtype"], r.get("scaling"), r.get("layout", "rc"))) in old
    ]
    if pairs:
        a, b = np.array(pairs).T
        out["repeat"] = ape_stats(a, b)
    out["fallback"] = score_fallback(kern)
    out["fresh"] = score_fresh_sweep()
    out["sessions"] = score_session_repeat(kern, event)
    out["fresh_floor"] = score_fresh_floor()
    out["choice_model"] = score_kernel_choice(kern)
    for r in kern:
        if r["dtype"] != "bf16":
            continue
        key = f"{r['layout']} {'fallback' if fallback_mask(r['M'], r['K'], r['N'], r['layout']) else 'Hopper'}"
        old_kernel = (r.get("main_kernel_sm") or 90) < 90
        n, k = out["choice"].get(key, (0, 0))
        out["choice"][key] = (n + 1, k + int(old_kernel))
    return out


def score_fresh_sweep() -> dict[str, Any]:
    """The shipped model on fresh shapes (seed 2026, the same family mix), measured in a later device
    session after the fallback group was fitted and committed: per format and layout, kernel and event
    time, and the bf16 GEMMs on cuBLAS's fallback kernels apart."""
    out: dict[str, Any] = {}
    for timing in ("kernel", "event"):
        records = _layout_sweep(timing, "_fresh")
        if records is None:
            return {}
        groups: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for r in records:
            if not r.get("time_s"):
                continue
            row = (_gemm_pred(r, timing), r["time_s"])
            groups[_group_name(r)].append(row)
            groups["all"].append(row)
            if r["dtype"] == "bf16" and fallback_mask(r["M"], r["K"], r["N"], r["layout"]):
                groups["bf16, fallback kernels"].append(row)
        for g, rows in groups.items():
            pred, meas = np.array(rows).T
            out.setdefault(g, {})[timing] = ape_stats(pred, meas)
    return out


def score_fallback(kern: list[dict[str, Any]]) -> dict[str, Any]:
    """The sweep's bf16 GEMMs on cuBLAS's fallback kernels (misaligned leading dimensions and more than one row, or
    K < 8: :func:`perfmodel.models.calibrated.fallback_kernels`), priced by the shipped model (its ``bf16@fallback``
    group) and by the same model without that group (the main group's per-alignment factors): MdAPE / p90 of
    kernel time."""
    spec = pm.get_gpu("H200")
    model = pm.time_model(spec).load()  # the shipped calibration (a CalibratedModel)
    without = dataclasses.replace(model, gemm={k: v for k, v in model.gemm.items() if not k.endswith("@fallback")})
    rows = [r for r in kern if r["dtype"] == "bf16" and fallback_mask(r["M"], r["K"], r["N"], r["layout"])]
    meas = np.array([r["time_s"] for r in rows])
    out = {}
    for name, m in (("fallback", model), ("factors", without)):
        pred = [
            float(pm.gemm_time_s(r["M"], r["K"], r["N"], "bf16", spec, layout=r["layout"], time_model=m)) for r in rows
        ]
        out[name] = ape_stats(np.array(pred), meas)
    return out


def _group_name(r: dict[str, Any]) -> str:
    return r["dtype"] + (f"/{r['scaling']}" if r.get("scaling") else "") + f" {r['layout']}"


def score_session_repeat(kern: list[dict[str, Any]], event: list[dict[str, Any]]) -> dict[str, Any]:
    """The same 4725 GEMMs (seed 0) measured again in a later device session (another machine of the
    pool, the same software): per format and layout, the model's error next to the run-to-run floor,
    both timings; and whether cuBLAS chose the same main kernel."""
    out: dict[str, Any] = {"rows": {}, "same_kernel": None}
    for timing, first in (("kernel", kern), ("event", event)):
        records = _layout_sweep(timing, "_repeat")
        if records is None:
            return out
        again = {r["id"]: r for r in records if r.get("time_s")}
        groups: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
        same = n = 0
        for r in first:
            other = again.get(r["id"])
            if other is None:
                continue
            row = (_gemm_pred(r, timing), r["time_s"], other["time_s"])
            groups[_group_name(r)].append(row)
            groups["all"].append(row)
            if timing == "kernel":
                n += 1
                same += int(other.get("main_kernel") == r.get("main_kernel"))
        for name, rows in groups.items():
            pred, meas, rep = np.array(rows).T
            out["rows"].setdefault(name, {})[timing] = {"model": ape_stats(pred, meas), "floor": ape_stats(rep, meas)}
        if timing == "kernel":
            out["same_kernel"] = (same, n)
    return out


#: sessions of the layout sweep: file suffix -> (seed, label); two seeds, each measured twice
SESSIONS = {
    "": (0, "first"),
    "_repeat": (0, "repeat"),
    "_fresh": (2026, "fresh"),
    "_fresh_repeat": (2026, "fresh repeat"),
}
HEAT_ITEMS = 30  # the GEMMs before an item whose measured time stands for the GPU's recent load


def _heat_s(records: list[dict[str, Any]], pos: int) -> float:
    """GPU seconds of the :data:`HEAT_ITEMS` sweep items measured before position ``pos`` (each item runs
    its warm-up and timed calls: 7 calls in the kernels phase)."""
    return sum(r["time_s"] for r in records[max(0, pos - HEAT_ITEMS) : pos]) * 7


def score_fresh_floor() -> dict[str, Any]:
    """How far two sessions of the layout sweep lie apart, and why: the fresh shapes measured twice in the same
    order (seed 2026 twice), and the ``llm`` family's fixed shapes — the same ids in every sweep, measured in
    all four sessions, in the order of seed 0 (twice) and of seed 2026 (twice) — per format and layout and
    timing (the model's error on the fresh session is :func:`score_fresh_sweep`'s); the shapes >= 20 %
    slower in every one of their five GEMMs in the fresh sessions; and the correlation of a GEMM's time ratio
    between the orders with the GPU time of the :data:`HEAT_ITEMS` items measured before it."""
    out: dict[str, Any] = {"rows": {}}
    for timing in ("kernel", "event"):
        lists = {sfx: _layout_sweep(timing, sfx) for sfx in SESSIONS}
        if any(v is None for v in lists.values()):
            return {}
        by_id = {sfx: {r["id"]: r for r in recs if r.get("time_s")} for sfx, recs in lists.items()}
        fresh, again = by_id["_fresh"], by_id["_fresh_repeat"]
        groups: dict[str, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
        slow: dict[str, list[float]] = defaultdict(list)
        for i, r in fresh.items():
            if i not in again:
                continue
            for g in (_group_name(r), "all"):
                groups[g]["same order, fresh shapes"].append((again[i]["time_s"], r["time_s"]))
            if not all(i in by_id[sfx] for sfx in SESSIONS):
                continue  # the comparisons across orders take the shapes every session measured
            for g in (_group_name(r), "all"):
                groups[g]["same order, shared shapes"].append((by_id["_repeat"][i]["time_s"], by_id[""][i]["time_s"]))
                groups[g]["other order, shared shapes"].append((r["time_s"], by_id[""][i]["time_s"]))
            slow[r["shape_id"]].append(min(r["time_s"], again[i]["time_s"]) / by_id[""][i]["time_s"])
        for name, kinds in groups.items():
            out["rows"].setdefault(name, {})[timing] = {k: ape_stats(*np.array(v).T) for k, v in kinds.items()}
        if timing == "kernel":
            out["shapes"] = len(slow)
            out["slow_shapes"] = sorted(k for k, v in slow.items() if len(v) == 5 and min(v) >= 1.2)
            pos = {sfx: {r["id"]: n for n, r in enumerate(lists[sfx])} for sfx in ("", "_fresh")}
            shared = [i for i in fresh if i in by_id[""]]
            heat = [_heat_s(lists["_fresh"], pos["_fresh"][i]) - _heat_s(lists[""], pos[""][i]) for i in shared]
            ratio = [math.log(fresh[i]["time_s"] / by_id[""][i]["time_s"]) for i in shared]
            out["heat_corr"] = float(np.corrcoef(heat, ratio)[0, 1])
            out["same_kernel"] = (
                sum(fresh[i]["main_kernel"] == by_id[""][i]["main_kernel"] for i in shared),
                len(shared),
            )
    return out


def score_kernel_choice(kern: list[dict[str, Any]]) -> dict[str, Any]:
    """Two tests of a kernel-choice lookup on the sweep's kernel names, split 50/50 by shape (md5 of
    the shape id): (1) predict each test GEMM's main kernel as its nearest training shape's (same
    format and layout, distance in log2 M, K, N); (2) correct the model by the median log residual of
    the kernel it ran (given the true kernel: an upper bound for any lookup of the choice)."""
    import hashlib

    def part(r: dict[str, Any]) -> int:
        return int(hashlib.md5(r["shape_id"].encode()).hexdigest(), 16) % 2

    res = {r["id"]: math.log(r["time_s"] / _gemm_pred(r, "kernel")) for r in kern}
    train = [r for r in kern if part(r) == 0]
    test = [r for r in kern if part(r) == 1]
    by_group: dict[str, list[dict[str, Any]]] = defaultdict(list)
    corr_rows: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in train:
        by_group[_group_name(r)].append(r)
        corr_rows[_group_name(r), r["main_kernel"]].append(res[r["id"]])
    corr = {k: float(np.median(v)) for k, v in corr_rows.items() if len(v) >= 3}
    feats = {g: np.log2([[c["M"], c["K"], c["N"]] for c in rows]) for g, rows in by_group.items()}
    hits, base, oracle, smooth = 0, [], [], []
    for r in test:
        g = _group_name(r)
        dist = ((feats[g] - np.log2([r["M"], r["K"], r["N"]])) ** 2).sum(axis=1)
        order = np.argsort(dist, kind="stable")
        hits += int(by_group[g][int(order[0])]["main_kernel"] == r["main_kernel"])
        base.append(math.exp(res[r["id"]]))
        oracle.append(math.exp(res[r["id"]] - corr.get((g, r["main_kernel"]), 0.0)))
        near = [res[by_group[g][int(i)]["id"]] for i in order[:KNN_RESIDUAL_K]]
        smooth.append(math.exp(res[r["id"]] - float(np.median(near))))
    ones = np.ones(len(test))
    return {
        "test": len(test),
        "nearest_right": hits,
        "model": ape_stats(ones, np.array(base)),
        "oracle_corrected": ape_stats(ones, np.array(oracle)),
        "knn_corrected": ape_stats(ones, np.array(smooth)),
    }


#: neighbours whose median residual corrects a GEMM in the residual-smoothness test
KNN_RESIDUAL_K = 5


def markdown_layouts(lay: dict[str, Any]) -> str:
    """The layout-sweep tables as markdown."""
    fams = [f for f in FAMILIES if any(f in v for v in lay["kernel"].values())]
    out = [
        "**Kernel time on the 2026-12-01 sweep** (945 shapes never fitted on, each in bf16 `rr`, `rc`, `cr` and "
        "fp8 `rc`; profiled kernel time) — MdAPE / p90 (%), per family:",
        "",
        "| GEMM | " + " | ".join(fams) + " | all |",
        "|---|" + "---|" * (len(fams) + 1),
    ]
    for name, by_family in lay["kernel"].items():
        cells = [f"{by_family[f]['mdape']:.1f} / {by_family[f]['p90']:.0f}" if f in by_family else "-" for f in fams]
        cells.append(f"{by_family['all']['mdape']:.1f} / {by_family['all']['p90']:.0f}")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    ev, gap = lay["event"], lay["event"]["gap_us"]
    out += [
        "",
        f'**Event time** (`timing="event"`, the same GEMMs timed with `do_bench`): MdAPE {ev["mdape"]:.1f} %, p90 '
        f"{ev['p90']:.0f} % over {ev['n']}. The measured gap, event minus kernel time: median {gap[50]:.2f} µs "
        f"(p20 {gap[20]:.2f}, p80 {gap[80]:.2f}).",
    ]
    if lay["repeat"]:
        rp = lay["repeat"]
        out.append("")
        out.append(
            f"**Run to run**: {rp['n']} GEMMs timed on both days (same shape, format, layout; CUDA events) differ by "
            f"{rp['mdape']:.1f} % (median), {rp['p90']:.1f} % (p90) — the floor no model can beat."
        )
    fb = lay.get("fallback")
    if fb:
        out += [
            "",
            f"**bf16 GEMMs on the fallback kernels** ({fb['fallback']['n']}; cuBLAS's pre-Hopper kernels), kernel "
            f"time, MdAPE / p90 (%): {_pair(fb['fallback'])} with the `bf16@fallback` group, {_pair(fb['factors'])} "
            "with the main group slowed down per alignment instead.",
        ]
    fr = lay.get("fresh")
    if fr:
        out += [
            "",
            "**Fresh shapes** (seed 2026, the same family mix, 945 new shapes × the same five GEMMs; measured in a "
            "later device session, after the fallback group was fitted and committed; "
            "`*_fresh_2026-12-01.json.gz`) — MdAPE / p90 (%), against the target 4 / 12:",
            "",
            "| GEMM | GEMMs | kernel time | event time |",
            "|---|---|---|---|",
        ]
        order = sorted(fr, key=lambda g: (g == "all", g.startswith("bf16,"), g))
        for g in order:
            out.append(f"| {g} | {fr[g]['kernel']['n']} | {_pair(fr[g]['kernel'])} | {_pair(fr[g]['event'])} |")
    ses = lay.get("sessions") or {}
    if ses.get("rows"):
        same, n = ses["same_kernel"]
        out += [
            "",
            "**Against the floor**: the same 4725 GEMMs measured again in a later device session (another machine "
            "of the pool; `*_repeat_2026-12-01.json.gz`), per format and layout — the model's error next to the "
            "two sessions' difference, MdAPE / p90 (%). The target is 4 / 12.",
            "",
            "| GEMM | model, kernel time | floor, kernel time | model, event time | floor, event time |",
            "|---|---|---|---|---|",
        ]
        for name, row in sorted(ses["rows"].items(), key=lambda kv: kv[0] == "all"):
            cells = [_pair(row[t][w]) for t in ("kernel", "event") for w in ("model", "floor")]
            out.append(f"| {name} | " + " | ".join(cells) + " |")
        out += [
            "",
            f"cuBLAS chose the same main kernel in both sessions for {same} of {n} GEMMs: its choice is deterministic "
            "for a shape, format and layout on this stack.",
        ]
    ff = lay.get("fresh_floor") or {}
    if ff.get("rows"):
        allk, alle = ff["rows"]["all"]["kernel"], ff["rows"]["all"]["event"]
        same, n_same = ff["same_kernel"]
        out += [
            "",
            "**The floor depends on the order of the sweep.** The fresh shapes were measured a second time, in a "
            "fourth device session (`*_fresh_repeat_2026-12-01.json.gz`), in the same order; and the "
            f"{ff['shapes']} `llm` shapes are the same in every sweep, so their "
            f"{allk['other order, shared shapes']['n']} GEMMs were measured in all four sessions — twice in the "
            "order of seed 0, twice in that of seed 2026 (other neighbours). MdAPE / p90 (%), kernel time:",
            "",
            "| GEMM | fresh shapes, same order | shared shapes, same order | shared shapes, other order "
            "| model on the fresh session |",
            "|---|---|---|---|---|",
        ]
        for name, row in sorted(ff["rows"].items(), key=lambda kv: kv[0] == "all"):
            k = row["kernel"]
            cells = [_pair(k[w]) for w in ("same order, fresh shapes", "same order, shared shapes")]
            cells += [_pair(k["other order, shared shapes"]), _pair(fr[name]["kernel"])]  # the model: "Fresh shapes"
            out.append(f"| {name} | " + " | ".join(cells) + " |")
        out += [
            "",
            f"By event time: {_pair(alle['same order, fresh shapes'])}, {_pair(alle['same order, shared shapes'])}"
            f" and {_pair(alle['other order, shared shapes'])}. cuBLAS ran the same main kernel in both orders for "
            f"{same} of {n_same} shared GEMMs, yet {len(ff['slow_shapes'])} of the {ff['shapes']} shapes ran at "
            "least 20 % slower in both seed-2026 sessions in every one of their five GEMMs ("
            + ", ".join(ff["slow_shapes"][:6])
            + (", …" if len(ff["slow_shapes"]) > 6 else "")
            + f"). The log of a GEMM's time ratio between the orders correlates at {ff['heat_corr']:.2f} with the "
            f"difference in GPU time of the {HEAT_ITEMS} items measured just before it: a shape measured after "
            "heavy GEMMs runs on a GPU that has been drawing full power and has lowered its clocks (the decoder-"
            "layer steps show the same, [step.md](step.md)). So a GEMM's time depends on what ran before it, "
            "which a model of the shape alone cannot know: two sessions of one order repeat within the target, "
            "two orders differ by more than it by kernel time (the p90 above 12 %, the MdAPE just under 4 %). That "
            "difference holds both sessions' deviations; one session against a GEMM's median over many orders is "
            'closer ([the tile model](#the-tile-model), "What the order does" and "What limits it").',
        ]
    cm = lay.get("choice_model")
    if cm:
        out += [
            "",
            f"**Is the tail kernel choice?** Split by shape 50/50: the nearest training shape (log M, K, N; same "
            f"format and layout) ran the same kernel for {cm['nearest_right']} of {cm['test']} test GEMMs "
            f"({cm['nearest_right'] / cm['test']:.0%}), so a neighbour lookup does not predict the choice; and even "
            f"given the true kernel, scaling the model by that kernel's median residual moves the test error from "
            f"{_pair(cm['model'])} to {_pair(cm['oracle_corrected'])} (MdAPE / p90, %). Nor is the residual smooth "
            f"in the shape: correcting each test GEMM by the median residual of its {KNN_RESIDUAL_K} nearest "
            f"training shapes gives {_pair(cm['knn_corrected'])}. The remaining error lies within kernels "
            "(how one kernel's time varies with the shape), not in which kernel runs, and varies from shape to "
            "shape faster than 945 shapes sample it.",
        ]
    out += ["", "**cuBLAS's kernel choice** (bf16; share of GEMMs that ran a pre-Hopper sm75/sm80 kernel):", ""]
    out += ["| layout, kernels by the fallback rule | GEMMs | pre-Hopper kernel |", "|---|---|---|"]
    for key, (n, k) in sorted(lay["choice"].items()):
        out.append(f"| {key} | {n} | {k} ({k / n:.0%}) |")
    return "\n".join(out)


# -------------------------------------------------------------------------------------------------
# Error bars: p10-p90 of measured/predicted per provenance class, shape family and timing
# -------------------------------------------------------------------------------------------------
def _bar(quantity: str, kind: str, family: str, timing: str, ratio: np.ndarray, basis: str) -> dict[str, Any]:
    lo, med, hi = (float(x) for x in np.percentile(ratio, [10, 50, 90]))
    return dict(
        quantity=quantity,
        kind=kind,
        family=family,
        timing=timing,
        low=lo,
        high=hi,
        median=med,
        n=len(ratio),
        basis=basis,
    )


def _sweep_ratios(records: list[dict[str, Any]], timing: str, model: str | None) -> tuple[np.ndarray, list[str]]:
    """measured/predicted for every record of the layout sweep, and each one's shape family."""
    if model == "tiles":  # validate_tiles prices the same GEMMs under the same model: its per-GEMM cache, shared
        from benchmarks.harness import validate_tiles as vt

        rows = [
            {"dtype": r["dtype"], "scaling": r.get("scaling"), "M": r["M"], "K": r["K"], "N": r["N"],
             "layout": r.get("layout", "rc") if pm.get_format(r["dtype"]).bits >= 16 else "rc"}
            for r in records
        ]  # fmt: skip
        ratio = np.array([r["time_s"] for r in records], dtype=float) / vt.predict(rows, model, timing)
        return ratio, _families(records)
    ratio = np.empty(len(records))
    groups: dict[tuple[str, str | None, str], list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        fmt = pm.get_format(r["dtype"])
        groups[r["dtype"], r.get("scaling"), r.get("layout", "rc") if fmt.bits >= 16 else "rc"].append(i)
    for (dtype, scaling, layout), idx in groups.items():
        M, K, N = (np.array([records[i][d] for i in idx]) for d in ("M", "K", "N"))
        pred = np.asarray(
            pm.gemm_time_s(M, K, N, dtype, "H200", scaling, layout=layout, timing=timing, time_model=model), float
        )
        ratio[idx] = np.array([records[i]["time_s"] for i in idx]) / pred
    return ratio, _families(records)


def _families(records: list[dict[str, Any]]) -> list[str]:
    """Each record's shape family (the sessions repeat shapes: each one's family found once)."""
    family: dict[tuple[Any, ...], str] = {}
    keys = [(r["M"], r["K"], r["N"], r.get("layout", "rc")) for r in records]
    return [family[k] if k in family else family.setdefault(k, shape_family(*k)) for k in keys]


def in_fit(rep: dict[str, Any], records: list[dict[str, Any]]) -> np.ndarray:
    """Which GEMM records have a shape the shipped calibration's GEMM fits used: ``(M, K, N, group)`` in the fit's
    inputs (``Calibrator.fit_shapes_``, the group as ``Calibrator.group_key`` names it): in-sample by shape."""
    fitted, key = rep["fit_shapes"], rep["group_key"]
    return np.array([(r["M"], r["K"], r["N"], key(r)) in fitted for r in records], dtype=bool)


def _family_bars(kind: str, timing: str, ratio: np.ndarray, fams: np.ndarray, basis: str) -> list[dict[str, Any]]:
    """The ``gemm_time`` bar of ``kind`` over every GEMM, and one per shape family with enough of them."""
    bars = [_bar("gemm_time", kind, "all", timing, ratio, basis)]
    for fam in SHAPE_FAMILIES:
        sel = fams == fam
        if sel.sum() >= MIN_FAMILY_N:
            bars.append(_bar("gemm_time", kind, fam, timing, ratio[sel], basis))
    return bars


LAYOUT_SWEEP_BASIS = "H200 layout sweep 2026-12-01 (measured after the fit)"


def _calibrated_sweep_bars(rep: dict[str, Any], held_out: bool) -> list[dict[str, Any]]:
    """The shipped calibration's ``measured`` GEMM-time bars on the 2026-12-01 layout sweep: on the GEMMs whose
    shapes are in no fit (``held_out``: the shipped bars), or on the others (in-sample by shape, reported apart)."""
    bars = []
    for timing in ("kernel", "event"):
        recs = list(_layout_sweep(timing))
        seen = in_fit(rep, recs)
        sel = ~seen if held_out else seen
        ratio, fams = _sweep_ratios(recs, timing, None)
        if held_out:
            what = f"held out by shape: {int(sel.sum())} of {len(recs)} GEMMs whose shapes are in no fit"
        else:
            what = f"in-sample by shape: the {int(sel.sum())} of {len(recs)} GEMMs whose shapes a fit measured"
        basis = f"{LAYOUT_SWEEP_BASIS}, shipped H200 calibration, {what}"
        bars += _family_bars("measured", timing, ratio[sel], np.array(fams)[sel], basis)
    return bars


def score_in_sample_bars(rep: dict[str, Any]) -> list[dict[str, Any]]:
    """The shipped calibration on the layout sweep's GEMMs whose shapes a fit used (in-sample by shape): reported
    next to the held-out bars (``error_bars.json``'s ``in_sample``), never used as a bar."""
    return _calibrated_sweep_bars(rep, held_out=False)


def score_error_bars(rep: dict[str, Any]) -> list[dict[str, Any]]:
    """The shipped error-bar table (perfmodel/calibrations/error_bars.json), recomputed from the data."""
    # the shipped calibration: held out by shape (the sweep repeats shapes of the fit's 2026-11-30 sweeps)
    bars = _calibrated_sweep_bars(rep, held_out=True)
    # the roofline fits nothing: every GEMM of the sweep
    for timing in ("kernel", "event"):
        recs = list(_layout_sweep(timing))
        ratio, fams = _sweep_ratios(recs, timing, "roofline")
        bars += _family_bars("roofline", timing, ratio, np.array(fams), f"{LAYOUT_SWEEP_BASIS}, roofline")
    # the tile model (time_model="tiles"): the TILES_FRESH_SESSIONS pooled, each measured after it (formula fits and
    # learned correction) was committed
    for timing in ("kernel", "event"):
        parts = [_layout_sweep(timing, s) for s in TILES_FRESH_SESSIONS]
        if any(p is None for p in parts):
            continue
        recs = [r for p in parts for r in p if r.get("time_s")]  # type: ignore[union-attr]
        # held out by shape: only the GEMMs whose (M, K, N, kind) no fit session measured (the llm, square and most
        # small_m shapes recur in every seed: in-sample by shape, left out here)
        fitted = fit_shapes()
        recs = [r for r in recs if (r["M"], r["K"], r["N"], kind_of(r)) not in fitted]
        ratio, fams = _sweep_ratios(recs, timing, "tiles")
        fams_arr = np.array(fams)
        seeds = ", ".join(s.removeprefix("_fresh") for s in TILES_FRESH_SESSIONS)
        names = [sweep_path("time", s, LAYOUT_SWEEP).name for s in TILES_FRESH_SESSIONS]
        days = [d for d in SWEEP_DATES if any(n.endswith(f"_{d}.json.gz") for n in names)]
        basis = (
            f"H200 layout sweeps of {' and '.join(days)}, seeds {seeds} (in no fit, measured after the formula "
            f"fits; {TILES_FRESH_GPUS} GPUs), the H200 tile model, the {len(recs)} GEMMs whose shapes are in no fit "
            "(held out by shape)"
        )
        bars.append(_bar("gemm_time", "measured", "all", timing, ratio, basis) | {"model": "tiles"})
        for fam in SHAPE_FAMILIES:
            sel = fams_arr == fam
            if sel.sum() >= MIN_FAMILY_N:
                bars.append(_bar("gemm_time", "measured", fam, timing, ratio[sel], basis) | {"model": "tiles"})
    # estimated models: published GEMM throughput (timing not stated by the sources: "any")
    pub = json.loads((PUBLISHED / "gemm_throughput.json").read_text())
    ratios = []
    for ds in pub["datasets"]:
        rows = np.array(ds["rows"], dtype=float)
        M, K, N = (rows[:, i].astype(np.int64) for i in range(3))
        meas = 2.0 * M * K * N / (rows[:, 3] * 1e12)
        ratios.append(meas / np.asarray(pm.gemm_time_s(M, K, N, ds["dtype"], ds["gpu"], ds["scaling"]), float))
    bars.append(
        _bar(
            "gemm_time",
            "estimated",
            "all",
            "any",
            np.concatenate(ratios),
            "published GEMM throughput of GB200, MI300X, A100, B200 (benchmarks/published/gemm_throughput.json)",
        )
    )
    # float8 speedups: held-out H200 Linears (measured); torchao's H100 rowwise table (transferred, roofline)
    pairs = [
        np.array(by_model["perfmodel calibrated"])
        for row, by_model in rep["points"].items()
        if row.startswith("speedup") and row.endswith("(static)")
    ]
    pred, meas = np.concatenate(pairs, axis=1)
    held_out = "H200 held-out Linears fwd+bwd (leave one shape out), static compiles"
    bars.append(_bar("speedup", "measured", "all", "any", meas / pred, held_out))
    for kind, name in (("measured", "perfmodel calibrated"), ("roofline", "roofline")):
        pred, meas = np.array(rep["linear_time_points"][name])
        bars.append(_bar("linear_time", kind, "all", "kernel", meas / pred, f"{held_out}, bf16 and every recipe"))
    table = json.loads((PUBLISHED / "torchao_h100_float8.json").read_text())
    ds = next(d for d in table["datasets"] if d["recipe"] == "rowwise")
    rows = np.array(ds["rows"], dtype=float)
    M, K, N = (rows[:, i].astype(np.int64) for i in range(3))
    for kind, model in (("transferred", None), ("roofline", "roofline")):
        pred = np.asarray(float8.speedup(M, K, N, "rowwise", "H100", time_model=model), dtype=float)
        bars.append(
            _bar(
                "speedup",
                kind,
                "all",
                "any",
                rows[:, 3] / pred,
                "H100-SXM, torchao's published rowwise table"
                + (" (post-selection: the transfer rule was chosen on this table)" if kind == "transferred" else ""),
            )
        )
    return bars


def markdown_error_bars(bars: list[dict[str, Any]]) -> str:
    """The error-bar table as markdown."""
    out = [
        "| quantity | class | family | timing | p10 / median / p90 of measured/predicted | n |",
        "|---|---|---|---|---|---|",
    ]
    for b in bars:
        kind = b["kind"] + (f" ({b['model']} model)" if b.get("model") else "")
        out.append(
            f"| {b['quantity']} | {kind} | {b['family']} | {b['timing']} | "
            f"{b['low']:.3f} / {b['median']:.3f} / {b['high']:.3f} | {b['n']} |"
        )
    return "\n".join(out)


def write_error_bars(
    bars: list[dict[str, Any]], path: Path = ERROR_BARS, in_sample: list[dict[str, Any]] | None = None
) -> None:
    """Write the error-bar table; ``in_sample``: the in-sample-by-shape figures, kept apart from the bars."""
    note = (
        "p10/median/p90 of measured/predicted per quantity, provenance class, shape family and timing; "
        "written by `python benchmarks/validate.py gemm --write` from the committed data (docs/validation/errorbars.md)"
    )
    doc: dict[str, Any] = {"schema": ERRORBARS_SCHEMA, "note": note, "bars": bars}
    if in_sample:
        doc["in_sample_note"] = (
            "not bars: the shipped H200 calibration on the layout-sweep GEMMs whose shapes (M, K, N, format) a fit "
            "used, in-sample by shape, reported next to the held-out 'measured' bars"
        )
        doc["in_sample"] = in_sample
    path.write_text(json.dumps(doc, indent=1) + "\n")


def plot(rep: dict[str, Any], path: Path) -> None:
    """Predicted against measured, one panel per GEMM format and per recipe (log-log for times)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(rep["points"].items())
    cols = 3
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 4.4 * rows), dpi=110, squeeze=False)
    markers = {"perfmodel calibrated": "o", "original 60%/92%": "x", "roofline 0.78": "+"}
    for ax, (title, by_model) in zip(axes.flat, panels, strict=False):
        is_time = title.startswith("gemm")
        lo, hi = np.inf, 0.0
        for name, (pred, meas) in by_model.items():
            pred, meas = np.asarray(pred), np.asarray(meas)
            scale = 1e6 if is_time else 1.0
            ax.scatter(
                meas * scale,
                pred * scale,
                s=12,
                marker=markers.get(name, "."),
                label=name,
                alpha=0.8 if name.startswith("perfmodel") else 0.5,
            )
            lo, hi = (
                min(lo, (meas * scale).min(), (pred * scale).min()),
                max(hi, (meas * scale).max(), (pred * scale).max()),
            )
        ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
        if is_time:
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("measured time [µs]")
            ax.set_ylabel("predicted time [µs]")
        else:
            ax.axhline(1, color="grey", lw=0.6, ls=":")
            ax.axvline(1, color="grey", lw=0.6, ls=":")
            ax.set_xlabel("measured speedup over bf16")
            ax.set_ylabel("predicted speedup")
        ax.set_title(f"H200: {title}", fontsize=10)
        ax.grid(True, which="both", ls=":", lw=0.4)
        ax.legend(fontsize=7, loc="upper left")
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


#: the H100 row of torchao's table that the transfer rules were chosen on (docs/validation/published.md)
H100_TABLE, H100_MODEL = "torchao_h100_rowwise_ln_linear_sigmoid", "perfmodel (transferred, H100-SXM)"


def summary(rep: dict[str, Any], pub: dict[str, Any], gemm: dict[str, Any]) -> str:
    """The calibrated, transferred and estimated models' rows of docs/validation.md's summary (generated)."""
    ours = "perfmodel calibrated"
    worst_g = max(rep["gemm"], key=lambda g: rep["gemm"][g][ours]["mdape"])
    static = [g for g in rep["linear"] if g.endswith("(static)")]
    dynamic = [g for g in rep["linear"] if g not in static]
    worst_s = max(static, key=lambda g: rep["linear"][g][ours]["mdape"])
    worst_d = max(dynamic, key=lambda g: rep["linear"][g][ours]["mdape"])
    c = rep["counts"]
    h100 = pub[H100_TABLE][H100_MODEL]
    rows = [
        [
            "calibrated GEMM (H200)",
            f"{c['gemm_heldout']} GEMM measurements",
            f"by shape ({HELDOUT:.0%} of shapes by a hash of (M, K, N))",
            f"worst format {worst_g} {_pair(rep['gemm'][worst_g][ours])}",
            "—",
        ],
        [
            "calibrated float8 Linear speedup (H200)",
            f"{c['linear_static']} static + {c['linear_dynamic']} dynamic-M shapes",
            "by shape (cast parameters refitted without the shape)",
            f"worst recipe, static compiles: {worst_s} {_pair(rep['linear'][worst_s][ours])}; dynamic M: {worst_d} "
            f"{_pair(rep['linear'][worst_d][ours])}",
            "—",
        ],
        [
            "transferred to the H100 (torchao's rowwise table)",
            f"{pub[H100_TABLE]['n']} published speedups",
            "**post-selection**: the transfer rule was chosen on this table (rule 1 scored worse there first; "
            "the log in [published.md](validation/published.md))",
            f"speedup {_pair(h100)}; decisions {h100['agree_clear']}/{h100['n_clear']} "
            f"({tables.pct(100 * h100['agree_clear'] / h100['n_clear'], 0)})",
            "—",
        ],
        [
            "estimated (GB200, B200, MI300X, A100)",
            f"{gemm['_all']['n']} published GEMM throughputs",
            "published figures the estimates were not built from",
            f"GEMM time MdAPE {tables.pct(gemm['_all']['mdape'])}",
            "—",
        ],
    ]
    return tables.table(tables.SUMMARY_HEAD, rows)


APPENDIX = ROOT / "docs" / "validation"
SUMMARY_DOC = DOC


def run(write: bool = False) -> list[tables.Block]:
    """The calibrated model's blocks (appendices ``gemm``, ``published``, ``layouts``, ``errorbars`` and the summary's
    rows ``summary-gemm``); with ``write``, also the PNG, the shipped ``h200.json`` and ``error_bars.json``."""
    files = sorted(DATA.glob("h200_*.json.gz"))
    if not files:
        raise CalibrationError(f"no h200_*.json.gz datasets in {DATA}: the 2026-11-30 sweeps of the repository")
    rep = evaluate(files)
    pub, gemm = score_published_float8(), score_published_gemm()
    bars = score_error_bars(rep)
    blocks = [
        tables.Block(doc=APPENDIX / "gemm.md", name="validation", body=markdown(rep)),
        tables.Block(doc=APPENDIX / "published.md", name="published", body=markdown_published(pub, gemm)),
        tables.Block(doc=APPENDIX / "layouts.md", name="layouts", body=markdown_layouts(score_layout_sweep())),
        tables.Block(doc=APPENDIX / "errorbars.md", name="errorbars", body=markdown_error_bars(bars)),
        tables.Block(doc=SUMMARY_DOC, name="summary-gemm", body=summary(rep, pub, gemm)),
    ]
    if write:
        plot(rep, PNG)
        rep["calibration"].save(SHIPPED, force=True)
        write_error_bars(bars, in_sample=score_in_sample_bars(rep))
        print(f"wrote {PNG.relative_to(ROOT)}, {SHIPPED.relative_to(ROOT)}, {ERROR_BARS.relative_to(ROOT)}")
    return blocks
