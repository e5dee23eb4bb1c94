"""The decoder-layer step model's own parameters (:class:`LayerParams`), in units that travel, and their JSON file.

The GEMMs and float8 casts of a layer are priced by the GPU's time model (:mod:`perfmodel.models.registry`); what
that calibration does not hold is here: the attention kernels' rate, the elementwise (norm, RoPE,
activation, residual) kernels' bandwidth and latency, what a float8 cast fused into its producer costs,
and the factors between kernels timed alone and kernels inside a compiled layer step. Every value is a
fraction of a peak of the GPU (dense bf16 FLOP/s, HBM bandwidth), a dimensionless factor or seconds, so
on another GPU the same file gives that GPU's rates (see "Units that travel" in
:mod:`perfmodel.models.calibrated`; the step model's own assumptions are :data:`LAYER_ASSUMPTIONS`).

The shipped file ``perfmodel/calibrations/h200_layer.json`` is fitted by :mod:`perfmodel.calibrate.layer`
on ``benchmarks/data/h200_2026-12-01/h200_layer_2026-12-01.json`` and read on first use only.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._files import CALIBRATIONS, load_json, write_atomic
from ..errors import CalibrationError
from ..models.calibrated import ReferenceGPU

__all__ = [
    "LAYER_ASSUMPTIONS",
    "LAYER_SCHEMA",
    "SHIPPED_LAYER_FILE",
    "STEP_FACTOR_KINDS",
    "LayerParams",
    "load_layer_params",
    "shipped",
]

LAYER_SCHEMA = "perfmodel.layer_calibration/1"
#: the shipped layer calibration (fitted on the H200 layer sweep of 2026-12-01)
SHIPPED_LAYER_FILE = CALIBRATIONS / "h200_layer.json"

#: What the step model assumes on a GPU other than the one its parameters were fitted on.
LAYER_ASSUMPTIONS: tuple[str, ...] = (
    "SDPA (FlashAttention-style, cuDNN on sm90) reaches the fitted fraction of the dense bf16 peak, forward and "
    "backward apart, plus a fixed cost per query row and head that scales with the dense bf16 peak (fitted at "
    "sequence lengths 4096 to 16384)",
    "norm, RoPE, activation and residual kernels reach the fitted fraction of the HBM bandwidth plus a fixed "
    "latency each",
    "inductor fuses the same float8 casts into the same producers as on the fitted stack (torch 2.11, torchao "
    "0.17); the in-layer factors on GEMMs and casts and the in-step factor are the architecture's",
    "sustained back-to-back steps slow tensor-core kernels by the fitted step factors after the fitted boost "
    "window, as on the H200 at 700 W; another GPU's power limit and clock management may differ",
)

_GEMM_GROUPS = ("bf16", "fp8_e4m3/tensorwise", "fp8_e4m3/rowwise")
#: kernel kinds with a step factor of their own (:attr:`LayerParams.step_factors`)
STEP_FACTOR_KINDS: tuple[str, ...] = ("bf16_tensor_core", "fp8_tensor_core", "memory")


def _check(owner: str, name: str, value: Any, *, low: float, high: float, low_open: bool = True) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value > low if low_open else value >= low) and value <= high
    if not ok:
        bound = f"{'(' if low_open else '['}{low}, {high}]"
        raise CalibrationError(f"{owner}.{name} must be a finite number in {bound}, got {value!r}")
    return float(value)


@dataclasses.dataclass(frozen=True, kw_only=True)
class LayerParams:
    """The step model's parameters (formulas in :mod:`perfmodel.step`).

    Attributes:
        attention_fwd_fraction: SDPA forward rate as a fraction of the GPU's dense bf16 peak.
        attention_bwd_fraction: SDPA backward rate, same unit.
        attention_fwd_row_s, attention_bwd_row_s: SDPA's cost per query row and head (``batch · heads · seq_len``
            of them: loading Q, the softmax statistics, writing O or dQ), seconds on the reference GPU (on
            another GPU: times the reference's dense bf16 peak over its own). With them the rate above is the
            kernels' rate on long sequences; without (0, older files) it is the rate at the fitted length.
        elementwise_bw_fraction: norm / RoPE / activation / residual / SDPA-helper kernels: fraction of the
            HBM bandwidth at which their bytes move.
        elementwise_latency_s: fixed cost of each such kernel (and of each SDPA kernel), seconds.
        fused_amax_cost: extra time of an amax reduction that inductor fused into the kernel producing the
            tensor (norm, activation, RoPE backward), in HBM passes over the bytes the standalone amax would
            have read (1.0: as long as reading them once at the full HBM bandwidth).
        norm_bwd_cast_cost: tensorwise only — the attention-norm backward into which inductor fuses the
            transposed float8 cast of the norm output (q/k/v converted) runs this many HBM passes over
            ``3 · tokens · hidden`` bytes longer.
        mix_order_cast_cost: the same, where inductor fuses that cast into its persistent mix-order kernel of the
            norm backward (:func:`perfmodel.step.kernels.mix_order_cast`: batch 1, enough tokens); ``None``
            where the fit saw no such step (then ``norm_bwd_cast_cost`` prices it, and the step is
            underestimated).
        gemm_factors: GEMM group (``bf16``, ``fp8_e4m3/tensorwise``, ``fp8_e4m3/rowwise``) -> GEMM kernel time
            inside a compiled layer step over the calibrated model's Linear-step prediction.
        cast_factors: ``"recipe/group"`` (tensorwise and rowwise, per group of Linears) or ``"recipe"`` -> cast
            kernel time inside a layer over the calibrated model's Linear-step casts.
        in_step_factor: step time by CUDA events over back-to-back steps / summed kernel time of a profiled step
            (median over the fitted steps); every kernel's factor when ``step_factors`` is empty.
        step_factors: kernel kind (:data:`STEP_FACTOR_KINDS`: ``bf16_tensor_core`` — bf16 GEMMs and SDPA,
            ``fp8_tensor_core`` — float8 GEMMs, ``memory`` — every memory-bound kernel) -> how much slower it
            runs in back-to-back steps timed by CUDA events than at the clocks of a step that starts from idle.
            The profiled steps of the sweep are each followed by a synchronize and a 20 ms sleep, so their
            first ``boost_window_s`` run at clocks that sustained steps do not hold; memory-bound kernels do
            not depend on the SM clock. Fitted on GPU-bound steps only (:mod:`perfmodel.calibrate.layer`).
        boost_window_s: how long a step that starts from idle keeps its clocks, seconds: a step of ``K``
            seconds of profiled kernels runs ``min(K, boost_window_s)`` of them at those clocks, so
            ``step = K + min(1, boost_window_s / K) · Σ_kind (step_factor − 1) · K_kind``. ``None``: every
            kernel at its kind's factor, whatever the step's length.
        source: what the parameters were fitted on.
        reference: the GPU they were fitted on (its peaks are what the fractions are fractions of).
        residuals: fit statistics (written by :mod:`perfmodel.calibrate.layer`).
    """

    attention_fwd_fraction: float
    attention_bwd_fraction: float
    elementwise_bw_fraction: float
    elementwise_latency_s: float
    fused_amax_cost: float
    norm_bwd_cast_cost: float
    gemm_factors: Mapping[str, float]
    cast_factors: Mapping[str, float]
    in_step_factor: float
    source: str
    reference: ReferenceGPU
    residuals: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    step_factors: Mapping[str, float] = dataclasses.field(default_factory=dict)
    boost_window_s: float | None = None
    mix_order_cast_cost: float | None = None
    attention_fwd_row_s: float = 0.0
    attention_bwd_row_s: float = 0.0

    def __post_init__(self) -> None:
        own = "LayerParams"
        for name in ("attention_fwd_fraction", "attention_bwd_fraction", "elementwise_bw_fraction"):
            object.__setattr__(self, name, _check(own, name, getattr(self, name), low=0.0, high=1.2))
        object.__setattr__(
            self,
            "elementwise_latency_s",
            _check(own, "elementwise_latency_s", self.elementwise_latency_s, low=0.0, high=1e-3, low_open=False),
        )
        for name in ("fused_amax_cost", "norm_bwd_cast_cost"):
            object.__setattr__(self, name, _check(own, name, getattr(self, name), low=0.0, high=50.0, low_open=False))
        for name in ("attention_fwd_row_s", "attention_bwd_row_s"):
            object.__setattr__(self, name, _check(own, name, getattr(self, name), low=0.0, high=1e-6, low_open=False))
        if self.mix_order_cast_cost is not None:
            cost = _check(own, "mix_order_cast_cost", self.mix_order_cast_cost, low=0.0, high=500.0, low_open=False)
            object.__setattr__(self, "mix_order_cast_cost", cost)
        object.__setattr__(self, "in_step_factor", _check(own, "in_step_factor", self.in_step_factor, low=0.5, high=3))
        for field in ("gemm_factors", "cast_factors"):
            table = {
                str(k): _check(own, f"{field}[{k!r}]", v, low=0.2, high=5.0)
                for k, v in dict(getattr(self, field)).items()
            }
            object.__setattr__(self, field, table)
        unknown = set(dict(self.step_factors)) - set(STEP_FACTOR_KINDS)
        if unknown:
            raise CalibrationError(
                f"LayerParams.step_factors: unknown kernel kinds {sorted(unknown)}; "
                f"valid: {', '.join(STEP_FACTOR_KINDS)}"
            )
        object.__setattr__(
            self,
            "step_factors",
            {k: _check(own, f"step_factors[{k!r}]", v, low=0.5, high=3) for k, v in dict(self.step_factors).items()},
        )
        if self.boost_window_s is not None:
            object.__setattr__(
                self, "boost_window_s", _check(own, "boost_window_s", self.boost_window_s, low=0.0, high=10.0)
            )
        if not isinstance(self.reference, ReferenceGPU):
            raise CalibrationError(f"LayerParams.reference must be a ReferenceGPU, got {self.reference!r}")
        if "bf16" not in self.reference.peaks_flops_per_s:
            raise CalibrationError("LayerParams.reference needs a bf16 peak (attention fractions are fractions of it)")

    def gemm_factor(self, group: str) -> float:
        """The in-layer factor of a GEMM group (``fp8_e5m2/...`` reads ``fp8_e4m3/...``; 1.0 when not fitted)."""
        return self.gemm_factors.get(group.replace("fp8_e5m2", "fp8_e4m3"), 1.0)

    def cast_factor(self, recipe: str) -> float:
        """The in-layer factor of a group's casts, ``recipe`` being ``"tensorwise/qkv"`` (or a bare recipe name): the
        group's own factor where fitted, else the recipe's; a group without one (GeLU's ``w1``) borrows ``w13``'s
        (the same producer, the ffn norm), then the mean of the recipe's groups; mxfp8 and blockwise borrow
        rowwise's the same way; 1.0 when nothing was fitted."""
        if recipe in self.cast_factors:
            return self.cast_factors[recipe]
        name, _, group = recipe.partition("/")
        for r in (name, "rowwise") if name in ("mxfp8", "blockwise") else (name,):
            if group == "w1" and f"{r}/w13" in self.cast_factors:
                return self.cast_factors[f"{r}/w13"]
            if f"{r}/{group}" in self.cast_factors:
                return self.cast_factors[f"{r}/{group}"]
            if r in self.cast_factors:
                return self.cast_factors[r]
            mine = [v for k, v in self.cast_factors.items() if k.startswith(f"{r}/")]
            if mine:
                return float(sum(mine) / len(mine))
        return 1.0

    def step_factor(self, kind: str) -> float:
        """How much slower a kernel of ``kind`` (:data:`STEP_FACTOR_KINDS`) runs in sustained back-to-back steps
        than from idle (:attr:`step_factors`); :attr:`in_step_factor` where that kind was not fitted."""
        return self.step_factors.get(kind, self.in_step_factor)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (schema :data:`LAYER_SCHEMA`)."""
        return {
            "schema": LAYER_SCHEMA,
            "source": self.source,
            "reference": self.reference.to_dict(),
            "assumptions": list(LAYER_ASSUMPTIONS),
            "params": {
                "attention_fwd_fraction": self.attention_fwd_fraction,
                "attention_bwd_fraction": self.attention_bwd_fraction,
                "attention_fwd_row_s": self.attention_fwd_row_s,
                "attention_bwd_row_s": self.attention_bwd_row_s,
                "elementwise_bw_fraction": self.elementwise_bw_fraction,
                "elementwise_latency_s": self.elementwise_latency_s,
                "fused_amax_cost": self.fused_amax_cost,
                "norm_bwd_cast_cost": self.norm_bwd_cast_cost,
                "mix_order_cast_cost": self.mix_order_cast_cost,
                "gemm_factors": dict(self.gemm_factors),
                "cast_factors": dict(self.cast_factors),
                "in_step_factor": self.in_step_factor,
                "step_factors": dict(self.step_factors),
                "boost_window_s": self.boost_window_s,
            },
            "residuals": dict(self.residuals),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, origin: str = "<dict>") -> LayerParams:
        """Inverse of :meth:`to_dict`; raises :class:`CalibrationError` naming ``origin``."""
        try:
            if data.get("schema") != LAYER_SCHEMA:
                raise CalibrationError(f"schema is {data.get('schema')!r}, expected {LAYER_SCHEMA!r}")
            p = dict(data["params"])
            unknown = set(p) - {f.name for f in dataclasses.fields(cls)}
            if unknown:
                raise CalibrationError(f"unknown parameters {sorted(unknown)}")
            return cls(
                **p,
                source=str(data["source"]),
                reference=ReferenceGPU(**data["reference"]),
                residuals=data.get("residuals", {}),
            )
        except CalibrationError as exc:
            raise CalibrationError(f"{origin}: {exc}") from None
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise CalibrationError(
                f"{origin}: not a perfmodel layer calibration ({type(exc).__name__}: {str(exc)[:200]})"
            ) from None

    def save(self, path: str | Path, *, force: bool = False) -> Path:
        """Write the JSON file atomically (refuses to replace an existing file unless ``force``)."""
        return write_atomic(path, json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n", force=force)


def load_layer_params(path: str | Path) -> LayerParams:
    """Read a layer calibration written by :meth:`LayerParams.save`."""
    path = Path(path)
    data = load_json(path, what="layer calibration", error=CalibrationError)
    if not isinstance(data, dict):
        raise CalibrationError(f"{path}: expected a JSON object")
    return LayerParams.from_dict(data, origin=str(path))


@functools.lru_cache(maxsize=1)
def shipped() -> LayerParams:
    """The shipped H200 layer calibration (read once, on first use)."""
    return load_layer_params(SHIPPED_LAYER_FILE)
