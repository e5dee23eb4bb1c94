"""The validation command's modules (``benchmarks/harness/``) and the other scripts under ``benchmarks/``, imported once
per test process: the tests that read the sweeps (the validation, tile-model and kernel-rule tests) then share one
module's caches — each session's records, decoded once, and its predictions — instead of each test file loading its
own copy and decoding every sweep again."""

import importlib
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
#: the names the tests use -> the harness module (``benchmarks/validate.py`` itself is the command's dispatcher)
HARNESS = {
    "validate": "validate_gemm",
    "validate_gemm": "validate_gemm",
    "validate_tiles": "validate_tiles",
    "validate_step": "validate_step",
    "validate_kernel_choice": "validate_kernel_choice",
    "validate_train": "validate_train",
    "calibrate_tiles": "calibrate_tiles",
    "gemm_layouts": "gemm_layouts",
}


def bench_module(name: str) -> ModuleType:
    """``benchmarks/harness/<module>.py`` for the names of :data:`HARNESS` (as ``benchmarks.harness.<module>``, the name
    the harness modules import each other by), else the script ``benchmarks/<name>.py`` as the module ``name``."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    if name in HARNESS:
        return importlib.import_module(f"benchmarks.harness.{HARNESS[name]}")
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    module = importlib.import_module(name)
    where = Path(getattr(module, "__file__", "") or "").resolve()
    if where != BENCHMARKS / f"{name}.py":  # another package of that name was imported first
        raise ImportError(f"module {name!r} is {where}, not benchmarks/{name}.py: rename one of the two")
    return module


#: docs/validation.md (the summary) and its appendices, whose generated blocks the validation command writes
VALIDATION_DOCS = (ROOT / "docs" / "validation.md", *sorted((ROOT / "docs" / "validation").glob("*.md")))


def validation_docs() -> str:
    """docs/validation.md and every appendix under docs/validation/, one after the other (each generated block's
    markers occur once in all of them together)."""
    return "\n".join(p.read_text() for p in VALIDATION_DOCS)
