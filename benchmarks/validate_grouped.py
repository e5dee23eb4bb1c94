"""Held-out score of the grouped-GEMM model (perfmodel.moe.grouped) on our H200 sweep of 2026-12-03.

    python benchmarks/validate_grouped.py [--data benchmarks/data/h200_2026-12-03] [--split held_out]

Prints markdown tables: for each timing (event, kernel), dtype (bf16, fp8), op (fwd, wgrad, all) and group-size
distribution (balanced; skewed = Dirichlet-skewed and empty-group vectors), the median and 90th percentile of
|predicted / measured - 1| of the shipped calibration (perfmodel/calibrations/h200_grouped.json), with the
compute-only roofline as torchao's MoE roofline prices it (perfmodel.moe.roofline_grouped_gemm_time_s) beside it.
Splits (by model family, chosen before any score was seen; see docs/validation/moe.md): ``fit``, ``validation`` (looked
at while the model form was chosen), ``test`` (looked at once), ``held_out`` (validation + test), ``shape_disjoint``
(held-out families whose (K, N) no fit family has: all but llama4_scout). ``fresh`` (round 1), ``fresh2`` (round 2,
added 2026-12-04), ``fresh3`` (round 3, 2026-12-04 evening) and ``fresh4`` (round 4, 2026-12-04 night): families in
no fit and with no (K, N) of any earlier family, measured in their own sweep folder after the model that scores them
was committed (pre-registered; each scored once; ``--data``, when given, replaces the round's folder). Output is
deterministic.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.harness.tables import Block, write_blocks  # noqa: E402
from benchmarks.harness.tables import table as md_table  # noqa: E402
from perfmodel._files import load_json  # noqa: E402
from perfmodel.calibrate import grouped as cg  # noqa: E402
from perfmodel.errors import CalibrationError  # noqa: E402
from perfmodel.moe import grouped as gm  # noqa: E402

SPLITS = {
    "fit": cg.FIT_FAMILIES,
    "validation": cg.VALIDATION_FAMILIES,
    "test": cg.TEST_FAMILIES,
    "held_out": cg.VALIDATION_FAMILIES + cg.TEST_FAMILIES,
}
#: the fresh families, measured on 2026-12-03 (benchmarks/data/h200_2026-12-03f) after the model that scores them
#: was committed (66d1844): pre-registered, scored once, in no fit, no (K, N) shared with any earlier family
FRESH_FAMILIES = ("qwen3_235b_a22b", "olmoe_1b_7b", "dbrx", "phi35_moe")
FRESH_DATA = ROOT / "benchmarks" / "data" / "h200_2026-12-03f"
#: fresh round 2 (added 2026-12-04, pre-registered: model committed before measurement): small to large experts
#: (1536x512 to 6144x9216), no (K, N) shared with any family above or with each other; the lead puts the sweep of
#: ``FAMILIES=<these> MX_S=0 bash benchmarks/gpu_fresh_moe.sh`` in FRESH2_DATA
FRESH2_FAMILIES = ("granite_3b_a800m", "ernie45_21b_a3b", "qwen2_57b_a14b", "minimax_m1")
FRESH2_DATA = ROOT / "benchmarks" / "data" / "h200_2026-12-04f"
#: fresh round 3 (added 2026-12-04 evening, pre-registered: the grouped-GEMM model unchanged since round 1, committed
#: with these families before the measurement): 1408 to 18304 wide, no (K, N) of any earlier family or of each other
FRESH3_FAMILIES = ("glm45_air", "glm45", "mixtral_8x22b", "hunyuan_large")
FRESH3_DATA = ROOT / "benchmarks" / "data" / "h200_2026-12-04t"
#: fresh round 4 (added 2026-12-04 night, pre-registered: the schema-2 model — torch's three fp8 kernel classes and
#: the busiest-SM / mean-SM load — committed with these families before the measurement; the form was chosen after
#: rounds 1-3 were seen, so they are post-selection for it and this round is its test): no (K, N) of any earlier family
FRESH4_FAMILIES = ("minimax_m2", "qwen3_coder_480b", "arctic")
FRESH4_DATA = ROOT / "benchmarks" / "data" / "h200_2026-12-04y"
#: split name -> (families, default sweep folder, round)
FRESH_SPLITS = {
    "fresh": (FRESH_FAMILIES, FRESH_DATA, 1),
    "fresh2": (FRESH2_FAMILIES, FRESH2_DATA, 2),
    "fresh3": (FRESH3_FAMILIES, FRESH3_DATA, 3),
    "fresh4": (FRESH4_FAMILIES, FRESH4_DATA, 4),
}


def shape_overlap(records: list[dict]) -> dict[str, list[tuple[int, int]]]:
    """Held-out family -> its (K, N) pairs that a fit family also has (such rows are held out by family only)."""
    fit_shapes = {(r["K"], r["N"]) for r in records if r["family"] in cg.FIT_FAMILIES}
    out: dict[str, set] = {}
    for r in records:
        if r["family"] not in cg.FIT_FAMILIES and (r["K"], r["N"]) in fit_shapes:
            out.setdefault(r["family"], set()).add((r["K"], r["N"]))
    return {k: sorted(v) for k, v in sorted(out.items())}


def table(records: list[dict], params: dict) -> str:
    pred = cg.predict_records(records, params)
    roof = np.array(
        [
            gm.roofline_grouped_gemm_time_s(
                gm.pad_group_sizes(np.asarray(r.get("rows_requested") or r["rows"]), cg._dtype(r)),
                r["K"],
                r["N"],
                dtype=r["dtype"],
                gpu="H200",
            )
            for r in records
        ]
    )
    lines = [
        "| timing | dtype | op | groups | n | MdAPE % | p90 % | roofline MdAPE % | roofline p90 % |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in cg.score(records, pred, roof):
        lines.append(
            f"| {row['timing']} | {row['dtype']} | {row['op']} | {row['dist']} | {row['n']} | {row['mdape']:.1f} | "
            f"{row['p90']:.1f} | {row['roof_mdape']:.0f} | {row['roof_p90']:.0f} |"
        )
    return "\n".join(lines)


def params_table(params: dict) -> str:
    """The shipped parameters, one row per class and kernel. "full-wave TFLOP/s": the tile rate when every SM carries
    the same load L (busiest = mean = L: compute = t_kb (sm_weight^s + 1)^(1/s) L), before the power-cap term:
    ``2 BM BN BK x 132 / (t_kb (sm_weight^sm_norm + 1)^(1/sm_norm))``."""
    cfgs = {c.name: c for c in gm.KERNELS.values()}
    lines = [
        "| class | kernel | t_kb µs | full-wave TFLOP/s | c0 k-blocks | mem_eff | t0 µs | t_group ns | p | a | "
        "tau ms | sm_weight | sm_norm |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for key in sorted(params):
        q = params[key]
        for name in sorted(q["tiles"]):
            t, c = q["tiles"][name], cfgs[name]
            both = (q["sm_weight"] ** q["sm_norm"] + 1.0) ** (1.0 / q["sm_norm"])
            rate = 2.0 * c.bm * c.bn * c.bk / (t["t_kb_s"] * both) * 132 / 1e12
            lines.append(
                f"| {key} | {name} | {t['t_kb_s'] * 1e6:.3f} | {rate:.0f} | {t['c0']:.2f} | {q['mem_eff']:.2f} | "
                f"{q['t0_s'] * 1e6:.2f} | {q['t_group_s'] * 1e9:.0f} | {q['p']:.2f} | {q['throttle']:.2f} | "
                f"{q['throttle_tau_s'] * 1e3:.2f} | {q['sm_weight']:.2f} | {q['sm_norm']:.2f} |"
            )
    return "\n".join(lines)


def _all_ops(tab: str) -> str:
    """Only the ``op = all`` rows of a :func:`table` (header kept)."""
    rows = tab.split("\n")
    return "\n".join(rows[:2] + [r for r in rows[2:] if r.split("|")[3].strip() == "all"])


def docs_blocks() -> dict[str, str]:
    """The generated blocks of docs/validation/moe.md, by name (between ``<!-- grouped-NAME:begin -->`` and ``:end
    -->``)."""
    params = gm.load_params()["params"]
    records = cg.load_records(ROOT / "benchmarks" / "data" / "h200_2026-12-03")
    overlap = shape_overlap(records)
    held = SPLITS["held_out"]
    disjoint = tuple(f for f in held if f not in overlap)
    out = {"params": params_table(params)}
    for name, fams, only_all in (
        ("held-out", held, False),
        ("test", SPLITS["test"], True),
        ("validation", SPLITS["validation"], True),
        ("shape-disjoint", disjoint, True),
    ):
        tab = table([r for r in records if r["family"] in fams], params)
        out[name] = _all_ops(tab) if only_all else tab
    for split, (fams, folder, _) in FRESH_SPLITS.items():
        tab = table([r for r in cg.load_records(folder) if r["family"] in fams], params)
        out[split] = tab if split == "fresh4" else _all_ops(tab)
    return out


def write_docs(path: Path) -> None:
    """Replace every generated block of ``path`` (docs/validation/moe.md) between its markers ``grouped-NAME``
    (:func:`benchmarks.harness.tables.write_blocks`: a missing marker is a ``BlockError``)."""
    write_blocks(Block(doc=path, name=f"grouped-{name}", body=body) for name, body in docs_blocks().items())


def fresh(folder: Path, families: tuple[str, ...] = FRESH_FAMILIES, name: str = "fresh", round_: int = 1) -> int:
    """The pre-registered score on one round of fresh families (their own sweep folder), all together."""
    records = [r for r in cg.load_records(folder) if r["family"] in families]
    if not records:
        print(f"{folder}: no records of the {name} families {', '.join(families)}", file=sys.stderr)
        return 2
    fams = sorted({r["family"] for r in records})
    where = folder.relative_to(ROOT) if folder.is_relative_to(ROOT) else folder
    print(
        f"# Grouped-GEMM model on the fresh families, round {round_} "
        "(pre-registered: model committed before the measurement)\n"
    )
    print(f"## {name}: {', '.join(fams)} ({len(records)} records, {where})\n")
    print(table(records, gm.load_params()["params"]))
    return 0


#: the sweeps :func:`uneven_error` reads, per GPU: our H200 sweeps (the held-out families of each: no fit family), and
#: the H100 SXM's isolated grouped GEMMs (round grouped10's registered families and round 8's diagnostic sweep)
UNEVEN_SWEEPS: dict[str, tuple[str, ...]] = {
    "H200": ("h200_2026-12-03", "h200_2026-12-03f", "h200_2026-12-04f", "h200_2026-12-04t", "h200_2026-12-04y"),
    "H100": ("h100_2026-12-06g10", "h100_2026-12-06r8"),
}


def _event_records(folder: Path, *, training_layouts: bool = True) -> list[dict]:
    """The event-timed records of ``folder`` (its time file alone: the H100 rounds have no kernel file), those of the
    training layouts only unless ``training_layouts`` is False."""
    doc = load_json(folder / cg.FILES["event"], what="grouped-GEMM sweep", error=CalibrationError)
    return [r for r in doc.get("records", []) if r.get("time_s") and (not training_layouts or cg.in_training_layout(r))]


def _price_ratio(r: dict, gpu: str, op: str | None = None) -> float:
    """The grouped model's event time of sweep record ``r`` on ``gpu`` (as ``op``, default the record's) over its
    measured time."""
    dt = cg._dtype(r)
    g = np.asarray(r.get("rows_requested") or r["rows"], dtype=np.int64)
    kw = {"dtype": "fp8", "scaling": "rowwise"} if dt == "fp8" else {"dtype": "bf16"}
    t = gm.grouped_gemm(g, r["K"], r["N"], op=op or r["op"], timing="event", gpu=gpu, **kw).time_s
    return float(t) / r["time_s"]


def uneven_error(data: Path = ROOT / "benchmarks" / "data") -> dict[str, dict[str, dict[str, float]]]:
    """Predicted / measured of the grouped model on calls of at least ``UNEVEN_MIN_FLOPS`` whose largest group is at
    least ``UNEVEN_MAX_OVER_MEAN`` x the mean (the requested vector), per GPU (:data:`UNEVEN_SWEEPS`) and dtype:
    ``n``, ``median_ratio``, ``under`` (share priced fast), and ``even_median`` (the even calls of the same size) —
    families in no grouped fit only. Priced on the GPU each sweep ran on (the H100 SXM: transferred)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for gpu, folders in UNEVEN_SWEEPS.items():
        q: dict[tuple[str, bool], list[float]] = {}
        for name in folders:
            for r in _event_records(data / name):
                if r["family"] in cg.FIT_FAMILIES or r["flops"] < gm.UNEVEN_MIN_FLOPS:
                    continue
                uneven = gm.uneven_groups(r.get("rows_requested") or r["rows"])
                q.setdefault((cg._dtype(r), uneven), []).append(_price_ratio(r, gpu))
        out[gpu] = {}
        for dt in ("bf16", "fp8"):
            a, e = np.array(q.get((dt, True), [])), np.array(q.get((dt, False), []))
            out[gpu][dt] = {"n": int(a.size), "median_ratio": float(np.median(a)), "under": float(np.mean(a < 1)),
                            "even_median": float(np.median(e))}  # fmt: skip
    return out


def uneven_table(data: Path = ROOT / "benchmarks" / "data") -> str:
    """:func:`uneven_error` as a markdown table."""
    rows = [[gpu, dt, v["n"], f"{v['median_ratio']:.3f}", f"{v['under']:.0%}", f"{v['even_median']:.3f}"]
            for gpu, d in uneven_error(data).items() for dt, v in d.items()]  # fmt: skip
    head = ("GPU", "dtype", "uneven calls", "predicted / measured median", "priced fast", "even calls' median")
    return md_table(head, rows)


def dgrad_layout_error(data: Path = ROOT / "benchmarks" / "data") -> dict[str, dict[str, float]]:
    """The fwd model (fitted on ``a_row_b_col``) on the bf16 fwd calls the H200 sweeps timed with the weight row-major
    (``a_row_b_row``: the layout of the block's dgrad, which no fit used), families in no grouped fit, by size band
    (``<1T``, ``>=1T`` at :data:`perfmodel.moe.grouped.UNEVEN_MIN_FLOPS`): ``n``, ``p50`` and ``p90`` of
    |predicted / measured - 1| (%), ``median_ratio``."""
    q: dict[str, list[float]] = {}
    for name in UNEVEN_SWEEPS["H200"]:
        for r in _event_records(data / name, training_layouts=False):
            if r["op"] != "fwd" or r.get("layout") != "a_row_b_row":
                continue
            if r["family"] in cg.FIT_FAMILIES or cg._dtype(r) != "bf16":
                continue
            q.setdefault(">=1T" if r["flops"] >= gm.UNEVEN_MIN_FLOPS else "<1T", []).append(_price_ratio(r, "H200"))
    out = {}
    for band, v in sorted(q.items()):
        a = np.array(v)
        e = np.abs(a - 1) * 100
        out[band] = {"n": int(a.size), "p50": float(np.median(e)), "p90": float(np.percentile(e, 90)),
                     "median_ratio": float(np.median(a))}  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=None, help="sweep folder (default: h200_2026-12-03; a fresh split's own)")
    ap.add_argument("--split", default="all", choices=[*SPLITS, "shape_disjoint", *FRESH_SPLITS, "all"])
    ap.add_argument(
        "--docs", type=Path, help="rewrite the generated grouped-GEMM tables of this file (docs/validation/moe.md)"
    )
    ap.add_argument("--uneven", action="store_true", help="UNEVEN_GROUPS_ERROR: large calls with uneven groups")
    ap.add_argument("--dgrad-layout", action="store_true", help="the fwd model on the dgrad layout's calls")
    args = ap.parse_args(argv)
    if args.uneven:
        print(uneven_table())
        return 0
    if args.dgrad_layout:
        print(json.dumps(dgrad_layout_error(), indent=1))
        return 0
    if args.docs:
        write_docs(args.docs)
        return 0
    if args.split in FRESH_SPLITS:
        fams, folder, round_ = FRESH_SPLITS[args.split]
        return fresh(Path(args.data).resolve() if args.data else folder, fams, args.split, round_)
    records = cg.load_records(args.data or ROOT / "benchmarks" / "data" / "h200_2026-12-03")
    params = gm.load_params()["params"]
    overlap = shape_overlap(records)
    splits = dict(SPLITS)
    splits["shape_disjoint"] = tuple(f for f in SPLITS["held_out"] if f not in overlap)
    names = list(splits) if args.split == "all" else [args.split]
    print("# Grouped-GEMM model on the H200 sweep of 2026-12-03 (shipped calibration)\n")
    print("Fit families: " + ", ".join(cg.FIT_FAMILIES))
    for fam, shapes in overlap.items():
        print(f"Held out by family but not by shape: {fam} has the (K, N) of a fit family: {shapes}")
    for name in names:
        sub = [r for r in records if r["family"] in splits[name]]
        print(f"\n## {name}: {', '.join(splits[name])} ({len(sub)} records)\n")
        print(table(sub, params))
    return 0


if __name__ == "__main__":
    sys.exit(main())
