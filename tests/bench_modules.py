"""The scripts under ``benchmarks/`` as modules, imported once per test process: the tests that read the sweeps (the
validation, tile-model and kernel-rule tests) then share one module's caches — each session's records, decoded once,
and its predictions — instead of each test file loading its own copy and decoding every sweep again."""

import importlib
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def bench_module(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as the module ``name`` (the one the scripts import each other as)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    module = importlib.import_module(name)
    where = Path(getattr(module, "__file__", "") or "").resolve()
    if where != BENCHMARKS / f"{name}.py":  # another package of that name was imported first
        raise ImportError(f"module {name!r} is {where}, not benchmarks/{name}.py: rename one of the two")
    return module
