"""``perfmodel.cli.main``: parse, check the environment, run the verb, and turn every error into an exit status and
one line on stderr (0 ok, 2 a usage or input error, 3 an internal error, never a traceback)."""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence

from .. import __version__
from ..errors import FileRefusedError, PerfModelError, PerfModelWarning, require
from .parser import build_parser

__all__ = ["_VERB_NEEDS", "_check_environment", "main"]

#: The optional module each verb needs (pyproject extras, named by :func:`perfmodel.errors.require`): checked
#: before the verb does any work, so a missing one is an environment error (exit 2), not an internal error.
_VERB_NEEDS = {
    "roofline": ("matplotlib", "perfmodel roofline (the chart)"),
    "calibrate": ("scipy.optimize", "perfmodel calibrate (the least-squares fit)"),
}


def _check_environment(args: argparse.Namespace) -> None:
    """Before any work: the verb's optional dependency is installed, and its output folder can be written."""
    need = _VERB_NEEDS.get(getattr(args, "command", None) or "")
    if need:
        require(*need)
    out = getattr(args, "output", None)
    if out is None or str(out) == "":
        return
    import os
    import tempfile

    from .._files import is_stdout

    if is_stdout(out):
        return
    folder = os.path.dirname(os.path.abspath(os.fspath(out)))
    if not os.path.isdir(folder):
        return  # the verb's own check names the missing folder
    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".perfmodel-write-check-"):
            pass
    except OSError as exc:
        raise FileRefusedError(
            f"{out}: cannot write into the folder {folder!r} ({exc.strerror or exc}); nothing was computed. "
            "Choose a folder you can write, or '-' for standard output."
        ) from None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status: 0 ok, 2 a usage or input error, 3 an internal error.

    Input errors print ``perfmodel: error: <message>`` (the message names the bad value and the valid
    choices); anything else is a bug and prints one line ``perfmodel: internal error: ...``: never a
    traceback.
    """
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        parser = build_parser(verb=argv[0] if argv else None)
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # argparse: --help, --version (0) and usage errors (2)
            return exc.code if isinstance(exc.code, int) else 2
        if getattr(args, "func", None) is None:
            parser.print_help(sys.stderr)
            return 2
        _check_environment(args)
        with warnings.catch_warnings():
            # the CLI prints each answer's provenance (and a caveat for roofline answers) itself
            warnings.simplefilter("ignore", PerfModelWarning)
            return int(args.func(args) or 0)
    except PerfModelError as exc:
        print(f"perfmodel: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `perfmodel gpus | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("perfmodel: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: one line, no traceback
        print(
            f"perfmodel: internal error: {type(exc).__name__}: {exc} (a bug in perfmodel {__version__}: please "
            "report it with the command line that shows it)",
            file=sys.stderr,
        )
        return 3
