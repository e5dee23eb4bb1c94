"""Tests of the hardware table, aliases, gpu_from_proton and the generated doc."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import perfmodel as pm
from perfmodel.errors import ProfileError, UnknownGPUError, UnsupportedFormatError
from perfmodel.formats import FORMATS
from perfmodel.specs.gpu import (
    ALIASES,
    GPUS,
    NVIDIA_DEFAULT_EFFICIENCY,
    ORIGINAL_EFFICIENCY,
    get_gpu,
    gpu_from_proton,
    proton_mem_bw_bytes_per_s,
    proton_peak_flops_per_s,
)

ROOT = Path(__file__).resolve().parent.parent
H200_HATCHET = ROOT / "tests" / "data" / "h200_triton3.6_scope_and_kernel.hatchet"
NUMERIC_FIELDS = (
    "mem_bw_bytes_per_s",
    "mem_bytes",
    "num_sms",
    "boost_clock_hz",
    "l2_bytes",
    "bus_width_bits",
    "mem_clock_hz",
)


def h200_device_info() -> dict:
    return json.loads(H200_HATCHET.read_text())[1]["CUDA"]["0"]


# -- the table ----------------------------------------------------------------------------------
def test_required_rows_present():
    for name in (
        "H100-SXM",
        "H100-PCIe",
        "H100-2.4TB",
        "H200",
        "H200-NVL",
        "A100-SXM-40GB",
        "A100-SXM-80GB",
        "A100-PCIe-80GB",
        "B200",
        "B300",
        "GB200",
        "MI300X",
        "MI325X",
        "MI355X",
        "L40S",
    ):
        assert name in GPUS
    assert pm.list_gpus() == list(GPUS)


@pytest.mark.parametrize("gpu", GPUS.values(), ids=list(GPUS))
def test_every_number_has_a_source(gpu):
    assert gpu.peaks.source
    assert gpu.efficiency.source
    for field in NUMERIC_FIELDS:
        if getattr(gpu, field) is not None:
            assert gpu.sources.get(field), f"{gpu.name}.{field} has no source"
    assert gpu.peaks.supported(), gpu.name


@pytest.mark.parametrize("gpu", GPUS.values(), ids=list(GPUS))
def test_peaks_are_dense_and_consistent(gpu):
    p = gpu.peaks
    # no sparse figure stored as dense: per-class ceilings well below the sparse datasheet numbers
    ceiling_bf16 = {
        "80": 320e12,
        "89": 400e12,
        "90": 1.0e15,
        "100": 2.6e15,
        "103": 2.6e15,
        "gfx942": 1.4e15,
        "gfx950": 2.6e15,
    }[gpu.arch]
    assert p.bf16 <= ceiling_bf16
    assert p.fp16 == p.bf16
    assert p.tf32 is None or p.tf32 == pytest.approx(p.bf16 / 2, rel=0.02)
    assert p.fp32 < p.bf16
    if p.fp8_e4m3 is not None:
        assert p.fp8_e4m3 == pytest.approx(2 * p.bf16, rel=0.02)  # every datasheet here: fp8 = 2 * bf16
        assert p.fp8_e5m2 == p.fp8_e4m3
    if p.mxfp8 is not None:
        assert p.mxfp8 == p.fp8_e4m3
    if p.mxfp4 is not None:
        assert p.mxfp4 >= 2 * p.fp8_e4m3 * (1 - 1e-4)
    assert gpu.mem_bw_bytes_per_s < 10e12 and gpu.mem_bytes < 300e9


def test_native_paths():
    for name in ("A100-SXM-40GB", "A100-SXM-80GB", "A100-PCIe-80GB"):
        assert not get_gpu(name).supports("fp8")
    for name in ("H100-SXM", "H200", "MI300X", "L40S"):
        for fmt in ("mxfp8", "mxfp4", "nvfp4"):
            assert not get_gpu(name).supports(fmt)
    for name in ("MI300X", "MI325X", "MI355X"):
        assert not get_gpu(name).supports("nvfp4")
    for name in ("B200", "B300", "GB200"):
        assert all(get_gpu(name).supports(f) for f in ("mxfp8", "mxfp4", "nvfp4"))
    with pytest.raises(UnsupportedFormatError, match=r"A100-SXM-80GB has no fp8_e4m3 peak"):
        get_gpu("a100").peak_flops_per_s("fp8")


def test_datasheet_arithmetic():
    # H100 SXM5 datasheet prints sparse figures; dense = half
    h100 = get_gpu("H100-SXM")
    assert h100.peak_flops_per_s("bf16") == 1979e12 / 2
    assert h100.peak_flops_per_s("fp8") == 3958e12 / 2
    assert get_gpu("H100-PCIe").peak_flops_per_s("bf16") == 1513e12 / 2
    assert get_gpu("H200-NVL").peak_flops_per_s("fp8_e4m3") == 3341e12 / 2
    # the original torchao model's H100: numbers kept exactly
    orig = get_gpu("H100-2.4TB")
    assert (orig.peak_flops_per_s("bf16"), orig.peak_flops_per_s("fp8"), orig.mem_bw_bytes_per_s) == (
        989e12,
        1979e12,
        2.4e12,
    )
    assert orig.efficiency is ORIGINAL_EFFICIENCY
    # A100 datasheet prints dense and sparse; dense bf16 312
    assert get_gpu("A100-SXM-80GB").peak_flops_per_s("bf16") == 312e12
    assert get_gpu("A100-SXM-80GB").mem_bw_bytes_per_s == 2039e9
    # HGX B200 board totals / 8 GPUs, sparse halved
    b200 = get_gpu("B200")
    assert b200.peak_flops_per_s("bf16") == pytest.approx(36e15 / 8 / 2)
    assert b200.peak_flops_per_s("nvfp4") == pytest.approx(144e15 / 8 / 2)
    assert get_gpu("B300").peak_flops_per_s("nvfp4") == pytest.approx(108e15 / 8)
    assert get_gpu("GB200").peak_flops_per_s("fp8") == pytest.approx(20e15 / 2 / 2)
    # AMD prints dense; MI300X fp8 = 304 CUs * 4096 FLOP/clk * 2.1 GHz
    assert get_gpu("MI300X").peak_flops_per_s("fp8") == pytest.approx(304 * 4096 * 2.1e9, rel=1e-4)
    assert get_gpu("MI355X").peak_flops_per_s("mxfp4") == pytest.approx(256 * 16384 * 2.4e9, rel=1e-4)
    # memory clock and bus width agree with bandwidth (2 transfers per clock)
    for gpu in GPUS.values():
        if gpu.bus_width_bits and gpu.mem_clock_hz:
            assert 2 * gpu.bus_width_bits * gpu.mem_clock_hz / 8 == pytest.approx(gpu.mem_bw_bytes_per_s, rel=0.01), (
                gpu.name
            )


def test_default_efficiencies_are_labelled():
    for gpu in GPUS.values():
        if gpu.name in ("H100-SXM", "H100-PCIe", "H100-2.4TB"):  # the original model's own GPUs
            assert gpu.efficiency is ORIGINAL_EFFICIENCY
        elif gpu.name == "H200":  # measured on the H200 (benchmarks/data/h200_2026-11-30)
            assert gpu.efficiency.source.startswith("measured: python -m perfmodel.bench")
            assert gpu.efficiency.gemm_fraction == pytest.approx(800e12 / 989.5e12)
            assert gpu.efficiency.mem_bw_fraction == pytest.approx(4.27 / 4.8)
        else:
            assert gpu.efficiency.source.startswith("default: copied from the original torchao H100")
            assert gpu.efficiency.source.endswith(f"not measured on {gpu.name}")
            assert gpu.efficiency.gemm_fraction == NVIDIA_DEFAULT_EFFICIENCY.gemm_fraction == 0.6


# -- names ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "device_name, canonical",
    [
        ("NVIDIA H100 80GB HBM3", "H100-SXM"),
        ("NVIDIA H100 PCIe", "H100-PCIe"),
        ("NVIDIA H200", "H200"),
        ("NVIDIA A100-SXM4-40GB", "A100-SXM-40GB"),
        ("NVIDIA A100-SXM4-80GB", "A100-SXM-80GB"),
        ("NVIDIA A100 80GB PCIe", "A100-PCIe-80GB"),
        ("NVIDIA A100-PCIE-40GB", "A100-PCIe-40GB"),
        ("NVIDIA B200", "B200"),
        ("NVIDIA GB200", "GB200"),
        ("NVIDIA L40S", "L40S"),
        ("AMD Instinct MI300X", "MI300X"),
        ("AMD Instinct MI355X", "MI355X"),
        ("h100", "H100-SXM"),  # ambiguous short names mean the SXM part
        ("a100", "A100-SXM-80GB"),
        ("  H100_SXM  ", "H100-SXM"),
        ("mi300x", "MI300X"),
        ("b200", "B200"),
    ],
)
def test_real_device_names_resolve(device_name, canonical):
    assert get_gpu(device_name).name == canonical


def test_aliases_are_normalised_and_point_to_rows():
    for alias, name in ALIASES.items():
        assert alias == re.sub(r"[\s_]+", "-", alias.strip().lower())
        assert name in GPUS
    for name in GPUS:
        assert get_gpu(name.lower()) is GPUS[name]
    spec = GPUS["H200"]
    assert get_gpu(spec) is spec


def test_unknown_names_raise():
    with pytest.raises(UnknownGPUError, match=r"unknown GPU 'H300'.*did you mean.*Valid choices: .*H100-SXM"):
        get_gpu("H300")
    with pytest.raises(LookupError, match=r"unknown GPU 'NVIDIA H100'"):
        get_gpu("NVIDIA H100")  # no prefix guessing
    with pytest.raises(UnknownGPUError, match=r"Pass a name"):
        get_gpu(100)


def test_what_if_replace():
    h100 = get_gpu("h100")
    fast = dataclasses.replace(h100, mem_bw_bytes_per_s=4.8e12)
    assert fast.mem_bw_bytes_per_s == 4.8e12 and h100.mem_bw_bytes_per_s == 3.35e12
    assert fast.ridge_flops_per_byte("bf16") == pytest.approx(1979e12 / 2 / 4.8e12)
    tuned = h100.with_efficiency(gemm_fraction=0.8, source="what-if")
    assert tuned.achievable_flops_per_s("bf16") == pytest.approx(0.8 * 1979e12 / 2)
    assert tuned.achievable_mem_bw_bytes_per_s == pytest.approx(0.92 * 3.35e12)
    assert tuned.launch_overhead_s == 2e-6
    with pytest.raises(ValueError, match="mem_bw_bytes_per_s must be positive"):
        dataclasses.replace(h100, mem_bw_bytes_per_s=0)


# -- Proton ------------------------------------------------------------------------------------------
def test_gpu_from_proton_h200_file():
    info = h200_device_info()
    assert info == {
        "arch": "90",
        "bus_width": 6016,
        "clock_rate": 1980000,
        "memory_clock_rate": 3201000,
        "num_sms": 132,
    }
    gpu = gpu_from_proton("CUDA", info)
    assert gpu.name == "H200"
    bf16 = 132 / 114 * 1980000 / 1755e3 * 1513e12 / 2
    assert gpu.peak_flops_per_s("bf16") == pytest.approx(bf16)
    assert gpu.peak_flops_per_s("fp8") == pytest.approx(2 * bf16)
    assert gpu.peak_flops_per_s("tf32") == pytest.approx(bf16 / 2)
    assert gpu.peak_flops_per_s("fp32") == 67e12  # not a Proton width: the table's value
    assert gpu.mem_bw_bytes_per_s == pytest.approx(2 * 6016 * 3201000 * 1e3 / 8)
    assert gpu.mem_bytes == 141e9 and gpu.efficiency == GPUS["H200"].efficiency
    assert "Proton device metadata" in gpu.peaks.source
    assert "Proton" in gpu.sources["mem_bw_bytes_per_s"]
    assert gpu.boost_clock_hz == 1.98e9


def test_gpu_from_proton_matches_table_rows():
    sxm = dict(arch="90", num_sms=132, clock_rate=1980000, memory_clock_rate=2619000, bus_width=5120)
    assert gpu_from_proton("CUDA", sxm).name == "H100-SXM"
    pcie = dict(arch="90", num_sms=114, clock_rate=1755000, memory_clock_rate=1593000, bus_width=5120)
    got = gpu_from_proton("cuda", pcie)
    assert got.name == "H100-PCIe"
    assert got.peak_flops_per_s("bf16") == pytest.approx(1513e12 / 2)  # Proton's reference point
    a100 = dict(arch="80", num_sms=108, clock_rate=1410000, memory_clock_rate=1593000, bus_width=5120)
    assert gpu_from_proton("CUDA", a100).name == "A100-SXM-80GB"
    assert gpu_from_proton("CUDA", {**a100, "memory_clock_rate": 1215000}).name == "A100-SXM-40GB"
    assert gpu_from_proton("CUDA", {**a100, "memory_clock_rate": 1512000}).name == "A100-PCIe-80GB"
    b200 = dict(arch="100", num_sms=148, clock_rate=1965000, memory_clock_rate=3996000, bus_width=8192)
    got = gpu_from_proton("CUDA", b200)
    assert got.name == "B200"
    assert got.peak_flops_per_s("nvfp4") == pytest.approx(148 * 16384 * 1965000 * 1e3 / 0.5)
    mi300 = dict(
        arch="gfx942:sramecc+:xnack-", num_sms=304, clock_rate=2100000, memory_clock_rate=1300000, bus_width=8192
    )
    got = gpu_from_proton("HIP", mi300)
    assert got.name == "MI300X"
    assert got.peak_flops_per_s("fp8") == pytest.approx(4096 * 304 * 2100000 * 1e3)
    assert got.mem_bw_bytes_per_s == 5.3e12  # Proton's gfx942 constant


def test_gpu_from_proton_generic():
    info = dict(arch=90, num_sms=66, clock_rate=1500000, memory_clock_rate=2000000, bus_width=4096)
    gpu = gpu_from_proton("CUDA", info)
    assert gpu.name == "CUDA-sm90-66SM"
    assert gpu.mem_bytes is None and not gpu.supports("fp32")
    assert gpu.peak_flops_per_s("bf16") == pytest.approx(66 / 114 * 1500000 / 1755e3 * 1513e12 / 2)
    assert gpu.efficiency.source.endswith("not measured on CUDA-sm90-66SM")
    assert "does not carry the memory size" in gpu.sources["mem_bytes"]
    hip = gpu_from_proton("HIP", dict(arch="gfx950", num_sms=128, clock_rate=2400000, memory_clock_rate=1, bus_width=1))
    assert hip.name == "HIP-gfx950-128CU" and hip.vendor == "AMD" and hip.supports("mxfp4")


@pytest.mark.parametrize(
    "device_type, info, error, match",
    [
        ("CUDA", {"arch": "90", "num_sms": 132}, ProfileError, r"lacks 'clock_rate', 'memory_clock_rate', 'bus_width'"),
        (
            "CUDA",
            {
                **{"arch": "90", "num_sms": 132, "clock_rate": 1980000, "memory_clock_rate": 3201000},
                "bus_width": "6016",
            },
            ProfileError,
            r"'bus_width' must be a positive number, got '6016'",
        ),
        (
            "CUDA",
            {"arch": "90", "num_sms": 132.5, "clock_rate": 1, "memory_clock_rate": 1, "bus_width": 1},
            ProfileError,
            r"'num_sms' must be a whole number",
        ),
        (
            "CUDA",
            {"arch": None, "num_sms": 1, "clock_rate": 1, "memory_clock_rate": 1, "bus_width": 1},
            ProfileError,
            r"'arch' must be a string",
        ),
        ("CUDA", ["not", "a", "dict"], ProfileError, r"must be a mapping"),
        (
            "CUDA",
            {"arch": "103", "num_sms": 148, "clock_rate": 1, "memory_clock_rate": 1, "bus_width": 1},
            UnknownGPUError,
            r"arch '103'; known CUDA archs: 100, 80, 89, 90",
        ),
        (
            "HIP",
            {"arch": "gfx1100", "num_sms": 96, "clock_rate": 1, "memory_clock_rate": 1, "bus_width": 1},
            UnknownGPUError,
            r"arch 'gfx1100'; known HIP archs: gfx90a, gfx942, gfx950",
        ),
        (
            "XPU",
            {"arch": "x", "num_sms": 1, "clock_rate": 1, "memory_clock_rate": 1, "bus_width": 1},
            UnknownGPUError,
            r"unknown Proton device type 'XPU'",
        ),
    ],
)
def test_gpu_from_proton_malformed(device_type, info, error, match):
    with pytest.raises(error, match=match):
        gpu_from_proton(device_type, info)
    assert issubclass(ProfileError, ValueError) and issubclass(UnknownGPUError, LookupError)


def test_perfdata_from_proton_fields():
    pd = pm.PerfData.from_proton_fields(
        time=1e6, flops=1e12, bytes=1e9, bitwidth=16, device_type="CUDA", device_info=h200_device_info()
    )
    assert pd.gpu.name == "H200"
    assert pd.peak_flops_per_s == pytest.approx(132 / 114 * 1980000 / 1755e3 * 1513e12 / 2)


CASES = [
    ("CUDA", "80", 132, 1410000),
    ("CUDA", "89", 142, 2520000),
    ("CUDA", "90", 132, 1980000),
    ("CUDA", "90", 114, 1755000),
    ("CUDA", "100", 148, 1965000),
    ("HIP", "gfx90a", 104, 1700000),
    ("HIP", "gfx942", 304, 2100000),
    ("HIP", "gfx950", 256, 2400000),
]


@pytest.mark.parametrize("device_type, arch, num_sms, clock_khz", CASES)
@pytest.mark.parametrize("width", [4, 8, 16, 32, 64])
def test_proton_formulas_match_triton(device_type, arch, num_sms, clock_khz, width):
    specs = pytest.importorskip("triton.profiler.specs")
    assert proton_peak_flops_per_s(device_type, arch, width, num_sms, clock_khz) == pytest.approx(
        specs.max_flops(device_type, arch, width, num_sms, clock_khz), rel=1e-12
    )
    assert proton_mem_bw_bytes_per_s(device_type, arch, 6016, 3201000) == pytest.approx(
        specs.max_bps(device_type, arch, 6016, 3201000), rel=1e-12
    )


# -- hygiene and docs ---------------------------------------------------------------------------------
def test_import_is_cheap():
    code = "import sys, perfmodel; print(sorted(m for m in ('sympy', 'torch', 'triton') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _gen_doc_module():
    spec = importlib.util.spec_from_file_location("gen_hardware_doc", ROOT / "tools" / "gen_hardware_doc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_doc_table_is_current():
    gen = _gen_doc_module()
    doc = (ROOT / "docs" / "hardware.md").read_text(encoding="utf-8")
    assert gen.render_table() in doc, "docs/hardware.md is stale: run python tools/gen_hardware_doc.py"
    assert gen.splice(doc, gen.render_table()) == doc


def test_doc_examples_run():
    doc = (ROOT / "docs" / "hardware.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", doc, flags=re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "docs/hardware.md", "exec"), {})


def test_every_format_is_a_peaks_field():
    assert set(FORMATS) == {f.name for f in dataclasses.fields(pm.Peaks)} - {"source"}


def test_interconnects_are_sourced_and_one_directional():
    from perfmodel.specs.gpu import Interconnect

    for gpu in GPUS.values():
        ic = gpu.interconnect
        if ic is None:  # GH200: the datasheet gives no GPU-to-GPU fabric for a node
            assert gpu.name.startswith("GH200")
            continue
        assert (ic.source and ic.bw_bytes_per_s > 0 and ic.fabric_gpus >= 2) or ic.kind == "pcie"
    h100 = GPUS["H100-SXM"].interconnect
    assert (h100.kind, h100.bw_bytes_per_s, h100.fabric_gpus) == ("nvswitch", 900e9 / 2, 8)  # 900 GB/s both ways
    mi300 = GPUS["MI300X"].interconnect
    assert mi300.kind == "mesh" and mi300.peer_bw_bytes_per_s == 64e9 and mi300.bw_bytes_per_s == 7 * 64e9
    assert GPUS["GB200"].interconnect.fabric_gpus == 72 and GPUS["GB200"].interconnect.gpus_per_node == 4
    with pytest.raises(ValueError, match="kind must be"):
        Interconnect(kind="ring", bw_bytes_per_s=1e9, gpus_per_node=8, source="x")
    with pytest.raises(ValueError, match="positive B/s"):
        Interconnect(kind="nvswitch", bw_bytes_per_s=-1.0, gpus_per_node=8, source="x")
