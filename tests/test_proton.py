"""perfmodel.measured.proton: the real H200 fixture, every version quirk on synthetic files, malformed files."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from proton_synth import H200_DEVICES, H200_INFO, big_profile, frame, kernel, profile, write

import perfmodel as pm
from perfmodel.errors import FileRefusedError, ProfileError
from perfmodel.measured import proton

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).parent.parent
FIXTURE = DATA / "h200_triton3.6_scope_and_kernel.hatchet"
NVJET = "nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT"


# -- the real H200 profile (Triton 3.6): numbers hand-read from the JSON -------------------------
@pytest.fixture(scope="module")
def real() -> proton.Profile:
    return proton.read(FIXTURE)


def test_real_kernels(real: proton.Profile) -> None:
    add, mm = real.kernels  # ROOT's zero "hint" metrics do not make ROOT a kernel
    assert (add.name, add.path, add.count, add.time_s) == ("add_n67108864", ("outer", "add_n67108864"), 5, 918715e-9)
    assert dict(add.flops) == {32: 335544320} and add.bytes == 4026531840
    assert (mm.name, mm.path, mm.count) == (NVJET, ("outer", "mm_scope", NVJET), 5)
    assert mm.time_s == pytest.approx(6805408e-9, rel=1e-15)
    assert dict(mm.flops) == {} and mm.bytes == 0
    assert (mm.device_type, mm.device_id) == ("CUDA", "0")
    assert real.devices == {"CUDA": {"0": H200_INFO}}


def test_real_scopes_exact(real: proton.Profile) -> None:
    scopes = real.scopes(gpu="H200")
    mm = scopes["mm_scope"]
    assert (mm.flops, mm.bytes, mm.time_s) == (5497558138880, 2013265920, 6805408 / 1e9)
    assert mm.dtype.name == "bf16" and mm.source == "measured" and mm.gpu.name == "H200"
    outer = scopes["outer"]  # both kernels below it
    assert outer.flops == 5497558138880 + 335544320
    assert outer.bytes == 2013265920 + 4026531840
    assert outer.time_s == (6805408 + 918715) / 1e9
    assert set(scopes) == {"outer", "mm_scope"}
    assert set(real.scopes("mm_.*", gpu="H200")) == {"mm_scope"}


def test_real_gpu_from_metadata(real: proton.Profile) -> None:
    assert real.gpu is not None and real.gpu.name == "H200"
    pd = real.perfdata("add_.*")
    assert pd.gpu.name == "H200" and pd.dtype.name == "tf32"  # flops32 -> tf32 (Proton's width rule)


def test_real_perfdata(real: proton.Profile) -> None:
    pd = real.perfdata(r"nvjet.*", gpu="H200")
    assert pd.time_s == 6805408 / 1e9 and pd.flops == 0 and pd.bytes == 0
    assert pd.meta["kernels"] == 1 and pd.meta["launches"] == 5 and pd.label == "nvjet.*"
    with pytest.raises(ProfileError, match=r"no leaf kernel name matches '\.\*matmul\.\*'.*'add_n67108864'"):
        real.perfdata(gpu="H200")


def test_seed_perfdata_fields_equal_ours(real: proton.Profile) -> None:
    """The seed's PerfData(time ns, flops, bytes, bitwidth, device_type, device_info) == ours."""
    ours = real.scopes()["mm_scope"]
    seed = pm.PerfData.from_proton_fields(
        time=6805408, flops=5497558138880, bytes=2013265920, bitwidth=16, device_type="CUDA", device_info=H200_INFO
    )
    assert (seed.flops, seed.bytes, seed.dtype, seed.gpu) == (ours.flops, ours.bytes, ours.dtype, ours.gpu)
    assert seed.time_s == pytest.approx(ours.time_s, rel=1e-15)  # seed: ns * 1e-9; ours: ns / 1e9
    assert seed.util == pytest.approx(ours.util, rel=1e-15)
    assert seed.tflops == pytest.approx(ours.tflops, rel=1e-15)


# -- version quirks on synthetic profiles ---------------------------------------------------------
def read_data(tmp_path: Path, data: object, name: str = "p.hatchet") -> proton.Profile:
    return proton.read(write(tmp_path / name, data))


def test_triton30_metric_names(tmp_path: Path) -> None:
    prof = read_data(
        tmp_path, profile(kernel("_matmul_a", 1000, count=3, flops={8: 4e9}, nbytes=10, version="3.0"), hints=False)
    )
    (k,) = prof.kernels
    assert (k.count, k.time_s, k.device_type, k.device_id, dict(k.flops)) == (3, 1e-6, "CUDA", "0", {8: 4e9})
    pd = prof.perfdata(gpu="H200")
    assert pd.dtype.name == "fp8_e4m3" and pd.flops == 4e9


def test_root_hints_are_not_measurements(tmp_path: Path) -> None:
    prof = read_data(tmp_path, profile(kernel("_matmul_a", 10, flops={16: 1}), hints=True))
    assert [k.name for k in prof.kernels] == ["_matmul_a"]
    assert prof.perfdata(gpu="H200").meta["flops_by_width"] == {16: 1}
    assert set(prof.scopes(gpu="H200")) == set()


@pytest.mark.parametrize("omit", [True, False])
def test_missing_device_metadata(tmp_path: Path, omit: bool) -> None:
    prof = read_data(tmp_path, profile(kernel("_matmul_a", 10, flops={16: 100}), devices=None, omit_devices=omit))
    assert prof.gpu is None and dict(prof.devices) == {}
    with pytest.raises(ProfileError, match=r"p\.hatchet: the profile has no device metadata.*pass gpu="):
        prof.perfdata()
    assert prof.perfdata(gpu="H200").gpu.name == "H200"
    assert prof.perfdata(gpu=pm.get_gpu("H100")).gpu.name == "H100-SXM"


def test_array_metrics_are_summed(tmp_path: Path) -> None:
    k = frame(
        "_matmul_a",
        {
            "time (ns)": [100, 200],
            "count": [1, 1],
            "flops16": [1e9, 2e9],
            "bytes": [5, 7],
            "device_id": "0",
            "device_type": "CUDA",
            "note": "text",
            "hist": [1, 2],
        },
    )
    pd = read_data(tmp_path, profile(k)).perfdata(gpu="H200")
    assert (pd.time_s, pd.flops, pd.bytes, pd.meta["launches"]) == (300e-9, 3e9, 12, 2)


def test_launch_metadata_frames_ignored(tmp_path: Path) -> None:
    meta = frame("__proton_launch_metadata", {}, kernel("_matmul_in_metadata", 999, flops={16: 999}))
    mm = kernel("_matmul_a", 100, flops={16: 10}, nbytes=1, children=(meta,))
    prof = read_data(tmp_path, profile(frame("s", {}, mm, meta)))
    assert [k.name for k in prof.kernels] == ["_matmul_a"]
    pd = prof.perfdata(gpu="H200")  # still a leaf: metadata children do not count
    assert (pd.time_s, pd.flops) == (100e-9, 10)


def test_leaves_only(tmp_path: Path) -> None:
    parent = kernel("_matmul_outer", 50, flops={16: 5}, children=(kernel("_matmul_inner", 20, flops={16: 2}),))
    prof = read_data(tmp_path, profile(parent))
    assert prof.perfdata(gpu="H200").flops == 2
    assert prof.perfdata(gpu="H200", leaves_only=False).flops == 7
    assert prof.perfdata(gpu="H200", leaves_only=False).time_s == pytest.approx(70e-9)


def test_same_kernel_under_many_scopes_counts_each_node_once(tmp_path: Path) -> None:
    scopes = [frame(f"layer{i}", {}, kernel("_matmul_x", 1000 + i, flops={16: 2**40 + i}, nbytes=3)) for i in range(50)]
    prof = read_data(tmp_path, profile(frame("model", {}, *scopes)))
    pd = prof.perfdata(gpu="H200")
    assert pd.flops == sum(2**40 + i for i in range(50))
    assert pd.time_s == sum(1000 + i for i in range(50)) / 1e9
    assert pd.bytes == 150 and pd.meta["kernels"] == 50


def test_scope_metrics_with_kernel_time(tmp_path: Path) -> None:
    """proton.scope(name, {"flops16", "bytes"}): metrics on the scope, time on its kernels; nested
    frames sharing a name are merged without counting a node twice."""
    inner = frame("attn", {"flops16": 10}, kernel("k1", 100))
    outer = frame("attn", {"flops16": 5, "bytes": 4}, inner, kernel("k2", 50))
    scopes = read_data(tmp_path, profile(outer, frame("mlp", {"flops8": 7}, kernel("k3", 10)))).scopes(gpu="H200")
    assert (scopes["attn"].flops, scopes["attn"].bytes, scopes["attn"].time_s) == (15, 4, 150e-9)
    assert scopes["mlp"].dtype.name == "fp8_e4m3"
    with pytest.raises(ProfileError, match="no scope with kernel time matches 'nope'"):
        read_data(tmp_path, profile(outer), "q.hatchet").scopes("nope", gpu="H200")


@pytest.mark.parametrize(
    ("flops", "expected"),
    [
        ({8: 10, 16: 5}, "fp8_e4m3"),  # most FLOPs
        ({8: 5, 16: 10}, "bf16"),
        ({8: 5, 16: 5}, "fp8_e4m3"),  # tie: the narrower width (higher peak, util never overstated)
        ({}, "bf16"),  # no FLOPs: the compute roof does not matter
    ],
)
def test_default_dtype_rule(tmp_path: Path, flops: dict[int, float], expected: str) -> None:
    prof = read_data(tmp_path, profile(kernel("_matmul_a", 10, flops=flops, nbytes=1)))
    assert prof.perfdata(gpu="H200").dtype.name == expected
    assert prof.perfdata(gpu="H200", dtype="fp8_e5m2").dtype.name == "fp8_e5m2"


def test_widthless_flops_need_dtype(tmp_path: Path) -> None:
    prof = read_data(tmp_path, profile(kernel("_matmul_a", 10, flops={0: 100})))
    with pytest.raises(ProfileError, match=r"no bit width.*pass dtype="):
        prof.perfdata(gpu="H200")
    assert prof.perfdata(gpu="H200", dtype="bf16").flops == 100


def test_deep_nesting_works(tmp_path: Path) -> None:
    node = kernel("_matmul_deep", 7, flops={16: 3})
    for i in range(10_000):
        node = frame(f"s{i}", {}, node)
    path = tmp_path / "deep.hatchet"
    path.write_text(_dump_deep(profile(node)))
    prof = proton.read(path)
    (k,) = prof.kernels
    assert len(k.path) == 10_001 and prof.perfdata(gpu="H200").flops == 3


def _dump_deep(data: object) -> str:
    """json.dumps recurses too; write the deep file by hand-rolled iteration."""
    out: list[str] = []
    stack: list[object] = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str) and item.startswith("\0"):
            out.append(item[1:])
        elif isinstance(item, list):
            out.append("[")
            stack.append("\0]")
            for j, x in enumerate(reversed(item)):
                stack.append(x)
                if j < len(item) - 1:
                    stack.append("\0,")
        elif isinstance(item, dict):
            out.append("{")
            stack.append("\0}")
            items = list(item.items())
            for j, (key, value) in enumerate(reversed(items)):
                stack.append(value)
                stack.append("\0" + json.dumps(key) + ":")
                if j < len(items) - 1:
                    stack.append("\0,")
        else:
            out.append(json.dumps(item))
    return "".join(out)


def test_300k_nested_lists_parse_without_recursion_then_fail_the_layout(tmp_path: Path) -> None:
    path = tmp_path / "abyss.hatchet"
    path.write_text("[" * 300_000 + "]" * 300_000)
    limit = sys.getrecursionlimit()
    with pytest.raises(ProfileError, match=r"abyss\.hatchet: a tree node is a list, expected an object"):
        proton.read(path)
    assert sys.getrecursionlimit() == limit


# -- malformed files ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('[{"frame": {"name": "ROOT"}, "metrics": {}, "children": [', r"invalid JSON .*truncated"),
        ('{"a": 1}', r"top level is dict, expected a JSON list"),
        ("[]", r"top level is list, expected"),
        ('[{"CUDA": {}}]', r"no tree root before the device metadata"),
        ("[1, {}]", r"a tree node is a int"),
        ('[{"metrics": {}, "children": []}, {}]', r"no tree root|no 'frame'"),
        ('[{"frame": {"name": "ROOT"}, "children": []}, {"CUDA": {}}]', r"frame 'ROOT' has no 'metrics'"),
        (
            '[{"frame": {"name": "R"}, "metrics": {}, "children": [{"frame": {}, "metrics": {}}]}, {}]',
            r"depth 1 has no 'frame' with a string 'name'",
        ),
        (
            '[{"frame": {"name": "k"}, "metrics": {"time (ns)": "fast"}, "children": []}, {}]',
            r"frame 'k': metric 'time \(ns\)' is 'fast', expected a number",
        ),
        ('[{"frame": {"name": "k"}, "metrics": {"flops16": [1, "x"]}, "children": []}, {}]', r"metric 'flops16'"),
        ('[{"frame": {"name": "k"}, "metrics": {"bytes": NaN}, "children": []}, {}]', r"expected a finite"),
        ('[{"frame": {"name": "k"}, "metrics": {}, "children": {}}, {}]', r"'children' is not a list"),
        ('[{"frame": {"name": "k"}, "metrics": {}, "children": []}, {"CUDA": 3}]', r"device metadata is not"),
    ],
)
def test_malformed(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "bad.hatchet"
    path.write_text(text)
    with pytest.raises(ProfileError, match=r"bad\.hatchet: .*" + match):
        proton.read(path)


def test_unreadable_and_binary(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match=r"missing\.hatchet: cannot read the profile"):
        proton.read(tmp_path / "missing.hatchet")
    with pytest.raises(FileRefusedError, match="a folder, not a regular file"):
        proton.read(tmp_path)  # a directory: refused (an OSError), not read
    binary = tmp_path / "p.hatchet_msgpack"
    binary.write_bytes(b"\x92\x83\xa5frame\xff\xfe")
    with pytest.raises(ProfileError, match="not UTF-8 JSON"):
        proton.read(binary)
    assert issubclass(ProfileError, ValueError)


def test_bad_pattern(tmp_path: Path) -> None:
    prof = read_data(tmp_path, profile(kernel("_matmul_a", 10, nbytes=5)))
    with pytest.raises(ProfileError, match=r"\.hatchet: invalid kernel-name pattern '\('"):
        prof.perfdata("(", gpu="H200")
    with pytest.raises(ProfileError, match=r"\.hatchet: invalid scope-name pattern '\['"):
        prof.scopes("[", gpu="H200")


# -- speed and agreement on a large profile -------------------------------------------------------
def test_100k_kernels_sum_exactly(tmp_path: Path) -> None:
    # the speed of this path is measured by benchmarks/bench_proton.py (against hatchet, same run)
    data, totals = big_profile(100_000)
    path = write(tmp_path / "big.hatchet", data)
    pd = proton.read(path).perfdata(r".*matmul.*", gpu="H200")
    assert (pd.flops, pd.bytes, pd.meta["kernels"]) == (totals["flops"], totals["bytes"], totals["n"])
    assert pd.time_s == totals["time_ns"] / 1e9


# -- cross-check against the official viewer (needs triton + llnl-hatchet) ---------------------
def test_viewer_agrees(tmp_path: Path) -> None:
    pytest.importorskip("hatchet")
    viewer = pytest.importorskip("triton.profiler.viewer")
    specs = pytest.importorskip("triton.profiler.specs")
    data, _ = big_profile(1_000)
    cases = [(write(tmp_path / "big.hatchet", data), r".*matmul.*"), (FIXTURE, r"add_.*")]
    for path, pattern in cases:
        gf, _, _, info = viewer.read(str(path))
        df = gf.filter(f"MATCH ('*', c) WHERE c.'name' =~ '{pattern}' AND c IS LEAF").dataframe
        ours = proton.read(path).perfdata(pattern, gpu="H200")
        flops = sum(df[c].fillna(0).sum() for c in df.columns if re.fullmatch(r"flops\d+", c))
        assert ours.time_s == pytest.approx(df["time (ns)"].sum() * 1e-9, rel=1e-12)
        assert ours.flops == pytest.approx(flops, rel=1e-12)
        assert ours.bytes == pytest.approx(df["bytes"].sum(), rel=1e-12)
    # the seed's util (Proton specs for the roofs) vs ours with Proton's own roofs for the GPU
    dev = info["CUDA"]["0"]
    t, f, b = 6805408, 5497558138880, 2013265920
    peak = specs.max_flops("CUDA", dev["arch"], 16, dev["num_sms"], dev["clock_rate"])
    bw = specs.max_bps("CUDA", dev["arch"], dev["bus_width"], dev["memory_clock_rate"])
    seed_util = max(f / peak, b / bw) / (t * 1e-9)
    pd = pm.PerfData.from_proton_fields(time=t, flops=f, bytes=b, bitwidth=16, device_type="CUDA", device_info=dev)
    assert pd.util == pytest.approx(seed_util, rel=0.01)  # table peaks vs Proton's clock formula


# -- docs/measured.md examples run ---------------------------------------------------------------
def test_h200_devices_constant_matches_fixture() -> None:
    assert json.loads(FIXTURE.read_text())[-1] == H200_DEVICES
