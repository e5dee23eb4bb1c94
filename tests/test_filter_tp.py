"""Tensor-parallel float8 filter (issue 34 item 4): each Linear priced as one rank's shard.

Llama 3 70B (hidden 8192, 64 heads / 8 KV heads of 128, FFN 28672, vocab 128256) at TP 8 on H100: the filter's
choice for every Linear must equal ``speedup(M, shard K, shard N) >= min_speedup``, computed here by hand from
the sharding torchtitan applies (column-parallel: N / tp; row-parallel: K / tp).
"""

from __future__ import annotations

import re

import pytest

import perfmodel.float8 as f8
from perfmodel.errors import InvalidParallelismError, PerfModelError

TP, TOKENS, GPU = 8, 8192, "H100"


class Lin:
    """A duck-typed nn.Linear."""

    def __init__(self, k: int, n: int) -> None:
        self.in_features, self.out_features = k, n


# fqn -> (K, N, sharding) of one Llama 3 70B layer in torchtitan's names and Hugging Face's
TITAN = {
    "layers.0.attention.wq": (8192, 8192, "colwise"),
    "layers.0.attention.wk": (8192, 1024, "colwise"),
    "layers.0.attention.wv": (8192, 1024, "colwise"),
    "layers.0.attention.wo": (8192, 8192, "rowwise"),
    "layers.0.feed_forward.w1": (8192, 28672, "colwise"),
    "layers.0.feed_forward.w3": (8192, 28672, "colwise"),
    "layers.0.feed_forward.w2": (28672, 8192, "rowwise"),
    "output": (8192, 128256, "colwise"),
}
HF = {
    "model.layers.0.self_attn.q_proj": (8192, 8192, "colwise"),
    "model.layers.0.self_attn.k_proj": (8192, 1024, "colwise"),
    "model.layers.0.self_attn.v_proj": (8192, 1024, "colwise"),
    "model.layers.0.self_attn.o_proj": (8192, 8192, "rowwise"),
    "model.layers.0.mlp.gate_proj": (8192, 28672, "colwise"),
    "model.layers.0.mlp.up_proj": (8192, 28672, "colwise"),
    "model.layers.0.mlp.down_proj": (28672, 8192, "rowwise"),
    "lm_head": (8192, 128256, "colwise"),
}


def _shard(k: int, n: int, kind: str, tp: int = TP) -> tuple[int, int]:
    return (k, n // tp) if kind == "colwise" else (k // tp, n)


@pytest.mark.parametrize("recipe", ["tensorwise", "rowwise"])
@pytest.mark.parametrize("names", [TITAN, HF], ids=["torchtitan", "huggingface"])
def test_llama3_70b_tp8_choices_follow_the_shard_speedups(names, recipe):
    filt = f8.module_filter(GPU, TOKENS, recipe, tp=TP)
    for fqn, (k, n, kind) in names.items():
        ks, ns = _shard(k, n, kind)
        want_s = float(f8.speedup(TOKENS, ks, ns, recipe, GPU))
        assert filt(Lin(k, n), fqn) is (want_s >= 1.0), fqn
        d = filt.decisions[-1]
        assert (d.fqn, d.sharding, d.shard_in, d.shard_out, d.tokens) == (fqn, kind, ks, ns, TOKENS)
        assert d.speedup == pytest.approx(want_s, rel=1e-9)
    # both sharding kinds really change answers: at full size the filter decides differently for some Linear
    full = f8.module_filter(GPU, TOKENS, recipe)
    flips = [fqn for fqn, (k, n, _) in names.items() if full(Lin(k, n), fqn) != filt(Lin(k, n), fqn)]
    kinds = {names[f][2] for f in flips}
    if recipe == "tensorwise":
        assert kinds == {"colwise", "rowwise"}, flips  # wq (column) and wo (row) both drop below 1x per shard


def test_the_issue_figures_q_and_k_proj():
    """Issue 34: q_proj 1.56x at full size and ~1.00x per shard; k_proj 1.00x vs 0.55x (H100, 8192 tokens)."""
    filt = f8.module_filter(GPU, TOKENS, "tensorwise", tp=TP)
    filt(Lin(8192, 8192), "layers.0.attention.wq")
    filt(Lin(8192, 1024), "layers.0.attention.wk")
    q, k = filt.decisions
    assert q.speedup == pytest.approx(float(f8.speedup(TOKENS, 8192, 1024, "tensorwise", GPU)), rel=1e-9)
    assert k.speedup == pytest.approx(float(f8.speedup(TOKENS, 8192, 128, "tensorwise", GPU)), rel=1e-9)
    assert float(f8.speedup(TOKENS, 8192, 8192, "tensorwise", GPU)) > 1.3 > q.speedup  # full pays, the shard not
    assert k.speedup < 0.7 and not k.convert and k.reason == "slower than bf16"


def test_shard_not_multiple_of_16_is_ineligible_not_priced():
    # K=8192, N=1024 at tp=128: the column shard is 8192x8, which float8 cannot run
    filt = f8.module_filter(GPU, TOKENS, tp=128)
    assert filt(Lin(8192, 1024), "layers.0.attention.wk") is False
    d = filt.decisions[-1]
    assert d.shard_out == 8 and d.speedup is None and d.reason.startswith("ineligible shard shape 8192x8")


def test_custom_tp_plan_and_replicate():
    plan = {"attn.c_attn": "colwise", "attn.c_proj": "rowwise", "router": "replicate"}
    filt = f8.module_filter(GPU, TOKENS, tp=4, tp_plan=plan)
    filt(Lin(4096, 12288), "h.0.attn.c_attn")
    filt(Lin(4096, 4096), "h.0.attn.c_proj")
    filt(Lin(4096, 64), "h.0.router")
    got = [(d.sharding, d.shard_in, d.shard_out) for d in filt.decisions]
    assert got == [("colwise", 4096, 3072), ("rowwise", 1024, 4096), ("replicate", 4096, 64)]
    # the plan replaces the default: a Llama name is now unknown
    with pytest.raises(InvalidParallelismError, match="matches no entry of tp_plan"):
        filt(Lin(4096, 4096), "layers.0.attention.wq")
    # extend the default instead; the most specific pattern wins
    ext = f8.module_filter(GPU, TOKENS, tp=4, tp_plan={**f8.LLAMA_TP_PLAN, "vision.wq": "rowwise"})
    ext(Lin(4096, 4096), "vision.wq")
    ext(Lin(4096, 4096), "layers.0.attention.wq")
    assert [d.sharding for d in ext.decisions] == ["rowwise", "colwise"]
    # regex keys work as in exclude=
    rx = f8.module_filter(GPU, TOKENS, tp=2, tp_plan={re.compile(r"\.fc_in$"): "colwise"})
    rx(Lin(4096, 16384), "m.fc_in")
    assert rx.decisions[-1].shard_out == 8192


def test_tp_plan_validation_and_ambiguity():
    with pytest.raises(InvalidParallelismError, match="valid: 'colwise'"):
        f8.module_filter(GPU, TOKENS, tp=2, tp_plan={"wq": "diagonal"})
    with pytest.raises(InvalidParallelismError, match="non-empty mapping"):
        f8.module_filter(GPU, TOKENS, tp=2, tp_plan=["wq"])
    with pytest.raises(PerfModelError, match="tp_plan key"):
        f8.module_filter(GPU, TOKENS, tp=2, tp_plan={"": "colwise"})
    amb = f8.module_filter(GPU, TOKENS, tp=2, tp_plan={"a": "colwise", "b": "rowwise"})
    with pytest.raises(InvalidParallelismError, match="disagree"):
        amb(Lin(64, 64), "a.b")
    # torchtitan's class names are accepted
    ok = f8.module_filter(GPU, TOKENS, tp=2, tp_plan={"a": "ColwiseParallel", "b": "RowwiseParallel"})
    ok(Lin(64, 64), "x.a")
    assert ok.decisions[-1].sharding == "colwise"


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "8", None, float("nan")])
def test_tp_must_be_a_positive_whole_number(bad):
    with pytest.raises(InvalidParallelismError, match="tp must be"):
        f8.module_filter(GPU, TOKENS, tp=bad)


def test_tp_must_divide_the_sharded_dimension():
    filt = f8.module_filter(GPU, TOKENS, tp=3)
    with pytest.raises(
        InvalidParallelismError, match=re.escape("tp=3 does not divide 'layers.0.attention.wq''s out_features 8192")
    ):
        filt(Lin(8192, 8192), "layers.0.attention.wq")
    with pytest.raises(InvalidParallelismError, match="in_features 28672"):
        f8.module_filter(GPU, TOKENS, tp=5)(Lin(28672, 8192), "layers.0.feed_forward.w2")
    # a Linear float8 cannot run at full size is kept in bf16 before its sharding is asked (GPT-2's vocab 50257)
    gpt2 = f8.module_filter(GPU, TOKENS, tp=8)
    assert gpt2(Lin(768, 50257), "lm_head") is False and gpt2.decisions[-1].reason.startswith("ineligible shape")


def test_tp1_ignores_the_plan_and_excluded_linears_need_none():
    filt = f8.module_filter(GPU, TOKENS, exclude="router")
    assert filt(Lin(4096, 4096), "anything.at.all") is True
    assert filt.decisions[-1].sharding == "" and filt.decisions[-1].shard_out == 4096
    tp = f8.module_filter(GPU, TOKENS, tp=8, exclude="router")
    assert tp(Lin(4096, 64), "layers.0.router") is False  # excluded before the plan is asked
    assert tp.decisions[-1].reason == "excluded (router)"


def test_preset_filters_rank_recipes_by_saving():
    by = f8.preset_filters("llama3-70b", gpu=GPU, tokens=TOKENS, recipes=["tensorwise", "rowwise"], tp=TP)
    savings = [s for _, s in by.values()]
    assert savings == sorted(savings, reverse=True)
    filt, saved = by["tensorwise"]
    # the saving by hand: converted Linears x their count in the model x (bf16 - float8) time of the shard
    want = 0.0
    for d in filt.decisions:
        if d.convert:
            t = float(f8.linear_time(d.tokens, d.shard_in, d.shard_out, None, GPU).total_s)
            want += (80 if d.fqn != "lm_head" else 1) * t * (1 - 1 / d.speedup)
    assert saved == pytest.approx(want, rel=1e-9)
    with pytest.raises(InvalidParallelismError, match=r"'q_a_proj' .* matches no entry of tp_plan"):
        f8.preset_filters("deepseek-v3", gpu=GPU, tokens=TOKENS, recipes=["tensorwise"], tp=8)


def test_cli_float8_tp(capsys):
    from perfmodel.cli import main

    assert main(["float8", "--gpu", "h100", "--model", "llama3-70b", "--tp", "8"]) == 0
    out = capsys.readouterr().out
    filt = f8.module_filter(GPU, TOKENS, "tensorwise", tp=TP)
    for name, (k, n, _) in zip(
        ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"),
        HF.values(),
        strict=True,
    ):
        filt(Lin(k, n), name)
        d = filt.decisions[-1]
        row = next(line for line in out.splitlines() if line.startswith(name + " "))
        assert f"{d.speedup:.3f}x" in row and ("yes" if d.convert else "no") in row.split()
    assert "perfmodel.float8.module_filter(gpu='H100-SXM', tokens=8192, recipe='tensorwise', tp=8)" in out
    assert "The other filter, perfmodel.step.module_filter" in out
    assert main(["float8", "--gpu", "h100", "--shapes", "4096x4096", "--tp", "8"]) == 2
    assert "--tp needs --model" in capsys.readouterr().err
    assert main(["float8", "--gpu", "h100", "--model", "llama3-8b", "--tp", "3"]) == 2
    assert "does not divide" in capsys.readouterr().err


def test_cli_train_prints_the_filter_for_its_choice(capsys):
    import json

    from perfmodel import step, train
    from perfmodel.cli import main

    argv = ["train", "--model", "llama3-70b", "--gpu", "h100", "--gpus", "64", "--tp", "8", "--recipe", "rowwise"]
    assert main([*argv, "--convert", "auto"]) == 0
    out = capsys.readouterr().out
    est = train.estimate(
        "llama3-70b", gpu="H100", n_gpus=64, tp=8, seq_len=8192, batch_per_gpu=1, recipe="rowwise", convert="auto"
    )
    conv = list(est.config.converted)
    assert f"module_filter_fn=perfmodel.step.module_filter('llama3-70b', convert={conv!r})" in out
    skip = [step.CONVENTIONS["torchtitan"][c] for c in ("wq", "wk", "wv", "wo", "w1", "w3", "w2") if c not in conv]
    assert f'--quantize.linear.float8.filter_fqns "{",".join([*skip, "output"])}"' in out
    # the printed Python filter converts exactly the priced Linears, at full (unsharded) shapes
    ns: dict = {}
    exec("import perfmodel\nimport perfmodel.step\n" + out.split("torchao:", 1)[1].splitlines()[0].strip(), ns)
    flt = ns["module_filter_fn"]
    for fqn, (k, n, _) in TITAN.items():
        canon = fqn.rsplit(".", 1)[-1]
        assert flt(Lin(k, n), fqn) is (canon in conv), fqn
    assert main([*argv, "--convert", "auto", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["filter"]["filter_fqns"] == [*skip, "output"]
    assert main(["train", "--model", "llama3-8b", "--gpu", "h100", "--gpus", "8"]) == 0  # bf16: no filter
    assert "apply this choice" not in capsys.readouterr().out
