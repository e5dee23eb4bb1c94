"""The small tile-kinds file (``perfmodel/calibrations/h200_tile_kinds.json``) says what the shipped tile model says,
trees aside, and is what ``perfmodel gemm ... --gpu h200`` reads for its split-K flag."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import numpy as np

from perfmodel.models import registry

_KINDS_KEYS = ("schema", "gpu", "source", "kinds", "event_kinds", "measured_range", "residuals")


def test_small_file_is_the_big_one_without_its_trees():
    big = json.loads(gzip.decompress(registry.TILES_PATH.read_bytes()))
    small = json.loads(registry.TILE_KINDS_PATH.read_text())
    assert set(small) == {k for k in _KINDS_KEYS if k in big}  # no corrections, nothing the big file lacks
    assert big["corrections"] and big["event_corrections"]  # the big one has the trees the small one leaves out
    for key in small:
        assert small[key] == big[key], key
    assert registry.TILE_KINDS_PATH.stat().st_size < 100_000  # the point of it: ~25 KB, not 5 MB


def test_generator_reproduces_the_shipped_small_file():
    from benchmarks.make_tile_kinds import kinds_text

    assert kinds_text() == registry.TILE_KINDS_PATH.read_text(), "stale: run python benchmarks/make_tile_kinds.py"


def test_split_k_from_the_small_file_matches_the_full_model():
    from perfmodel.formats import get_format
    from perfmodel.models.tiles import load_tile_model
    from perfmodel.specs.gpu import get_gpu

    kinds = load_tile_model(registry.TILE_KINDS_PATH)
    full = load_tile_model(registry.TILES_PATH)
    assert not kinds.corrections and not kinds.event_corrections
    gpu, rng = get_gpu("H200"), np.random.default_rng(1)
    M, K, N = (rng.integers(1, 30_000, 1_000) for _ in range(3))
    splits = 0
    for fmt, scaling, layout in [("bf16", None, lay) for lay in ("rc", "rr", "cr")] + [
        ("fp8_e4m3", s, "rc") for s in ("tensorwise", "rowwise")
    ]:
        kw = {"fmt": get_format(fmt), "scaling": scaling, "gpu": gpu, "layout": layout}
        got = kinds.split_k(M, K, N, **kw)
        np.testing.assert_array_equal(got, full.split_k(M, K, N, **kw))
        splits += int(np.sum(got))
    assert splits > 0  # the grid reaches shapes the formula splits, so the comparison can fail


def test_tile_kinds_reads_the_small_file_only():
    code = (
        "import perfmodel.models.registry as r, perfmodel.models.tiles.load as l; seen = []; "
        "orig = l.load_tile_model; l.load_tile_model = lambda p, **kw: (seen.append(p.name), orig(p, **kw))[1]; "
        "import perfmodel.models.tiles as t; t.load_tile_model = l.load_tile_model; "
        "m = r.tile_kinds('H200'); assert seen == ['h200_tile_kinds.json'], seen; "
        "assert not m.corrections and 'model' not in r._TILES; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "ok"
