"""The validation command: every perfmodel time model against the committed measurements and published numbers.

    python benchmarks/validate.py gemm            # the calibrated GEMM/Linear model, transfers, estimates, error bars
    python benchmarks/validate.py tiles           # the frozen H200 tile model (minutes: ~80k GEMMs per timing)
    python benchmarks/validate.py kernel-choice   # cuBLAS's kernel class and split-K
    python benchmarks/validate.py step            # the decoder-layer step model
    python benchmarks/validate.py train           # the cluster model
    python benchmarks/validate.py all [--write]   # every one, in this order

Each subcommand prints its tables; ``--write`` also rewrites its generated blocks (the text between
``<!-- name:begin -->`` and ``<!-- name:end -->``) in ``docs/validation.md`` (the summary's rows) and its appendix
under ``docs/validation/`` — through the one writer, :mod:`benchmarks.harness.tables`, so that the docs regenerate
byte for byte (``tests/test_validation_docs.py``). ``gemm --write`` also rewrites the PNG, the shipped
``perfmodel/calibrations/h200.json`` and ``error_bars.json``, as before.

A new model's subcommand is one line of :data:`SUBCOMMANDS`: its name, its module under ``benchmarks/harness/`` and
a line of help; the module defines ``run(write: bool = False) -> list[tables.Block]``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.harness import tables  # noqa: E402

__all__ = ["SUBCOMMANDS", "blocks", "main", "module"]

#: subcommand -> (module under benchmarks/harness/, what it scores); ``all`` runs them in this order
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "gemm": ("validate_gemm", "the calibrated GEMM/Linear model, the H100 transfer, the estimates, the error bars"),
    "tiles": ("validate_tiles", "the frozen H200 tile model on the layout sweeps (minutes)"),
    "kernel-choice": ("validate_kernel_choice", "cuBLAS's kernel class and split-K on the layout sweeps"),
    "step": ("validate_step", "the decoder-layer step model, held out by layer size"),
    "train": ("validate_train", "the cluster model: one-GPU FSDP2 steps and published multi-GPU runs"),
}


def module(name: str) -> ModuleType:
    """The harness module of subcommand ``name`` (one of :data:`SUBCOMMANDS`)."""
    if name not in SUBCOMMANDS:
        raise SystemExit(f"unknown subcommand {name!r}; valid: {', '.join([*SUBCOMMANDS, 'all'])}")
    return importlib.import_module(f"benchmarks.harness.{SUBCOMMANDS[name][0]}")


def blocks(name: str, *, write: bool = False) -> list[tables.Block]:
    """The generated blocks of subcommand ``name`` (``write``: the subcommand also writes its side files)."""
    return module(name).run(write=write)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/validate.py", description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=[*SUBCOMMANDS, "all"], help="the model to score; all: every one")
    ap.add_argument("--write", action="store_true", help="rewrite its generated blocks in docs/ (and side files)")
    args = ap.parse_args(list(argv) if argv is not None else None)
    names = list(SUBCOMMANDS) if args.what == "all" else [args.what]
    for name in names:
        t0 = time.perf_counter()
        print(f"== {name}: {SUBCOMMANDS[name][1]}", file=sys.stderr, flush=True)
        got = blocks(name, write=args.write)
        for b in got:
            print(f"<!-- {b.name} -> {b.doc.relative_to(ROOT)} -->\n{b.body}\n")
        if args.write:
            done = tables.write_blocks(got)
            print(f"wrote {', '.join(str(d.relative_to(ROOT)) for d in done)}", file=sys.stderr)
        print(f"== {name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
