"""benchmarks/cv_tiles.py: which sessions its folds hold out and train on."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import cv_tiles  # noqa: E402

from perfmodel.calibrate_tiles import CORRECTION_FILES, CORRECTION_SESSIONS, CORRECTION_SUFFIXES  # noqa: E402


def test_seed_ranges_parse():
    assert cv_tiles._seeds("2063-2065") == {2063, 2064, 2065}
    assert cv_tiles._seeds("2063,2070") == {2063, 2070}
    assert cv_tiles._seeds("") == set()
    with pytest.raises(ValueError, match="not a seed or a range"):
        cv_tiles._seeds("2063-x")


def test_every_fit_file_is_its_sessions():
    # the folds select files by session: each timing's sessions are CORRECTION_SUFFIXES' (in order) and each file
    # is its suffix's, and they are the files the fit reads
    for timing, sessions in CORRECTION_SESSIONS.items():
        assert list(sessions) == [s for s in CORRECTION_SUFFIXES if s in sessions], timing
        for sfx, path in sessions.items():
            kind = "kernels" if timing == "kernel" else "time"
            assert path.name.startswith(f"h200_gemm_layouts_{kind}{sfx}_2026-12-0"), (timing, sfx, path.name)
        assert tuple(sessions.values()) == CORRECTION_FILES[timing]
    assert set(CORRECTION_SESSIONS["kernel"]) - set(CORRECTION_SESSIONS["event"]) == {"_fresh2062"}


def test_the_folds_are_fit_sessions():
    # cross-validation holds out only sessions the correction is fitted on, never a held-out score's session
    for fold in cv_tiles.FOLDS:
        assert all(f"_fresh{s}" in CORRECTION_SUFFIXES for s in fold)


def test_sweep_path_finds_each_sessions_day_and_names_a_missing_one():
    from perfmodel.calibrate import read_data_json
    from perfmodel.calibrate_tiles import sweep_path
    from perfmodel.errors import CalibrationError

    assert sweep_path("time", "").name == "h200_gemm_layouts_time_2026-12-01.json.gz"
    assert sweep_path("kernels", "_fresh2071").name == "h200_gemm_layouts_kernels_fresh2071_2026-12-02.json.gz"
    missing = sweep_path("time", "_fresh9999")
    assert missing.name == "h200_gemm_layouts_time_fresh9999_2026-12-01.json.gz" and not missing.exists()
    with pytest.raises(CalibrationError, match="cannot read the data"):
        read_data_json(missing)
