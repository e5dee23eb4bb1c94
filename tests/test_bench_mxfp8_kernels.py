"""The mxfp8 helper-kernel bench without a GPU: its plan, its errors, its import cost."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from perfmodel.bench import mxfp8_kernels as MX

ROOT = Path(__file__).resolve().parents[1]


def test_cases_cover_each_kernel_and_filter_by_name():
    kernels = {c[0] for c in MX.CASES}
    assert kernels == {
        "rearrange_2d_K_groups",
        "rearrange_2d_M_groups",
        "rearrange_per_group_3d",
        "cast_dim0",
        "cast_dim1",
    }
    only = MX.cases(["cast_dim0"])
    assert only and all(c[0] == "cast_dim0" for c in only)
    # 3 K x 2 token totals x 2 group counts for each 2-D re-layout; 3 (N, K) x 2 expert counts for the 3-D one
    assert sum(c[0] == "rearrange_2d_K_groups" for c in MX.CASES) == 12
    assert sum(c[0] == "rearrange_per_group_3d" for c in MX.CASES) == 6
    # every scale tensor has whole 32-element blocks
    assert all(c[2] % MX.BLOCK == 0 for c in MX.CASES if c[0] != "rearrange_2d_K_groups")
    assert all(c[2] % MX.BLOCK == 0 for c in MX.CASES if c[0] == "rearrange_2d_K_groups")


def test_unknown_kernel_is_a_named_error():
    with pytest.raises(MX.Mxfp8BenchError, match=r"unknown kernels .*valid: cast_dim0"):
        MX.cases(["cast_dim2"])
    with pytest.raises(MX.Mxfp8BenchError, match="--budget-s must be positive"):
        MX.main(["--out", "/tmp/x", "--budget-s", "0"])


def test_import_does_not_import_torch():
    code = (
        "import sys, perfmodel.bench.mxfp8_kernels;"
        "print([m for m in ('torch', 'triton', 'torchao') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_grouped_plan_without_neighbours():
    from perfmodel.bench.grouped_gemm.cli import main

    assert main(["plan", "--dry-run", "--families", "olmoe_1b_7b", "--no-neighbours"]) == 0
