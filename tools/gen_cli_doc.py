"""Re-run every ``$ perfmodel ...`` example in docs/cli.md and paste its real output.

Each ```console block that starts with ``$ perfmodel`` is replaced by the command and what it prints
(stdout and stderr, interleaved as a terminal shows them) when run from the repository root through
the shell, so ``; echo "exit status $?"`` documents the exit status. ``--check`` exits 1 if the file
is stale.

    python tools/gen_cli_doc.py [--check]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "cli.md"
BLOCK = re.compile(r"```console\n\$ (perfmodel[^\n]*)\n.*?```", re.S)


def run(command: str) -> str:
    """What ``command`` prints, run through the shell with ``perfmodel`` from this checkout."""
    shell = command.replace("perfmodel ", f"{sys.executable} -m perfmodel ", 1)
    done = subprocess.run(
        shell,
        shell=True,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # one stream, in the order printed (unbuffered below)
        text=True,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"},
    )
    return done.stdout.rstrip("\n")


def render(text: str) -> str:
    """``text`` with every example block's output regenerated."""
    return BLOCK.sub(lambda m: f"```console\n$ {m.group(1)}\n{run(m.group(1))}\n```", text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/cli.md is stale")
    args = parser.parse_args()
    old = DOC.read_text()
    new = render(old)
    if args.check:
        return int(new != old)
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
