"""benchmarks/score_block_pieces.py: the pieces of a block timed alone, priced piece by piece (on hand-built records
with the facts of two real H200 block profiles; the bench's pieces phase itself is tested in test_bench_moe_block)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

import perfmodel as pm
from benchmarks import score_block_pieces as S
from perfmodel.bench.moe_block import PIECE_GEMMS

ROOT = Path(__file__).resolve().parents[1]
#: kernel profiles of mixtral_8x22b at 16384 tokens, balanced and skewed (their routing facts are the pieces')
PROFILES = ROOT / "benchmarks" / "data" / "h200_2026-12-04z" / "moe_block_kernels.json.gz"
FACTS = ("id", "model", "tokens", "routing", "recipe", "dim", "inter", "experts", "top_k", "shared_inter",
         "router_experts", "score_func", "counts", "group_rows", "rows")  # fmt: skip
#: what each routing's pieces are made to measure: priced / measured of every priced piece
RATIO = {"balanced": 0.9, "skewed": 0.8}


def _records() -> list[dict]:
    recs = json.loads(gzip.decompress(PROFILES.read_bytes()))["records"]
    out = []
    for r in recs:
        if r["model"] == "mixtral_8x22b" and r["tokens"] == 16384:
            rec = {k: r[k] for k in FACTS}
            w = {"dim": r["dim"], "inter": r["inter"]}
            rec["gemm_shapes"] = {n: [op, w[k], w[v]] for n, (op, k, v) in PIECE_GEMMS.items()}
            out.append(rec)
    assert sorted(r["routing"] for r in out) == ["balanced", "skewed"]
    return out


def _hand_price(rec: dict, name: str) -> float:
    """The price by hand: mixtral_8x22b is dim 6144 -> inter 16384; the K, N the model takes for each piece."""
    K, N = {"w13": (6144, 16384), "w2": (16384, 6144)}[name.split("_")[1]]
    op = name.rsplit("_", 1)[1]
    g = np.asarray(rec["group_rows"])
    return float(pm.moe.grouped_gemm(g, K, N, op=op, timing="event", gpu="H200").time_s)


def _folder(tmp_path: Path, meta: dict | None = None) -> Path:
    """A pieces file whose GEMM and memory pieces measure their hand price / RATIO[routing]."""
    recs = []
    for rec in _records():
        b = pm.moe.expert_block_time("mixtral_8x22b", tokens=16384, counts=rec["counts"], gpu="H200", recipe="bf16",
                                     timing="kernel", measured_eager=True)  # fmt: skip
        ks = {k.name: k.seconds for k in b.kernels}
        q = RATIO[rec["routing"]]
        pieces = {n: {"time_s": _hand_price(rec, n) / q} for n in PIECE_GEMMS}
        pieces["unpermute"] = {"time_s": (ks["unpermute.scores_select"] + ks["unpermute.mul_score"]
                                          + ks["unpermute.zeros"] + ks["unpermute.index_add"]) / q}  # fmt: skip
        pieces["router_fwd"] = {"time_s": 1e-4}
        pieces["permute"] = {"error": "RuntimeError: out of memory"}
        recs.append({**rec, "status": "ok", "pieces": pieces})
    recs.append({"id": "dbrx-T16384-balanced", "status": "error", "error": "x"})
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / S.FILE).write_text(json.dumps({"meta": meta or {"gpu_name": "NVIDIA H200"}, "records": recs}))
    return tmp_path


def test_each_piece_is_priced_as_the_model_prices_that_shape(tmp_path):
    recs = S.load(_folder(tmp_path))
    assert len(recs) == 2 and {r["_gpu"] for r in recs} == {"NVIDIA H200"}  # the failed record is left out
    for rec in recs:
        rows = {r["piece"]: r for r in S.rows_of(rec)}
        q = RATIO[rec["routing"]]
        for n in PIECE_GEMMS:
            assert rows[n]["priced_s"] / rows[n]["measured_s"] == pytest.approx(q, rel=1e-9), n
        assert rows["unpermute"]["priced_s"] / rows["unpermute"]["measured_s"] == pytest.approx(q, rel=1e-9)
        assert rows["router_fwd"]["priced_s"] is None and rows["router_fwd"]["how"] == "not priced alone"
        assert rows["permute"]["measured_s"] is None and "out of memory" in rows["permute"]["error"]


def test_skew_table_puts_measured_and_priced_skew_side_by_side(tmp_path):
    recs = S.load(_folder(tmp_path))
    by = {r["routing"]: r for r in recs}
    gemm = {k: sum(_hand_price(r, n) for n in PIECE_GEMMS) for k, r in by.items()}
    priced = gemm["skewed"] / gemm["balanced"]
    measured = (gemm["skewed"] / 0.8) / (gemm["balanced"] / 0.9)
    text = S.skew_table(recs)
    row = [ln for ln in text.splitlines() if ln.startswith("| mixtral_8x22b")]
    assert len(row) == 1
    cells = [c.strip() for c in row[0].strip("|").split("|")]
    assert cells[1] == "16384"
    assert float(cells[4]) == pytest.approx(measured, abs=6e-4) and float(cells[5]) == pytest.approx(priced, abs=6e-4)
    assert (cells[6], cells[7]) == ("0.900", "0.800")
    assert priced > 1.0  # skew costs something in the model too (tile padding), less than the made-up measurement


def test_report_and_docs_block(tmp_path):
    folder = _folder(tmp_path / "d")
    doc = tmp_path / "doc.md"
    doc.write_text("before\n<!-- block-pieces:begin -->\nold\n<!-- block-pieces:end -->\nafter\n")
    assert S.main([str(folder), "--docs", str(doc)]) == 0
    text = doc.read_text()
    assert "old" not in text and "| mixtral_8x22b-T16384-skewed | gemm_w2_wgrad |" in text
    assert text.startswith("before\n") and text.endswith("after\n")


def test_named_errors(tmp_path, capsys):
    with pytest.raises(S.PiecesError, match=r"no moe_block_pieces\.json"):
        S.load(tmp_path)
    assert S.main([str(tmp_path)]) == 2 and "run the bench's pieces phase" in capsys.readouterr().err
    with pytest.raises(S.PiecesError, match=r"meta\.gpu_name"):
        S.load(_folder(tmp_path / "m", meta={"date": "x"}))
    rec = {**_records()[0], "_gpu": "H200"}
    del rec["gemm_shapes"]
    with pytest.raises(S.PiecesError, match="no gemm_shapes"):
        S.gemm_price_s(rec, "gemm_w2_fwd")


def test_in_block_table_sets_the_profiled_gemms_beside_the_pieces(tmp_path):
    """With the block's bf16 kernel profile in the folder (here the very profiles the records' facts come from), the
    grouped GEMMs' profiled time per iteration is set beside the pieces the block runs (w13 twice: w1 and w3)."""
    folder = _folder(tmp_path)
    prof = json.loads(gzip.decompress(PROFILES.read_bytes()))
    keep = [r for r in prof["records"] if r["model"] == "mixtral_8x22b" and r["tokens"] == 16384]
    (folder / "moe_block_kernels.json").write_text(json.dumps({"meta": prof["meta"], "records": keep}))
    text = S.report(folder)
    assert "| config | GEMMs in the block ms (profiled) | GEMMs alone ms (pieces) |" in text
    for r in keep:
        inside = sum(k["time_s"] for k in r["fwd_bwd"]["kernels"] if "GroupProblemShape" in k["name"])
        alone = sum(_hand_price(r, n) / RATIO[r["routing"]] * (2 if "w13" in n else 1) for n in PIECE_GEMMS)
        row = next(ln for ln in text.splitlines() if ln.startswith(f"| {r['id']} | ") and ln.count("|") == 6)
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert float(cells[1]) == pytest.approx(inside * 1e3, abs=0.006) and 80 < inside * 1e3 < 100  # 9 GEMMs
        assert float(cells[2]) == pytest.approx(alone * 1e3, abs=0.006)
        assert float(cells[3]) == pytest.approx(inside / alone, abs=6e-4)
