"""perfmodel.measured.plot: files are written, legends say what is drawn, the seed's knee crashes are gone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.errors import FileRefusedError, PerfModelError
from perfmodel.measured import plot, proton

pytest.importorskip("matplotlib")
FIXTURE = Path(__file__).parent / "data" / "h200_triton3.6_scope_and_kernel.hatchet"


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def _labels(ax: object) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]  # type: ignore[attr-defined]


def test_roofline_predicted_and_measured(tmp_path: Path) -> None:
    prof = proton.read(FIXTURE)
    mm = prof.scopes()["mm_scope"]
    M = np.array([512, 2048, 8192])
    pred = pm.PerfData(
        time_s=2.0 * M**3 / 600e12, flops=2 * M**3, bytes=6 * M**2, dtype="bf16", gpu="H200", label="model"
    )
    ax = plot.roofline([pred, mm, prof.perfdata("add_.*", label="add")], achievable=True, title="t")
    labels = _labels(ax)
    assert any(s.startswith("H200 memory") for s in labels)
    assert any(s.startswith("bf16 peak") for s in labels) and any(s.startswith("tf32 peak") for s in labels)
    assert any(s.startswith("bf16 achievable") for s in labels)
    assert "model (predicted, bf16)" in labels and "mm_scope (measured, bf16)" in labels
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log" and ax.get_title() == "t"
    hollow, filled = ax.collections[0], ax.collections[1]
    assert hollow.get_facecolor().size == 0 or hollow.get_facecolor()[0][3] == 0  # predicted: hollow
    assert filled.get_facecolor()[0][3] == 1  # measured: filled
    out = plot.save(ax, tmp_path / "roof.png")
    assert _png_size(out) == (840, 600) and out.stat().st_size > 10_000


def test_roofline_roofs_only_and_errors() -> None:
    ax = plot.roofline([], gpu="H100", formats=["bf16", "fp8"])
    assert sum(s.endswith("FLOP/B)") for s in _labels(ax)) == 2
    with pytest.raises(PerfModelError, match="needs points or gpu="):
        plot.roofline([])
    zero = pm.PerfData(time_s=1.0, flops=1.0, bytes=0, dtype="bf16", gpu="H200")
    with pytest.raises(PerfModelError, match="bytes is 0"):
        plot.roofline([zero])


def _series(xs: list[float], opint_scale: float, tflops: float = 500.0) -> list[pm.PerfData]:
    # opint grows with x, as the MoE weights are shared by more tokens per expert
    return [
        pm.PerfData(
            time_s=1e-3,
            flops=tflops * 1e9,
            bytes=tflops * 1e9 / (x * opint_scale),
            dtype="fp8",
            gpu="H200",
            meta={"x": x},
        )
        for x in xs
    ]


@pytest.mark.parametrize(
    ("scale", "bw", "comp"),
    [
        (1.0, True, True),  # knee inside the range
        (1e4, False, True),  # knee before the first point (the seed drew a bogus line)
        (1e-3, True, False),  # every point memory-bound (the seed drew a one-point compute roof)
    ],
)
def test_batch_roofline_knee_cases(tmp_path: Path, scale: float, bw: bool, comp: bool) -> None:
    xs = [4.0, 16.0, 64.0, 256.0, 1000.0]
    ax = plot.batch_roofline({"run": _series(xs, scale)}, title="case roofline")
    labels = _labels(ax)
    assert any("BW-bound" in s for s in labels) == bw
    assert any("Compute-bound" in s for s in labels) == comp
    assert "run" in labels and ax.get_ylim()[0] == 100
    assert ax.get_xlim() == pytest.approx((4 - 0.05 * 996, 1000 + 0.05 * 996))
    assert _png_size(plot.save(ax, tmp_path / "b.png")) == (840, 600)


def test_batch_roofline_errors() -> None:
    with pytest.raises(PerfModelError, match="series 'a' is empty"):
        plot.batch_roofline({"a": []})
    no_x = pm.PerfData(time_s=1.0, flops=1.0, bytes=1.0, dtype="bf16", gpu="H200", label="p")
    with pytest.raises(PerfModelError, match=r"have no meta\['x'\]"):
        plot.batch_roofline({"a": [no_x]})


def test_save_is_safe(tmp_path: Path) -> None:
    out = tmp_path / "roof.png"
    out.write_bytes(b"mine")
    with pytest.raises(FileRefusedError, match=r"roof\.png: exists; not overwriting it"):
        plot.save(plot.roofline([], gpu="H100"), out)
    assert out.read_bytes() == b"mine"
    assert _png_size(plot.save(plot.roofline([], gpu="H100"), out, force=True)) == (840, 600)
    with pytest.raises(FileRefusedError, match=r"unknown image format \(extension 'jpgg'\); matplotlib writes .*png"):
        plot.save(plot.roofline([], gpu="H100"), tmp_path / "roof.jpgg")
    with pytest.raises(FileRefusedError, match=r"extension none"):
        plot.save(plot.roofline([], gpu="H100"), tmp_path / "roof")
    with pytest.raises(FileRefusedError, match="does not exist"):
        plot.save(plot.roofline([], gpu="H100"), tmp_path / "no" / "roof.png")
    svg = plot.save(plot.roofline([], gpu="H100"), tmp_path / "roof.SVG")  # format from the extension
    assert b"<svg" in svg.read_bytes()[:500]
    assert {"png", "pdf", "svg"} <= set(plot.image_formats())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["roof.SVG", "roof.png"]  # nothing half-written
