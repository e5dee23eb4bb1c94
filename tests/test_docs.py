"""Every ```python block in README.md and docs/*.md runs (blocks of one file share a namespace)."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
ALL_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DOCS = [p for p in ALL_DOCS if BLOCK.search(p.read_text())]  # pages without examples have nothing to run


def test_docs_have_examples():
    names = {p.name for p in DOCS}
    assert {"README.md", "index.md", "formulas.md", "float8.md", "measured.md", "hardware.md"} <= names


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_python_blocks_run(path, monkeypatch):
    blocks = BLOCK.findall(path.read_text())
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict = {"__name__": f"doc_{path.stem}"}
    for i, code in enumerate(blocks):
        exec(compile(code, f"{path.name}[block {i}]", "exec"), namespace)
