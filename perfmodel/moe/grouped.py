"""Grouped GEMMs (MoE experts): the time of one ``torch._grouped_mm`` / ``torch._scaled_grouped_mm`` call.

What is modelled (see ``docs/moe.md``, section "Grouped GEMMs"):

* ``op="fwd"``: ``out[T, N] = x[T, K] @ w[G, K, N]`` (2D x 3D), ``T = sum(group_sizes)``; ``op="dgrad"`` is the
  same form with K and N swapped (``dx[T, K] = dy[T, N] @ w[G, N, K]``) and is priced as ``fwd`` with them swapped;
* ``op="wgrad"``: ``dw[G, K, N] = x.T[K, T] @ dy[T, N]`` per group (2D x 2D, the contraction runs over each
  group's rows). torch computes it as ``out[G, N, K] = dy.T @ x`` (weights stored ``[G, out, in]``), which is
  what was measured and what the tile counts below use (output tiles over ``N x K``).

The kernel: one CUTLASS persistent launch whose tiles of all groups are dealt round robin over the SMs
(group after group, the scheduler's linear order). The tile shape is the one torch 2.11 picks (read from the
profiled kernel names of ``benchmarks/data/h200_2026-12-03/grouped_gemm_kernels.json.gz``, :data:`KERNELS`).
A group's M tiles round up to the 2 x 1 cluster. An SM's time is the sum over its tiles of ``(k-blocks + c0) *
t_kb``; the kernel's compute time is the busiest SM's, slowed by the power cap for long kernels
(:func:`_throttled`); the memory time is ``bytes / (mem_eff * bandwidth)`` (off the H200, at
:func:`~perfmodel.moe.grouped_kernel.memory_rate_bytes_per_s`); they overlap as a p-norm; a fixed floor
``t0`` and a cost per group ``t_group`` (empty groups included) are added. The parameters are fitted per timing,
dtype and op on our H200 measurements (:mod:`perfmodel.calibrate.grouped`) and shipped in
``perfmodel/calibrations/h200_grouped.json``.
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any

import numpy as np

from .._backend import describe_value, is_symbolic
from ..counting import check_fp8_alignment
from ..errors import InvalidShapeError, UnknownOptionError, UnsupportedFormatError
from ..float8.recipes import get_recipe
from ..models.base import TIMINGS, split_clauses
from ..perfdata import PerfData
from ..specs.gpu import ORIGINAL_EFFICIENCY, GPUSpec, get_gpu
from .grouped_kernel import (
    _LARGE_DIM,
    _OUT_BYTES,
    _SMALL_MN,
    CALIBRATION_FILE,
    FP8_GROUP_ALIGN,
    KERNELS,
    SCHEMA,
    SIZE_CLASSES,
    KernelConfig,
    _bytes,
    _class_key,
    _round_up,
    _shipped,
    _size_class,
    _sm_bound_load,
    _throttled,
    fitted_tile,
    kernel_config,
    load_params,
    memory_rate_bytes_per_s,
    model_time_s,
    pad_group_sizes,
    sm_loads,
)

__all__ = [
    "CALIBRATION_FILE",
    "FP8_GROUP_ALIGN",
    "KERNELS",
    "OPS",
    "SCHEMA",
    "SIZE_CLASSES",
    "UNEVEN_DIRECTION_SHARE",
    "UNEVEN_GROUPS_ERROR",
    "UNEVEN_MAX_OVER_MEAN",
    "UNEVEN_MIN_FLOPS",
    "GroupedGemmTime",
    "KernelConfig",
    "balanced_group_sizes",
    "check_timing",
    "error_bar_line",
    "grouped_gemm",
    "grouped_gemm_time_s",
    "grouped_gemm_time_s_balanced",
    "kernel_config",
    "load_params",
    "model_time_s",
    "pad_group_sizes",
    "provenance_head",
    "roofline_grouped_gemm_time_s",
    "size_class",
    "sm_loads",
    "uneven_groups",
]

#: ``op=`` values
OPS: tuple[str, ...] = ("fwd", "dgrad", "wgrad")


# -------------------------------------------------------------------------------------------------
# input checks
# -------------------------------------------------------------------------------------------------
def _dtype_key(dtype: Any, scaling: str | None) -> str:
    from ..formats import get_format

    fmt = get_format(dtype)
    if fmt.name == "bf16":
        if scaling is not None:
            raise UnknownOptionError(f"scaling={scaling!r} is for dtype='fp8'; bf16 grouped GEMMs take scaling=None")
        return "bf16"
    if fmt.name == "fp8_e4m3":
        if scaling is None:
            scaling = "rowwise"
        get_recipe(scaling)  # an unknown name: UnknownRecipeError listing the recipes
        if scaling != "rowwise":
            raise UnknownOptionError(
                f"scaling={scaling!r}: only rowwise fp8 grouped GEMMs (torch._scaled_grouped_mm, e4m3, per-row "
                "scales, as torchao's MoE training calls it) were measured; use scaling='rowwise'"
            )
        return "fp8"
    raise UnsupportedFormatError(
        f"grouped GEMMs are modelled in bf16 (torch._grouped_mm) and fp8 e4m3 rowwise (torch._scaled_grouped_mm), "
        f"got dtype={fmt.name!r}"
    )


def check_timing(timing: str) -> None:
    """``timing`` must be one of :data:`perfmodel.models.base.TIMINGS` (a named error otherwise)."""
    if timing not in TIMINGS:
        raise UnknownOptionError(f"timing={timing!r}: use one of {', '.join(TIMINGS)}")


def _check_op_timing(op: str, timing: str) -> None:
    if op not in OPS:
        raise UnknownOptionError(f"op={op!r}: use one of {', '.join(OPS)}")
    check_timing(timing)


def check_positive_int(name: str, v: Any) -> int:
    """``v`` as an int if it is a whole number > 0 (an int or an integral float); else :class:`InvalidShapeError`."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not float(v).is_integer() or v <= 0:
        raise InvalidShapeError(f"{name} must be a whole number > 0, got {v!r}")
    return int(v)


def _group_matrix(group_sizes: Any) -> tuple[np.ndarray, bool]:
    """``group_sizes`` -> (int64 array [batch, G], was 2-D); every bad input a named error."""
    if is_symbolic(group_sizes) or (
        isinstance(group_sizes, (list, tuple))
        and any(is_symbolic(x) for x in np.ravel(np.array(group_sizes, dtype=object)))
    ):
        raise InvalidShapeError(
            "symbolic group sizes are priced only for balanced routing: use grouped_gemm_time_s_balanced(tokens, "
            "experts, top_k, K, N) with a sympy tokens"
        )
    try:
        arr = np.asarray(group_sizes)
    except ValueError:
        arr = None
    if arr is None or arr.dtype == object:
        raise InvalidShapeError(
            "group_sizes must be a 1-D sequence of whole numbers, or a 2-D array whose rows all have the same "
            "number of groups (a ragged batch is not one: call once per vector)"
        )
    if arr.ndim not in (1, 2):
        raise InvalidShapeError(f"group_sizes must be 1-D (one vector) or 2-D (a batch), got {arr.ndim}-D")
    if arr.shape[-1] == 0 or arr.size == 0:
        raise InvalidShapeError("group_sizes is empty (G = 0): a grouped GEMM needs at least one group")
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)) or arr.dtype == bool:
        raise InvalidShapeError(f"group_sizes must be whole numbers, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating) and (not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr))):
        raise InvalidShapeError("group_sizes must be whole numbers of rows; a fractional or non-finite one was given")
    if np.any(arr < 0):
        raise InvalidShapeError(f"group_sizes must be >= 0 rows each, got {arr.min()}")
    two_d = arr.ndim == 2
    return np.atleast_2d(arr.astype(np.int64)), two_d


def roofline_grouped_gemm_time_s(group_sizes: Any, K: Any, N: Any, *, dtype: Any = "bf16", gpu: Any = "H200") -> Any:
    """Compute-only roofline as torchao's MoE roofline prices a grouped GEMM: ``2 * sum(rows) * K * N / (peak *
    0.6)`` — the spec-sheet dense peak of ``dtype`` times torchao's achievable fraction
    (:data:`perfmodel.specs.gpu.ORIGINAL_EFFICIENCY`, 0.6); no memory term, no launch, no tile or wave
    quantization. Seconds; a 2-D ``group_sizes`` gives one time per row. For comparison only."""
    from ..formats import get_format

    fmt = get_format(dtype)
    _dtype_key(fmt.name, None if fmt.name == "bf16" else "rowwise")
    spec = get_gpu(gpu)
    rows, two_d = _group_matrix(group_sizes)
    K, N = check_positive_int("K", K), check_positive_int("N", N)
    t = 2.0 * rows.sum(axis=1).astype(float) * K * N / (spec.peak_flops_per_s(fmt) * ORIGINAL_EFFICIENCY.gemm(fmt))
    return t if two_d else float(t[0])


# -------------------------------------------------------------------------------------------------
# which parameters a GPU gets, and where they come from
# -------------------------------------------------------------------------------------------------
def _resolve(spec: GPUSpec, time_model: str | None) -> tuple[str, GPUSpec | None]:
    """(provenance kind, the reference GPU of the calibration or None for the roofline estimate)."""
    if time_model not in (None, "calibrated", "roofline"):
        raise UnknownOptionError(f"time_model={time_model!r}: use None (the default), 'calibrated' or 'roofline'")
    if time_model == "roofline":
        return "roofline", None
    ref = get_gpu(_shipped()["gpu"])
    if spec.name == ref.name:
        return "measured", ref
    if spec.vendor == ref.vendor and spec.arch == ref.arch:
        return "transferred", ref
    if time_model == "calibrated":
        raise UnknownOptionError(
            f"time_model='calibrated': the grouped-GEMM calibration was measured on {ref.name} (arch {ref.arch}) and "
            f"transfers to GPUs of that architecture only; {spec.name} is arch {spec.arch}. Leave time_model=None "
            "for the labelled roofline estimate"
        )
    return "roofline", None


def _provenance(kind: str, spec: GPUSpec, key: str) -> str:
    cal = _shipped()
    data = ", ".join(f"{v['file']} (sha256 {v['sha256'][:12]}…)" for v in cal["data"].values())
    fams = ", ".join(cal["fit_families"])
    if kind == "measured":
        return f"measured-fit: {cal['gpu']} grouped-GEMM sweep of {cal['date']} ({data}), fitted on families {fams}"
    if kind == "transferred":
        return (
            f"transferred from {cal['gpu']} ({cal['date']} fit on {fams}): per-SM tile rate rescaled by "
            f"{spec.name}'s dense peak per SM, memory by its HBM bandwidth (a class fitted below the H200's copy "
            f"speed, the wgrad ones, by SM throughput up to this GPU's copy speed), {spec.num_sms} SMs; overheads kept"
        )
    return (
        f"roofline estimate on {spec.name}: max(FLOP / (peak x {spec.efficiency.gemm_fraction:.2f}), bytes / (HBM x "
        f"{spec.efficiency.mem_bw_fraction:.2f})) + launch ({spec.efficiency.source}); the Hopper CUTLASS kernel "
        "rules (tiles, waves, group costs) are not assumed"
    )


#: calls of at least this many FLOPs (padded rows) whose largest group is at least :data:`UNEVEN_MAX_OVER_MEAN` x the
#: mean are "uneven large calls": priced fast more often than not on the H200 (:data:`UNEVEN_GROUPS_ERROR`)
UNEVEN_MIN_FLOPS = 1e12
UNEVEN_MAX_OVER_MEAN = 1.05
#: the share of calls priced fast from which a direction is named ("likely slower"), as for the block's twin
#: (perfmodel.moe.block.TWIN_DIRECTION_SHARE)
UNEVEN_DIRECTION_SHARE = 0.65
#: Predicted / measured (event time) of uneven large calls of families in no grouped fit, per GPU and dtype: ``n``,
#: ``median_ratio``, ``under`` (share priced fast) and ``even_median`` (the even calls of the same size). H200: our five
#: sweeps (2026-12-03 to 12-04, 19 held-out families); H100: our H100 SXM's isolated grouped GEMMs (round grouped10,
#: registered, and round 8's diagnostic sweep, the calls the SM-bound memory rule was chosen on; transferred
#: answers). Read on 2026-12-08 after every one of these sweeps had been scored (a post-hoc statement of the model's
#: error; no constant of the model changed; the rule's thresholds were chosen on these calls). ``python
#: benchmarks/validate_grouped.py --uneven`` recomputes it; a test holds it.
UNEVEN_GROUPS_ERROR: dict[str, dict[str, dict[str, float]]] = {
    "H200": {"bf16": {"n": 142, "median_ratio": 0.9754, "under": 0.7394, "even_median": 0.9939},
             "fp8": {"n": 145, "median_ratio": 0.9765, "under": 0.6759, "even_median": 1.0080}},
    "H100": {"bf16": {"n": 112, "median_ratio": 0.9885, "under": 0.6071, "even_median": 1.0150},
             "fp8": {"n": 113, "median_ratio": 0.9815, "under": 0.5752, "even_median": 1.0025}},
}  # fmt: skip


def uneven_groups(group_sizes: Any) -> Any:
    """Whether a group-size vector is uneven: its largest group at least :data:`UNEVEN_MAX_OVER_MEAN` x the mean
    (empty groups count; an all-empty vector is not uneven). A 2-D batch gives one bool per row.

    Raises:
        InvalidShapeError: ``group_sizes`` is not whole numbers >= 0 in a 1-D vector or a 2-D batch, or has no group
            (the checks of :func:`grouped_gemm`).
    """
    rows, two_d = _group_matrix(group_sizes)
    out = np.array([_uneven(g) for g in rows])
    return out if two_d else bool(out[0])


def _uneven(g: np.ndarray) -> bool:
    """:func:`uneven_groups` of one checked int vector."""
    mean = float(g.mean())
    return bool(mean > 0 and float(g.max()) >= UNEVEN_MAX_OVER_MEAN * mean)


def _uneven_note(kind: str, dtype: str, spec: GPUSpec) -> str:
    """The provenance's words on an uneven large call (:data:`UNEVEN_GROUPS_ERROR`): the H200's figures, and on a
    transferred GPU the H100 SXM's too; "known wrong in direction" where the GPU's share priced fast reaches
    :data:`UNEVEN_DIRECTION_SHARE`."""
    rule = (
        f"uneven groups (largest >= {UNEVEN_MAX_OVER_MEAN:g}x the mean) in a call of >= {UNEVEN_MIN_FLOPS / 1e12:g} "
        "TFLOP"
    )

    def figs(gpu: str) -> str:
        e = UNEVEN_GROUPS_ERROR[gpu][dtype]
        return (
            f"predicted / measured median {e['median_ratio']:.3f}, priced fast in {e['under']:.0%} of {e['n']} such "
            f"calls of held-out families on our {'H200' if gpu == 'H200' else 'H100 SXM'} (even calls "
            f"{e['even_median']:.3f})"
        )

    mine = "H200" if kind == "measured" else "H100"
    if UNEVEN_GROUPS_ERROR[mine][dtype]["under"] >= UNEVEN_DIRECTION_SHARE:
        lead = f"known wrong in direction for {rule}: likely slower than this"
    else:
        lead = f"{rule}: no direction known on {spec.name}"
    where = figs("H200") if kind == "measured" else f"{figs('H100')}; {figs('H200')}"
    return f"{lead} ({where}; post-hoc, not corrected)"


def _error_bar(kind: str, key: str) -> dict[str, Any] | None:
    bars = _shipped().get("error_bars", {}).get(key)
    if bars is None or kind == "roofline":
        return None
    out = {"p50": bars["p50"], "p90": bars["p90"], "n": bars["n"], "basis": bars["basis"]}
    if kind == "transferred":
        out["basis"] += (
            "; fitted and scored on the H200; the transfer checked on one H100 SXM (2026-12-06, 546 isolated calls "
            "of three families held out by shape, benchmarks/data/h100_2026-12-06r8): with the SM-bound memory rule "
            "chosen on those calls (post-selection) MdAPE / p90 4.7 / 11.1 %, price / measured median 0.95-1.02 per "
            "dtype and op (the HBM-only transfer before it: 6.1 / 22.1 %, fp8 wgrad under 1 TFLOP 20-26 % slow); "
            "its registered test, 2122 calls of eight other families held out by shape on another H100 SXM "
            "(2026-12-07, benchmarks/data/h100_2026-12-06g10): bf16 3.9 / 10.5 %, fp8 5.1 / 12.6 %, fp8 wgrad "
            "4.2 / 10.0 % against 20.1 / 30.1 % for the HBM-only transfer (docs/moe.md)"
        )
    return out


def _roofline_estimate(
    rows: np.ndarray, K: int, N: int, op: str, dtype: str, spec: GPUSpec, timing: str
) -> tuple[float, dict[str, Any]]:
    from ..models.base import EVENT_OVERHEAD_S

    fmt = "bf16" if dtype == "bf16" else "fp8_e4m3"
    flops = 2.0 * float(rows.sum()) * K * N
    compute = flops / (spec.peak_flops_per_s(fmt) * spec.efficiency.gemm(fmt))
    nbytes = _bytes(rows, K, N, op, 1.0 if dtype == "fp8" else 2.0)
    memory = nbytes / spec.achievable_mem_bw_bytes_per_s
    launch = spec.launch_overhead_s + (EVENT_OVERHEAD_S if timing == "event" else 0.0)
    bound = "compute" if compute >= memory else "memory"
    if launch > max(compute, memory):
        bound = "launch"
    return max(compute, memory) + launch, {"cfg": None, "tiles": 0, "waves": 0, "bytes": nbytes, "bound": bound}


# -------------------------------------------------------------------------------------------------
# public API
# -------------------------------------------------------------------------------------------------
def provenance_head(provenance: str) -> str:
    """The kind and source an MoE answer's provenance starts with ("measured-fit", "transferred from H200", "roofline
    estimate on B200"): its first clause up to the first ``:`` or ``(``, for one-line reprs (the full text stays in
    ``provenance``)."""
    first = (split_clauses(provenance) or [""])[0]
    cut = min((i for i in (first.find(":"), first.find(" (")) if i > 0), default=len(first))
    return first[:cut].strip()


def error_bar_line(bar: dict[str, Any] | None, *, short: bool = False) -> str:
    """One line for an MoE answer's ``error_bar``: where it was measured, ``MdAPE p50 %, p90 p90 %`` and the first
    clause of its basis (``short``: the figures alone); else the first clause of what its basis says (an estimate
    names no error)."""
    if not bar:
        return "no measured error (a roofline estimate)"
    basis = split_clauses(str(bar.get("basis", "")))
    if bar.get("p50") is None:
        return basis[0] if basis else "no measured error"
    n = f", n={bar['n']}" if bar.get("n") else ""
    figures = f"MdAPE {bar['p50']:.1f} %, p90 {bar['p90']:.1f} %{n}"
    return figures if short or not basis else f"{figures} ({basis[0]})"


@dataclasses.dataclass(frozen=True)
class GroupedGemmTime:
    """One grouped GEMM's predicted time and what it is made of (arrays, one entry per vector, for a 2-D batch).

    Attributes:
        time_s: predicted time, seconds (``timing`` "event": CUDA-event wall time of one call incl. launch;
            "kernel": profiled GPU time, prepare kernel included).
        flops: ``2 * sum(rows) * K * N`` of the padded rows. bytes: device-memory bytes the model counts.
        G: number of groups. rows: the padded rows per group the kernel runs (int array).
        tiles, waves: output tiles of all groups, and ``ceil(tiles / SMs)``. kernel: the CUTLASS config name.
        bound: "compute", "memory" or "launch" (fixed + per-group costs above the rest).
        provenance: where the number comes from (measured-fit / transferred / roofline estimate), GPU and data.
        error_bar: held-out relative error, %, ``{"p50", "p90", "n", "basis"}``; None for the roofline estimate.
    """

    time_s: Any
    flops: Any
    bytes: Any
    G: int
    rows: np.ndarray
    tiles: Any
    waves: Any
    bound: Any
    provenance: str
    error_bar: dict[str, Any] | None
    kernel: Any
    dtype: str
    op: str
    timing: str
    gpu: str

    def _head(self) -> str:
        t = np.asarray(self.time_s, dtype=float)
        if t.ndim == 0:
            rows = f"{int(np.asarray(self.rows).sum())} rows"
            when = f"{describe_value(float(t), 's')} ({self.timing} time), {self.bound}-bound, {self.kernel}"
            if int(np.asarray(self.tiles)):  # the roofline estimate tiles nothing
                when += f", {self.tiles} tiles in {self.waves} waves"
        else:
            rows = f"{t.size} vectors"
            lo, hi = describe_value(float(t.min()), "s"), describe_value(float(t.max()), "s")
            when = f"{lo} to {hi} ({self.timing} time)"
        return f"{self.dtype} {self.op}, G={self.G}, {rows} on {self.gpu}: {when}"

    def __repr__(self) -> str:
        return f"GroupedGemmTime({self._head()}; {provenance_head(self.provenance)})"

    def __str__(self) -> str:
        lines = [f"grouped GEMM {self._head()}", f"  error: {error_bar_line(self.error_bar)}", "  provenance:"]
        return "\n".join(lines + [f"    - {c}" for c in split_clauses(self.provenance)])

    def perfdata(self) -> PerfData:
        """This prediction as a roofline point (:class:`perfmodel.PerfData`, ``source="predicted"``)."""
        return PerfData(
            time_s=self.time_s,
            flops=self.flops,
            bytes=self.bytes,
            dtype="bf16" if self.dtype == "bf16" else "fp8_e4m3",
            gpu=self.gpu,
            label=f"grouped {self.op} G={self.G} ({self.dtype})",
            source="predicted",
            meta={"provenance": self.provenance, "kernel": self.kernel, "timing": self.timing},
        )


def _prepare(
    group_sizes: Any, K: Any, N: Any, dtype: Any, scaling: Any, op: str, timing: str
) -> tuple[np.ndarray, bool, int, int, str, str]:
    _check_op_timing(op, timing)
    key = _dtype_key(dtype, scaling)
    K, N = check_positive_int("K", K), check_positive_int("N", N)
    if key == "fp8":
        check_fp8_alignment(K, N, "fp8_e4m3")
    rows, two_d = _group_matrix(group_sizes)
    if op == "dgrad":  # dx[T, K] = dy[T, N] @ w[G, N, K]: the fwd form with K and N swapped
        K, N, op = N, K, "fwd"
    return rows, two_d, K, N, key, op


def grouped_gemm(
    group_sizes: Any,
    K: Any,
    N: Any,
    *,
    dtype: Any = "bf16",
    gpu: Any = "H200",
    scaling: str | None = None,
    op: str = "fwd",
    timing: str = "event",
    time_model: str | None = None,
) -> GroupedGemmTime:
    """Predict one grouped GEMM (or a batch of group-size vectors) and say what it is made of.

    Args:
        group_sizes: rows per expert (1-D whole numbers >= 0; a 2-D array is a batch: one answer per row).
        K, N: ``op="fwd"``: ``x[sum(g), K] @ w[G, K, N]``; ``"dgrad"``: ``dy[sum(g), N] @ w[G, N, K]`` (priced as fwd
            with K, N swapped); ``"wgrad"``: ``dw[G, K, N]`` contracted over each group's rows.
        dtype: "bf16" (``torch._grouped_mm``) or "fp8" (e4m3, ``torch._scaled_grouped_mm``; scaling "rowwise").
        gpu: a GPU name or spec: H200 measured, other Hopper GPUs transferred, others a roofline estimate.
        timing: "event" (do_bench wall time incl. launch) or "kernel" (profiled GPU time).
        time_model: None (default), "calibrated" (refuse a non-Hopper GPU) or "roofline".

    Raises:
        InvalidShapeError, IneligibleShapeError, UnknownOptionError, UnsupportedFormatError: bad input.
    """
    rows, two_d, K, N, dt, op_k = _prepare(group_sizes, K, N, dtype, scaling, op, timing)
    spec = get_gpu(gpu)
    kind, ref = _resolve(spec, time_model)
    key = _class_key(timing, dt, op_k)
    out: dict[str, list[Any]] = {k: [] for k in ("t", "flops", "bytes", "rows", "tiles", "waves", "bound", "cfg")}
    for g in rows:
        padded = pad_group_sizes(g, dt)
        if ref is None:
            t, info = _roofline_estimate(padded, K, N, op_k, dt, spec, timing)
        else:
            t, info = model_time_s(padded, K, N, op_k, dt, _shipped()["params"][key], spec, ref)
        out["t"].append(t)
        out["flops"].append(2.0 * float(padded.sum()) * K * N)
        out["bytes"].append(info["bytes"])
        out["rows"].append(padded)
        out["tiles"].append(info["tiles"])
        out["waves"].append(info["waves"])
        out["bound"].append(info["bound"])
        out["cfg"].append(info["cfg"].name if info["cfg"] else "roofline")
    pick = (lambda v: np.array(v)) if two_d else (lambda v: v[0])
    provenance = _provenance(kind, spec, key)
    uneven = [_uneven(g) and f >= UNEVEN_MIN_FLOPS for g, f in zip(rows, out["flops"], strict=True)]
    if ref is not None and any(uneven):
        which = "" if not two_d else f" (rows {', '.join(str(i) for i, u in enumerate(uneven) if u)} of the batch)"
        provenance += f"; {_uneven_note(kind, dt, spec)}{which}"
    return GroupedGemmTime(
        time_s=pick(out["t"]),
        flops=pick(out["flops"]),
        bytes=pick(out["bytes"]),
        G=int(rows.shape[1]),
        rows=np.array(out["rows"]) if two_d else out["rows"][0],
        tiles=pick(out["tiles"]),
        waves=pick(out["waves"]),
        bound=pick(out["bound"]),
        provenance=provenance,
        error_bar=_error_bar(kind, key),
        kernel=pick(out["cfg"]),
        dtype=dt,
        op=op,
        timing=timing,
        gpu=spec.name,
    )


def grouped_gemm_time_s(
    group_sizes: Any,
    K: Any,
    N: Any,
    *,
    dtype: Any = "bf16",
    gpu: Any = "H200",
    scaling: str | None = None,
    op: str = "fwd",
    timing: str = "event",
    time_model: str | None = None,
) -> Any:
    """Seconds of one grouped GEMM (``float``), or one per row of a 2-D ``group_sizes`` (``np.ndarray``).

    Same arguments as :func:`grouped_gemm`; a sympy expression comes only from
    :func:`grouped_gemm_time_s_balanced` (symbolic tokens)."""
    return grouped_gemm(
        group_sizes, K, N, dtype=dtype, gpu=gpu, scaling=scaling, op=op, timing=timing, time_model=time_model
    ).time_s


def balanced_group_sizes(tokens: Any, experts: Any, top_k: Any) -> np.ndarray:
    """Rows per expert when ``tokens * top_k`` routed rows spread evenly over ``experts``: each gets
    ``floor(tokens * top_k / experts)``, the remainder one more row each to the first groups (int64 array)."""
    if is_symbolic(tokens):
        raise InvalidShapeError("symbolic tokens: use grouped_gemm_time_s_balanced, which has the closed form")
    tokens = _whole("tokens", tokens, allow_zero=True)
    experts, top_k = check_positive_int("experts", experts), check_positive_int("top_k", top_k)
    q, r = divmod(tokens * top_k, experts)
    out = np.full(experts, q, dtype=np.int64)
    out[:r] += 1
    return out


def _whole(name: str, v: Any, *, allow_zero: bool) -> int:
    if (
        isinstance(v, bool)
        or not isinstance(v, numbers.Real)
        or not float(v).is_integer()
        or v < (0 if allow_zero else 1)
    ):
        raise InvalidShapeError(f"{name} must be a whole number {'>= 0' if allow_zero else '> 0'}, got {v!r}")
    return int(v)


def size_class(op: str, total_rows: Any, groups: Any, K: Any, N: Any) -> str:
    """torch 2.11's size class of a grouped GEMM, "small", "mid" or "large", which picks its CUTLASS kernel
    (:data:`KERNELS`; the rule of ``dispatch_*_grouped_gemm_on_tile_size`` in aten's GroupMM.cu / ScaledGroupMM.cu).

    Args:
        op: "fwd" (``x[T, K] @ w[G, K, N]``), "dgrad" (classified as fwd with K and N swapped) or "wgrad".
        total_rows: the rows all groups run, ``sum(group_sizes)`` (fp8: after :func:`pad_group_sizes`), >= 0.
        groups: G, > 0. K, N: the GEMM's sizes as in :func:`grouped_gemm`, > 0.

    Raises:
        UnknownOptionError: ``op`` not one of :data:`OPS`. InvalidShapeError: a size not a whole number in range.
    """
    if op not in OPS:
        raise UnknownOptionError(f"op={op!r}: use one of {', '.join(OPS)}")
    T = _whole("total_rows", total_rows, allow_zero=True)
    G, K, N = check_positive_int("groups", groups), check_positive_int("K", K), check_positive_int("N", N)
    if op == "dgrad":
        K, N, op = N, K, "fwd"
    return _size_class(op, T, G, K, N)


def _size_class_pieces(op: str, total: Any, E: int, K: int, N: int) -> list[tuple[str, Any]]:
    """:func:`size_class` for a symbolic ``total`` padded rows over ``E`` groups: ``[(class, condition), ...]``
    in order, the last condition ``True``. ``floor(total / E) <= 128`` is ``total < 129 E``; ``>= 2048`` is
    ``total >= 2048 E``."""
    small_mean = total < (_SMALL_MN + 1) * E
    big_mean = total >= _LARGE_DIM * E
    kb, nb = K >= _LARGE_DIM, N >= _LARGE_DIM
    if op == "fwd":  # (M, K, N) = (mean rows, K, N)
        if N <= _SMALL_MN:
            return [("small", True)]
        rest = [("large", True)] if kb and nb else [("large", big_mean), ("mid", True)] if kb or nb else [("mid", True)]
        return [("small", small_mean), *rest]
    # wgrad: (M, K, N) = (N, mean rows, K)
    if N <= _SMALL_MN or K <= _SMALL_MN:
        return [("small", True)]
    if kb and nb:
        return [("large", True)]
    return [("large", big_mean), ("mid", True)] if kb or nb else [("mid", True)]


def grouped_gemm_time_s_balanced(
    tokens: Any,
    experts: Any,
    top_k: Any,
    K: Any,
    N: Any,
    *,
    dtype: Any = "bf16",
    gpu: Any = "H200",
    scaling: str | None = None,
    op: str = "fwd",
    timing: str = "event",
    time_model: str | None = None,
) -> Any:
    """Seconds of the grouped GEMM of balanced routing (:func:`balanced_group_sizes`): a number for whole
    ``tokens``, a sympy expression (ceilings, floors, Piecewise for the kernel switch) for a sympy ``tokens``.

    The closed form is the same model as the vector path: the first ``r = tokens*top_k mod experts`` groups have
    one row more, so SM 0 carries the most tiles and the most long tiles and is the busiest SM."""
    if not is_symbolic(tokens):
        g = balanced_group_sizes(tokens, experts, top_k)
        return grouped_gemm_time_s(
            g, K, N, dtype=dtype, gpu=gpu, scaling=scaling, op=op, timing=timing, time_model=time_model
        )
    import sympy as sp

    def _ceil(x: Any) -> Any:
        # unevaluated: sympy 1.x rewrites ceiling(a*b/c + ...) of integer-looking sums wrongly (drops the ceiling)
        return sp.ceiling(x, evaluate=False)

    _check_op_timing(op, timing)
    dt = _dtype_key(dtype, scaling)
    K, N = check_positive_int("K", K), check_positive_int("N", N)
    E, k = check_positive_int("experts", experts), check_positive_int("top_k", top_k)
    if dt == "fp8":
        check_fp8_alignment(K, N, "fp8_e4m3")
    if op == "dgrad":
        K, N, op = N, K, "fwd"
    spec = get_gpu(gpu)
    _, ref = _resolve(spec, time_model)
    if ref is None:
        raise UnknownOptionError(
            f"the symbolic balanced path prices the calibrated model only; {spec.name} gets the "
            "roofline estimate: pass a number of tokens"
        )
    p = _shipped()["params"][_class_key(timing, dt, op)]
    A = tokens * k
    q = sp.floor(A / E)
    r = A - E * q

    def pad(n: Any) -> Any:
        return sp.ceiling(sp.Max(n, FP8_GROUP_ALIGN) / FP8_GROUP_ALIGN) * FP8_GROUP_ALIGN if dt == "fp8" else n

    long_, short = pad(q + 1), pad(q)
    total = r * long_ + (E - r) * short
    fmt = "bf16" if dt == "bf16" else "fp8_e4m3"
    rate = (spec.peak_flops_per_s(fmt) / spec.num_sms) / (ref.peak_flops_per_s(fmt) / ref.num_sms)
    P, in_b = spec.num_sms, 1 if dt == "fp8" else 2
    if op == "fwd":
        used = E if dt == "fp8" else sp.Piecewise((E, q > 0), (r, True))
        nbytes = used * K * N * in_b + total * K * in_b + total * N * _OUT_BYTES
    else:
        nbytes = total * (K + N) * in_b + E * K * N * _OUT_BYTES
    memory = nbytes / memory_rate_bytes_per_s(p, spec, ref)

    def compute(cls: str) -> Any:
        cfg = KERNELS[(dt, op, cls)]
        tile = fitted_tile(p, cfg, dt, op, K, N)
        c0, tkb = sp.Float(tile["c0"]), sp.Float(tile["t_kb_s"]) / rate
        if op == "fwd":
            mt = lambda n: cfg.cluster_m * sp.ceiling(sp.ceiling(n / cfg.bm) / cfg.cluster_m)  # noqa: E731
            tiles = -(-N // cfg.bn) * (r * mt(long_) + (E - r) * mt(short))
            per_tile = -(-K // cfg.bk) + c0
            return _throttled(tkb * _sm_bound_load(_ceil(tiles / P) * per_tile, tiles * per_tile / P, p), p)
        nt = _round_up(-(-N // cfg.bm), cfg.cluster_m) * -(-K // cfg.bn)
        n_long, n_all = _ceil(r * nt / P), -(-E * nt // P)
        d1, d2 = sp.ceiling(long_ / cfg.bk), sp.ceiling(short / cfg.bk)
        busiest = n_long * (d1 + c0) + (n_all - n_long) * (d2 + c0)
        mean = nt * (r * (d1 + c0) + (E - r) * (d2 + c0)) / P
        return _throttled(tkb * _sm_bound_load(busiest, mean, p), p)

    qn = sp.Float(p["p"])
    body = lambda c: (c**qn + memory**qn) ** (1 / qn)  # noqa: E731
    pieces = _size_class_pieces(op, total, E, K, N)
    if len(pieces) == 1:
        comp = body(compute(pieces[0][0]))
    else:
        comp = sp.Piecewise(*((body(compute(c)), w) for c, w in pieces))
    return sp.Float(p["t0_s"]) + sp.Float(p["t_group_s"]) * E + comp
