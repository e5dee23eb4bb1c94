"""PerfData: the one roofline-point type, predicted or measured."""

import numpy as np
import pytest
import sympy as sp

import perfmodel as pm
from perfmodel.errors import PerfModelError
from perfmodel.perfdata import bitwidth_format

H100 = pm.get_gpu("H100-SXM")


def make(**kw):
    base = dict(time_s=1e-3, flops=500e9, bytes=1e9, dtype="bf16", gpu="H100-SXM", label="x")
    base.update(kw)
    return pm.PerfData(**base)


def test_derived_quantities_by_hand():
    p = make()
    assert p.gpu is H100 and p.dtype.name == "bf16" and p.source == "predicted"
    assert p.tflops == pytest.approx(500e9 / 1e-3 * 1e-12)
    assert p.tbps == pytest.approx(1e9 / 1e-3 * 1e-12)
    assert p.opint == pytest.approx(500.0)
    assert p.max_tflops == pytest.approx(989.5)
    assert p.max_tbps == pytest.approx(3.35)
    t_flop, t_bw = 500e9 / 989.5e12, 1e9 / 3.35e12
    assert p.util == pytest.approx(max(t_flop, t_bw) / 1e-3)
    assert p.bound == "compute"
    assert p.roof_tflops == pytest.approx(min(989.5, 500 * 3.35))
    assert make(flops=1e9).bound == "memory"
    assert make(flops=1e9).roof_tflops == pytest.approx(3.35)


def test_any_format_with_a_peak():
    assert make(dtype="fp8").max_tflops == pytest.approx(1979)
    assert make(dtype="tf32").max_tflops == pytest.approx(494.5)
    with pytest.raises(pm.UnsupportedFormatError, match="no nvfp4 peak"):
        _ = make(dtype="nvfp4").max_tflops


def test_zero_bytes_opint_is_an_error_not_an_assert():
    p = make(bytes=0)
    with pytest.raises(PerfModelError, match="bytes is 0"):
        _ = p.opint
    assert p.bound == "compute"


def test_arrays_and_symbols():
    p = make(time_s=np.array([1e-3, 2e-3]), flops=np.array([1e12, 1e9]), bytes=np.array([1e9, 1e9]))
    assert list(p.bound) == ["compute", "memory"]
    assert p.tflops[1] == pytest.approx(0.5)
    t = sp.Symbol("t", positive=True)
    q = make(time_s=t)
    assert sp.simplify(q.tflops - 500e9 / t * 1e-12) == 0
    assert q.bound == "compute"  # the bound does not depend on the time
    with pytest.raises(PerfModelError, match="substitute"):
        _ = make(flops=sp.Symbol("F", positive=True)).bound


@pytest.mark.parametrize(
    "kw,msg",
    [
        (dict(time_s=0), "time_s must be a positive number"),
        (dict(time_s=-1.0), "time_s"),
        (dict(flops=-1), "flops must be a finite number >= 0"),
        (dict(bytes=float("nan")), "bytes must be a finite number >= 0"),
        (dict(flops=float("inf")), "flops must be a finite number >= 0"),
        (dict(flops=True), "flops must be a finite number >= 0"),
        (dict(bytes=np.array([1.0, -2.0])), "bytes must be finite numbers >= 0 everywhere"),
        (dict(source="guessed"), "source must be 'predicted' or 'measured'"),
        (dict(dtype="fp9"), "unknown number format 'fp9'"),
        (dict(gpu="Z80"), "unknown GPU 'Z80'"),
    ],
)
def test_bad_input(kw, msg):
    with pytest.raises((PerfModelError, LookupError, ValueError), match=msg):
        make(**kw)


def test_frozen_and_meta_read_only():
    p = make(meta={"M": 4})
    with pytest.raises(AttributeError):
        p.time_s = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        p.meta["M"] = 5  # type: ignore[index]


def test_bitwidths():
    assert bitwidth_format(16).name == "bf16"
    assert bitwidth_format(8).name == "fp8_e4m3"
    assert bitwidth_format(32).name == "tf32"
    with pytest.raises(PerfModelError, match="unknown bit width 12"):
        bitwidth_format(12)


def test_str_is_readable():
    text = str(make())
    assert "TFLOP/s" in text and "compute-bound" in text and "H100-SXM" in text
