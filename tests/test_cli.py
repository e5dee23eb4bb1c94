"""The `perfmodel` command line, end to end through main([...]); expected numbers from the library."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import perfmodel.float8 as f8
from perfmodel import __version__, cli
from perfmodel.gemm import gemm_perfdata
from perfmodel.measured import moe_bench
from perfmodel.report import report
from perfmodel.specs.gpu import GPUS, get_gpu


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_gpus_table_and_json(capsys):
    code, out, err = run(capsys, "gpus")
    assert code == 0 and not err
    h100 = get_gpu("H100")
    line = next(line for line in out.splitlines() if line.startswith("H100-SXM "))
    assert f"{h100.peak_flops_per_s('bf16') * 1e-12:.0f}" in line
    assert f"{h100.peak_flops_per_s('fp8') * 1e-12:.0f}" in line
    assert f"{h100.mem_bw_bytes_per_s * 1e-12:.2f}" in line and str(h100.num_sms) in line
    assert line.rstrip().endswith("transferred") and " 700 " in line
    assert next(line for line in out.splitlines() if line.startswith("H200 ")).rstrip().endswith("measured")
    a100 = next(line for line in out.splitlines() if line.startswith("A100-SXM-80GB"))
    assert " - " in a100 and a100.rstrip().endswith("estimated")  # no fp8 on Ampere
    code, out, _ = run(capsys, "gpus", "--json")
    data = json.loads(out)
    assert [d["name"] for d in data] == list(GPUS)
    h = next(d for d in data if d["name"] == "H100-SXM")
    assert h["bf16_dense_tflops"] == pytest.approx(h100.peak_flops_per_s("bf16") * 1e-12)
    assert h["mem_gb"] == pytest.approx(h100.mem_bytes * 1e-9) and h["calibrated"] is True
    assert h["provenance"]["kind"] == "transferred" and h["provenance"]["expected_error"]["speedup_pct"] > 0
    assert {d["provenance"]["kind"] for d in data} <= {"measured", "transferred", "estimated"}


def test_gemm(capsys):
    code, out, _ = run(capsys, "gemm", "8192", "4096", "14336", "--dtype", "fp8", "--gpu", "h200")
    pd = gemm_perfdata(8192, 4096, 14336, "fp8", "H200")
    assert code == 0
    assert f"{pd.time_s * 1e6:.2f} us" in out and f"{pd.tflops:.1f} TFLOP/s" in out
    assert "compute" in out and "H200" in out and "tensorwise scaling" in out
    assert out.splitlines()[-2].startswith("provenance: measured — the H200 calibration")
    assert out.splitlines()[-1].startswith("error bar: -")
    code, out, _ = run(capsys, "gemm", "16", "4096", "4096", "--json", "--time-model", "original")
    data = json.loads(out)
    ref = gemm_perfdata(16, 4096, 4096, "bf16", "H100", time_model="original")
    assert data["time_s"] == pytest.approx(ref.time_s) and data["bound"] == str(ref.bound)
    assert data["util"] == pytest.approx(ref.util)
    code, out, _ = run(capsys, "gemm", "1024", "1024", "1024", "--model", "original", "--json")
    assert json.loads(out)["time_s"] == pytest.approx(gemm_perfdata(1024, 1024, 1024, time_model="original").time_s)


def test_float8_preset_table(capsys):
    code, out, err = run(capsys, "float8", "--gpu", "h100", "--model", "llama3-8b", "--tokens", "8192")
    assert code == 0 and not err
    rep = report("llama3-8b", tokens=8192, gpu="H100")
    assert out.strip() == str(rep).strip()
    up = next(r for r in rep.rows if r.K == 4096 and r.N == 14336)
    assert f"{f8.linear_time(8192, 4096, 14336, None, 'H100').total_s * 1e6:.1f}" in out
    assert f"({up.speedups['tensorwise']:.2f}x)" in out
    assert "Recommendation: tensorwise" in out


def test_float8_shapes_json_and_kernels(capsys):
    code, out, _ = run(
        capsys,
        "float8",
        "--shapes",
        "4096x14336,14336x4096",
        "--tokens",
        "4096",
        "--recipes",
        "tensorwise,rowwise",
        "--json",
        "--kernels",
    )
    data = json.loads(out)
    assert code == 0 and data["recipes"] == ["tensorwise", "rowwise"] and data["tokens"] == 4096
    assert [(r["K"], r["N"]) for r in data["rows"]] == [(4096, 14336), (14336, 4096)]
    expected = float(f8.linear_time(4096, 4096, 14336, "rowwise", "H100").total_s)
    assert data["rows"][0]["times_s"]["rowwise"] == pytest.approx(expected)
    assert len(data["kernels"]) == 2 * 3 and data["kernels"][1]["recipe"] == "tensorwise"
    code, out, _ = run(capsys, "float8", "--shapes", "4096x14336", "--kernels", "--recipes", "tensorwise")
    assert f8.linear_time(8192, 4096, 14336, "tensorwise", "H100").table() in out
    assert f8.linear_time(8192, 4096, 14336, None, "H100").table() in out


def test_float8_min_speedup_and_options(capsys):
    _, out, _ = run(
        capsys,
        "float8",
        "--shapes",
        "1024x1024",
        "--min-speedup",
        "1.2",
        "--json",
        "--cache-weight-cast",
        "--fuse-with-prev",
    )
    row = json.loads(out)["rows"][0]
    lt = f8.linear_time(
        8192,
        1024,
        1024,
        "tensorwise",
        "H100",
        cache_weight_cast=True,
        fuse_input_with_prev=True,
        fuse_grad_output_with_prev=True,
    )
    assert row["times_s"]["tensorwise"] == pytest.approx(float(lt.total_s))
    assert json.loads(out)["min_speedup"] == 1.2


def test_break_even(capsys):
    code, out, _ = run(capsys, "break-even", "4096x14336", "1024x1024", "--gpu", "h100")
    assert code == 0
    m = f8.break_even_tokens(4096, 14336, "tensorwise", "H100")
    line = next(line for line in out.splitlines() if line.lstrip().startswith("4096"))
    assert str(m) in line.split()
    small = next(line for line in out.splitlines() if line.split()[:2] == ["1024", "1024"])
    assert small.split()[2:5] == ["never", "(<=", "16777216)"]
    code, js, _ = run(capsys, "break-even", "1024x1024", "--gpu", "h100", "--json")
    spread = json.loads(js)[0]["break_even_tokens_p10_p90"]
    # a spread whose optimistic end never breaks even either reads "never", not "never-never"
    assert small.split()[5] == ("never" if spread == [None, None] else "-".join(str(v or "never") for v in spread))
    code, out, _ = run(capsys, "break-even", "4096x4096", "--recipe", "rowwise", "--json")
    data = json.loads(out)
    assert data[0]["break_even_tokens"] == f8.break_even_tokens(4096, 4096, "rowwise", "H100")
    code, out, _ = run(capsys, "break-even", "64x64", "--max-tokens", "1024", "--json")
    assert json.loads(out)[0]["break_even_tokens"] is None


def test_models(capsys):
    code, out, _ = run(capsys, "models")
    assert code == 0 and "llama3-8b" in out and "deepseek-v3" in out
    code, out, _ = run(capsys, "models", "--json")
    data = json.loads(out)
    assert data[0]["name"] == "llama3-8b" and data[0]["linears"][1]["out_features"] == 1024


@pytest.mark.parametrize(
    "argv, needle",
    [
        (("float8", "--gpu", "h101", "--model", "llama3-8b"), "unknown GPU 'h101'"),
        (("float8", "--model", "llama3-7b"), "unknown model preset 'llama3-7b'"),
        (("float8", "--shapes", "4096y14336"), "bad Linear shape '4096y14336'"),
        (("float8", "--shapes", "4096x4096", "--recipes", "fp9"), "unknown recipe 'fp9'"),
        (("float8", "--shapes", "4096x4096", "--recipes", "mxfp8"), "recipe 'mxfp8' needs mxfp8"),
        (("float8", "--shapes", "4096x4096", "--model", "gpt2"), "either --model or --shapes"),
        (("float8",), "pass --model PRESET"),
        (("gemm", "1", "2", "3", "--gpu", "Z100"), "unknown GPU 'Z100'"),
        (("gemm", "1", "2", "3", "--dtype", "fp7"), "unknown number format 'fp7'"),
        (("gemm", "1", "2", "3", "--scaling", "colwise", "--dtype", "fp8"), "unknown scaling 'colwise'"),
        (("break-even", "4096x4096", "--recipe", "nope"), "unknown recipe 'nope'"),
        (("break-even", "4096*4096"), "bad Linear shape '4096*4096'"),
    ],
)
def test_perfmodel_errors_exit_2_with_the_bad_value(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2 and not out
    assert err.startswith("perfmodel: error: ") and needle in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "argv, needle",
    [
        (("gemm", "0", "2", "3"), "expected a positive integer, got '0'"),
        (("float8", "--tokens", "-5", "--model", "gpt2"), "got '-5'"),
        (("float8", "--model", "gpt2", "--time-model", "fast"), "invalid choice: 'fast'"),
        (("frobnicate",), "invalid choice: 'frobnicate'"),
    ],
)
def test_usage_errors_exit_2(capsys, argv, needle):
    code, _, err = run(capsys, *argv)
    assert code == 2 and needle in err


def test_no_command_and_help(capsys):
    code, _, err = run(capsys)
    assert code == 2 and "usage: perfmodel" in err
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "float8" in out and "break-even" in out


def test_the_roofline_and_calibrate_subcommands_are_registered(capsys):
    for verb in ("roofline", "calibrate"):
        code, out, _ = run(capsys, verb, "--help")
        assert code == 0 and f"usage: perfmodel {verb}" in out


def test_bugs_in_a_hook_are_not_swallowed(capsys, monkeypatch):
    def add_roofline_cli(subparsers):
        raise RuntimeError("bug in the hook")

    monkeypatch.setattr(moe_bench, "add_roofline_cli", add_roofline_cli)
    code, out, err = run(capsys, "roofline", "--help")  # a core verb (gpus) no longer builds the roofline parser
    assert code == 3 and not out
    assert err.startswith("perfmodel: internal error: RuntimeError: bug in the hook (a bug in perfmodel")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_an_internal_error_is_one_line_with_exit_status_3(capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr("perfmodel.gemm.gemm_perfdata", broken)
    code, out, err = run(capsys, "gemm", "16", "16", "16")
    assert code == 3 and not out
    assert (
        err == f"perfmodel: internal error: ZeroDivisionError: division by zero (a bug in perfmodel {__version__}: "
        "please report it with the command line that shows it)\n"
    )


def test_import_is_light_and_module_entry_point_works():
    code = (
        "import sys, perfmodel.cli; heavy = {'sympy', 'torch', 'matplotlib'} & set(sys.modules); "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    res = subprocess.run(
        [sys.executable, "-m", "perfmodel", "gemm", "4096", "4096", "4096", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(res.stdout)["M"] == 4096
    bad = subprocess.run(
        [sys.executable, "-m", "perfmodel", "float8", "--gpu", "nope", "--model", "gpt2"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("perfmodel: error: unknown GPU 'nope'")
    assert "Traceback" not in bad.stderr


# ------------------------------------------------------------------------------------------------
# GPUs without float8, your own calibration
# ------------------------------------------------------------------------------------------------
def test_a_gpu_without_float8_keeps_bf16_and_says_why(capsys):
    code, out, err = run(capsys, "float8", "--gpu", "a100", "--model", "llama3-8b")
    assert code == 0 and not err
    rep = report("llama3-8b", tokens=8192, gpu="A100")
    assert out.strip() == str(rep).strip()
    assert rep.recipes == () and rep.recommendation == "bf16" and "Ampere" in rep.reason
    line = next(line for line in out.splitlines() if line.startswith("Recommendation:"))
    assert line.startswith("Recommendation: keep bf16 — A100-SXM-80GB (Ampere, arch 80) has no float8 tensor cores")
    assert f"{f8.linear_time(8192, 4096, 14336, None, 'A100').total_s * 1e6:.1f}" in out  # the bf16 table
    assert "Apply it with torchao" not in out
    code, out, _ = run(capsys, "float8", "--gpu", "a100", "--shapes", "4096x4096", "--json", "--kernels")
    data = json.loads(out)
    assert code == 0 and data["recipes"] == [] and data["rows"][0]["decision"] == "bf16"
    assert data["recommendation"]["recipe"] == "bf16" and "no float8 tensor cores" in data["recommendation"]["reason"]
    assert data["recommendation"]["torchao_code"] is None and [k["recipe"] for k in data["kernels"]] == ["bf16"]


def test_json_carries_the_recommendation_and_its_code(capsys):
    _, out, _ = run(capsys, "float8", "--shapes", "4096x14336,1024x1024", "--json")
    rec = json.loads(out)["recommendation"]
    rep = report(["4096x14336", "1024x1024"], tokens=8192)
    assert rec["recipe"] == rep.recommendation == "tensorwise" and rec["keep_bf16"] == ["1024x1024"]
    assert rec["speedup"] == pytest.approx(rep.totals.bf16_s / rep.totals.filtered_s["tensorwise"])
    assert rec["torchao_code"] == rep.torchao_code() and "convert_to_float8_training(" in rec["torchao_code"]
    assert rec["torchao_version"] == "0.18" and rec["torchao_missing"] == ""


CALIBRATION = str(Path(__file__).resolve().parent.parent / "perfmodel" / "calibrations" / "h200.json")


def test_calibration_file_is_used_and_named_in_the_provenance(capsys):
    code, out, _ = run(capsys, "gemm", "4096", "4096", "4096", "--gpu", "h100", "--calibration", CALIBRATION, "--json")
    data = json.loads(out)
    assert code == 0 and data["provenance"]["kind"] == "transferred" and "your" in data["provenance"]["summary"]
    code, out, _ = run(capsys, "gemm", "4096", "4096", "4096", "--gpu", "h200", "--calibration", CALIBRATION)
    assert out.splitlines()[-2].startswith("provenance: measured — your H200 calibration")
    code, out, _ = run(capsys, "break-even", "4096x4096", "--gpu", "h200", "--calibration", CALIBRATION)
    assert code == 0 and "provenance: measured — your H200 calibration" in out
    code, out, _ = run(capsys, "float8", "--gpu", "h100", "--shapes", "4096x4096", "--calibration", CALIBRATION)
    assert code == 0 and "provenance: transferred — your H200 calibration" in out


@pytest.mark.parametrize(
    "command", [("gemm", "16", "16", "16"), ("float8", "--model", "gpt2"), ("break-even", "64x64")]
)
def test_calibration_errors_are_named(capsys, tmp_path, command):
    code, _, err = run(capsys, *command, "--gpu", "b200", "--calibration", CALIBRATION)
    assert code == 2 and err.startswith("perfmodel: error: the calibration attached to B200 (arch 100) was fitted")
    bad = tmp_path / "fit.json"
    bad.write_text("{")
    code, _, err = run(capsys, *command, "--calibration", str(bad))
    assert code == 2 and err.startswith(f"perfmodel: error: {bad}: ") and "Traceback" not in err
    code, _, err = run(capsys, *command, "--calibration", str(tmp_path / "missing.json"))
    assert code == 2 and err.startswith("perfmodel: error: ") and "missing.json" in err
    code, _, err = run(capsys, *command, "--calibration", CALIBRATION, "--time-model", "roofline")
    assert code == 2 and "--time-model roofline ignores it" in err


# ------------------------------------------------------------------------------------------------
# No traceback, whatever the input
# ------------------------------------------------------------------------------------------------
def test_break_even_marks_shapes_float8_cannot_run(capsys):
    code, out, _ = run(capsys, "break-even", "15x17", "4096x4096")
    assert code == 0
    row = next(line for line in out.splitlines() if line.lstrip().startswith("15"))
    assert "no: not /16" in row
    code, out, _ = run(capsys, "break-even", "15x17", "--json")
    rec = json.loads(out)[0]
    assert rec["eligible"] is False and "multiples of 16" in rec["ineligible_reason"]
    assert rec["break_even_tokens"] is None


@pytest.mark.parametrize(
    "argv, needle",
    [
        (("float8", "--model", "gpt2", "--tokens", "1" + "0" * 13), "tokens must be a positive integer up to"),
        (("float8", "--shapes", "4096x4096", "--tokens", "1" + "0" * 30), "tokens must be a positive integer up to"),
        (("float8", "--shapes", "10000000000000x16"), "must be a positive integer up to"),
        (("float8", "--shapes", ","), "--shapes ',' is empty"),
        (("float8", "--shapes", "4096x4096", "--recipes", ","), "--recipes ',' is empty"),
        (("float8", "--shapes", "4096x4096", "--recipes", "bf16"), "leave no float8 recipe to compare"),
        (("float8", "--shapes", "4096x4096", "--gpu", "a100", "--recipes", "tensorwise"), "A100-SXM-80GB has no"),
        (("float8", "--shapes", "4096x4096", "--gpu", ""), "unknown GPU ''"),
        (("gemm", "1" + "0" * 13, "16", "16"), "M must be a positive integer up to"),
        (("gemm", "16", "16", "16", "--dtype", "fp8", "--gpu", "a100"), "A100-SXM-80GB has no fp8_e4m3 peak"),
        (("gemm", "16", "16", "16", "--dtype", "bf16", "--scaling", "rowwise"), "scaling must be None"),
        (("break-even", "4096x4096", "--recipe", "bf16"), "--recipe bf16 is the baseline"),
        (("break-even", "4096x4096", "--gpu", "a100"), "A100-SXM-80GB has no peak"),
        (("break-even", "4096x4096", "--max-tokens", "1" + "0" * 20), "max_tokens must be a positive integer"),
    ],
)
def test_bad_inputs_are_named_errors(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2 and not out and "Traceback" not in err
    assert err.startswith("perfmodel: error: ") and needle in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "argv, needle",
    [
        (("float8", "--model", "gpt2", "--min-speedup", "inf"), "expected a positive finite number, got 'inf'"),
        (("float8", "--model", "gpt2", "--min-speedup", "nan"), "got 'nan'"),
        (("break-even", "64x64", "--min-speedup", "1e400"), "got '1e400'"),
        (("gemm", "16", "16", "1" * 5000), "expected a positive integer"),
    ],
)
def test_bad_numbers_are_usage_errors(capsys, argv, needle):
    code, _, err = run(capsys, *argv)
    assert code == 2 and needle in err and "Traceback" not in err


_VALUES = [
    "0", "-1", "1", "15", "16", "4096", "14336", "50257", "100000000000", "1" + "0" * 13, "1" + "0" * 40, "1.5", "1e3",
    "nan", "inf", "", " ", "abc", "4096x4096", "4096x14336,14336x4096", "4096x0", "x", ",", "4096y4096", "64x64,",
    "h100", "H200", "a100", "b200", "mi355x", "l40s", "NVIDIA H100 80GB HBM3", "z100", "bf16", "fp8", "mxfp8", "nvfp4",
    "int8", "fp7", "tensorwise", "rowwise", "rowwise_with_gw_hp", "dynamic", "delayed", "blockwise", "mx", "colwise",
    "llama3-8b", "mixtral-8x7b", "deepseek-v3", "gpt2", "llama9", "roofline", "original", "calibrated",
    CALIBRATION, "/nonexistent/fit.json", "/dev/null", "--json",
]  # fmt: skip
_FLAGS = {
    "gpus": ["--json"],
    "models": ["--json"],
    "gemm": ["--dtype", "--gpu", "--scaling", "--time-model", "--model", "--calibration", "--json"],
    "float8": [
        "--gpu", "--tokens", "--model", "--shapes", "--recipes", "--min-speedup", "--cache-weight-cast",
        "--fuse-with-prev", "--dynamic-shapes", "--time-model", "--calibration", "--kernels", "--json",
    ],
    "break-even": ["--recipe", "--gpu", "--min-speedup", "--max-tokens", "--time-model", "--calibration", "--json"],
}  # fmt: skip
_SWITCHES = {"--json", "--cache-weight-cast", "--fuse-with-prev", "--dynamic-shapes", "--kernels"}


@st.composite
def _argv(draw) -> list[str]:
    command = draw(st.sampled_from(sorted(_FLAGS)))
    values = st.sampled_from(_VALUES)
    argv = [command, *draw(st.lists(values, max_size=4))] if command in ("gemm", "break-even") else [command]
    for flag in draw(st.lists(st.sampled_from(_FLAGS[command]), max_size=5)):
        argv += [flag] if flag in _SWITCHES else [flag, draw(values)]
    return argv


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(argv=_argv())
def test_no_input_shows_a_traceback(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    text = err.getvalue()
    assert "Traceback" not in text and "internal error" not in text, (argv, text)
    if code == 0:
        assert out.getvalue()
    else:
        assert code == 2, (argv, code, text)
        last = text.strip().splitlines()[-1]
        assert last.startswith("perfmodel: error: ") or (last.startswith("perfmodel ") and ": error: " in last), text


def test_python_m_perfmodel_exit_codes():
    ok = subprocess.run([sys.executable, "-m", "perfmodel", "models"], capture_output=True, text=True)
    bad = subprocess.run([sys.executable, "-m", "perfmodel", "gemm", "1", "2"], capture_output=True, text=True)
    huge = subprocess.run(
        [sys.executable, "-m", "perfmodel", "float8", "--model", "gpt2", "--tokens", "1" + "0" * 30],
        capture_output=True,
        text=True,
    )
    assert (ok.returncode, bad.returncode, huge.returncode) == (0, 2, 2)
    assert "Traceback" not in bad.stderr + huge.stderr
    assert huge.stderr.startswith("perfmodel: error: tokens must be a positive integer")


def _step_filter_line(out: str) -> str:
    lines = out.splitlines()
    i = next(i for i, line in enumerate(lines) if "Convert by groups of Linears" in line)
    code = []
    for line in lines[i + 1 :]:
        if not line.startswith("    "):
            break
        code.append(line.strip())
    return "\n".join(code)


@pytest.mark.parametrize(
    "extra",
    [("--time-model", "tiles"), ("--min-speedup", "1.2"), ("--calibration", CALIBRATION)],
)
def test_the_printed_step_filter_reproduces_the_layer_table(capsys, extra):
    import dataclasses  # the printed code may use it

    import perfmodel
    import perfmodel.calibrate
    import perfmodel.step

    code, out, _ = run(capsys, "float8", "--model", "llama3-8b", "--gpu", "h200", "--seq-len", "8192", *extra)
    assert code == 0
    snippet = _step_filter_line(out)
    ns = {"perfmodel": perfmodel, "dataclasses": dataclasses}
    exec(snippet, ns)
    best = next(line for line in out.splitlines() if "breakdown of the best" in line)
    chosen = best.split("(", 1)[1].split(")")[0].split(": ", 1)[1]
    assert ", ".join(ns["module_filter_fn"].groups) == chosen
    if extra[0] == "--time-model":
        assert "time_model='tiles'" in snippet
    if extra[0] == "--min-speedup":
        assert "min_gain=0.2" in snippet
        for row in out.split("Whole decoder layer", 1)[1].splitlines()[2:5]:
            speed = float(row.split()[-1].rstrip("x"))
            assert speed >= 1.2 or "none (bf16)" in row  # no group choice below the asked speedup
    if extra[0] == "--calibration":
        assert "load_calibration(" in snippet and "gpu=gpu" in snippet


def test_layer_section_says_which_options_it_does_not_use(capsys):
    argv = ("float8", "--model", "llama3-8b", "--gpu", "h200", "--seq-len", "8192", "--dynamic-shapes")
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "--dynamic-shapes change(s) the Linear table above only" in out


def test_batch_needs_seq_len(capsys):
    code, _, err = run(capsys, "float8", "--model", "llama3-8b", "--gpu", "h200", "--batch", "4")
    assert code == 2 and "--batch 4 needs --seq-len" in err and "Traceback" not in err
