"""Which time model a GPU predicts with, and where its answers come from (:class:`Provenance`).

For a GPU spec (a table row, a ``dataclasses.replace`` of one, or :func:`perfmodel.gpu_from_proton`'s):

1. a model you attached (``dataclasses.replace(gpu, calibration=model)``) — ``measured`` when it was
   fitted on exactly this spec, ``transferred`` when fitted on another GPU of the same architecture;
2. else the calibration measured on a GPU of the same architecture
   (:data:`perfmodel.models.shipped.MEASURED`) — ``measured`` on that very GPU, ``transferred`` on every
   other one, rescaled by the spec's own peaks, bandwidth, SMs and power (the rules and their
   assumptions: :mod:`perfmodel.models.calibrated`);
3. else an estimate for the architecture (:mod:`perfmodel.models.estimated`): the nearest
   measured architecture adjusted by published measurements — ``estimated``;
4. else the roofline with spec-sheet peaks and constant fractions — ``roofline``, with a
   :class:`~perfmodel.errors.PerfModelWarning` once per GPU.

``model=`` overrides it per call: ``"roofline"``, ``"original"``, ``"calibrated"`` (steps 1–3; an
error where none exists), ``"tiles"`` (the H200's tile model, :mod:`perfmodel.models.tiles`: numeric
GEMM kernel times on the H200 only; a named error elsewhere) or a :class:`~perfmodel.models.base.TimeModel`
object. Every answer's
provenance carries the error measured for its class (:data:`EXPECTED_ERRORS`, from
``docs/validation.md``).
"""

from __future__ import annotations

import re
import sys
import warnings
from typing import TYPE_CHECKING, Any

from .._backend import time_model_arg
from ..errors import CalibrationError, PerfModelError, PerfModelWarning, choices_message
from ..specs.gpu import GPUS, GPULike, GPUSpec, get_gpu
from ..specs.spec import attached_time_model
from .base import ORIGINAL, ROOFLINE, ExpectedError, Provenance, Roofline, TimeModel
from .calibrated import ASSUMPTIONS, CalibratedModel
from .errorbars import ErrorBar, error_bar
from .shipped import DIR, MEASURED, ShippedCalibration

if TYPE_CHECKING:  # the tile model (and its trees) is imported on first use only
    from .tiles import TileModel

__all__ = [
    "EXPECTED_ERRORS",
    "MODEL_NAMES",
    "TILES_EXPECTED_ERROR",
    "TILES_PATH",
    "TILE_KINDS_PATH",
    "TRANSFER_CHECKS",
    "ModelLike",
    "calibrated_model",
    "gpu_error_bar",
    "provenance",
    "resolve",
    "tile_kinds",
    "tile_model",
    "time_model",
]

ModelLike = str | TimeModel | None
#: names ``model=`` accepts
MODEL_NAMES: tuple[str, ...] = ("roofline", "original", "calibrated", "tiles")
_NAMED = {"roofline": ROOFLINE, "original": ORIGINAL}

#: Error measured per provenance class on data no fit saw (docs/validation.md; a test checks these
#: against the report that ``python benchmarks/validate.py gemm`` recomputes from the committed data). The
#: "transferred" figures are post-selection: the transfer rule was chosen on the table they are scored on.
EXPECTED_ERRORS: dict[str, ExpectedError] = {
    "measured": ExpectedError(
        gemm_time_pct=5.5,
        speedup_pct=4.9,
        decisions_pct=100.0,
        basis="H200, held-out shapes, worst format and recipe, static compiles",
    ),
    "transferred": ExpectedError(
        speedup_pct=7.2,
        decisions_pct=96.0,
        basis="H100, torchao's published rowwise table (216 shapes; post-selection: the transfer rule was chosen "
        "on it)",
    ),
    "estimated": ExpectedError(
        gemm_time_pct=17.9,
        basis="published GEMM throughput of GB200, B200, MI300X and A100 (21 shapes); float8 speedups not validated",
    ),
    "roofline": ExpectedError(
        gemm_time_pct=37.9,
        speedup_pct=76.5,
        decisions_pct=37.0,
        basis="H100 float8 table (216 shapes) and H200 GEMMs (60 %/92 % fractions)",
    ),
}

#: The transferred model measured on a GPU it transfers to, by GPU name: what that GPU's answers carry instead of the
#: "transferred" class's published-table figures (docs/validation.md, "The H100 SXM, measured"; a test checks them
#: against ``python benchmarks/validate_dense_transfer.py benchmarks/data/h100_2026-12-06dense{,-b2}``).
#: Pre-registered: the H200 calibration's own dense sweeps run unchanged on two H100 SXM boards with the model
#: committed before each run; nothing fitted on them; the figures pool both boards. GEMM time: the worst format's
#: MdAPE on the shapes the calibration held out by shape (fp8 rowwise; bf16 5.2, fp8 tensorwise 5.2); speedup: the
#: worst recipe's MdAPE on the static float8 Linear sweep (tensorwise; rowwise 3.8, rowwise_with_gw_hp 2.2), whose
#: 18 shapes are the ones the H200 calibration's cast terms were fitted on: in-sample by shape, on another GPU;
#: decisions: 91 of 92 clear calls right (rowwise 4096 x 8192 x 8192 on the second board: 1.03x predicted, 0.95x
#: measured).
TRANSFER_CHECKS: dict[str, ExpectedError] = {
    "H100-SXM": ExpectedError(
        gemm_time_pct=7.5,
        speedup_pct=4.5,
        decisions_pct=98.9,
        basis="H100 SXM measured 2026-12-06, two boards, pre-registered: the H200 calibration's dense sweeps, GEMMs "
        "held out by shape, static float8 Linears of the calibration's own shapes (in-sample by shape; 91/92 clear "
        "calls right); the tensorwise and rowwise speedups "
        "are over-predicted, median 1.04x",
    ),
}

#: The tile model's expected error, held out by shape (docs/validation.md, summary; docs/validation/tiles.md, "By
#: shape"; tests/test_tile_model.py checks it against what ``python benchmarks/validate.py tiles`` recomputes): the
#: GEMMs of the fresh sessions whose shapes no fit session measured. The sessions' other GEMMs (43 %: the llm, square
#: and most small_m shapes recur in every seed) are in-sample by shape and not in it.
TILES_EXPECTED_ERROR = ExpectedError(
    gemm_time_pct=5.0,
    basis="H200 only, kernel time; the 45983 GEMMs whose shapes are in no fit (held out by shape: no fit session "
    "measured the same M, K, N in the same format and layout) of layout sweep seeds 2037, 2071, 2072, 2073, 2074, "
    "2075, 2076, 2077, 2078, 2079, 2080, 2081, 2082, 2083, 2084, 2085, 2086 (in no fit, measured after the formula "
    "fits, 2071 to 2086 after the shipped correction too; on 10 GPUs), worst format and layout (bf16 cr; 4.3 % over "
    "all 45983, 3.3 % by event time; all 80325 GEMMs of the sessions, in-sample by shape for 43 % of them: 3.3 %)",
)

_SHIPPED: dict[str, ShippedCalibration] = {arch: ShippedCalibration(name) for arch, name in MEASURED.items()}
_TILES: dict[str, TileModel] = {}
_warned: set[str] = set()
#: the shipped tile model's file
TILES_PATH = DIR / "h200_tiles.json.gz"
#: the same model without its learned corrections (the trees), ~25 KB: what :func:`tile_kinds` reads, instead of
#: gunzipping and scanning the 5 MB of :data:`TILES_PATH` (``benchmarks/make_tile_kinds.py`` writes it from that file;
#: ``tests/test_tile_kinds_file.py`` checks the two agree)
TILE_KINDS_PATH = DIR / "h200_tile_kinds.json"


def _measured_for(arch: str) -> ShippedCalibration | None:
    return _SHIPPED.get(arch)


def tile_model(gpu: GPULike = "H200") -> TileModel:
    """The shipped tile model (:mod:`perfmodel.models.tiles`), read on first use; ``gpu`` must be the GPU it
    was measured on (the H200), else a named error."""
    spec = get_gpu(gpu)
    if "model" not in _TILES:
        from .tiles import load_tile_model  # the trees (5 MB of JSON) load only for a tile answer

        base = _measured_for("90")
        _TILES["model"] = load_tile_model(TILES_PATH, base=base)
    model = _TILES["model"]
    model.check_gpu(spec)
    return model


def tile_kinds(gpu: GPULike = "H200") -> TileModel:
    """The shipped tile model's formula kinds without its learned corrections, read from :data:`TILE_KINDS_PATH`
    (~25 KB, ~1 ms; the trees of :data:`TILES_PATH` stay unread), for answers that need no correction (the split-K
    flag of :func:`perfmodel.gemm_kernel`); the full model where it is already loaded. Same GPU check as
    :func:`tile_model`."""
    spec = get_gpu(gpu)
    model = _TILES.get("model") or _TILES.get("kinds")
    if model is None:
        from .tiles import load_tile_model  # the small file: the formula kinds only (TILE_KINDS_PATH)

        model = _TILES["kinds"] = load_tile_model(TILE_KINDS_PATH, base=_measured_for("90"))
    model.check_gpu(spec)
    return model


def calibrated_model(gpu: GPULike) -> TimeModel | None:
    """The shape-aware model ``gpu`` gets by default (attached, measured, transferred or estimated),
    or ``None`` where only the roofline is left."""
    spec = get_gpu(gpu)
    attached = attached_time_model(spec)
    if attached is not None:
        return attached
    shipped = _measured_for(spec.arch)
    if shipped is not None:
        return shipped
    from .estimated import ESTIMATES, estimated_model

    if spec.arch in ESTIMATES:
        return estimated_model(spec.arch, _SHIPPED)
    return None


def _calibrated_provenance(spec: GPUSpec, model: Any, *, attached: bool) -> Provenance:
    """Provenance of a CalibratedModel-like ``model`` on ``spec``."""
    if getattr(model, "estimate", None) is not None:  # an estimate for a non-measured architecture
        est = model.estimate
        return Provenance(
            kind="estimated",
            gpu=spec.name,
            time_model=model.name,
            source=est.summary(),
            summary=f"{est.family} estimate: the H200 calibration with published GEMM efficiencies",
            assumptions=(*ASSUMPTIONS, *est.assumptions),
            expected_error=EXPECTED_ERRORS["estimated"],
        )
    ref = model.reference
    if ref.arch != spec.arch and attached:
        raise CalibrationError(
            f"the calibration attached to {spec.name} (arch {spec.arch}) was fitted on {ref.name} (arch "
            f"{ref.arch}); a calibration transfers within one architecture. Fit one on this GPU (perfmodel "
            "calibrate), or in Python pass it per call with time_model=<the calibration> to use it anyway"
        )
    fitted = f"{'your calibration' if attached else 'calibration'} fitted on {ref.name} ({model.source})"
    date = re.search(r"\d{4}-\d{2}-\d{2}", model.source)
    short = f"{'your' if attached else 'the'} {ref.name} calibration" + (f" (measured {date[0]})" if date else "")
    if ref.matches(spec):
        return Provenance(
            kind="measured",
            gpu=spec.name,
            time_model=model.name,
            source=fitted,
            summary=short,
            expected_error=_residual_error(model) if attached else EXPECTED_ERRORS["measured"],
        )
    how = "rescaled by this GPU's peaks, HBM bandwidth, SM count and power limit"
    checked = _transfer_checked(spec, attached)
    assumptions = ASSUMPTIONS if ref.arch == spec.arch else (*ASSUMPTIONS, "across architectures, by your choice")
    return Provenance(
        kind="transferred",
        gpu=spec.name,
        time_model=model.name,
        source=f"{fitted}, {how}",
        summary=f"{short}, rescaled to {spec.name}'s spec",
        assumptions=assumptions,
        expected_error=TRANSFER_CHECKS[spec.name] if checked else EXPECTED_ERRORS["transferred"],
        checked_on=spec.name if checked else "",
    )


def _transfer_checked(spec: GPUSpec, attached: bool) -> bool:
    """Whether the shipped calibration's transfer was measured on this very table GPU (:data:`TRANSFER_CHECKS`):
    a user's calibration, or a spec changed from the table's, was not."""
    return not attached and spec.name in TRANSFER_CHECKS and spec == GPUS.get(spec.name)  # no name resolution


def _residual_error(model: Any) -> ExpectedError:
    """A user's own fit: the held-out residuals it reported (worst group)."""
    held = [g.get("heldout", {}).get("mdape") for g in dict(getattr(model, "residuals", {})).values()]
    held = [h for h in held if h is not None]
    return ExpectedError(
        gemm_time_pct=max(held) if held else None,
        basis="held-out GEMMs of your own fit" if held else "your own fit (no held-out residuals recorded)",
    )


def _roofline_provenance(spec: GPUSpec, model: Any, *, asked: bool) -> Provenance:
    name = getattr(model, "name", "roofline")
    why = "asked for with model=" if asked else "no calibrated or estimated model for arch " + repr(spec.arch)
    return Provenance(
        kind="roofline",
        gpu=spec.name,
        time_model=name,
        source=f"spec-sheet peaks x constant fractions ({spec.efficiency.source}); {why}",
        summary=f"spec-sheet peaks x constant fractions ({why})",
        expected_error=EXPECTED_ERRORS["roofline"],
    )


def _is_roofline(model: Any) -> bool:
    return model is ORIGINAL or isinstance(model, Roofline)


def _is_tiles(model: Any) -> bool:
    """Whether ``model`` is a TileModel (none exists before :mod:`.tiles` is imported: it stays unloaded)."""
    tiles = sys.modules.get(f"{__package__}.tiles")
    return tiles is not None and isinstance(model, tiles.TileModel)


def _is_calibrated(model: Any) -> bool:
    return isinstance(model, (CalibratedModel, ShippedCalibration)) or getattr(model, "reference", None) is not None


def resolve(gpu: GPULike, model: ModelLike = None) -> tuple[TimeModel, Provenance]:
    """The time model for ``gpu`` (``model`` overrides, see the module doc) and its provenance.

    Raises:
        UnknownGPUError, PerfModelError (unknown model name, or "calibrated" where none exists),
        CalibrationError (an attached calibration of another architecture).
    """
    spec = get_gpu(gpu)
    if model is None:
        chosen = calibrated_model(spec)
        attached = attached_time_model(spec) is not None
        if chosen is None:
            if spec.name not in _warned:
                _warned.add(spec.name)
                warnings.warn(
                    f"{spec.name}: no calibrated or estimated time model for arch {spec.arch!r}; answers use the "
                    "spec-sheet roofline, whose float8 speedups ran ~2x too optimistic where measured "
                    "(docs/validation.md). Calibrate it: python -m perfmodel.bench all, then perfmodel calibrate",
                    PerfModelWarning,
                    stacklevel=3,
                )
            return ROOFLINE, _roofline_provenance(spec, ROOFLINE, asked=False)
        return chosen, _provenance_of(spec, chosen, attached=attached)
    if isinstance(model, str):
        if model == "calibrated":
            chosen = calibrated_model(spec)
            if chosen is None or not _is_calibrated(chosen):
                raise PerfModelError(
                    f"{spec.name} has no calibration (arch {spec.arch!r} has no measured or estimated model); "
                    "use model='roofline', or fit one with `perfmodel calibrate` (docs/validation.md)"
                )
            return chosen, _provenance_of(spec, chosen, attached=attached_time_model(spec) is not None)
        if model == "tiles":
            tiles = tile_model(spec)
            return tiles, _tiles_provenance(spec, tiles)
        if model not in _NAMED:
            raise PerfModelError(choices_message("time model", model, MODEL_NAMES))
        return _NAMED[model], _roofline_provenance(spec, _NAMED[model], asked=True)
    if not isinstance(model, TimeModel):
        raise PerfModelError(
            f"model must be one of {', '.join(MODEL_NAMES)} or a TimeModel object, got {type(model).__name__}"
        )
    return model, _provenance_of(spec, model, attached=False, explicit=True)


def _tiles_provenance(spec: GPUSpec, model: TileModel) -> Provenance:
    date = re.search(r"\d{4}-\d{2}-\d{2}", model.source)
    return Provenance(
        kind="measured",
        gpu=spec.name,
        time_model=model.name,
        source=f"tile model fitted on {model.gpu} ({model.source}); memory kernels: the {model.gpu} calibration",
        summary=f"the {model.gpu} tile model" + (f" (measured {date[0]})" if date else ""),
        expected_error=TILES_EXPECTED_ERROR,
        measured_range=tuple((d, lo, hi) for d, (lo, hi) in model.measured_range.items()),
    )


def _provenance_of(spec: GPUSpec, model: Any, *, attached: bool, explicit: bool = False) -> Provenance:
    if _is_tiles(model):
        return _tiles_provenance(spec, model)
    if _is_roofline(model):
        return _roofline_provenance(spec, model, asked=True)
    if _is_calibrated(model):
        if explicit and getattr(model, "estimate", None) is None and model.reference.arch != spec.arch:
            return _calibrated_provenance(spec, model, attached=False)
        return _calibrated_provenance(spec, model, attached=attached)
    return Provenance(
        kind="user",
        gpu=spec.name,
        time_model=str(getattr(model, "name", type(model).__name__)),
        source=f"a time model you supplied ({type(model).__name__})",
        expected_error=ExpectedError(basis="unknown: your own model"),
    )


def time_model(gpu: GPULike, choice: ModelLike = None, *, model: ModelLike = None) -> TimeModel:
    """The time model :func:`resolve` picks (``choice`` if given, else the GPU's default; ``model=`` is the old,
    deprecated keyword for it)."""
    return resolve(gpu, time_model_arg(choice, model, "time_model"))[0]


def provenance(gpu: GPULike, time_model: ModelLike = None, *, model: ModelLike = None) -> Provenance:
    """Where ``gpu``'s answers come from (with ``time_model``: that model's) and their expected error."""
    return resolve(gpu, time_model_arg(time_model, model, "provenance"))[1]


def gpu_error_bar(
    gpu: GPULike,
    quantity: str = "gemm_time",
    *,
    time_model: ModelLike = None,
    model: ModelLike = None,
    family: str = "all",
    timing: str = "kernel",
) -> ErrorBar | None:
    """The error bar of ``gpu``'s answers (with ``time_model=``: that model's) for ``quantity`` on ``family``
    shapes: :func:`perfmodel.models.errorbars.error_bar` for the answer's provenance class; ``None`` where that
    class was never validated (estimated speedups, models you supply). ``model=``: deprecated name of
    ``time_model=``."""
    tm, prov = resolve(gpu, time_model_arg(time_model, model, "gpu_error_bar"))
    which = "tiles" if _is_tiles(tm) else ""
    return error_bar(quantity, prov.kind, family, timing, model=which, checked_on=prov.checked_on)  # type: ignore[arg-type]
