"""perfmodel.cli is a package (perfmodel issue 32) whose verbs import only what they run (issue 35)."""

import subprocess
import sys

import pytest

from perfmodel import cli
from perfmodel.cli.output import _heading
from perfmodel.models.base import PROVENANCE_KINDS, ExpectedError, Provenance
from perfmodel.report.text import provenance_heading


def _modules_after(stmt: str) -> set[str]:
    code = f"import sys; {stmt}; print(','.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return set(out.strip().splitlines()[-1].split(","))


def test_the_flat_modules_names_stay_importable():
    for name in ("main", "build_parser", "_table", "_gpu", "_cmd_gemm", "_cmd_float8", "_check_environment"):
        assert callable(getattr(cli, name)), name
    assert cli._TIME_MODELS == ("roofline", "original", "calibrated", "tiles")
    assert cli.__all__ == ["build_parser", "main"]


@pytest.mark.parametrize("kind", PROVENANCE_KINDS)
def test_the_cli_heading_says_what_the_report_heading_says(kind):
    bar = ExpectedError(basis="none")
    prov = Provenance(kind=kind, gpu="H100-SXM", time_model="calibrated", source="s", summary="s", expected_error=bar)
    assert _heading(prov) == provenance_heading(prov) == f"{kind} answer, calibrated model"


def test_gemm_does_not_import_the_report_package_nor_numpy_ma():
    loaded = _modules_after("from perfmodel.cli import main; main(['gemm', '4096', '4096', '4096', '--gpu', 'h100'])")
    assert "perfmodel.gemm" in loaded
    assert not loaded & {"perfmodel.report", "perfmodel.float8", "perfmodel.presets", "numpy.ma"}


def test_import_perfmodel_loads_no_model_module():
    loaded = _modules_after("import perfmodel")
    assert "numpy" in loaded
    assert not loaded & {"perfmodel.gemm", "perfmodel.specs.gpu", "perfmodel.models.registry", "perfmodel.formats"}
