"""Error bars: shape families, the ErrorBar type, the lookup per provenance class, and where answers carry them."""

import json
import math

import numpy as np
import pytest
import sympy as sp

import perfmodel as pm
from perfmodel import float8
from perfmodel.cli import main
from perfmodel.errors import PerfModelError
from perfmodel.models.base import ROOFLINE
from perfmodel.models.errorbars import SHAPE_FAMILIES, ErrorBar, error_bar, error_bar_table, shape_family
from perfmodel.report import report


@pytest.mark.parametrize(
    ("shape", "layout", "family"),
    [
        ((8192, 4095, 4096), "rc", "unaligned"),  # K leads in rc
        ((8192, 4095, 4096), "cr", "random"),  # K does not lead in cr; K not /128
        ((8191, 4096, 4096), "cr", "unaligned"),  # M leads in cr
        ((8191, 4096, 4096), "rr", "llm"),
        ((256, 4096, 4096), "rc", "small_m"),
        ((257, 4096, 4096), "rc", "llm"),
        ((1, 4096, 4096), "rc", "small_m"),
        ((1, 4096, 50257), "rc", "small_m"),  # one row, N odd: a gemv kernel, not the fallback
        ((1, 4096, 4096), "cr", "small_m"),  # M = 1 leads in cr, but one row runs a Hopper kernel
        ((2, 4096, 4096), "cr", "unaligned"),  # two rows: the fallback
        ((4096, 1, 4096), "cr", "unaligned"),  # K < 8: the fallback, though K does not lead in cr
        ((4096, 4096, 4096), "rc", "square"),
        ((200, 200, 200), "rc", "small_m"),  # small M wins over square
        ((8192, 4096, 14336), "rc", "llm"),
        ((8192, 4104, 14336), "rc", "random"),  # aligned to 8, not to 128
    ],
)
def test_shape_family_by_hand(shape, layout, family):
    assert shape_family(*shape, layout) == family


def test_shape_family_accepts_numpy_integers_and_refuses_the_rest():
    assert shape_family(np.int32(8192), np.int64(4096), 4096.0) == "llm"
    for bad in (0, -8, 8.5, math.inf, math.nan, True, "8", np.array([8, 16]), sp.Symbol("M")):
        with pytest.raises(PerfModelError, match="positive integer"):
            shape_family(bad, 4096, 4096)
    with pytest.raises(PerfModelError, match="layout"):
        shape_family(64, 64, 64, "cc")


def test_error_bar_type():
    bar = ErrorBar(
        quantity="gemm_time",
        kind="measured",
        family="llm",
        timing="kernel",
        low=0.9,
        high=1.2,
        median=1.0,
        n=10,
        basis="x",
    )
    assert bar.interval(100.0) == pytest.approx((90.0, 120.0))
    assert bar.pct == pytest.approx((-10.0, 20.0))
    assert bar.short() == "-10 %/+20 %"
    assert "llm shapes" in str(bar) and "n=10" in str(bar)
    # straddles: threshold inside (value*low, value*high]
    assert bar.straddles(1.05, 1.0) and bar.straddles(0.9, 1.0)
    assert not bar.straddles(1.2, 1.0) and not bar.straddles(0.8, 1.0)
    s = np.array([0.8, 0.9, 1.05, 1.2])
    assert bar.straddles(s, 1.0).tolist() == [False, True, True, False]
    for bad in ({"low": math.nan}, {"low": 0.0}, {"high": math.inf}, {"low": 1.3}):
        with pytest.raises(PerfModelError):
            ErrorBar(**{**bar.to_dict(), **bad})


def test_shipped_table_is_well_formed():
    bars = error_bar_table()
    keys = [(b.quantity, b.kind, b.family, b.timing, b.model) for b in bars]
    assert len(keys) == len(set(keys)), "one bar per (quantity, class, family, timing, model)"
    for b in bars:
        assert b.low <= b.median <= b.high and b.n >= 20
        assert b.family in (*SHAPE_FAMILIES, "all")
        assert b.model in ("", "tiles")
    # every class (and model) that has bars has an "all" bar per quantity and timing
    for q, k, _, t, m in keys:
        assert (q, k, "all", t, m) in keys
    # the tile model's bars are its own, from the sessions measured after its fit
    tiles = [b for b in bars if b.model == "tiles"]
    seeds = "seeds " + ", ".join(str(seed) for seed in (2037, *range(2071, 2087)))
    assert tiles and all(b.kind == "measured" and seeds in b.basis for b in tiles)


def test_lookup_falls_back_and_says_what_it_borrowed():
    llm = error_bar("gemm_time", "measured", "llm", "kernel")
    assert llm.family == "llm" and not llm.borrowed
    assert llm.high - llm.low < error_bar("gemm_time", "measured", "all", "kernel").high - 0.5
    # held out by shape, the layout sweep has too few square GEMMs in no fit for a bar: the class's "all" one
    square = error_bar("gemm_time", "measured", "square", "kernel")
    assert square.family == "all" and not any(
        (b.kind, b.family, b.model) == ("measured", "square", "") for b in error_bar_table()
    )
    # the estimated class has one bar for all families and timings
    est = error_bar("gemm_time", "estimated", "llm", "event")
    assert (est.family, est.timing) == ("all", "any")
    # transferred GEMM times borrow the measured bar, and say so
    tr = error_bar("gemm_time", "transferred", "llm", "kernel")
    me = error_bar("gemm_time", "measured", "llm", "kernel")
    assert (tr.low, tr.high) == (me.low, me.high) and tr.kind == "transferred" and "validated" in tr.borrowed
    # transferred speedups have their own bar (the published H100 table)
    assert not error_bar("speedup", "transferred").borrowed
    # never validated: no bar
    assert error_bar("speedup", "estimated") is None
    assert error_bar("gemm_time", "user") is None
    for args in (("time", "measured"), ("gemm_time", "calibrated"), ("gemm_time", "measured", "odd")):
        with pytest.raises(PerfModelError, match="Valid choices"):
            error_bar(*args)
    with pytest.raises(PerfModelError, match="timing"):
        error_bar("gemm_time", "measured", "all", "wall")


def test_the_calibrated_bar_is_narrower_than_the_rooflines():
    for fam in ("llm", "small_m", "random"):
        ours = error_bar("gemm_time", "measured", fam)
        roof = error_bar("gemm_time", "roofline", fam)
        assert abs(math.log(ours.median)) < abs(math.log(roof.median))


def test_answers_carry_their_bar():
    pd = pm.gemm_perfdata(8192, 4096, 14336, "bf16", "H200")
    assert pd.meta["error_bar"] == error_bar("gemm_time", "measured", "llm", "kernel")
    ev = pm.gemm_perfdata(8192, 4096, 14336, "bf16", "H200", timing="event")
    assert ev.meta["error_bar"].timing == "event"
    arr = pm.gemm_perfdata(np.array([16, 8192]), 4096, 4096, "bf16", "H200")
    assert arr.meta["error_bar"].family == "all"
    assert pm.gemm_error_bar(8192, 4096, 4096, "bf16", "H100").kind == "transferred"
    assert pm.gemm_error_bar(8192, 4096, 4096, "bf16", "H100", time_model="roofline").kind == "roofline"
    assert pm.gemm_error_bar(8192, 4096, 4096, "bf16", "H100", time_model=ROOFLINE).kind == "roofline"
    lt = float8.linear_time(8192, 4096, 14336, "rowwise", "H200")
    assert lt.error_bar.quantity == "linear_time" and lt.error_bar.kind == "measured"
    assert lt.perfdata().meta["error_bar"] == lt.error_bar
    assert float8.linear_time(8192, 4096, 14336, "rowwise", "B200").error_bar.borrowed  # estimated: GEMM bar
    assert float8.speedup_error_bar("H200").kind == "measured"
    assert float8.speedup_error_bar("B200") is None


def test_report_marks_close_calls_with_the_speedup_bar():
    shapes = [(4096, 4096), (4096, 1024), (8192, 28672), (1024, 1024)]
    # the H800: the transferred class's published-table bar, wide enough for close calls in this mix (the H100 SXM's
    # own, measured bar is narrower: tests/test_dense_transfer.py)
    rep = report(shapes, gpu="H800", tokens=4096)
    bar = rep.speedup_error_bar
    assert bar is not None and bar.kind == "transferred" and bar.n == 216
    flags = []
    for row in rep.rows:
        best = max(row.speedups.values())
        assert row.close_call == bool(bar.low * best < rep.min_speedup <= bar.high * best)
        flags.append(row.close_call)
    assert any(flags) and not all(flags)  # the mix is a real test of both branches
    text = str(rep)
    assert "~ close call" in text and "error bar:" in text
    d = json.loads(rep.to_json())
    assert d["speedup_error_bar"]["kind"] == "transferred"
    assert [r["close_call"] for r in d["rows"]] == flags
    # an estimated GPU has no speedup bar: no close calls, and the text says it was not measured
    b200 = report(shapes, gpu="B200", tokens=4096)
    assert b200.speedup_error_bar is None and not any(r.close_call for r in b200.rows)
    assert "error bar: not measured" in str(b200)


def test_cli_break_even_spread(capsys):
    assert main(["break-even", "4096x4096", "1024x4096", "--gpu", "h100", "--json"]) == 0
    recs = json.loads(capsys.readouterr().out)
    first = recs[0]
    lo, hi = first["break_even_tokens_p10_p90"]
    assert lo <= first["break_even_tokens"] <= hi
    bar = float8.speedup_error_bar("H100")
    assert lo == float8.break_even_tokens(4096, 4096, "tensorwise", "H100", min_speedup=1 / bar.high)
    assert main(["break-even", "4096x4096", "--gpu", "h100"]) == 0
    out = capsys.readouterr().out
    assert "p10-p90 M" in out and "error bar:" in out


def test_cli_gemm_prints_and_returns_the_bar(capsys):
    assert main(["gemm", "8192", "4096", "14336", "--gpu", "h200", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    bar = rec["error_bar"]
    assert bar["family"] == "llm" and bar["kind"] == "measured"
    lo, hi = rec["time_s_p10_p90"]
    assert lo == pytest.approx(rec["time_s"] * bar["low"]) and hi == pytest.approx(rec["time_s"] * bar["high"])
    assert main(["gemm", "8192", "4096", "14336", "--gpu", "h200"]) == 0
    assert "p10-p90" in capsys.readouterr().out


def test_gemm_error_bar_refuses_what_gemm_time_refuses():
    from perfmodel.errors import InvalidShapeError, UnsupportedFormatError

    for bad in (-5, 0, 2**60, 10**400, "abc", None, float("nan")):
        with pytest.raises(InvalidShapeError):
            pm.gemm_error_bar(bad, 4096, 4096, "bf16", "H200")
    with pytest.raises(UnsupportedFormatError, match="mxfp8"):
        pm.gemm_error_bar(8192, 4096, 14336, "mxfp8", "H200")
    with pytest.raises(UnsupportedFormatError, match="not fp32"):
        pm.gemm_error_bar(8192, 4096, 14336, "fp32", "H200", time_model="tiles")
    with pytest.raises(pm.PerfModelError, match="one positive integer"):
        shape_family(10**400, 4096, 4096)
    assert pm.gemm_error_bar(8192, 4096, 14336, "bf16", "H200").family == "llm"
