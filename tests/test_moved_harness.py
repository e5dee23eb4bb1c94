"""The frozen tile model's fitter and layout sweep moved out of the package (benchmarks/harness/): the old module names
raise a named error saying where they live now, and the harness imports from the repository root."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from perfmodel.errors import MovedOutOfPackageError, PerfModelError

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("old", "new", "name"),
    [
        ("perfmodel.calibrate.tiles", "benchmarks/harness/calibrate_tiles.py", "fit"),
        ("perfmodel.bench.gemm_layouts", "benchmarks/harness/gemm_layouts.py", "main"),
    ],
)
def test_the_old_names_say_where_the_module_went(old, new, name):
    import importlib

    module = importlib.import_module(old)  # importing works (nothing walks into an error) ...
    assert module.__all__ == []
    with pytest.raises(MovedOutOfPackageError, match=rf"{old} moved out of the package: .*{new}.*asked for '{name}'"):
        getattr(module, name)  # ... reading any name of it does not
    with pytest.raises(ImportError, match="not shipped in the wheel"):
        exec(f"from {old} import {name}", {})
    assert issubclass(MovedOutOfPackageError, PerfModelError)
    with pytest.raises(AttributeError):  # dunder look-ups stay plain
        module.__wrapped__  # noqa: B018
    out = subprocess.run([sys.executable, "-m", old], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 2 and new in out.stderr


def test_the_harness_imports_from_the_repository_root():
    from benchmarks.harness import calibrate_tiles, gemm_layouts

    assert Path(calibrate_tiles.__file__).resolve() == ROOT / "benchmarks" / "harness" / "calibrate_tiles.py"
    assert calibrate_tiles.ROOT == ROOT and calibrate_tiles.DATA == ROOT / "benchmarks" / "data" / "h200_2026-12-01"
    assert Path(gemm_layouts.__file__).resolve().parent == ROOT / "benchmarks" / "harness"
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.harness.calibrate_tiles", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0 and "python -m benchmarks.harness.calibrate_tiles" in out.stdout


def test_no_package_module_imports_the_harness():
    import re

    statement = re.compile(r"^\s*(from|import)\s+benchmarks\b", re.MULTILINE)
    for path in (ROOT / "perfmodel").rglob("*.py"):
        assert not statement.search(path.read_text()), path
