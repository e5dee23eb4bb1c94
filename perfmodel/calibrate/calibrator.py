"""The :class:`Calibrator`: fits :class:`~perfmodel.models.calibrated.CalibratedModel` (GEMM groups, memory kernels
and launch, casts and in-step GEMM factors) to bench datasets."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..counting import _gemm_bytes, resolve_scaling
from ..errors import CalibrationError
from ..formats import get_format
from ..models.calibrated import (
    FALLBACK,
    CalibratedModel,
    GemmParams,
    KernelParams,
    ReferenceGPU,
    _key,
    fallback_key,
)
from ..models.tiles import fallback_mask
from ..specs.gpu import GPULike, GPUSpec, get_gpu
from .data import _usable, ape_stats, is_heldout, load_dataset
from .gemm_fit import _fit_group
from .linear_fit import _fit_casts, _fit_step_gemm
from .nnls import _nnls

__all__ = ["MIN_FALLBACK", "TILE_CANDIDATES", "Calibrator", "fit"]

#: Output tiles tried for each (format, scaling); the best fit on the training split wins.
TILE_CANDIDATES: tuple[tuple[int, int], ...] = ((128, 128), (128, 256), (256, 128), (64, 256))
#: fewest misaligned 16-bit GEMMs for a fallback group of their own (Calibrator.fallback)
MIN_FALLBACK = 40


@dataclasses.dataclass(kw_only=True)
class Calibrator:
    """Fit :class:`CalibratedModel` to a bench dataset, scikit-learn style.

    Attributes:
        gpu: the GPU the data was measured on (its SM count enters the wave formula).
        heldout_fraction: share of shapes kept out of the fit (deterministic hash split); 0 fits on all.
        tiles: candidate (tile_m, tile_n) output tiles.
        min_time_s: GEMM records faster than this are ignored (timer noise).
        split_layouts: fit bf16 GEMMs of each operand layout (``rr``, ``rc``, ``cr``) apart. Off by default:
            on the H200 data a per-layout fit did not improve the Linear predictions (docs/validation.md,
            "Operand layouts"); the misalignment rule follows each record's layout either way.
        fallback: also fit the 16-bit GEMMs whose leading dimensions are not multiples of 8 as a group of
            their own (``bf16@fallback``: cuBLAS runs pre-Hopper CUTLASS kernels for them), used for every
            misaligned GEMM of that format; skipped when fewer than :data:`MIN_FALLBACK` such GEMMs are in
            the data (then the main group's ``misaligned_factors`` price them). The main group is fitted on
            all its GEMMs either way.

    Fitted attributes: ``model_`` (:class:`CalibratedModel`), ``gpu_`` (the GPU spec that predicts
    with it), ``residuals_`` (APE statistics per group on the train and held-out split), ``fit_shapes_``
    (the fit's inputs: ``(M, K, N, group)`` of every GEMM the GEMM fits used, ``group`` as
    :meth:`group_key` names it, fallback groups included; a GEMM whose shape and group are not in it is
    held out by shape).
    """

    gpu: GPULike
    heldout_fraction: float = 0.3
    tiles: Sequence[tuple[int, int]] = TILE_CANDIDATES
    min_time_s: float = 0.0
    split_layouts: bool = False
    fallback: bool = True

    def _group(self, r: Mapping[str, Any]) -> tuple[str, tuple[Any, str | None, str]]:
        """The group key of a ``gemm`` record and its (format, scaling, layout)."""
        fmt = get_format(r["dtype"])
        scaling = resolve_scaling(fmt, r.get("scaling"))
        layout = (r.get("layout") or "rc") if fmt.bits >= 16 else "rc"  # fp8 _scaled_mm runs rc only
        key = _key(fmt, scaling, layout if self.split_layouts else "rc")
        return key, (fmt, scaling, layout if self.split_layouts else "rc")

    def group_key(self, record: Mapping[str, Any]) -> str:
        """The GEMM group a ``gemm`` record (``dtype``, ``scaling``, ``layout``) is fitted in: ``"bf16"``,
        ``"fp8_e4m3/rowwise"``, ... (with :attr:`split_layouts`, the layout too). Misaligned 16-bit GEMMs are
        also fitted in the format's fallback group (``"bf16@fallback"``)."""
        return self._group(record)[0]

    def fit(self, dataset: Any) -> Calibrator:
        """Fit on ``dataset`` (a path, several paths or a loaded ``{meta, records}`` dict)."""
        if not 0 <= self.heldout_fraction < 1:
            raise CalibrationError(f"heldout_fraction must be in [0, 1), got {self.heldout_fraction!r}")
        if not self.tiles:
            raise CalibrationError("tiles must name at least one (tile_m, tile_n) candidate")
        data = load_dataset(dataset)
        spec = get_gpu(self.gpu)
        kernels = _fit_kernels(data["records"], spec)
        groups, specs = self._gemm_groups(data["records"])
        gemm: dict[str, GemmParams] = {}
        fit_shapes: set[tuple[int, int, int, str]] = set()
        residuals: dict[str, Any] = {}
        longest = 0.0
        for key, recs in sorted(groups.items()):
            fmt, scaling, _ = specs[key]
            gemm[key], residuals[key], shapes, t_max = self._fit_gemm_group(key, recs, fmt, scaling, spec, kernels)
            longest = max(longest, t_max)
            fit_shapes.update(shapes)
        # clocks settle: no kernel longer than the longest measured one is priced with a still-growing slowdown
        gemm = {k: dataclasses.replace(p, throttle_settle_s=longest) for k, p in gemm.items()}
        linear = [
            r
            for r in data["records"]
            if r["op"] == "linear"
            and _usable(r)
            and not is_heldout(r["M"], r["K"], r["N"], fraction=self.heldout_fraction)
        ]
        base = CalibratedModel(
            gpu=spec.name,
            gemm=gemm,
            kernels=kernels,
            source=_source(data.get("meta", {}), spec),
            residuals=residuals,
            reference=ReferenceGPU.from_spec(spec),
        )
        casts = _fit_casts(linear, base)
        self.model_ = dataclasses.replace(base, casts=casts, step_gemm_factors=_fit_step_gemm(linear, base, spec))
        self.gpu_ = dataclasses.replace(spec, calibration=self.model_)
        self.residuals_ = residuals
        self.fit_shapes_ = frozenset(fit_shapes)
        return self

    def _gemm_groups(
        self, records: Sequence[Mapping[str, Any]]
    ) -> tuple[dict[str, list[dict[str, Any]]], dict[str, tuple[Any, str | None, str]]]:
        """The usable ``gemm`` records by group key (with :attr:`fallback`, the fallback groups too) and each
        group's (format, scaling, layout)."""
        groups: dict[str, list[dict[str, Any]]] = {}
        specs: dict[str, tuple[Any, str | None, str]] = {}
        for r in records:
            if r["op"] == "gemm" and _usable(r) and r["time_s"] > self.min_time_s:
                key, spec_key = self._group(r)
                groups.setdefault(key, []).append(r)
                specs[key] = spec_key
        if not groups:
            raise CalibrationError("the dataset has no 'gemm' records to fit")
        if self.fallback:
            _add_fallback_groups(groups, specs)
        return groups, specs

    def _fit_gemm_group(
        self,
        key: str,
        recs: Sequence[Mapping[str, Any]],
        fmt: Any,
        scaling: str | None,
        spec: GPUSpec,
        kernels: KernelParams,
    ) -> tuple[GemmParams, dict[str, Any], list[tuple[int, int, int, str]], float]:
        """One group's fit on its training split: its :class:`GemmParams`, APE residuals on the train and
        held-out split, the ``(M, K, N, key)`` shapes fitted on, and its longest kernel time (seconds)."""
        M, K, N, t = (np.array([r[f] for r in recs], dtype=float) for f in ("M", "K", "N", "time_s"))
        event = np.array([r.get("timing", "event") != "kernel" for r in recs])
        # CUDA-event timings carry the launch gap of one call; the model predicts kernel time
        t = np.where(event, np.maximum(t - kernels.event_overhead_s, 0.5 * t), t)
        t_max = float(t.max())
        layouts = np.array([(r.get("layout") or "rc") if fmt.bits >= 16 else "rc" for r in recs])
        # the dimensions whose alignment picks the kernel follow each record's own layout
        lead = (np.where(layouts == "cr", M, K), N)
        test = np.array(
            [
                is_heldout(int(m), int(k), int(n), fraction=self.heldout_fraction)
                for m, k, n in zip(M, K, N, strict=True)
            ]
        )
        nbytes = np.asarray(_gemm_bytes(M, K, N, fmt, get_format("bf16"), scaling), float)
        train = ~test
        if train.sum() < 12:
            raise CalibrationError(f"{key}: {int(train.sum())} training GEMMs; at least 12 are needed")
        params = _fit_group(
            M[train],
            K[train],
            N[train],
            nbytes[train],
            t[train],
            spec.num_sms,
            self.tiles,
            spec.achievable_flops_per_s(fmt),
            lead=(lead[0][train], lead[1][train]),
            fallback_group=key.endswith("@" + FALLBACK),
            max_bw=1.2 * spec.mem_bw_bytes_per_s,
        )
        pred = np.asarray(params.time_s(M, K, N, nbytes, spec.num_sms, lead), float)
        residuals = {"train": ape_stats(pred[train], t[train]), "heldout": ape_stats(pred[test], t[test])}
        shapes = zip(M[train], K[train], N[train], strict=True)
        return params, residuals, [(int(m), int(k), int(n), key) for m, k, n in shapes], t_max


def _add_fallback_groups(
    groups: dict[str, list[dict[str, Any]]], specs: dict[str, tuple[Any, str | None, str]]
) -> None:
    """In place: each 16-bit format's misaligned GEMMs as its fallback group (``bf16@fallback``), kept only with at
    least :data:`MIN_FALLBACK` GEMMs."""
    for key in sorted(groups):
        fmt, _, _ = specs[key]
        if fmt.bits < 16:
            continue
        mis = [r for r in groups[key] if fallback_mask(r["M"], r["K"], r["N"], r.get("layout") or "rc")]
        fb = fallback_key(fmt.name)
        groups.setdefault(fb, []).extend(mis)
        specs[fb] = (fmt, None, "rc")
    for fb in [k for k in groups if k.endswith("@" + FALLBACK)]:
        if len(groups[fb]) < MIN_FALLBACK:
            del groups[fb], specs[fb]


def _source(meta: Mapping[str, Any], spec: GPUSpec) -> str:
    """``measured: <gpu>, <dates>, torch .., torchao ..`` from the datasets' meta blocks (one or several)."""
    parts = meta.get("parts", [meta])

    def values(key: str) -> str:
        found = sorted({str(p[key]) for p in parts if isinstance(p, Mapping) and p.get(key)})
        return "/".join(found) or "?"

    n = len(parts)
    return (
        f"measured: python -m perfmodel.bench ({n} dataset{'s' * (n > 1)}), {values('gpu_name')}, {values('date')}, "
        f"torch {values('torch')}, torchao {values('torchao')}, CUDA {values('cuda')}"
    )


def _fit_kernels(records: Sequence[Mapping[str, Any]], spec: GPUSpec) -> KernelParams:
    """Memory-kernel latency and bandwidth from copy/cast records; launch cost and the event-timing
    overhead from launch records. Falls back to ``spec.efficiency`` where the dataset has none."""
    records = [r for r in records if _usable(r)]
    pts = [(float(r["bytes"]), float(r["time_s"])) for r in records if r["op"] in ("copy", "cast")]

    def launch(method: str) -> float | None:
        ts = [float(r["time_s"]) for r in records if r["op"] == "launch" and r.get("method") == method]
        return float(np.median(ts)) if ts else None

    kernel = launch("profiler_kernel_duration")  # a tiny kernel's GPU time as a profiler sums it
    event = launch("do_bench")
    launch_s = kernel if kernel is not None else spec.launch_overhead_s
    overhead = max(event - kernel, 0.0) if event is not None and kernel is not None else 0.0
    lat, bw = spec.launch_overhead_s, spec.achievable_mem_bw_bytes_per_s
    if len(pts) >= 2:
        b, t = np.array(pts).T
        theta = _nnls(np.stack([np.ones_like(t), b], axis=1) / t[:, None], np.ones_like(t))
        if theta[1] > 0:
            lat, bw = float(theta[0]), float(1 / theta[1])
    return KernelParams(latency_s=lat, bw_bytes_per_s=bw, launch_s=launch_s, event_overhead_s=overhead)


def fit(dataset: Any, gpu: GPULike = "H200", *, heldout_fraction: float = 0.3) -> Calibrator:
    """``Calibrator(gpu=gpu, heldout_fraction=...).fit(dataset)``: the fitted calibrator."""
    return Calibrator(gpu=gpu, heldout_fraction=heldout_fraction).fit(dataset)
