"""train.estimate with numpy arrays for every numeric knob: each element equals the scalar call (rel 1e-9),
refused elements are named by index, and one call builds one TrainConfig."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

import perfmodel.train as train
from perfmodel.errors import InvalidParallelismError, InvalidShapeError, PerfModelError
from perfmodel.train.grid import ARRAY_FIELDS, TrainEstimateGrid

M, GPU = "llama3-8b", "H100"

#: every numeric knob, each on its own axis (2**6 jobs; pp and cp can only be 1; vocab is the model's, one a call)
KNOBS = {
    "n_gpus": np.array([8, 16]).reshape(2, 1, 1, 1, 1, 1),
    "tp": np.array([1, 2]).reshape(1, 2, 1, 1, 1, 1),
    "dp_replicate": np.array([1, 2]).reshape(1, 1, 2, 1, 1, 1),
    "layers": np.array([2, 3]).reshape(1, 1, 1, 2, 1, 1),
    "seq_len": np.array([2048, 4096]).reshape(1, 1, 1, 1, 2, 1),
    "batch_per_gpu": np.array([1, 3]).reshape(1, 1, 1, 1, 1, 2),
    "pp": np.array([1]),
    "cp": np.ones((1, 1), dtype=np.int64),
}


def _close(a, b):
    return bool(np.isclose(float(a), float(b), rtol=1e-9, atol=0))


def _check_every_element(grid, knobs, **fixed):
    shape = grid.shape
    assert shape == np.broadcast_shapes(*(np.shape(v) for v in knobs.values()))
    for index in itertools.product(*(range(n) for n in shape)):
        one = {k: int(np.broadcast_to(v, shape)[index]) for k, v in knobs.items()}
        est = train.estimate(M, gpu=GPU, **fixed, **one)
        for f in ARRAY_FIELDS:
            got, want = getattr(grid, f)[index], getattr(est, f)
            assert (bool(got) == bool(want)) if f == "fits" else _close(got, want), (f, index, got, want)
        for k, v in est.compute_s.items():
            assert _close(grid.compute_s[k][index], v), (k, index)
        for k, v in est.memory.items():
            assert _close(grid.memory[k][index], v), (k, index)


def test_every_numeric_knob_broadcasts_and_equals_the_scalar_loop():
    grid = train.estimate(M, gpu=GPU, **KNOBS)
    assert isinstance(grid, TrainEstimateGrid)
    assert grid.shape == (2, 2, 2, 2, 2, 2)
    assert grid.combinations == 8  # n_gpus x tp x dp_replicate; layers, seq_len, batch ride as arrays
    _check_every_element(grid, KNOBS)
    # the answers differ along every axis that should change them (not one number broadcast)
    for axis in range(6):
        assert not np.allclose(np.take(grid.step_s, 0, axis), np.take(grid.step_s, 1, axis), rtol=1e-6)


def test_float8_layouts_with_async_tp_and_all_gather():
    knobs = {"n_gpus": np.array([16, 32]), "tp": np.array([[2], [4]]), "seq_len": 4096, "batch_per_gpu": 2}
    fixed = dict(recipe="tensorwise", float8_all_gather=True, async_tp=True, layers=2)
    grid = train.estimate(M, gpu=GPU, **knobs, **fixed, vocab=0)
    assert grid.shape == (2, 2)
    _check_every_element(grid, knobs, **fixed, vocab=0)


def test_at_gives_the_full_scalar_estimate_and_table_refuses():
    grid = train.estimate(M, gpu=GPU, n_gpus=np.array([8, 16]), tp=2, seq_len=8192, batch_per_gpu=1, layers=2)
    one = grid.at(1)
    assert one.config.n_gpus == 16 and one.config.tp == 2
    assert _close(one.step_s, grid.step_s[1])
    assert "16 GPUs" in one.table()
    with pytest.raises(PerfModelError, match=r"at\(i"):
        grid.table()
    with pytest.raises(InvalidShapeError, match="shape"):
        grid.at(2)
    with pytest.raises(InvalidShapeError):
        grid.at(0, 0)
    d = json.loads(json.dumps(grid.to_dict()))
    assert d["shape"] == [2] and d["knobs"]["n_gpus"] == [8, 16]
    assert _close(d["step_s"][0], grid.step_s[0])
    assert "2 training jobs" in str(grid)


def test_fits_stays_per_element():
    grid = train.estimate(M, gpu=GPU, n_gpus=np.array([8, 16]), seq_len=8192, batch_per_gpu=np.array([[1], [64]]))
    assert grid.fits.dtype == bool
    assert grid.fits[0].all() and not grid.fits[1].any()  # 64 x 8k tokens of Llama 3 8B do not fit on an H100
    assert np.all(grid.step_s > 0)


def test_refused_elements_are_named_by_index_and_reason():
    with pytest.raises(InvalidParallelismError) as info:
        train.estimate(
            M, gpu=GPU, n_gpus=np.array([8, 12, 16]), tp=np.array([[1], [2]]),
            seq_len=np.array([8192, 8192, 8191]), batch_per_gpu=2,
        )  # fmt: skip
    err = info.value
    assert err.indices == ((0, 1), (1, 1), (1, 2))  # 12 GPUs fill no whole node; 8191 is odd under tp=2
    assert "3 of 6 configurations" in str(err)
    assert "(1, 2)" in str(err) and "seq_len not a multiple of tp=2" in str(err)
    assert "does not fill whole nodes" in err.reasons[(0, 1)]
    with pytest.raises(InvalidParallelismError, match=r"indices \(1,\) .*heads=32 is not divisible by tp=3"):
        train.estimate(M, gpu=GPU, n_gpus=24, tp=np.array([1, 3]), seq_len=8190, batch_per_gpu=1)
    with pytest.raises(InvalidParallelismError, match=r"pp=2.*pipeline") as info:
        train.estimate(M, gpu=GPU, n_gpus=8, pp=np.array([1, 2]), seq_len=8192, batch_per_gpu=1)
    assert info.value.indices == ((1,),)


def test_bad_arrays_are_named_errors():
    with pytest.raises(InvalidShapeError, match=r"n_gpus\(2,\), tp\(3,\) do not broadcast"):
        train.estimate(M, gpu=GPU, n_gpus=np.array([8, 16]), tp=np.array([1, 2, 4]), seq_len=8192, batch_per_gpu=1)
    with pytest.raises(InvalidParallelismError, match="tp as an array must hold integers"):
        train.estimate(M, gpu=GPU, n_gpus=8, tp=np.array([True, False]), seq_len=8192, batch_per_gpu=1)
    with pytest.raises(InvalidShapeError, match="seq_len"):
        train.estimate(M, gpu=GPU, n_gpus=np.array([8, 16]), seq_len=np.array([8192, -1]), batch_per_gpu=1)
    with pytest.raises(InvalidShapeError, match="vocab must be 0"):  # the model's: one a call, as before
        train.estimate(M, gpu=GPU, n_gpus=np.array([8, 16]), seq_len=8192, batch_per_gpu=1, vocab=np.array([0, 4]))
    with pytest.raises(PerfModelError, match="auto"):
        train.estimate(M, gpu=GPU, n_gpus=np.array([8, 16]), seq_len=8192, batch_per_gpu=1, convert="auto")
    sympy = pytest.importorskip("sympy")
    with pytest.raises(InvalidShapeError, match="symbolic"):
        train.estimate(M, gpu=GPU, n_gpus=np.array([8, 16]), seq_len=sympy.Symbol("S"), batch_per_gpu=1)


def test_one_train_config_per_call(monkeypatch):
    import perfmodel.train.pricing as t  # where estimate() looks the two up (perfmodel.train re-exports estimate)

    calls = {"check_config": 0, "model_sizes": 0}
    for name in calls:
        real = getattr(t, name)

        def counted(*a, _real=real, _name=name, **k):
            calls[_name] += 1
            return _real(*a, **k)

        monkeypatch.setattr(t, name, counted)
    t.estimate(M, gpu=GPU, n_gpus=16, tp=2, seq_len=4096, batch_per_gpu=1, layers=2, recipe="tensorwise")
    assert calls == {"check_config": 1, "model_sizes": 1}
    t.estimate(M, gpu=GPU, n_gpus=8, seq_len=4096, batch_per_gpu=1, layers=2, recipe="tensorwise", convert="auto")
    assert calls == {"check_config": 2, "model_sizes": 2}  # convert="auto" too: every candidate reuses it


def test_the_gpu_name_is_resolved_once_per_call(monkeypatch):
    import perfmodel.specs.gpu as gpu_mod

    seen = []
    real = gpu_mod._normalise
    monkeypatch.setattr(gpu_mod, "_normalise", lambda name: seen.append(name) or real(name))
    train.estimate(M, gpu=GPU, n_gpus=16, tp=2, seq_len=4096, batch_per_gpu=1, layers=2, recipe="tensorwise")
    assert seen == [GPU]  # everything below the entry gets the spec
    seen.clear()
    train.estimate(M, gpu=GPU, n_gpus=np.array([8, 16]), tp=np.array([[1], [2]]), seq_len=4096, batch_per_gpu=1)
    assert seen == [GPU]  # the array call too: one resolution for its four layouts
