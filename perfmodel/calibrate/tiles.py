"""Moved: the tile model's fitter is ``benchmarks/harness/calibrate_tiles.py`` in the repository (not in the wheel).

The tile model is frozen (its formula and the shipped trees, :mod:`perfmodel.models.tiles` and
``perfmodel/calibrations/h200_tiles.json.gz``, are unchanged); what fits it reads the raw layout sweeps under
``benchmarks/data``, which the wheel does not ship, so it moved there with the layout sweep
(``benchmarks/harness/gemm_layouts.py``). Any name read from this module, and ``python -m perfmodel.calibrate.tiles``,
raise :class:`perfmodel.errors.MovedOutOfPackageError` saying so.
"""

from __future__ import annotations

from ..errors import exit_moved, moved_module_getattr

__all__: list[str] = []

#: what the error says: where the fitter lives now and how to run it
MOVED = (
    "perfmodel.calibrate.tiles moved out of the package: the tile model's fitter is "
    "benchmarks/harness/calibrate_tiles.py in the perfmodel repository (not shipped in the wheel; it reads the raw "
    "sweeps under benchmarks/data). From a checkout's root: python -m benchmarks.harness.calibrate_tiles --help, "
    "or in Python: from benchmarks.harness import calibrate_tiles. The shipped tile model itself is "
    "perfmodel.models.tiles (pm.gemm_time_s(..., model='tiles'))."
)


#: any name read from here: a MovedOutOfPackageError naming the new home
__getattr__ = moved_module_getattr(MOVED)

if __name__ == "__main__":
    exit_moved(MOVED)
