"""`perfmodel profile FILE.hatchet` (perfmodel.measured.summary): kernels and scopes of one Proton profile."""

import json
from pathlib import Path

import pytest

import perfmodel as pm
from perfmodel.cli import main
from perfmodel.errors import ProfileError
from perfmodel.measured.summary import profile_rows

DATA = Path(__file__).parent / "data"


def test_rows_sum_kernels_by_name_and_agree_with_perfdata():
    path = DATA / "h200_proton_triton_matmul.hatchet"
    rows = profile_rows(str(path))
    prof = pm.proton.read(str(path))
    assert len(rows) == len({k.name for k in prof.kernels})
    assert [r.time_s for r in rows] == sorted((r.time_s for r in rows), reverse=True)
    assert sum(r.share for r in rows) == pytest.approx(1.0, rel=1e-12)
    top = rows[0]
    ref = prof.perfdata(pattern=r"matmul_bf16 \[M=2048, N=2048, K=2048\]")
    assert top.name == "matmul_bf16 [M=2048, N=2048, K=2048]" and top.launches == 3
    assert top.time_s == pytest.approx(ref.time_s, rel=1e-12)
    assert top.point.util == pytest.approx(ref.util, rel=1e-12) and top.point.bound == ref.bound
    # 3 launches of a 2048^3 GEMM: 3 * 2 * 2048^3 FLOP, as the profile's launch metadata counts them
    assert top.flops == pytest.approx(3 * 2 * 2048**3, rel=1e-9)


def test_cli_text_json_and_plot(tmp_path, capsys):
    path = str(DATA / "h200_proton_vector_add.hatchet")
    assert main(["profile", path]) == 0
    out = capsys.readouterr().out
    assert "on H200 (measured)" in out and "memory" in out and "vector_add" in out
    assert main(["profile", path, "--json", "--top", "1"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["gpu"] == "H200" and len(d["rows"]) == 1 and d["rows"][0]["bound"] == "memory"
    assert 0 < d["rows"][0]["util"] <= 1.2
    pytest.importorskip("matplotlib")
    png = tmp_path / "r.png"
    assert main(["profile", path, "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["profile", path, "--plot", str(png)]) == 2  # exists: refused without --force
    assert "exists" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["triton_example_cuda.json", "triton_example_hip.json"])
def test_triton_example_profiles_without_device_metadata(name, capsys):
    path = str(DATA / name)
    assert main(["profile", path]) == 0
    assert "pass --gpu" in capsys.readouterr().out
    assert main(["profile", path, "--gpu", "H200", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows and all(r["util"] is not None for r in rows if r["tflops"] is not None)


def test_scopes_of_a_scoped_profile(capsys):
    path = str(DATA / "h200_proton_cublas_scope.hatchet")
    rows = profile_rows(path, scopes=True)
    assert rows and all(r.kind == "scope" for r in rows)
    assert main(["profile", path, "--scopes"]) == 0


def test_bad_input_is_named(tmp_path, capsys):
    path = str(DATA / "h200_proton_triton_matmul.hatchet")
    with pytest.raises(ProfileError, match="no kernel name matches"):
        profile_rows(path, pattern="zzz")
    with pytest.raises(ProfileError, match="invalid pattern"):
        profile_rows(path, pattern="(")
    assert main(["profile", path, "--top", "0"]) == 2
    assert main(["profile", str(tmp_path / "missing.hatchet")]) == 2
    assert main(["profile", path, "--plot", str(tmp_path / "no" / "x.png")]) == 2
    assert "does not exist" in capsys.readouterr().err
