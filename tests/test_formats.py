"""Tests of the number-format registry."""

from __future__ import annotations

import pytest

import perfmodel as pm
from perfmodel.errors import UnknownFormatError
from perfmodel.formats import FORMATS, Format, format_names, get_format

# name -> (bits, bytes per element with scales, Proton width); expected values from the specs:
# OCP MX v1.0: 32 elements share one 8-bit E8M0 scale; NVFP4: 16 elements share one 8-bit E4M3 scale.
EXPECTED = {
    "fp32": (32, 4, 32),
    "tf32": (32, 4, 32),  # stored as fp32
    "bf16": (16, 2, 16),
    "fp16": (16, 2, 16),
    "fp8_e4m3": (8, 1, 8),
    "fp8_e5m2": (8, 1, 8),
    "mxfp8": (8, 1 + 1 / 32, 8),
    "mxfp4": (4, 0.5 + 1 / 32, 4),
    "nvfp4": (4, 0.5 + 1 / 16, 4),
    "int8": (8, 1, 8),
}


def test_registry_is_complete():
    assert format_names() == list(FORMATS) == list(EXPECTED)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_every_entry(name):
    bits, with_scales, width = EXPECTED[name]
    f = get_format(name)
    assert f is FORMATS[name] and str(f) == name
    assert f.bits == bits
    assert f.bytes_per_element == bits / 8
    assert f.bytes_per_element_with_scales == pytest.approx(with_scales)
    assert f.proton_width == width
    assert f.block_scaled == (name in ("mxfp8", "mxfp4", "nvfp4"))
    assert (f.kind == "int") == (name == "int8")
    assert 1 + f.exponent_bits + f.mantissa_bits == (bits if name not in ("tf32",) else 19)
    for alias in f.aliases:
        assert get_format(alias) is f
        assert get_format(alias.upper()) is f
    assert get_format(f) is f


@pytest.mark.parametrize(
    "alias, name",
    [
        ("bfloat16", "bf16"),
        ("float16", "fp16"),
        ("half", "fp16"),
        ("float32", "fp32"),
        ("fp8", "fp8_e4m3"),
        ("e4m3", "fp8_e4m3"),
        ("float8_e4m3fnuz", "fp8_e4m3"),
        ("e5m2", "fp8_e5m2"),
        ("torch.bfloat16", "bf16"),
        ("torch.float8_e4m3fn", "fp8_e4m3"),
        (" BF16 ", "bf16"),
        ("fp8-e4m3", "fp8_e4m3"),
        ("tensorfloat-32", "tf32"),
        ("mx4", "mxfp4"),
        ("i8", "int8"),
    ],
)
def test_aliases(alias, name):
    assert get_format(alias).name == name


@pytest.mark.parametrize(
    "dtype_name, name",
    [
        ("bfloat16", "bf16"),
        ("float16", "fp16"),
        ("float32", "fp32"),
        ("float8_e4m3fn", "fp8_e4m3"),
        ("float8_e5m2", "fp8_e5m2"),
        ("float8_e4m3fnuz", "fp8_e4m3"),
        ("float8_e5m2fnuz", "fp8_e5m2"),
        ("int8", "int8"),
        ("float4_e2m1fn_x2", "mxfp4"),
    ],
)
def test_torch_dtypes(dtype_name, name):
    torch = pytest.importorskip("torch")
    dtype = getattr(torch, dtype_name, None)
    if dtype is None:
        pytest.skip(f"torch {torch.__version__} has no {dtype_name}")
    assert get_format(dtype).name == name


def test_unknown_formats():
    with pytest.raises(UnknownFormatError, match=r"unknown number format 'bf17'; did you mean 'bf16'"):
        get_format("bf17")
    with pytest.raises(ValueError, match=r"fp4 is ambiguous: use 'mxfp4'.*or 'nvfp4'"):
        get_format("fp4")
    with pytest.raises(UnknownFormatError, match=r"Pass a name, an alias or a torch dtype"):
        get_format(16)
    with pytest.raises(UnknownFormatError, match=r"Valid choices: bf16, fp16, fp32"):
        get_format("float64")


def test_format_validation():
    with pytest.raises(ValueError, match="bits must be positive"):
        Format(name="x", bits=0, exponent_bits=0, mantissa_bits=0, proton_width=8)
    with pytest.raises(ValueError, match="scale_block and scale_bits go together"):
        Format(name="x", bits=8, exponent_bits=4, mantissa_bits=3, scale_block=32, proton_width=8)


def test_peaks_accept_every_format_spelling():
    torch = pytest.importorskip("torch")

    h100 = pm.get_gpu("H100")
    assert h100.peak_flops_per_s(torch.bfloat16) == h100.peak_flops_per_s("bf16") == 1979e12 / 2
    assert h100.peak_flops_per_s(torch.float8_e4m3fn) == h100.peak_flops_per_s("fp8") == 3958e12 / 2
