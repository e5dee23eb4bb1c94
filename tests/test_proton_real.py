"""perfmodel.measured.proton and perfmodel.measured.moe_bench on the real H200 Proton profiles of tests/data
(2026-11-30).

Expected values are derived here from the raw JSON (loaded with :mod:`json`, not through perfmodel)
and from first principles (2·M·N·K per GEMM, 3·4·n bytes per fp32 add); the few literals pinned
next to them are the README's headline numbers. ``viewer_reference.json`` holds what Triton's own
viewer computed for each file, so the cross-check runs without triton; the live-viewer test runs
only where triton and hatchet import.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import perfmodel as pm
from perfmodel import cli
from perfmodel.errors import ProfileError
from perfmodel.measured import moe_bench as moe
from perfmodel.measured import proton
from perfmodel.perfdata import bitwidth_format

DATA = Path(__file__).parent / "data"
FILES = {
    name: DATA / f"h200_proton_{name}.hatchet"
    for name in ("triton_matmul", "vector_add", "cublas_scope", "float8_linear")
}
REFERENCE = json.loads((DATA / "viewer_reference.json").read_text())["files"]
METRICS = ("time (ns)", "count", "flops8", "flops16", "bytes")
SHAPE = re.compile(r"\[M=(\d+), N=(\d+), K=(\d+)\]")
MOE = DATA / "moe"
MOE_BATCHES = list(range(256, 4097, 256))


# -- the raw JSON, read without perfmodel ---------------------------------------------------------
def raw(path: Path) -> list[Any]:
    return json.loads(path.read_text())


def raw_nodes(path: Path) -> list[tuple[tuple[str, ...], dict[str, Any], bool]]:
    """(path of names from ROOT, metrics, is_leaf) for every frame, pre-order."""
    out = []
    stack = [(root, ()) for root in reversed(raw(path)[:-1])]
    while stack:
        node, parent = stack.pop()
        here = (*parent, node["frame"]["name"])
        out.append((here, node["metrics"], not node["children"]))
        stack.extend((child, here) for child in reversed(node["children"]))
    return out


def raw_leaf_sums(path: Path) -> dict[str, float]:
    sums = dict.fromkeys(METRICS, 0)
    for _, metrics, leaf in raw_nodes(path):
        if leaf:
            for m in METRICS:
                sums[m] += metrics.get(m, 0)
    return sums


def raw_tree_sums(path: Path) -> dict[str, float]:
    """Every frame's own metrics summed (scope metrics included)."""
    sums = dict.fromkeys(METRICS, 0)
    for _, metrics, _ in raw_nodes(path):
        for m in METRICS:
            sums[m] += metrics.get(m, 0)
    return sums


def shape(name: str) -> tuple[int, int, int]:
    m = SHAPE.search(name)
    assert m is not None, name
    return int(m[1]), int(m[2]), int(m[3])


@pytest.fixture(scope="module", params=sorted(FILES))
def name(request: pytest.FixtureRequest) -> str:
    return request.param


def read(name: str) -> proton.Profile:
    return proton.read(FILES[name])


# -- 1. each file: GPU and exact totals -----------------------------------------------------------
def test_gpu_is_h200_from_device_metadata(name: str) -> None:
    prof = read(name)
    devices = raw(FILES[name])[-1]
    assert dict(prof.devices) == devices == REFERENCE[f"{FILES[name].name}"]["device_info"]
    info = devices["CUDA"]["0"]
    assert prof.gpu is not None and prof.gpu.name == "H200"
    assert prof.gpu == pm.gpu_from_proton("CUDA", info)
    # Proton's clock formulas, not the datasheet: SMs x clock x FLOP/clock/SM; 2 x bus x memory clock
    assert prof.gpu.mem_bw_bytes_per_s == 2 * info["bus_width"] * info["memory_clock_rate"] * 1e3 / 8
    assert prof.gpu.peak_flops_per_s("fp8") == pytest.approx(1976e12, rel=1e-3)
    assert prof.gpu.peak_flops_per_s("bf16") == pytest.approx(988e12, rel=1e-3)


def test_kernel_totals_exact(name: str) -> None:
    prof = read(name)
    leaves = raw_leaf_sums(FILES[name])
    kernels = prof.kernels
    assert len(kernels) == sum(leaf for _, _, leaf in raw_nodes(FILES[name]))
    assert sum(k.count for k in kernels) == leaves["count"]
    assert sum(round(k.time_s * 1e9) for k in kernels) == leaves["time (ns)"]
    assert prof.perfdata(".*").time_s == leaves["time (ns)"] / 1e9
    assert sum(k.flops.get(8, 0) for k in kernels) == leaves["flops8"]
    assert sum(k.flops.get(16, 0) for k in kernels) == leaves["flops16"]
    assert sum(k.bytes for k in kernels) == leaves["bytes"]
    for k in kernels:
        assert set(k.flops) <= {8, 16} and (k.device_type, k.device_id) == ("CUDA", "0")


# the README's headline numbers, pinned as literals too (time ns, launches, flops8, flops16, bytes)
PINNED = {
    "triton_matmul": (215328, 18, 58787364864, 58787364864, 165150720),
    "vector_add": (562978, 6, 0, 0, 2453667840),
    "cublas_scope": (4546092, 6, 0, 3710851743744, 1509949440),
    "float8_linear": (850403, 26, 824633720832, 0, 0),
}


def test_pinned_totals(name: str) -> None:
    tree = raw_tree_sums(FILES[name])
    assert tuple(tree[m] for m in METRICS) == PINNED[name]
    prof = read(name)
    time_ns, count, flops8, flops16, nbytes = PINNED[name]
    scope_flops = {8: 0, 16: 0}
    scope_bytes = 0
    for s in prof.scopes().values():
        for w in scope_flops:
            scope_flops[w] += s.meta["flops_by_width"].get(w, 0)
        scope_bytes += s.bytes
    kernels = prof.kernels
    assert sum(k.flops.get(8, 0) for k in kernels) + scope_flops[8] == flops8
    assert sum(k.flops.get(16, 0) for k in kernels) + scope_flops[16] == flops16
    assert sum(k.bytes for k in kernels) + scope_bytes == nbytes
    assert sum(k.count for k in kernels) == count
    assert prof.perfdata(".*").time_s == time_ns / 1e9


def test_triton_matmul_from_names() -> None:
    prof = read("triton_matmul")
    for k in prof.kernels:
        m, n, kk = shape(k.name)
        elem = 1 if k.name.startswith("matmul_fp8") else 2  # A and B bytes per element; C is bf16
        width = 8 if elem == 1 else 16
        assert dict(k.flops) == {width: 2 * m * n * kk * k.count}
        assert k.bytes == (elem * (m * kk + kk * n) + 2 * m * n) * k.count
        assert k.count == 3
    raw_kernels = {p[-1]: met for p, met, leaf in raw_nodes(FILES["triton_matmul"]) if leaf}
    for pattern, fmt, width in [(r".*matmul_fp8.*", "fp8_e4m3", 8), (r".*matmul_bf16.*", "bf16", 16)]:
        hits = {n: met for n, met in raw_kernels.items() if re.fullmatch(pattern, n)}
        pd = prof.perfdata(pattern)
        assert pd.time_s == sum(met["time (ns)"] for met in hits.values()) / 1e9
        assert pd.flops == sum(2 * (s := shape(n))[0] * s[1] * s[2] * met["count"] for n, met in hits.items())
        assert pd.flops == sum(met[f"flops{width}"] for met in hits.values())
        assert pd.bytes == sum(met["bytes"] for met in hits.values())
        assert pd.dtype.name == fmt and pd.gpu.name == "H200" and pd.source == "measured"
        assert (pd.meta["kernels"], pd.meta["launches"]) == (3, 9)
    both = prof.perfdata()  # the default .*matmul.*: equal flops8 and flops16, tie -> the narrower width
    assert both.meta["flops_by_width"] == {8: 58787364864, 16: 58787364864} and both.dtype.name == "fp8_e4m3"


def test_vector_add_bytes_first_principles() -> None:
    prof = read("vector_add")
    for k in prof.kernels:
        (n,) = map(int, re.findall(r"n=(\d+)", k.name))
        assert k.bytes == 3 * 4 * n * k.count and dict(k.flops) == {}
    big = prof.perfdata(r"vector_add \[n=67108864\]")
    assert big.bytes == 3 * 4 * 2**26 * 3 and big.time_s == 548641 / 1e9
    assert big.tbps == pytest.approx(4.4, rel=0.01)  # README: ~4.4 TB/s
    assert big.bound == "memory" and big.flops == 0 and big.dtype.name == "bf16"
    assert prof.perfdata(r"vector_add.*").bytes == 3 * 4 * (2**20 + 2**26) * 3


def test_cublas_scope_metrics_attach_to_child_kernel_time() -> None:
    prof = read("cublas_scope")
    nodes = raw_nodes(FILES["cublas_scope"])
    scopes = prof.scopes()
    scope_paths = [p for p, _, leaf in nodes if not leaf and len(p) == 2]
    assert set(scopes) == {p[-1] for p in scope_paths} and len(scopes) == 2
    for sp in scope_paths:
        met = next(m for p, m, _ in nodes if p == sp)
        (kid,) = [m for p, m, _ in nodes if p[:-1] == sp]
        s = scopes[sp[-1]]
        m, n, k = shape(sp[-1])
        assert s.flops == met["flops16"] == 3 * 2 * m * k * n
        assert s.bytes == met["bytes"] == 3 * 2 * (m * k + k * n + m * n)
        assert s.time_s == kid["time (ns)"] / 1e9 and kid["count"] == 3
        assert s.dtype.name == "bf16" and s.meta["kernels"] == 1
    nvjet = prof.perfdata(r"nvjet_sm90_tst_.*")
    assert (nvjet.flops, nvjet.bytes, nvjet.meta["launches"]) == (0, 0, 6)
    assert nvjet.time_s == (513633 + 4032459) / 1e9
    big = scopes["cublas_bf16 [M=8192, N=8192, K=8192]"]
    assert big.util == pytest.approx(3 * 2 * 8192**3 / prof.gpu.peak_flops_per_s("bf16") / (4032459e-9), rel=1e-12)


def test_float8_linear_totals_and_split() -> None:
    prof = read("float8_linear")
    nodes = raw_nodes(FILES["float8_linear"])
    leaves = [(p, m) for p, m, leaf in nodes if leaf]
    gemm = [(p, m) for p, m in leaves if p[-1].startswith("nvjet_")]
    cast = [(p, m) for p, m in leaves if p[-1].startswith("triton_")]
    assert len(gemm) + len(cast) == len(leaves) == 12
    everything = prof.perfdata(".*", gpu="H200", dtype="fp8_e4m3")
    assert everything.meta["launches"] == 26 and everything.time_s == 850403 / 1e9  # README: 26, ~850 us
    pd_gemm, pd_cast = prof.perfdata(r"nvjet_.*"), prof.perfdata(r"triton_.*")
    assert pd_gemm.time_s == sum(m["time (ns)"] for _, m in gemm) / 1e9 == 583811 / 1e9
    assert pd_cast.time_s == sum(m["time (ns)"] for _, m in cast) / 1e9 == 266592 / 1e9
    assert (pd_gemm.meta["launches"], pd_cast.meta["launches"]) == (6, 20)
    assert (pd_gemm.meta["kernels"], pd_cast.meta["kernels"]) == (3, 9)
    assert pd_gemm.flops == pd_cast.flops == 0  # no per-kernel metrics: FLOPs sit on the step scopes
    fwd, bwd = prof.perfdata(r"nvjet_sm90_qqtst_.*"), prof.perfdata(r"nvjet_sm90_qrtst_.*")
    assert (fwd.meta["launches"], bwd.meta["launches"]) == (2, 4)
    assert fwd.time_s + bwd.time_s == pd_gemm.time_s
    scopes = prof.scopes()
    assert len(scopes) == 2
    for name, s in scopes.items():
        m, n, k = shape(name)
        assert s.flops == 3 * 2 * m * k * n == 412316860416 and s.bytes == 0 and s.dtype.name == "fp8_e4m3"
        assert s.time_s == sum(mt["time (ns)"] for p, mt in leaves if p[1] == name) / 1e9
    step0, step1 = (scopes[n] for n in sorted(scopes))
    assert (step0.time_s, step1.time_s) == (686946 / 1e9, 163457 / 1e9)
    # Proton quirk kept as recorded: both steps' backward GEMMs land under step0
    assert {k.path[0] for k in prof.kernels if "qrtst" in k.name} == {sorted(scopes)[0]}
    assert sum(k.count for k in prof.kernels if k.path[0] == sorted(scopes)[1]) == 7


# -- 2. agreement with the viewer's reference readings (pure JSON) --------------------------------
def _zero() -> dict[str, float]:
    return dict.fromkeys(METRICS, 0)


def our_frames(prof: proton.Profile) -> dict[tuple[str, ...], dict[str, dict[str, float]]]:
    """Per frame (path from ROOT): exclusive and inclusive metrics from Profile.kernels and
    Profile.scopes(); times in ns (each ``time_s`` is checked to be exactly an integer ns / 1e9)."""
    frames: dict[tuple[str, ...], dict[str, dict[str, float]]] = {}
    for k in prof.kernels:
        mine = {
            "time (ns)": _ns(k.time_s),
            "count": k.count,
            "flops8": k.flops.get(8, 0),
            "flops16": k.flops.get(16, 0),
            "bytes": k.bytes,
        }
        frames[("ROOT", *k.path)] = {"exclusive": mine, "inclusive": dict(mine)}
    for name, s in prof.scopes().items():
        (path,) = {("ROOT", *k.path[: k.path.index(name) + 1]) for k in prof.kernels if name in k.path[:-1]}
        below = [k for k in prof.kernels if ("ROOT", *k.path[: len(path) - 1]) == path]
        inc = {
            "time (ns)": _ns(s.time_s),
            "count": sum(k.count for k in below),
            "bytes": s.bytes,
            "flops8": s.meta["flops_by_width"].get(8, 0),
            "flops16": s.meta["flops_by_width"].get(16, 0),
        }
        frames[path] = {"inclusive": inc}
    for path in sorted(frames, key=len, reverse=True):  # scopes: exclusive = inclusive - direct children
        if "exclusive" not in frames[path]:
            kids = [f["inclusive"] for p, f in frames.items() if p[:-1] == path]
            frames[path]["exclusive"] = {m: frames[path]["inclusive"][m] - sum(kid[m] for kid in kids) for m in METRICS}
    top = [f["inclusive"] for p, f in frames.items() if len(p) == 2]
    frames[("ROOT",)] = {"exclusive": _zero(), "inclusive": {m: sum(t[m] for t in top) for m in METRICS}}
    return frames


def _ns(time_s: float) -> int:
    ns = round(time_s * 1e9)
    assert time_s == ns / 1e9, time_s  # Proton's integer ns, divided once
    return ns


def _viewer_to_ours(metrics: dict[str, float]) -> dict[str, float]:
    return {m: metrics.get(m, 0) for m in METRICS}


def test_frames_equal_viewer_reference(name: str) -> None:
    ref = REFERENCE[FILES[name].name]
    ours = our_frames(read(name))
    assert set(ours) == {tuple(f["path"]) for f in ref["frames"]}
    for f in ref["frames"]:
        mine = ours[tuple(f["path"])]
        for kind in ("exclusive", "inclusive"):
            assert mine[kind] == _viewer_to_ours(f[kind]), (f["path"], kind)
    assert ours[("ROOT",)]["inclusive"] == _viewer_to_ours(ref["root_inclusive"])
    leaves = _viewer_to_ours(ref["all_leaves"])
    kernels = read(name).kernels
    assert ref["all_leaves"]["leaves"] == len(kernels)
    assert read(name).perfdata(".*").time_s == leaves["time (ns)"] / 1e9
    assert sum(k.bytes for k in kernels) == leaves["bytes"]


@pytest.mark.parametrize("name", ["triton_matmul", "vector_add", "cublas_scope"])
def test_util_equals_viewer_reference(name: str) -> None:
    prof = read(name)
    ref = REFERENCE[FILES[name].name]["util"]
    by_path = {" / ".join(("ROOT", *k.path)): k for k in prof.kernels}
    assert set(ref) == set(by_path)  # the viewer's util is NaN on internal (scope) frames
    for key, util in ref.items():
        k = by_path[key]
        width = max(k.flops, default=16)
        point = pm.PerfData(
            time_s=k.time_s,
            flops=k.total_flops,
            bytes=k.bytes,
            dtype=bitwidth_format(width),
            gpu=prof.gpu,
            source="measured",
        )
        if util == 0:
            assert point.util == 0, key  # cuBLAS kernels: no metrics of their own
        else:
            assert point.util == pytest.approx(util, rel=1e-9, abs=0), key
        if sum(kk.name == k.name for kk in prof.kernels) == 1:  # the same point through perfdata
            assert prof.perfdata(re.escape(k.name)).util == pytest.approx(point.util, rel=1e-15, abs=0)


def test_float8_linear_viewer_util_needs_bytes() -> None:
    """The viewer's util fails without a bytes metric; ours reads bytes 0 (util 0 on kernels)."""
    ref = REFERENCE[FILES["float8_linear"].name]
    assert "util" not in ref and ref["util_error"] == "KeyError: 'bytes'"
    assert read("float8_linear").perfdata(r"nvjet_.*").util == 0


def _include_selection(prof: proton.Profile, pattern: str) -> list[proton.Kernel]:
    """The leaves the viewer's include filter keeps: below (or at) a frame whose name matches."""
    return [k for k in prof.kernels if any(re.fullmatch(pattern, n) for n in k.path)]


def test_include_queries_equal_viewer_reference(name: str) -> None:
    prof = read(name)
    queries = REFERENCE[FILES[name].name]["include_queries"]
    assert queries, "every fixture has at least one recorded include query"
    for pattern, ref in queries.items():
        sel = _include_selection(prof, pattern)
        assert len(sel) == ref["leaves"], pattern
        assert sum(k.count for k in sel) == ref["count"]
        assert sum(_ns(k.time_s) for k in sel) == ref["time (ns)"]
        for w in (8, 16):
            assert sum(k.flops.get(w, 0) for k in sel) == ref.get(f"flops{w}", 0)
        assert sum(k.bytes for k in sel) == ref.get("bytes", 0)
        if all(re.fullmatch(pattern, k.name) for k in sel):  # a kernel-name pattern: perfdata agrees
            pd = prof.perfdata(pattern)
            assert pd.time_s == ref["time (ns)"] / 1e9 and pd.meta["launches"] == ref["count"], pattern
            assert pd.flops == ref.get("flops8", 0) + ref.get("flops16", 0) and pd.bytes == ref.get("bytes", 0)
            assert pd.meta["kernels"] == ref["leaves"]
        else:  # a scope-name pattern: perfdata matches kernel names only, scopes() gives the time
            with pytest.raises(ProfileError, match="no leaf kernel name matches"):
                prof.perfdata(pattern)
            assert sum(_ns(s.time_s) for s in prof.scopes(pattern).values()) == ref["time (ns)"]


# -- 3. the live viewer, where triton and hatchet import -------------------------------------------
def test_live_viewer_agrees(name: str) -> None:
    pytest.importorskip("hatchet")
    viewer = pytest.importorskip("triton.profiler.viewer")
    path = str(FILES[name])
    gf, _, _, device_info = viewer.read(path)
    assert device_info == raw(FILES[name])[-1]
    df = gf.dataframe
    ours = our_frames(read(name))
    for node in gf.graph.traverse():
        names = []
        walk = node
        while walk is not None:
            names.append(walk.frame["name"])
            walk = walk.parents[0] if walk.parents else None
        mine = ours[tuple(reversed(names))]
        for m in METRICS:
            for kind, col in (("exclusive", m), ("inclusive", f"{m} (inc)")):
                if col in df.columns:
                    v = df.loc[node, col]
                    v = 0 if v != v else float(v)  # NaN: metric absent on that frame
                    assert mine[kind][m] == v, (names, col)
    prof = read(name)
    for pattern in REFERENCE[FILES[name].name]["include_queries"]:
        gf_q, _ = viewer.parse(["time/s"], path, include=pattern)
        dq = gf_q.dataframe
        leaves = [n for n in gf_q.graph.traverse() if not n.children and n in dq.index]
        assert sum(float(dq.loc[n, "time (ns)"]) for n in leaves) == sum(
            _ns(k.time_s) for k in _include_selection(prof, pattern)
        ), pattern


# -- 4. `perfmodel roofline` over the real MoE-bench log tree ---------------------------------------
def _moe_raw(log: str, batch: int) -> dict[str, Any]:
    path = MOE / log / "llama4-maverick" / "fp8-fp8-TP1-EP1" / "profiles" / f"batch-{batch}.hatchet"
    (kernel,) = [(p, m) for p, m, leaf in raw_nodes(path) if leaf]
    return {"name": kernel[0][-1], **kernel[1]}


def _moe_logs() -> list[tuple[str, str, bool]]:
    return [tuple(e) for e in json.loads((MOE / "log_metadata.json").read_text())]


def test_moe_fixture_first_principles() -> None:
    assert _moe_logs() == [
        ("triton 128x128x128", "triton_128x128x128", True),
        ("triton 64x128x128", "triton_64x128x128", False),
    ]
    for _, log, _ in _moe_logs():
        for b in MOE_BATCHES:
            k = _moe_raw(log, b)
            m, n, kk = shape(k["name"])
            assert (m, n, kk) == (b * 4 // 128, 8192, 5120) and k["count"] == 4  # 4 active experts
            assert k["flops8"] == 2 * m * n * kk * 4
            assert k["bytes"] == (m * kk + kk * n + 2 * m * n) * 4  # fp8 A, B; bf16 C


def test_moe_batch_series_equals_hand_computation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(MOE)
    entries = moe.read_log_metadata("log_metadata.json")
    assert [(e.name, str(e.log_dir), e.draw_roofline) for e in entries] == _moe_logs()
    for e in entries:
        series = moe.batch_series(
            e.log_dir, "llama4-maverick", "fp8", "fp8", MOE_BATCHES, n_expts_tot=128, n_expts_act=4, label=e.name
        )
        for b, p in zip(MOE_BATCHES, series, strict=True):
            k = _moe_raw(str(e.log_dir), b)
            assert (p.flops, p.bytes, p.time_s) == (k["flops8"], k["bytes"], k["time (ns)"] / 1e9)
            assert p.tflops == pytest.approx(k["flops8"] / (k["time (ns)"] * 1e-9) / 1e12, rel=1e-12)
            assert p.meta["x"] == b * 4 / 128 == shape(k["name"])[0]  # tokens per expert
            assert p.meta["batch"] == b and p.dtype.name == "fp8_e4m3" and p.gpu.name == "H200"
    ax = moe.roofline_chart(
        entries,
        MOE_BATCHES,
        name="llama4-maverick",
        x_dtype="fp8",
        w_dtype="fp8",
        n_expts_tot=128,
        n_expts_act=4,
        verbose=False,
    )
    (first, second) = ax.collections  # one scatter per log: (tokens per expert, TFLOP/s)
    k = _moe_raw("triton_64x128x128", 4096)
    assert tuple(second.get_offsets()[-1]) == pytest.approx((128, k["flops8"] / (k["time (ns)"] * 1e-9) / 1e12))
    assert len(first.get_offsets()) == len(MOE_BATCHES)


def test_moe_roofline_cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(MOE)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    out = tmp_path / "out.png"
    argv = ["roofline", "-m", "log_metadata.json", "-o", str(out), "-d", "fp8fp8", "--batch-ranges", "256:4097:256"]
    assert cli.main(argv) == 0
    png = out.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and 20_000 < len(png) < 500_000
    assert (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")) == (840, 600)  # 7x5 in, 120 dpi
    text = capsys.readouterr().out
    assert "Benchmarking llama4-maverick (fp8xfp8, TP=1, EP=1)..." in text and f"wrote {out}" in text
    printed = re.findall(r"^\[(.+?)\] batch (\d+): util ([\d.]+); ([\d.]+) TFLOP/s; ([\d.]+) TB/s$", text, re.M)
    assert len(printed) == 2 * len(MOE_BATCHES)
    logs = {label: log for label, log, _ in _moe_logs()}
    gpu = pm.gpu_from_proton(
        "CUDA",
        raw(MOE / "triton_128x128x128/llama4-maverick/fp8-fp8-TP1-EP1/profiles/batch-256.hatchet")[-1]["CUDA"]["0"],
    )
    for label, batch, util, tflops, tbps in printed:
        k = _moe_raw(logs[label], int(batch))
        t_s = k["time (ns)"] / 1e9
        assert tflops == f"{k['flops8'] / t_s * 1e-12:.1f}"
        assert tbps == f"{k['bytes'] / t_s * 1e-12:.2f}"
        roof_s = max(k["flops8"] / gpu.peak_flops_per_s("fp8"), k["bytes"] / gpu.mem_bw_bytes_per_s)
        assert util == f"{roof_s / t_s:.3f}"


# -- 5. Triton's own viewer tests, on its example files ---------------------------------------------
#: The expectations below are those of third_party/proton/test/test_viewer.py in github.com/triton-lang/triton
#: at commit acc8b51ae73a94783d1fb542108847d3322560c1 (test_min_time_flops, test_min_time_bytes, test_util,
#: test_bytes_derivation, test_flops_derivation, test_time_derivation, test_avg_time_derivation), on that
#: commit's example_cuda.json and example_hip.json, copied to tests/data (see its README; MIT license).
EXAMPLES = {"cuda": DATA / "triton_example_cuda.json", "hip": DATA / "triton_example_hip.json"}


def _example_points(which: str) -> dict[str, tuple[proton.Kernel, pm.PerfData]]:
    """device_id -> (its one kernel, that kernel as PerfData on the GPU of the device metadata)."""
    prof = proton.read(EXAMPLES[which])
    return {k.device_id: (k, prof.perfdata(re.escape(k.name))) for k in prof.kernels}


def _min_times(p: pm.PerfData) -> tuple[float, float]:
    """(FLOPs / peak FLOP/s, bytes / peak B/s) in seconds: the viewer's get_min_time_flops / _bytes."""
    return p.flops / (p.max_tflops * 1e12), p.bytes / (p.max_tbps * 1e12)


def test_triton_viewer_cuda_example() -> None:
    points = _example_points("cuda")
    sm89, sm90 = points["0"][1], points["1"][1]
    # test_min_time_flops (atol 1e-5) and test_min_time_bytes (atol 1e-6), per device
    assert _min_times(sm89)[0] == pytest.approx(0.000025, abs=1e-5)
    assert _min_times(sm90)[0] == pytest.approx(0.00005, abs=1e-5)
    assert _min_times(sm89)[1] == pytest.approx(9.91969e-06, abs=1e-6)
    assert _min_times(sm90)[1] == pytest.approx(2.48584e-05, abs=1e-6)
    # test_util: 'util (inc)': [nan (ROOT), 0.247044 (foo0, device 1), 0.147830 (foo1, device 0)], rtol 1e-7 atol 1e-6
    assert sm90.util == pytest.approx(0.247044, rel=1e-7, abs=1e-6)
    assert sm89.util == pytest.approx(0.147830, rel=1e-7, abs=1e-6)
    # the same numbers from the formulas of triton.profiler.specs (sm90: scaled H100 PCIe; sm89: 330.3 TFLOP/s
    # at 8 bits), and bandwidth 2 * bus_width * memory_clock_rate(kHz) * 1e3 / 8
    assert _min_times(sm90) == pytest.approx(
        (1e11 / (132 / 114 * 1980000 / 1755e3 * 1513e12), 1e8 / (2 * 6144 * 2619e6 / 8))
    )
    assert _min_times(sm89) == pytest.approx((1e10 / 330.3e12, 1e7 / (2 * 384 * 10501e6 / 8)))
    assert sm90.gpu.device_type == sm89.gpu.device_type == "CUDA" and sm90.dtype.name == "fp8_e4m3"
    _check_derivations("cuda", points)


def _check_derivations(which: str, points: dict[str, tuple[proton.Kernel, pm.PerfData]]) -> None:
    """test_bytes_derivation / test_flops_derivation / test_time_derivation / test_avg_time_derivation: per
    frame [ROOT, foo0, foo1], tbyte/s [0.26855469, 0.48828125, 0.04882812], tflop8/s [268.554687, 488.28125,
    48.828125], time/us [409.6, 204.8, 204.8], avg_time/us [nan, 20.48, 204.8] (cuda; foo0 has count 10)."""
    foo0, foo1 = points["1"], points["0"]
    assert (foo0[0].name, foo1[0].name) == ("foo0", "foo1")
    assert [foo0[1].tbps, foo1[1].tbps] == pytest.approx([0.48828125, 0.04882812], rel=1e-7, abs=1e-6)
    assert [foo0[1].tflops, foo1[1].tflops] == pytest.approx([488.28125, 48.828125], rel=1e-7, abs=1e-6)
    assert [foo0[1].time_s * 1e6, foo1[1].time_s * 1e6] == pytest.approx([204.8, 204.8])
    root = proton.read(EXAMPLES[which]).perfdata(".*", gpu="H200")  # ROOT inclusive: both kernels, any GPU
    assert (root.tbps, root.tflops, root.time_s * 1e6) == pytest.approx((0.26855469, 268.554687, 409.6), rel=1e-7)
    if which == "cuda":
        assert [foo0[0].time_s / foo0[0].count * 1e6, foo1[0].time_s / foo1[0].count * 1e6] == pytest.approx(
            [20.48, 204.8]
        )


#: HIP peaks of triton.profiler.specs in Triton 3.6 (third_party/proton/proton/specs.py in triton-lang/triton
#: @ 7641eadedff72ae0585918e49cf5c3abfffdaf7e): fp8 FLOP per clock per CU (gfx90a: the int8 rate, "since it
#: doesn't support FP8 matrix operations") and a fixed bandwidth per arch; gfx941 is an MI300 id, priced as
#: gfx942 (see perfmodel/specs/proton.py).
HIP_FP8_PER_CLK_PER_CU = {"gfx90a": 1024, "gfx941": 4096}
HIP_BW = {"gfx90a": 3.2e12, "gfx941": 5.3e12}


def test_triton_viewer_hip_example() -> None:
    points = _example_points("hip")
    mi200, mi300 = points["0"][1], points["1"][1]
    assert (mi200.gpu.arch, mi300.gpu.arch) == ("gfx90a", "gfx941")  # gfx941 was an unknown arch before
    # flops8 on gfx90a (no fp8): placed against the 8-bit roof the viewer uses there, the int8 rate
    assert mi200.dtype.name == "int8" and mi300.dtype.name == "fp8_e4m3"
    expected = {}
    for p, arch, cus, flops, nbytes in ((mi200, "gfx90a", 104, 1e10, 1e7), (mi300, "gfx941", 304, 1e11, 1e8)):
        clock_khz = {"gfx90a": 1700000, "gfx941": 5200000}[arch]
        expected[arch] = (flops / (HIP_FP8_PER_CLK_PER_CU[arch] * cus * clock_khz * 1e3), nbytes / HIP_BW[arch])
        assert _min_times(p) == pytest.approx(expected[arch], rel=1e-12)
        assert p.util == pytest.approx(max(expected[arch]) / 204800e-9, rel=1e-12)
    # The viewer test at acc8b51 expects MI200 2.6e-05 / 6.10351e-06 s and MI300 3.8e-05 / 1.93378e-05 s. Those
    # come from that commit's viewer formulas, which Triton 3.6 replaced: a fixed 383 TFLOP/s (gfx90a) and
    # 2614.9 TFLOP/s (gfx941/gfx942) at 8 bits, and 2 * bus_width * memory_clock_rate * 1e3 / 8 on HIP too.
    # perfmodel follows Triton 3.6 (per-CU rates; 3.2 / 5.3 TB/s), so only the MI300 bytes agree (within the
    # test's atol); the old numbers are reproduced here from the old formulas, to show that is the only cause.
    old = {
        "gfx90a": (1e10 / 383e12, 1e7 / (2 * 4096 * 1600e6 / 8)),
        "gfx941": (1e11 / 2614.9e12, 1e8 / (2 * 8192 * 2525e6 / 8)),
    }
    assert abs(old["gfx90a"][0] - 0.000026) <= 1e-5 and abs(old["gfx90a"][1] - 6.10351e-06) <= 1e-6
    assert abs(old["gfx941"][0] - 0.000038) <= 1e-5 and abs(old["gfx941"][1] - 1.93378e-05) <= 1e-6
    assert abs(expected["gfx941"][1] - 1.93378e-05) <= 1e-6  # MI300 bytes: both formula versions agree
    _check_derivations("hip", points)


def test_triton_viewer_cuda_example_live() -> None:
    pytest.importorskip("hatchet")
    viewer = pytest.importorskip("triton.profiler.viewer")
    with open(EXAMPLES["cuda"]) as f:
        gf, _, _, device_info = viewer.get_raw_metrics(f)
    df = gf.dataframe
    flops_t = viewer.get_min_time_flops(df, device_info)["min_time"]
    bytes_t = viewer.get_min_time_bytes(df, device_info)["min_time"]
    points = _example_points("cuda")
    for node in df.index:
        device = df.loc[node, "device_id"]
        if device == device:  # not NaN: a kernel frame
            assert _min_times(points[device][1]) == pytest.approx((flops_t[node], bytes_t[node]), rel=1e-12)
