"""The index_add bench without a GPU: its plan across torch's 32-bit limit, its bytes, its errors, its import cost."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from perfmodel.bench import index_add as IA
from perfmodel.moe.block_constants import INT32_INDEX_LIMIT

ROOT = Path(__file__).resolve().parents[1]


def test_the_limit_is_torchs_32bit_index_math():
    # IndexingUtils.h: max_elem = std::numeric_limits<int32_t>::max(); a tensor with that many elements is refused
    assert INT32_INDEX_LIMIT == 2147483647
    assert not IA.uses_64bit_offsets(4096, 524280, 65536)  # 2,147,450,880 source elements
    assert IA.uses_64bit_offsets(4096, 524288, 65537)  # 2**31: step35_flash at 65536 tokens, top-8
    assert IA.uses_64bit_offsets(1, 10, 2**31)  # the result alone can cross it
    assert IA.uses_64bit_offsets(1, 2**31 - 1, 2)  # and the index alone (one element per row)


def test_every_dim_has_a_pair_one_top_k_step_either_side_of_the_limit():
    for d in (2048, 4096, 7168):
        rows = sorted(r for kernel, dd, r, k in IA.cases(["index_add"]) if dd == d)
        paths = [IA.uses_64bit_offsets(d, r, r // 8 + 1) for r in rows]
        i = paths.index(True)
        assert i >= 2 and all(paths[i:]) and not any(paths[:i])  # 32-bit sizes first, then only 64-bit ones
        lo, hi = rows[i - 1], rows[i]
        assert hi - lo == 8 and lo % 8 == 0 and lo * d < INT32_INDEX_LIMIT <= hi * d
    assert IA.cases(["bcast_mul"]) == [("bcast_mul", *c[1:]) for c in IA.cases(["index_add"])]


def test_bytes_are_the_blocks_prices_by_hand():
    # index_add: 3 bf16 passes per element (read the source, read and write the target) + int64 index
    assert IA.case_bytes("index_add", 4096, 1000) == 1000 * 4096 * 6 + 1000 * 8
    # y * score: read and write [R, d] bf16 + the bf16 scores
    assert IA.case_bytes("bcast_mul", 2048, 10) == 10 * 2048 * 4 + 10 * 2


def test_spins_cut_the_profile_into_cases():
    ev = [("spin_kernel", 0.0, 1.0), ("a", 1.0, 2.0), ("spin_kernel", 3.0, 1.0), ("setup", 4.0, 1.0),
          ("spin_kernel", 5.0, 1.0), ("b", 6.0, 0.5), ("c", 6.5, 0.25), ("spin_kernel", 7.0, 1.0)]  # fmt: skip
    assert IA._split_at_spins(ev) == [[("a", 2.0)], [("b", 0.5), ("c", 0.25)]]


def test_bad_input_is_a_named_error():
    with pytest.raises(IA.IndexAddBenchError, match=r"unknown kernels \['scatter'\]; valid: bcast_mul, index_add"):
        IA.cases(["scatter"])
    with pytest.raises(IA.IndexAddBenchError, match="--budget-s must be positive"):
        IA.main(["--out", "/tmp/x", "--budget-s", "0"])
    with pytest.raises(IA.IndexAddBenchError, match="unknown kernel 'copy'"):
        IA.case_bytes("copy", 1, 1)


def test_dry_run_prints_the_plan(capsys):
    assert IA.main(["--out", "/tmp/unused", "--dry-run", "--kernels", "index_add"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(IA.cases(["index_add"]))
    assert sum(line.endswith("64-bit") for line in lines) == 5 and sum(line.endswith("32-bit") for line in lines) == 9


def test_import_does_not_import_torch():
    code = "import sys, perfmodel.bench.index_add; print([m for m in ('torch', 'triton') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_the_derivation_takes_the_median_ratio_across_the_limit_times_the_2d_rate():
    import importlib.util

    spec = importlib.util.spec_from_file_location("derive_index_add", ROOT / "benchmarks" / "derive_index_add.py")
    D = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(D)
    from perfmodel.moe.block_constants import EAGER_SLOWDOWN

    def rec(kernel, d, rows, seconds):
        b = IA.case_bytes(kernel, d, rows)
        return {"kernel": kernel, "dim": d, "rows": rows, "top_k": 8, "targets": rows // 8 + 1, "elements": rows * d,
                "bytes": b, "time_s": seconds, "bytes_per_s": b / seconds}  # fmt: skip

    recs = []
    for d, slow in ((2048, 1.5), (4096, 1.6), (7168, 2.0)):  # per-byte slowdowns across the limit, by hand
        lo, hi = (r for _, dd, r, _ in IA.cases(["index_add"]) if dd == d and r in IA._edge_pair(d, 8))
        t_lo = IA.case_bytes("index_add", d, lo) / 500e9  # 500 GB/s below the limit
        recs += [
            rec("index_add", d, lo, t_lo),
            rec("index_add", d, hi, IA.case_bytes("index_add", d, hi) / 500e9 * slow),
        ]
    recs.append(rec("index_add", 4096, 2**16, 1e-3))  # a size far from the limit: not a pair, not in the ratio
    doc = {"meta": {"date_utc": "2026-12-07T00:00:00Z", "gpu": "test", "gpu_uuid": "GPU-0", "torch": "x",
                    "timing": "t"}, "records": recs}  # fmt: skip
    ratios = D.edge_ratios(doc)
    assert ratios == pytest.approx({2048: 1.5, 4096: 1.6, 7168: 2.0}, rel=1e-12)
    assert D.factor(doc) == pytest.approx(EAGER_SLOWDOWN["index_add"] * 1.6, rel=1e-12)
    text = D.table(doc)
    assert "d 4096: 1.600" in text and text.count("| index_add |") == 7
