"""Hopper (sm90) rows of the hardware table: H100, H200, H800, H20 and GH200 variants.

Counting rules: :mod:`perfmodel.specs.table`. One calibration measured on an H200 applies to all of
them (:mod:`perfmodel.models.registry`), rescaled by the figures here, so every figure a transfer uses —
peaks, HBM bandwidth, SMs, clock, power — carries a source, with its confidence where it is weak.
"""

from __future__ import annotations

import dataclasses

from .sources import (
    _GH200_DS,
    _H100_DS,
    _H200_DS,
    _HOPPER_WP,
    _MLPERF_INF,
    _OUR_H200,
    _TRITON_SPECS,
    NVLINK4_H800,
    NVLINK4_HGX,
    _nv,
    bridge,
)
from .spec import ORIGINAL_EFFICIENCY, Efficiency, GPUSpec, Peaks

__all__ = ["H100_SXM_PEAKS", "H200_EFFICIENCY", "HOPPER", "HOPPER_ALIASES"]

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
_H100_NVL_PEAKS = Peaks(
    fp32=60e12,
    tf32=835e12 / 2,  # datasheet figure assumes 2:4 sparsity
    bf16=1671e12 / 2,  # datasheet figure assumes 2:4 sparsity
    fp16=1671e12 / 2,  # datasheet figure assumes 2:4 sparsity
    fp8_e4m3=3341e12 / 2,  # datasheet figure assumes 2:4 sparsity
    fp8_e5m2=3341e12 / 2,  # same tensor-core rate as E4M3
    int8=3341e12 / 2,  # datasheet TOPS assume 2:4 sparsity
    source=f"{_H100_DS}, H100 NVL column (sparse figures halved)",
)
# NVIDIA publishes no H20 datasheet; its figures circulate as dense numbers (no sparse variant quoted).
_H20_PEAKS = Peaks(
    fp32=44e12,
    tf32=74e12,
    bf16=148e12,
    fp16=148e12,
    fp8_e4m3=296e12,
    fp8_e5m2=296e12,
    int8=296e12,
    source="no public NVIDIA datasheet: dense figures of the LMSYS / Ant Group table (H20 FP16/BF16 148, FP8 296 "
    "TFLOP/s, https://lmsys.org/blog/2025-09-26-sglang-ant-group) and press reports (fp32 44, tf32 74); "
    "low confidence",
)

_H200_MEASURED = (
    "measured: python -m perfmodel.bench (benchmarks/data/h200_2026-11-30/h200_*_2026-11-30.json.gz), "
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

HOPPER: tuple[GPUSpec, ...] = (
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
        power_w=700.0,
        interconnect=NVLINK4_HGX,
        efficiency=ORIGINAL_EFFICIENCY,
        sources={
            "power_w": f"{_H100_DS}: max TDP up to 700 W (configurable)",
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
        power_w=350.0,
        interconnect=bridge(
            600e9,
            2,
            128e9,
            "H100 PCIe datasheet (as reprinted at "
            "https://archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html): NVLink bridge 600 GB/s, "
            "PCIe Gen5 128 GB/s; low confidence",
        ),
        efficiency=ORIGINAL_EFFICIENCY,
        sources={
            "power_w": "NVIDIA H100 PCIe product brief PB-11133-001_v02: max TDP 350 W",
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
        power_w=500.0,
        interconnect=NVLINK4_HGX,
        efficiency=ORIGINAL_EFFICIENCY,
        sources={
            "power_w": "torchtitan benchmark pages describe Meta's H100s as 96 GB HBM2e, 2.4 TB/s, 500 W "
            "(https://github.com/pytorch/torchtitan/tree/main/benchmarks)",
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
        l2_bytes=60 * 2**20,
        bus_width_bits=6016,
        mem_clock_hz=3.201e9,
        power_w=700.0,
        interconnect=NVLINK4_HGX,
        efficiency=H200_EFFICIENCY,
        sources={
            "power_w": f"{_H200_DS}: up to 700 W; power.limit 700 W read by nvidia-smi on our H200 "
            "(benchmarks/data/h200_2026-11-30/README.md)",
            "mem_bw_bytes_per_s": f"{_H200_DS}: 4.8 TB/s HBM3e",
            "mem_bytes": f"{_H200_DS}: 141 GB HBM3e",
            "num_sms": "measured: torch.cuda.get_device_properties on an H200, 2026-10-28 (132 SMs)",
            "boost_clock_hz": "measured: nvidia-smi on an H200, 2026-10-28 (1980 MHz under load)",
            "l2_bytes": f"measured: torch.cuda.get_device_properties on an H200 reports 60 MiB ({_OUR_H200}); "
            "six HBM stacks enabled, against five and 50 MB on H100 SXM",
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
        boost_clock_hz=1785e6,
        power_w=600.0,
        interconnect=bridge(
            900e9,
            4,
            128e9,
            f"{_H200_DS}, H200 NVL column: 2- or 4-way NVLink bridge 900 GB/s per GPU, "
            f"PCIe Gen5 128 GB/s (a 4-way group here)",
        ),
        efficiency=_nv("H200-NVL"),
        sources={
            "power_w": f"{_H200_DS}, H200 NVL column: up to 600 W (configurable); {_MLPERF_INF}: 'H200-NVL TGP 600W'",
            "mem_bw_bytes_per_s": f"{_H200_DS}, H200 NVL column: 4.8 TB/s",
            "mem_bytes": f"{_H200_DS}, H200 NVL column: 141 GB",
            "num_sms": "not in NVIDIA's datasheet: multiprocessor_count 132 in a public device report "
            "(xzwgit/gpu-flops-bench nvidia/results/20260810T090857Z/report.json @ 5a32ae9e)",
            "boost_clock_hz": "not in NVIDIA's datasheet: max SM clock 1785 MHz in a public device report; the "
            "same report measured 845-853 TFLOP/s bf16 (cuBLASLt 16384^3), above the datasheet-implied "
            "835.5, so the tensor clock exceeds 1671e12 / 2 / (132 * 4096 FLOP/clk) = 1.545 GHz",
        },
    ),
    GPUSpec(
        name="H100-NVL",
        vendor="NVIDIA",
        device_type="CUDA",
        arch="90",
        peaks=_H100_NVL_PEAKS,
        mem_bw_bytes_per_s=3.9e12,
        mem_bytes=94e9,
        num_sms=132,
        boost_clock_hz=1785e6,
        l2_bytes=60 * 2**20,
        power_w=400.0,
        interconnect=bridge(
            600e9, 2, 128e9, f"{_H100_DS}, H100 NVL column: NVLink 600 GB/s (2-card bridge), PCIe Gen5 128 GB/s"
        ),
        efficiency=_nv("H100-NVL"),
        sources={
            "mem_bw_bytes_per_s": f"{_H100_DS}, H100 NVL column: 3.9 TB/s",
            "mem_bytes": f"{_H100_DS}, H100 NVL column: 94 GB HBM3",
            "num_sms": "not in NVIDIA's datasheet: 132 SMs in several public device reports of 'H100 NVL'",
            "boost_clock_hz": "not in NVIDIA's datasheet: 1785 MHz max SM clock in a public device report",
            "l2_bytes": "not in NVIDIA's datasheet: 60 MB L2 in public device reports (six HBM stacks)",
            "power_w": f"{_H100_DS}, H100 NVL column: 350-400 W (configurable); the maximum is used",
        },
    ),
    GPUSpec(
        name="H800",
        vendor="NVIDIA",
        device_type="CUDA",
        arch="90",
        peaks=dataclasses.replace(
            H100_SXM_PEAKS,
            source="no public NVIDIA datasheet: channel reprints of NVIDIA's H800 SXM table list the H100 SXM "
            "tensor rates (FP64 cut); the LMSYS / Ant Group table (lmsys.org/blog/2025-09-26-sglang-ant-group) "
            "gives H800 dense FP16 989 and FP8 1979 TFLOP/s",
        ),
        mem_bw_bytes_per_s=3.35e12,
        mem_bytes=80e9,
        num_sms=132,
        boost_clock_hz=1.98e9,
        l2_bytes=50 * 2**20,
        power_w=700.0,
        interconnect=NVLINK4_H800,
        efficiency=_nv("H800"),
        sources={
            "mem_bw_bytes_per_s": "no public NVIDIA datasheet: 3352 GB/s in the LMSYS / Ant Group table",
            "mem_bytes": "NVIDIA AI Enterprise vGPU documentation lists 'H800 SXM5 80 GB'",
            "num_sms": "not published: 132 SMs and 50 MB L2 in public device reports of 'H800'",
            "boost_clock_hz": "not published: assumed the H100 SXM max clock (1980 MHz); unverified",
            "l2_bytes": "not published: 50 MB L2 in public device reports",
            "power_w": "no public NVIDIA datasheet: 700 W in channel reprints of NVIDIA's H800 table",
        },
    ),
    GPUSpec(
        name="H800-PCIe",
        vendor="NVIDIA",
        device_type="CUDA",
        arch="90",
        peaks=dataclasses.replace(
            _H100_PCIE_PEAKS,
            source="no public NVIDIA datasheet: a reprint of NVIDIA's H800 PCIe table "
            "(https://afox-corp.com/show-118-621-1.html) lists the H100 PCIe tensor rates",
        ),
        mem_bw_bytes_per_s=2.0e12,
        mem_bytes=80e9,
        num_sms=114,
        boost_clock_hz=1755e6,
        l2_bytes=50 * 2**20,
        power_w=350.0,
        interconnect=bridge(
            400e9,
            2,
            128e9,
            "reprint of NVIDIA's H800 PCIe table (afox-corp.com): NVLink 400 GB/s, PCIe Gen5 128 GB/s; low confidence",
        ),
        efficiency=_nv("H800-PCIe"),
        sources={
            "mem_bw_bytes_per_s": "reprint of NVIDIA's H800 PCIe table (afox-corp.com): 2.0 TB/s",
            "mem_bytes": "reprint of NVIDIA's H800 PCIe table (afox-corp.com): 80 GB",
            "num_sms": "not published: 114 SMs and 50 MiB L2 in public device reports of 'NVIDIA H800 PCIe'",
            "boost_clock_hz": "not published: assumed the H100 PCIe clock (1755 MHz); unverified",
            "l2_bytes": "not published: 50 MiB L2 in public device reports",
            "power_w": "reprint of NVIDIA's H800 PCIe table (afox-corp.com): 350 W",
        },
    ),
    GPUSpec(
        name="H20",
        vendor="NVIDIA",
        device_type="CUDA",
        arch="90",
        peaks=_H20_PEAKS,
        mem_bw_bytes_per_s=4.0e12,
        mem_bytes=96e9,
        num_sms=78,
        boost_clock_hz=1.98e9,
        power_w=400.0,
        interconnect=dataclasses.replace(
            NVLINK4_HGX,
            source="no public NVIDIA datasheet: full-rate NVLink 4 (900 GB/s) and HGX 8-GPU "
            "boards in press reports; low confidence",
        ),
        efficiency=_nv("H20"),
        sources={
            "mem_bw_bytes_per_s": "no public NVIDIA datasheet: 4.0 TB/s in press reports and the LMSYS / Ant Group "
            "table; low confidence",
            "mem_bytes": "NVIDIA AI Enterprise vGPU documentation lists 'H20 SXM5 96 GB' (and a 141 GB part)",
            "num_sms": "torch multi_processor_count 78 in public device reports of 'NVIDIA H20' and 'H20-3e'",
            "boost_clock_hz": "not published: assumed the Hopper SXM max clock (1980 MHz). The dense peak is not "
            "SMs x clock x 4096 (148e12 / (78 * 4096) = 0.46 GHz): the tensor rate is capped per SM, so no clock "
            "is derived from it",
            "power_w": "no public NVIDIA datasheet: 400 W in press reports; low confidence",
        },
    ),
    GPUSpec(
        name="GH200",
        vendor="NVIDIA",
        device_type="CUDA",
        arch="90",
        peaks=dataclasses.replace(H100_SXM_PEAKS, source=f"{_GH200_DS}: the H100 SXM tensor rates (dense column)"),
        mem_bw_bytes_per_s=4.0e12,
        mem_bytes=96e9,
        num_sms=132,
        boost_clock_hz=1.98e9,
        efficiency=_nv("GH200"),
        sources={
            "mem_bw_bytes_per_s": f"{_GH200_DS}: 96 GB HBM3 part, up to 4 TB/s",
            "mem_bytes": f"{_GH200_DS}: 96 GB HBM3",
            "num_sms": "132 SMs at 1980 MHz in a public device report of 'NVIDIA GH200 480GB' "
            "(mredenti/PowerCapping configuration/OpenCL_benchmark.md @ f57c11cb)",
            "boost_clock_hz": "1980 MHz in the same device report",
            "power_w": f"unknown: {_GH200_DS} gives only the module power (CPU + GPU + memory, 450-1000 W)",
        },
    ),
    GPUSpec(
        name="GH200-144GB",
        vendor="NVIDIA",
        device_type="CUDA",
        arch="90",
        peaks=dataclasses.replace(H100_SXM_PEAKS, source=f"{_GH200_DS}: the H100 SXM tensor rates (dense column)"),
        mem_bw_bytes_per_s=4.9e12,
        mem_bytes=144e9,
        num_sms=132,
        boost_clock_hz=1.98e9,
        l2_bytes=60 * 2**20,
        efficiency=_nv("GH200-144GB"),
        sources={
            "mem_bw_bytes_per_s": f"{_GH200_DS}: 144 GB HBM3e part, up to 4.9 TB/s",
            "mem_bytes": f"{_GH200_DS}: 144 GB HBM3e",
            "num_sms": "132 SMs in public device reports of GH200 (multi_processor_count == 132)",
            "boost_clock_hz": "as the 96 GB part (same GPU, 1980 MHz)",
            "l2_bytes": "L2_cache_size == 62914560 (60 MiB) in a public device fixture of the 144 GB part",
            "power_w": f"unknown: {_GH200_DS} gives only the module power (CPU + GPU + memory, 450-1000 W)",
        },
    ),
)

#: canonical name -> names accepted by get_gpu. Device strings are what torch.cuda.get_device_name() and
#: nvidia-smi print: [drv] NVIDIA's driver device-name list (_NV_DRIVER_NAMES); [rp] RunPod GPU type ids in
#: public launch scripts; [smi] nvidia-smi / collect_env logs in public repos; [lead] seen on our own H200.
HOPPER_ALIASES: dict[str, tuple[str, ...]] = {
    "H100-SXM": ("h100", "h100-sxm", "h100-sxm5", "NVIDIA H100 80GB HBM3"),  # [rp][smi]
    "H100-PCIe": ("h100-pcie", "NVIDIA H100 PCIe"),  # [rp] and a peak-FLOPs table in a public repo
    "H100-2.4TB": ("h100-2.4tbps",),
    "H200": ("h200", "h200-sxm", "h200-141gb", "NVIDIA H200"),  # [lead][rp]
    "H200-NVL": ("h200nvl", "NVIDIA H200 NVL"),  # [drv]
    "H100-NVL": ("h100nvl", "NVIDIA H100 NVL"),  # [drv]
    "H800": ("h800", "h800-sxm", "NVIDIA H800"),  # [drv]
    "H800-PCIe": ("h800-pcie", "NVIDIA H800 PCIe"),  # [drv]
    "H20": ("h20", "NVIDIA H20"),  # [drv]; the 141 GB "NVIDIA H20-3e" is not in the table
    "GH200": ("gh200", "gh200-96gb", "NVIDIA GH200 480GB"),  # [drv]: 96 GB HBM3 + 480 GB LPDDR5X
    "GH200-144GB": ("gh200-144g", "NVIDIA GH200 144G HBM3e"),  # [drv]
}
