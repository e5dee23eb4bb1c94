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
from ..errors import CalibrationError
from ..specs.gpu import GPUSpec

__all__ = [
    "CALIBRATION_FILE",
    "FP8_GROUP_ALIGN",
    "KERNELS",
    "KernelConfig",
    "kernel_config",
    "load_params",
    "model_time_s",
    "pad_group_sizes",
    "sm_loads",
]

#: the shipped calibration (in :data:`perfmodel._files.CALIBRATIONS`)
CALIBRATION_FILE = "h200_grouped.json"
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


#: (dtype, op, small) -> the kernel. Read from the mangled kernel names of the profiled sweep
#: (grouped_gemm_kernels.json.gz, 2250 records): fwd picks Pingpong when mean rows per group <= 128 (no
#: exception in 844 fwd records), wgrad always Cooperative. BK of the Pingpong and fp8 tiles is a mangled
#: back-reference: 128 is taken (torch's GroupMM.cu / ScaledGroupMM.cu); c0 absorbs a wrong guess.
KERNELS: dict[tuple[str, str, bool], KernelConfig] = {
    ("bf16", "fwd", True): KernelConfig("bf16_pingpong_64x128", "pingpong", 64, 128, 128),
    ("bf16", "fwd", False): KernelConfig("bf16_cooperative_128x256", "cooperative", 128, 256, 64),
    ("bf16", "wgrad", True): KernelConfig("bf16_cooperative_128x256", "cooperative", 128, 256, 64),
    ("bf16", "wgrad", False): KernelConfig("bf16_cooperative_128x256", "cooperative", 128, 256, 64),
    ("fp8", "fwd", True): KernelConfig("fp8_pingpong_64x128", "pingpong", 64, 128, 128),
    ("fp8", "fwd", False): KernelConfig("fp8_cooperative_256x128", "cooperative", 256, 128, 128),
    ("fp8", "wgrad", True): KernelConfig("fp8_cooperative_256x128", "cooperative", 256, 128, 128),
    ("fp8", "wgrad", False): KernelConfig("fp8_cooperative_256x128", "cooperative", 256, 128, 128),
}
#: measured threshold: Pingpong while sum(rows) <= 128 * G
_SMALL_MEAN_ROWS = 128


# -------------------------------------------------------------------------------------------------
# shapes the kernel runs
# -------------------------------------------------------------------------------------------------
def pad_group_sizes(group_sizes: Any, dtype: str = "bf16") -> np.ndarray:
    """The rows each group runs with: fp8 ``max(n, 16)`` rounded up to 16 (:data:`FP8_GROUP_ALIGN`), bf16 as given."""
    g = np.asarray(group_sizes, dtype=np.int64)
    if dtype != "fp8":
        return g
    return -(-np.maximum(g, FP8_GROUP_ALIGN) // FP8_GROUP_ALIGN) * FP8_GROUP_ALIGN


def kernel_config(dtype: str, op: str, total_rows: int, groups: int) -> KernelConfig:
    """The kernel of :data:`KERNELS` for ``dtype`` ("bf16"/"fp8"), ``op`` ("fwd"/"wgrad") and the padded rows."""
    return KERNELS[(dtype, op, total_rows <= _SMALL_MEAN_ROWS * groups)]


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
    if data.get("schema") != 1:
        raise CalibrationError(f"{CALIBRATION_FILE}: schema {data.get('schema')!r}, this perfmodel reads schema 1")
    return data


def load_params() -> dict[str, Any]:
    """The shipped calibration (``perfmodel/calibrations/h200_grouped.json``), read on first use."""
    return _shipped()


def _class_key(timing: str, dtype: str, op: str) -> str:
    return f"{timing}/{dtype}/{op}"


def model_time_s(
    rows: np.ndarray, K: int, N: int, op: str, dtype: str, p: dict[str, Any], spec: GPUSpec, ref: GPUSpec
) -> tuple[float, dict[str, Any]]:
    """One padded vector's time with parameters ``p`` (one class of the calibration) on ``spec`` (rescaled from
    ``ref``, the GPU the parameters were fitted on: per-SM tile rate by peak/SM, memory by bandwidth)."""
    cfg = kernel_config(dtype, op, int(rows.sum()), rows.size)
    tile = p["tiles"][cfg.name]
    fmt = "bf16" if dtype == "bf16" else "fp8_e4m3"
    rate = (spec.peak_flops_per_s(fmt) / spec.num_sms) / (ref.peak_flops_per_s(fmt) / ref.num_sms)
    D, C = sm_loads(rows, K, N, op, cfg, spec.num_sms)
    load = float(np.max(D + tile["c0"] * C))
    compute = _throttled(tile["t_kb_s"] / rate * load, p)
    nbytes = _bytes(rows, K, N, op, 1.0 if dtype == "fp8" else 2.0)
    memory = nbytes / (p["mem_eff"] * spec.mem_bw_bytes_per_s)
    q = p["p"]
    body = (compute**q + memory**q) ** (1.0 / q)
    t = p["t0_s"] + p["t_group_s"] * rows.size + body
    tiles = int(C.sum())
    bound = "compute" if compute >= memory else "memory"
    if p["t0_s"] + p["t_group_s"] * rows.size > body:
        bound = "launch"
    return t, {"cfg": cfg, "tiles": tiles, "waves": -(-tiles // spec.num_sms), "bytes": nbytes, "bound": bound}
