"""The grouped GEMM's kernel model: the CUTLASS kernel torch 2.11 picks (:data:`KERNELS`), the rows it runs
(padding), the per-SM tile loads, the bytes, and the shipped H200 parameters with the time formula
(:func:`model_time_s`). The user-facing calls, their input checks and provenance are in :mod:`.grouped`; the
formula is described there and in ``docs/moe.md``.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np

from .._files import CALIBRATIONS, load_json
from ..errors import CalibrationError, IneligibleShapeError, UnknownGPUError
from ..specs.gpu import GPUSpec

__all__ = [
    "CALIBRATION_FILE",
    "FP8_GROUP_ALIGN",
    "KERNELS",
    "SCHEMA",
    "SIZE_CLASSES",
    "KernelConfig",
    "fitted_tile",
    "kernel_config",
    "load_params",
    "memory_rate_bytes_per_s",
    "model_time_s",
    "pad_group_sizes",
    "sm_loads",
]

#: the shipped calibration (in :data:`perfmodel._files.CALIBRATIONS`)
CALIBRATION_FILE = "h200_grouped.json"
#: its schema: 2 since 2026-12-04 (torch's three size classes, the ``sm_weight`` / ``sm_norm`` load terms)
SCHEMA = 2
#: fp8 token groups are padded to ``max(n, 16)`` rounded up to 16 rows, as torchtitan/torchao do
#: (``TOKEN_GROUP_ALIGN_SIZE_M``) and as our sweep ran them (README of benchmarks/data/h200_2026-12-03)
FP8_GROUP_ALIGN = 16
#: the SM count the calibration was measured on (H200, torch.cuda.get_device_properties)
_REF_SMS = 132
#: the memory kernels' output element size: bf16 out for both ops (``out_dtype`` of every record), bytes
_OUT_BYTES = 2


@dataclasses.dataclass(frozen=True)
class KernelConfig:
    """The CUTLASS kernel torch 2.11 runs: schedule and tile (BM x BN x BK, elements)."""

    name: str
    schedule: str
    bm: int
    bn: int
    bk: int
    cluster_m: int = 2


#: (dtype, op, size class) -> the kernel. The classes are torch 2.11's dispatch on the problem's (M, K, N)
#: (:func:`_size_class`, ``dispatch_*_grouped_gemm_on_tile_size`` in aten/src/ATen/native/cuda/GroupMM.cu and
#: ScaledGroupMM.cu): "small" when M <= 128 or N <= 128, "large" when two of M, K, N are >= 2048, "mid" otherwise. On
#: Hopper bf16 runs Pingpong 64x128x128 for small and Cooperative 128x256x64 for the rest; fp8 with fast accumulation
#: (torchao's call) runs Pingpong 64x128x128 for small, Cooperative 256x128x128 for large and Cooperative 128x256x64
#: for mid (wgrad "small" is the exception below). Checked against the mangled kernel names of every profiled record
#: of our four sweeps (h200_2026-12-03, -03f, -04f, -04t: 4,869 records, no exception; the MMA atom and stage count
#: tell the two fp8 Cooperative kernels apart). BK of the Pingpong and fp8 tiles as torch's source states it.
_BF16_PINGPONG = KernelConfig("bf16_pingpong_64x128", "pingpong", 64, 128, 128)
_BF16_COOPERATIVE = KernelConfig("bf16_cooperative_128x256", "cooperative", 128, 256, 64)
_FP8_PINGPONG = KernelConfig("fp8_pingpong_64x128", "pingpong", 64, 128, 128)
_FP8_COOPERATIVE_128X256 = KernelConfig("fp8_cooperative_128x256", "cooperative", 128, 256, 64)
_FP8_COOPERATIVE_256X128 = KernelConfig("fp8_cooperative_256x128", "cooperative", 256, 128, 128)
KERNELS: dict[tuple[str, str, str], KernelConfig] = {
    ("bf16", "fwd", "small"): _BF16_PINGPONG,
    ("bf16", "fwd", "mid"): _BF16_COOPERATIVE,
    ("bf16", "fwd", "large"): _BF16_COOPERATIVE,
    # wgrad "small" (K or N <= 128, no expert shape): torch runs Pingpong 64x128x128, which our sweep never ran for
    # wgrad; it is priced with the fitted Cooperative tile, an assumption (docs/moe.md says so)
    ("bf16", "wgrad", "small"): _BF16_COOPERATIVE,
    ("bf16", "wgrad", "mid"): _BF16_COOPERATIVE,
    ("bf16", "wgrad", "large"): _BF16_COOPERATIVE,
    ("fp8", "fwd", "small"): _FP8_PINGPONG,
    ("fp8", "fwd", "mid"): _FP8_COOPERATIVE_128X256,
    ("fp8", "fwd", "large"): _FP8_COOPERATIVE_256X128,
    ("fp8", "wgrad", "small"): _FP8_COOPERATIVE_256X128,
    ("fp8", "wgrad", "mid"): _FP8_COOPERATIVE_128X256,
    ("fp8", "wgrad", "large"): _FP8_COOPERATIVE_256X128,
}
#: torch's thresholds (GroupMM.cu / ScaledGroupMM.cu): small at M or N <= 128, large at two of M, K, N >= 2048
_SMALL_MN = 128
_LARGE_DIM = 2048
#: the size classes of :data:`KERNELS`
SIZE_CLASSES = ("small", "mid", "large")


def _size_class(op: str, total_rows: int, groups: int, K: int, N: int) -> str:
    """torch's size class of a grouped GEMM: "small", "mid" or "large" (see :data:`KERNELS`); unchecked (the
    model's inner loop; :func:`perfmodel.moe.grouped.size_class` is the checked public form).

    The (M, K, N) torch classifies: ``fwd`` (2D x 3D) ``M = total_rows // groups`` (the mean rows per group,
    integer division as in torch), K, N; ``wgrad`` (2D x 2D, computed as ``dy.T @ x``) ``M = N``, ``K = total_rows
    // groups``, ``N = K``. ``total_rows`` are the padded rows the kernel runs."""
    mean = int(total_rows) // int(groups)
    m, k, n = (mean, K, N) if op == "fwd" else (N, mean, K)
    if m <= _SMALL_MN or n <= _SMALL_MN:
        return "small"
    big = (m >= _LARGE_DIM) + (k >= _LARGE_DIM) + (n >= _LARGE_DIM)
    return "large" if big >= 2 else "mid"


# -------------------------------------------------------------------------------------------------
# shapes the kernel runs
# -------------------------------------------------------------------------------------------------
def pad_group_sizes(group_sizes: Any, dtype: str = "bf16") -> np.ndarray:
    """The rows each group runs with: fp8 ``max(n, 16)`` rounded up to 16 (:data:`FP8_GROUP_ALIGN`), bf16 as given."""
    g = np.asarray(group_sizes, dtype=np.int64)
    if dtype != "fp8":
        return g
    return -(-np.maximum(g, FP8_GROUP_ALIGN) // FP8_GROUP_ALIGN) * FP8_GROUP_ALIGN


def kernel_config(
    dtype: str, op: str, total_rows: int, groups: int, K: int | None = None, N: int | None = None
) -> KernelConfig:
    """The kernel of :data:`KERNELS` for ``dtype`` ("bf16"/"fp8"), ``op`` ("fwd"/"wgrad"), the padded rows and
    the problem's K and N (:func:`_size_class`).

    Calling it without ``K`` and ``N`` (the form before 2026-12-04) is deprecated: it assumes the large class for a
    non-small shape, which is wrong for fp8 shapes of torch's "mid" class, and warns."""
    if K is None or N is None:
        import warnings

        warnings.warn(
            "kernel_config(dtype, op, total_rows, groups) without K and N is deprecated: torch's kernel choice "
            "depends on K and N too (fp8 'mid' shapes run a 128x256 tile); pass K=..., N=...",
            DeprecationWarning,
            stacklevel=2,
        )
        mean = int(total_rows) // int(groups)
        cls = "small" if op == "fwd" and mean <= _SMALL_MN else "large"
        return KERNELS[(dtype, op, cls)]
    return KERNELS[(dtype, op, _size_class(op, total_rows, groups, K, N))]


def sm_loads(rows: np.ndarray, K: int, N: int, op: str, cfg: KernelConfig, sms: int) -> tuple[np.ndarray, np.ndarray]:
    """Per SM: (k-blocks summed over its tiles, its number of tiles), tiles dealt round robin in group order.

    ``fwd``: group i has ``ceil(rows_i/BM) * ceil(N/BN)`` tiles of ``ceil(K/BK)`` k-blocks; ``wgrad``: every
    group has ``ceil(N/BM) * ceil(K/BN)`` tiles of ``ceil(rows_i/BK)`` k-blocks. Returns two arrays of ``sms``.
    """
    rows = np.asarray(rows, dtype=np.int64)
    if op == "fwd":
        tiles = _round_up(-(-rows // cfg.bm), cfg.cluster_m) * -(-N // cfg.bn)
        kb = np.full(rows.shape, -(-K // cfg.bk), dtype=np.int64)
    else:
        tiles = np.full(rows.shape, _round_up(-(-N // cfg.bm), cfg.cluster_m) * -(-K // cfg.bn), dtype=np.int64)
        kb = -(-rows // cfg.bk)
    # tile t goes to SM t % sms; group i covers tiles [start_i, start_i + tiles_i)
    start = np.concatenate(([0], np.cumsum(tiles)[:-1]))
    j = np.arange(sms)
    # tiles of group i on SM j: count of t in [s, s+n) with t % sms == j
    s, n = start[:, None], tiles[:, None]
    count = (s + n - 1 - j + sms) // sms - (s - 1 - j + sms) // sms
    count = np.maximum(count, 0)
    return (count * kb[:, None]).sum(axis=0), count.sum(axis=0)


def _round_up(n: Any, m: int) -> Any:
    """``n`` rounded up to a multiple of ``m`` (the cluster's M extent: a cluster of 2 CTAs covers 2 M-tiles)."""
    return -(-n // m) * m


def _throttled(compute: Any, p: dict[str, Any]) -> Any:
    """Compute time under the power cap: ``c * (1 + a * c / (c + tau))``. A long compute-dense kernel runs at
    lower SM clocks (our sweep's nvidia-smi log: SW power cap active in 57 % of the samples, SM clock 1250-1980
    MHz under load); a short one, between L2 flushes, at boost. ``a``: the slow-down at full duty, ``tau``: the
    compute time at half of it (both fitted)."""
    return compute * (1.0 + p["throttle"] * compute / (compute + p["throttle_tau_s"]))


def _sm_bound_load(busiest: Any, mean: Any, p: dict[str, Any]) -> Any:
    """The k-blocks a kernel's compute is priced at: the busiest SM's load (the per-SM critical path, weighted by
    ``sm_weight``) and the mean load over all SMs (the whole GPU's operand throughput) as an ``sm_norm``-norm,
    ``((w * busiest)^s + mean^s)^(1/s)``. A partly filled last wave costs less than a full one because the few
    SMs still running share the L2 and memory bandwidth of all of them; the fit says how much (both fitted)."""
    w, s = p["sm_weight"], p["sm_norm"]
    return ((w * busiest) ** s + mean**s) ** (1.0 / s)


def _bytes(rows: np.ndarray, K: int, N: int, op: str, in_bytes: float) -> float:
    """Device-memory bytes: ``fwd`` reads the weights of the non-empty groups and the activations, writes the output;
    ``wgrad`` reads both activations and writes G weight gradients (bf16)."""
    T = float(rows.sum())
    G, used = rows.size, float(np.count_nonzero(rows))
    if op == "fwd":
        return used * K * N * in_bytes + T * K * in_bytes + T * N * _OUT_BYTES
    return T * (K + N) * in_bytes + G * K * N * _OUT_BYTES


# -------------------------------------------------------------------------------------------------
# parameters
# -------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _shipped() -> dict[str, Any]:
    data = load_json(CALIBRATIONS / CALIBRATION_FILE, what="grouped-GEMM calibration", error=CalibrationError)
    if data.get("schema") != SCHEMA:
        raise CalibrationError(
            f"{CALIBRATION_FILE}: schema {data.get('schema')!r}, this perfmodel reads schema {SCHEMA}"
        )
    return data


def load_params() -> dict[str, Any]:
    """The shipped calibration (``perfmodel/calibrations/h200_grouped.json``), read on first use."""
    return _shipped()


def fitted_tile(p: dict[str, Any], cfg: KernelConfig, dtype: str, op: str, K: int, N: int) -> dict[str, float]:
    """The fitted ``{"t_kb_s", "c0"}`` of kernel ``cfg`` in one class's parameters ``p``. A class whose fit never saw
    the kernel torch runs for this shape (a calibration fitted on sweeps without it) is a named error, not another
    kernel's numbers; the shipped calibration has every kernel :data:`KERNELS` maps to."""
    tile = p["tiles"].get(cfg.name)
    if tile is None:
        raise IneligibleShapeError(
            f"{dtype} {op} with K={K}, N={N} runs torch's {cfg.name} kernel, which this calibration's {op} fit never "
            f"saw (it has {', '.join(sorted(p['tiles']))}); refit on a sweep that runs it, or pass "
            "time_model='roofline' for a labelled estimate"
        )
    return tile


def _class_key(timing: str, dtype: str, op: str) -> str:
    return f"{timing}/{dtype}/{op}"


def memory_rate_bytes_per_s(p: dict[str, Any], spec: GPUSpec, ref: GPUSpec) -> float:
    """The rate (B/s) one class's memory term streams at on ``spec``, from its fitted ``mem_eff`` on ``ref``.

    On ``ref`` it is ``mem_eff * ref's HBM bandwidth``. Off it:

    * a class fitted at or above ``ref``'s copy speed (``ref.achievable_mem_bw_bytes_per_s``: the fwd classes,
      ``mem_eff`` 1.0) is HBM-bound and scales with the HBM bandwidth: ``mem_eff * spec's bandwidth``;
    * a class fitted below it (on the H200's 4.27 TB/s copy: the event wgrad classes, bf16 at 3.95 TB/s and fp8 at
      2.71, and kernel-time fp8 wgrad at 2.53; kernel-time bf16 wgrad, 4.43, is above) is bound by its SMs, not by
      HBM: it keeps ``ref``'s rate scaled by SM
      throughput (:meth:`GPUSpec.sm_throughput_ratio`, SMs x clock), up to ``spec``'s copy speed. This is the rule
      the block's eager kernels and the dense model's casts follow. It was chosen on 2026-12-06 after the H100 SXM's
      isolated grouped GEMMs of benchmarks/data/h100_2026-12-06r8 had been seen, where fp8 wgrad calls under
      1 TFLOP were priced 20-26 % slow with every memory term scaled by HBM (post-selection on those rows; the
      registered test, ``benchmarks/registered/grouped10_h100.json``, measured on another H100 SXM on 2026-12-07:
      fp8 wgrad 4.2 / 10.0 % MdAPE / p90 over 472 calls of eight other families, 20.1 / 30.1 % with HBM scaling;
      docs/moe.md).

    On ``ref`` itself both cases give ``mem_eff * ref's bandwidth``: nothing the H200 prices moves.

    Raises:
        UnknownGPUError: ``spec`` or ``ref`` is not a :class:`GPUSpec` (a name: ``perfmodel.get_gpu`` first).
        CalibrationError: ``p`` has no ``mem_eff`` in (0, 1].
    """
    for name, gpu in (("spec", spec), ("ref", ref)):
        if not isinstance(gpu, GPUSpec):
            raise UnknownGPUError(f"{name} must be a GPUSpec (for a name: perfmodel.get_gpu({gpu!r})), got {gpu!r}")
    eff = p.get("mem_eff") if isinstance(p, dict) else None
    if isinstance(eff, bool) or not isinstance(eff, (int, float)) or not 0.0 < eff <= 1.0:
        raise CalibrationError(f"a grouped class's mem_eff must be a fraction in (0, 1], got {eff!r}")
    fitted = float(eff) * ref.mem_bw_bytes_per_s
    if fitted >= ref.achievable_mem_bw_bytes_per_s:
        return float(eff) * spec.mem_bw_bytes_per_s
    return min(fitted * spec.sm_throughput_ratio(ref), spec.achievable_mem_bw_bytes_per_s)


def model_time_s(
    rows: np.ndarray, K: int, N: int, op: str, dtype: str, p: dict[str, Any], spec: GPUSpec, ref: GPUSpec
) -> tuple[float, dict[str, Any]]:
    """One padded vector's time with parameters ``p`` (one class of the calibration) on ``spec`` (rescaled from
    ``ref``, the GPU the parameters were fitted on: per-SM tile rate by peak/SM, memory by
    :func:`memory_rate_bytes_per_s`)."""
    cfg = kernel_config(dtype, op, int(rows.sum()), rows.size, K, N)
    tile = fitted_tile(p, cfg, dtype, op, K, N)
    fmt = "bf16" if dtype == "bf16" else "fp8_e4m3"
    rate = (spec.peak_flops_per_s(fmt) / spec.num_sms) / (ref.peak_flops_per_s(fmt) / ref.num_sms)
    D, C = sm_loads(rows, K, N, op, cfg, spec.num_sms)
    L = D + tile["c0"] * C
    load = float(_sm_bound_load(float(L.max()), float(L.mean()), p))
    compute = _throttled(tile["t_kb_s"] / rate * load, p)
    nbytes = _bytes(rows, K, N, op, 1.0 if dtype == "fp8" else 2.0)
    memory = nbytes / memory_rate_bytes_per_s(p, spec, ref)
    q = p["p"]
    body = (compute**q + memory**q) ** (1.0 / q)
    t = p["t0_s"] + p["t_group_s"] * rows.size + body
    tiles = int(C.sum())
    bound = "compute" if compute >= memory else "memory"
    if p["t0_s"] + p["t_group_s"] * rows.size > body:
        bound = "launch"
    return t, {"cfg": cfg, "tiles": tiles, "waves": -(-tiles // spec.num_sms), "bytes": nbytes, "bound": bound}
