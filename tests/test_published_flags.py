"""Answers known wrong in direction on published runs say so (perfmodel.float8.published)."""

import json
from pathlib import Path

import perfmodel as pm
import perfmodel.train as train
from perfmodel import float8
from perfmodel.cli import main


def test_the_flagged_runs_are_the_scored_wrong_directions():
    runs = {
        r["id"]: r
        for r in json.loads(
            (Path(__file__).resolve().parents[1] / "benchmarks/published/float8_training_runs.json").read_text()
        )["runs"]
    }
    for d in float8.KNOWN_WRONG:
        assert abs(d.published - 1) > 0.03 and (d.published > 1) != (d.predicted > 1)  # wrong direction
        if (
            d.scope == "moe_block"
        ):  # an MoE-layer run: scored in docs/validation/moe.md's published table, not the runs file
            docs = (Path(__file__).resolve().parents[1] / "docs/validation/moe.md").read_text().splitlines()
            row = next(ln for ln in docs if ln.startswith("| ") and d.source in ln)
            assert f"{d.published:.3f}x" in row and f"{d.predicted:.3f}x" in row and "**wrong**" in row
            continue
        run = runs[d.run]
        assert run["recipe"].startswith(d.recipe) and abs(run["speedup"] - d.published) < 5e-3
        assert d.source == run["source"]["url"]


def test_b200_mxfp8_and_rowwise_answers_carry_the_flag(capsys):
    assert {d.recipe for d in float8.known_wrong("B200", "rowwise")} == {"rowwise"}
    assert float8.known_wrong("GB200", "mxfp8") and not float8.known_wrong("H100", "mxfp8")
    assert not float8.known_wrong("B200", "tensorwise")
    rep = pm.report.report("llama3-8b", tokens=8192, gpu="B200", recipes=["mxfp8"])
    assert "KNOWN WRONG IN DIRECTION" in str(rep) and rep.to_dict()["known_wrong"][0]["published"] == 1.2
    est = train.estimate("llama3-8b", gpu="B200", n_gpus=8, seq_len=8192, batch_per_gpu=1, recipe="mxfp8")
    base = train.estimate("llama3-8b", gpu="B200", n_gpus=8, seq_len=8192, batch_per_gpu=1)
    assert "KNOWN WRONG IN DIRECTION" in est.table(baseline=base).splitlines()[2]
    assert main(["train", "--model", "llama3-8b", "--gpu", "b200", "--gpus", "8", "--recipe", "rowwise"]) == 0
    assert "measured rowwise at 1.040x" in capsys.readouterr().out
    h100 = pm.report.report("llama3-8b", tokens=8192, gpu="H100", recipes=["rowwise"])
    assert "KNOWN WRONG" not in str(h100)
