"""The torchao code `perfmodel float8` prints runs against the installed torchao and converts the right Linears.

Conversion runs on CPU (on the meta device here: shapes only, no memory): neither
``convert_to_float8_training`` nor ``quantize_`` with the MX training config runs a float8 GEMM.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

from perfmodel import cli
from perfmodel.errors import PerfModelError
from perfmodel.report import TORCHAO_VERSION, report, torchao_code, torchao_missing_reason
from perfmodel.specs.gpu import GPUS

torch = pytest.importorskip("torch")
torchao = pytest.importorskip("torchao")
nn = torch.nn

SHAPES = ["4096x14336", "4096x4096", "4096x1024", "1024x1024", "4096x50257"]  # the last is not /16
CALIBRATION = Path(__file__).resolve().parent.parent / "perfmodel" / "calibrations" / "h200.json"


def printed_code(text: str) -> str:
    """The indented code block under "Apply it with torchao ..." in the CLI's output."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Apply it with torchao"))
    block = []
    for line in lines[start + 1 :]:
        if line and not line.startswith("    "):
            break
        block.append(line)
    return textwrap.dedent("\n".join(block)).strip("\n")


def run_cli(capsys, *argv: str) -> str:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def model_of(shapes: list[str]) -> nn.Module:
    with torch.device("meta"):  # shapes only
        return nn.Sequential(*(nn.Linear(*map(int, s.split("x")), bias=False) for s in shapes))


def converted(model: nn.Module) -> dict[str, bool]:
    from torchao.float8.float8_linear import Float8Linear
    from torchao.prototype.moe_training.tensor import MXFP8TrainingWeightWrapperTensor

    return {
        name: isinstance(m, Float8Linear) or isinstance(m.weight, MXFP8TrainingWeightWrapperTensor)
        for name, m in model.named_children()
    }


def expected(rep, shapes: list[str]) -> dict[str, bool]:
    """Converted: the Linears where the recommended recipe reaches min_speedup (the "only where it pays" policy)."""
    rec = rep.recommendation
    pays = {f"{row.K}x{row.N}": row.eligible and row.speedups[rec] >= rep.min_speedup for row in rep.rows}
    return {str(i): pays[s] for i, s in enumerate(shapes)}


@pytest.mark.parametrize(
    "recipe, gpu, tokens",
    [
        ("tensorwise", "h100", 8192),
        ("rowwise", "h100", 16384),
        ("rowwise_with_gw_hp", "h200", 8192),
        ("mxfp8", "b200", 32768),
        ("mxfp8", "mi355x", 32768),
    ],
)
def test_the_printed_code_converts_what_the_table_decided(capsys, recipe, gpu, tokens):
    argv = ["float8", "--gpu", gpu, "--tokens", str(tokens), "--shapes", ",".join(SHAPES), "--recipes", recipe]
    out = run_cli(capsys, *argv)
    rep = report(SHAPES, tokens=tokens, gpu=gpu, recipes=[recipe])
    assert rep.recommendation == recipe and "Apply it with torchao" in out and f"torchao {TORCHAO_VERSION}" in out
    code = printed_code(out)
    assert code == rep.torchao_code()
    model = model_of(SHAPES)
    exec(code, {"model": model})
    want = expected(rep, SHAPES)
    assert converted(model) == want
    assert any(want.values()) and not all(want.values())  # the filter chose: some converted, some not
    assert want["4"] is False  # out_features 50257 is not a multiple of 16


def test_the_default_recommendations_print_code_that_runs(capsys):
    # every GPU's default answer on a big Llama: whatever it recommends runs
    for gpu in ("H100", "H200", "B200", "GB200", "B300", "MI300X", "MI355X", "L40S"):
        out = run_cli(capsys, "float8", "--gpu", gpu, "--tokens", "65536", "--shapes", ",".join(SHAPES))
        rep = report(SHAPES, tokens=65536, gpu=gpu)
        assert rep.recommendation != "bf16"
        model = model_of(SHAPES)
        exec(printed_code(out), {"model": model})
        assert converted(model) == expected(rep, SHAPES), gpu


def filter_keywords(code: str) -> dict[str, object]:
    call = next(
        node
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "perfmodel.float8.module_filter"
    )
    return {kw.arg: ast.literal_eval(kw.value) if kw.arg != "gpu" else ast.unparse(kw.value) for kw in call.keywords}


def test_every_option_of_the_table_reaches_the_filter(capsys):
    argv = [
        "float8",
        "--gpu",
        "h200",
        "--tokens",
        "8192",
        "--shapes",
        ",".join(SHAPES),
        "--recipes",
        "rowwise",
        "--cache-weight-cast",
        "--fuse-with-prev",
        "--dynamic-shapes",
        "--min-speedup",
        "1.05",
        "--time-model",
        "calibrated",
    ]
    out = run_cli(capsys, *argv)
    code = printed_code(out)
    assert filter_keywords(code) == {
        "gpu": "'H200'",
        "tokens": 8192,
        "recipe": "rowwise",
        "min_speedup": 1.05,
        "dynamic_shapes": True,
        "fuse_input_with_prev": True,
        "fuse_grad_output_with_prev": True,
        "cache_weight_cast": True,
        "time_model": "calibrated",
    }
    rep = report(
        SHAPES,
        tokens=8192,
        gpu="H200",
        recipes=["rowwise"],
        min_speedup=1.05,
        cache_weight_cast=True,
        fuse_input_with_prev=True,
        fuse_grad_output_with_prev=True,
        dynamic_shapes=True,
        time_model="calibrated",
    )
    model = model_of(SHAPES)
    exec(code, {"model": model})
    assert converted(model) == expected(rep, SHAPES)


def test_the_roofline_time_model_is_passed_on(capsys):
    out = run_cli(capsys, "float8", "--shapes", ",".join(SHAPES), "--time-model", "roofline", "--recipes", "rowwise")
    assert filter_keywords(printed_code(out))["time_model"] == "roofline"


def test_a_calibration_file_is_loaded_by_the_printed_code(capsys):
    out = run_cli(capsys, "float8", "--gpu", "h100", "--shapes", ",".join(SHAPES), "--calibration", str(CALIBRATION))
    code = printed_code(out)
    assert filter_keywords(code)["gpu"] == "gpu" and str(CALIBRATION) in code
    assert "provenance: transferred — your H200 calibration" in out
    model = model_of(SHAPES)
    ns = {"model": model}
    exec(code, ns)
    assert ns["gpu"].name == "H100-SXM"
    assert converted(model) == expected(report(SHAPES, tokens=8192, gpu=ns["gpu"]), SHAPES)


def test_the_torchao_names_exist_in_the_installed_torchao():
    from torchao.float8.config import Float8LinearConfig, Float8LinearRecipeName
    from torchao.prototype.moe_training.config import MXFP8TrainingOpConfig, MXFP8TrainingRecipe

    names = {r.value for r in Float8LinearRecipeName}
    for recipe in ("tensorwise", "rowwise", "rowwise_with_gw_hp"):
        assert f'from_recipe_name("{recipe}")' in torchao_code(recipe, "H100-SXM", 8192)
        assert recipe in names
        Float8LinearConfig.from_recipe_name(recipe)
    assert "MXFP8TrainingRecipe.MXFP8_RCEIL" in torchao_code("mxfp8", "B200", 8192)
    assert isinstance(MXFP8TrainingOpConfig.from_recipe(MXFP8TrainingRecipe.MXFP8_RCEIL), MXFP8TrainingOpConfig)
    assert "mxfp8" not in names  # why mxfp8 must not be printed as a Float8LinearConfig recipe


@pytest.mark.parametrize("recipe", ["dynamic", "delayed", "blockwise"])
def test_recipes_torchao_does_not_offer_get_no_code(capsys, recipe):
    assert torchao_code(recipe, "H100-SXM", 8192) is None
    reason = torchao_missing_reason(recipe)
    assert reason and recipe in reason
    out = run_cli(capsys, "float8", "--shapes", "4096x14336", "--tokens", "16384", "--recipes", recipe)
    assert f"Recommendation: {recipe}" in out and "no torchao code: " in out
    assert "Apply it with torchao" not in out and "from_recipe_name" not in out


def test_defaults_recommend_only_recipes_with_torchao_code():
    for gpu in GPUS:
        rep = report(["4096x14336"], tokens=8192, gpu=gpu)
        assert all(torchao_missing_reason(r) == "" for r in rep.recipes), gpu
        assert set(rep.recipes) <= {"tensorwise", "rowwise", "rowwise_with_gw_hp", "mxfp8"}


def test_torchao_code_options_are_checked_and_defaults_left_out():
    code = torchao_code("tensorwise", "H100-SXM", 4096, {"min_speedup": 1.0, "cache_weight_cast": False})
    assert filter_keywords(code) == {"gpu": "'H100-SXM'", "tokens": 4096, "recipe": "tensorwise"}
    code = torchao_code("tensorwise", "H100-SXM", 4096, {"exclude": "lm_head"})
    assert filter_keywords(code)["exclude"] == ["lm_head"]
    np = pytest.importorskip("numpy")
    code = torchao_code("rowwise", "H200", np.int64(4096), {"min_speedup": np.float64(1.2), "dynamic_shapes": np.True_})
    assert filter_keywords(code) == {
        "gpu": "'H200'",
        "tokens": 4096,
        "recipe": "rowwise",
        "min_speedup": 1.2,
        "dynamic_shapes": True,
    }
    with pytest.raises(PerfModelError, match=r"unknown module_filter option.*'cache_weights'; valid: min_speedup"):
        torchao_code("tensorwise", "H100-SXM", 4096, {"cache_weights": True})


def test_a_regex_exclude_is_printed_as_code_that_runs():
    code = torchao_code("tensorwise", "H100-SXM", 8192, {"exclude": [re.compile(r"^0$"), "2"]})
    assert code.startswith("import re\n")
    model = model_of(["4096x14336", "4096x14336", "4096x14336"])
    exec(code, {"model": model})
    assert converted(model) == {"0": False, "1": True, "2": False}
