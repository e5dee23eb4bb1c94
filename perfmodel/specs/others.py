"""Rows of the hardware table for every architecture but Hopper: Ampere, Ada, Blackwell, CDNA 3/4.

Counting rules: :mod:`perfmodel.specs.table`. These GPUs predict with an estimate built from the
measured Hopper calibration plus published GEMM and bandwidth figures (:mod:`perfmodel.models.estimated`),
rescaled by the figures here.
"""

from __future__ import annotations

import dataclasses

from .sources import (
    _A100_DS,
    _A100_TDP,
    _AMPERE_WP,
    _BU_DS,
    _BW_DS,
    _BW_RELATION,
    _CDNA3_WP,
    _CDNA4_WP,
    _DGX_B300,
    _GB200,
    _HGX,
    _L40S_DS,
    _MI300X,
    _MI325X,
    _MI355X,
    _MLE,
    _MLPERF_INF,
    _ROCM_SPECS,
    NVLINK3_HGX,
    NVLINK5_HGX,
    _amd,
    _nv,
    bridge,
    xgmi_mesh,
)
from .spec import GPUSpec, Interconnect, Peaks

__all__ = ["OTHERS", "OTHER_ALIASES"]

# -- peaks ------------------------------------------------------------------------------------
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
    int8=307e12 / 2,  # Blackwell Ultra cut int8: "307 TOPS" per HGX B300 GPU, with the sparsity footnote
    source=f"{_HGX}, HGX B300 column, per GPU = total / 8, sparse figures halved; int8 from {_BU_DS}",
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


def _a100(name: str, *, mem_gb: float, bw: float, mem_src: str, power_w: float, sxm: bool) -> GPUSpec:
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
        power_w=power_w,
        interconnect=NVLINK3_HGX
        if sxm
        else bridge(600e9, 2, 64e9, f"{_A100_DS}: NVLink bridge for 2 GPUs 600 GB/s, PCIe Gen4 64 GB/s"),
        efficiency=_nv(name),
        sources={
            "mem_bw_bytes_per_s": mem_src,
            "mem_bytes": mem_src,
            "num_sms": f"{_AMPERE_WP}: 108 SMs",
            "boost_clock_hz": f"{_AMPERE_WP}: 1410 MHz boost",
            "l2_bytes": f"{_AMPERE_WP}: 40 MB L2",
            "bus_width_bits": f"{_AMPERE_WP}: 5 HBM stacks, 5120-bit",
            "mem_clock_hz": _BW_RELATION,
            "power_w": _A100_TDP,
        },
    )


_BLACKWELL_SMS = (
    "148 SMs, as CUDA reports them (seen in public benchmark logs of 'NVIDIA B200' and 'NVIDIA B300 SXM6 AC'); "
    "not in NVIDIA's datasheets"
)
_IMPLIED_CLOCK = (
    "NVIDIA publishes no clock: tensor clock implied by the dense bf16 peak / "
    "(148 SMs * 8192 FLOP/clk/SM, the per-SM rate of triton specs.py arch '100')"
)

OTHERS: tuple[GPUSpec, ...] = (
    _a100(
        "A100-SXM-40GB",
        mem_gb=40,
        bw=1555e9,
        mem_src=f"{_A100_DS}, A100 40GB SXM: 40 GB HBM2, 1,555 GB/s",
        power_w=400.0,
        sxm=True,
    ),
    _a100(
        "A100-SXM-80GB",
        mem_gb=80,
        bw=2039e9,
        mem_src=f"{_A100_DS}, A100 80GB SXM: 80 GB HBM2e, 2,039 GB/s",
        power_w=400.0,
        sxm=True,
    ),
    _a100(
        "A100-PCIe-40GB",
        mem_gb=40,
        bw=1555e9,
        mem_src=f"{_A100_DS}, A100 40GB PCIe: 40 GB HBM2, 1,555 GB/s",
        power_w=250.0,
        sxm=False,
    ),
    _a100(
        "A100-PCIe-80GB",
        mem_gb=80,
        bw=1935e9,
        mem_src=f"{_A100_DS}, A100 80GB PCIe: 80 GB HBM2e, 1,935 GB/s",
        power_w=300.0,
        sxm=False,
    ),
    GPUSpec(
        name="B200",
        vendor="NVIDIA",
        device_type="CUDA",
        arch="100",
        peaks=_B200_PEAKS,
        mem_bw_bytes_per_s=7.7e12,
        mem_bytes=1440e9 / 8,
        num_sms=148,
        boost_clock_hz=1965e6,
        l2_bytes=126 * 2**20,
        power_w=1000.0,
        interconnect=NVLINK5_HGX,
        efficiency=_nv("B200"),
        sources={
            "mem_bw_bytes_per_s": f"{_BW_DS}, HGX B200: 7.7 TB/s per GPU (the older {_HGX} says 64 TB/s per 8 GPUs)",
            "mem_bytes": f"{_HGX}, HGX B200: 1.4 TB (1,440 GB) per 8 GPUs",
            "num_sms": _BLACKWELL_SMS,
            "boost_clock_hz": "NVIDIA publishes no clock: 1965 MHz max SM clock as the device reports it "
            f"(nvidia-smi in public benchmark logs; {_MLE}, clock table)",
            "l2_bytes": "not in NVIDIA's datasheets: L2_cache_size 126 MB in torch device properties of "
            "'NVIDIA B200' (public logs)",
            "power_w": f"{_BW_DS}: HGX B200 configurable up to 1,000 W; {_MLPERF_INF}: 'B200 TGP 1000W'",
        },
    ),
    GPUSpec(
        name="B300",
        vendor="NVIDIA",
        device_type="CUDA",
        arch="103",
        peaks=_B300_PEAKS,
        mem_bw_bytes_per_s=7.7e12,
        mem_bytes=270e9,
        num_sms=148,
        boost_clock_hz=36e15 / 8 / 2 / (148 * 8192),
        power_w=1100.0,
        interconnect=dataclasses.replace(
            NVLINK5_HGX,
            pcie_bw_bytes_per_s=256e9 / 2,
            source=f"{_BU_DS}: 5th Gen NVLink 1.8 TB/s, PCIe Gen6 256 GB/s; HGX B300: 8 GPUs",
        ),
        efficiency=_nv("B300"),
        sources={
            "mem_bw_bytes_per_s": f"{_BU_DS}, HGX B300: 7.7 TB/s per GPU (the older {_HGX} says 8 TB/s)",
            "mem_bytes": f"{_BU_DS}, HGX B300: 270 GB HBM3e per GPU (the {_DGX_B300} says 2.3 TB per 8)",
            "power_w": f"{_BU_DS}: HGX B300 configurable up to 1,100 W",
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
        mem_bytes=186e9,
        num_sms=152,
        boost_clock_hz=10e15 / 2 / 2 / (152 * 8192),
        l2_bytes=126 * 2**20,
        power_w=1200.0,
        interconnect=dataclasses.replace(
            NVLINK5_HGX,
            gpus_per_node=4,
            domain_gpus=72,
            source=f"{_BW_DS}: 5th Gen NVLink 1.8 TB/s; GB200 NVL72: 4 GPUs per compute tray, 72 "
            f"in one NVLink domain ({_MLPERF_INF})",
        ),
        efficiency=_nv("GB200"),
        sources={
            "mem_bw_bytes_per_s": f"{_GB200}: 16 TB/s per superchip; {_BW_DS}: 8 TB/s per GPU",
            "mem_bytes": f"{_BW_DS}, GB200 NVL72: 186 GB HBM3e per GPU (the older superchip page: 384 GB per 2)",
            "num_sms": "152 SMs, as CUDA reports them in many independent public benchmark logs of 'NVIDIA GB200'; "
            "not in NVIDIA's datasheets",
            "boost_clock_hz": "NVIDIA publishes no clock (device reports disagree: 1965 and 2062 MHz): tensor clock "
            "implied by the dense bf16 peak / (152 SMs * 8192 FLOP/clk/SM, the per-SM rate of triton specs.py "
            "arch '100')",
            "l2_bytes": f"{_MLE}, cache table: 126 MB per GPU (GB200, from NVIDIA's Blackwell tuning guide)",
            "power_w": f"{_BW_DS}: configurable up to 1,200 W; {_MLPERF_INF}: 'GB200 TGP 1200W'",
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
        power_w=350.0,
        interconnect=Interconnect(
            kind="pcie",
            bw_bytes_per_s=64e9 / 2,
            gpus_per_node=8,
            pcie_bw_bytes_per_s=64e9 / 2,
            source=f"{_L40S_DS}: no NVLink, PCIe Gen4 x16 64 GB/s bidirectional",
        ),
        efficiency=_nv("L40S"),
        sources={
            "power_w": f"{_L40S_DS}: max power consumption 350 W; {_MLPERF_INF}: 'L40S TGP 350W'",
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
        power_w=750.0,
        interconnect=xgmi_mesh(
            64e9,
            f"{_MI300X} platform page via {_MLE}: 7 Infinity Fabric links of 128 GB/s (64 GB/s each "
            f"way) to the 7 peers of an 8-GPU node, no switch",
        ),
        efficiency=_amd("MI300X"),
        sources={
            "power_w": f"{_MI300X}: 750 W typical board power (peak); MLPerf system name "
            "'AMD Instinct MI300X-NPS1-SPX-192GB-750W'",
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
        power_w=1000.0,
        interconnect=xgmi_mesh(
            64e9, f"{_MI325X}: the MI300X platform's Infinity Fabric (7 links of 128 GB/s, 64 each way), 8 GPUs"
        ),
        efficiency=_amd("MI325X"),
        sources={
            "power_w": f"{_MI325X}: 1000 W typical board power (peak)",
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
        power_w=1400.0,
        interconnect=xgmi_mesh(
            76.8e9, f"{_MI355X} via {_MLE}: 7 Infinity Fabric links of 153.6 GB/s (76.8 each way), 8 GPUs"
        ),
        efficiency=_amd("MI355X"),
        sources={
            "power_w": f"{_MI355X}: 1400 W total board power; {_MLPERF_INF}: 'MI355X TGP 1400W'",
            "mem_bw_bytes_per_s": f"{_MI355X}: 8 TB/s",
            "mem_bytes": f"{_MI355X}: 288 GB HBM3E",
            "num_sms": f"{_ROCM_SPECS}: 256 CUs (32 per XCD)",
            "boost_clock_hz": f"{_MI355X}: 2400 MHz peak engine clock",
            "l2_bytes": f"{_ROCM_SPECS}: 4 MB L2 per XCD * 8 (plus 256 MB Infinity Cache)",
            "bus_width_bits": f"{_CDNA4_WP}: 8 HBM3E stacks * 1024 bit",
        },
    ),
)

#: canonical name -> names accepted by get_gpu (markers as in perfmodel.specs.hopper; [fx]: public test fixtures)
OTHER_ALIASES: dict[str, tuple[str, ...]] = {
    "A100-SXM-40GB": ("a100-40gb", "a100-sxm4-40gb", "NVIDIA A100-SXM4-40GB"),  # [smi]
    "A100-SXM-80GB": ("a100", "a100-sxm", "a100-80gb", "a100-sxm4-80gb", "NVIDIA A100-SXM4-80GB"),  # [rp][smi]
    "A100-PCIe-40GB": ("a100-pcie-40gb", "NVIDIA A100-PCIE-40GB"),  # [smi] (upper-case PCIE)
    "A100-PCIe-80GB": ("a100-pcie", "a100-80gb-pcie", "NVIDIA A100 80GB PCIe"),  # [rp]
    "B200": ("b200", "hgx-b200", "dgx-b200", "NVIDIA B200"),  # [fx][rp]
    "B300": ("b300", "hgx-b300", "dgx-b300", "NVIDIA B300 SXM6 AC"),  # [fx]
    "GB200": ("gb200", "gb200-nvl72", "NVIDIA GB200"),  # [fx][drv]
    "L40S": ("l40s", "NVIDIA L40S"),  # [rp]
    "MI300X": ("mi300x", "instinct-mi300x", "AMD Instinct MI300X"),  # [smi] (ROCm device name)
    "MI325X": ("mi325x", "instinct-mi325x", "AMD Instinct MI325X"),  # AMD product name; not seen in logs
    "MI355X": ("mi355x", "instinct-mi355x", "AMD Instinct MI355X"),  # README device listings
}
