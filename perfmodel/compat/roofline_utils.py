"""torchao's original float8 roofline model (2024), same names, signatures, defaults and numbers.

Built on perfmodel: the constants come from the ``H100-2.4TB`` entry of the hardware table and
its :data:`~perfmodel.specs.gpu.ORIGINAL_EFFICIENCY`, the kernel byte counts from
:func:`perfmodel.float8.recipes.tensor_cast_kernels`, the FLOPs from :func:`perfmodel.gemm.gemm_flops`.
Every function takes Python numbers, numpy arrays or sympy expressions.

Differences from the original, all on bad input only: an invalid scaling type raises
``ValueError`` (the original used ``assert``), and an unsupported dtype in
:func:`get_gemm_time_sympy` raises :class:`~perfmodel.errors.UnsupportedFormatError` (the original
failed with ``UnboundLocalError``). ``dtype`` may also be one of our format names.
"""

from __future__ import annotations

from typing import Any

from ..counting import gemm_flops
from ..errors import UnsupportedFormatError
from ..float8.recipes import tensor_cast_kernels
from ..formats import get_format
from ..models.base import ORIGINAL
from ..specs.gpu import GPUS

__all__ = [
    "BYTES_PER_EL_BF16",
    "BYTES_PER_EL_FLOAT8",
    "H100_BF16_PEAK_TOPS",
    "H100_FP8_PEAK_TOPS",
    "H100_PCT_ACHIEVABLE_GEMM_TOPS",
    "H100_PCT_ACHIEVABLE_MEM_BW",
    "H100_PEAK_MEM_BW_BYTES_SEC",
    "TRITON_KERNEL_1_ELEMENT_TIME_SEC",
    "get_float8_mem_sympy",
    "get_gemm_time_sympy",
    "get_tensor_memory_traffic_bytes",
]

_GPU = GPUS["H100-2.4TB"]

BYTES_PER_EL_FLOAT8 = int(get_format("fp8_e4m3").bytes_per_element)  # 1
BYTES_PER_EL_BF16 = int(get_format("bf16").bytes_per_element)  # 2

# https://www.nvidia.com/en-us/data-center/h100/, divided by 2 because the datasheet assumes sparsity
H100_BF16_PEAK_TOPS = _GPU.peak_flops_per_s("bf16")  # 989e12
H100_FP8_PEAK_TOPS = _GPU.peak_flops_per_s("fp8_e4m3")  # 1979e12
# 2.4 TB/s, the H100 variant the original model was written for
H100_PEAK_MEM_BW_BYTES_SEC = _GPU.mem_bw_bytes_per_s  # 2.4e12
H100_PCT_ACHIEVABLE_GEMM_TOPS = _GPU.efficiency.gemm_fraction  # 0.6
H100_PCT_ACHIEVABLE_MEM_BW = _GPU.efficiency.mem_bw_fraction  # 0.92
TRITON_KERNEL_1_ELEMENT_TIME_SEC = _GPU.launch_overhead_s  # 0.002 * 0.001

_SCALING_TYPES = ("dynamic", "delayed")


def get_tensor_memory_traffic_bytes(
    dim0: Any,
    dim1: Any,
    scaling_type: str,
    fuse_with_prev: bool = False,
    model_torch_compile_limitations: bool = False,
) -> Any:
    """Bytes read + written to cast one bf16 ``[dim0, dim1]`` tensor to float8 (row and column
    major), counting the kernels the original model counts (its launch-only kernels move ~0 bytes).

    See :func:`perfmodel.float8.recipes.tensor_cast_kernels` for the kernel-by-kernel dataflow.
    """
    kernels = tensor_cast_kernels(
        "x",
        dim0,
        dim1,
        scaling_type,
        fuse_with_prev=fuse_with_prev,
        torch_compile_limitations=model_torch_compile_limitations,
    )
    return sum((k.bytes for k in kernels if not k.launch_only), 0)


def get_gemm_time_sympy(M: Any, K: Any, N: Any, dtype: Any) -> Any:
    """Seconds for the three GEMMs of a Linear's fwd+bwd at 60 % of the H100 peak of ``dtype``.

    ``(2·M·K·N + 2·M·N·K + 2·K·M·N) / peak / 0.6``; ``dtype`` is ``torch.bfloat16``,
    ``torch.float8_e4m3fn``, ``torch.float8_e5m2`` or one of our names for those formats.
    """
    fmt = get_format(dtype)
    if fmt.name not in ("bf16", "fp8_e4m3", "fp8_e5m2"):
        raise UnsupportedFormatError(
            f"get_gemm_time_sympy models bf16 and float8 (e4m3, e5m2) GEMMs only, got {dtype!r}"
        )
    gemm_ops = gemm_flops(M, K, N) + gemm_flops(M, N, K) + gemm_flops(K, M, N)
    return gemm_ops / _GPU.peak_flops_per_s(fmt) / _GPU.efficiency.gemm(fmt)


def get_float8_mem_sympy(
    M: Any,
    K: Any,
    N: Any,
    model_torch_compile_limitations: bool = False,
    scaling_type_input: str = "dynamic",
    scaling_type_weight: str = "dynamic",
    scaling_type_grad_output: str = "dynamic",
) -> Any:
    """Seconds of float8 casting overhead for a Linear's fwd+bwd on the 2.4 TB/s H100.

    Casts: input ``[M, K]`` (amax fused with the previous op), weight ``[K, N]`` (saved from forward
    to backward), grad_output ``[M, N]`` (fused with the previous op); the grad_weight GEMM reuses
    casts made earlier. Time = bytes / (2.4e12 · 0.92) + (tiny kernels) · 2 µs.
    """
    for name, value in (
        ("scaling_type_input", scaling_type_input),
        ("scaling_type_weight", scaling_type_weight),
        ("scaling_type_grad_output", scaling_type_grad_output),
    ):
        if value not in _SCALING_TYPES:
            raise ValueError(f"{name} must be one of {', '.join(_SCALING_TYPES)}, got {value!r}")
    tc = model_torch_compile_limitations
    casts = (
        tensor_cast_kernels("input", M, K, scaling_type_input, fuse_with_prev=True, torch_compile_limitations=tc)
        + tensor_cast_kernels("weight", K, N, scaling_type_weight, fuse_with_prev=False, torch_compile_limitations=tc)
        + tensor_cast_kernels(
            "grad_output", M, N, scaling_type_grad_output, fuse_with_prev=True, torch_compile_limitations=tc
        )
    )
    fp8_total_mem = sum((k.bytes for k in casts if not k.launch_only), 0)
    num_extra_kernels = sum(1 for k in casts if k.launch_only)
    fp8_mem_time_s = ORIGINAL.memory_kernel_time_s(fp8_total_mem, gpu=_GPU)
    return fp8_mem_time_s + num_extra_kernels * ORIGINAL.launch_time_s(gpu=_GPU)
