"""`perfmodel break-even --model PRESET`: a preset's every-token Linears as the KxN table, and an MoE preset's routed
experts as one grouped-GEMM block; expected numbers from the library."""

from __future__ import annotations

import json

import pytest

import perfmodel as pm
from perfmodel import cli
from perfmodel.presets import get_preset


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_an_moe_preset_prices_its_linears_and_its_routed_experts(capsys):
    code, out, _ = run(capsys, "break-even", "--model", "mixtral-8x22b", "--gpu", "h100", "--json")
    assert code == 0
    got = json.loads(out)
    # the Linears every token reaches, each shape once: wq/wo (6144x6144), wk/wv (6144x1024), the router, the head
    shapes = [(r["K"], r["N"]) for r in got["linears"]]
    assert shapes == [(6144, 6144), (6144, 1024), (6144, 8), (6144, 32000)]
    assert all(r["recipe"] == "tensorwise" for r in got["linears"])  # the Linears' default
    e = got["routed_experts"]
    b = pm.moe.break_even_tokens("mixtral-8x22b", gpu="H100-SXM", recipe="rowwise", max_tokens=1 << 20)
    assert e["recipe"] == "rowwise" and e["break_even_tokens"] == b.tokens == 58384
    assert e["tokens_per_expert"] == pytest.approx(58384 * 2 / 8) and e["monotone"] is False
    d = pm.moe.block_decision("mixtral-8x22b", tokens=65536, gpu="H100-SXM")
    assert e["speedup_at"]["65536"] == pytest.approx(d.speedup, rel=1e-12) and e["close_call_at"]["65536"]
    # the range the block's speedup error allows: the break-even for min_speedup x (1 -/+ p90)
    lo, hi = e["break_even_tokens_p90_range"]
    p90 = e["speedup_p90"]
    assert p90 == pytest.approx(0.128)
    low = pm.moe.break_even_tokens("mixtral-8x22b", gpu="H100-SXM", min_speedup=1 - p90, max_tokens=1 << 20)
    assert lo == low.tokens
    assert lo < e["break_even_tokens"] and hi is None  # 1.128x is never reached up to 2^20 tokens


def test_the_text_output_names_the_block_and_its_range(capsys):
    code, out, _ = run(capsys, "break-even", "--model", "mixtral-8x22b", "--gpu", "h100", "--recipe", "rowwise")
    assert code == 0
    table, experts = out.split("\n\nRouted experts of mixtral-8x22b (8 experts on this GPU, top-2)")
    assert "of the Linears of mixtral-8x22b that see every token on H100-SXM" in table
    assert "break-even: 58384 tokens per step (14596.0 rows per expert)" in experts
    assert "within the model's speedup error (p90 13 %): from 21520 tokens to never (<= 1048576)" in experts
    assert "65536: 1.003x (close call)" in experts and "not monotone" in experts
    assert "provenance: grouped GEMMs transferred from H200" in experts


def test_expert_parallelism_and_recipes_the_block_does_not_take(capsys):
    code, out, _ = run(capsys, "break-even", "--model", "qwen3-30b-a3b", "--gpu", "h200", "--experts", "16", "--json",
                       "--recipe", "rowwise")  # fmt: skip
    e = json.loads(out)["routed_experts"]
    assert code == 0 and e["experts"] == 16
    d = pm.moe.block_decision("qwen3-30b-a3b", tokens=4096, gpu="H200", experts=16)
    assert e["speedup_at"]["4096"] == pytest.approx(d.speedup, rel=1e-12)
    code, out, _ = run(capsys, "break-even", "--model", "qwen3-30b-a3b", "--recipe", "tensorwise")
    assert code == 0 and "skipped: tensorwise is not a grouped-GEMM recipe" in out and "give --recipe rowwise" in out
    # a recipe the GPU cannot run is a named error (the preset's Linears cannot run it either)
    code, out, err = run(capsys, "break-even", "--model", "mixtral-8x7b", "--recipe", "mxfp8", "--gpu", "h100")
    assert code != 0 and out == "" and "mxfp8" in err and "H100-SXM" in err
    # on Blackwell it runs, the block by the estimate
    code, out, _ = run(capsys, "break-even", "--model", "mixtral-8x7b", "--recipe", "mxfp8", "--gpu", "b200", "--json")
    e = json.loads(out)["routed_experts"]
    assert code == 0 and e["speedup_p90"] is None and e["break_even_tokens_p90_range"] is None  # not validated


def test_a_dense_preset_has_no_routed_experts(capsys):
    code, out, _ = run(capsys, "break-even", "--model", "llama3-8b", "--gpu", "h200", "--json")
    got = json.loads(out)
    assert code == 0 and got["routed_experts"] is None and got["model"] == "llama3-8b"
    want = []
    for lin in get_preset("llama3-8b").linears:
        if (lin.in_features, lin.out_features) not in want:
            want.append((lin.in_features, lin.out_features))
    assert [(r["K"], r["N"]) for r in got["linears"]] == want
    code, out, _ = run(capsys, "break-even", "--model", "llama3-8b")
    assert code == 0 and "Routed experts" not in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "give Linear shapes (KxN, e.g. 4096x14336) or --model PRESET"),
        (("4096x4096", "--model", "llama3-8b"), "give either Linear shapes (KxN) or --model PRESET, not both"),
        (("--model", "nope"), "unknown model preset 'nope'"),
        (("4096x4096", "--experts", "8"), "--experts and --compiled price an MoE preset's routed experts"),
        (("--model", "llama3-8b", "--compiled"), "--experts and --compiled price an MoE preset's routed experts"),
        (("--model", "mixtral-8x7b", "--experts", "1"), "experts must be a whole number >= top_k (2)"),
    ],
)
def test_bad_arguments_get_a_named_error(capsys, argv, message):
    code, out, err = run(capsys, "break-even", *argv)
    assert code != 0 and message in err and out == ""
