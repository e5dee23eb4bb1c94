"""``python -m perfmodel.calibrate.layer``: the data folder is an explicit argument (``--data DIR``); no data, a
missing or empty folder, or a folder lacking some files are a named :class:`MissingDataError` that lists the files
and where a checkout keeps them; progress goes to standard error, a line per stage with the elapsed seconds."""

import json
import re
from pathlib import Path

import pytest

from perfmodel._files import gzip_bytes
from perfmodel.calibrate import layer as cl
from perfmodel.errors import CalibrationError, MissingDataError, PerfModelError

ROOT = Path(__file__).resolve().parents[1]
REPO = ROOT / cl.REPO_DATA


def test_missing_data_error_is_a_calibration_error_and_a_file_not_found_error():
    assert issubclass(MissingDataError, CalibrationError) and issubclass(MissingDataError, PerfModelError)
    assert issubclass(MissingDataError, FileNotFoundError)
    assert str(MissingDataError("x")) == "x"


def test_no_data_names_the_files_and_where_the_repository_keeps_them(capsys, tmp_path):
    assert cl.main(["-o", str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m perfmodel.calibrate.layer: error: no data")
    assert all(name in err for name in cl.DEFAULT_FILES) and "benchmarks/data/h200_2026-12-01" in err
    assert not (tmp_path / "out.json").exists()


def test_a_missing_or_empty_folder_is_named(tmp_path):
    with pytest.raises(MissingDataError, match=r"does not exist; the layer fit needs a folder with h200_layer_quiet_"):
        cl.default_paths(tmp_path / "nowhere")
    (tmp_path / "f").write_text("")
    with pytest.raises(MissingDataError, match="is not a folder"):
        cl.default_paths(tmp_path / "f")
    (tmp_path / "empty").mkdir()
    with pytest.raises(MissingDataError, match=r"5 of the 5 layer sweep files are missing \(the folder is empty\)"):
        cl.default_paths(tmp_path / "empty")


def test_a_partial_folder_lists_what_is_missing(tmp_path):
    (tmp_path / cl.DEFAULT_FILES[0]).write_text("{}")
    with pytest.raises(MissingDataError) as info:
        cl.default_paths(tmp_path)
    msg = str(info.value)
    assert "4 of the 5" in msg and "empty" not in msg and cl.REPO_DATA in msg
    assert cl.DEFAULT_FILES[0] not in msg.split("missing: ")[1] and all(n in msg for n in cl.DEFAULT_FILES[1:])


@pytest.mark.skipif(not REPO.is_dir(), reason="needs a checkout's benchmarks/data")
def test_the_repository_folder_has_every_file_and_gzip_copies_are_found(tmp_path):
    assert [p.name for p in cl.default_paths(REPO)] == list(cl.DEFAULT_FILES)
    for name in cl.DEFAULT_FILES[:2]:  # two gzipped, three plain: each file is looked up both ways
        (tmp_path / f"{name}.gz").write_bytes(gzip_bytes((REPO / name).read_bytes()))
    for name in cl.DEFAULT_FILES[2:]:
        (tmp_path / name).write_bytes((REPO / name).read_bytes())
    paths = cl.default_paths(tmp_path)
    assert [p.name for p in paths[:2]] == [f"{n}.gz" for n in cl.DEFAULT_FILES[:2]]
    assert len(cl.load_records(paths[:1])) == len(cl.load_records([REPO / cl.DEFAULT_FILES[0]])) > 0


def test_files_and_a_folder_together_are_refused(capsys, tmp_path):
    assert cl.main(["a.json", "--data", str(tmp_path), "-o", str(tmp_path / "o.json")]) == 2
    assert "not both" in capsys.readouterr().err


def test_an_existing_output_is_refused_before_reading(capsys, tmp_path):
    out = tmp_path / "o.json"
    out.write_text("keep")
    assert cl.main(["--data", str(tmp_path / "nowhere"), "-o", str(out)]) == 2  # the folder is checked first
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "d").mkdir()
    for name in cl.DEFAULT_FILES:
        (tmp_path / "d" / name).write_text("not read")
    assert cl.main(["--data", str(tmp_path / "d"), "-o", str(out)]) == 2
    assert "exists; not overwriting it" in capsys.readouterr().err and out.read_text() == "keep"


@pytest.mark.skipif(not REPO.is_dir(), reason="needs a checkout's benchmarks/data")
def test_progress_goes_to_stderr_a_line_per_stage(capsys, tmp_path, monkeypatch):
    from perfmodel.step.params import shipped

    fitted = []
    monkeypatch.setattr(cl, "fit", lambda records, **kw: fitted.append(kw.get("exclude_dims")) or shipped())
    monkeypatch.setattr(cl, "residuals", lambda params, records: {"speedup_mdape_pct": 1.0, "step_mdape_pct": 2.0})
    out = tmp_path / "o.json"
    assert cl.main(["--data", str(REPO), "-o", str(out)]) == 0
    cap = capsys.readouterr()
    lines = cap.err.splitlines()
    assert all(re.match(r"\[ *\d+\.\d s\] ", line) for line in lines), lines
    stages = [line.split("] ", 1)[1] for line in lines]
    dims = sorted({int(d) for d in (x[0] for x in fitted[1:])})
    assert fitted[0] is None and len(dims) == len(fitted) - 1 >= 3  # one fit on all, then one per layer size
    assert stages[0] == "reading 5 files" and stages[1].startswith("fit on all ")
    assert [s.split(":")[0] for s in stages[2:-2]] == [
        f"held-out rotation {i}/{len(dims)}" for i in range(1, 1 + len(dims))
    ]
    assert stages[-2:] == ["in-sample residuals", f"wrote {out}"]
    assert cap.out.startswith(f"wrote {out}: ")  # the result on stdout, the progress on stderr
    saved = json.loads(out.read_text())
    assert saved["residuals"]["heldout"]["step_mdape_pct"] == pytest.approx(2.0, rel=1e-9)
    assert all(n in saved["source"] for n in cl.DEFAULT_FILES)
