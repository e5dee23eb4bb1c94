"""perfmodel.measured.moe_bench: the triton_kernels bench layout, batch series, and `perfmodel roofline` end to end."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from proton_synth import H200_INFO, frame, kernel, profile, write

from perfmodel.errors import FileRefusedError, ProfileError
from perfmodel.measured import moe_bench as moe

B200_INFO = {"arch": "100", "bus_width": 8192, "clock_rate": 1965000, "memory_clock_rate": 3996000, "num_sms": 148}
BATCHES = [128, 256, 512, 2048, 8192]


def _write_log(root: Path, x: str, w: str, *, info: dict | None = H200_INFO, eff: float = 0.7) -> None:
    for b in BATCHES:
        flops = 2 * 2 * b * 4 * 5120 * 8192  # two matmuls per token and active expert
        nbytes = 128 * 2 * 5120 * 8192  # every expert's fp8 weights, read once
        t_ns = max(flops / 1.9e15, nbytes / 4.6e12) / eff * 1e9
        path = moe.profile_path(root, "llama4-maverick", x, w, b)
        path.parent.mkdir(parents=True, exist_ok=True)
        devices = {"CUDA": {"0": info}} if info else None
        write(
            path,
            profile(
                frame(
                    "moe",
                    {},
                    kernel("_matmul_ogs_a", t_ns / 2, flops={8: flops / 2}, nbytes=nbytes / 2),
                    kernel("_matmul_ogs_b", t_ns / 2, flops={8: flops / 2}, nbytes=nbytes / 2),
                    kernel("_routing", 5000),
                ),
                devices=devices,
            ),
        )


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="perfmodel")
    moe.add_roofline_cli(parser.add_subparsers(dest="command"))
    return parser.parse_args(["roofline", *argv])


def test_profile_path_and_batches() -> None:
    assert moe.profile_path("logs", "m", "fp8", "mx4", 256, tp=2, ep=4) == Path(
        "logs/m/fp8-mx4-TP2-EP4/profiles/batch-256.hatchet"
    )
    batches = moe.batches_from_ranges(moe.MOE_BATCH_RANGES)
    assert batches[:3] == [128, 160, 192] and batches[12:14] == [512, 640] and batches[-1] == 31872


def test_batch_series(tmp_path: Path) -> None:
    _write_log(tmp_path, "fp8", "fp8")
    series = moe.batch_series(tmp_path, "llama4-maverick", "fp8", "fp8", BATCHES, n_expts_tot=128, n_expts_act=4)
    assert [p.meta["batch"] for p in series] == BATCHES
    assert [p.meta["x"] for p in series] == [b * 4 / 128 for b in BATCHES]
    p = series[1]
    assert p.flops == 2 * 2 * 256 * 4 * 5120 * 8192 and p.dtype.name == "fp8_e4m3" and p.gpu.name == "H200"
    assert p.meta["kernels"] == 2 and p.source == "measured"  # the routing kernel is not a matmul
    with pytest.raises(ProfileError, match=r"batch-999\.hatchet: profile missing"):
        moe.batch_series(tmp_path, "llama4-maverick", "fp8", "fp8", [999], n_expts_tot=128, n_expts_act=4)


def test_log_metadata(tmp_path: Path) -> None:
    meta = tmp_path / "m.json"
    meta.write_text(json.dumps([["a", "logs/a", True], ["b", "logs/b", 0]]))
    assert [(e.name, e.log_dir, e.draw_roofline) for e in moe.read_log_metadata(meta)] == [
        ("a", Path("logs/a"), True),
        ("b", Path("logs/b"), False),
    ]
    meta.write_text(json.dumps({"a": 1}))
    with pytest.raises(ProfileError, match=r"m\.json: expected a non-empty JSON list"):
        moe.read_log_metadata(meta)


def test_native_mx4_rule() -> None:
    assert moe.has_native_mx4("CUDA", B200_INFO) and not moe.has_native_mx4("CUDA", H200_INFO)
    assert moe.has_native_mx4("HIP", {"arch": "gfx950"}) and not moe.has_native_mx4("HIP", {"arch": "gfx942"})


def test_cli_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write_log(tmp_path / "triton", "fp8", "fp8", eff=0.8)
    _write_log(tmp_path / "base", "fp8", "fp8", eff=0.5)
    meta = tmp_path / "log_metadata.json"
    meta.write_text(json.dumps([["triton", str(tmp_path / "triton"), True], ["base", str(tmp_path / "base"), False]]))
    out = tmp_path / "out.png"
    ranges = "128:257:128,512:513:1,2048:8193:6144"
    args = _args("-m", str(meta), "-o", str(out), "-d", "fp8fp8", "--batch-ranges", ranges)
    assert args.func(args) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(out.read_bytes()[16:20], "big") == 840  # the seed's 7x5 in at 120 dpi
    text = capsys.readouterr().out
    assert "Benchmarking llama4-maverick (fp8xfp8, TP=1, EP=1)..." in text and "[base] batch 8192" in text


def test_cli_mx4_default_from_metadata(tmp_path: Path) -> None:
    _write_log(tmp_path / "run", "bf16", "mx4")  # H200: no native mx4 -> bf16 activations
    meta = tmp_path / "m.json"
    meta.write_text(json.dumps([["run", str(tmp_path / "run"), True]]))
    ranges = "128:257:128"
    args = _args("-m", str(meta), "-o", str(tmp_path / "a.png"), "-d", "fp8mx4", "--batch-ranges", ranges, "-q")
    assert args.func(args) == 0
    args = _args(
        "-m", str(meta), "-o", str(tmp_path / "b.png"), "-d", "fp8mx4", "--native-mx4", "--batch-ranges", ranges, "-q"
    )
    assert args.func(args) == 2  # fp8-mx4 profiles do not exist: a clear error, no traceback (input error: exit 2)


def test_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write_log(tmp_path / "run", "fp8", "fp8", info=None)
    meta = tmp_path / "m.json"
    meta.write_text(json.dumps([["run", str(tmp_path / "run"), True]]))
    args = _args("-m", str(meta), "-o", str(tmp_path / "x.png"), "--batch-ranges", "128:129:1", "-q")
    assert args.func(args) == 2
    assert "no device metadata" in capsys.readouterr().err
    args = _args("-m", str(meta), "-o", str(tmp_path / "x.png"), "--batch-ranges", "128:129:1", "-q", "--gpu", "H200")
    assert args.func(args) == 0
    args = _args("-m", str(meta), "-o", str(tmp_path / "y.png"), "--batch-ranges", "100:101:1", "-q")
    assert args.func(args) == 2
    assert "batch-100.hatchet: profile missing" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _args("-m", str(meta), "--batch-ranges", "1:2")


def test_cli_positive_ints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for flag in ("--tp", "--ep", "--n-expts-tot", "--n-expts-act", "--dim1", "--dim2"):
        for bad in ("0", "-2", "x"):
            with pytest.raises(SystemExit):
                _args("-m", "m.json", flag, bad)
            assert "expected a whole number >= 1" in capsys.readouterr().err


def test_cli_output_safety(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write_log(tmp_path / "run", "fp8", "fp8")
    meta = tmp_path / "m.json"
    meta.write_text(json.dumps([["run", str(tmp_path / "run"), True]]))
    common = ("-m", str(meta), "--batch-ranges", "128:129:1", "-q")

    def run(*argv: str) -> tuple[int, str]:
        args = _args(*common, *argv)
        return args.func(args), capsys.readouterr().err

    out = tmp_path / "chart.png"
    out.write_bytes(b"mine")
    code, err = run("-o", str(out))
    assert code == 2 and "chart.png: exists; not overwriting it" in err and out.read_bytes() == b"mine"
    assert run("-o", str(out), "--force") == (0, "")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, err = run("-o", str(meta), "--force")  # -o naming the input
    assert code == 2 and "this is the input" in err and json.loads(meta.read_text())
    profile = moe.profile_path(tmp_path / "run", "llama4-maverick", "fp8", "fp8", 128)
    code, err = run("-o", str(profile.with_suffix(".png")))
    assert code == 0  # a new file beside the profiles is fine...
    code, err = run("-o", str(tmp_path / "chart.pngg"))
    assert code == 2 and "unknown image format (extension 'pngg'); matplotlib writes" in err and "png, " in err
    code, err = run("-o", str(tmp_path / "missing" / "chart.png"))
    assert code == 2 and "does not exist; perfmodel does not create folders" in err
    assert not (tmp_path / "missing").exists()


def test_cli_png_to_stdout(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    _write_log(tmp_path / "run", "fp8", "fp8")
    meta = tmp_path / "m.json"
    meta.write_text(json.dumps([["run", str(tmp_path / "run"), True]]))
    args = _args("-m", str(meta), "--batch-ranges", "128:129:1", "-o", "-")
    assert args.func(args) == 0
    captured = capsysbinary.readouterr()
    assert captured.out[:8] == b"\x89PNG\r\n\x1a\n"  # standard output holds the PNG only...
    assert b"Benchmarking" in captured.err and b"wrote standard output" in captured.err  # ...the log goes to stderr


def test_log_metadata_refuses_fifos_and_devices(tmp_path: Path) -> None:
    with pytest.raises(FileRefusedError, match="a folder, not a regular file"):
        moe.read_log_metadata(tmp_path)


def test_expert_counts_that_cannot_route_are_input_errors(tmp_path, capsys):
    meta = tmp_path / "log_metadata.json"
    meta.write_text(json.dumps([["run", str(tmp_path / "run"), True]]))
    for extra, message in (
        (("--n-expts-act", "200"), "--n-expts-act 200 is above --n-expts-tot 128: a token is routed to at most 128"),
        (("--ep", "3"), "--n-expts-tot 128 is not divisible by --ep 3"),
    ):
        args = _args("-m", str(meta), "--batch-ranges", "128:129:1", "-q", "-o", str(tmp_path / "c.png"), *extra)
        assert args.func(args) == 2
        assert message in capsys.readouterr().err
        assert not (tmp_path / "c.png").exists()
