"""The published MoE grouped-GEMM table in docs/validation/moe.md is the output of
benchmarks/validate_published_moe.py."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "validation" / "moe.md"
SCRIPT = ROOT / "benchmarks" / "validate_published_moe.py"
DATA = ROOT / "benchmarks" / "data" / "h200_2026-12-03"

pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason="needs the H200 sweep in benchmarks/data/h200_2026-12-03")


@pytest.fixture(scope="module")
def vp():
    spec = importlib.util.spec_from_file_location("validate_published_moe", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def rows(vp):
    return vp.score()


def _docs_block(vp) -> str:
    text = DOCS.read_text()
    i, j = text.find(vp.BEGIN), text.find(vp.END)
    assert 0 <= i < j, "docs/validation/moe.md lacks the published-moe markers"
    return text[i + len(vp.BEGIN) : j].strip()


def test_docs_table_is_the_script_output(vp, rows):
    assert _docs_block(vp) == vp.render(rows), (
        "regenerate: python benchmarks/validate_published_moe.py --docs docs/validation/moe.md"
    )


def test_every_source_is_in_the_docs(vp):
    text = DOCS.read_text()
    for e in vp.PUBLISHED:
        assert e["source"] in text, e["source"]
        assert "https://github.com/" in e["source"]


def test_offsets_become_group_sizes(vp):
    # PR 2490's first offsets: 272, 832, 1744 -> 272, 560, 912 rows; 16 groups summing to M = 8192
    g = vp.rows_from_offs(vp.OFFS_2490_W1)
    assert g[:3] == (272, 560, 912)
    assert len(g) == 16 and sum(g) == 8192
    assert sum(vp.rows_from_offs(vp.OFFS_2490_W2)) == 8192


def test_deepgemm_time_from_tflops(vp):
    # contiguous G 4, m 8192, N 4096, K 7168 at 1346 TFLOPS: 2 * 4 * 8192 * 4096 * 7168 / 1346e12 s = 1.4296 ms
    e = next(e for e in vp.PUBLISHED if e["source"] == vp.DEEPGEMM and e.get("quote") == "1346 TFLOPS")
    assert e["published"] == pytest.approx(2 * 4 * 8192 * 4096 * 7168 / 1346e12, rel=1e-12)
    assert e["published"] == pytest.approx(1.4296e-3, rel=1e-4)


def test_speedup_rows_are_bf16_over_fp8(vp, rows):
    import perfmodel as pm

    r = next(r for r in rows if r["kind"] == "speedup" and r["source"] == vp.AO_2490)
    g = np.asarray(vp.G_2490_W1)
    bf16 = pm.moe.grouped_gemm_time_s(g, 5120, 8192, dtype="bf16", gpu="H100-SXM", timing="kernel")
    fp8 = pm.moe.grouped_gemm_time_s(g, 5120, 8192, dtype="fp8", scaling="rowwise", gpu="H100-SXM", timing="kernel")
    assert r["ours"] == pytest.approx(bf16 / fp8, rel=1e-9)
    assert r["published"] == pytest.approx(1.31 / 0.885, rel=1e-9)
    assert r["ratio"] == pytest.approx(r["ours"] / r["published"], rel=1e-9)


def test_direction_verdicts(vp, rows):
    for r in rows:
        if r["kind"] != "speedup":
            assert r["direction"] == "—"
            continue
        if abs(r["published"] - 1) <= vp.DIRECTION_BAND:
            assert r["direction"].startswith("n/a")
        else:
            right = (r["ours"] > 1) == (r["published"] > 1)
            assert r["direction"] == ("right" if right else "**wrong**")


def test_unexpressible_rows_say_why(vp, rows):
    none = [r for r in rows if r["kind"] == "none"]
    assert none, "the not-expressible sources are listed too"
    for r in none:
        assert r["ours"] is None and r["reason"].startswith("not expressible")


def test_fit_coverage_marks_in_sample_shapes(vp, rows):
    # Llama 4 16e w1 (K 5120, N 8192) is a llama4_maverick fit shape; PR 156203's 7168 x 7168 is in no fit family
    cover, max_rows = vp.fit_coverage()
    assert "llama4_maverick" in cover[(5120, 8192, "bf16")]
    assert (7168, 7168, "bf16") not in cover
    assert max_rows > 1000
    r = next(r for r in rows if r["source"] == vp.PT_156203 and r["price"]["K"] == 7168 and r["price"]["N"] == 7168)
    assert r["seen"].startswith("shape no") and "GPU yes" in r["seen"] and "rows/group >" in r["seen"]


def test_bad_kind_is_refused(vp):
    with pytest.raises(ValueError, match="entry kind"):
        vp.price({"kind": "tflops", "price": {"groups": (1,), "K": 16, "N": 16}})
