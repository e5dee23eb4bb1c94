"""``python -m perfmodel.bench.moe_block``: :func:`perfmodel.bench.moe_block.cli.main`."""

from __future__ import annotations

import sys

from .cli import main

__all__: list[str] = []

if __name__ == "__main__":
    from perfmodel.bench._device import run_cli

    sys.exit(run_cli(main))
