"""The tile model itself: :class:`TileModel` (its kinds, learned corrections and measured range; pricing, reading
and writing). The formula is :mod:`perfmodel.models.tiles`'s module doc.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..._backend import is_symbolic
from ...counting import padded_shape
from ...errors import CalibrationError, PerfModelError, UnsupportedFormatError, choices_message
from ...formats import Format
from ...specs.gpu import GPUSpec, get_gpu
from ..calibrated import ReferenceGPU
from ..trees import BoostedTrees
from .features import N_CORRECTION_FEATURES, N_FALLBACK_FEATURES, _kind_rows, correction_features, correction_key
from .fp8 import FP8_K_WITHIN_CLASS, fp8_k_lattice
from .kinds import _KIND_OF_FORMAT, CORRECTION_KEYS, SCHEMA, TileKind

__all__ = ["TileModel"]

#: the sizes :attr:`TileModel.measured_range` records
_RANGE_DIMS = ("M", "K", "N")


@dataclasses.dataclass(frozen=True, kw_only=True)
class TileModel:
    """A :class:`perfmodel.models.base.TimeModel` whose GEMMs follow the tile formula (module doc).

    Attributes:
        gpu: the GPU it was fitted on (the only one it prices).
        kinds: ``"bf16@rr"``, ``"bf16@rc"``, ``"bf16@cr"``, ``"bf16@fallback/rr"`` (… ``/rc``, ``/cr``),
            ``"fp8_e4m3/tensorwise"``, ``"fp8_e4m3/rowwise"`` -> :class:`TileKind`, fitted on kernel times.
        source: what it was fitted on (files, GPU, date, versions).
        residuals: the fit's error statistics per kind (``train``: kernel fit, ``event_train``: event fit).
        base: the time model that prices everything but GEMMs (memory kernels, launches, the event gap).
        event_kinds: the same kinds fitted on CUDA-event (``do_bench``) times (module doc); empty: event
            timing is the kernel fit plus the base's measured gap.
        corrections, event_corrections: per :func:`correction_key` (``"bf16@rr"``, ``"bf16@fallback/rr"`` …), boosted
            trees (:class:`~perfmodel.models.trees.BoostedTrees`) over :func:`correction_features` whose sum is the
            log of
            measured over formula time, fitted on the measured sessions; the time is the formula's times
            ``exp(correction)``. Empty: the formula alone.
        measured_range: ``{"M": (lo, hi), "K": (lo, hi), "N": (lo, hi)}``, the GEMM sizes of the sessions it
            was fitted on; an answer outside it is an extrapolation, and its error bar says so
            (:meth:`perfmodel.models.base.Provenance.outside_measured`). Empty: not recorded (older files).
    """

    gpu: str
    kinds: Mapping[str, TileKind]
    source: str
    residuals: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    base: Any = None
    name: str = "tiles"
    event_kinds: Mapping[str, TileKind] = dataclasses.field(default_factory=dict)
    corrections: Mapping[str, BoostedTrees] = dataclasses.field(default_factory=dict)
    event_corrections: Mapping[str, BoostedTrees] = dataclasses.field(default_factory=dict)
    measured_range: Mapping[str, tuple[int, int]] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        rng = self.measured_range
        if rng:
            ok = isinstance(rng, Mapping) and set(rng) == set(_RANGE_DIMS)
            for dim in _RANGE_DIMS if ok else ():
                v = rng[dim]
                ok = ok and isinstance(v, (tuple, list)) and len(v) == 2
                ok = ok and all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in v) and v[0] <= v[1]
            if not ok:
                raise CalibrationError(
                    "TileModel.measured_range must map M, K and N each to (lo, hi), integers 1 <= lo <= hi; "
                    f"got {rng!r}"
                )
            object.__setattr__(self, "measured_range", {d: (int(rng[d][0]), int(rng[d][1])) for d in _RANGE_DIMS})

    def kind_key(self, fmt: Format, scaling: str | None, layout: str) -> str:
        family = _KIND_OF_FORMAT.get(fmt.name)
        if family is None:
            raise UnsupportedFormatError(
                f"the tile model prices bf16, fp16, fp8_e4m3 and fp8_e5m2 GEMMs, not {fmt.name}; use the default "
                "model (model=None or 'calibrated') for it"
            )
        if family == "bf16":
            return f"bf16@{layout}"
        if scaling not in ("tensorwise", "rowwise"):
            raise UnsupportedFormatError(
                f"the tile model prices fp8 GEMMs with tensorwise or rowwise scaling, not {scaling!r} "
                "(valid: tensorwise, rowwise); use the default model for it"
            )
        return f"fp8_e4m3/{scaling}"

    def check_gpu(self, gpu: GPUSpec) -> None:
        """A named error unless ``gpu`` is the spec table's entry for the GPU this model was measured on (same
        name and the same SMs, clock, bandwidth, peaks and power): nothing in the model rescales."""
        if gpu.name != self.gpu:
            raise PerfModelError(
                f"the tile model was measured on the {self.gpu} only and does not rescale to {gpu.name}; use the "
                "default model there (model=None), which transfers within an architecture"
            )
        table = get_gpu(self.gpu)
        if gpu is table:  # the spec table's own entry (the common case: no comparison needed)
            return
        ref = ReferenceGPU.from_spec(table)
        if not ref.matches(gpu):
            mine = ReferenceGPU.from_spec(gpu).to_dict()
            differ = sorted(k for k, v in ref.to_dict().items() if mine.get(k) != v)
            raise PerfModelError(
                f"this {gpu.name} spec differs from the spec table's {self.gpu} in {', '.join(differ)}; the tile "
                "model was measured on the table's GPU and does not rescale (use the default model, model=None, "
                "which transfers to a modified spec and says so)"
            )

    def _check_out(self, fmt: Format, out_fmt: Format | None) -> None:
        if out_fmt is not None and out_fmt.name not in ("bf16", "fp16"):
            raise UnsupportedFormatError(
                f"the tile model was measured with bf16 output only, not {out_fmt.name} (valid out_dtype: bf16, "
                "or fp16 for fp16 inputs); use the default model (model=None) for other outputs"
            )

    def gemm_time_s(self, M, K, N, *, fmt, scaling, out_fmt, gpu, lead_dims=None, layout="rc"):
        """Kernel seconds of ``[M, K] @ [K, N]`` (the kernel-time fit, ``kinds``)."""
        self._check_out(fmt, out_fmt)
        kinds, corrections = self._fit("kernel")
        return self._served(kinds, M, K, N, fmt=fmt, scaling=scaling, gpu=gpu, lead_dims=lead_dims, layout=layout,
                            corrections=corrections)  # fmt: skip

    def event_gemm_time_s(self, M, K, N, *, fmt, scaling, out_fmt, gpu, lead_dims=None, layout="rc"):
        """Seconds a CUDA-event (``do_bench``) timing of one call shows, from the event fit (``event_kinds``);
        ``None`` where this model has none (then :func:`perfmodel.gemm_time_s` adds the measured gap to the
        kernel time)."""
        if not self.event_kinds:
            return None
        self._check_out(fmt, out_fmt)
        kinds, corrections = self._fit("event")
        return self._served(kinds, M, K, N, fmt=fmt, scaling=scaling, gpu=gpu, lead_dims=lead_dims, layout=layout,
                            corrections=corrections)  # fmt: skip

    def formula_time_s(self, M, K, N, *, fmt, scaling, gpu, layout="rc", timing="kernel", lead_dims=None):
        """The tile formula's seconds without the learned correction (what the correction is fitted against)."""
        kinds, _ = self._fit(timing)
        return self._price(kinds, M, K, N, fmt=fmt, scaling=scaling, gpu=gpu, lead_dims=lead_dims, layout=layout)

    def split_k(self, M, K, N, *, fmt, scaling, gpu, layout="rc") -> np.ndarray:
        """Whether the kernel fit's fastest candidate splits K (more than one slice), per GEMM (a bool array): the
        split-K choice :func:`perfmodel.gemm_kernel` reports. Numbers or arrays; the same GPU check as the times."""
        self.check_gpu(gpu)
        key = self.kind_key(fmt, scaling, layout)
        M, K, N = (np.atleast_1d(np.asarray(x, dtype=np.float64)) for x in np.broadcast_arrays(M, K, N))
        out = np.zeros(M.shape, dtype=bool)
        lay = layout if key.startswith("bf16") else "rc"
        peak = gpu.peak_flops_per_s(fmt)
        for kind_key, rows in _kind_rows(key, M, K, N, layout):
            _, slices = self.kinds[kind_key].fastest(M[rows], K[rows], N[rows], layout=lay, peak=peak,
                                                     sms=gpu.num_sms)  # fmt: skip
            out[rows] = slices > 1
        return out

    def _fit(self, timing: str) -> tuple[Mapping[str, TileKind], Mapping[str, BoostedTrees]]:
        """The formula kinds and learned corrections of ``timing`` (the kernel fit's where no event fit exists)."""
        if timing == "event" and self.event_kinds:
            return self.event_kinds, self.event_corrections
        return self.kinds, self.corrections

    def _served(self, kinds, M, K, N, *, fmt, scaling, gpu, lead_dims, layout, corrections):
        """What :meth:`gemm_time_s` and :meth:`event_gemm_time_s` give: :meth:`_price`, with the fp8 K-class rule
        (:func:`fp8_k_lattice`) for fp8 kinds: the model's time at K, kept within :data:`FP8_K_WITHIN_CLASS` of its
        linear interpolation between the two K of the GEMM's measured class around it."""
        key = self.kind_key(fmt, scaling, layout)
        if key.startswith("bf16") or any(is_symbolic(x) for x in (M, K, N)):
            return self._price(kinds, M, K, N, fmt=fmt, scaling=scaling, gpu=gpu, lead_dims=lead_dims, layout=layout,
                               corrections=corrections)  # fmt: skip
        scalar = all(np.ndim(x) == 0 for x in (M, K, N))
        M, K, N = (np.atleast_1d(x) for x in np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (M, K, N))))
        lo, hi, w = fp8_k_lattice(K)
        snap = w > 0
        t = np.asarray(self._price(kinds, M, lo, N, fmt=fmt, scaling=scaling, gpu=gpu, lead_dims=None, layout=layout,
                                   corrections=corrections), dtype=np.float64).reshape(M.shape)  # fmt: skip
        if snap.any():
            m, k, n = M[snap], K[snap], N[snap]
            t_hi, own = (
                np.asarray(self._price(kinds, m, x, n, fmt=fmt, scaling=scaling, gpu=gpu, lead_dims=None,
                                       layout=layout, corrections=corrections), dtype=np.float64)
                for x in (hi[snap], k)
            )  # fmt: skip
            smooth = (1 - w[snap]) * t[snap] + w[snap] * t_hi
            t[snap] = np.clip(own, smooth * (1 - FP8_K_WITHIN_CLASS), smooth * (1 + FP8_K_WITHIN_CLASS))
        return float(t.reshape(-1)[0]) if scalar else t

    def _price(self, kinds, M, K, N, *, fmt, scaling, gpu, lead_dims, layout, corrections=None):
        if any(is_symbolic(x) for x in (M, K, N)) or (lead_dims is not None and any(map(is_symbolic, lead_dims))):
            raise PerfModelError(
                "the tile model is numeric only: its minimum over candidate tiles has no compact closed form; for "
                "symbols use the default model (model=None or 'calibrated'), whose formula is symbolic"
            )
        self.check_gpu(gpu)
        key = self.kind_key(fmt, scaling, layout)
        scalar = all(np.ndim(x) == 0 for x in (M, K, N))
        M, K, N = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (M, K, N)))
        M, K, N = (np.atleast_1d(x) for x in (M, K, N))
        peak = gpu.peak_flops_per_s(fmt)
        out = np.empty(M.shape)
        lay = layout if key.startswith("bf16") else "rc"
        for kind_key, rows in _kind_rows(key, M, K, N, layout, lead_dims):
            m, k, n = M[rows], K[rows], N[rows]
            t = kinds[kind_key].time_s(m, k, n, layout=lay, peak=peak, sms=gpu.num_sms)
            trees = corrections.get(correction_key(kind_key, corrections)) if corrections else None
            if trees is not None:
                padded = None
                if trees.n_features == N_FALLBACK_FEATURES:  # a fallback kind's: the padded shape's time
                    padded = self._price(kinds, *padded_shape(m, k, n, layout), fmt=fmt, scaling=scaling, gpu=gpu,
                                         lead_dims=None, layout=layout, corrections=corrections)  # fmt: skip
                t = t * np.exp(trees.predict(correction_features(m, k, n, t, gpu.num_sms, padded)))
            out[rows] = t
        return float(out.reshape(-1)[0]) if scalar else out

    def padded_time_s(self, M, K, N, *, fmt, gpu, layout="rc", timing="kernel") -> np.ndarray:
        """Seconds (of ``timing``, corrected) of bf16 GEMMs' :func:`padded_shape`: what a fallback kind's learned
        correction reads (1-d float arrays in and out)."""
        kinds, corrections = self._fit(timing)
        Mp, Kp, Np = padded_shape(M, K, N, layout)
        return np.atleast_1d(self._price(kinds, Mp, Kp, Np, fmt=fmt, scaling=None, gpu=gpu, lead_dims=None,
                                         layout=layout, corrections=corrections))  # fmt: skip

    def _base(self) -> Any:
        if self.base is None:
            raise PerfModelError("this tile model has no base model for memory kernels and launches")
        return self.base

    def memory_kernel_time_s(self, bytes_moved, *, gpu, recipe=None, tensor=None):
        self.check_gpu(gpu)
        return self._base().memory_kernel_time_s(bytes_moved, gpu=gpu, recipe=recipe, tensor=tensor)

    def launch_time_s(self, *, gpu):
        return self._base().launch_time_s(gpu=gpu)

    def event_overhead_s(self) -> float:
        return float(self._base().event_overhead_s())

    def step_gemm_factor(self, fmt, scaling):
        return 1.0

    def cast_params(self, recipe: str) -> Any:
        return self._base().cast_params(recipe)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "gpu": self.gpu,
            "source": self.source,
            "kinds": {k: v.to_dict() for k, v in sorted(self.kinds.items())},
            **(
                {"event_kinds": {k: v.to_dict() for k, v in sorted(self.event_kinds.items())}}
                if self.event_kinds
                else {}
            ),
            **{
                field: {k: v.to_dict() for k, v in sorted(getattr(self, field).items())}
                for field in ("corrections", "event_corrections")
                if getattr(self, field)
            },
            **({"measured_range": {d: list(v) for d, v in self.measured_range.items()}} if self.measured_range else {}),
            "residuals": dict(self.residuals),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, origin: str = "<dict>", base: Any = None) -> TileModel:
        if not isinstance(data, Mapping) or data.get("schema") != SCHEMA:
            got = data.get("schema") if isinstance(data, Mapping) else type(data).__name__
            raise CalibrationError(f"{origin}: not a tile model (schema {got!r}, expected {SCHEMA!r})")
        kinds_in = data.get("kinds")
        if not isinstance(kinds_in, Mapping) or not kinds_in:
            raise CalibrationError(f"{origin}: 'kinds' must be a non-empty object")
        need = [f"bf16@{lay}" for lay in ("rr", "rc", "cr")] + [f"bf16@fallback/{lay}" for lay in ("rr", "rc", "cr")]
        need += ["fp8_e4m3/tensorwise", "fp8_e4m3/rowwise"]

        def read(field: str, table: Mapping[str, Any]) -> dict[str, TileKind]:
            out = {str(k): TileKind.from_dict(v, where=f"{origin}: {field} {k!r}") for k, v in table.items()}
            missing = [k for k in need if k not in out]
            if missing:
                raise CalibrationError(f"{origin}: {field} missing: {', '.join(missing)}")
            return out

        kinds = read("kinds", kinds_in)
        event_in = data.get("event_kinds", {})
        if not isinstance(event_in, Mapping):
            raise CalibrationError(f"{origin}: 'event_kinds' must be an object (or absent)")
        event_kinds = read("event_kinds", event_in) if event_in else {}
        corr: dict[str, dict[str, BoostedTrees]] = {}
        for field in ("corrections", "event_corrections"):
            table = data.get(field, {})
            if not isinstance(table, Mapping):
                raise CalibrationError(f"{origin}: {field!r} must be an object (or absent)")
            corr[field] = {}
            for k, v in table.items():
                if k not in CORRECTION_KEYS:
                    raise CalibrationError(choices_message(f"{origin}: {field} key", k, CORRECTION_KEYS))
                trees = BoostedTrees.from_dict(v, where=f"{origin}: {field} {k!r}")
                valid = (N_CORRECTION_FEATURES, N_FALLBACK_FEATURES) if "@fallback/" in k else (N_CORRECTION_FEATURES,)
                if trees.n_features not in valid:
                    raise CalibrationError(
                        f"{origin}: {field} {k!r} reads {trees.n_features} features; this version computes "
                        f"{' or '.join(map(str, valid))} for it (refit: python -m benchmarks.harness.calibrate_tiles)"
                    )
                corr[field][k] = trees
            for k, trees in corr[field].items():
                main = "bf16@" + k.rsplit("/", 1)[-1]
                if trees.n_features == N_FALLBACK_FEATURES and main not in corr[field]:
                    raise CalibrationError(
                        f"{origin}: {field} {k!r} reads the padded shape's time, which {main!r}'s correction "
                        f"prices, and {field} has no {main!r}"
                    )
        gpu, source = data.get("gpu"), data.get("source")
        if not isinstance(gpu, str) or not isinstance(source, str):
            raise CalibrationError(f"{origin}: 'gpu' and 'source' must be strings")
        residuals = dict(data.get("residuals") or {})
        rng = data.get("measured_range") or {}
        if not isinstance(rng, Mapping):
            raise CalibrationError(f"{origin}: 'measured_range' must be an object (or absent)")
        try:
            rng = {str(d): tuple(v) for d, v in rng.items()}
        except TypeError:
            raise CalibrationError(f"{origin}: 'measured_range' must map M, K and N to [lo, hi]") from None
        try:
            return cls(gpu=gpu, kinds=kinds, source=source, residuals=residuals, base=base, event_kinds=event_kinds,
                       measured_range=rng, **corr)  # fmt: skip
        except CalibrationError as exc:
            raise CalibrationError(f"{origin}: {exc}") from None

    def save(self, path: str | Path, *, force: bool = False) -> Path:
        """Write the model as JSON (refuses to overwrite an existing file unless ``force``); lists of plain values
        (a tile, a tree's nodes) on one line each; gzip-compressed (:func:`perfmodel._files.gzip_bytes`) when the
        name ends in ``.gz``, as the shipped ``h200_tiles.json.gz`` is."""
        import json
        import re

        path = Path(path)
        if path.exists() and not force:
            raise PerfModelError(f"{path} exists; pass force=True (--force) to overwrite it")
        text = json.dumps(self.to_dict(), indent=1, sort_keys=True)
        text = re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + " ".join(m.group(1).split()) + "]", text)
        if path.name.endswith(".gz"):
            from ..._files import gzip_bytes

            path.write_bytes(gzip_bytes((text + "\n").encode()))
        else:
            path.write_text(text + "\n")
        return path
