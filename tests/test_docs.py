"""Every ```python block in README.md and docs/*.md runs (blocks of one file share a namespace)."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def test_docs_exist():
    assert (ROOT / "README.md").exists() and len(DOCS) >= 3


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_python_blocks_run(path, monkeypatch):
    blocks = BLOCK.findall(path.read_text())
    if not blocks:
        pytest.skip(f"{path.name} has no python examples")
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict = {"__name__": f"doc_{path.stem}"}
    for i, code in enumerate(blocks):
        exec(compile(code, f"{path.name}[block {i}]", "exec"), namespace)
