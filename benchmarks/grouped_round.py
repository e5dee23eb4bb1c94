"""Pre-register and score a round of isolated grouped-GEMM measurements on a GPU the grouped calibration transfers to
(docs/moe.md, "Grouped GEMMs", "Other GPUs").

    python benchmarks/grouped_round.py register grouped10_h100           # print what would be registered
    python benchmarks/grouped_round.py register grouped10_h100 --write   # write benchmarks/registered/<round>.json
    python benchmarks/grouped_round.py score grouped10_h100              # once its folder is in benchmarks/data
    python benchmarks/grouped_round.py score grouped10_h100 --docs docs/moe.md

A round is the grouped-GEMM bench's time phase (``python -m perfmodel.bench.grouped_gemm time``) over families held
out by shape, run on the device by ``benchmarks/gpu_registered_round.sh`` like a block round. The registration holds,
for every item of the bench's full plan of those families (the seed's plan with no budget cut: a device run under a
deadline times a prefix of it, the same ids and group sizes), three predictions of its event time, each written before
the measurement and committed with the model that made it:

* ``model``: the shipped model (``perfmodel.moe.grouped_gemm``, event timing);
* ``hbm_rule``: the same model with every memory term scaled by HBM bandwidth off the H200 (the transfer shipped before
  :func:`perfmodel.moe.grouped_kernel.memory_rate_bytes_per_s`), for comparison;
* ``roofline``: the compute-only roofline as torchao's MoE roofline prices it
  (:func:`perfmodel.moe.roofline_grouped_gemm_time_s`), for comparison.

What a round is scored on, named before its first run (2026-12-06): for each of ``model``, ``hbm_rule`` and
``roofline``, |predicted / measured - 1| median (MdAPE) and p90, and the median of predicted / measured, over the
records of the training layouts (:data:`perfmodel.calibrate.grouped.LAYOUTS`) whose id and group sizes match the
registration, per dtype and op, per dtype, op and size band (under 0.1, under 1, from 1 TFLOP), and pooled per dtype.
The targets are the issue's (MdAPE at most 5 %, p90 at most 15 %, event time) for ``model``, pooled per dtype. The
claim the round tests is the SM-bound memory rule's: fp8 wgrad calls under 1 TFLOP priced within 10 % in median
(the HBM rule priced them 20-26 % slow on the diagnostic sweep it was chosen on).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

import perfmodel as pm  # noqa: E402
from benchmarks.harness.tables import Block, table, write_blocks  # noqa: E402
from perfmodel.calibrate import grouped as cg  # noqa: E402
from perfmodel.calibrate.data import read_data_json  # noqa: E402
from perfmodel.errors import PerfModelError  # noqa: E402
from perfmodel.moe import grouped_kernel as gk  # noqa: E402

#: round -> its folder (under benchmarks/data), the GPU it is priced for and measured on (perfmodel.specs names), the
#: families swept and the bench's seed
ROUNDS: dict[str, dict[str, Any]] = {
    # registered 2026-12-06 for the H100 SXM with the SM-bound memory rule (chosen on h100_2026-12-06r8's diagnostic
    # sweep of mixtral_8x22b, dbrx and hunyuan_large): eight families held out by shape (none in the grouped fit, none
    # in that sweep), small experts first (their wgrad calls are where the rule moves the price)
    "grouped10_h100": {
        "folder": "h100_2026-12-06g10",
        "gpu": "H100",
        "families": (
            "olmoe_1b_7b",
            "granite_3b_a800m",
            "ernie45_21b_a3b",
            "qwen3_235b_a22b",
            "minimax_m2",
            "qwen2_57b_a14b",
            "phi35_moe",
            "arctic",
        ),
        "seed": 0,
    },
}
#: the families the rule was chosen on (the diagnostic sweep of benchmarks/data/h100_2026-12-06r8)
CHOSEN_ON = ("mixtral_8x22b", "dbrx", "hunyuan_large")
#: where registrations are written
REGISTERED = ROOT / "benchmarks" / "registered"
#: the predictions a registration holds per item, in table order
PREDICTIONS = ("model", "hbm_rule", "roofline")
#: the size bands of the tables (FLOPs of the rows that run)
BANDS = ((1e11, "< 0.1 TFLOP"), (1e12, "< 1 TFLOP"), (float("inf"), ">= 1 TFLOP"))


class RoundError(PerfModelError, ValueError):
    """A round that is unknown, not held out by shape, or scored without its data."""


def rows_digest(rows: Sequence[int]) -> str:
    """A short digest of a group-size vector (the registration keeps it instead of the vector)."""
    return hashlib.sha256(json.dumps([int(r) for r in rows]).encode()).hexdigest()[:16]


@contextlib.contextmanager
def hbm_rule() -> Iterator[None]:
    """The grouped model with every memory term at ``mem_eff`` x this GPU's HBM bandwidth (the transfer before the
    SM-bound memory rule), for comparison only."""
    kept = gk.memory_rate_bytes_per_s
    gk.memory_rate_bytes_per_s = lambda p, spec, ref: float(p["mem_eff"]) * spec.mem_bw_bytes_per_s
    try:
        yield
    finally:
        gk.memory_rate_bytes_per_s = kept


def _kw(dtype: str) -> dict[str, Any]:
    return {"dtype": "fp8", "scaling": "rowwise"} if dtype.startswith("fp8") else {"dtype": "bf16"}


def predict(op: str, dtype: str, K: int, N: int, rows: Sequence[int], gpu: str) -> dict[str, float]:
    """The three predictions (:data:`PREDICTIONS`) of one grouped GEMM's event time, seconds."""
    g = np.asarray(rows, dtype=np.int64)
    kw = _kw(dtype)
    out = {"model": float(pm.moe.grouped_gemm(g, K, N, op=op, timing="event", gpu=gpu, **kw).time_s)}
    with hbm_rule():
        out["hbm_rule"] = float(pm.moe.grouped_gemm(g, K, N, op=op, timing="event", gpu=gpu, **kw).time_s)
    out["roofline"] = float(pm.moe.roofline_grouped_gemm_time_s(g, K, N, dtype=kw["dtype"], gpu=gpu))
    return out


def _round(name: str) -> dict[str, Any]:
    if name not in ROUNDS:
        raise RoundError(f"unknown grouped round {name!r}; registered rounds: {', '.join(sorted(ROUNDS))}")
    return ROUNDS[name]


def held_out_by_shape(families: Sequence[str]) -> None:
    """Refuse a family whose expert shapes (hidden x intermediate) are a grouped-fit family's or one the rule was
    chosen on."""
    from perfmodel.bench.grouped_gemm.config import MOE_MODELS

    shape = {m.name: (m.hidden, m.inter) for m in MOE_MODELS}
    seen = {shape[f] for f in (*pm.moe.grouped.load_params()["fit_families"], *CHOSEN_ON) if f in shape}
    bad = [f for f in families if shape.get(f) in seen]
    if bad:
        raise RoundError(f"families {bad} share expert shapes with the grouped fit or the rule's sweep: not held out")


def register(name: str) -> dict[str, Any]:
    """The registration of round ``name``: its command, and every item's id, problem, group-size digest and the three
    predictions (:func:`predict`) on the round's GPU."""
    from perfmodel.bench.grouped_gemm.plan import plan_items

    r = _round(name)
    held_out_by_shape(r["families"])
    items, _, info = plan_items(seed=r["seed"], budget_s=None, families=r["families"])
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    rows = []
    for it in items:
        dtype = "fp8_e4m3" if it.fmt.startswith("fp8") else "bf16"
        if not cg.in_training_layout({"op": it.form, "dtype": dtype, "layout": it.layout}):
            continue  # a layout the model does not price (the bench times it for the layout study)
        pred = predict(it.form, dtype, it.K, it.N, it.rows_requested, r["gpu"])
        rows.append({"id": it.id, "op": it.form, "dtype": dtype, "K": it.K, "N": it.N, "G": it.G,
                     "flops": it.flops, "rows": rows_digest(it.rows_requested), "predicted_event_s": pred})  # fmt: skip
    command = (
        f"python3 -m perfmodel.bench.grouped_gemm time --families {','.join(r['families'])} --no-neighbours "
        f"--seed {r['seed']}"
    )
    return {"kind": "grouped", "round": name, "folder": r["folder"], "gpu": r["gpu"], "model_commit": commit,
            "families": list(r["families"]), "shapes": info.candidates, "commands": [command],
            "items": rows}  # fmt: skip


def matched(reg: dict[str, Any], records: Sequence[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(registered item, measured record) for every timed record of the registration's ids whose group sizes match."""
    by_id = {it["id"]: it for it in reg["items"]}
    out = []
    for rec in records:
        it = by_id.get(rec.get("id"))
        if it is None or not rec.get("time_s"):
            continue
        if rows_digest(rec.get("rows_requested") or rec["rows"]) != it["rows"]:
            raise RoundError(f"{rec['id']}: measured group sizes differ from the registered ones (another plan)")
        out.append((it, rec))
    return out


def _stats(q: Sequence[float]) -> tuple[float, float, float, int]:
    a = np.asarray(q, dtype=float)
    e = np.abs(a - 1) * 100
    return float(np.median(e)), float(np.percentile(e, 90)), float(np.median(a)), int(a.size)


def score(name: str, data: Path = ROOT / "benchmarks" / "data") -> tuple[str, dict[str, Any]]:
    """The round's tables (markdown) and figures: ``{group: {prediction: (MdAPE, p90, median ratio, n)}}`` with
    groups ``"<dtype>"``, ``"<dtype> <op>"`` and ``"<dtype> <op> <band>"``."""
    reg = json.loads((REGISTERED / f"{name}.json").read_text())
    path = data / reg["folder"] / "grouped_gemm_time.json.gz"
    if not path.exists():
        raise RoundError(f"{name}: no measurements at {path}; run the round first (benchmarks/gpu_registered_round.sh)")
    pairs = matched(reg, read_data_json(path)["records"])
    if not pairs:
        raise RoundError(f"{name}: none of the {len(reg['items'])} registered items was measured in {path}")
    q: dict[str, dict[str, list[float]]] = {}
    for it, rec in pairs:
        dt = "fp8" if it["dtype"].startswith("fp8") else "bf16"
        band = next(label for top, label in BANDS if it["flops"] < top)
        for grp in (dt, f"{dt} {it['op']}", f"{dt} {it['op']} {band}"):
            for p in PREDICTIONS:
                q.setdefault(grp, {}).setdefault(p, []).append(it["predicted_event_s"][p] / rec["time_s"])
    figs = {g: {p: _stats(v) for p, v in d.items()} for g, d in q.items()}
    order = sorted(figs, key=lambda g: (g.split()[0], len(g.split()) > 1, g))
    head = ("rows", "n", *(f"{p}: MdAPE / p90 %, median ratio" for p in PREDICTIONS))

    def cells(g: str) -> list[Any]:
        return [g, figs[g]["model"][3]] + [
            f"{figs[g][p][0]:.1f} / {figs[g][p][1]:.1f}, {figs[g][p][2]:.3f}" for p in PREDICTIONS
        ]

    families = sorted({rec["family"] for _, rec in pairs})
    text = (
        f"{len(pairs)} of {len(reg['items'])} registered calls measured ({', '.join(families)}; "
        f"registered at {reg['model_commit'][:7]}):\n\n" + table(head, [cells(g) for g in order])
    )
    return text, figs


def dumps(reg: dict[str, Any]) -> str:
    """A registration as JSON text, one item per line (the file diffs item by item)."""
    head = json.dumps({k: v for k, v in reg.items() if k != "items"}, indent=1)
    items = ",\n".join(json.dumps(it) for it in reg["items"])
    return f'{head[:-2]},\n "items": [\n{items}\n ]\n}}\n'


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("action", choices=("register", "score"))
    ap.add_argument("round", choices=sorted(ROUNDS))
    ap.add_argument("--write", action="store_true", help="register: write benchmarks/registered/<round>.json")
    ap.add_argument("--docs", type=Path, help="score: write the table between its markers in this doc")
    a = ap.parse_args(argv)
    if a.action == "register":
        reg = register(a.round)
        n = len(reg["items"])
        print(f"{a.round}: {n} calls of {', '.join(reg['families'])} on {reg['gpu']} ({reg['commands'][0]})")
        if a.write:
            REGISTERED.mkdir(exist_ok=True)
            (REGISTERED / f"{a.round}.json").write_text(dumps(reg))
        return 0
    text, _ = score(a.round)
    print(text)
    if a.docs:
        write_blocks([Block(doc=a.docs, name=f"{a.round}-score", body=text)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
