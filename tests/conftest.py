"""Suite-wide hooks: none changes what a test asserts.

At the end of a session (each xdist worker runs its own) the harness modules' in-process caches are emptied: the
layout sweeps decoded once per process (``benchmarks.harness.calibrate_tiles``' file caches, ~2 GB of records) and
what was computed from them. pytest's unraisable-exception check then runs ``gc.collect()`` five times at exit
(``_pytest.unraisableexception.gc_collect_harder``), each of which scanned every record still alive (~1.3 s each on
the CI machine); freed first (the records hold no reference cycles, so they go at once), they are not scanned, and
the check itself is unchanged.

Under xdist (``-n 2``, with ``--dist loadgroup`` from pyproject's addopts) the test files whose module fixtures
compute a whole harness report run on one worker per group (:data:`GROUPED`; the files that read the layout sweeps
share one), so that a report is computed and the sweeps decoded once, not once per worker, and they are scheduled
first, so that the other worker meanwhile takes the rest of the suite.

xdist's own ``loadgroup`` groups by a suffix it writes into ``item._nodeid``; since pytest 9.2 the node id is derived
from ``item._id`` and that write is lost, so every group was split over both workers (each decoded the sweeps and
computed the step report: ~45 s of the suite). :func:`pytest_xdist_make_scheduler` therefore makes the scheduler
itself: xdist's scope scheduling with this file's groups as scopes, every other test a scope of its own (what
``--dist loadgroup`` means), read from the node id's file name, which no pytest version rewrites.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

__all__ = [
    "GROUPED",
    "group_of",
    "pytest_collection_modifyitems",
    "pytest_sessionfinish",
    "pytest_xdist_make_scheduler",
]

#: test files whose module-scoped fixtures compute a harness report (the seconds each took per worker on the CI-like
#: two-core machine): one xdist group each, scheduled first (module doc)
GROUPED = {
    "test_validation.py": "sweeps",  # the GEMM report, the layout sweeps and the tile tables (~25 s of decoding)
    # validate_kernel_choice.evaluate over every sweep (~22 s) and the tile fits: the same sweeps, decoded once with
    # the tables above when on their worker (each worker decodes what it reads)
    "test_kernel_choice.py": "sweeps",
    "test_tile_model.py": "sweeps",
    "test_validation_step.py": "validation_step",  # validate_step.evaluate (~30 s)
    "test_docs.py": "docs",  # the checkout's wheel, built and installed once (~6 s a worker)
}


def group_of(nodeid: str) -> str:
    """The scheduling scope of a test: its file's :data:`GROUPED` group, else the test itself."""
    return GROUPED.get(nodeid.split("::", 1)[0].rsplit("/", 1)[-1], nodeid)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: Any, log: Any) -> Any:
    """Under ``--dist loadgroup``: xdist's scope scheduling over :func:`group_of` (module doc); any other ``--dist``
    is xdist's own."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupedFiles(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return GroupedFiles(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    """Mark the tests of :data:`GROUPED`'s files with their xdist group and move them to the front (each file's
    tests keep their order; the same order in every worker, as xdist requires)."""
    for item in items:
        group = GROUPED.get(item.path.name)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: item.path.name not in GROUPED)  # stable


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    """Empty the ``functools`` caches and the module-level cache dicts of the imported ``benchmarks.harness``
    modules (module doc)."""
    for name, module in list(sys.modules.items()):
        if not name.startswith("benchmarks.harness.") or module is None:
            continue
        for value in list(vars(module).values()):
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()
        for attr in ("_GEMM_TIMES", "_PREDICTIONS", "_MODELS"):
            cache = getattr(module, attr, None)
            if isinstance(cache, dict):
                cache.clear()
