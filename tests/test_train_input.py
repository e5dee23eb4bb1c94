"""perfmodel.train input validation: vocab, parallel degrees, array and symbolic results as text, sequence
parallelism's divisibility, and the default convert= under TP sharding."""

import math

import numpy as np
import pytest
import sympy as sp

from perfmodel import train
from perfmodel.cli import main
from perfmodel.errors import IneligibleLinearError, InvalidParallelismError, InvalidShapeError, PerfModelError
from perfmodel.presets import LayerShape

JOB = dict(gpu="H200", n_gpus=8, seq_len=4096, batch_per_gpu=1)
#: ffn=4112 is a multiple of 16, but its half (2056, what one of two TP ranks holds) is not
ODD_FFN = LayerShape(name="odd-ffn", hidden=4096, ffn=4112, heads=32, kv_heads=8)


# ---- 1. vocab: a bool is not a vocabulary size --------------------------------------------------


@pytest.mark.parametrize("bad", [False, True, np.bool_(False), np.array([0, 4]), sp.Symbol("V")])
def test_vocab_bool_array_or_symbol_is_refused(bad):
    with pytest.raises(InvalidShapeError, match=r"vocab must be 0 \(no embedding or output layer\) or a positive"):
        train.estimate("llama3-8b", vocab=bad, **JOB)
    with pytest.raises(InvalidShapeError, match="vocab must be 0"):
        train.estimate(LayerShape(name="l", hidden=1024, ffn=4096, heads=8), layers=2, vocab=bad, **JOB)


def test_vocab_zero_and_numpy_integers_still_work():
    assert train.estimate("llama3-8b", vocab=0, **JOB).config.sizes.vocab == 0
    assert train.estimate("llama3-8b", vocab=0.0, **JOB).config.sizes.vocab == 0
    assert train.estimate("llama3-8b", vocab=np.int64(32000), **JOB).config.sizes.vocab == 32000
    assert train.estimate("llama3-8b", **JOB).config.sizes.vocab == 128256  # the preset's


# ---- 2. parallel degrees: finite, whole, numpy integers accepted --------------------------------


@pytest.mark.parametrize(
    ("kw", "name"),
    [
        (dict(n_gpus=math.inf), "n_gpus"),
        (dict(tp=math.inf), "tp"),
        (dict(dp_replicate=math.nan), "dp_replicate"),
        (dict(tp=-math.inf), "tp"),
        (dict(dp_replicate=np.float32("nan")), "dp_replicate"),
    ],
)
def test_non_finite_degrees_are_a_named_error(kw, name):
    with pytest.raises(InvalidParallelismError, match=rf"^{name} must be a positive integer .*not a finite number"):
        train.estimate("llama3-8b", **{**JOB, **kw})


def test_numpy_integer_degrees_are_integers():
    est = train.estimate("llama3-8b", **{**JOB, "n_gpus": np.int64(8)}, tp=np.int32(2), dp_replicate=np.uint8(1))
    c = est.config
    assert (c.n_gpus, c.tp, c.dp_replicate) == (8, 2, 1) and all(type(v) is int for v in (c.n_gpus, c.tp))
    assert float(est.step_s) == float(train.estimate("llama3-8b", **JOB, tp=2).step_s)
    assert train.estimate("llama3-8b", **{**JOB, "n_gpus": np.float64(8)}).config.n_gpus == 8


@pytest.mark.parametrize("bad", [True, np.bool_(True), 8.5, np.float64(8.5), "8", 0, np.int64(0)])
def test_bools_fractions_and_strings_stay_refused(bad):
    with pytest.raises(InvalidParallelismError, match="n_gpus must be a positive integer"):
        train.estimate("llama3-8b", **{**JOB, "n_gpus": bad})


# ---- 3. array and symbolic results as text -----------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "kind"),
    [
        (dict(seq_len=np.array([4096, 8192])), "array"),
        (dict(batch_per_gpu=np.array([1, 2])), "array"),
        (dict(seq_len=sp.Symbol("s", positive=True)), "symbolic"),
    ],
)
def test_str_of_array_or_symbolic_estimate_is_a_summary_and_table_a_named_error(kw, kind):
    est = train.estimate("llama3-8b", **{**JOB, **kw})
    text = str(est)
    assert text.startswith("llama3-8b (32 layers) on H200") and f"{kind} estimate" in text and "step_s = " in text
    assert len(text) < 1000  # a summary, even for a long sympy expression
    assert repr(est).startswith("TrainEstimate(")
    assert not est.is_scalar
    with pytest.raises(PerfModelError, match=r"table\(\) prints one configuration.*pass one number each"):
        est.table()


def test_str_of_a_scalar_estimate_is_the_table():
    est = train.estimate("llama3-8b", **JOB)
    assert est.is_scalar and str(est) == est.table() and "tokens/s per GPU" in str(est)


# ---- 4. sequence parallelism splits each sequence across the TP ranks ----------------------------


@pytest.mark.parametrize("async_tp", [False, True])
@pytest.mark.parametrize("batch", [1, 8])  # tokens 8008 are divisible by 8, the sequence is not
def test_seq_len_not_divisible_by_tp_is_a_named_error(async_tp, batch):
    with pytest.raises(InvalidParallelismError, match=r"seq_len=1001 is not divisible by tp=8.*multiple of 8"):
        train.estimate("llama3-8b", **{**JOB, "seq_len": 1001, "batch_per_gpu": batch}, tp=8, async_tp=async_tp)
    with pytest.raises(InvalidParallelismError, match=r"seq_len has 1 element\(s\) not divisible by tp=8, e.g. 1001"):
        train.estimate("llama3-8b", **{**JOB, "seq_len": np.array([1024, 1001])}, tp=8)
    with pytest.raises(InvalidParallelismError, match="seq_len=1001 is not divisible by tp=8"):
        train.estimate("llama3-8b", **{**JOB, "seq_len": sp.Integer(1001)}, tp=8)


def test_seq_len_divisibility_applies_only_with_tp():
    assert float(train.estimate("llama3-8b", **{**JOB, "seq_len": 1001}).step_s) > 0  # tp=1: nothing is split
    est = train.estimate("llama3-8b", **{**JOB, "seq_len": 1000}, tp=8, async_tp=True)
    assert float(est.step_s) > 0 and float(est.layer.async_tp_extra_s) >= 0
    assert not train.estimate("llama3-8b", **{**JOB, "seq_len": sp.Symbol("s", positive=True)}, tp=8).is_scalar


def test_cli_async_tp_with_an_odd_seq_len_names_seq_len(capsys):
    argv = "train --model llama3-8b --gpu h200 --gpus 8 --tp 8 --async-tp --seq-len 1001".split()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "seq_len=1001 is not divisible by tp=8" in err and "M must be" not in err


# ---- 5. convert=None: the Linears eligible after TP sharding -------------------------------------


def _odd(**kw):
    base = dict(layers=4, gpu="H200", n_gpus=8, tp=2, recipe="tensorwise", seq_len=4096, batch_per_gpu=1)
    return train.estimate(ODD_FFN, **{**base, **kw})


def test_default_convert_leaves_out_the_linears_sharding_makes_ineligible():
    est = _odd()
    assert est.config.converted == ("wq", "wk", "wv", "wo")  # w1, w3, w2 are 2056 wide on a rank: bf16
    assert "tensorwise on wq, wk, wv, wo," in est.table().splitlines()[0]
    assert float(est.step_s) == pytest.approx(float(_odd(convert=["qkv", "o"]).step_s), rel=1e-12)
    # unsharded, every Linear is eligible
    assert _odd(tp=1).config.converted == ("wq", "wk", "wv", "wo", "w1", "w3", "w2")


def test_explicit_convert_of_a_linear_ineligible_after_sharding_is_still_refused():
    with pytest.raises(IneligibleLinearError, match=r"w1 \(4096x2056\).*multiples of 16.*tp=2 ranks"):
        _odd(convert=["w13"])


def test_convert_auto_chooses_among_the_groups_eligible_after_sharding():
    est = _odd(convert="auto")
    assert set(est.config.converted) <= {"wq", "wk", "wv", "wo"}
    assert set(_odd(convert="auto", float8_all_gather=True).config.converted) <= {"wq", "wk", "wv", "wo"}


def test_train_params_and_huge_gpu_counts_get_named_errors():
    from perfmodel.errors import InvalidParallelismError, PerfModelError
    from perfmodel.train.config import MAX_GPUS

    kw = dict(gpu="H200", seq_len=8192, batch_per_gpu=1)
    with pytest.raises(PerfModelError, match="train_params must be a TrainParams"):
        train.estimate("llama3-8b", n_gpus=8, train_params={}, **kw)
    with pytest.raises(InvalidParallelismError, match="n_gpus must be at most"):
        train.estimate("llama3-8b", n_gpus=2 * MAX_GPUS, **kw)
    assert train.estimate("llama3-8b", n_gpus=2**20, **kw).step_s > 0  # a million GPUs still prices
