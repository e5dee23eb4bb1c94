"""Mixed-precision MFU (perfmodel.train.mfu): FLOPs by format against hand counts, the mixed peak, and a
measured run's throughput turned into MFU."""

import pytest

import perfmodel as pm
import perfmodel.train as train
from perfmodel.errors import InvalidShapeError

# Llama 3 8B (config.json): hidden 4096, ffn 14336, 32 heads of 128, 8 KV heads, 32 layers, vocab 128256
D, F, L, V, S = 4096, 14336, 32, 128256, 8192
LINEAR = D * D + 2 * D * 1024 + D * D + 3 * D * F  # wq, wk, wv, wo, w1, w3, w2 per layer
BF16_REST = 6 * (L * 2 * D + V * D + D) + 12 * L * 32 * 128 * S  # norm weights, output layer + final norm, SDPA


def _cfg(recipe, **kw):
    est = train.estimate("llama3-8b", gpu="H100", n_gpus=8, seq_len=S, batch_per_gpu=1, recipe=recipe, **kw)
    return est, train.step_flops(est.config)


def test_bf16_flops_are_torchtitans_count_and_mfu_is_the_bf16_one():
    est, fl = _cfg("bf16")
    assert fl.per_token == {"bf16": 6 * L * LINEAR + BF16_REST}
    assert fl.total_per_token * S == est.model_flops_per_step
    assert est.mfu == pytest.approx(est.mfu_bf16, rel=1e-12)


def test_tensorwise_splits_each_linear_into_three_gemms_by_format():
    est, fl = _cfg("tensorwise")
    # tensorwise: output GEMM e4m3 x e4m3, grad_input and grad_weight use e5m2 gradients
    assert fl.per_token["fp8_e4m3"] == 2 * L * LINEAR
    assert fl.per_token["fp8_e5m2"] == 4 * L * LINEAR
    assert fl.per_token["bf16"] == BF16_REST
    assert fl.total_per_token * S == est.model_flops_per_step  # the same FLOPs the step model counts
    h100 = pm.get_gpu("H100")
    p16, p8 = h100.peak_flops_per_s("bf16"), h100.peak_flops_per_s("fp8_e4m3")
    assert h100.peak_flops_per_s("fp8_e5m2") == p8
    mixed = fl.total_per_token / (BF16_REST / p16 + 6 * L * LINEAR / p8)
    assert fl.peak_flops_per_s() == pytest.approx(mixed, rel=1e-12)
    assert est.mfu == pytest.approx(est.mfu_bf16 * p16 / mixed, rel=1e-12)
    assert est.mfu < est.mfu_bf16


def test_rowwise_with_gw_hp_keeps_the_weight_gradient_in_bf16():
    _, fl = _cfg("rowwise_with_gw_hp")
    assert fl.per_token["fp8_e4m3"] == 4 * L * LINEAR
    assert fl.per_token["bf16"] == 2 * L * LINEAR + BF16_REST


def test_convert_keeps_unconverted_linears_in_bf16():
    _, fl = _cfg("tensorwise", convert=["w13", "w2"])
    mlp = 3 * D * F * L
    assert fl.per_token["fp8_e4m3"] == 2 * mlp
    assert fl.per_token["bf16"] == 6 * (L * LINEAR - mlp) + BF16_REST


def test_a_measured_run_gives_back_the_predicted_mfu():
    est, _ = _cfg("tensorwise")
    run = train.mfu_from_run(
        "llama3-8b", gpu="H100", seq_len=S, tokens_per_s_per_gpu=float(est.tokens_per_s_per_gpu), recipe="tensorwise"
    )
    assert run.source == "measured" and est.mfu_report.source == "predicted"
    assert run.mfu == pytest.approx(float(est.mfu), rel=1e-12)
    by_step = train.mfu_from_run(
        "llama3-8b", gpu="H100", seq_len=S, step_s=2.0, batch_per_gpu=4, tp=2, recipe="tensorwise"
    )
    assert by_step.tokens_per_s_per_gpu == pytest.approx(4 * S / (2.0 * 2), rel=1e-12)
    text = str(run)
    assert "mixed-precision peak" in text and "bf16 peak" in text and "(measured)" in text


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"tokens_per_s_per_gpu": 1.0, "step_s": 1.0, "batch_per_gpu": 1},
        {"tokens_per_s_per_gpu": 0},
        {"tokens_per_s_per_gpu": float("nan")},
        {"tokens_per_s_per_gpu": True},
        {"step_s": 1.0},
        {"step_s": -1.0, "batch_per_gpu": 1},
    ],
)
def test_bad_runs_are_named_errors(kw):
    with pytest.raises(InvalidShapeError):
        train.mfu_from_run("llama3-8b", gpu="H100", seq_len=S, **kw)
