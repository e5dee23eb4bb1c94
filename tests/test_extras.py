"""Optional extras are named, never "internal error": a missing matplotlib / scipy (simulated with
``sys.modules[name] = None``) gives MissingExtraError from the API and exit status 2 from the CLI with the
``pip install ".[extra]"`` that brings it; an output folder that cannot be written is refused before any work."""

import json
import sys
import tempfile
from pathlib import Path

import pytest

import perfmodel as pm
from perfmodel.cli import main
from perfmodel.errors import EXTRAS, MissingExtraError, PerfModelError, require

DATA = Path(__file__).parent / "data"


def test_require_names_the_extra(monkeypatch):
    for module, extra in EXTRAS.items():
        monkeypatch.setitem(sys.modules, module, None)
        with pytest.raises(MissingExtraError, match=rf'pip install "\.\[{extra}\]" from a perfmodel checkout'):
            require(module, "a feature")
    assert issubclass(MissingExtraError, PerfModelError) and issubclass(MissingExtraError, ImportError)
    assert require("json", "anything") is json


def test_extras_are_the_pyproject_ones():
    text = (Path(__file__).parents[1] / "pyproject.toml").read_text()
    for extra in EXTRAS.values():
        assert f"\n{extra} = [" in text, extra


@pytest.mark.parametrize(
    "module, argv, extra",
    [
        ("matplotlib", ["roofline", "-m", str(DATA / "moe" / "log_metadata.json"), "-o", "{tmp}/chart.png"], "plot"),
        ("matplotlib", ["roofline", "-m", str(DATA / "moe" / "log_metadata.json"), "-o", "-"], "plot"),
        ("scipy", ["calibrate", "{tmp}/data.json", "--gpu", "h200", "-o", "{tmp}/fit.json"], "calibrate"),
    ],
)
def test_cli_verb_without_its_extra_exits_2_naming_it(monkeypatch, capsys, tmp_path, module, argv, extra):
    (tmp_path / "data.json").write_text("[]")
    monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setitem(sys.modules, f"{module}.pyplot" if module == "matplotlib" else f"{module}.optimize", None)
    code = main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "internal error" not in err and "a bug in perfmodel" not in err
    assert f'pip install ".[{extra}]"' in err and module in err
    assert not (tmp_path / "chart.png").exists() and not (tmp_path / "fit.json").exists()


def test_api_without_matplotlib_raises_missing_extra(monkeypatch):
    from perfmodel.measured import plot

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    point = pm.gemm_perfdata(4096, 4096, 4096, "bf16", "H200")
    with pytest.raises(MissingExtraError, match=r'pip install "\.\[plot\]"'):
        plot.roofline([point], gpu="H200")


def test_api_without_scipy_raises_missing_extra(monkeypatch):
    from test_calibrate import synthetic_records

    from perfmodel import calibrate

    records = synthetic_records(60)
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.optimize", None)
    with pytest.raises(MissingExtraError, match=r'pip install "\.\[calibrate\]"'):
        calibrate.Calibrator(gpu="h200").fit(records)


def test_unwritable_output_folder_is_refused_before_any_work(monkeypatch, capsys, tmp_path):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "TemporaryFile", refuse)  # root passes every permission check: simulate it
    data = tmp_path / "data.json"
    data.write_text("[]")  # an empty dataset: the verb would refuse it, but the folder check comes first
    code = main(["calibrate", str(data), "--gpu", "h200", "-o", str(tmp_path / "fit.json")])
    err = capsys.readouterr().err
    assert code == 2 and "cannot write into the folder" in err and "Permission denied" in err, err
    assert "internal error" not in err and ".tmp" not in err
    code = main(["roofline", "-m", str(DATA / "moe" / "log_metadata.json"), "-o", str(tmp_path / "c.png")])
    err = capsys.readouterr().err
    assert code == 2 and "cannot write into the folder" in err, err
