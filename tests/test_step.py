"""The decoder-layer step model: formulas derived here, group rules, names, decisions, filters, errors."""

from __future__ import annotations

import dataclasses
import itertools
import json

import numpy as np
import pytest

import perfmodel as pm
from perfmodel import step
from perfmodel.errors import CalibrationError, InvalidShapeError, PerfModelError
from perfmodel.float8 import linear_time
from perfmodel.presets import LayerShape, UnknownLayerKindError, UnknownPresetError, get_preset
from perfmodel.step.params import LAYER_ASSUMPTIONS, LayerParams, load_layer_params, shipped

L8B = get_preset("llama3-8b").layer
P = shipped()


def kernel(lt, name, phase=None):
    hits = [k for k in lt.kernels if k.name == name and (phase is None or k.phase == phase)]
    assert len(hits) == 1, (name, [k.name for k in lt.kernels])
    return hits[0]


# -- formulas ---------------------------------------------------------------------------------------------
def _factor(k, converted) -> float:
    """The step factor of a kernel, by its kind as this test reads it: 16-bit tensor-core work (bf16 GEMMs,
    SDPA), float8 GEMMs (the GEMMs of a converted Linear), everything else memory-bound."""
    if k.part == "gemm":
        return P.step_factors["fp8_tensor_core" if k.name.split(".")[0] in converted else "bf16_tensor_core"]
    if k.kind in ("attention_fwd", "attention_bwd"):
        return P.step_factors["bf16_tensor_core"]
    return P.step_factors["memory"]


def test_parts_add_up_with_a_step_factor_per_kernel_kind():
    lt = step.layer_time("llama3-8b", gpu="H200", seq_len=4096, batch=2, recipe="rowwise")
    assert set(P.step_factors) == {"bf16_tensor_core", "fp8_tensor_core", "memory"}
    assert lt.step_s == pytest.approx(lt.gemm_s + lt.cast_s + lt.attention_s + lt.other_s)
    assert lt.kernel_s == pytest.approx(sum(k.time_s for k in lt.kernels))
    for k in lt.kernels:
        assert k.step_s == pytest.approx(k.time_s * _factor(k, lt.converted)), k.name
    assert lt.step_s == pytest.approx(sum(k.time_s * _factor(k, lt.converted) for k in lt.kernels))
    assert lt.in_step_factor == pytest.approx(lt.step_s / lt.kernel_s)
    assert min(P.step_factors.values()) <= lt.in_step_factor <= max(P.step_factors.values())
    assert lt.tokens == 8192 and lt.recompute_s == 0
    # a file without step factors scales every kernel by its in_step_factor
    flat = step.layer_time(
        "llama3-8b", gpu="H200", seq_len=4096, batch=2, recipe="rowwise",
        layer_params=dataclasses.replace(P, step_factors={}),
    )  # fmt: skip
    assert flat.step_s == pytest.approx(flat.kernel_s * P.in_step_factor)


def test_attention_kernels_follow_the_flop_formula():
    b, s = 2, 4096
    lt = step.layer_time(L8B, gpu="H200", seq_len=s, batch=b)
    fwd_flops = 2 * b * s * s * 32 * 128  # causal: half of 4·b·s²·H·hd
    peak = 989.5e12  # H200 dense bf16
    rows = b * s * 32  # query rows x heads, each with a fixed cost besides the FLOPs
    assert P.attention_fwd_row_s > 0 and P.attention_bwd_row_s > 0
    assert kernel(lt, "sdpa_fwd").time_s == pytest.approx(
        P.elementwise_latency_s + fwd_flops / (P.attention_fwd_fraction * peak) + rows * P.attention_fwd_row_s
    )
    assert kernel(lt, "sdpa_bwd").time_s == pytest.approx(
        P.elementwise_latency_s + 2.5 * fwd_flops / (P.attention_bwd_fraction * peak) + rows * P.attention_bwd_row_s
    )
    # the row cost makes long sequences run closer to the FLOP rate: time grows less than s² from 4096 to 16384
    long = step.layer_time(L8B, gpu="H200", seq_len=4 * s, batch=b)
    ratio = (kernel(long, "sdpa_fwd").time_s - P.elementwise_latency_s) / (
        kernel(lt, "sdpa_fwd").time_s - P.elementwise_latency_s
    )
    assert 4 < ratio < 16
    # GQA (32 query heads, 8 KV heads): two head reductions in backward; MHA has none
    names = {k.name for k in lt.kernels if k.part == "attention"}
    assert {"sdpa_bwd.reduce_head_dk", "sdpa_bwd.reduce_head_dv"} <= names
    mha = dataclasses.replace(L8B, kv_heads=32)
    assert not any("reduce_head" in k.name for k in step.layer_time(mha, gpu="H200", seq_len=s, batch=b).kernels)


def test_elementwise_kernels_are_bytes_over_bandwidth():
    T, d, f = 4096, 4096, 14336
    lt = step.layer_time(L8B, gpu="H200", seq_len=T, batch=1)
    bw = 4.8e12
    lat, frac = P.elementwise_latency_s, P.elementwise_bw_fraction
    assert kernel(lt, "attention_norm").time_s == pytest.approx(lat + 2 * 2 * T * d / (frac * bw))
    assert kernel(lt, "activation").time_s == pytest.approx(lat + 3 * 2 * T * f / (frac * bw))  # silu(g1)*g3
    assert kernel(lt, "activation_bwd").time_s == pytest.approx(lat + 5 * 2 * T * f / (frac * bw))
    gelu = step.layer_time("gpt2", gpu="H200", seq_len=1024, batch=4)
    assert kernel(gelu, "activation").time_s == pytest.approx(lat + 2 * 2 * 4096 * 3072 / (frac * bw))
    assert not any(k.name.startswith("rope") for k in gelu.kernels)  # GPT-2: learned positions


def test_gemms_are_the_linear_model_times_the_layer_factor():
    T = 8192
    lt = step.layer_time(L8B, gpu="H200", seq_len=T, batch=1, recipe="tensorwise", convert=["w13"])
    want = 0.0
    for lin in L8B.linears():
        rec = "tensorwise" if lin.name in ("w1", "w3") else None
        for g in linear_time(T, lin.in_features, lin.out_features, rec, "H200").gemms:
            key = g.dtype if g.scaling is None else f"{g.dtype}/{g.scaling}"
            kind = "bf16_tensor_core" if g.scaling is None else "fp8_tensor_core"
            want += g.time_s * P.gemm_factor(key) * P.step_factors[kind]
    assert lt.gemm_s == pytest.approx(want)
    # another time model: the in-layer factors (corrections of the calibrated model) are 1
    roof = step.layer_time(L8B, gpu="H200", seq_len=T, batch=1, time_model="roofline")
    plain = sum(
        linear_time(T, lin.in_features, lin.out_features, None, "H200", time_model="roofline").gemm_s
        for lin in L8B.linears()
    )
    assert roof.gemm_s == pytest.approx(plain * P.step_factors["bf16_tensor_core"])
    assert roof.provenance.kind == "roofline"


def test_the_boost_window_caps_the_sustained_slowdown_of_long_steps():
    """step = K + min(1, window / K) · Σ_kind (f_kind − 1) · K_kind: a step shorter than the window gets every
    kind's full factor, a longer one a constant (f − 1) · window on top of its kernel time."""
    assert P.boost_window_s is not None and 0.005 <= P.boost_window_s <= 0.2
    long = step.layer_time("llama3-70b", gpu="H200", seq_len=8192, batch=4, recipe="tensorwise")
    assert float(long.kernel_s) > 2 * P.boost_window_s
    by_kind = {"bf16_tensor_core": 0.0, "fp8_tensor_core": 0.0, "memory": 0.0}
    for k in long.kernels:
        kind = "memory"
        if k.part == "gemm":
            kind = "fp8_tensor_core" if k.name.split(".")[0] in long.converted else "bf16_tensor_core"
        elif k.kind in ("attention_fwd", "attention_bwd"):
            kind = "bf16_tensor_core"
        by_kind[kind] += float(k.time_s)
    K = sum(by_kind.values())
    extra = P.boost_window_s / K * sum((P.step_factors[kind] - 1) * t for kind, t in by_kind.items())
    assert float(long.step_s) == pytest.approx(K + extra)
    for kind, f in P.step_factors.items():
        assert long.step_factors[kind] == pytest.approx(1 + (f - 1) * P.boost_window_s / K)
    # without a window every kernel gets its kind's whole factor
    flat = dataclasses.replace(P, boost_window_s=None)
    whole = step.layer_time("llama3-70b", gpu="H200", seq_len=8192, batch=4, recipe="tensorwise", layer_params=flat)
    assert float(whole.step_s) == pytest.approx(sum(P.step_factors[kind] * t for kind, t in by_kind.items()))
    # sympy: the window is a Min, equal to the numbers once substituted
    sp = pytest.importorskip("sympy")
    s_ = sp.Symbol("s", positive=True)
    sym = step.layer_time("llama3-70b", gpu="H200", seq_len=s_, batch=4, recipe="tensorwise")
    assert sym.step_s.has(sp.Min)
    assert float(sym.step_s.subs(s_, 8192)) == pytest.approx(float(long.step_s), rel=1e-9)
    with pytest.raises(CalibrationError, match="boost_window_s"):
        dataclasses.replace(P, boost_window_s=-1.0)


# -- float8 interactions -----------------------------------------------------------------------------------
def test_a_shared_input_is_cast_once_per_group():
    one = step.layer_time(L8B, gpu="H200", seq_len=4096, recipe="tensorwise", convert=["wq"])
    three = step.layer_time(L8B, gpu="H200", seq_len=4096, recipe="tensorwise", convert=["qkv"])
    inputs = [k.name for k in three.kernels if ".input." in k.name and k.kind in ("cast", "launch")]
    assert inputs and all(n.startswith("wq.") for n in inputs)
    assert [k.name for k in one.kernels if ".input." in k.name] == [
        k.name for k in three.kernels if ".input." in k.name
    ]
    # weights and grad_outputs are per Linear
    for name in ("wk", "wv"):
        assert any(k.name.startswith(f"{name}.weight.") for k in three.kernels)
        assert any(k.name.startswith(f"{name}.grad_output.") for k in three.kernels)


def test_amax_fuses_into_norm_and_activation_not_into_attention_output():
    lt = step.layer_time(L8B, gpu="H200", seq_len=4096, recipe="tensorwise")
    names = {k.name for k in lt.kernels}
    # q/k/v input (norm output), w1/w3 input (norm), w2 input (activation): amax fused, no standalone stage 1
    for lin in ("wq", "w1", "w2"):
        assert f"{lin}.input.amax_fused_into_producer" in names and f"{lin}.input.amax_stage1" not in names
    assert "wo.input.amax_stage1" in names and "wo.input.amax_fused_into_producer" not in names
    # grad_outputs: RoPE bwd (q, k), norm bwd (o), SwiGLU bwd (w1, w3) fuse; cuDNN's dV and the layer output don't
    for lin in ("wq", "wk", "wo", "w1", "w3"):
        assert f"{lin}.grad_output.amax_fused_into_producer" in names
    for lin in ("wv", "w2"):
        assert f"{lin}.grad_output.amax_stage1" in names
    fused = kernel(lt, "wq.input.amax_fused_into_producer")
    assert fused.time_s == pytest.approx(2 * 4096 * 4096 / 4.8e12 * P.fused_amax_cost)
    assert "qkv.input.transposed_cast_in_attention_norm_bwd" in names
    rw = step.layer_time(L8B, gpu="H200", seq_len=4096, recipe="rowwise")
    assert "qkv.input.transposed_cast_in_attention_norm_bwd" not in {k.name for k in rw.kernels}


def test_bf16_has_no_casts_and_convert_is_ignored():
    lt = step.layer_time(L8B, gpu="H200", seq_len=4096, recipe="bf16", convert=["qkv"])
    assert lt.cast_s == 0 and lt.converted == () and lt.groups == ()


# -- names ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "convert",
    [
        ["qkv"],
        ["wq", "wk", "wv"],
        ["attention.wq", "attention.wk", "attention.wv"],
        ["q_proj", "k_proj", "v_proj"],
        ["model.layers.0.self_attn.q_proj", "self_attn.k_proj", "layers.3.attention.wv"],
    ],
)
def test_convert_accepts_every_naming_convention(convert):
    lt = step.layer_time(L8B, gpu="H200", seq_len=4096, recipe="tensorwise", convert=convert)
    assert lt.converted == ("wq", "wk", "wv") and lt.groups == ("qkv",)


def test_hf_mlp_names():
    lt = step.layer_time(
        L8B, gpu="H200", seq_len=4096, recipe="rowwise", convert=["gate_proj", "mlp.up_proj", "down_proj"]
    )
    assert lt.groups == ("w13", "w2")


def test_unknown_linear_names_the_value_and_choices():
    with pytest.raises(
        step.UnknownLinearError, match=r"unknown Linear or group of 'llama3-8b' 'qk'.*Valid choices: .*qkv"
    ):
        step.layer_time(L8B, gpu="H200", seq_len=4096, recipe="tensorwise", convert=["qk"])
    gelu = get_preset("gpt2").layer
    with pytest.raises(step.UnknownLinearError, match="'w3'"):
        step.layer_time(gelu, gpu="H200", seq_len=1024, recipe="tensorwise", convert=["w3"])  # no w3 in a GeLU MLP


def test_ineligible_linears():
    odd = LayerShape(name="odd", hidden=1000, ffn=4000, heads=8, rope=False)  # K = 1000: not a multiple of 16
    assert step.eligible_groups(odd) == ()
    lt = step.layer_time(odd, gpu="H200", seq_len=1024, recipe="tensorwise")  # None: every *eligible* Linear
    assert lt.converted == () and lt.cast_s == 0
    with pytest.raises(step.IneligibleLinearError, match=r"wq \(1000x1000\).*multiples of 16"):
        step.layer_time(odd, gpu="H200", seq_len=1024, recipe="tensorwise", convert=["wq"])


# -- inputs, backends, errors ------------------------------------------------------------------------------
def test_arrays_and_symbols():
    seqs = np.array([1024, 4096, 8192])
    arr = step.layer_time("llama3-8b", gpu="H100", seq_len=seqs, recipe="rowwise").step_s
    one = [float(step.layer_time("llama3-8b", gpu="H100", seq_len=int(s), recipe="rowwise").step_s) for s in seqs]
    assert np.allclose(arr, one)
    sympy = pytest.importorskip("sympy")
    s = sympy.Symbol("s", positive=True, integer=True)
    expr = step.layer_time("llama3-8b", gpu="H200", seq_len=s, recipe="bf16", time_model="original").step_s
    want = step.layer_time("llama3-8b", gpu="H200", seq_len=2048, recipe="bf16", time_model="original").step_s
    assert float(expr.subs(s, 2048)) == pytest.approx(float(want))
    assert float(step.layer_time("llama3-8b", gpu="H200", seq_len=2048.0).step_s) == pytest.approx(
        float(step.layer_time("llama3-8b", gpu="H200", seq_len=2048).step_s)
    )


def test_unsupported_layers_say_what_is_missing():
    # MoE presets with GQA attention are priced now (tests/test_step_moe.py); MLA ones still say what is missing
    with pytest.raises(step.UnsupportedLayerError, match=r"deepseek-v3-16b.*MLA.*MoELayer.*expert_block_time"):
        step.layer_time("deepseek-v3-16b", gpu="H200", seq_len=4096)
    with pytest.raises(step.UnsupportedLayerError, match="MLA attention"):
        step.best_convert("deepseek-v3", gpu="H200", seq_len=4096)
    with pytest.raises(step.UnsupportedLayerError, match="got int"):
        step.layer_time(42, gpu="H200", seq_len=4096)
    with pytest.raises(UnknownPresetError, match="llama3-7b"):
        step.layer_time("llama3-7b", gpu="H200", seq_len=4096)
    assert issubclass(step.UnsupportedLayerError, PerfModelError) and issubclass(step.UnsupportedLayerError, ValueError)


def test_bad_arguments():
    with pytest.raises(PerfModelError, match=r"activation checkpointing mode 'partial'.*full, none, selective"):
        step.layer_time(L8B, gpu="H200", seq_len=4096, ac="partial")
    with pytest.raises(InvalidShapeError, match="seq_len"):
        step.layer_time(L8B, gpu="H200", seq_len=0)
    with pytest.raises(pm.UnsupportedFormatError, match="mxfp8"):
        step.layer_time(L8B, gpu="H100", seq_len=4096, recipe="mxfp8")
    with pytest.raises(pm.UnknownRecipeError):
        step.layer_time(L8B, gpu="H200", seq_len=4096, recipe="fp4")


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(hidden=4096, ffn=14336, heads=30), r"heads \(30\) does not divide hidden \(4096\); pass head_dim"),
        (dict(hidden=4096, ffn=14336, heads=32, kv_heads=5), r"heads \(32\) must be a multiple of kv_heads \(5\)"),
        (dict(hidden=4096, ffn=0, heads=32), "ffn must be a positive int"),
        (dict(hidden=4096, ffn=14336, heads=32, head_dim=127), "head_dim must be even"),
        (dict(hidden=4096.0, ffn=14336, heads=32), "hidden must be a positive int"),
    ],
)
def test_layer_shape_validation(kw, match):
    with pytest.raises(InvalidShapeError, match=match):
        LayerShape(name="x", **kw)


def test_layer_shape_kinds_and_defaults():
    with pytest.raises(UnknownLayerKindError, match=r"unknown norm kind 'batchnorm'.*layernorm, rmsnorm"):
        LayerShape(name="x", hidden=1024, ffn=4096, heads=8, norm="batchnorm")
    with pytest.raises(UnknownLayerKindError, match="unknown activation kind 'moe'"):
        LayerShape(name="x", hidden=1024, ffn=4096, heads=8, activation="moe")
    s = LayerShape(name="x", hidden=1024, ffn=4096, heads=8, norm="RMSNorm", activation="GELU")
    assert (s.kv_heads, s.head_dim, s.norm, s.activation) == (8, 128, "rmsnorm", "gelu")
    assert s.groups == {"qkv": ("wq", "wk", "wv"), "o": ("wo",), "w1": ("w1",), "w2": ("w2",)}
    wide = LayerShape(name="gemma-like", hidden=3072, ffn=24576, heads=16, head_dim=256)  # q_dim 4096 != hidden
    first = wide.linears()[0]
    assert (first.name, first.in_features, first.out_features) == ("wq", 3072, 4096)


# -- activation checkpointing --------------------------------------------------------------------------------
def test_activation_checkpointing():
    none = step.layer_time(L8B, gpu="H200", seq_len=8192, recipe="tensorwise")
    sel = step.layer_time(L8B, gpu="H200", seq_len=8192, recipe="tensorwise", ac="selective")
    full = step.layer_time(L8B, gpu="H200", seq_len=8192, recipe="tensorwise", ac="full")
    assert 0 < sel.recompute_s < full.recompute_s
    assert full.step_s == pytest.approx(none.step_s + full.recompute_s)
    rerun = {k.name for k in full.kernels if k.phase == "recompute"}
    assert "sdpa_fwd" in rerun and "wq.output" in rerun and "w2.output" not in rerun and "residual" not in rerun
    sel_gemms = {k.name for k in sel.kernels if k.phase == "recompute" and k.part == "gemm"}
    assert sel_gemms == {"wk.output", "wo.output", "w3.output"}  # every second Linear in execution order
    assert not any(k.part == "attention" for k in sel.kernels if k.phase == "recompute")


# -- decisions -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("recipe, batch", [("tensorwise", 1), ("rowwise", 1), ("rowwise", 4)])
def test_best_convert_is_the_fastest_subset(recipe, batch):
    lay = LayerShape(name="d2048", hidden=2048, ffn=8192, heads=16, kv_heads=8)
    opts = dict(gpu="H200", seq_len=4096, batch=batch)
    times = {(): float(step.layer_time(lay, recipe="bf16", **opts).step_s)}
    for n in range(1, 5):
        for sub in itertools.combinations(("qkv", "o", "w13", "w2"), n):
            times[sub] = float(step.layer_time(lay, recipe=recipe, convert=sub, **opts).step_s)
    assert step.best_convert(lay, recipe=recipe, **opts) == min(times, key=lambda k: (times[k], len(k)))


def test_best_convert_options():
    opts = dict(gpu="H200", seq_len=4096, batch=4, recipe="tensorwise")
    assert step.best_convert("llama3-8b", **opts) == ("qkv", "o", "w13", "w2")
    assert step.best_convert("llama3-8b", min_gain=0.9, **opts) == ()
    assert step.best_convert("llama3-8b", candidates=[(), ("w2",), ("o",)], **opts) == ("w2",)
    with pytest.raises(step.UnknownLinearError, match="'mlp'"):
        step.best_convert("llama3-8b", candidates=[("mlp",)], **opts)
    with pytest.raises(PerfModelError, match="one number each"):
        step.best_convert("llama3-8b", gpu="H200", seq_len=np.array([1024, 2048]))


def test_step_report_for_the_lead():
    rep = step.step_report("llama3-70b", gpu="H100", seq_len=8192, batch=1, recipe="rowwise")
    assert rep.layers == 80 and rep.best.groups == rep.chosen
    assert rep.speedup_best >= rep.speedup_all - 1e-12 and rep.speedup_best >= 1
    d = json.loads(json.dumps(rep.to_dict()))
    assert d["stack_step_s"]["bf16"] == pytest.approx(float(rep.bf16.step_s) * 80)
    assert set(d["bf16"]["parts_s"]) == {"gemm", "cast", "attention", "other"}
    assert "llama3-70b x 80 layers" in str(rep) and "provenance:" in str(rep)


# -- provenance and parameters -------------------------------------------------------------------------------
def test_provenance_names_the_layer_data():
    h200 = step.layer_time(L8B, gpu="H200", seq_len=4096).provenance
    assert h200.kind == "measured" and "h200_layer_quiet_large_2026-12-01.json" in h200.source
    assert h200.expected_error.speedup_pct == P.residuals["heldout"]["speedup_mdape_pct"]
    h100 = step.layer_time(L8B, gpu="H100", seq_len=4096).provenance
    assert h100.kind == "transferred" and set(LAYER_ASSUMPTIONS) <= set(h100.assumptions)
    assert "layer steps validated on the H200 only" in h100.expected_error.basis
    assert step.layer_time(L8B, gpu="B200", seq_len=4096).provenance.kind == "estimated"


def test_parameters_transfer_by_peak_and_bandwidth():
    h200 = step.layer_time(L8B, gpu="H200", seq_len=4096)
    h100 = step.layer_time(L8B, gpu="H100", seq_len=4096)
    f = 2 * 4096 * 4096 * 32 * 128
    assert kernel(h100, "sdpa_fwd").time_s - P.elementwise_latency_s == pytest.approx(
        (kernel(h200, "sdpa_fwd").time_s - P.elementwise_latency_s)
        * pm.get_gpu("H200").peak_flops_per_s("bf16")
        / pm.get_gpu("H100").peak_flops_per_s("bf16")
    )
    h100_peak, h200_peak = (pm.get_gpu(g).peak_flops_per_s("bf16") for g in ("H100", "H200"))
    assert kernel(h100, "sdpa_fwd").time_s == pytest.approx(
        P.elementwise_latency_s
        + f / (P.attention_fwd_fraction * h100_peak)
        + 4096 * 32 * P.attention_fwd_row_s * h200_peak / h100_peak
    )
    bw = pm.get_gpu("H100").mem_bw_bytes_per_s
    assert kernel(h100, "ffn_norm").time_s == pytest.approx(
        P.elementwise_latency_s + 8 * 4096 * 4096 / (P.elementwise_bw_fraction * bw)
    )


def test_layer_params_round_trip_and_validation(tmp_path):
    path = P.save(tmp_path / "layer.json")
    assert load_layer_params(path) == P
    bad = P.to_dict()
    bad["params"]["attention_fwd_fraction"] = 1.7
    with pytest.raises(CalibrationError, match=r"<x>: LayerParams.attention_fwd_fraction must be .* \(0.0, 1.2\]"):
        LayerParams.from_dict(bad, origin="<x>")
    bad = P.to_dict() | {"schema": "perfmodel.layer_calibration/0"}
    with pytest.raises(CalibrationError, match="schema"):
        LayerParams.from_dict(bad)
    bad = P.to_dict()
    bad["params"]["surprise"] = 1
    with pytest.raises(CalibrationError, match="unknown parameters"):
        LayerParams.from_dict(bad)
    (tmp_path / "x.json").write_text("[1]")
    with pytest.raises(CalibrationError, match="expected a JSON object"):
        load_layer_params(tmp_path / "x.json")
    custom = dataclasses.replace(P, in_step_factor=1.0, step_factors={})
    lt = step.layer_time(L8B, gpu="H200", seq_len=4096, layer_params=custom)
    assert lt.step_s == pytest.approx(lt.kernel_s)
    for kinds, match in (({"gpu": 1.0}, "unknown kernel kinds"), ({"memory": 0.1}, r"step_factors\['memory'\]")):
        with pytest.raises(CalibrationError, match=match):
            dataclasses.replace(P, step_factors=kinds)


# -- module filter -------------------------------------------------------------------------------------------
class FakeLinear:
    def __init__(self, k: int, n: int) -> None:
        self.in_features, self.out_features = k, n


def test_filter_from_a_preset_matches_both_conventions():
    flt = step.module_filter("llama3-8b", gpu="H200", seq_len=4096, batch=1, recipe="rowwise")
    chosen = step.best_convert("llama3-8b", gpu="H200", seq_len=4096, batch=1, recipe="rowwise")
    assert flt.groups == chosen
    shapes = {lin.name: (lin.in_features, lin.out_features) for lin in L8B.linears()}
    for tt, hf in [
        ("attention.wq", "self_attn.q_proj"),
        ("feed_forward.w1", "mlp.gate_proj"),
        ("feed_forward.w2", "mlp.down_proj"),
    ]:
        canon = tt.split(".")[1]
        want = any(canon in L8B.groups[g] for g in chosen)
        assert flt(FakeLinear(*shapes[canon]), f"layers.7.{tt}") is want
        assert flt(FakeLinear(*shapes[canon]), f"model.layers.7.{hf}") is want
    assert flt(FakeLinear(4096, 128256), "output") is False and flt(object(), "layers.0.attention") is False
    with pytest.raises(
        step.ModuleShapeError, match=r"'layers.0.attention.wq' is 2048x2048, but llama3-8b's wq is 4096x4096"
    ):
        flt(FakeLinear(2048, 2048), "layers.0.attention.wq")


def test_filter_from_model_shapes():
    d, f, q, kv = 2048, 8192, 2048, 1024
    block = {"attention.wq": (d, q), "attention.wk": (d, kv), "attention.wv": (d, kv), "attention.wo": (q, d)}
    block |= {"feed_forward.w1": (d, f), "feed_forward.w3": (d, f), "feed_forward.w2": (f, d)}
    shapes = {f"layers.{i}.{k}": v for i in range(2) for k, v in block.items()} | {"output": (d, 32000)}
    shapes |= {"layers.0.moe.experts.0.w1": (d, 512)}  # a block without attention: skipped, not guessed
    flt = step.module_filter(shapes, gpu="H200", seq_len=4096, batch=1, recipe="tensorwise", head_dim=128)
    lay = LayerShape(name="d2048", hidden=d, ffn=f, heads=16, kv_heads=8)
    want = step.best_convert(lay, gpu="H200", seq_len=4096, batch=1, recipe="tensorwise")
    assert flt.groups == want and set(flt.decisions) == {"layers.0", "layers.1"}
    assert "layers.0.moe.experts.0.w1" in flt.skipped and "output" in flt.skipped
    assert flt(FakeLinear(d, f), "layers.1.feed_forward.w1") is ("w13" in want)
    assert flt(FakeLinear(d, 512), "layers.0.moe.experts.0.w1") is False
    with pytest.raises(step.ModuleShapeError, match="pass head_dim="):
        step.module_filter(shapes, gpu="H200", seq_len=4096, recipe="tensorwise")
    with pytest.raises(step.UnknownLinearError, match="no decoder block"):
        step.module_filter({"encoder.fc": (16, 16)}, gpu="H200", seq_len=4096, head_dim=8)
    with pytest.raises(step.UnknownLinearError, match="got int"):
        step.module_filter(3, gpu="H200", seq_len=4096)


class Unreadable:
    in_features = "many"
    out_features = 16


def test_filter_names_a_module_it_cannot_read():
    flt = step.module_filter("llama3-8b", gpu="H200", seq_len=4096, recipe="tensorwise")
    with pytest.raises(step.ModuleShapeError, match=r"cannot read the shape of 'layers.0.attention.wq' \(Unreadable\)"):
        flt(Unreadable(), "layers.0.attention.wq")


def test_filter_on_a_torch_model_with_torchao():
    torch = pytest.importorskip("torch")
    float8 = pytest.importorskip("torchao.float8")
    from perfmodel.bench._decoder import DecoderConfig, build_stack

    with torch.device("meta"):
        model = build_stack(DecoderConfig(dim=2048, ffn=8192, heads=16, kv_heads=8), 2, device="meta")
    flt = step.module_filter(model, gpu="H200", seq_len=4096, batch=4, recipe="tensorwise", head_dim=128)
    float8.convert_to_float8_training(
        model, config=float8.Float8LinearConfig.from_recipe_name("tensorwise"), module_filter_fn=flt
    )
    lay = LayerShape(name="d2048", hidden=2048, ffn=8192, heads=16, kv_heads=8)
    groups = step.best_convert(lay, gpu="H200", seq_len=4096, batch=4, recipe="tensorwise")
    converted = {n.split(".", 2)[2] for n, m in model.named_modules() if type(m).__name__ == "Float8Linear"}
    want = {
        f"{'attention' if c in ('wq', 'wk', 'wv', 'wo') else 'feed_forward'}.{c}" for g in groups for c in lay.groups[g]
    }
    assert converted == want and groups


def test_mix_order_rule_by_hand():
    from perfmodel.step.kernels import mix_order_cast

    # rows = tokens, cols = hidden: rows*cols >= 5*2**20, rows >= 2*cols, rows >= 4096, cols <= 16384, batch 1
    assert mix_order_cast(2048, 1, 4096) is True
    assert mix_order_cast(2048, 4, 4096) is False  # batch 4: the cast goes to a looped kernel
    assert mix_order_cast(4096, 1, 4096) is False  # 4096 tokens < 2 x 4096
    assert mix_order_cast(4096, 1, 8192) is True  # Llama 3 8B at seq 8192
    assert mix_order_cast(1024, 1, 4096) is False  # 4096 x 1024 < 5 x 2**20
    assert mix_order_cast(2048, 1, 2048) is False  # fewer than 4096 rows
    assert mix_order_cast(20480, 1, 65536) is False  # more than 16384 columns
    got = mix_order_cast(2048, np.array([1, 2, 1]), np.array([4096, 4096, 2048]))
    np.testing.assert_array_equal(got, [True, False, False])
    import sympy

    b, s = sympy.symbols("b s", positive=True, integer=True)
    cond = mix_order_cast(2048, b, s)
    for bv, sv in ((1, 4096), (4, 4096), (1, 2048), (1, 8192)):
        assert bool(cond.subs({b: bv, s: sv})) is mix_order_cast(2048, bv, sv)


def _mix_kernels(lt):
    return [k for k in lt.kernels if k.kind == "mix_order_cast" and float(k.bytes) > 0]


def test_mix_order_variant_is_priced_where_the_rule_fires():
    p = shipped()
    assert p.mix_order_cast_cost is not None and p.mix_order_cast_cost > p.norm_bwd_cast_cost
    kw = dict(gpu="H200", seq_len=4096, batch=1, recipe="tensorwise")
    lay = LayerShape(name="d2048", hidden=2048, ffn=8192, heads=16, kv_heads=8)
    lt = step.layer_time(lay, **kw)
    (k,) = _mix_kernels(lt)
    bw = pm.get_gpu("H200").mem_bw_bytes_per_s
    assert float(k.bytes) == 3 * 4096 * 2048
    assert float(k.time_s) == pytest.approx(3 * 4096 * 2048 / bw * p.mix_order_cast_cost, rel=1e-12)
    looped = [x for x in lt.kernels if x.kind == "norm_bwd_cast"]
    assert all(float(x.bytes) == 0 for x in looped)
    # q alone does not fuse the cast; rowwise has no such kernel; batch 4 or the switch off: the looped price
    assert not _mix_kernels(step.layer_time(lay, **kw, convert=["wq"]))
    assert not _mix_kernels(step.layer_time(lay, **{**kw, "recipe": "rowwise"}))
    assert not _mix_kernels(step.layer_time(lay, **{**kw, "batch": 4}))
    off = step.layer_time(lay, **kw, mix_order_norm_bwd=False)
    assert not _mix_kernels(off)
    assert float(off.kernel_s) < float(lt.kernel_s)
    (nb,) = [x for x in off.kernels if x.kind == "norm_bwd_cast"]
    assert float(nb.time_s) == pytest.approx(3 * 4096 * 2048 / bw * p.norm_bwd_cast_cost, rel=1e-12)
    with pytest.raises(PerfModelError, match="mix_order_norm_bwd"):
        step.layer_time(lay, **kw, mix_order_norm_bwd="yes")
    # parameters fitted without such a step price it as the looped kernel (the old model), not as free
    old = dataclasses.replace(p, mix_order_cast_cost=None)
    assert float(step.layer_time(lay, **kw, layer_params=old).kernel_s) == pytest.approx(float(off.kernel_s))


def test_mix_order_variant_symbolic_matches_numeric():
    import sympy

    b = sympy.Symbol("b", positive=True, integer=True)
    lay = LayerShape(name="d2048", hidden=2048, ffn=8192, heads=16, kv_heads=8)
    sym = step.layer_time(lay, gpu="H200", seq_len=4096, batch=b, recipe="tensorwise")
    for bv in (1, 2):
        num = step.layer_time(lay, gpu="H200", seq_len=4096, batch=bv, recipe="tensorwise")
        assert float(sym.kernel_s.subs(b, bv)) == pytest.approx(float(num.kernel_s), rel=1e-9)


def test_host_bound_risk_flags_short_steps():
    import sympy

    from perfmodel.step.layer import HOST_BOUND_KERNEL_S

    small = step.layer_time("gpt2", gpu="H200", seq_len=1024, batch=8)
    big = step.layer_time("llama3-8b", gpu="H200", seq_len=8192, batch=1)
    assert float(small.kernel_s) < HOST_BOUND_KERNEL_S < float(big.kernel_s)
    assert small.host_bound_risk is True or bool(small.host_bound_risk) is True
    assert bool(big.host_bound_risk) is False
    arr = step.layer_time("llama3-8b", gpu="H200", seq_len=np.array([512, 8192]), batch=1)
    np.testing.assert_array_equal(arr.host_bound_risk, [True, False])
    s = sympy.Symbol("s", positive=True, integer=True)
    cond = step.layer_time("llama3-8b", gpu="H200", seq_len=s, batch=1).host_bound_risk
    assert bool(cond.subs(s, 512)) is True and bool(cond.subs(s, 8192)) is False


def test_cast_factors_are_per_group_with_fallbacks():
    p = shipped()
    keys = set(p.cast_factors)
    assert {f"{r}/{g}" for r in ("tensorwise", "rowwise") for g in ("qkv", "o", "w13", "w2")} <= keys
    assert "rowwise_with_gw_hp" in keys  # measured with every Linear only: one factor for the recipe
    assert p.cast_factor("tensorwise/qkv") == p.cast_factors["tensorwise/qkv"]
    assert p.cast_factor("rowwise_with_gw_hp/w2") == p.cast_factors["rowwise_with_gw_hp"]
    assert p.cast_factor("tensorwise/w1") == p.cast_factors["tensorwise/w13"]  # GeLU's w1: the ffn norm's input
    assert p.cast_factor("mxfp8/w2") == p.cast_factors["rowwise/w2"]
    groups = [p.cast_factors[f"rowwise/{g}"] for g in ("qkv", "o", "w13", "w2")]
    assert p.cast_factor("blockwise") == pytest.approx(sum(groups) / 4)
    assert p.cast_factor("unknown/qkv") == 1.0
    # a group's cast kernels in a layer are priced with its own factor
    lt = step.layer_time("llama3-8b", gpu="H200", seq_len=4096, recipe="rowwise", convert=["w2"])
    casts = [k for k in lt.kernels if k.kind == "cast"]
    assert casts and all(k.group == "w2" for k in casts)


def test_tile_model_keeps_the_layer_cast_factors_and_says_what_was_validated():
    # under time_model="tiles" the casts are the calibrated model's (the tile model's base), so the fitted cast factors
    # apply; the GEMMs are the tile model's, without the calibrated model's in-layer factor
    kw = dict(gpu="H200", seq_len=8192, batch=1, recipe="rowwise")
    cal, tiles = step.layer_time("llama3-8b", **kw), step.layer_time("llama3-8b", time_model="tiles", **kw)
    assert float(tiles.cast_s) == pytest.approx(float(cal.cast_s), rel=1e-12)
    p = shipped()
    doubled = dataclasses.replace(
        p,
        gemm_factors={k: 2 * v for k, v in p.gemm_factors.items()},
        cast_factors={k: 2 * v for k, v in p.cast_factors.items()},
    )
    t2 = step.layer_time("llama3-8b", time_model="tiles", layer_params=doubled, **kw)
    c2 = step.layer_time("llama3-8b", layer_params=doubled, **kw)

    def kernel_sum(lt, part):
        return sum(float(k.time_s) for k in lt.kernels if k.part == part)

    assert kernel_sum(t2, "gemm") == pytest.approx(kernel_sum(tiles, "gemm"), rel=1e-12)  # no GEMM factor
    assert kernel_sum(c2, "gemm") == pytest.approx(2 * kernel_sum(cal, "gemm"), rel=1e-12)
    # every cast kernel doubles (the fused-amax kinds are priced by their own costs, not the factors)
    casts = [k for k in tiles.kernels if k.kind == "cast"]
    casts2 = [k for k in t2.kernels if k.kind == "cast"]
    assert casts
    assert all(float(b.time_s) == pytest.approx(2 * float(a.time_s)) for a, b in zip(casts, casts2, strict=True))
    assert tiles.provenance.expected_error.speedup_pct is None
    assert "not with the tile model" in tiles.provenance.expected_error.basis
    assert cal.provenance.expected_error.speedup_pct is not None


def test_named_errors_for_bad_step_arguments():
    kw = dict(gpu="H200", seq_len=8192)
    with pytest.raises(PerfModelError, match="table\\(\\) prints one configuration"):
        step.layer_time("llama3-8b", gpu="H200", seq_len=np.array([4096, 8192])).table()
    for bad in ("0.1", None, True, 1.5, -0.1):
        with pytest.raises(PerfModelError, match="min_gain must be a fraction"):
            step.best_convert("llama3-8b", min_gain=bad, **kw)
    for bad in (5, "qkv"):
        with pytest.raises(PerfModelError, match="candidates must be an iterable"):
            step.best_convert("llama3-8b", candidates=bad, **kw)
    with pytest.raises(PerfModelError, match="each candidate"):
        step.best_convert("llama3-8b", candidates=[3], **kw)
    # a group named alone is one subset, not its letters
    assert step.best_convert("llama3-8b", candidates=["w13", ("w13", "w2")], **kw) == step.best_convert(
        "llama3-8b", candidates=[("w13",), ("w13", "w2")], **kw
    )
    with pytest.raises(PerfModelError, match="layer_params must be a LayerParams"):
        step.layer_time("llama3-8b", layer_params={}, **kw)
    with pytest.raises(InvalidShapeError, match="tokens per step \\(batch x seq_len\\)"):
        step.layer_time("llama3-8b", gpu="H200", seq_len=2**40, batch=2)
