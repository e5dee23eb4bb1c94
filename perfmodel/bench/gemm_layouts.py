"""Moved: the GEMM layout sweep is ``benchmarks/harness/gemm_layouts.py`` in the repository (not in the wheel).

It measured the data of the frozen tile model (:mod:`perfmodel.models.tiles`); no new sweeps are planned for it, so
it moved out of the package with the tile model's fitter. Any name read from this module, and
``python -m perfmodel.bench.gemm_layouts``, raise :class:`perfmodel.errors.MovedOutOfPackageError` saying so.
``python -m perfmodel.bench`` (the sweeps that fit your own GPU) is unchanged.
"""

from __future__ import annotations

from ..errors import exit_moved, moved_module_getattr

__all__: list[str] = []

#: what the error says: where the sweep lives now and how to run it
MOVED = (
    "perfmodel.bench.gemm_layouts moved out of the package: the layout sweep is benchmarks/harness/gemm_layouts.py "
    "in the perfmodel repository (not shipped in the wheel). From a checkout's root: "
    "python -m benchmarks.harness.gemm_layouts --help, or bash benchmarks/gpu_sweep_gemm_layouts.sh on a GPU. "
    "python -m perfmodel.bench (the sweeps that calibrate your own GPU) is unchanged."
)


#: any name read from here: a MovedOutOfPackageError naming the new home
__getattr__ = moved_module_getattr(MOVED)

if __name__ == "__main__":
    exit_moved(MOVED)
