"""Sources of the hardware table: one string per document, quoted by the rows in
:mod:`perfmodel.specs.hopper` and :mod:`perfmodel.specs.others` (counting rules: :mod:`perfmodel.specs.table`).
"""

from __future__ import annotations

from .spec import AMD_DEFAULT_EFFICIENCY, NVIDIA_DEFAULT_EFFICIENCY, Efficiency, Interconnect, default_efficiency

# -- vendor documents -------------------------------------------------------------------------------
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

# -- public device reports and vendor-attested system descriptions ------------------------------
_NV_DRIVER_NAMES = (
    "NVIDIA's device-name list of driver 595.45.04 (the names nvidia-smi and torch.cuda.get_device_name() "
    "print), https://github.com/NVIDIA/open-gpu-kernel-modules/blob/df1c9a3de2be4b130f4fc7680f7198193d8ac6ad/README.md"
)
_MLPERF_INF = (
    "MLCommons inference v5.1 system descriptions, https://github.com/mlcommons/inference_results_v5.1 "
    "(closed/*/systems/*.json, hw_notes)"
)
_MLE = (
    "S. Bekman, Machine Learning Engineering, compute/accelerator/README.md power and clock tables, "
    "https://github.com/stas00/ml-engineering/blob/744d01e18b79512572f64a6bbd8b5f4a725203a7/compute/accelerator/README.md"
)
_BW_DS = (
    "NVIDIA Blackwell datasheet (per-GPU columns GB200 NVL72 | HGX B200), "
    "https://nvdam.widen.net/s/wwnsxrhm2w/blackwell-datasheet-3384703"
)
_BU_DS = (
    "NVIDIA Blackwell Ultra datasheet (per-GPU columns GB300 NVL72 | HGX B300), "
    "https://resources.nvidia.com/en-us-blackwell-architecture/blackwell-ultra-datasheet"
)
_GH200_DS = (
    "NVIDIA GH200 Grace Hopper Superchip datasheet, "
    "https://nvdam.widen.net/s/rrgqqnpbz8/grace-datasheet-gh200-grace-hopper-superchip-3773000"
)
_A100_TDP = f"{_A100_DS}: max TDP 400 W (SXM), 250 W (PCIe 40GB), 300 W (PCIe 80GB)"
_OUR_H200 = (
    "seen on our own H200 (this workplace's device notes, 2026-10-28; benchmarks/data/h200_2026-11-30/README.md)"
)


def _nv(name: str) -> Efficiency:
    return default_efficiency(name, NVIDIA_DEFAULT_EFFICIENCY)


def _amd(name: str) -> Efficiency:
    return default_efficiency(name, AMD_DEFAULT_EFFICIENCY)


# -- interconnects (per GPU; vendor figures are bidirectional and halved here to one direction) -------
_MLE_NET = (
    "S. Bekman, Machine Learning Engineering, network/README.md intra-node tables, "
    "https://github.com/stas00/ml-engineering/blob/744d01e18b79512572f64a6bbd8b5f4a725203a7/network/README.md"
)
NVLINK4_HGX = Interconnect(
    kind="nvswitch",
    bw_bytes_per_s=900e9 / 2,  # "NVLink: 900GB/s" is both directions
    gpus_per_node=8,
    pcie_bw_bytes_per_s=128e9 / 2,  # PCIe Gen5 x16, both directions
    source=f"{_H100_DS}, SXM column: NVLink 900 GB/s, PCIe Gen5 128 GB/s; {_MLPERF_INF}: HGX H100/H200 "
    "'18x 4th Gen NVLink, 900GB/s', 8 GPUs on NVSwitch",
)
NVLINK4_H800 = Interconnect(
    kind="nvswitch",
    bw_bytes_per_s=400e9 / 2,
    gpus_per_node=8,
    pcie_bw_bytes_per_s=128e9 / 2,
    source="no public NVIDIA datasheet: 400 GB/s NVLink (about half the H100's, per NVIDIA to Reuters, 2023-03-21, "
    "and channel reprints of NVIDIA's H800 table); HGX H800 8-GPU boards in NVIDIA's supported-platform list; "
    "low confidence",
)
NVLINK3_HGX = Interconnect(
    kind="nvswitch",
    bw_bytes_per_s=600e9 / 2,
    gpus_per_node=8,
    pcie_bw_bytes_per_s=64e9 / 2,
    source=f"{_A100_DS}: NVLink 600 GB/s, PCIe Gen4 64 GB/s; HGX A100: 8 GPUs on NVSwitch ({_MLE_NET})",
)
NVLINK5_HGX = Interconnect(
    kind="nvswitch",
    bw_bytes_per_s=1800e9 / 2,
    gpus_per_node=8,
    pcie_bw_bytes_per_s=128e9 / 2,
    source=f"{_BW_DS}: 5th Gen NVLink 1.8 TB/s, PCIe Gen5 128 GB/s; {_MLPERF_INF}: HGX B200 8 GPUs, "
    "'18x 5th Gen NVLink'",
)


def bridge(bw_bidir: float, group: int, pcie_bidir: float, source: str) -> Interconnect:
    """NVLink bridges joining ``group`` PCIe cards; bidirectional vendor figures in, one direction stored."""
    return Interconnect(
        kind="bridge",
        bw_bytes_per_s=bw_bidir / 2,
        gpus_per_node=8,
        domain_gpus=group,
        pcie_bw_bytes_per_s=pcie_bidir / 2,
        source=source,
    )


def xgmi_mesh(link_unidir: float, source: str) -> Interconnect:
    """AMD Infinity Fabric: 7 point-to-point links per GPU in an 8-GPU node, no switch."""
    return Interconnect(
        kind="mesh",
        bw_bytes_per_s=7 * link_unidir,
        peer_bw_bytes_per_s=link_unidir,
        gpus_per_node=8,
        pcie_bw_bytes_per_s=128e9 / 2,
        source=source,
    )
