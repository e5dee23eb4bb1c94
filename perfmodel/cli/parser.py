"""The ``perfmodel`` argument parser: the core subcommands (each defined beside its verb) and the subcommands other
modules own (``roofline``, ``profile``, ``calibrate``), which are built only where the verb about to run needs
them."""

from __future__ import annotations

import argparse

from .. import __version__
from .break_even import add_break_even_parser
from .float8 import add_float8_parser
from .gemm import add_gemm_parser
from .tables import add_gpus_parser, add_models_parser
from .train import add_train_parser

__all__ = ["build_parser"]

#: the subcommands defined here, in the order ``perfmodel --help`` lists them, and the function adding each one's
#: subparser
_CORE = {
    "gpus": add_gpus_parser,
    "gemm": add_gemm_parser,
    "float8": add_float8_parser,
    "models": add_models_parser,
    "break-even": add_break_even_parser,
    "train": add_train_parser,
}


def build_parser(*, verb: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every subcommand (including the optional ones that are present).

    ``verb``: the subcommand about to run (``main`` passes its first argument); where it is one of the
    subcommands defined here, only its subparser is built; where it is a module-owned one, the other module-owned
    parsers (``roofline``, ``profile``, ``calibrate``) and their imports are skipped: an answer does not pay for
    them (issue #35: < 150 ms). Without ``verb`` (or with another word): every subcommand, as ``--help`` lists."""
    parser = argparse.ArgumentParser(
        prog="perfmodel",
        description="Predict GPU GEMM and float8-training time.",
        epilog="Main job: perfmodel float8 --gpu h100 --model llama3-8b --tokens 8192",
    )
    parser.add_argument("--version", action="version", version=f"perfmodel {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    if verb in _CORE:  # that verb's subparser alone: argparse prints the same for it, in less time (~10 ms)
        _CORE[verb](sub)
        return parser  # no module-owned parser is needed either
    for add in _CORE.values():
        add(sub)

    # -- subcommands owned by their modules: `perfmodel roofline`, `perfmodel calibrate` -------------
    every = verb not in ("roofline", "profile", "calibrate")  # else only the one about to run
    if every or verb == "roofline":
        from ..measured.moe_bench import add_roofline_cli

        add_roofline_cli(sub)
    if every or verb == "profile":
        from ..measured.summary import add_profile_cli

        add_profile_cli(sub)
    if every or verb == "calibrate":
        from ..calibrate import add_calibrate_cli

        add_calibrate_cli(sub)
    return parser
