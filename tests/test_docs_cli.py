"""docs/cli.md shows what the commands really print today (regenerate: python tools/gen_cli_doc.py)."""

import importlib.util
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_cli_doc_is_current():
    spec = importlib.util.spec_from_file_location("gen_cli_doc", ROOT / "tools" / "gen_cli_doc.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    text = gen.DOC.read_text()
    assert gen.BLOCK.search(text), "docs/cli.md has no $ perfmodel examples"
    got = gen.render(text)
    if got == text:
        return
    # the same text where a number may differ by one unit of its last printed digit: another BLAS build
    # (OPENBLAS_CORETYPE) sums in another order and can move a printed value that sits on a rounding boundary
    number = re.compile(r"\d+\.\d+")
    assert number.sub("#", got) == number.sub("#", text), "docs/cli.md is stale: run python tools/gen_cli_doc.py"
    for g, w in zip(number.findall(got), number.findall(text), strict=True):
        ulp = 10.0 ** -len(w.partition(".")[2])
        assert abs(float(g) - float(w)) <= ulp * 1.000001, (
            f"docs/cli.md is stale ({w} is now {g}): run tools/gen_cli_doc.py"
        )


def test_cli_doc_names_every_option_and_the_exit_statuses():
    from perfmodel import cli

    text = (ROOT / "docs" / "cli.md").read_text()
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for command in ("gpus", "gemm", "float8", "break-even", "models", "train"):
        assert f"## `perfmodel {command}`" in text, command
        for action in sub.choices[command]._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"{flag}" in text, f"docs/cli.md does not mention {command} {flag}"
    assert "**Exit status.** `0`" in text and "`2`: a usage or input error" in text and "`3`: an internal" in text
    assert 'echo "exit status $?"' in text and "\nexit status 2\n" in text
    assert "**`--json`.**" in text
