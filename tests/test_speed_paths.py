"""The speed paths of issue #35 item 9 that are not float8: what they do, never how long they take (the figures
are printed by benchmarks/bench_import.py, bench_cli.py and bench_proton.py against references of the same run).
"""

import gc
import json

import pytest

from perfmodel import cli
from perfmodel.errors import PerfModelError, ProfileError, TooManyBatchesError
from perfmodel.measured import moe_bench, proton

PROFILE = "tests/data/h200_proton_triton_matmul.hatchet"
LOG_METADATA = "tests/data/moe/log_metadata.json"


# -- bounded batch ranges ---------------------------------------------------------------------------------------
def test_batch_ranges_up_to_the_maximum_are_read():
    batches = moe_bench.batches_from_ranges([(1, moe_bench.MAX_BATCHES + 1, 1)])
    assert len(batches) == moe_bench.MAX_BATCHES
    assert batches[0] == 1 and batches[-1] == moe_bench.MAX_BATCHES
    assert len(moe_bench.batches_from_ranges(moe_bench.MOE_BATCH_RANGES)) == 12 + 246  # the seed's ranges


def test_more_batches_than_the_maximum_are_refused_with_the_limit_and_the_count():
    with pytest.raises(TooManyBatchesError) as info:
        moe_bench.batches_from_ranges([(0, 5000, 1), (5000, 10_001, 1)])
    msg = str(info.value)
    assert f"at most {moe_bench.MAX_BATCHES}" in msg and "hold 10001 batch sizes" in msg
    assert isinstance(info.value, PerfModelError) and isinstance(info.value, ValueError)


def test_a_huge_range_is_counted_without_building_it():
    # len(range) overflows past sys.maxsize; the count is still exact
    with pytest.raises(TooManyBatchesError, match="hold 33333333333333333334 batch sizes"):
        moe_bench.batches_from_ranges([(0, 10**20, 3)])
    with pytest.raises(TooManyBatchesError, match="hold 1428571428571428572 batch sizes"):
        moe_bench.batches_from_ranges([(10**19, 0, -7)])


def test_cli_refuses_too_many_batches_as_a_usage_error(capsys, tmp_path):
    out = tmp_path / "chart.png"
    code = cli.main(["roofline", "-m", LOG_METADATA, "-o", str(out), "--batch-ranges", "0:1000000:1"])
    err = capsys.readouterr().err
    assert code == 2  # docs/cli.md: a usage or input error
    assert "hold 1000000 batch sizes" in err and f"at most {moe_bench.MAX_BATCHES}" in err
    assert "Traceback" not in err and not out.exists()


# -- Proton read: the garbage collector is paused, and restored as it was ------------------------------------------
@pytest.mark.parametrize("enabled", [True, False])
def test_proton_read_restores_the_collector_state(enabled):
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        profile = proton.read(PROFILE)
        assert gc.isenabled() is enabled
        assert profile.kernels  # the read itself worked
    finally:
        gc.enable() if was else gc.disable()


def test_proton_read_restores_the_collector_after_an_error(tmp_path):
    bad = tmp_path / "bad.hatchet"
    bad.write_text(json.dumps([{"frame": {"name": "ROOT"}, "metrics": {"time (ns)": -1}, "children": []}]))
    assert gc.isenabled()
    with pytest.raises(ProfileError):
        proton.read(bad)
    assert gc.isenabled()


# -- the split-K flag from the tile model's formula kinds only ----------------------------------------------------
def test_tile_kinds_split_k_equals_the_full_models():
    import numpy as np

    from perfmodel.formats import get_format
    from perfmodel.models import registry
    from perfmodel.models.tiles import load_tile_kinds, load_tile_model
    from perfmodel.specs.gpu import get_gpu

    kinds = load_tile_kinds(registry.TILES_PATH)
    full = load_tile_model(registry.TILES_PATH)
    assert not kinds.corrections and not kinds.event_corrections and full.corrections  # the trees stay unread
    assert kinds.kinds.keys() == full.kinds.keys() and kinds.gpu == full.gpu and kinds.source == full.source
    gpu, rng = get_gpu("H200"), np.random.default_rng(0)
    M, K, N = (rng.integers(1, 20_000, 2_000) for _ in range(3))
    cases = [("bf16", None, lay) for lay in ("rc", "rr", "cr")] + [
        ("fp8_e4m3", s, "rc") for s in ("tensorwise", "rowwise")
    ]
    for fmt, scaling, layout in cases:
        kw = {"fmt": get_format(fmt), "scaling": scaling, "gpu": gpu, "layout": layout}
        np.testing.assert_array_equal(kinds.split_k(M, K, N, **kw), full.split_k(M, K, N, **kw))


def test_tile_kinds_of_another_layout_reads_the_whole_file(tmp_path):
    from perfmodel.models import registry
    from perfmodel.models.tiles import load_tile_kinds, load_tile_model

    full = load_tile_model(registry.TILES_PATH)
    compact = tmp_path / "tiles.json"
    compact.write_text(json.dumps(full.to_dict()))  # one line: no "\n "key": " entries to pick
    kinds = load_tile_kinds(compact)
    assert kinds.kinds.keys() == full.kinds.keys() and not kinds.corrections
