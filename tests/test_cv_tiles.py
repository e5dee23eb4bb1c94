"""benchmarks/cv_tiles.py: which sessions its folds hold out and train on."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import cv_tiles  # noqa: E402

from perfmodel.calibrate_tiles import CORRECTION_FILES, CORRECTION_SUFFIXES  # noqa: E402


def test_seed_ranges_parse():
    assert cv_tiles._seeds("2063-2065") == {2063, 2064, 2065}
    assert cv_tiles._seeds("2063,2070") == {2063, 2070}
    assert cv_tiles._seeds("") == set()
    with pytest.raises(ValueError, match="not a seed or a range"):
        cv_tiles._seeds("2063-x")


def test_every_fit_file_maps_back_to_its_session():
    # the folds select files by suffix: each fit file must give the suffix it was listed under
    for timing, files in CORRECTION_FILES.items():
        got = [cv_tiles._suffix(p) for p in files]
        assert set(got) <= set(CORRECTION_SUFFIXES) and len(set(got)) == len(files), timing
    assert cv_tiles._suffix(Path("h200_gemm_layouts_time_2026-12-01.json.gz")) == ""
    repeat = Path("h200_gemm_layouts_kernels_fresh2032_repeat_2026-12-01.json.gz")
    assert cv_tiles._suffix(repeat) == "_fresh2032_repeat"
    assert cv_tiles._suffix(Path("h200_gemm_layouts_kernels_fresh2071_2026-12-02.json.gz")) == "_fresh2071"


def test_the_folds_are_fit_sessions():
    # cross-validation holds out only sessions the correction is fitted on, never a held-out score's session
    for fold in cv_tiles.FOLDS:
        assert all(f"_fresh{s}" in CORRECTION_SUFFIXES for s in fold)
