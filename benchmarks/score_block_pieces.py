"""A block's pieces timed alone against the model's price of each (``python -m perfmodel.bench.moe_block pieces``).

    python benchmarks/score_block_pieces.py benchmarks/data/<folder> [--docs docs/validation/moe.md]

The question it answers: where the model prices a bf16 block's grouped GEMMs fast (the skewed blocks of few, large
experts; docs/validation/moe.md, "Skewed large-expert bf16 blocks"), is the isolated grouped-GEMM model wrong for those
group sizes, or do the GEMMs run slower inside the block than alone? The pieces phase times each of the block's pieces
alone with ``do_bench`` (L2 flushed before every run) on the block's own shapes and routed group sizes, so:

* each grouped GEMM piece is priced by :func:`perfmodel.moe.grouped_gemm` at event timing (what ``do_bench``
  measures) with the record's padded group rows and its ``gemm_shapes`` (op, K, N in perfmodel.moe's convention,
  written by the bench: ``perfmodel.bench.moe_block.PIECE_GEMMS``);
* ``permute``, ``swiglu_fwd`` and ``unpermute`` are priced as the block model's kernels they run
  (:data:`MEMORY_PIECES`), summed at kernel timing with the measured eager rates: their event time also holds a few
  launches, microseconds;
* the router, the permutation plan and the shared expert are listed as measured, not priced here.

The summary puts skew's cost on the GEMMs side by side: the six GEMM pieces' time, skewed over balanced, measured and
priced, for every (model, tokens) timed both ways. Where the folder also holds the block's bf16 kernel profile
(``moe_block_kernels.json``, the same id), the grouped GEMMs' profiled time per fwd+bwd iteration is set beside the
sum of the pieces the block runs (:data:`BLOCK_GEMMS`: w1 and w3 each run the w13 pieces): in the block over alone.
No constant is fitted here.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import perfmodel as pm  # noqa: E402
from benchmarks.harness.tables import Block, num, table, write_blocks  # noqa: E402
from benchmarks.validate_moe_block import _json_files, load_kernels, measured_class, predict  # noqa: E402
from perfmodel.errors import PerfModelError  # noqa: E402

#: the pieces file the bench writes (``WRITE_NAMES["pieces"]``)
FILE = "moe_block_pieces.json"
#: memory pieces -> the block model's kernels (perfmodel.moe.block) each runs, in the bench's order
MEMORY_PIECES: dict[str, tuple[str, ...]] = {
    "permute": ("permute.cat_pad_row", "permute.index_select"),
    "swiglu_fwd": ("experts.swiglu.silu", "experts.swiglu.mul"),
    "unpermute": ("unpermute.scores_select", "unpermute.mul_score", "unpermute.zeros", "unpermute.index_add"),
}
#: how often one fwd+bwd of the bench's block runs each GEMM piece (gate w1 and up w3 unfused: the w13 ones twice)
BLOCK_GEMMS: dict[str, int] = {"gemm_w13_fwd": 2, "gemm_w13_dgrad": 2, "gemm_w13_wgrad": 2, "gemm_w2_fwd": 1,
                               "gemm_w2_dgrad": 1, "gemm_w2_wgrad": 1}  # fmt: skip
#: the doc block this writes
BLOCK = "block-pieces"


class PiecesError(PerfModelError, ValueError):
    """A pieces folder without pieces records, or a record without what pricing it needs."""


def load(folder: Path) -> list[dict[str, Any]]:
    """Every pieces record with status ok, each with ``_gpu`` (the file's ``meta.gpu_name``)."""
    d = _json_files(folder).get(FILE)
    if d is None:
        raise PiecesError(f"{folder}: no {FILE} (or .json.gz, or a tarball holding it): run the bench's pieces phase")
    gpu = d.get("meta", {}).get("gpu_name")
    if not gpu:
        raise PiecesError(f"{folder}/{FILE}: meta.gpu_name is missing; the pieces are priced for the GPU they ran on")
    return [{**r, "_gpu": gpu} for r in d.get("records", []) if r.get("status") == "ok" and r.get("pieces")]


def gemm_price_s(rec: dict[str, Any], name: str) -> float:
    """The grouped model's event time of GEMM piece ``name`` of ``rec``, seconds."""
    shapes = rec.get("gemm_shapes") or {}
    if name not in shapes:
        raise PiecesError(f"{rec.get('id')}: no gemm_shapes[{name!r}] (records of the bench before 2026-12-08?)")
    op, K, N = shapes[name]
    g = np.asarray(rec["group_rows"], dtype=np.int64)
    return float(pm.moe.grouped_gemm(g, K, N, dtype="bf16", op=op, timing="event", gpu=rec["_gpu"]).time_s)


def memory_price_s(rec: dict[str, Any], kernels: dict[str, float], name: str) -> float:
    """The block model's kernel-time sum of memory piece ``name`` (:data:`MEMORY_PIECES`), seconds."""
    missing = [k for k in MEMORY_PIECES[name] if k not in kernels]
    if missing:
        raise PiecesError(f"{rec.get('id')}: the block model prices no {', '.join(missing)} (renamed in block.py?)")
    return sum(kernels[k] for k in MEMORY_PIECES[name])


def priced(rec: dict[str, Any]) -> tuple[list[dict[str, Any]], Any]:
    """:func:`rows_of` ``rec`` and the block model's bf16 answer they were priced from (kernel timing, measured eager
    rates), computed once for every table of :func:`report`."""
    b = predict({**rec, "recipe": "bf16"}, measured_eager=True, timing="kernel")
    kernels = {k.name: k.seconds for k in b.kernels}
    out = []
    for name, p in rec["pieces"].items():
        if "time_s" not in p:
            out.append({"piece": name, "measured_s": None, "priced_s": None, "error": p.get("error", "?")})
            continue
        if name in (rec.get("gemm_shapes") or {}):
            price, how = gemm_price_s(rec, name), "grouped GEMM, event"
        elif name in MEMORY_PIECES:
            price, how = memory_price_s(rec, kernels, name), "block kernels, kernel time"
        else:
            price, how = None, "not priced alone"
        out.append({"piece": name, "measured_s": p["time_s"], "priced_s": price, "how": how})
    return out, b


def rows_of(rec: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per timed piece of ``rec``: name, measured and priced seconds (priced None where not priced)."""
    return priced(rec)[0]


#: record id -> :func:`priced` of it
Priced = Mapping[str, tuple[list[dict[str, Any]], Any]]


def _priced_all(recs: list[dict[str, Any]], done: Priced | None) -> Priced:
    return done if done is not None else {r["id"]: priced(r) for r in recs}


def _gemm_sums(rows: list[dict[str, Any]]) -> tuple[float, float] | None:
    g = [r for r in rows if r["piece"].startswith("gemm_")]
    if len(g) != len(BLOCK_GEMMS) or any(r["measured_s"] is None for r in g):
        return None
    return sum(r["measured_s"] for r in g), sum(r["priced_s"] for r in g)


def pieces_table(recs: list[dict[str, Any]], done: Priced | None = None) -> str:
    """Every piece of every record: measured ms, priced ms, priced / measured."""
    done = _priced_all(recs, done)
    body = []
    for rec in sorted(recs, key=lambda r: (r["model"], r["tokens"], r["routing"])):
        for r in done[rec["id"]][0]:
            q = r["priced_s"] / r["measured_s"] if r["priced_s"] and r["measured_s"] else None
            body.append([rec["id"], r["piece"], num(None if r["measured_s"] is None else r["measured_s"] * 1e3, 3),
                         num(None if r["priced_s"] is None else r["priced_s"] * 1e3, 3), num(q, 3),
                         r.get("how") or f"failed: {r['error'][:60]}"])  # fmt: skip
    return table(("config", "piece", "measured ms", "priced ms", "priced / measured", "priced as"), body)


def skew_table(recs: list[dict[str, Any]], done: Priced | None = None) -> str:
    """Per (model, tokens) timed balanced and skewed: the GEMM pieces' sum, skewed over balanced, measured and priced,
    and each routing's priced / measured."""
    done = _priced_all(recs, done)
    by: dict[tuple[str, int], dict[str, tuple[float, float]]] = {}
    for rec in recs:
        s = _gemm_sums(done[rec["id"]][0])
        if s is not None:
            by.setdefault((rec["model"], rec["tokens"]), {})[rec["routing"]] = s
    body = []
    for (model, tokens), d in sorted(by.items()):
        if "balanced" not in d or "skewed" not in d:
            continue
        (mb, pb), (ms, ps) = d["balanced"], d["skewed"]
        body.append([model, tokens, num(mb * 1e3, 2), num(ms * 1e3, 2), num(ms / mb, 3), num(ps / pb, 3),
                     num(pb / mb, 3), num(ps / ms, 3)])  # fmt: skip
    head = ("model", "tokens", "GEMMs balanced ms", "GEMMs skewed ms", "skewed / balanced measured",
            "skewed / balanced priced", "balanced priced / measured", "skewed priced / measured")  # fmt: skip
    return table(head, body)


def in_block_table(recs: list[dict[str, Any]], krecs: list[dict[str, Any]], done: Priced | None = None) -> str:
    """Per pieces record with a bf16 kernel profile of the same id: the grouped GEMMs' profiled seconds per fwd+bwd
    iteration in the block, the pieces' sum alone (:data:`BLOCK_GEMMS`), their ratio, and the block model's kernel
    price of those GEMMs over the profiled time."""
    done = _priced_all(recs, done)
    prof = {k["id"]: k for k in krecs if k.get("recipe") == "bf16"}
    body = []
    for rec in sorted(recs, key=lambda r: (r["model"], r["tokens"], r["routing"])):
        k, p = prof.get(rec["id"]), rec["pieces"]
        if k is None or any("time_s" not in p.get(n, {}) for n in BLOCK_GEMMS):
            continue
        inside = sum(x["time_s"] for x in k["fwd_bwd"]["kernels"] if measured_class(x["name"]) == "grouped_gemm")
        alone = sum(p[n]["time_s"] * c for n, c in BLOCK_GEMMS.items())
        gemms = sum(x.seconds for x in done[rec["id"]][1].kernels if x.kind == "gemm")
        body.append([rec["id"], num(inside * 1e3, 2), num(alone * 1e3, 2), num(inside / alone, 3),
                     num(gemms / inside, 3)])  # fmt: skip
    head = ("config", "GEMMs in the block ms (profiled)", "GEMMs alone ms (pieces)", "in block / alone",
            "priced (kernel) / in block")  # fmt: skip
    return table(head, body)


def report(folder: Path) -> str:
    recs = load(folder)
    if not recs:
        raise PiecesError(f"{folder}/{FILE}: no record with status ok")
    gpus = sorted({r["_gpu"] for r in recs})
    head = f"{len(recs)} pieces records from {folder.name} ({', '.join(gpus)}); bf16, each piece alone, L2 flushed"
    done = _priced_all(recs, None)  # the block model once per record, for every table
    parts = [head, skew_table(recs, done)]
    krecs = load_kernels(folder)
    if krecs:
        parts.append(in_block_table(recs, krecs, done))
    return "\n\n".join([*parts, pieces_table(recs, done)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--docs", type=Path, help=f"write the report between the {BLOCK} markers of this doc")
    args = ap.parse_args(argv)
    try:
        text = report(args.folder)
        if args.docs:
            write_blocks([Block(doc=args.docs, name=BLOCK, body=text)])
    except PerfModelError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
