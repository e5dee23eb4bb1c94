"""docs/cli.md shows what the commands really print today (regenerate: python tools/gen_cli_doc.py)."""

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_cli_doc_is_current():
    spec = importlib.util.spec_from_file_location("gen_cli_doc", ROOT / "tools" / "gen_cli_doc.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    text = gen.DOC.read_text()
    assert gen.BLOCK.search(text), "docs/cli.md has no $ perfmodel examples"
    assert gen.render(text) == text, "docs/cli.md is stale: run python tools/gen_cli_doc.py"
