"""The jupytext notebook executes top to bottom and its asserts hold (docs/*.md: tests/test_docs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "docs" / "notebooks" / "symbolic_break_even.md"


def test_symbolic_break_even_notebook_runs(tmp_path, monkeypatch):
    jupytext = pytest.importorskip("jupytext")
    pytest.importorskip("matplotlib")
    nb = jupytext.read(NOTEBOOK)
    code = "\n\n".join(cell.source for cell in nb.cells if cell.cell_type == "code")
    assert "break_even_tokens" in code and "savefig" in code
    monkeypatch.chdir(tmp_path)  # the notebook writes docs/img/... relative to the cwd
    import matplotlib

    matplotlib.use("Agg")
    namespace: dict = {"__name__": "__notebook__"}
    exec(compile(code, str(NOTEBOOK), "exec"), namespace)
    assert (tmp_path / "docs" / "img" / "float8_speedup_vs_tokens.png").exists()
