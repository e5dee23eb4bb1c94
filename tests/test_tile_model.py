"""The tile model (perfmodel.models.tiles, time_model="tiles"): the formula against hand-computed values, the shipped
file, the scope it refuses with named errors, and its place in the registry and the CLI."""

import dataclasses
import gzip
import json
import math

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.errors import CalibrationError, PerfModelError, UnsupportedFormatError
from perfmodel.models.registry import TILE_KINDS_PATH, TILES_PATH, tile_model
from perfmodel.models.tiles import (
    CORRECTION_KEYS,
    N_CORRECTION_FEATURES,
    N_FALLBACK_FEATURES,
    PARAM_NAMES,
    Tile,
    TileKind,
    TileModel,
    correction_features,
    correction_key,
    fallback_mask,
    load_tile_model,
    padded_shape,
)
from perfmodel.specs.gpu import get_gpu

H200 = get_gpu("H200")
PEAK = H200.peak_flops_per_s("bf16")
#: round parameters, so that the hand computations below are easy to follow
P = dict(
    latency_s=2e-6,
    rate_fraction=0.5,
    k_step_s=1e-8,
    cta_load_bw=1e11,
    l2_bw=1e13,
    hbm_bw=2e12,
    cta_hbm_bw=5e10,
    p_norm=1.0,
    stride32=1.5,
    stride128=1.2,
    multi_wave_s=1e-6,
    tile_overhead_s=1e-7,
    out_bw=1e12,
    partial_m=0.5,
    reduce_latency_s=3e-6,
    reduce_bw=1e12,
    split_k_min=1024.0,
)


def kind(*tiles, softmin=None, eb=2, tile_k=64, **over):
    return TileKind(tiles=tuple(tiles), tile_k=tile_k, softmin=softmin, params={**P, **over}, element_bytes=eb)


def one(k, M, K, N, layout="rc", peak=PEAK):
    arr = [np.array([float(x)]) for x in (M, K, N)]
    return float(k.time_s(*arr, layout=layout, peak=peak, sms=132)[0])


def test_one_wave_by_hand():
    # 256 x 256 x 128, bf16, one 128x128 tile: 2 CTAs in one wave, full tiles, no split
    t = one(kind(Tile(128, 128)), 256, 256, 128)
    compute = 256 / 64 * (2 * 128 * 128 * 64 / (0.5 * PEAK / 132) + 1e-8)
    tma = 256 * 2 * (128 + 128) / 1e11
    l2 = 2 * 256 * 2 * (128 + 128) / 1e13
    tile_bytes = (256 * 256 + 128 * 256) * 2 / 2  # A and B bytes per output tile
    mem = 2 * tile_bytes / 2e12 + 2 * (2 * 128 * 128) / 1e12
    cta_hbm = tile_bytes / 5e10
    want = 2e-6 + compute + tma + l2 + mem + cta_hbm + 1e-7
    assert t == pytest.approx(want, rel=1e-12)


def test_partial_tiles_waves_and_the_multi_wave_step():
    # M = 200 on 128-row tiles: 2 M tiles of 100 rows; N = 128 * 140: 280 CTAs -> 3 waves of 132
    M, K, N = 200, 128, 128 * 140
    t = one(kind(Tile(128, 128)), M, K, N)
    rows, cols = 100.0, 128.0
    tile_bytes = (M * K + N * K) * 2 / 280 * (1 + 0.5 * (1 - rows / 128))
    compute = 2 * (2 * 128 * 128 * 64 / (0.5 * PEAK / 132) + 1e-8)
    tma = 128 * 2 * (rows + cols) / 1e11

    def wave(n):
        l2 = n * 128 * 2 * (rows + cols) / 1e13
        mem = n * tile_bytes / 2e12 + n * 2 * rows * cols / 1e12
        return compute + tma + l2 + mem + tile_bytes / 5e10 + 1e-7

    want = 2e-6 + 2 * wave(132) + wave(280 - 2 * 132) + 1e-6  # 280 > 264 CTAs: the multi-wave step
    assert t == pytest.approx(want, rel=1e-12)


def test_clusters_round_up_and_leave_sms_idle():
    # a 1x4 cluster on 3 N tiles launches 4 CTAs; clusters of 4 get 128 slots (4 of 132 SMs idle)
    M, K, N = 128, 64, 384
    t = one(kind(Tile(128, 128, 1, 4)), M, K, N)
    tile_bytes = (M * K + N * K) * 2 / 3
    compute = 1 * (2 * 128 * 128 * 64 / (0.5 * PEAK / 132) + 1e-8)
    tma = 64 * 2 * 256 / 1e11
    l2 = 4 * 64 * 2 * (128 / 4 + 128 / 1) / 1e13  # multicast divides A's loads by the cluster's N size
    mem = 4 * tile_bytes / 2e12 + 4 * 2 * 128 * 128 / 1e12
    want = 2e-6 + compute + tma + l2 + mem + tile_bytes / 5e10 + 1e-7
    assert t == pytest.approx(want, rel=1e-12)


def test_split_k_slices_and_reduction():
    # 128 x 8192 x 128 on one tile: split into min(132, 8192 // 1024) = 8 slices of 1024
    M, K, N = 128, 8192, 128
    t = one(kind(Tile(128, 128, split_k=True)), M, K, N)
    s, Kq = 8, 1024
    tile_bytes = (M * K + N * K) * 2 / s
    compute = Kq / 64 * (2 * 128 * 128 * 64 / (0.5 * PEAK / 132) + 1e-8)
    tma = Kq * 2 * 256 / 1e11
    l2 = 8 * Kq * 2 * 256 / 1e13
    mem = 8 * tile_bytes / 2e12 + 8 * 4 * 128 * 128 / 1e12  # fp32 partial sums
    wave = compute + tma + l2 + mem + tile_bytes / 5e10 + 1e-7
    reduce = 3e-6 + (4 * s * M * N + 2 * M * N) / 1e12
    assert t == pytest.approx(2e-6 + wave + reduce, rel=1e-12)


def test_row_strides_not_32_or_128_byte_aligned_slow_the_loads():
    base = dict(p_norm=1.0)
    k = kind(Tile(128, 128), eb=1, tile_k=128, **base)
    # fp8 rc: both operands' row stride is K bytes; K = 48: not a multiple of 32 nor of 128
    t48 = one(k, 128, 48, 128, peak=2 * PEAK)
    t_plain = one(kind(Tile(128, 128), eb=1, tile_k=128, stride32=1.0, stride128=1.0), 128, 48, 128, peak=2 * PEAK)
    Kq = 128
    tma_extra = Kq * 1 * 256 * (1.5 * 1.2 - 1) / 1e11
    l2_extra = 1 * Kq * 1 * 256 * (1.5 * 1.2 - 1) / 1e13
    assert t48 - t_plain == pytest.approx(tma_extra + l2_extra, rel=1e-9)
    # K = 160: a multiple of 32, not of 128 -> only the 128-byte factor
    t160 = one(k, 128, 160, 128, peak=2 * PEAK)
    t160_plain = one(kind(Tile(128, 128), eb=1, tile_k=128, stride32=1.0, stride128=1.0), 128, 160, 128, peak=2 * PEAK)
    Kq = 256
    extra = Kq * 256 * (1.2 - 1) * (1 / 1e11 + 1 / 1e13)
    assert t160 - t160_plain == pytest.approx(extra, rel=1e-9)


def test_softmin_is_below_the_minimum_and_the_plain_minimum_without_a_temperature():
    a, b = Tile(128, 128), Tile(64, 256)
    ta, tb = one(kind(a), 4096, 4096, 4096), one(kind(b), 4096, 4096, 4096)
    assert one(kind(a, b), 4096, 4096, 4096) == pytest.approx(min(ta, tb), rel=1e-12)
    soft = one(kind(a, b, softmin=0.1), 4096, 4096, 4096)
    la, lb = math.log(ta), math.log(tb)
    lo = min(la, lb)
    want = math.exp(lo - 0.1 * math.log(math.exp(-(la - lo) / 0.1) + math.exp(-(lb - lo) / 0.1)))
    assert soft == pytest.approx(want, rel=1e-12)
    assert soft < min(ta, tb)


def test_fallback_mask_follows_the_layouts_leading_dimensions():
    # rc/rr: K and N decide; cr: M and N; M == 1 stays on the Hopper kernels; K < 8 always falls back
    assert bool(fallback_mask(100, 4096, 4096, "rc")) is False
    assert bool(fallback_mask(100, 4096, 4096, "cr")) is True
    assert bool(fallback_mask(4096, 100, 4096, "rr")) is True
    assert bool(fallback_mask(1, 100, 4096, "rr")) is False
    assert bool(fallback_mask(4096, 4, 4096, "rc")) is True
    # a Linear's grad_weight GEMM passes its feature sizes: an odd token count does not decide
    assert bool(fallback_mask(4097, 4096, 4096, "cr", lead_dims=(4096, 4096))) is False


@pytest.fixture(scope="module")
def shipped():
    return tile_model("H200")


def test_shipped_file_loads_with_every_kind(shipped):
    assert shipped.gpu == "H200" and shipped.name == "tiles"
    for key in ("bf16@rr", "bf16@rc", "bf16@cr", "fp8_e4m3/tensorwise", "fp8_e4m3/rowwise"):
        assert key in shipped.kinds
        assert shipped.kinds[key].params["rate_fraction"] <= 1.0
    for lay in ("rr", "rc", "cr"):
        assert shipped.kinds[f"bf16@fallback/{lay}"].fallback


@pytest.mark.parametrize(
    "dtype,scaling,layout", [("bf16", None, "rr"), ("bf16", None, "cr"), ("fp8_e4m3", "rowwise", "rc")]
)
def test_scalars_arrays_and_int32_agree(dtype, scaling, layout):
    Ms = np.array([1, 100, 4096, 12345], dtype=np.int32)
    arr = pm.gemm_time_s(Ms, 4096, 14336, dtype, "H200", scaling=scaling, layout=layout, time_model="tiles")
    arr64 = pm.gemm_time_s(
        Ms.astype(np.int64), 4096, 14336, dtype, "H200", scaling=scaling, layout=layout, time_model="tiles"
    )
    assert isinstance(arr, np.ndarray) and arr.shape == (4,) and np.all(np.isfinite(arr)) and np.all(arr > 0)
    np.testing.assert_array_equal(arr, arr64)
    for m, t in zip(Ms, arr, strict=True):
        one_t = pm.gemm_time_s(int(m), 4096, 14336, dtype, "H200", scaling=scaling, layout=layout, time_model="tiles")
        assert isinstance(one_t, float) and one_t == pytest.approx(t, rel=1e-12)


def test_time_grows_with_work_and_stays_below_the_peak(shipped):
    Ms = np.array([1024, 2048, 4096, 8192, 16384])
    for dtype, sc in (("bf16", None), ("fp8_e4m3", "tensorwise"), ("fp8_e4m3", "rowwise")):
        t = pm.gemm_time_s(Ms, 8192, 8192, dtype, "H200", scaling=sc, time_model="tiles")
        assert np.all(np.diff(t) > 0)
        flops = 2 * Ms * 8192 * 8192
        assert np.all(flops / t < H200.peak_flops_per_s(dtype))


def test_event_timing_uses_the_event_fit(shipped):
    # the shipped file carries kinds fitted on do_bench times: timing="event" prices with them, not with the
    # kernel fit plus a constant gap
    M, K, N = np.array([64, 4096, 16384]), np.array([4096, 4096, 8192]), np.array([4096, 4096, 28672])
    assert shipped.event_kinds.keys() == shipped.kinds.keys()
    H200 = pm.get_gpu("H200")
    for dtype, sc, lay in (("bf16", None, "rr"), ("bf16", None, "cr"), ("fp8_e4m3", "rowwise", "rc")):
        e = pm.gemm_time_s(M, K, N, dtype, "H200", scaling=sc, layout=lay, time_model="tiles", timing="event")
        fmt = pm.get_format(dtype)
        want = shipped.event_gemm_time_s(M, K, N, fmt=fmt, scaling=sc, out_fmt=None, gpu=H200, layout=lay)
        assert e == pytest.approx(want, rel=1e-12)
        k = pm.gemm_time_s(M, K, N, dtype, "H200", scaling=sc, layout=lay, time_model="tiles")
        assert not np.allclose(e - k, pm.time_model("H200").event_overhead_s(), rtol=1e-3)
        # an event timing of one call is never below its kernel time by more than the fits' scatter
        assert np.all(e > 0.8 * k)


def test_a_file_without_event_kinds_adds_the_measured_gap(tmp_path, shipped):
    data = _shipped_json()
    del data["event_kinds"]
    old = load_tile_model(_write(tmp_path, data), base=shipped.base)
    assert old.event_kinds == {}
    H200 = pm.get_gpu("H200")
    bf16 = pm.get_format("bf16")
    assert old.event_gemm_time_s(4096, 4096, 4096, fmt=bf16, scaling=None, out_fmt=bf16, gpu=H200) is None
    k = pm.gemm_time_s(4096, 4096, 4096, "bf16", "H200", time_model=old)
    e = pm.gemm_time_s(4096, 4096, 4096, "bf16", "H200", time_model=old, timing="event")
    assert e - k == pytest.approx(pm.time_model("H200").event_overhead_s(), rel=1e-12)


def test_named_errors_for_what_it_does_not_cover():
    import sympy

    with pytest.raises(PerfModelError, match="numeric only"):
        pm.gemm_time_s(sympy.Symbol("M", positive=True), 4096, 4096, "bf16", "H200", time_model="tiles")
    with pytest.raises(PerfModelError, match="measured on the H200 only"):
        pm.gemm_time_s(4096, 4096, 4096, "bf16", "H100", time_model="tiles")
    with pytest.raises(UnsupportedFormatError, match="tf32"):
        pm.gemm_time_s(4096, 4096, 4096, "tf32", "H200", time_model="tiles")
    with pytest.raises(PerfModelError, match="time model"):
        pm.gemm_time_s(4096, 4096, 4096, "bf16", "H200", time_model="tile")


def test_formats_that_borrow_a_measured_kind(shipped):
    bf = pm.gemm_time_s(4096, 4096, 4096, "bf16", "H200", time_model="tiles")
    assert pm.gemm_time_s(4096, 4096, 4096, "fp16", "H200", time_model="tiles") == pytest.approx(bf, rel=1e-12)
    e4 = pm.gemm_time_s(4096, 4096, 4096, "fp8_e4m3", "H200", scaling="rowwise", time_model="tiles")
    e5 = pm.gemm_time_s(4096, 4096, 4096, "fp8_e5m2", "H200", scaling="rowwise", time_model="tiles")
    assert e5 == pytest.approx(e4, rel=1e-12)


def _shipped_json():
    """A fresh copy of the shipped tile file's JSON (committed and shipped gzip-compressed)."""
    return json.loads(gzip.decompress(TILES_PATH.read_bytes()))


def _kinds_json():
    """A fresh copy of the shipped small tile file's JSON: the shipped file without its learned corrections (the
    trees: 5 MB of the file's 5 MB; tests/test_tile_kinds_file.py holds the two equal), for the checks the trees
    play no part in."""
    return json.loads(TILE_KINDS_PATH.read_text())


def _write(tmp_path, data):
    p = tmp_path / "t.json"
    p.write_text(json.dumps(data))
    return p


def test_bad_files_get_named_errors(tmp_path):
    load_tile_model(_write(tmp_path, _shipped_json()))  # the shipped file round-trips
    good = _kinds_json()  # the bad files below: the same without its trees
    load_tile_model(_write(tmp_path, good))
    bad = dict(good, schema="perfmodel.tiles/0")
    with pytest.raises(CalibrationError, match="not a tile model"):
        load_tile_model(_write(tmp_path, bad))
    bad = _kinds_json()
    del bad["kinds"]["bf16@cr"]
    with pytest.raises(CalibrationError, match="kinds missing: bf16@cr"):
        load_tile_model(_write(tmp_path, bad))
    bad = _kinds_json()
    del bad["event_kinds"]["fp8_e4m3/rowwise"]
    with pytest.raises(CalibrationError, match="event_kinds missing: fp8_e4m3/rowwise"):
        load_tile_model(_write(tmp_path, bad))
    bad = dict(_kinds_json(), event_kinds=[1, 2])
    with pytest.raises(CalibrationError, match="'event_kinds' must be an object"):
        load_tile_model(_write(tmp_path, bad))
    bad = _kinds_json()
    bad["kinds"]["bf16@rr"]["params"]["rate_fraction"] = 1.5
    with pytest.raises(CalibrationError, match="above the peak"):
        load_tile_model(_write(tmp_path, bad))
    bad = _kinds_json()
    bad["kinds"]["bf16@rr"]["params"]["hbm_bw"] = float("nan")
    with pytest.raises(CalibrationError, match="hbm_bw"):
        load_tile_model(_write(tmp_path, bad))
    bad = _kinds_json()
    del bad["kinds"]["bf16@rr"]["params"]["p_norm"]
    with pytest.raises(CalibrationError, match="missing \\['p_norm'\\]"):
        load_tile_model(_write(tmp_path, bad))
    bad = _kinds_json()
    bad["kinds"]["bf16@rr"]["tiles"] = [[128, 0, 1, 1, False]]
    with pytest.raises(CalibrationError, match=r"Tile\.n"):
        load_tile_model(_write(tmp_path, bad))
    with pytest.raises(CalibrationError):
        load_tile_model(_write(tmp_path, [1, 2]))


def test_save_refuses_to_overwrite(tmp_path, shipped):
    p = shipped.save(tmp_path / "m.json")
    with pytest.raises(PerfModelError, match="exists"):
        shipped.save(p)
    assert TileModel.from_dict(json.loads(p.read_text())).kinds.keys() == shipped.kinds.keys()


def test_the_shipped_file_is_gzip_and_a_gz_name_saves_gzip(tmp_path, shipped):
    assert TILES_PATH.name == "h200_tiles.json.gz" and TILES_PATH.read_bytes()[:2] == b"\x1f\x8b"
    assert not TILES_PATH.with_suffix("").exists()  # no uncompressed copy beside it
    p = shipped.save(tmp_path / "m.json.gz")
    raw = p.read_bytes()
    assert raw[:2] == b"\x1f\x8b" and len(raw) < 0.5 * len(gzip.decompress(raw))
    assert load_tile_model(p).to_dict() == shipped.to_dict()
    assert shipped.save(tmp_path / "m.json.gz", force=True).read_bytes() == raw  # same model, same bytes


def test_importing_perfmodel_reads_no_tile_file():
    import subprocess
    import sys

    code = (
        "import perfmodel, perfmodel.models.registry as r; assert not r._TILES, 'read at import'; "
        "perfmodel.gemm_time_s(4096, 4096, 4096, 'bf16', 'H200', time_model='tiles'); assert r._TILES; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_params_are_named_in_order():
    assert len(PARAM_NAMES) == len(set(PARAM_NAMES)) == 17


def test_provenance_and_linear_use(shipped):
    prov = pm.provenance("H200", "tiles")
    assert (prov.kind, prov.time_model) == ("measured", "tiles")
    lt = pm.float8.linear_time(8192, 4096, 14336, "tensorwise", "H200", time_model="tiles")
    assert lt.provenance.time_model == "tiles" and lt.total_s > 0


def test_cli_prices_with_the_tile_model(capsys):
    from perfmodel.cli import main

    assert main(["gemm", "8192", "4096", "14336", "--gpu", "h200", "--time-model", "tiles", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    want = pm.gemm_time_s(8192, 4096, 14336, "bf16", "H200", time_model="tiles")
    assert out["time_s"] == pytest.approx(want, rel=1e-12)
    assert main(["gemm", "8192", "4096", "14336", "--gpu", "h100", "--time-model", "tiles"]) != 0
    assert "measured on the H200 only" in capsys.readouterr().err


def test_fit_reproduces_the_shipped_formula():
    # the formula fit reads only the two seed-0 sessions; parameters agree to 1e-4 across BLAS builds (7e-6 seen)
    from benchmarks.harness.calibrate_tiles import EVENT_FIT_FILES, FIT_FILES, fit

    assert all("fresh" not in p.name for p in FIT_FILES + EVENT_FIT_FILES)
    got = fit(correction_paths=None).to_dict()
    want = _shipped_json()
    for field, stats in (("kinds", "train"), ("event_kinds", "event_train")):
        assert got[field].keys() == want[field].keys()
        for kind, k in want[field].items():
            assert got[field][kind]["tiles"] == k["tiles"]
            for name, v in k["params"].items():
                assert got[field][kind]["params"][name] == pytest.approx(v, rel=1e-4, abs=1e-300), (kind, name)
            for stat in ("mdape", "p90"):
                want_st = want["residuals"][kind][stats][stat]
                assert got["residuals"][kind][stats][stat] == pytest.approx(want_st, abs=0.01)


def test_corrections_reproduce_from_the_shipped_formula():
    # the learned corrections, fitted on the shipped formula's times: the same splits and leaves on every BLAS
    # build (the boosting itself uses no BLAS). Fitted on a refitted formula, whose parameters move by ~1e-5
    # between builds, a split whose two candidates are within that noise can flip (docs/validation.md).
    import dataclasses

    from benchmarks.harness.calibrate_tiles import BOOST, CORRECTION_FILES, fit_corrections

    # Each kind is fitted on its own rows only (a fallback kind also reads its main kind's prices), so a subset per
    # timing checks those kinds exactly; the two subsets cover six of the eight kinds (not bf16@rc's main kernels
    # nor fp8 rowwise: the same code on other rows). The boosting is sequential and deterministic, so the first 10
    # trees of the shipped fit are what a 10-tree fit gives: the test refits those (a thirtieth of each set's trees, six
    # of its sixteen sets: the suite's time), and checks that every shipped set has BOOST's tree count.
    shipped = load_tile_model(TILES_PATH)
    # the fallback kinds read their padded shapes' times, which the main kinds' corrections price: those of the
    # shipped file (every tree), since no subset refits a fallback kind's main kind
    main = {f: {k: v for k, v in getattr(shipped, f).items() if "fallback" not in k} for f in ("corrections",
            "event_corrections")}  # fmt: skip
    formula = dataclasses.replace(shipped, **main)
    want = _shipped_json()
    subsets = {
        "kernel": ("bf16@cr", "bf16@fallback/rr", "bf16@fallback/rc"),
        "event": ("bf16@rr", "bf16@fallback/cr", "fp8_e4m3/tensorwise"),
    }
    prefix = 10
    for timing, field in (("kernel", "corrections"), ("event", "event_corrections")):
        assert want[field].keys() == set(CORRECTION_KEYS)
        assert all(len(t["feature"]) == BOOST["trees"] for t in want[field].values()), field
        got, _ = fit_corrections(formula, CORRECTION_FILES[timing], timing, keys=subsets[timing], trees=prefix)
        assert got.keys() == set(subsets[timing])
        # no subset refits a fallback kind's main kind (whose shipped trees price the padded shapes)
        assert not {f"bf16@{k.rsplit('/', 1)[1]}" for k in subsets[timing] if "@fallback/" in k} & set(subsets[timing])
        for key in subsets[timing]:
            trees = want[field][key]
            g = got[key].to_dict()
            # the base (the rows' median log residual) to 1e-12: numpy 2.4.6 on an AMD EPYC gives bf16@cr's one ulp
            # apart (-0.013049762585839493 against ...494); the splits stay exact
            assert g["base"] == pytest.approx(trees["base"], rel=0, abs=1e-12), (field, key)
            assert g["feature"] == trees["feature"][:prefix], (field, key)
            assert g["threshold"] == trees["threshold"][:prefix], (field, key)
            assert np.allclose(g["value"], trees["value"][:prefix], rtol=0, atol=1e-7), (field, key)


def test_a_fallback_kind_is_fitted_on_its_main_kinds_padded_times():
    # the fallback kind's trees read the padded shapes' times its main kind's correction prices: fitted in the same
    # call, or fitted for it (and not returned) where the model has none — the same trees either way
    from benchmarks.harness.calibrate_tiles import FIT_FILES, fit_corrections

    formula = dataclasses.replace(load_tile_model(TILES_PATH), corrections={}, event_corrections={})
    both, _ = fit_corrections(formula, FIT_FILES, "kernel", keys=("bf16@cr", "bf16@fallback/cr"), trees=5)
    alone, stats = fit_corrections(formula, FIT_FILES, "kernel", keys="bf16@fallback/cr", trees=5)
    assert list(alone) == list(stats) == ["bf16@fallback/cr"]
    assert alone["bf16@fallback/cr"].to_dict() == both["bf16@fallback/cr"].to_dict()
    assert alone["bf16@fallback/cr"].n_features == N_FALLBACK_FEATURES
    assert both["bf16@cr"].n_features == N_CORRECTION_FEATURES
    # given the model's own main-kind trees instead, those price the padded shapes
    other = dataclasses.replace(formula, corrections={"bf16@cr": load_tile_model(TILES_PATH).corrections["bf16@cr"]})
    given, _ = fit_corrections(other, FIT_FILES, "kernel", keys="bf16@fallback/cr", trees=5)
    assert given["bf16@fallback/cr"].to_dict() != alone["bf16@fallback/cr"].to_dict()


def test_fit_corrections_names_an_unknown_kind():
    from benchmarks.harness.calibrate_tiles import FIT_FILES, fit_corrections

    formula = dataclasses.replace(load_tile_model(TILES_PATH), corrections={}, event_corrections={})
    with pytest.raises(
        CalibrationError, match=r"no GEMM of kind bf16@xx in the files; kinds: bf16@cr, .*fp8_e4m3/rowwise"
    ):
        fit_corrections(formula, FIT_FILES, "kernel", keys=["bf16@xx"])
    with pytest.raises(CalibrationError, match=r"no GEMM of kind bf16@xx in"):  # one kind, not its letters
        fit_corrections(formula, FIT_FILES, "kernel", keys="bf16@xx")


def test_one_row_misaligned_gemms_are_fitted_by_the_correction_only():
    # M = 1 with a misaligned leading dimension runs the Hopper or gemv kernels, not the fallback: the formula fit
    # leaves it out, the learned correction fits it in its layout's main kind (where the model prices it)
    from benchmarks.harness.calibrate_tiles import _kind_of

    def rec(layout, M, K, N, dtype="bf16"):
        return {"dtype": dtype, "layout": layout, "M": M, "K": K, "N": N, "scaling": "rowwise"}

    for layout, M, K, N in (("cr", 1, 4096, 4096), ("rr", 1, 4095, 4096), ("rc", 1, 4096, 50257)):
        assert _kind_of(rec(layout, M, K, N)) == ""
        assert _kind_of(rec(layout, M, K, N), single_row=True) == f"bf16@{layout}"
        assert not fallback_mask(M, K, N, layout)
    for single_row in (False, True):
        assert _kind_of(rec("rr", 2, 4095, 4096), single_row=single_row) == "bf16@fallback/rr"
        assert _kind_of(rec("cr", 9, 4096, 4096), single_row=single_row) == "bf16@fallback/cr"
        assert _kind_of(rec("rc", 1, 4096, 4096), single_row=single_row) == "bf16@rc"
        assert _kind_of(rec("rc", 1, 4095, 4096, "fp8_e4m3"), single_row=single_row) == "fp8_e4m3/rowwise"


def test_fit_refuses_data_without_every_kind(tmp_path):
    from benchmarks.harness.calibrate_tiles import FIT_FILES, fit
    from perfmodel.calibrate import read_data_json

    recs = read_data_json(FIT_FILES[0])
    recs["records"] = [r for r in recs["records"] if r["dtype"] == "bf16"]
    p = tmp_path / "bf16_only.json"
    p.write_text(json.dumps(recs))
    with pytest.raises(CalibrationError, match="fp8_e4m3/tensorwise"):
        fit([p])


def test_expected_error_is_the_fresh_sessions():
    from bench_modules import bench_module

    from perfmodel.models.registry import TILES_EXPECTED_ERROR

    v = bench_module("validate_tiles")
    # held out by shape: the fresh sessions' GEMMs whose shapes no fit session measured (the others are in-sample)
    fresh = v.score_by_shape("kernel")
    event = v.score_by_shape("event")
    worst = max(fresh[k]["unseen"]["mdape"] for k in v.KINDS)
    assert TILES_EXPECTED_ERROR.gemm_time_pct == pytest.approx(worst, abs=0.05)
    unseen = fresh["all"]["unseen"]
    assert f"{unseen['mdape']:.1f} % over all {unseen['n']}" in TILES_EXPECTED_ERROR.basis
    assert f"the {unseen['n']} GEMMs whose shapes are in no fit" in TILES_EXPECTED_ERROR.basis
    assert f"{event['all']['unseen']['mdape']:.1f} % by event time" in TILES_EXPECTED_ERROR.basis
    pooled = fresh["all"]["pooled"]
    assert f"all {pooled['n']} GEMMs of the sessions" in TILES_EXPECTED_ERROR.basis
    assert f"{pooled['mdape']:.1f} %)" in TILES_EXPECTED_ERROR.basis
    assert fresh["all"]["unseen"]["n"] + fresh["all"]["seen"]["n"] == pooled["n"]
    seeds = ", ".join(str(v.SESSIONS[s][1]) for s in v.FRESH_SESSIONS)
    assert f"seeds {seeds}" in TILES_EXPECTED_ERROR.basis
    bar = pm.gemm_error_bar(8192, 4096, 14336, "bf16", "H200", time_model="tiles")
    assert bar.model == "tiles" and f"seeds {seeds}" in bar.basis and bar.low < 1 < bar.high
    assert f"the {unseen['n']} GEMMs whose shapes are in no fit (held out by shape)" in bar.basis
    # the error bars are computed (`python benchmarks/validate.py gemm`) on the same fresh sessions
    val = bench_module("validate")
    assert val.TILES_FRESH_SESSIONS == v.FRESH_SESSIONS
    # the GPUs the fresh sessions ran on, as their logs name them, and their count in the bars' basis
    assert set(v.FRESH_GPUS) == set(v.FRESH_SESSIONS)
    for sfx, gpu in v.FRESH_GPUS.items():
        assert gpu in (v.DATA / f"log_gemm_layouts{sfx}.txt").read_text(), sfx
    assert len(set(v.FRESH_GPUS.values())) == val.TILES_FRESH_GPUS
    assert f"on {val.TILES_FRESH_GPUS} GPUs" in TILES_EXPECTED_ERROR.basis


def test_refuses_outputs_and_specs_it_was_not_measured_with():
    import dataclasses

    with pytest.raises(UnsupportedFormatError, match="bf16 output only, not fp32"):
        pm.gemm_time_s(65536, 64, 65536, "bf16", "H200", out_dtype="fp32", time_model="tiles")
    bf = pm.gemm_time_s(4096, 4096, 4096, "fp16", "H200", time_model="tiles")
    assert pm.gemm_time_s(4096, 4096, 4096, "fp16", "H200", out_dtype="fp16", time_model="tiles") == bf
    # a modified H200 spec: nothing in the model rescales, so it is refused rather than priced as the table's
    for field, value in (("mem_bw_bytes_per_s", 1e12), ("num_sms", 66)):
        spec = dataclasses.replace(get_gpu("H200"), **{field: value})
        with pytest.raises(PerfModelError, match=f"differs from the spec table's H200 in {field}"):
            pm.gemm_time_s(8192, 8192, 8192, "bf16", spec, time_model="tiles")
        with pytest.raises(PerfModelError, match=field):
            pm.provenance(spec, "tiles")


def test_the_learned_correction_multiplies_the_formula(shipped):
    # K on the 128 lattice: off it, fp8 times are also clipped to the lattice's interpolation (docs/validation/tiles.md)
    M, K, N = np.array([64, 4096, 2103]), np.array([4096, 8192, 2304]), np.array([4096, 28672, 7472])
    bf16, fp8 = pm.get_format("bf16"), pm.get_format("fp8_e4m3")
    for fmt, sc, lay, timing in (
        (bf16, None, "cr", "kernel"),
        (bf16, None, "rr", "event"),
        (fp8, "rowwise", "rc", "event"),
    ):
        f = shipped.formula_time_s(M, K, N, fmt=fmt, scaling=sc, gpu=H200, layout=lay, timing=timing)
        table = shipped.event_corrections if timing == "event" else shipped.corrections
        fb = fallback_mask(M, K, N, lay) if fmt.name == "bf16" else np.zeros(3, bool)
        keys = [f"bf16@fallback/{lay}" if b else shipped.kind_key(fmt, sc, lay) for b in fb]
        c = []
        for i, k in enumerate(keys):
            m, kk, n = M[i : i + 1], K[i : i + 1], N[i : i + 1]
            # a fallback kind's correction also reads the time of the padded shape, which the main kind prices
            padded = shipped.padded_time_s(m, kk, n, fmt=fmt, gpu=H200, layout=lay, timing=timing) if fb[i] else None
            c.append(table[k].predict(correction_features(m, kk, n, f[i : i + 1], 132, padded))[0])
        if fmt.name == "bf16" and lay == "cr":
            assert fb.tolist() == [False, False, True]  # 2103 rows: M, cr's leading dimension, misaligned
        want = f * np.exp(c)
        got = pm.gemm_time_s(M, K, N, fmt.name, "H200", scaling=sc, layout=lay, timing=timing, time_model="tiles")
        assert got == pytest.approx(want, rel=1e-12)
        assert not np.allclose(got, f, rtol=1e-3)  # it does correct
        assert np.all(np.abs(np.log(got / f)) < np.log(2))  # by less than 2x either way
    # every kind has its own correction; a file without the fallback kinds' (older files) lends them the layout's
    assert fb.tolist() == [False, False, False] and keys[0] == "fp8_e4m3/rowwise"
    assert set(shipped.corrections) == set(shipped.event_corrections) == set(CORRECTION_KEYS)
    assert correction_key("bf16@fallback/cr", shipped.corrections) == "bf16@fallback/cr"
    assert correction_key("bf16@fallback/cr", {"bf16@cr": 0}) == "bf16@cr"
    # the padded shape's time is the main kind's corrected time of the shape padded to multiples of 8
    fmt = pm.get_format("bf16")
    direct = pm.gemm_time_s(2104, 2272, 7472, "bf16", "H200", layout="cr", time_model="tiles")
    via = shipped.padded_time_s(np.array([2103.0]), np.array([2272.0]), np.array([7472.0]), fmt=fmt, gpu=H200,
                                layout="cr")  # fmt: skip
    assert via[0] == pytest.approx(direct, rel=1e-12)
    # scalars, arrays and int32 agree with the correction too
    one = pm.gemm_time_s(2103, 2272, 7472, "bf16", "H200", layout="cr", time_model="tiles")
    arr = pm.gemm_time_s(
        *(np.array([v], np.int32) for v in (2103, 2272, 7472)), "bf16", "H200", layout="cr", time_model="tiles"
    )
    assert arr[0] == pytest.approx(one, rel=1e-12)


def test_correction_features_by_hand():
    X = correction_features(np.array([4096.0]), np.array([100.0]), np.array([300.0]), np.array([1e-5]), 132)
    assert X.shape == (1, N_CORRECTION_FEATURES)
    row = X[0]
    assert row[:4].tolist() == pytest.approx([12, np.log2(100), np.log2(300), round(np.log(1e-5), 3)])
    assert row[4:11].tolist() == [0, 300 % 64, 0, 300 % 128, 0, 300 % 256, 100 % 64]
    # 128x128 tiles: 32 x 3 = 96 tiles on 132 SMs: 0.727 of a wave, 1 wave
    assert row[11:14].tolist() == pytest.approx([np.log2(96), 96 / 132, 1])
    # 64x64 tiles: 64 x 5 = 320 tiles: 2.42 waves, 3 whole ones
    assert row[23:26].tolist() == pytest.approx([np.log2(320), 320 / 132 - 2, 3])
    # alignment flags (2, 4, 8, 16, 32, 64, 128): M = 4096 is a multiple of all; K = 100 and N = 300 of 2 and 4 only
    assert row[-21:].tolist() == [1] * 7 + [1, 1, 0, 0, 0, 0, 0] * 2


def test_padded_shape_by_hand():
    # rr / rc: K and N (the leading dimensions) rounded up to multiples of 8; cr: M and N; K at least 8 in all
    M, K, N = np.array([100.0, 3, 2103]), np.array([100.0, 3, 2270]), np.array([300.0, 5, 7475])
    for lay in ("rr", "rc"):
        got = padded_shape(M, K, N, lay)
        assert [g.tolist() for g in got] == [[100, 3, 2103], [104, 8, 2272], [304, 8, 7480]]
    got = padded_shape(M, K, N, "cr")
    assert [g.tolist() for g in got] == [[104, 8, 2104], [100, 8, 2270], [304, 8, 7480]]
    with pytest.raises(PerfModelError, match=r"padded_shape: layout 'xx'. Valid choices: cr, rc, rr"):
        padded_shape(M, K, N, "xx")
    # and none of them falls back: that is what makes the padded shape the Hopper kernels' nearest GEMM
    for lay in ("rr", "rc", "cr"):
        assert not fallback_mask(*padded_shape(M, K, N, lay), lay).any()
        assert fallback_mask(M, K, N, lay).all()
    # one row keeps M = 1 in every layout (with K < 8 it falls back; padded, K and N are multiples of 8), and int32
    # arrays broadcast against scalars
    got = padded_shape(np.array([1, 1], np.int32), np.array([3, 5], np.int32), 7475, "cr")
    assert [g.tolist() for g in got] == [[1, 1], [8, 8], [7480, 7480]]
    assert fallback_mask(np.array([1.0]), np.array([3.0]), np.array([7475.0]), "cr").all()
    # it is the shape gemm_kernel reports as aligned_shape (one definition: the tile model's features and the kernel
    # answer pad alike), for every fallback GEMM of a random draw
    rng = np.random.default_rng(7)
    hits = 0
    for lay in ("rr", "rc", "cr"):
        for m, k, n in rng.integers(1, 3000, size=(60, 3)):
            k = int(k) if k > 40 else int(k) % 9 + 1  # some K < 8
            if bool(fallback_mask(float(m), float(k), float(n), lay)):
                want = pm.gemm_kernel(int(m), k, int(n), "bf16", "H200", layout=lay).aligned_shape
                assert tuple(int(x) for x in padded_shape(m, k, n, lay)) == want, (m, k, n, lay)
                hits += 1
    assert hits > 100


def test_correction_features_with_the_padded_time():
    t, tp = np.array([2e-5, 1e-4]), np.array([1e-5, 1e-4])
    M, K, N = np.array([100.0, 64]), np.array([100.0, 64]), np.array([300.0, 64])
    X = correction_features(M, K, N, t, 132, tp)
    assert X.shape == (2, N_FALLBACK_FEATURES) and N_FALLBACK_FEATURES == N_CORRECTION_FEATURES + 2
    assert X[:, :-2].tolist() == correction_features(M, K, N, t, 132).tolist()
    assert X[:, -2].tolist() == pytest.approx([round(np.log(1e-5), 3), round(np.log(1e-4), 3)])
    assert X[:, -1].tolist() == pytest.approx([round(np.log(2), 3), 0])


def test_fallback_corrections_without_the_padded_time_still_load(tmp_path):
    # a file whose fallback corrections read the base features only (written before the padded-shape features):
    # it loads, and prices its fallback GEMMs with those trees alone
    data = _shipped_json()
    assert data["event_corrections"]["bf16@fallback/rr"]["n_features"] == N_FALLBACK_FEATURES  # the shipped file's
    for field in ("corrections", "event_corrections"):
        for lay in ("rr", "rc", "cr"):
            data[field][f"bf16@fallback/{lay}"] = data[field][f"bf16@{lay}"]  # trees of the base features
    old = load_tile_model(_write(tmp_path, data))
    M, K, N = np.array([2103.0]), np.array([2270.0]), np.array([7475.0])  # K and N misaligned: rr falls back
    assert fallback_mask(M, K, N, "rr").all()
    fmt = pm.get_format("bf16")
    f = old.formula_time_s(M, K, N, fmt=fmt, scaling=None, gpu=H200, layout="rr", timing="event")
    trees = old.event_corrections["bf16@fallback/rr"]
    assert trees.n_features == N_CORRECTION_FEATURES
    want = f * np.exp(trees.predict(correction_features(M, K, N, f, 132)))
    got = old.event_gemm_time_s(M, K, N, fmt=fmt, scaling=None, out_fmt=None, gpu=H200, layout="rr")
    assert got == pytest.approx(want, rel=1e-12)
    shipped = pm.gemm_time_s(M, K, N, "bf16", "H200", layout="rr", timing="event", time_model="tiles")
    assert not np.allclose(got, shipped, rtol=1e-3)  # the shipped trees (padded features) answer otherwise


def test_bad_correction_files_get_named_errors(tmp_path):
    good = _shipped_json()
    bad = _shipped_json()
    bad["corrections"]["bf16@xx"] = bad["corrections"]["bf16@rr"]
    with pytest.raises(CalibrationError, match="corrections key"):
        load_tile_model(_write(tmp_path, bad))
    bad = _shipped_json()
    bad["event_corrections"]["bf16@rr"]["n_features"] = 3
    with pytest.raises(CalibrationError, match="feature"):
        load_tile_model(_write(tmp_path, bad))
    bad = _shipped_json()  # the main kinds' trees may not read the padded features
    bad["corrections"]["bf16@rr"] = bad["corrections"]["bf16@fallback/rr"]
    with pytest.raises(CalibrationError, match=r"'bf16@rr' reads 53 features; this version computes 51 for it"):
        load_tile_model(_write(tmp_path, bad))
    bad = _shipped_json()  # a fallback kind reading them needs its main kind's correction
    del bad["corrections"]["bf16@cr"]
    with pytest.raises(CalibrationError, match=r"'bf16@fallback/cr' reads the padded shape's time.*no 'bf16@cr'"):
        load_tile_model(_write(tmp_path, bad))
    bad = dict(good, corrections=[1])
    with pytest.raises(CalibrationError, match="'corrections' must be an object"):
        load_tile_model(_write(tmp_path, bad))
    # a file without corrections (older files) prices with the formula alone
    old = {k: v for k, v in good.items() if k not in ("corrections", "event_corrections")}
    plain = load_tile_model(_write(tmp_path, old), base=tile_model().base)
    bf16 = pm.get_format("bf16")
    f = plain.formula_time_s(4096, 4096, 4096, fmt=bf16, scaling=None, gpu=H200)
    assert pm.gemm_time_s(4096, 4096, 4096, "bf16", "H200", time_model=plain) == pytest.approx(f, rel=1e-12)


def test_measured_range_is_the_fit_datas():
    from benchmarks.harness import calibrate_tiles as ct

    files = [*ct.FIT_FILES, *ct.EVENT_FIT_FILES, *(f for fs in ct.CORRECTION_FILES.values() for f in fs)]
    # the shipped file's range, as loaded, against the sizes in the data it was fitted on (the sweep plan's M and
    # K run 1..65536, N 256..28672)
    assert (
        tile_model().measured_range == ct.measured_range(files) == {"M": (1, 65536), "K": (1, 65536), "N": (256, 28672)}
    )
    prov = pm.provenance("H200", "tiles")
    assert prov.measured_range == (("M", 1, 65536), ("K", 1, 65536), ("N", 256, 28672))
    assert prov.to_dict()["measured_range"] == [["M", 1, 65536], ["K", 1, 65536], ["N", 256, 28672]]
    assert "measured_range" not in pm.provenance("H200").to_dict()  # the default model records none
    with pytest.raises(CalibrationError, match="no GEMM measured"):
        ct.measured_range([])


def test_error_bar_says_when_a_shape_is_outside_the_measured_range():
    inside = pm.gemm_error_bar(65536, 4096, 28672, "bf16", "H200", time_model="tiles")
    assert inside.borrowed == ""
    big_m = pm.gemm_error_bar(131072, 4096, 4096, "bf16", "H200", time_model="tiles")
    assert "M = 131072 is outside the measured M 1–65536" in big_m.borrowed and "extrapolation" in str(big_m)
    # the bar itself is the measured range's bar for that family, only marked
    import dataclasses

    from perfmodel.models.registry import gpu_error_bar

    assert dataclasses.replace(big_m, borrowed="") == gpu_error_bar("H200", time_model="tiles", family=big_m.family)
    small_n = pm.gemm_error_bar(4096, 4096, 128, "bf16", "H200", time_model="tiles")
    assert small_n.borrowed.startswith("N = 128 is outside the measured N 256–28672")
    two = pm.gemm_error_bar(70000, 4096, 100, "bf16", "H200", time_model="tiles")
    assert "M = 70000" in two.borrowed and "N = 100" in two.borrowed
    arr = pm.gemm_error_bar(
        np.array([16, 4096, 200000], dtype=np.int32), 4096, 4096, "bf16", "H200", time_model="tiles"
    )
    assert "M = 200000" in arr.borrowed
    assert pm.gemm_error_bar(np.array([16, 4096]), 4096, 4096, "bf16", "H200", time_model="tiles").borrowed == ""
    # the default model records no range: nothing is claimed either way
    assert pm.gemm_error_bar(131072, 4096, 4096, "bf16", "H200").borrowed == ""


def test_bad_measured_range_gets_a_named_error(tmp_path):
    for rng, what in (
        ({"M": [0, 5], "K": [1, 2], "N": [1, 2]}, "integers 1 <= lo <= hi"),
        ({"M": [5, 1], "K": [1, 2], "N": [1, 2]}, "integers 1 <= lo <= hi"),
        ({"M": [1, 5], "K": [1, 2]}, "must map M, K and N"),
        ({"M": [1, 2.5], "K": [1, 2], "N": [1, 2]}, "integers"),
        ({"M": 3, "K": [1, 2], "N": [1, 2]}, "must map M, K and N"),
        ([1, 2], "'measured_range' must be an object"),
    ):
        bad = dict(_kinds_json(), measured_range=rng)  # the trees play no part
        with pytest.raises(CalibrationError, match=what):
            load_tile_model(_write(tmp_path, bad))
    # files written before the range was recorded still load, and claim nothing
    old = _kinds_json()
    del old["measured_range"]
    assert load_tile_model(_write(tmp_path, old)).measured_range == {}


def test_outside_measured_names_each_size_and_the_linears_three_gemms():
    import dataclasses

    import sympy as sp

    from perfmodel.float8.linear import linear_time
    from perfmodel.models.base import Provenance
    from perfmodel.models.registry import EXPECTED_ERRORS

    prov = Provenance(
        kind="measured",
        gpu="H200",
        time_model="calibrated",
        source="test",
        expected_error=EXPECTED_ERRORS["measured"],
        measured_range=(("N", 256, 28672), ("M", 1, 65536)),  # any order; K not recorded
    )
    assert prov.outside_measured((131072, 10**6, 100)) == (
        "M = 131072 is outside the measured M 1–65536; N = 100 is outside the measured N 256–28672"
    )
    assert prov.outside_measured((4096, 10**6, 4096)) == ""  # K unrecorded: no claim
    assert prov.outside_measured((sp.Symbol("M"), 4096, 4096)) == ""  # a symbol: no number to compare
    assert prov.outside_measured((np.array([1, 70000]), 1, 300)) == "M = 70000 is outside the measured M 1–65536"
    # a Linear's bar looks at its three GEMMs: the token count is grad_weight's reduction dimension (its K)
    lt = linear_time(100000, 4096, 4096, "bf16", "H200")
    assert lt.error_bar is not None and lt.error_bar.borrowed == ""
    full = dataclasses.replace(prov, measured_range=(("M", 1, 65536), ("K", 1, 65536), ("N", 256, 28672)))
    marked = dataclasses.replace(lt, provenance=dataclasses.replace(lt.provenance, measured_range=full.measured_range))
    assert "M = 100000" in marked.error_bar.borrowed and "K = 100000" in marked.error_bar.borrowed
