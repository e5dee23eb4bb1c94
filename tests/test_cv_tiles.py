"""benchmarks/cv_tiles.py: which sessions its folds hold out and train on."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import cv_tiles  # noqa: E402

from benchmarks.harness.calibrate_tiles import CORRECTION_FILES, CORRECTION_SESSIONS, CORRECTION_SUFFIXES  # noqa: E402


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
    from benchmarks.harness.calibrate_tiles import sweep_path
    from perfmodel.calibrate import read_data_json
    from perfmodel.errors import CalibrationError

    assert sweep_path("time", "").name == "h200_gemm_layouts_time_2026-12-01.json.gz"
    assert sweep_path("kernels", "_fresh2071").name == "h200_gemm_layouts_kernels_fresh2071_2026-12-02.json.gz"
    missing = sweep_path("time", "_fresh9999")
    assert missing.name == "h200_gemm_layouts_time_fresh9999_2026-12-01.json.gz" and not missing.exists()
    with pytest.raises(CalibrationError, match="cannot read the data"):
        read_data_json(missing)


def test_kind_parts_reads_each_kind_and_names_an_unknown_one():
    from benchmarks.harness.calibrate_tiles import kind_parts
    from perfmodel.errors import CalibrationError
    from perfmodel.models.tiles import CORRECTION_KEYS

    fmt, scaling, layout = kind_parts("bf16@fallback/cr")
    assert (fmt.name, scaling, layout) == ("bf16", None, "cr")
    fmt, scaling, layout = kind_parts("fp8_e4m3/tensorwise")
    assert (fmt.name, scaling, layout) == ("fp8_e4m3", "tensorwise", "rc")
    assert [kind_parts(k)[2] for k in ("bf16@rr", "bf16@rc", "bf16@cr", "bf16@fallback/rr")] == ["rr", "rc", "cr", "rr"]
    parts = {k: kind_parts(k) for k in CORRECTION_KEYS}
    assert len({(f.name, s, lay) for f, s, lay in parts.values()}) == 5  # each fallback kind shares its main's
    for bad in ("fp8_e4m3", "bf16@xx", "", 3, None):
        with pytest.raises(CalibrationError, match=r"unknown kind .*Valid choices: bf16@cr, bf16@fallback/cr"):
            kind_parts(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["event", "bf16@xx", "[{}]"], "unknown kind 'bf16@xx'"),
        (["event", "bf16@rr", "{not json"], "settings and --main must be JSON"),
        (["event", "bf16@rr", '{"trees": 3}'], "settings must be a JSON list of objects"),
        (["event", "bf16@rr", "[{}]", "--without", "20x"], "not a seed or a range of seeds"),
    ],
)
def test_bad_arguments_get_a_usage_error_before_any_fit(argv, message, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["cv_tiles.py", *argv])
    with pytest.raises(SystemExit) as exc:
        cv_tiles.main()
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
