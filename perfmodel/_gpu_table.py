"""The rows of the hardware table and the alias table (imported by :mod:`perfmodel.hardware`).

Counting rules are those of :mod:`perfmodel.hardware`: dense peaks (2:4-sparse datasheet figures
are written as ``x / 2``), 1 FMA = 2 FLOP, int8 TOPS in the FLOP/s fields, B/s, bytes (1 GB = 1e9 B).
Per-GPU figures of 8-GPU boards (HGX/DGX) and 2-GPU superchips are written as ``total / 8`` or
``total / 2``. A peak is ``None`` where the GPU has no native tensor-core path for the format
(no fp8 on A100, no MX/NVFP4 before Blackwell/CDNA 4, no NVFP4 on AMD) or where it could not be
sourced (said in ``Peaks.source``). Every other number carries a source in ``GPUSpec.sources``.

Clocks: ``boost_clock_hz`` is the max SM clock the vendor (or the driver) reports. NVIDIA publishes
no clock for Blackwell parts; there it is the tensor clock implied by the datasheet peak, stated as
arithmetic. ``mem_clock_hz`` follows the convention of CUDA's ``memoryClockRate`` and Triton's
``specs.max_bps``: ``bandwidth = 2 * bus_width_bits * mem_clock_hz / 8``.
"""

from __future__ import annotations

import dataclasses

from .calibrations import ShippedCalibration
from .hardware import (
    AMD_DEFAULT_EFFICIENCY,
    NVIDIA_DEFAULT_EFFICIENCY,
    ORIGINAL_EFFICIENCY,
    Efficiency,
    GPUSpec,
    Peaks,
    default_efficiency,
)

__all__ = ["ALIAS_NAMES", "TABLE"]

# -- documents -------------------------------------------------------------------------------
_H100_DS = "NVIDIA H100 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/h100/"
_HOPPER_WP = (
    "NVIDIA H100 Tensor Core GPU Architecture whitepaper, "
    "https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper"
)
_H200_DS = "NVIDIA H200 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/h200/"
_A100_DS = (
    "NVIDIA A100 Tensor Core GPU datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/"
    "Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
)
_AMPERE_WP = (
    "NVIDIA A100 Tensor Core GPU Architecture whitepaper, https://images.nvidia.com/aem-dam/"
    "en-zz/Solutions/data-center/nvidia-ampere-architecture-whitepaper.pdf"
)
_HGX = "NVIDIA HGX platform datasheet (8-GPU board totals), https://www.nvidia.com/en-us/data-center/hgx/"
_DGX_B300 = "NVIDIA DGX B300 datasheet, https://www.nvidia.com/en-us/data-center/dgx-b300/"
_GB200 = (
    "NVIDIA GB200 NVL72 datasheet (per GB200 superchip = 1 Grace + 2 Blackwell GPUs), "
    "https://www.nvidia.com/en-us/data-center/gb200-nvl72/"
)
_L40S_DS = "NVIDIA L40S datasheet, https://www.nvidia.com/en-us/data-center/l40s/"
_TRITON_SPECS = "triton/profiler/specs.py (Triton 3.6)"
_MI300X = "AMD Instinct MI300X data sheet, https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html"
_MI325X = "AMD Instinct MI325X data sheet, https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html"
_MI355X = "AMD Instinct MI355X data sheet, https://www.amd.com/en/products/accelerators/instinct/mi350/mi355x.html"
_ROCM_SPECS = "ROCm GPU specifications table, https://rocm.docs.amd.com/en/latest/reference/gpu-specs.html"
_CDNA3_WP = (
    "AMD CDNA 3 architecture whitepaper, https://www.amd.com/content/dam/amd/en/documents/"
    "instinct-tech-docs/white-papers/amd-cdna-3-white-paper.pdf"
)
_CDNA4_WP = (
    "AMD CDNA 4 architecture whitepaper, https://www.amd.com/content/dam/amd/en/documents/"
    "instinct-tech-docs/white-papers/amd-cdna-4-architecture-whitepaper.pdf"
)
_BW_RELATION = "derived: datasheet bandwidth * 8 / (2 * bus width), the relation of triton specs.max_bps"

# -- peaks ------------------------------------------------------------------------------------
# H100 SXM5 column: every tensor figure carries the datasheet's "* with sparsity" footnote.
H100_SXM_PEAKS = Peaks(
    fp32=67e12,
    tf32=989e12 / 2,  # datasheet figure assumes 2:4 sparsity
    bf16=1979e12 / 2,  # datasheet figure assumes 2:4 sparsity
    fp16=1979e12 / 2,  # datasheet figure assumes 2:4 sparsity
    fp8_e4m3=3958e12 / 2,  # datasheet figure assumes 2:4 sparsity
    fp8_e5m2=3958e12 / 2,  # same tensor-core rate as E4M3
    int8=3958e12 / 2,  # datasheet TOPS assume 2:4 sparsity
    source=f"{_H100_DS}, SXM column (sparse figures halved)",
)
_H100_PCIE_PEAKS = Peaks(
    fp32=51e12,
    tf32=756e12 / 2,  # datasheet figure assumes 2:4 sparsity
    bf16=1513e12 / 2,  # datasheet figure assumes 2:4 sparsity
    fp16=1513e12 / 2,  # datasheet figure assumes 2:4 sparsity
    fp8_e4m3=3026e12 / 2,  # datasheet figure assumes 2:4 sparsity
    fp8_e5m2=3026e12 / 2,  # same tensor-core rate as E4M3
    int8=3026e12 / 2,  # datasheet TOPS assume 2:4 sparsity
    source=f"{_H100_DS}, PCIe column (sparse figures halved)",
)
_H200_NVL_PEAKS = Peaks(
    fp32=60e12,
    tf32=835e12 / 2,  # datasheet figure assumes 2:4 sparsity
    bf16=1671e12 / 2,  # datasheet figure assumes 2:4 sparsity
    fp16=1671e12 / 2,  # datasheet figure assumes 2:4 sparsity
    fp8_e4m3=3341e12 / 2,  # datasheet figure assumes 2:4 sparsity
    fp8_e5m2=3341e12 / 2,  # same tensor-core rate as E4M3
    int8=3341e12 / 2,  # datasheet TOPS assume 2:4 sparsity
    source=f"{_H200_DS}, H200 NVL column (sparse figures halved)",
)
# The A100 datasheet prints dense and sparse side by side ("312 TF | 624 TF*"); these are the dense.
_A100_PEAKS = Peaks(
    fp32=19.5e12,
    tf32=156e12,
    bf16=312e12,
    fp16=312e12,
    int8=624e12,
    source=f"{_A100_DS}: dense column of each pair; no fp8/MX/NVFP4 tensor-core path on Ampere",
)
# HGX B200 (1000 W per GPU): board totals for 8 GPUs, all tensor figures with sparsity.
_B200_PEAKS = Peaks(
    fp32=600e12 / 8,
    tf32=18e15 / 8 / 2,  # 8-GPU total, datasheet figure assumes 2:4 sparsity
    bf16=36e15 / 8 / 2,  # 8-GPU total, datasheet figure assumes 2:4 sparsity
    fp16=36e15 / 8 / 2,
    fp8_e4m3=72e15 / 8 / 2,  # "FP8/FP6" row, sparse
    fp8_e5m2=72e15 / 8 / 2,
    mxfp8=72e15 / 8 / 2,  # block-scaled fp8 runs at the fp8 rate on Blackwell tensor cores
    mxfp4=144e15 / 8 / 2,  # "FP4" row, sparse; MXFP4 and NVFP4 share the FP4 rate
    nvfp4=144e15 / 8 / 2,
    int8=72e15 / 8 / 2,  # TOPS, sparse
    source=f"{_HGX}, HGX B200 column (1000 W configuration), per GPU = total / 8, sparse figures halved",
)
# GB200 superchip (1200 W per GPU): figures per superchip = 2 GPUs, tensor figures with sparsity.
_GB200_PEAKS = Peaks(
    fp32=180e12 / 2,
    tf32=5e15 / 2 / 2,  # per superchip (2 GPUs), datasheet figure assumes 2:4 sparsity
    bf16=10e15 / 2 / 2,
    fp16=10e15 / 2 / 2,
    fp8_e4m3=20e15 / 2 / 2,
    fp8_e5m2=20e15 / 2 / 2,
    mxfp8=20e15 / 2 / 2,  # block-scaled fp8 runs at the fp8 rate
    mxfp4=40e15 / 2 / 2,  # MXFP4 and NVFP4 share the FP4 rate
    nvfp4=40e15 / 2 / 2,
    int8=20e15 / 2 / 2,
    source=f"{_GB200}: per GPU = superchip / 2, sparse figures halved (GB200 runs at 1200 W per GPU)",
)
# HGX B300: the FP4 row prints sparse and dense ("144 | 108 PFLOPS"); the other rows are sparse.
_B300_PEAKS = Peaks(
    fp32=600e12 / 8,
    tf32=18e15 / 8 / 2,  # 8-GPU total, datasheet figure assumes 2:4 sparsity
    bf16=36e15 / 8 / 2,
    fp16=36e15 / 8 / 2,
    fp8_e4m3=72e15 / 8 / 2,
    fp8_e5m2=72e15 / 8 / 2,
    mxfp8=72e15 / 8 / 2,
    mxfp4=108e15 / 8,  # dense FP4 printed by the datasheet; MXFP4 and NVFP4 share it
    nvfp4=108e15 / 8,
    int8=None,  # Blackwell Ultra cut int8; published figures disagree, see source
    source=f"{_HGX}, HGX B300 column, per GPU = total / 8, sparse figures halved. int8 left None: "
    "NVIDIA's table as quoted by resellers says 2 POPS per 8 GPUs (sparse) while other "
    "per-GPU tables say 0.15 POPS dense; not settled from a primary source",
)
_MI300_PEAKS = Peaks(
    fp32=163.4e12,
    tf32=653.7e12,
    bf16=1307.4e12,
    fp16=1307.4e12,
    fp8_e4m3=2614.9e12,  # = 304 CUs * 4096 FLOP/clk * 2.1 GHz (the rate triton specs.py uses)
    fp8_e5m2=2614.9e12,
    int8=2614.9e12,
    source=f"{_MI300X}: dense peaks (AMD prints sparse separately); also "
    "https://rocm.docs.amd.com/en/latest/conceptual/gpu-arch/mi300.html. No MX/NVFP4 on CDNA 3",
)
_MI355X_PEAKS = Peaks(
    fp32=157.3e12,
    tf32=None,  # no TF32 matrix rate in the MI355X data sheet
    bf16=2516.6e12,  # = 256 CUs * 4096 FLOP/clk * 2.4 GHz
    fp16=2516.6e12,
    fp8_e4m3=5033.2e12,  # = 256 CUs * 8192 FLOP/clk * 2.4 GHz (the rate triton specs.py uses)
    fp8_e5m2=5033.2e12,
    mxfp8=5033.2e12,  # OCP MX fp8 runs at the fp8 rate
    mxfp4=10066.3e12,  # "MXFP4" / "MXFP6" rows, dense
    int8=5033.2e12,
    source=f"{_MI355X}: dense peaks (AMD prints sparse separately); {_CDNA4_WP}. tf32 left None: "
    "the data sheet lists no TF32 matrix rate. No NVFP4 on AMD",
)
# The L40S datasheet prints dense and sparse side by side ("362.05 | 733*"); these are the dense.
_L40S_PEAKS = Peaks(
    fp32=91.6e12,
    tf32=183e12,
    bf16=362.05e12,
    fp16=362.05e12,
    fp8_e4m3=733e12,
    fp8_e5m2=733e12,
    int8=733e12,
    source=f"{_L40S_DS}: dense column of each pair (the sparse one is about twice); no MX/NVFP4 on Ada",
)

_H200_MEASURED = (
    "measured: python -m perfmodel.bench (perfmodel/calibrations/data/h200_*_2026-11-30.json), "
    "H200, 2026-11-30, torch 2.11 / cuBLAS via torch.mm and torch._scaled_mm"
)
#: What large kernels reach on the H200 we measured (the roofline model's fractions; the shipped
#: calibration, used by default, models shape effects on top):
H200_EFFICIENCY = Efficiency(
    gemm_fraction=800e12 / (1979e12 / 2),  # bf16: 95th percentile of 969 GEMMs, 801 TFLOP/s
    gemm_fraction_by_format={
        "fp8_e4m3": 1429e12 / (3958e12 / 2),  # fp8 tensorwise: 95th percentile 1429 TFLOP/s
        "fp8_e5m2": 1429e12 / (3958e12 / 2),
    },
    mem_bw_fraction=4.27e12 / 4.8e12,  # device-to-device copy of 8 GiB: 4.27 TB/s read + write
    launch_overhead_s=0.86e-6,  # profiled duration of a 1-element torch add
    source=_H200_MEASURED,
)


def _nv(name: str):
    return default_efficiency(name, NVIDIA_DEFAULT_EFFICIENCY)


def _amd(name: str):
    return default_efficiency(name, AMD_DEFAULT_EFFICIENCY)


def _a100(name: str, *, mem_gb: float, bw: float, mem_src: str) -> GPUSpec:
    return GPUSpec(
        name=name,
        vendor="NVIDIA",
        device_type="CUDA",
        arch="80",
        peaks=_A100_PEAKS,
        mem_bw_bytes_per_s=bw,
        mem_bytes=mem_gb * 1e9,
        num_sms=108,
        boost_clock_hz=1410e6,
        l2_bytes=40 * 2**20,
        bus_width_bits=5120,
        mem_clock_hz=bw * 8 / (2 * 5120),
        efficiency=_nv(name),
        sources={
            "mem_bw_bytes_per_s": mem_src,
            "mem_bytes": mem_src,
            "num_sms": f"{_AMPERE_WP}: 108 SMs",
            "boost_clock_hz": f"{_AMPERE_WP}: 1410 MHz boost",
            "l2_bytes": f"{_AMPERE_WP}: 40 MB L2",
            "bus_width_bits": f"{_AMPERE_WP}: 5 HBM stacks, 5120-bit",
            "mem_clock_hz": _BW_RELATION,
        },
    )


_BLACKWELL_SMS = (
    "148 SMs, as CUDA reports them (seen in public benchmark logs of 'NVIDIA B200'); not in NVIDIA's datasheets"
)
_IMPLIED_CLOCK = (
    "NVIDIA publishes no clock: tensor clock implied by the dense bf16 peak / "
    "(148 SMs * 8192 FLOP/clk/SM, the per-SM rate of triton specs.py arch '100')"
)

TABLE: tuple[GPUSpec, ...] = (
    GPUSpec(
        name="H100-SXM",
        vendor="NVIDIA",
        device_type="CUDA",
        arch="90",
        peaks=H100_SXM_PEAKS,
        mem_bw_bytes_per_s=3.35e12,
        mem_bytes=80e9,
        num_sms=132,
        boost_clock_hz=1.98e9,
        l2_bytes=50 * 2**20,
        bus_width_bits=5120,
        mem_clock_hz=2.619e9,
        efficiency=ORIGINAL_EFFICIENCY,
        sources={
            "mem_bw_bytes_per_s": _H100_DS,
            "mem_bytes": _H100_DS,
            "num_sms": f"{_HOPPER_WP}: 132 SMs on SXM5",
            "boost_clock_hz": f"{_HOPPER_WP}: 1980 MHz max boost (SXM5)",
            "l2_bytes": f"{_HOPPER_WP}: 50 MB L2",
            "bus_width_bits": f"{_HOPPER_WP}: 5 HBM3 stacks, 5120-bit",
            "mem_clock_hz": "CUDA memoryClockRate on H100 SXM5 (2619 MHz); 2*5120*2.619e9/8 = 3.35 TB/s",
        },
    ),
    GPUSpec(
        name="H100-PCIe",
        vendor="NVIDIA",
        device_type="CUDA",
        arch="90",
        peaks=_H100_PCIE_PEAKS,
        mem_bw_bytes_per_s=2.0e12,
        mem_bytes=80e9,
        num_sms=114,
        boost_clock_hz=1755e6,
        l2_bytes=50 * 2**20,
        bus_width_bits=5120,
        efficiency=ORIGINAL_EFFICIENCY,
        sources={
            "mem_bw_bytes_per_s": f"{_H100_DS}, PCIe column: 2 TB/s",
            "mem_bytes": _H100_DS,
            "num_sms": f"{_HOPPER_WP}: 114 SMs on PCIe",
            "boost_clock_hz": f"{_TRITON_SPECS}: '114 sms and 1755mhz' of H100 PCIe (Proton's reference)",
            "l2_bytes": f"{_HOPPER_WP}: 50 MB L2",
            "bus_width_bits": f"{_HOPPER_WP}: 5 HBM2e stacks, 5120-bit",
        },
    ),
    GPUSpec(
        name="H100-2.4TB",
        vendor="NVIDIA",
        device_type="CUDA",
        arch="90",
        peaks=Peaks(
            fp32=67e12,
            tf32=989e12 / 2,
            bf16=989e12,
            fp16=989e12,
            fp8_e4m3=1979e12,
            fp8_e5m2=1979e12,
            int8=3958e12 / 2,
            source="torchao float8 roofline_utils.py: H100 bf16 989e12, fp8 1979e12 "
            "('divide by 2 because no sparsity' of the H100 datasheet)",
        ),
        mem_bw_bytes_per_s=2.4e12,
        mem_bytes=80e9,
        num_sms=132,
        boost_clock_hz=1.98e9,
        l2_bytes=50 * 2**20,
        efficiency=ORIGINAL_EFFICIENCY,
        sources={
            "mem_bw_bytes_per_s": "torchao float8 roofline_utils.py: '2.4 TB per second, custom to "
            "Meta's H100 variant'",
            "mem_bytes": _H100_DS,
            "num_sms": "as H100-SXM",
            "boost_clock_hz": "as H100-SXM",
            "l2_bytes": "as H100-SXM",
        },
    ),
    GPUSpec(
        name="H200",
        vendor="NVIDIA",
        device_type="CUDA",
        arch="90",
        peaks=dataclasses.replace(
            H100_SXM_PEAKS,
            source=f"{_H200_DS}, SXM column: the same tensor-core rates as H100 SXM (sparse figures halved)",
        ),
        mem_bw_bytes_per_s=4.8e12,
        mem_bytes=141e9,
        num_sms=132,
        boost_clock_hz=1.98e9,
        l2_bytes=50 * 2**20,
        bus_width_bits=6016,
        mem_clock_hz=3.201e9,
        efficiency=H200_EFFICIENCY,
        calibration=ShippedCalibration("h200.json"),
        sources={
            "mem_bw_bytes_per_s": f"{_H200_DS}: 4.8 TB/s HBM3e",
            "mem_bytes": f"{_H200_DS}: 141 GB HBM3e",
            "num_sms": "measured: torch.cuda.get_device_properties on an H200, 2026-10-28 (132 SMs)",
            "boost_clock_hz": "measured: nvidia-smi on an H200, 2026-10-28 (1980 MHz under load)",
            "l2_bytes": f"same GH100 die as H100 SXM5; {_HOPPER_WP}: 50 MB L2",
            "bus_width_bits": "Proton device metadata of an H200 profile (tests/data): bus_width 6016",
            "mem_clock_hz": "Proton device metadata of an H200 profile (tests/data): 3201000 kHz",
        },
    ),
    GPUSpec(
        name="H200-NVL",
        vendor="NVIDIA",
        device_type="CUDA",
        arch="90",
        peaks=_H200_NVL_PEAKS,
        mem_bw_bytes_per_s=4.8e12,
        mem_bytes=141e9,
        num_sms=132,
        boost_clock_hz=1671e12 / 2 / (132 * 4096),
        l2_bytes=50 * 2**20,
        efficiency=_nv("H200-NVL"),
        sources={
            "mem_bw_bytes_per_s": f"{_H200_DS}, H200 NVL column: 4.8 TB/s",
            "mem_bytes": f"{_H200_DS}, H200 NVL column: 141 GB",
            "num_sms": "not in NVIDIA's datasheet: 132 SMs as on H200 SXM (same GH100 configuration per "
            "third-party listings); unverified on a device",
            "boost_clock_hz": "no clock in the datasheet: tensor clock implied by dense bf16 / (132 SMs * "
            f"4096 FLOP/clk/SM, the Hopper SM rate of {_HOPPER_WP}); the driver's max "
            "clock is higher",
            "l2_bytes": f"same GH100 die as H100 SXM5; {_HOPPER_WP}: 50 MB L2",
        },
    ),
    _a100("A100-SXM-40GB", mem_gb=40, bw=1555e9, mem_src=f"{_A100_DS}, A100 40GB SXM: 40 GB HBM2, 1,555 GB/s"),
    _a100("A100-SXM-80GB", mem_gb=80, bw=2039e9, mem_src=f"{_A100_DS}, A100 80GB SXM: 80 GB HBM2e, 2,039 GB/s"),
    _a100("A100-PCIe-40GB", mem_gb=40, bw=1555e9, mem_src=f"{_A100_DS}, A100 40GB PCIe: 40 GB HBM2, 1,555 GB/s"),
    _a100("A100-PCIe-80GB", mem_gb=80, bw=1935e9, mem_src=f"{_A100_DS}, A100 80GB PCIe: 80 GB HBM2e, 1,935 GB/s"),
    GPUSpec(
        name="B200",
        vendor="NVIDIA",
        device_type="CUDA",
        arch="100",
        peaks=_B200_PEAKS,
        mem_bw_bytes_per_s=64e12 / 8,
        mem_bytes=1440e9 / 8,
        num_sms=148,
        boost_clock_hz=36e15 / 8 / 2 / (148 * 8192),
        efficiency=_nv("B200"),
        sources={
            "mem_bw_bytes_per_s": f"{_HGX}, HGX B200: 64 TB/s per 8 GPUs",
            "mem_bytes": f"{_HGX}, HGX B200: 1.4 TB (1,440 GB) per 8 GPUs",
            "num_sms": _BLACKWELL_SMS,
            "boost_clock_hz": _IMPLIED_CLOCK,
        },
    ),
    GPUSpec(
        name="B300",
        vendor="NVIDIA",
        device_type="CUDA",
        arch="103",
        peaks=_B300_PEAKS,
        mem_bw_bytes_per_s=8e12,
        mem_bytes=288e9,
        num_sms=148,
        boost_clock_hz=36e15 / 8 / 2 / (148 * 8192),
        efficiency=_nv("B300"),
        sources={
            "mem_bw_bytes_per_s": f"{_HGX}, HGX B300: 8 TB/s per GPU",
            "mem_bytes": f"{_DGX_B300}: 2.3 TB HBM3e per 8 GPUs = 288 GB per GPU",
            "num_sms": "148 SMs as CUDA reports them on 'NVIDIA B300 SXM6 AC' (public test fixture); "
            "the full Blackwell Ultra die has 160",
            "boost_clock_hz": _IMPLIED_CLOCK,
        },
    ),
    GPUSpec(
        name="GB200",
        vendor="NVIDIA",
        device_type="CUDA",
        arch="100",
        peaks=_GB200_PEAKS,
        mem_bw_bytes_per_s=16e12 / 2,
        mem_bytes=384e9 / 2,
        num_sms=148,
        boost_clock_hz=10e15 / 2 / 2 / (148 * 8192),
        efficiency=_nv("GB200"),
        sources={
            "mem_bw_bytes_per_s": f"{_GB200}: 16 TB/s per superchip",
            "mem_bytes": f"{_GB200}: up to 384 GB HBM3e per superchip (later revisions of the page say 372 GB)",
            "num_sms": _BLACKWELL_SMS,
            "boost_clock_hz": _IMPLIED_CLOCK,
        },
    ),
    GPUSpec(
        name="L40S",
        vendor="NVIDIA",
        device_type="CUDA",
        arch="89",
        peaks=_L40S_PEAKS,
        mem_bw_bytes_per_s=864e9,
        mem_bytes=48e9,
        num_sms=142,
        boost_clock_hz=2520e6,
        efficiency=_nv("L40S"),
        sources={
            "mem_bw_bytes_per_s": f"{_L40S_DS}: 864 GB/s",
            "mem_bytes": f"{_L40S_DS}: 48 GB GDDR6",
            "num_sms": f"{_L40S_DS}: 18,176 CUDA cores = 142 SMs * 128",
            "boost_clock_hz": "not in NVIDIA's datasheet: 2520 MHz boost per the TechPowerUp GPU database "
            "(https://www.techpowerup.com/gpu-specs/l40s.c4173)",
        },
    ),
    GPUSpec(
        name="MI300X",
        vendor="AMD",
        device_type="HIP",
        arch="gfx942",
        peaks=_MI300_PEAKS,
        mem_bw_bytes_per_s=5.3e12,
        mem_bytes=192e9,
        num_sms=304,
        boost_clock_hz=2100e6,
        l2_bytes=32 * 2**20,
        bus_width_bits=8192,
        efficiency=_amd("MI300X"),
        sources={
            "mem_bw_bytes_per_s": f"{_MI300X}: 5.3 TB/s",
            "mem_bytes": f"{_MI300X}: 192 GB HBM3",
            "num_sms": f"{_MI300X}: 304 compute units",
            "boost_clock_hz": f"{_MI300X}: 2100 MHz peak engine clock",
            "l2_bytes": f"{_ROCM_SPECS}: 4 MB L2 per XCD * 8 (plus 256 MB Infinity Cache)",
            "bus_width_bits": f"{_CDNA3_WP}: 8 HBM3 stacks * 1024 bit",
        },
    ),
    GPUSpec(
        name="MI325X",
        vendor="AMD",
        device_type="HIP",
        arch="gfx942",
        peaks=dataclasses.replace(
            _MI300_PEAKS, source=f"{_MI325X}: dense peaks, the same as MI300X (same CDNA 3 compute dies)"
        ),
        mem_bw_bytes_per_s=6e12,
        mem_bytes=256e9,
        num_sms=304,
        boost_clock_hz=2100e6,
        l2_bytes=32 * 2**20,
        bus_width_bits=8192,
        efficiency=_amd("MI325X"),
        sources={
            "mem_bw_bytes_per_s": f"{_MI325X}: 6 TB/s",
            "mem_bytes": f"{_MI325X}: 256 GB HBM3E",
            "num_sms": f"{_MI325X}: 304 compute units",
            "boost_clock_hz": f"{_MI325X}: 2100 MHz peak engine clock",
            "l2_bytes": f"{_ROCM_SPECS}: 4 MB L2 per XCD * 8 (plus 256 MB Infinity Cache)",
            "bus_width_bits": f"{_MI325X}: 8 HBM3E stacks * 1024 bit",
        },
    ),
    GPUSpec(
        name="MI355X",
        vendor="AMD",
        device_type="HIP",
        arch="gfx950",
        peaks=_MI355X_PEAKS,
        mem_bw_bytes_per_s=8e12,
        mem_bytes=288e9,
        num_sms=256,
        boost_clock_hz=2400e6,
        l2_bytes=32 * 2**20,
        bus_width_bits=8192,
        efficiency=_amd("MI355X"),
        sources={
            "mem_bw_bytes_per_s": f"{_MI355X}: 8 TB/s",
            "mem_bytes": f"{_MI355X}: 288 GB HBM3E",
            "num_sms": f"{_ROCM_SPECS}: 256 CUs (32 per XCD)",
            "boost_clock_hz": f"{_MI355X}: 2400 MHz peak engine clock",
            "l2_bytes": f"{_ROCM_SPECS}: 4 MB L2 per XCD * 8 (plus 256 MB Infinity Cache)",
            "bus_width_bits": f"{_CDNA4_WP}: 8 HBM3E stacks * 1024 bit",
        },
    ),
)

#: canonical name -> names accepted by get_gpu (normalised when the alias table is built).
#: Device strings are what ``torch.cuda.get_device_name()`` / nvidia-smi print; where each was seen:
#: [rp] RunPod GPU type ids (= device names) in public launch scripts; [smi] nvidia-smi / collect_env
#: logs in public repos; [fx] public test fixtures; [lead] seen on our own H200, 2026-10-28.
ALIAS_NAMES: dict[str, tuple[str, ...]] = {
    "H100-SXM": ("h100", "h100-sxm", "h100-sxm5", "NVIDIA H100 80GB HBM3"),  # [rp][smi]
    "H100-PCIe": ("h100-pcie", "NVIDIA H100 PCIe"),  # [rp] and a peak-FLOPs table in a public repo
    "H100-2.4TB": ("h100-2.4tbps",),
    "H200": ("h200", "h200-sxm", "h200-141gb", "NVIDIA H200"),  # [lead][rp]
    "H200-NVL": ("h200nvl", "NVIDIA H200 NVL"),  # marketing name; device string not seen in logs
    "A100-SXM-40GB": ("a100-40gb", "a100-sxm4-40gb", "NVIDIA A100-SXM4-40GB"),  # [smi]
    "A100-SXM-80GB": ("a100", "a100-sxm", "a100-80gb", "a100-sxm4-80gb", "NVIDIA A100-SXM4-80GB"),  # [rp][smi]
    "A100-PCIe-40GB": ("a100-pcie-40gb", "NVIDIA A100-PCIE-40GB"),  # [smi] (upper-case PCIE)
    "A100-PCIe-80GB": ("a100-pcie", "a100-80gb-pcie", "NVIDIA A100 80GB PCIe"),  # [rp]
    "B200": ("b200", "hgx-b200", "dgx-b200", "NVIDIA B200"),  # [fx][rp]
    "B300": ("b300", "hgx-b300", "dgx-b300", "NVIDIA B300 SXM6 AC"),  # [fx]
    "GB200": ("gb200", "gb200-nvl72", "NVIDIA GB200"),  # [fx] (slurm/benchmark metadata)
    "L40S": ("l40s", "NVIDIA L40S"),  # [rp]
    "MI300X": ("mi300x", "instinct-mi300x", "AMD Instinct MI300X"),  # [smi] (ROCm device name)
    "MI325X": ("mi325x", "instinct-mi325x", "AMD Instinct MI325X"),  # AMD product name; not seen in logs
    "MI355X": ("mi355x", "instinct-mi355x", "AMD Instinct MI355X"),  # README device listings
}
