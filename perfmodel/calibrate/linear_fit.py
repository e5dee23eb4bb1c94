"""Linear-step fits: which profiled kernels are GEMMs, per-recipe cast-kernel costs, in-step GEMM factors."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..formats import get_format
from ..models.calibrated import CalibratedModel, CastParams, _key
from ..specs.gpu import GPUSpec
from .nnls import _nnls

__all__ = ["GEMM_KERNEL_RE", "is_dynamic", "is_gemm_kernel", "measured_cast_time_s"]


#: Kernel names of GEMM libraries (cuBLAS nvjet/xmma/gemm, CUTLASS) in profiles. Inductor's own
#: kernels (``triton_*``) are never GEMMs here, even when named after the ``_scaled_mm`` they feed.
GEMM_KERNEL_RE = re.compile(r"nvjet|gemm|xmma|cutlass|cublas|wgmma", re.IGNORECASE)


def is_gemm_kernel(name: str) -> bool:
    """True for a GEMM library kernel name (see :data:`GEMM_KERNEL_RE`)."""
    return not name.startswith("triton") and GEMM_KERNEL_RE.search(name) is not None


def is_dynamic(record: Mapping[str, Any]) -> bool:
    """True for a ``linear`` record compiled with a dynamic token dimension (bench field ``dynamic``:
    ``"m"``; static compiles say ``"static"`` or nothing)."""
    return str(record.get("dynamic", "static")).lower() not in ("static", "off", "false", "none", "0")


def measured_cast_time_s(record: Mapping[str, Any]) -> float:
    """Seconds per step of the non-GEMM kernels of a measured ``linear`` record."""
    return float(sum(k["time_s"] for k in record["kernels"] if not is_gemm_kernel(k["name"])))


def _fit_casts(records: Sequence[Mapping[str, Any]], model: CalibratedModel) -> dict[str, CastParams]:
    """Per recipe: per-kernel latency and activation / weight cast bandwidths, by non-negative least
    squares (relative error) on the measured non-GEMM kernel time of Linear steps."""
    from ..float8.recipes import RECIPES, CastOptions

    out: dict[str, CastParams] = {}
    by_recipe: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        if r.get("recipe") in RECIPES and r["recipe"] != "bf16" and r.get("kernels"):
            key = CastOptions(dynamic_shapes=is_dynamic(r)).cast_key(r["recipe"])
            by_recipe.setdefault(key, []).append(r)
    for key, recs in sorted(by_recipe.items()):
        name = key.split("+")[0]
        rows, target = [], []
        for r in recs:
            ks = RECIPES[name].cast_kernels(r["M"], r["K"], r["N"], CastOptions())
            mem = [k for k in ks if not k.launch_only]
            n_launch = len(ks) - len(mem)
            rows.append(
                (
                    len(mem),
                    float(sum(k.bytes for k in mem if k.tensor != "weight")),
                    float(sum(k.bytes for k in mem if k.tensor == "weight")),
                )
            )
            target.append(max(measured_cast_time_s(r) - n_launch * model.kernels.launch_s, 1e-9))
        if len(rows) < 3:
            continue
        A, t = np.array(rows, float), np.array(target)
        theta = _nnls(A / t[:, None], np.ones_like(t))
        fallback = 1 / model.kernels.bw_bytes_per_s
        act, wgt = (theta[1] or fallback), (theta[2] or fallback)
        out[key] = CastParams(
            latency_s=float(theta[0]), activation_bw_bytes_per_s=float(1 / act), weight_bw_bytes_per_s=float(1 / wgt)
        )
    return out


def _step_gemm_ratio(r: Mapping[str, Any], model: CalibratedModel, spec: GPUSpec) -> tuple[str, float] | None:
    """One Linear step record's GEMM group and measured / predicted GEMM kernel time, or ``None`` where its
    three GEMMs are not all in one group (mixed recipes), it names no recipe or has no kernels."""
    from ..float8 import linear_time
    from ..float8.recipes import RECIPES

    rec = RECIPES.get(r.get("recipe", ""))
    if rec is None or not r.get("kernels"):
        return None
    pred = linear_time(r["M"], r["K"], r["N"], rec, spec, time_model=model)
    groups = {_key(get_format(g.dtype.replace("e5m2", "e4m3")), g.scaling) for g in pred.gemms}
    measured = sum(k["time_s"] for k in r["kernels"] if is_gemm_kernel(k["name"]))
    return (groups.pop(), measured / pred.gemm_s) if len(groups) == 1 and measured > 0 else None


def _fit_step_gemm(
    records: Sequence[Mapping[str, Any]],
    model: CalibratedModel,
    spec: GPUSpec,
    ratio: Callable[[Mapping[str, Any], CalibratedModel, GPUSpec], tuple[str, float] | None] = _step_gemm_ratio,
) -> dict[str, float]:
    """Per GEMM group: median of measured / predicted GEMM kernel time in Linear steps whose three
    GEMMs all fall in that one group (bf16; tensorwise e4m3/e5m2; rowwise). Mixed recipes are skipped.
    ``ratio`` gives one record's (:func:`_step_gemm_ratio`; a caller that refits on many subsets of the same
    records with the same model can pass its own precomputed values)."""
    ratios: dict[str, list[float]] = {}
    for r in records:
        got = ratio(r, model, spec)
        if got is not None:
            ratios.setdefault(got[0], []).append(got[1])
    return {k: float(np.median(v)) for k, v in sorted(ratios.items()) if len(v) >= 3}
