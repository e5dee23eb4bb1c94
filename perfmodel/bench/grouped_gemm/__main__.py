"""``python -m perfmodel.bench.grouped_gemm``: :func:`perfmodel.bench.grouped_gemm.cli.main`."""

from __future__ import annotations

from .cli import main

__all__: list[str] = []

if __name__ == "__main__":
    from perfmodel.bench._device import run_cli

    raise SystemExit(run_cli(main))
