"""Calibrations shipped with perfmodel: fitted model parameters per GPU, as JSON data files.

The hardware table refers to them through :class:`ShippedCalibration`, which reads its file on
first use, so ``import perfmodel`` and ``get_gpu(...)`` read nothing from disk.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["DIR", "ShippedCalibration"]

#: where the shipped calibration files live
DIR = Path(__file__).resolve().parent


class ShippedCalibration:
    """A :class:`perfmodel.gemm.TimeModel` backed by a shipped JSON file, loaded on first use."""

    name = "calibrated"

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self._model: Any = None

    @property
    def path(self) -> Path:
        """The JSON file."""
        return DIR / self.filename

    def load(self) -> Any:
        """The :class:`perfmodel.calibrate.CalibratedModel` (read once, then cached)."""
        if self._model is None:
            from ..calibrate import load_calibration

            self._model = load_calibration(self.path)
        return self._model

    def __getattr__(self, attr: str) -> Any:  # gemm, kernels, residuals, source, params_for...
        if attr.startswith("_"):
            raise AttributeError(attr)
        return getattr(self.load(), attr)

    def gemm_time_s(self, M, K, N, *, fmt, scaling, out_fmt, gpu, lead_dims=None):
        return self.load().gemm_time_s(M, K, N, fmt=fmt, scaling=scaling, out_fmt=out_fmt, gpu=gpu, lead_dims=lead_dims)

    def memory_kernel_time_s(self, bytes_moved, *, gpu, recipe=None, tensor=None):
        return self.load().memory_kernel_time_s(bytes_moved, gpu=gpu, recipe=recipe, tensor=tensor)

    def step_gemm_factor(self, fmt, scaling):
        return self.load().step_gemm_factor(fmt, scaling)

    def launch_time_s(self, *, gpu):
        return self.load().launch_time_s(gpu=gpu)

    def __repr__(self) -> str:
        return f"ShippedCalibration({self.filename!r})"
