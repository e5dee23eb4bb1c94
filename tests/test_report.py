"""report(): per-shape decision and step totals, derived here from linear_time / should_use."""

from __future__ import annotations

import json

import numpy as np
import pytest

import perfmodel.float8 as f8
from perfmodel.errors import (
    InvalidShapeError,
    PerfModelError,
    UnknownGPUError,
    UnknownRecipeError,
    UnsupportedFormatError,
)
from perfmodel.presets import UnknownPresetError, get_preset
from perfmodel.report import Report, parse_shape, report, torchao_code

torch = pytest.importorskip("torch")
nn = torch.nn

TOKENS = 8192


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.wq = nn.Linear(4096, 4096, bias=False)
        self.wo = nn.Linear(4096, 4096, bias=False)
        self.up = nn.Linear(4096, 14336, bias=False)
        self.down = nn.Linear(14336, 4096, bias=False)
        self.norm = nn.LayerNorm(4096)


class Tiny(nn.Module):
    """Two blocks, a small Linear that never pays, and a head whose out_features is not a multiple of 16."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([Block(), Block()])
        self.small = nn.Linear(64, 64)
        self.head = nn.Linear(4096, 50257, bias=False)
        self.act = nn.GELU()


@pytest.fixture(scope="module")
def tiny() -> nn.Module:
    with torch.device("meta"):  # shapes only: no memory for 1.3 G parameters
        return Tiny()


def total(M, K, N, recipe):
    return float(f8.linear_time(M, K, N, recipe, "H100").total_s)


def test_module_rows_grouped_by_shape(tiny):
    rep = report(tiny, tokens=TOKENS, gpu="H100")
    assert isinstance(rep, Report)
    by_shape = {(r.K, r.N): r for r in rep.rows}
    assert set(by_shape) == {(4096, 4096), (4096, 14336), (14336, 4096), (64, 64), (4096, 50257)}
    sq = by_shape[4096, 4096]
    assert sq.names == ("layers.*.wq", "layers.*.wo") and sq.count == 4 and sq.M == TOKENS
    assert by_shape[4096, 14336].count == 2
    assert rep.recipes == ("tensorwise", "rowwise", "rowwise_with_gw_hp")  # torchao recipes on H100
    assert rep.gpu == "H100-SXM" and rep.title == "Tiny"


def test_times_speedups_and_decisions_match_the_library(tiny):
    rep = report(tiny, tokens=TOKENS, gpu="H100")
    for row in rep.rows:
        bf16 = total(row.M, row.K, row.N, None)
        assert row.bf16_s == pytest.approx(bf16, rel=1e-12)
        for r in rep.recipes:
            assert row.times_s[r] == pytest.approx(total(row.M, row.K, row.N, r), rel=1e-12)
            assert row.speedups[r] == pytest.approx(bf16 / total(row.M, row.K, row.N, r), rel=1e-12)
        if row.K % 16 or row.N % 16:
            assert row.decision == "bf16" and "multiples of 16" in row.reason
            continue
        best = min(rep.recipes, key=lambda r: row.times_s[r])
        expected = best if f8.should_use(row.M, row.K, row.N, best, "H100") else "bf16"
        assert row.decision == expected
        assert row.saved_s == pytest.approx((bf16 - row.times_s[expected]) * row.count)
    by_shape = {(r.K, r.N): r for r in rep.rows}
    assert by_shape[64, 64].decision == "bf16"  # tiny GEMM: launches and casts dominate
    assert by_shape[4096, 14336].decision == "tensorwise"
    assert by_shape[4096, 50257].speedups["tensorwise"] > 1  # would pay, but cannot run


def test_totals(tiny):
    rep = report(tiny, tokens=TOKENS, gpu="H100")
    t = rep.totals
    assert t.bf16_s == pytest.approx(sum(r.bf16_s * r.count for r in rep.rows))
    assert t.best_s == pytest.approx(sum(r.chosen_s * r.count for r in rep.rows))
    for rec in rep.recipes:
        every = sum((r.times_s[rec] if r.eligible else r.bf16_s) * r.count for r in rep.rows)
        paid = sum((r.times_s[rec] if r.eligible and r.speedups[rec] >= 1 else r.bf16_s) * r.count for r in rep.rows)
        assert t.everywhere_s[rec] == pytest.approx(every)
        assert t.filtered_s[rec] == pytest.approx(paid)
        assert t.best_s <= t.filtered_s[rec] + 1e-15
    assert t.best_recipe == min(rep.recipes, key=lambda r: t.filtered_s[r])


def test_str_is_a_table_with_units_and_the_context(tiny):
    rep = report(tiny, tokens=TOKENS, gpu="H100")
    text = str(rep)
    assert "Tiny on H100-SXM: 8192 tokens per step" in text
    assert "µs" in text and "ms" in text
    row = next(r for r in rep.rows if (r.K, r.N) == (4096, 14336))
    assert f"{row.bf16_s * 1e6:.1f}" in text
    assert f"{row.times_s['tensorwise'] * 1e6:.1f} ({row.speedups['tensorwise']:.2f}x)" in text
    assert "bf16 (not /16)" in text
    assert 'module_filter(gpu="H100-SXM", tokens=8192, recipe="tensorwise")' in text
    assert text.splitlines()[-2].startswith("provenance: transferred")
    assert text.splitlines()[-1].startswith("error bar: ")


def test_json_round_trip(tiny):
    rep = report(tiny, tokens=TOKENS, gpu="H100")
    data = json.loads(rep.to_json())
    assert data == json.loads(json.dumps(rep.to_dict()))
    assert data["gpu"] == "H100-SXM" and data["tokens"] == TOKENS
    assert len(data["rows"]) == len(rep.rows)
    assert data["totals"]["bf16_s"] == pytest.approx(rep.totals.bf16_s)


def test_module_filter_agrees_with_should_use_and_report(tiny):
    filt = f8.module_filter(gpu="H100", tokens=TOKENS, recipe="tensorwise")
    rep = report(tiny, tokens=TOKENS, gpu="H100", recipes=["tensorwise"])
    decision = {(r.K, r.N): r.decision for r in rep.rows}
    for fqn, mod in tiny.named_modules():
        got = filt(mod, fqn)
        if not isinstance(mod, nn.Linear):
            assert got is False, fqn
            continue
        k, n = mod.in_features, mod.out_features
        expected = (k % 16 == 0 and n % 16 == 0) and f8.should_use(TOKENS, k, n, "tensorwise", "H100")
        assert got == expected, fqn
        assert got == (decision[k, n] == "tensorwise"), fqn
    excl = f8.module_filter(gpu="H100", tokens=TOKENS, recipe="tensorwise", exclude=["layers.0."])
    assert excl(tiny.layers[0].up, "layers.0.up") is False
    assert excl(tiny.layers[1].up, "layers.1.up") is True


def test_convert_to_float8_training_with_the_filter():
    pytest.importorskip("torchao")
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training
    from torchao.float8.float8_linear import Float8Linear

    model = nn.Sequential(
        nn.Linear(4096, 14336, bias=False),
        nn.GELU(),
        nn.Linear(14336, 4096, bias=False),
        nn.Linear(4096, 8, bias=False),
        nn.Linear(64, 64, bias=False),
    )
    filt = f8.module_filter(gpu="H100", tokens=TOKENS, recipe="tensorwise")
    expected = {name: filt(m, name) for name, m in model.named_children()}
    convert_to_float8_training(model, config=Float8LinearConfig.from_recipe_name("tensorwise"), module_filter_fn=filt)
    converted = {name: isinstance(m, Float8Linear) for name, m in model.named_children()}
    assert converted == expected == {"0": True, "1": False, "2": True, "3": False, "4": False}


def test_presets_mappings_iterables_and_strings():
    preset = report("llama3-8b", tokens=TOKENS)
    assert preset.title == "llama3-8b (32 layers)"
    assert sum(r.count for r in preset.rows) == 7 * 32 + 1
    assert report(get_preset("llama3-8b"), tokens=TOKENS).totals == preset.totals
    moe = report("mixtral-8x7b", tokens=TOKENS)
    assert {r.M for r in moe.rows} == {TOKENS, TOKENS * 2 // 8}
    mapping = report({"up": (4096, 14336), "down": (14336, 4096)}, tokens=TOKENS)
    assert [r.names for r in mapping.rows] == [("up",), ("down",)]
    it = report(["4096x14336", (4096, 14336), "14336X4096"], tokens=TOKENS)
    assert [(r.K, r.N, r.count) for r in it.rows] == [(4096, 14336, 2), (14336, 4096, 1)]
    one = report("4096x14336", tokens=TOKENS, recipes="rowwise")
    assert one.recipes == ("rowwise",)
    assert one.rows[0].times_s["rowwise"] == pytest.approx(total(TOKENS, 4096, 14336, "rowwise"))


def test_min_speedup_and_options():
    hi = report(["1024x1024", "4096x14336"], tokens=TOKENS, min_speedup=1.4)
    assert [r.decision for r in hi.rows] == ["bf16", "tensorwise"]
    assert "< 1.4x" in hi.rows[0].reason
    higher = report(["4096x14336"], tokens=TOKENS, min_speedup=hi.rows[1].speedups["tensorwise"] * 1.01)
    assert higher.rows[0].decision == "bf16"
    cached = report(["4096x14336"], tokens=TOKENS, cache_weight_cast=True, recipes=["tensorwise"])
    expected = float(f8.linear_time(TOKENS, 4096, 14336, "tensorwise", "H100", cache_weight_cast=True).total_s)
    assert cached.rows[0].times_s["tensorwise"] == pytest.approx(expected)
    orig = report(["4096x14336"], tokens=TOKENS, time_model="original")
    assert orig.time_model == "original"


def test_default_recipes_follow_the_gpu():
    assert "mxfp8" in report(["4096x4096"], tokens=TOKENS, gpu="B200").recipes
    assert "mxfp8" not in report(["4096x4096"], tokens=TOKENS, gpu="H100").recipes


def test_parse_shape():
    assert parse_shape(" 4096 x 14336 ") == (4096, 14336)
    with pytest.raises(InvalidShapeError, match=r"bad Linear shape '4096y3'.*KxN"):
        parse_shape("4096y3")
    with pytest.raises(InvalidShapeError, match="bad Linear shape '0x5'"):
        parse_shape("0x5")


def test_errors_name_the_bad_value():
    with pytest.raises(UnknownGPUError, match="unknown GPU 'H101'"):
        report(["4096x4096"], tokens=TOKENS, gpu="H101")
    with pytest.raises(UnknownRecipeError, match="unknown recipe 'fp8'"):
        report(["4096x4096"], tokens=TOKENS, recipes=["fp8"])
    with pytest.raises(UnsupportedFormatError, match="recipe 'mxfp8' needs mxfp8"):
        report(["4096x4096"], tokens=TOKENS, recipes=["mxfp8"])
    with pytest.raises(UnknownPresetError, match="unknown model preset 'llama9'"):
        report("llama9", tokens=TOKENS)
    with pytest.raises(InvalidShapeError, match=r"tokens must be a positive integer.*, got 0"):
        report(["4096x4096"], tokens=0)
    with pytest.raises(PerfModelError, match="min_speedup must be a positive finite number, got 0"):
        report(["4096x4096"], tokens=TOKENS, min_speedup=0)
    with pytest.raises(PerfModelError, match="min_speedup must be a positive finite number, got inf"):
        report(["4096x4096"], tokens=TOKENS, min_speedup=float("inf"))
    with pytest.raises(PerfModelError, match=r"recipes \['bf16'\] leave no float8 recipe to compare.*tensorwise"):
        report(["4096x4096"], tokens=TOKENS, recipes=["bf16"])
    with pytest.raises(PerfModelError, match="cache_weight_cast must be True or False, got str 'yes'"):
        report(["4096x4096"], tokens=TOKENS, cache_weight_cast="yes")
    with pytest.raises(PerfModelError, match="cannot analyse int"):
        report(3, tokens=TOKENS)
    with pytest.raises(PerfModelError, match=r"has no nn\.Linear"):
        report(nn.GELU(), tokens=TOKENS)
    with pytest.raises(InvalidShapeError, match="shape of 'up' must be"):
        report({"up": 4096}, tokens=TOKENS)


def test_report_does_not_need_torch_for_shapes():
    rep = report(np.array([[4096, 4096]]).tolist(), tokens=TOKENS)
    assert rep.rows[0].K == 4096


def test_dynamic_shapes_reach_report_and_filter():
    from perfmodel.float8 import module_filter, should_use

    rep = report("llama3-8b", tokens=8192, gpu="H200", dynamic_shapes=True)
    assert rep.dynamic_shapes and rep.to_dict()["dynamic_shapes"] is True
    assert "dynamic_shapes=True" in str(rep)
    static = report("llama3-8b", tokens=8192, gpu="H200")
    assert rep.totals.best_s > static.totals.best_s  # dynamic-shape casts are slower on the H200
    fn = module_filter(gpu="H200", tokens=2048, recipe="rowwise", dynamic_shapes=True)

    class Lin:
        in_features, out_features = 4096, 14336

    assert fn(Lin(), "mlp.up") is should_use(2048, 4096, 14336, "rowwise", "H200", dynamic_shapes=True)


def test_a_gpu_without_float8_answers_bf16_with_the_reason():
    rep = report("llama3-8b", tokens=TOKENS, gpu="A100")
    assert rep.recipes == () and rep.gpu == "A100-SXM-80GB"
    assert rep.recommendation == "bf16" and rep.speedup == 1.0 and rep.torchao_code() is None
    assert rep.reason == rep.no_float8_reason and rep.reason.startswith(
        "A100-SXM-80GB (Ampere, arch 80) has no float8 tensor cores"
    )
    assert all(r.decision == "bf16" and r.reason == "no float8 GEMMs on A100-SXM-80GB" for r in rep.rows)
    assert rep.totals.best_recipe == "bf16" and rep.totals.best_s == rep.totals.bf16_s
    up = next(r for r in rep.rows if (r.K, r.N) == (4096, 14336))
    assert up.bf16_s == pytest.approx(total_on(TOKENS, 4096, 14336, None, "A100"))
    text = str(rep)
    assert f"{up.bf16_s * 1e6:.1f}" in text and "bf16 (no float8)" in text
    assert f"Recommendation: keep bf16 — {rep.reason}." in text
    data = rep.to_dict()
    assert data["recommendation"]["recipe"] == "bf16" and data["recommendation"]["reason"] == rep.reason
    with pytest.raises(UnsupportedFormatError, match="recipe 'tensorwise' needs fp8_e4m3"):
        report("llama3-8b", tokens=TOKENS, gpu="A100", recipes=["tensorwise"])


def total_on(M, K, N, recipe, gpu):
    return float(f8.linear_time(M, K, N, recipe, gpu).total_s)


def test_recommendation_keep_list_and_code_follow_the_filter():
    rep = report(["4096x14336", "4096x1024", "4096x50257"], tokens=TOKENS, gpu="H100")
    assert rep.recommendation == rep.totals.best_recipe == "tensorwise"
    assert rep.speedup == pytest.approx(rep.totals.bf16_s / rep.totals.filtered_s["tensorwise"])
    assert rep.to_dict()["recommendation"]["keep_bf16"] == ["4096x1024", "4096x50257"]
    assert "keep bf16 for: 4096x1024, 4096x50257." in str(rep)
    code = rep.torchao_code()
    assert code == torchao_code("tensorwise", "H100-SXM", TOKENS)
    assert f"    {code.splitlines()[-2]}" in str(rep)
    slow = report(["1024x1024"], tokens=1024, gpu="H100")
    assert slow.recommendation == "bf16" and slow.torchao_code() is None
    assert slow.reason == "no recipe reaches 1x on any Linear at 1024 tokens on H100-SXM"
    assert f"Recommendation: keep bf16 — {slow.reason}." in str(slow)


def test_the_options_of_the_table_are_the_filters():
    rep = report(
        ["4096x14336"],
        tokens=TOKENS,
        gpu="H200",
        min_speedup=1.1,
        cache_weight_cast=True,
        fuse_input_with_prev=True,
        dynamic_shapes=True,
        time_model="roofline",
    )
    opts = rep.filter_options()
    assert opts == {
        "min_speedup": 1.1,
        "dynamic_shapes": True,
        "fuse_input_with_prev": True,
        "fuse_grad_output_with_prev": False,
        "cache_weight_cast": True,
        "time_model": "roofline",
    }
    filt = f8.module_filter(gpu="H200", tokens=TOKENS, recipe=rep.recommendation, **opts)

    class Lin:
        in_features, out_features = 4096, 14336

    assert filt(Lin(), "up") == (rep.rows[0].decision == rep.recommendation)
    code = rep.torchao_code()
    for text in ("min_speedup=1.1", "dynamic_shapes=True", "fuse_input_with_prev=True", "cache_weight_cast=True"):
        assert text in code
    assert 'model="roofline"' in code and "fuse_grad_output_with_prev" not in code
    data = rep.to_dict()
    assert data["cache_weight_cast"] is True and data["fuse_grad_output_with_prev"] is False


def test_an_attached_calibration_is_noted():
    import dataclasses
    from pathlib import Path

    from perfmodel.models.calibrated import load_calibration
    from perfmodel.specs.gpu import get_gpu

    path = Path(f8.__file__).parents[1] / "calibrations" / "h200.json"
    gpu = dataclasses.replace(get_gpu("H100"), calibration=load_calibration(path))
    rep = report(["4096x14336"], tokens=TOKENS, gpu=gpu)
    assert rep.calibration_attached and rep.calibration_file is None
    assert "note: the table used the calibration attached to your GPUSpec" in str(rep)
    with_file = dataclasses.replace(rep, calibration_file="fit.json")
    assert 'calibration=load_calibration("fit.json")' in with_file.torchao_code()
    assert "attached to your GPUSpec" not in str(with_file)
    faster = dataclasses.replace(get_gpu("H100"), mem_bw_bytes_per_s=4.0e12)
    built = report(["4096x14336"], tokens=TOKENS, gpu=faster)
    assert built.gpu_modified and not rep.gpu_modified
    assert "note: the table used the GPUSpec you built: pass that GPUSpec as gpu=." in str(built)


def test_moe_rows_get_a_per_layer_tokens_hint():
    text = str(report("mixtral-8x7b", tokens=TOKENS, gpu="H100"))
    assert "routed experts see fewer (column M)" in text and f"'*': {TOKENS}" in text
    # which layout the rows price, and where the other one is priced
    assert "price each expert as its own nn.Linear at M rows" in text and "grouped-GEMM block (perfmodel.moe" in text
    assert "own nn.Linear" not in str(report("llama3-8b", tokens=TOKENS, gpu="H100"))


def test_wide_numbers_keep_the_columns_aligned():
    rep = report(["4096x14336"], tokens=10**11, gpu="H100")
    head, rule, row = str(rep).splitlines()[3:6]
    assert len(head) == len(rule) and row.split()[3] == str(10**11)
    assert head.index("decision") == row.index("tensorwise", len(row) - 40)


def test_seq_len_prices_the_whole_decoder_layer():
    from perfmodel import step

    rep = report("llama3-8b", gpu="H200", seq_len=8192, batch=1)
    assert rep.tokens == 8192 and rep.step is not None and set(rep.step_by_recipe) == set(rep.recipes)
    for recipe, st in rep.step_by_recipe.items():
        direct = step.step_report("llama3-8b", gpu="H200", seq_len=8192, batch=1, recipe=recipe)
        assert st.speedup_best == pytest.approx(direct.speedup_best) and st.chosen == direct.chosen
    assert rep.step.speedup_best == max(st.speedup_best for st in rep.step_by_recipe.values())
    text = str(rep)
    assert "Whole decoder layer" in text and "perfmodel.step.module_filter('llama3-8b'" in text
    d = rep.to_dict()
    assert d["seq_len"] == 8192 and d["step"]["best"]["recipe"] == rep.step.recipe
    # the printed group-aware filter call runs and is the layer's decision
    filt = step.module_filter("llama3-8b", gpu="H200", seq_len=8192, batch=1, recipe=rep.step.recipe)
    assert filt.groups == rep.step.chosen and filt.recipe == rep.step.recipe
    # batch 1 at 8192 tokens: inductor's mix-order norm backward makes tensorwise q/k/v a loss, and the text says so
    tw = rep.step_by_recipe["tensorwise"]
    assert "qkv" not in tw.chosen and tw.speedup_best > tw.speedup_all
    assert "note (tensorwise): q, k and v all in float8 at batch 1" in text and "mix_order_norm_bwd=False" in text
    two = report("llama3-8b", gpu="H200", seq_len=4096, batch=2)
    assert "qkv" in two.step_by_recipe["tensorwise"].chosen and "note (tensorwise)" not in str(two)
    # a step of ~1 ms of GPU work is flagged as possibly waiting for the host; an 8B layer is not
    assert "may wait for the host's launches" in str(report("gpt2", gpu="H200", seq_len=1024, batch=8))
    assert "may wait for the host's launches" not in text


def test_seq_len_and_tokens_must_agree_and_moe_is_said():
    with pytest.raises(PerfModelError, match="batch x seq_len"):
        report("llama3-8b", gpu="H200", tokens=100, seq_len=8192)
    with pytest.raises(PerfModelError, match="tokens="):
        report("llama3-8b", gpu="H200")
    assert report("llama3-8b", gpu="H200", tokens=16384, seq_len=4096, batch=4).tokens == 16384
    moe = report("mixtral-8x7b", gpu="H200", seq_len=4096)
    assert moe.step is None and "not a dense decoder" in moe.step_note and "not priced" in str(moe)
    shapes = report(["4096x4096"], gpu="H200", seq_len=4096)
    assert shapes.step is None and "preset" in shapes.step_note


def test_report_prices_one_configuration_and_a_layer_shape():
    from perfmodel.errors import PerfModelError
    from perfmodel.presets import LayerShape

    for kw in (dict(tokens=np.array([4096, 8192])), dict(seq_len=np.array([8192]))):
        with pytest.raises(PerfModelError, match="report prices one configuration"):
            report("llama3-8b", gpu="H200", **kw)
    with pytest.raises(PerfModelError, match="batch=4 needs seq_len="):
        report("llama3-8b", gpu="H200", tokens=8192, batch=4)
    assert report("llama3-8b", gpu="H200", tokens=np.int64(8192)).tokens == 8192
    lay = LayerShape(name="mine", hidden=4096, ffn=14336, heads=32, kv_heads=8)
    rep = report(lay, gpu="H200", seq_len=8192)
    assert [row.names[0] for row in rep.rows][:2] == ["wq", "wk"] and rep.step is not None
    assert "module_filter(layer, gpu='H200'" in str(rep) and "# layer: the LayerShape you passed" in str(rep)
    # the layer is the same as the preset it copies
    same = report("llama3-8b", gpu="H200", seq_len=8192)
    assert float(rep.step.best.step_s) == pytest.approx(float(same.step.best.step_s), rel=1e-12)


def test_shapes_float8_cannot_run_are_priced_padded_and_the_report_says_when_it_pays():
    from perfmodel import float8

    rep = report(["4096x50257", "4096x4096", "24x24"], gpu="H200", tokens=8192)
    rows = {(r.K, r.N): r for r in rep.rows}
    head, square, tiny = rows[4096, 50257], rows[4096, 4096], rows[24, 24]
    # 50257 rounds up to 50272 = 16 * 3142; the padded times are the same model's at that shape
    assert head.padded == (4096, 50272)
    assert head.padded_s["bf16"] == pytest.approx(
        float8.linear_time(8192, 4096, 50272, None, "H200").total_s, rel=1e-12
    )
    tw = float8.linear_time(8192, 4096, 50272, "tensorwise", "H200").total_s
    assert head.padded_s["tensorwise"] == pytest.approx(tw, rel=1e-12)
    # N = 50257 is odd: the bf16 GEMMs run the fallback kernels, so padding pays in bf16 alone, and more with float8
    assert head.bf16_s > 4 * head.padded_s["bf16"] and head.padding == ("tensorwise", pytest.approx(tw, rel=1e-12))
    assert square.padded is None and square.padding is None and not square.padded_s
    # 24 x 24 pads to 32 x 32: float8 does not pay at that size, nor does bf16 at more FLOPs
    assert tiny.padded == (32, 32) and tiny.padding is None
    text = str(rep)
    assert "Padding pays" in text and "4096x50257 -> 4096x50272: bf16" in text and "24x24 ->" not in text
    d = rep.to_dict()["rows"]
    assert next(r for r in d if r["N"] == 50257)["padded"] == [4096, 50272]
    assert "Padding pays" not in str(report(["4096x4096"], gpu="H200", tokens=8192))
