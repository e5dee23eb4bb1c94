"""docs/validation.md and its appendices are what the validation command (``python benchmarks/validate.py``) writes.

Cheap blocks are regenerated here and compared byte for byte (``train``: its appendix and summary rows, ~2 s;
``published``: torchao's H100 table and the published GEMM throughput, ~1 s). The expensive ones are checked by
format: their markers are in place, their tables have the header the command's writer gives on a small slice of
data, and writing the committed blocks back changes no byte. Expensive, each over the ~20 s budget on 2 cores:
``gemm``'s other blocks (the calibrated fit and its held-out score, the layout sweep, the error bars; ~2.5 min),
``tiles`` (~80 000 GEMMs per timing; ~3 min), ``kernel-choice`` (~40 s), ``step`` (~80 s); their content is checked
against a rerun, to the last printed digit, by tests/test_validation.py, test_kernel_choice.py and
test_validation_step.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bench_modules import bench_module

from benchmarks import validate as command
from benchmarks.harness import tables

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
#: every generated block: subcommand -> (doc, block name) it writes
BLOCKS: dict[str, tuple[tuple[str, str], ...]] = {
    "gemm": (
        ("validation/gemm.md", "validation"),
        ("validation/published.md", "published"),
        ("validation/layouts.md", "layouts"),
        ("validation/errorbars.md", "errorbars"),
        ("validation.md", "summary-gemm"),
    ),
    "tiles": (("validation/tiles.md", "tiles"), ("validation.md", "summary-tiles")),
    "kernel-choice": (("validation/kernel-choice.md", "kernels"), ("validation.md", "summary-kernel-choice")),
    "step": (("step.md", "step-tables"), ("validation.md", "step")),
    "train": (("validation/train.md", "train"), ("validation.md", "summary-train")),
}
_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")


def _committed(doc: str, name: str) -> str:
    return tables.block_text((DOCS / doc).read_text(), name, doc=doc)


def test_every_subcommand_is_registered_and_documented():
    assert set(BLOCKS) == set(command.SUBCOMMANDS)
    for name, (module, _help) in command.SUBCOMMANDS.items():
        assert callable(bench_module(module).run), name
    for doc, name in (b for bs in BLOCKS.values() for b in bs):
        text = (DOCS / doc).read_text()
        begin, end = tables.markers(name)
        assert text.count(begin) == text.count(end) == 1, (doc, name)
    summary = (DOCS / "validation.md").read_text()
    assert len(summary.splitlines()) <= 300
    for sub in command.SUBCOMMANDS:  # the summary names the command of every model
        assert sub in summary


def test_cheap_blocks_regenerate_byte_for_byte():
    got = {(str(b.doc.relative_to(DOCS)), b.name): b.body for b in command.blocks("train")}
    assert set(got) == set(BLOCKS["train"])
    for doc, name in BLOCKS["train"]:
        assert got[doc, name].strip("\n") == _committed(doc, name), "run python benchmarks/validate.py train --write"
    v = bench_module("validate_gemm")
    body = v.markdown_published(v.score_published_float8(), v.score_published_gemm())
    assert body.strip("\n") == _committed("validation/published.md", "published")


def test_writing_the_committed_blocks_back_changes_no_byte(tmp_path):
    for sub, blocks in BLOCKS.items():
        for doc, name in blocks:
            copy = tmp_path / sub / doc
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(DOCS / doc, copy)
            tables.write_blocks([tables.Block(doc=copy, name=name, body=_committed(doc, name))])
            assert copy.read_bytes() == (DOCS / doc).read_bytes(), (sub, doc, name)


def _shape(text: str) -> str:
    """``text`` with every number replaced by ``#`` (the format, not the figures)."""
    return _NUMBER.sub("#", text)


def _stats(n: int, mdape: float, p90: float) -> dict[str, float]:
    return {"n": n, "mdape": mdape, "p90": p90, "max": 2 * p90}


def test_the_summary_tables_have_the_writers_header():
    head = tables.table(tables.SUMMARY_HEAD, [])
    for sub, blocks in BLOCKS.items():
        for doc, name in blocks:
            if name.startswith("summary-"):
                assert _committed(doc, name).startswith(head + "\n| "), (sub, name)


def test_the_tile_blocks_have_the_format_the_writer_gives_on_a_slice():
    """The tile model's summary rows and its by-shape table, written from a small made-up score, have the committed
    format cell for cell (numbers aside)."""
    vt = bench_module("validate_tiles")

    def row(mdape: float) -> dict[str, dict[str, float]]:
        return {"unseen": _stats(10, mdape, 17.2), "seen": _stats(5, 2.4, 13.1), "pooled": _stats(15, 3.3, 15.6)}

    # the committed worst kind is bf16 cr: so is the slice's
    bs = {t: {k: row(5.03 if k == "bf16 cr" else 4.21) for k in (*vt.KINDS, "all")} for t in ("kernel", "event")}
    floors = {"all": {"floor": _stats(3, 3.7, 18.0), "lookup": _stats(3, 2.3, 14.0)}}
    rep = {"by_shape": bs, "fresh": {"pooled": {"floor": floors, "floor_event": floors}}}
    got = vt.summary(rep)
    assert _shape(got) == _shape(_committed("validation.md", "summary-tiles"))
    assert "kernel 4.2 / 17, event 4.2 / 17" in got and "33 % of them of fitted shapes" in got
    table = "\n".join(vt.by_shape_markdown(bs))
    committed = _committed("validation/tiles.md", "tiles")
    i = committed.index("**By shape** (the")
    assert _shape(committed[i : i + len(table) + 200]).startswith(_shape(table.strip("\n")))


def test_the_kernel_choice_summary_has_the_format_the_writer_gives_on_a_slice():
    vk = bench_module("validate_kernel_choice")
    counts = {"gemms": 1000, "right": 994, "alternative": 3, "split_gemms": 900, "split_right": 800, "split_never": 700}
    rep = {"sessions": 81, "kinds": {"bf16": counts, "bf16, held out": counts}}
    got = vk.summary(rep)
    assert "right 99.4 %" in got and "right 88.9 %, never-split baseline 77.8 %" in got
    assert _shape(got) == _shape(_committed("validation.md", "summary-kernel-choice"))


def test_the_table_writer():
    assert tables.table(("a", "b"), [("x", 1), ("y", 2.25)]) == "| a | b |\n|---|---|\n| x | 1 |\n| y | 2.2 |"
    assert tables.pct(4.25) == "4.2 %" and tables.pct(float("nan")) == tables.DASH and tables.pct(None) == "—"
    assert tables.pair({"n": 3, "mdape": 4.21, "p90": 17.2}) == "4.2 / 17"
    assert tables.pair({"n": 0, "mdape": 0.0, "p90": 0.0}) == tables.DASH
    assert tables.num(3) == "3" and tables.num(3.14159, 3) == "3.142"
    with pytest.raises(ValueError, match="a row of 1 cells under a header of 2"):
        tables.table(("a", "b"), [("x",)])


def test_a_doc_without_the_markers_gets_a_named_error(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("# x\n<!-- a:begin -->\nold\n<!-- a:end -->\ntail\n")
    tables.write_blocks([tables.Block(doc=doc, name="a", body="\nnew\n")])
    assert doc.read_text() == "# x\n<!-- a:begin -->\nnew\n<!-- a:end -->\ntail\n"
    with pytest.raises(tables.BlockError, match=r"x.md has no generated block 'b' \(the lines <!-- b:begin -->"):
        tables.write_blocks([tables.Block(doc=doc, name="b", body="x")])
    assert doc.read_text().endswith("tail\n")  # nothing written


def test_the_command_refuses_an_unknown_subcommand():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "validate.py"), "tile"], capture_output=True, text=True, cwd=ROOT
    )
    assert out.returncode == 2 and "invalid choice: 'tile'" in out.stderr and "kernel-choice" in out.stderr
