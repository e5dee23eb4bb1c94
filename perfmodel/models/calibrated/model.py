"""The calibrated time model: :class:`CalibratedModel` (the TimeModel protocol, transfer to other GPUs) and its JSON
files (schema :data:`SCHEMA`)."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ...counting import _gemm_bytes, layout_lead_dims
from ...errors import CalibrationError, UnknownGPUError
from ...formats import Format, get_format
from ...specs.gpu import GPUSpec, get_gpu
from .checks import _check_file_keys, _finite_positive, _fraction, _in_range, _short
from .groups import _BORROW, _BORROW_SCALING, CAST_LIKE, _fmt_of, _key, _select, fallback_kernels, fallback_key
from .params import CastParams, GemmParams, KernelParams, ReferenceGPU, _without_misalignment, power_pressure

__all__ = ["ASSUMPTIONS", "SCHEMA", "CalibratedModel", "load_calibration"]

SCHEMA = "perfmodel.calibration/3"
#: the schema before fractions of the reference GPU (absolute units): no longer read; a file in it is named as such
_OLD_SCHEMA = "perfmodel.calibration/2"

#: What a transferred calibration assumes (no measurement of one GPU can identify these).
ASSUMPTIONS: tuple[str, ...] = (
    "GEMM rates scale with the dense peak of the format (SM count x clock), at the fitted fraction of it",
    "streaming kernels (copies, skinny GEMMs) reach the fitted fraction of the HBM bandwidth",
    "float8 cast kernels, which reached 25-65 % of the copy bandwidth where fitted, are limited by SM work: "
    "their rate scales with SMs x clock, capped by the target's copy bandwidth",
    "latencies and launch costs in seconds, tiles, per-tile K overhead, wave quantization and the "
    "misalignment slowdowns are the architecture's (same cuBLAS and inductor kernels)",
    "the throttle gain of long GEMMs scales with dense bf16 FLOP/s per watt of board power (power pressure)",
    "the in-step GEMM factors (GEMMs inside a training step vs. timed back to back) are the architecture's",
    "recipes whose casts were not measured (mxfp8, blockwise) cost what the measured rowwise casts cost per byte",
)


def _check_label(label: Any, ref: ReferenceGPU) -> None:
    """The file's ``gpu`` label names the GPU its ``reference`` facts are of (a table name or alias of it)."""
    if not isinstance(label, str) or not label:
        raise CalibrationError(f"gpu must be the name of the GPU the calibration was fitted on, got {label!r}")
    try:
        name = get_gpu(label).name
    except UnknownGPUError:
        name = label  # a GPU outside the table: the reference block carries its facts
    if name != ref.name:
        raise CalibrationError(
            f"the file says gpu {label!r} but its reference facts are those of {ref.name!r}: one calibration is "
            f"fitted on one GPU; set gpu to {ref.name!r} (or refit on {label})"
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class CalibratedModel:
    """A :class:`perfmodel.models.base.TimeModel` with parameters fitted on one GPU, usable on every GPU
    of its architecture (see "Units that travel" in the module doc).

    Attributes:
        gpu: the GPU name it was fitted on.
        gemm: ``"bf16"``, ``"fp8_e4m3/tensorwise"``, ``"fp8_e4m3/rowwise"``… -> :class:`GemmParams`,
            in absolute units of the reference GPU.
        kernels: memory-bound and launch-only kernel costs (reference GPU).
        casts: recipe name -> :class:`CastParams` (recipes without one use ``kernels``).
        step_gemm_factors: GEMM group -> measured / predicted GEMM kernel time inside profiled Linear
            training steps (below 1: GEMMs ran faster there than back-to-back in the GEMM sweep, whose
            sustained load lowers clocks); applied by :func:`perfmodel.float8.linear_time` only.
        source: where the measurements come from (script, GPU, date, versions).
        residuals: error statistics of the fit, per group (train and held-out).
        reference: the spec facts of the fitted GPU (default: the table entry named ``gpu``).
        gemm_aliases: ``"mxfp8/mx"`` -> ``"fp8_e4m3/tensorwise"``: groups priced with another group's
            parameters at their own peak (used by estimates for formats the reference GPU lacks).
    """

    gpu: str
    gemm: Mapping[str, GemmParams]
    kernels: KernelParams
    casts: Mapping[str, CastParams] = dataclasses.field(default_factory=dict)
    step_gemm_factors: Mapping[str, float] = dataclasses.field(default_factory=dict)
    source: str
    residuals: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    reference: ReferenceGPU | None = None
    gemm_aliases: Mapping[str, str] = dataclasses.field(default_factory=dict)
    name: str = "calibrated"

    def __post_init__(self) -> None:
        if self.reference is None:
            try:
                ref = ReferenceGPU.from_spec(get_gpu(self.gpu))
            except UnknownGPUError:
                raise CalibrationError(
                    f"calibration of {self.gpu!r}: not a GPU of the table, so pass reference=ReferenceGPU(...) "
                    "with the facts of the GPU it was fitted on"
                ) from None
            object.__setattr__(self, "reference", ref)
        for key, factor in self.step_gemm_factors.items():
            _finite_positive("CalibratedModel", **{f"step_gemm_factors[{key!r}]": factor})
            _in_range("CalibratedModel", f"step_gemm_factors[{key!r}]", factor, "step_gemm_factor")

    # -- which parameters, rescaled to which GPU ----------------------------------------------------
    def _group(self, fmt: Format, scaling: str | None, layout: str = "rc") -> str:
        """The group key whose parameters price (``fmt``, ``scaling``, ``layout``): its own fit, else the
        same format's ``rc`` fit, else the format it borrows (fp16 -> bf16, e5m2 -> e4m3, blockwise -> rowwise)."""
        for key in (_key(fmt, scaling, layout), _key(fmt, scaling)):
            if key in self.gemm or key in self.gemm_aliases:
                return key
        name = _BORROW.get(fmt.name, fmt.name)
        sc = _BORROW_SCALING.get(scaling, scaling) if scaling else None
        borrowed = _key(get_format(name), sc, layout)
        return borrowed if borrowed in self.gemm else _key(get_format(name), sc)

    def params_for(self, fmt: Format, scaling: str | None, layout: str = "rc") -> GemmParams | None:
        """The fitted parameters used for (``fmt``, ``scaling``, ``layout``) on the reference GPU, or ``None``."""
        key = self._group(fmt, scaling, layout)
        return self.gemm.get(self.gemm_aliases.get(key, key))

    def transfer_factors(self, gpu: GPUSpec, fmt: Format, scaling: str | None, layout: str = "rc") -> dict[str, float]:
        """How (``fmt``, ``scaling``) GEMMs rescale from the reference GPU to ``gpu``: rate, bandwidth
        and throttle multipliers (all 1.0 on the reference GPU itself)."""
        ref = self.reference
        assert ref is not None  # set in __post_init__
        key = self._group(fmt, scaling, layout)
        fitted_fmt = _fmt_of(self.gemm_aliases.get(key, key))
        ref_peak = ref.peaks_flops_per_s.get(fitted_fmt)
        rate = gpu.peak_flops_per_s(fmt) / ref_peak if ref_peak else 1.0
        f = self._memory_and_power(gpu)
        return {"rate": rate, "bandwidth": f["bandwidth"], "throttle": f["throttle"]}

    def _memory_and_power(self, gpu: GPUSpec) -> dict[str, float]:
        ref = self.reference
        assert ref is not None
        bandwidth = gpu.mem_bw_bytes_per_s / ref.mem_bw_bytes_per_s
        # SM throughput of non-tensor work (reductions, casts, transposes): SMs x clock
        sm_throughput = gpu.sm_throughput_ratio(ref)
        throttle = 1.0
        if gpu.supports("bf16") and "bf16" in ref.peaks_flops_per_s:
            mine = power_pressure(gpu.peak_flops_per_s("bf16"), gpu.power_w)
            theirs = power_pressure(ref.peaks_flops_per_s["bf16"], ref.power_w)
            if mine is not None and theirs is not None:
                throttle = mine / theirs
        return {"bandwidth": bandwidth, "throttle": throttle, "sm_throughput": sm_throughput}

    # -- the TimeModel protocol -----------------------------------------------------------------------
    def gemm_time_s(self, M, K, N, *, fmt, scaling, out_fmt, gpu, lead_dims=None, layout="rc"):
        from ..base import ROOFLINE

        p = self.params_for(fmt, scaling, layout)
        if p is None:  # e.g. tf32 on a GPU calibrated for bf16/fp8 only
            return ROOFLINE.gemm_time_s(M, K, N, fmt=fmt, scaling=scaling, out_fmt=out_fmt, gpu=gpu)
        p = p.rescaled(**self.transfer_factors(gpu, fmt, scaling, layout))
        dims = lead_dims if lead_dims is not None else layout_lead_dims(layout, M, K, N)
        nbytes = _gemm_bytes(M, K, N, fmt, out_fmt, scaling)
        fb = self.fallback_params(fmt)
        if fb is None:
            return p.time_s(M, K, N, nbytes, gpu.num_sms, dims)
        # misaligned leading dimensions: cuBLAS's fallback kernels, priced by their own fit
        fb = fb.rescaled(**self.transfer_factors(gpu, fmt, scaling))
        aligned = _without_misalignment(p)
        cond = fallback_kernels(M, K, *dims)
        if isinstance(cond, np.ndarray) and not cond.any():  # a grid of aligned shapes: no fallback kernel to price
            t = aligned.time_s(M, K, N, nbytes, gpu.num_sms, dims)
            return t if np.shape(t) == cond.shape else np.broadcast_to(t, cond.shape).copy()
        return _select(
            cond,
            fb.time_s(M, K, N, nbytes, gpu.num_sms, dims),
            aligned.time_s(M, K, N, nbytes, gpu.num_sms, dims),
        )

    def fallback_params(self, fmt: Format) -> GemmParams | None:
        """The fitted fallback-kernel parameters of a 16-bit format (its own, else bf16's for fp16), or ``None``: then
        misaligned GEMMs are priced by the main group times its ``misaligned_factors``."""
        if fmt.bits < 16:
            return None
        own = self.gemm.get(fallback_key(fmt.name))
        return own if own is not None else self.gemm.get(fallback_key(_BORROW.get(fmt.name, fmt.name)))

    def event_overhead_s(self) -> float:
        """What timing one call with CUDA events (``do_bench``) adds to its kernel time, seconds (measured)."""
        return self.kernels.event_overhead_s

    def step_gemm_factor(self, fmt: Format, scaling: str | None) -> float:
        """The in-step factor for a GEMM group (1.0 when not measured)."""
        key = self._group(fmt, scaling)
        return float(self.step_gemm_factors.get(self.gemm_aliases.get(key, key), 1.0))

    def memory_kernel_time_s(self, bytes_moved, *, gpu, recipe=None, tensor=None):
        factors = self._memory_and_power(gpu)
        copy_bw = self.kernels.bw_bytes_per_s * factors["bandwidth"]  # streaming copies: HBM-bound
        p = self.cast_params(recipe) if recipe is not None else None
        if p is None:
            return self.kernels.latency_s + bytes_moved / copy_bw
        bw = p.weight_bw_bytes_per_s if tensor == "weight" else p.activation_bw_bytes_per_s
        # Casts ran at 25-65 % of the copy bandwidth on the reference GPU: not HBM-bound, so they keep
        # their rate scaled by SM throughput, up to the target's copy bandwidth (a roofline: the slower
        # of the kernel's own work and its HBM traffic).
        return p.latency_s + bytes_moved / min(bw * factors["sm_throughput"], copy_bw)

    def launch_time_s(self, *, gpu):
        return self.kernels.launch_s

    def cast_params(self, recipe: str) -> CastParams | None:
        """The cast costs used for ``recipe`` (a cast key: ``"rowwise"``, ``"rowwise+dynamic"``), or ``None``.

        A dynamic-shape key without its own fit falls back to the static fit of its recipe; a recipe
        without any fit borrows the measured recipe whose cast kernels do the same work
        (:data:`CAST_LIKE`: mxfp8 and blockwise cast per group along rows and columns, as rowwise does).
        """
        name, _, mode = recipe.partition("+")
        for key in (recipe, name):
            if key in self.casts:
                return self.casts[key]
        like = CAST_LIKE.get(name)
        if like is None:
            return None
        return self.casts.get(f"{like}+{mode}" if mode else like) or self.casts.get(like)

    # -- persistence ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (schema :data:`SCHEMA`): every rate and bandwidth as a fraction of the
        reference GPU's peak or HBM bandwidth, times in seconds."""
        ref = self.reference
        assert ref is not None
        bw = ref.mem_bw_bytes_per_s
        gemm = {}
        for key, p in self.gemm.items():
            d = dataclasses.asdict(p)
            d["rate_fraction"] = d.pop("rate_flops_per_s") / ref.peaks_flops_per_s[_fmt_of(key)]
            d["mem_bw_fraction"] = d.pop("mem_bw_bytes_per_s") / bw
            d["misaligned_factors"] = list(p.misaligned_factors)
            d["throttle_settle_s"] = None if p.throttle_settle_s == math.inf else p.throttle_settle_s
            gemm[key] = d
        k = self.kernels
        return {
            "schema": SCHEMA,
            "gpu": self.gpu,
            "source": self.source,
            "reference": ref.to_dict(),
            "assumptions": list(ASSUMPTIONS),
            "gemm": gemm,
            "gemm_aliases": dict(self.gemm_aliases),
            "kernels": {
                "latency_s": k.latency_s,
                "bw_fraction": k.bw_bytes_per_s / bw,
                "launch_s": k.launch_s,
                "event_overhead_s": k.event_overhead_s,
            },
            "casts": {
                key: {
                    "latency_s": c.latency_s,
                    "activation_bw_fraction": c.activation_bw_bytes_per_s / bw,
                    "weight_bw_fraction": c.weight_bw_bytes_per_s / bw,
                }
                for key, c in self.casts.items()
            },
            "step_gemm_factors": dict(self.step_gemm_factors),
            "residuals": dict(self.residuals),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, origin: str = "<dict>") -> CalibratedModel:
        """Inverse of :meth:`to_dict`; raises :class:`CalibrationError` naming ``origin``."""
        try:
            schema = data.get("schema")
            if schema == _OLD_SCHEMA:
                raise CalibrationError(
                    f"schema {_OLD_SCHEMA!r} (absolute units, written by perfmodel before schema 3) is no longer "
                    f"read: fit the GPU again with `perfmodel calibrate` to write {SCHEMA!r}"
                )
            if schema != SCHEMA:
                raise CalibrationError(f"schema is {schema!r}, expected {SCHEMA!r}")
            _check_file_keys(data)
            ref = ReferenceGPU(**data["reference"])
            _check_label(data["gpu"], ref)
            bw = ref.mem_bw_bytes_per_s
            gemm = {}
            for key, v in data["gemm"].items():
                v = dict(v)
                fmt = _fmt_of(key)
                if fmt not in ref.peaks_flops_per_s:
                    raise CalibrationError(f"gemm group {key!r}: the reference GPU has no {fmt} peak")
                for frac, limit in (("rate_fraction", 1.2), ("mem_bw_fraction", 1.2)):
                    _finite_positive("calibration", **{f"gemm[{key!r}].{frac}": v[frac]})
                    if v[frac] > limit:
                        raise CalibrationError(
                            f"gemm[{key!r}].{frac} = {v[frac]!r} is above {limit}: faster than the GPU's peak"
                        )
                    _in_range("calibration", f"gemm[{key!r}].{frac}", v[frac], "fraction")
                if v.get("throttle_settle_s", 0) is None:
                    v["throttle_settle_s"] = math.inf
                gemm[key] = GemmParams(
                    rate_flops_per_s=v.pop("rate_fraction") * ref.peaks_flops_per_s[fmt],
                    mem_bw_bytes_per_s=v.pop("mem_bw_fraction") * bw,
                    **{**v, "misaligned_factors": tuple(v.get("misaligned_factors", (1, 1, 1)))},
                )
            k = dict(data["kernels"])
            kernels = KernelParams(bw_bytes_per_s=_fraction(k.pop("bw_fraction"), "kernels.bw_fraction") * bw, **k)
            casts = {
                key: CastParams(
                    latency_s=c["latency_s"],
                    activation_bw_bytes_per_s=_fraction(c["activation_bw_fraction"], f"casts[{key!r}]") * bw,
                    weight_bw_bytes_per_s=_fraction(c["weight_bw_fraction"], f"casts[{key!r}]") * bw,
                )
                for key, c in data.get("casts", {}).items()
            }
            aliases = {str(a): str(b) for a, b in data.get("gemm_aliases", {}).items()}
            for alias, target in aliases.items():
                if target not in gemm:
                    raise CalibrationError(f"gemm_aliases[{alias!r}] names {target!r}, which has no parameters")
            return cls(
                gpu=str(data["gpu"]),
                source=str(data["source"]),
                reference=ref,
                gemm=gemm,
                gemm_aliases=aliases,
                kernels=kernels,
                casts=casts,
                step_gemm_factors={k: float(v) for k, v in data.get("step_gemm_factors", {}).items()},
                residuals=data.get("residuals", {}),
            )
        except CalibrationError as exc:
            raise CalibrationError(f"{origin}: {_short(str(exc))}") from None
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise CalibrationError(
                f"{origin}: not a perfmodel calibration ({type(exc).__name__}: {_short(str(exc))})"
            ) from None

    def save(self, path: str | Path, *, force: bool = False, inputs: tuple[str | Path, ...] = ()) -> Path:
        """Write the calibration JSON to ``path`` atomically; returns the path written.

        ``"-"`` (or ``/dev/stdout``) writes to standard output. An existing file is replaced only with
        ``force=True`` (it is never read first); a path that is one of ``inputs`` (the datasets) is
        refused; a missing folder is an error. A failed write leaves the old file intact.

        Raises:
            FileRefusedError: the file exists (without ``force``), is an input, or its folder is missing.
        """
        from ..._files import write_atomic

        text = json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n"
        return write_atomic(path, text, force=force, inputs=inputs)


def load_calibration(path: str | Path, *, max_bytes: int | None = None) -> CalibratedModel:
    """Read a calibration JSON written by :meth:`CalibratedModel.save` (schema 3).

    Only a regular file of at most 64 MiB is read (``max_bytes`` or ``$PERFMODEL_MAX_FILE_BYTES``
    override the limit); any nesting depth parses without recursion. Every parameter is range-checked.

    Raises:
        FileRefusedError: not a regular file (FIFO, device, folder), or above the size limit.
        CalibrationError: unreadable, not JSON, or not a valid calibration (the message names the file).
    """
    from ..._files import DATA_MAX_BYTES, load_json, short

    path = Path(path)
    data = load_json(
        path, what="calibration", error=CalibrationError, limit_bytes=max_bytes, default_limit_bytes=DATA_MAX_BYTES
    )
    if not isinstance(data, dict):
        raise CalibrationError(f"{path}: expected a JSON object, got a {type(data).__name__}")
    try:
        return CalibratedModel.from_dict(data, origin=str(path))
    except CalibrationError:
        raise
    except (ArithmeticError, LookupError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        # values from_dict does not expect (e.g. an integer too large for a float, a deep structure)
        raise CalibrationError(f"{path}: not a perfmodel calibration ({type(exc).__name__}: {short(exc)})") from None
