"""What a notebook shows for the public answers: a one-line repr that names the shape, the time and where it comes
from (no nested dataclass or array dumps), and a ``str`` that adds the provenance line. The MoE answers are in
test_moe_decide.py."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import perfmodel as pm
from perfmodel._backend import describe_value

sp = pytest.importorskip("sympy")
T = sp.Symbol("T", positive=True, integer=True)


def test_describe_value_by_hand():
    assert describe_value(0.0123, "s") == "12.300 ms" and describe_value(1.2e-5, "s") == "12.0 us"
    assert describe_value(1e-3, "s") == "1.000 ms" and describe_value(0, "s") == "0.0 us"
    assert describe_value(np.array([1e-3, 2e-2]), "s") == "2 values, 1.000 ms to 20.000 ms"
    assert describe_value(np.array([]), "s") == "0 values"
    assert describe_value(8192) == "8192" and describe_value(26.0172, "GB") == "26.02 GB"
    assert describe_value(2 * T) == "2*T"  # a short expression prints as itself
    long = sum(sp.ceiling(T / k) for k in range(1, 9))
    assert describe_value(long, "s") == "a sympy expression in T"
    assert describe_value("x") == "'x'"


def _one_line(obj: object, limit: int = 300) -> str:
    r = repr(obj)
    assert "\n" not in r and len(r) < limit and "array(" not in r and "=Recipe(" not in r and "GPUSpec(name=" not in r
    return r


def test_linear_and_layer_reprs():
    lt = pm.float8.linear_time(8192, 4096, 4096, "rowwise", "H200")
    r = _one_line(lt)
    assert r.startswith("LinearTime(M=8192, K=4096, N=4096, rowwise on H200: fwd+bwd ")
    assert f"{lt.total_s * 1e3:.3f} ms" in r and f"GEMMs {lt.gemm_s * 1e6:.1f} us" in r and r.endswith("; measured)")
    assert f"provenance: {lt.provenance.line()}" in str(lt) and str(lt).startswith(r)
    bad = pm.float8.linear_time(8192, 4100, 4096, "rowwise", "H200")
    assert "float8 cannot run this shape" in repr(bad) and bad.ineligible_reason in str(bad)
    K = sp.Symbol("K", positive=True, integer=True)
    sym = _one_line(pm.float8.linear_time(8192, K, 4096, "rowwise", "H200"))
    assert "K=K" in sym and "float8 runs it only where" in sym
    arr = _one_line(pm.float8.linear_time(8192, np.array([4096, 4100]), 4096, "rowwise", "H200"))
    assert "K=2 values, 4096 to 4100" in arr and "cannot run some of these shapes" in arr
    layer = pm.step.layer_time("llama3-8b", gpu="H200", seq_len=4096)
    r = _one_line(layer)
    assert r.startswith("LayerTime(llama3-8b on H200, batch 1 x seq 4096, bf16") and f"{layer.step_s * 1e3:.3f} ms" in r
    assert f"{len(layer.kernels)} kernels" in r and f"provenance: {layer.provenance.line()}" in str(layer)
    assert isinstance(layer.host_bound_risk, (bool, np.bool_))  # still a property
    moe = pm.step.layer_time("mixtral-8x7b", gpu="H200", seq_len=4096)
    assert _one_line(moe) == f"MoELayerTime({moe}; {moe.provenance.kind})"


def test_train_perfdata_and_gpu_reprs():
    est = pm.train.estimate("llama3-8b", gpu="H200", n_gpus=8, seq_len=4096, batch_per_gpu=1)
    r = _one_line(est)
    assert r.startswith(f"TrainEstimate({est._header()}: step {est.step_s * 1e3:.3f} ms")
    assert f"memory {est.memory_bytes / 1e9:.2f} GB" in r and "does not fit" not in r
    assert "sympy expression in T" in _one_line(
        pm.train.estimate("llama3-8b", gpu="H200", n_gpus=8, seq_len=T, batch_per_gpu=1)
    )
    pd = pm.gemm_perfdata(4096, 4096, 4096, gpu="H200")
    assert repr(pd) == f"PerfData({pd})"
    assert repr(pm.gemm_perfdata(T, 4096, 4096, gpu="H200")) == str(pm.gemm_perfdata(T, 4096, 4096, gpu="H200"))
    g = pm.get_gpu("H200")
    assert _one_line(g) == (
        f"GPUSpec(H200: {g.peak_flops_per_s('bf16') / 1e12:,.0f} TFLOP/s bf16 dense, "
        f"{g.mem_bw_bytes_per_s / 1e12:.2f} TB/s HBM, {g.mem_bytes / 1e9:.0f} GB, {g.num_sms} SMs, "
        f"{g.boost_clock_hz / 1e6:.0f} MHz boost)"
    )
    assert str(g) == "H200"
    assert "GB" not in repr(dataclasses.replace(g, mem_bytes=None))  # a spec without a memory size still prints
    for name in pm.list_gpus():
        _one_line(pm.get_gpu(name), 140)


def test_recipe_repr_names_no_function_address():
    r = repr(pm.float8.get_recipe("rowwise"))
    assert r.startswith("Recipe(name='rowwise'") and "<function" not in r and "cast_kernels" not in r


def test_provenance_repr_is_its_line():
    p = pm.provenance("H100")
    assert repr(p) == f"Provenance({p.line()})" and "\n" not in repr(p) and len(repr(p)) < len(p.source) + 400
    assert p.source and p.source not in repr(p)  # the long source stays in the field
