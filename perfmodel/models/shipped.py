"""Calibrations shipped with perfmodel: fitted model parameters per GPU architecture, as JSON data files.

:data:`MEASURED` maps an architecture (``GPUSpec.arch``) to the calibration fitted on measurements
of one GPU of it; the registry (:mod:`perfmodel.models.registry`) applies it to every GPU of that
architecture. Files are read on first use through :class:`ShippedCalibration`, so
``import perfmodel`` and ``get_gpu(...)`` read nothing from disk. The measurements behind each file
are in ``data/`` (README there: GPU, software, commands, date).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._files import CALIBRATIONS
from .calibrated import CalibratedModel, load_calibration

__all__ = ["DIR", "MEASURED", "ShippedCalibration"]

#: where the shipped calibration files live
DIR = CALIBRATIONS

#: architecture -> the calibration file measured on a GPU of it
MEASURED: dict[str, str] = {"90": "h200.json"}


class ShippedCalibration:
    """A :class:`perfmodel.models.base.TimeModel` backed by a shipped JSON file, loaded on first use."""

    name = "calibrated"

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self._model: CalibratedModel | None = None

    @property
    def path(self) -> Path:
        """The JSON file."""
        return DIR / self.filename

    def load(self) -> CalibratedModel:
        """The :class:`perfmodel.models.calibrated.CalibratedModel` (read once, then cached)."""
        if self._model is None:
            self._model = load_calibration(self.path)
        return self._model

    def __getattr__(self, attr: str) -> Any:  # gemm, kernels, residuals, source, reference, params_for...
        if attr.startswith("_"):
            raise AttributeError(attr)
        return getattr(self.load(), attr)

    def gemm_time_s(self, M, K, N, *, fmt, scaling, out_fmt, gpu, lead_dims=None, layout="rc"):
        return self.load().gemm_time_s(
            M, K, N, fmt=fmt, scaling=scaling, out_fmt=out_fmt, gpu=gpu, lead_dims=lead_dims, layout=layout
        )

    def event_overhead_s(self) -> float:
        return self.load().event_overhead_s()

    def memory_kernel_time_s(self, bytes_moved, *, gpu, recipe=None, tensor=None):
        return self.load().memory_kernel_time_s(bytes_moved, gpu=gpu, recipe=recipe, tensor=tensor)

    def step_gemm_factor(self, fmt, scaling):
        return self.load().step_gemm_factor(fmt, scaling)

    def launch_time_s(self, *, gpu):
        return self.load().launch_time_s(gpu=gpu)

    def __repr__(self) -> str:
        return f"ShippedCalibration({self.filename!r})"
