"""``python -m perfmodel.bench.layer``: :func:`perfmodel.bench.layer.cli.main` (the objects pickled for the spawned
workers come from the named submodules, never from ``__main__``)."""

from __future__ import annotations

from .cli import main

__all__: list[str] = []

if __name__ == "__main__":
    from perfmodel.bench._device import run_cli

    raise SystemExit(run_cli(main))
