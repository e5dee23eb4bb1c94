"""The validation report and the shipped H200 calibration are what the committed data gives."""

import importlib.util
import pathlib

import pytest

import perfmodel as pm
from perfmodel.calibrate import load_calibration

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def validate():
    spec = importlib.util.spec_from_file_location("validate", ROOT / "benchmarks" / "validate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def report(validate):
    return validate.evaluate(sorted(validate.DATA.glob("h200_*.json")))


def test_docs_tables_are_reproducible(validate, report):
    doc = (ROOT / "docs" / "validation.md").read_text()
    assert f"{validate.BEGIN}\n{validate.markdown(report)}\n{validate.END}" in doc


def test_shipped_calibration_is_the_fit(report):
    shipped = load_calibration(ROOT / "perfmodel" / "calibrations" / "h200.json")
    assert shipped.to_dict() == report["calibration"].to_dict()
    assert pm.get_gpu("H200").calibration.load().to_dict() == shipped.to_dict()


def test_calibrated_beats_constant_fraction_rooflines(report):
    for group, by_model in report["gemm"].items():
        ours = by_model["perfmodel calibrated"]
        assert ours["n"] > 250, group
        assert ours["mdape"] < 8, group
        for name in ("original 60%/92%", "roofline 0.78"):
            assert ours["mdape"] < by_model[name]["mdape"] / 3, (group, name)
    for row, by_model in report["linear"].items():
        if row.endswith("(static)"):
            assert by_model["perfmodel calibrated"]["mdape"] < 6, row
            assert by_model["perfmodel calibrated"]["p90"] < 15, row
    for row, d in report["decisions"].items():
        ours = d["perfmodel calibrated"]
        assert ours["agree_clear"] == ours["n_clear"] or not row.endswith("(static)"), row
        assert ours["share"] >= d["original 60%/92%"]["share"], row


def test_h200_predicts_with_its_calibration_by_default():
    h200 = pm.get_gpu("H200")
    assert h200.calibration is not None
    assert pm.gemm_time_s(4096, 4096, 4096, "bf16", h200) != pm.gemm_time_s(4096, 4096, 4096, "bf16", h200,
                                                                            model="roofline")
    from perfmodel import float8

    assert float8.linear_time(8192, 4096, 4096, "tensorwise", h200).model == "calibrated"
    # dynamic-shape compiles get the slower casts they measured
    assert float8.speedup(8192, 4096, 14336, "rowwise", h200, dynamic_shapes=True) < float8.speedup(
        8192, 4096, 14336, "rowwise", h200)
