"""The fast paths of the float8 grid (issue 35, item 9) give the answers of the slow ones: bit masks for the
alignment rules, in-place GEMM formulas, block-by-block grids, and break-even's block search. Timings are printed
by ``benchmarks/bench_eval.py``; these tests check the numbers (and how much break-even prices), not the clock."""

from __future__ import annotations

import numpy as np
import pytest

import perfmodel.float8 as f8
from perfmodel._backend import check_size
from perfmodel.counting import alignment, fp8_aligned, misaligned
from perfmodel.errors import InvalidShapeError
from perfmodel.float8 import decide
from perfmodel.formats import get_format
from perfmodel.models.registry import time_model

RNG = np.random.default_rng(35)


def _alignment_by_modulo(x):
    """alignment() as it was written before the bit masks: int64 ``%`` by 2, 4 and 8."""
    x = np.asarray(x).astype(np.int64)
    out = np.ones_like(x)
    for p in (2, 4, 8):
        out = np.where(x % p == 0, p, out)
    return out


@pytest.mark.parametrize(
    "x",
    [
        RNG.integers(-(10**6), 10**6, 10**5),
        RNG.integers(0, 2**40, 10**5).astype(np.float64) + RNG.choice([0.0, 0.25, 0.5, -0.75], 10**5),
        np.array(0),
        np.arange(-64, 65),
        7,
        16.0,
    ],
    ids=["ints", "floats", "zero", "small", "int", "float"],
)
def test_alignment_by_bit_mask_is_the_modulo_answer(x):
    got, want = alignment(x), _alignment_by_modulo(x)
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_misaligned_by_one_mask_is_the_min_of_two_alignments():
    a, b = RNG.integers(1, 10**6, 10**5), RNG.integers(1, 10**6, 10**5).astype(np.float64)
    assert np.array_equal(misaligned(a, b), np.minimum(_alignment_by_modulo(a), _alignment_by_modulo(b)) < 8)
    assert misaligned(4096, 11008) is False and misaligned(4096, 50257) is True


def test_fp8_alignment_of_float_arrays_is_the_modulo_answer_even_for_odd_floats():
    special = np.array([np.inf, -np.inf, np.nan, 5e-324, 1e-310, 2.0**60, -16.0, -8.0, 0.0, -0.0, 16.5, 1e300, 48.0])
    for x in (RNG.integers(1, 2**40, 10**5) * 1.0, RNG.integers(1, 10**6, 10**5) * 16.0, special):
        with np.errstate(invalid="ignore"):
            assert np.array_equal(fp8_aligned(x), x % 16 == 0)
    ints = RNG.integers(-(10**6), 10**6, 10**5)
    assert np.array_equal(fp8_aligned(ints), ints % 16 == 0)
    assert np.array_equal(fp8_aligned(ints.astype(np.uint64) & 0xFFFF), (ints & 0xFFFF) % 16 == 0)


def test_integer_arrays_pass_the_size_gate_as_before():
    ok = np.array([1, 16, 2**40], dtype=np.int64)
    assert np.array_equal(check_size("M", ok), ok.astype(np.float64))
    assert check_size("M", np.array([3], dtype=np.uint8)).dtype == np.float64
    for bad in (
        np.array([0, 5]),
        np.array([-3]),
        np.array([2**40 + 1]),
        np.array([2**63 - 1]),
        np.array([2**64 - 1], np.uint64),
    ):
        with pytest.raises(InvalidShapeError, match="element"):
            check_size("M", bad)


def _grid(n):
    return (RNG.integers(1, 70000, n), RNG.integers(1, 2000, n) * 16, RNG.integers(1, 2000, n) * 16)


@pytest.mark.parametrize("gpu", ["H200", "H100", "B200", "MI300X"])
def test_a_grid_priced_in_blocks_is_the_grid_priced_at_once(monkeypatch, gpu):
    M, K, N = _grid(5000)
    recipe = "rowwise" if gpu != "MI300X" else "tensorwise"
    blocked = {}
    for block in (700, 10**9):  # 8 blocks (the last one short) / one pass
        monkeypatch.setattr(decide, "BLOCK", block)
        blocked[block] = (
            f8.speedup(M, K, N, recipe, gpu),
            f8.should_use(M, K, N, recipe, gpu, min_speedup=1.1),
            f8.speedup(M.reshape(50, 100), K.reshape(50, 100)[:1], 4096, recipe, gpu),  # broadcast, N a number
        )
    for a, b in zip(blocked[700], blocked[10**9], strict=True):
        assert a.shape == b.shape and np.array_equal(a, b)


def test_blocks_keep_the_mask_of_shapes_float8_cannot_run(monkeypatch):
    monkeypatch.setattr(decide, "BLOCK", 1000)
    M, K, N = _grid(3000)
    K[::7] += 8  # not multiples of 16: masked
    s = f8.speedup(M, K, N, "tensorwise", "H100")
    assert isinstance(s, np.ma.MaskedArray) and np.array_equal(np.ma.getmaskarray(s), K % 16 != 0)
    one = f8.speedup(int(M[1]), int(K[1]), int(N[1]), "tensorwise", "H100")
    assert float(s[1]) == pytest.approx(float(one), rel=1e-12)


def test_in_place_gemm_formulas_are_the_generic_ones():
    """Float64 arrays of one shape take the in-place path; int64 arrays the generic expression: the same floats."""
    tm = time_model("H200").load()
    M, K, N = (x.astype(np.float64) for x in _grid(20000))
    K[::5] += 3  # misaligned bf16: the fallback kernels
    for key in ("bf16", "bf16@fallback", "fp8_e4m3/rowwise", "fp8_e4m3/tensorwise"):
        p = tm.gemm[key]
        nbytes = (M * K + K * N) * 2 + M * N * 2
        fast = p.time_s(M, K, N, nbytes, 132, (K, N))
        generic = p.time_s(M.astype(np.int64), K.astype(np.int64), N.astype(np.int64), nbytes, 132, (K, N))
        assert np.array_equal(fast, generic), key
    fmt = get_format("bf16")
    got = tm.gemm_time_s(M, K, N, fmt=fmt, scaling=None, out_fmt=fmt, gpu=f8.linear_time(1, 16, 16).gpu)
    assert np.all(np.isfinite(got)) and got.shape == M.shape


CASES = [
    ("tensorwise", "H100", None, 1.0, 1 << 24),
    ("rowwise", "H200", None, 1.1, 1 << 24),
    ("rowwise_with_gw_hp", "H200", None, 1.0, 50_000),
    ("tensorwise", "B200", None, 1.2, 1 << 21),
    ("rowwise", "H100", "roofline", 1.0, 1 << 24),
    ("tensorwise", "H100", "original", 1.05, 1 << 22),
]


@pytest.mark.parametrize(("recipe", "gpu", "tm", "min_speedup", "max_tokens"), CASES)
def test_break_even_on_arrays_is_its_scalar_loop_and_the_full_grid(
    monkeypatch, recipe, gpu, tm, min_speedup, max_tokens
):
    K = np.array([16, 4096, 4096, 8192, 50256, 1024, 14336, 2048])
    N = np.array([16, 4096, 14336, 1024, 4096, 50256, 4096, 128])
    kw = dict(min_speedup=min_speedup, max_tokens=max_tokens, time_model=tm)
    arrays = np.ma.filled(f8.break_even_tokens(K, N, recipe, gpu, **kw), -2)
    loop = [f8.break_even_tokens(int(k), int(n), recipe, gpu, **kw) for k, n in zip(K, N, strict=True)]
    assert arrays.tolist() == [-1 if m is None else m for m in loop]
    monkeypatch.setattr(decide, "_monotone_in_tokens", lambda tm: False)  # price every grid point, as before
    full = np.ma.filled(f8.break_even_tokens(K, N, recipe, gpu, **kw), -2)
    assert arrays.tolist() == full.tolist()
    assert len(set(arrays.tolist())) > 2  # the cases are not all "never" / "always"


def test_break_even_prices_a_fraction_of_the_grid(monkeypatch):
    priced = []
    real = decide._speedup

    def counting(M, K, N, rec, gpu, opts):
        priced.append(np.broadcast_shapes(np.shape(M), np.shape(K), np.shape(N)))
        return real(M, K, N, rec, gpu, opts)

    monkeypatch.setattr(decide, "_speedup", counting)
    K, N = np.array([4096, 8192]), np.array([14336, 8192])
    f8.break_even_tokens(K, N, "rowwise", "H200")
    points = sum(int(np.prod(s)) for s in priced)
    grid = len(decide._token_grid(1 << 24))
    assert points < 0.05 * grid * len(K)  # the full scan priced grid x pairs


def test_tile_model_break_even_still_prices_every_point():
    assert not decide._monotone_in_tokens(time_model("H200", "tiles"))
    assert decide._monotone_in_tokens(time_model("H100")) and decide._monotone_in_tokens(time_model("B200"))
    assert decide._monotone_in_tokens(time_model("H100", "roofline"))
    assert decide._monotone_in_tokens(time_model("H100", "original"))
