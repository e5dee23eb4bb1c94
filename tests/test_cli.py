"""The `perfmodel` command line, end to end through main([...]); expected numbers from the library."""

from __future__ import annotations

import json
import subprocess
import sys
import types

import pytest

import perfmodel.float8 as f8
from perfmodel import cli
from perfmodel.gemm import gemm_perfdata
from perfmodel.hardware import GPUS, get_gpu
from perfmodel.report import report


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
    assert out.splitlines()[-1].startswith("provenance: measured — the H200 calibration")
    code, out, _ = run(capsys, "gemm", "16", "4096", "4096", "--json", "--time-model", "original")
    data = json.loads(out)
    ref = gemm_perfdata(16, 4096, 4096, "bf16", "H100", model="original")
    assert data["time_s"] == pytest.approx(ref.time_s) and data["bound"] == str(ref.bound)
    assert data["util"] == pytest.approx(ref.util)
    code, out, _ = run(capsys, "gemm", "1024", "1024", "1024", "--model", "original", "--json")
    assert json.loads(out)["time_s"] == pytest.approx(gemm_perfdata(1024, 1024, 1024, model="original").time_s)


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


def test_optional_hooks_are_registered(capsys, monkeypatch):
    calls = []

    def add_roofline_cli(subparsers):
        p = subparsers.add_parser("roofline")
        p.set_defaults(func=lambda args: calls.append("ran") or 0)

    monkeypatch.setitem(sys.modules, "perfmodel.moe", types.SimpleNamespace(add_roofline_cli=add_roofline_cli))
    monkeypatch.setitem(sys.modules, "perfmodel.calibrate", types.SimpleNamespace())  # present, no hook yet
    code, _, _ = run(capsys, "roofline")
    assert code == 0 and calls == ["ran"]


def test_a_broken_optional_module_does_not_break_the_cli(capsys, monkeypatch):
    real_import = cli.importlib.import_module

    def fake_import(name, *a):
        if name == "perfmodel.moe":
            raise ImportError("cannot import name 'grouped_gemm' from 'perfmodel.gemm'")
        return real_import(name, *a)

    monkeypatch.setattr(cli.importlib, "import_module", fake_import)
    code, out, _ = run(capsys, "gpus", "--json")
    assert code == 0 and json.loads(out)
    code, _, err = run(capsys, "roofline", "x")
    assert code == 2 and "importing perfmodel.moe failed" in err and "grouped_gemm" in err


def test_bugs_in_a_hook_are_not_swallowed(monkeypatch):
    def add_roofline_cli(subparsers):
        raise RuntimeError("bug in the hook")

    monkeypatch.setitem(sys.modules, "perfmodel.moe", types.SimpleNamespace(add_roofline_cli=add_roofline_cli))
    with pytest.raises(RuntimeError, match="bug in the hook"):
        cli.main(["gpus"])


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
