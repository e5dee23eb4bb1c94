"""Input validation of Linear shapes: ``perfmodel.step.module_filter`` (mappings, modules, ``head_dim``) and the
preset dataclasses (``LinearShape``, ``LayerShape``, ``ModelPreset``). Bad input is a named perfmodel error that
names the value and says what is valid; it is never truncated, rounded or passed on as a raw builtin error."""

import math
from fractions import Fraction

import numpy as np
import pytest

from perfmodel import step
from perfmodel.errors import InvalidShapeError, ModuleShapeError, PerfModelError
from perfmodel.presets import PRESETS, LayerShape, LinearShape, ModelPreset

D, F, Q, KV = 2048, 8192, 2048, 1024
BLOCK = {
    "attention.wq": (D, Q),
    "attention.wk": (D, KV),
    "attention.wv": (D, KV),
    "attention.wo": (Q, D),
    "feed_forward.w1": (D, F),
    "feed_forward.w3": (D, F),
    "feed_forward.w2": (F, D),
}
OPTS = dict(gpu="H200", seq_len=4096, batch=1, recipe="tensorwise")
WQ = "layers.0.attention.wq"


def _shapes(**over):
    shapes = {f"layers.{i}.{k}": v for i in range(2) for k, v in BLOCK.items()}
    return shapes | {k.replace("__", "."): v for k, v in over.items()}


class FakeLinear:
    def __init__(self, k, n) -> None:
        self.in_features, self.out_features = k, n


class FakeModel:
    """Duck-typed model: named_modules() over FakeLinears."""

    def __init__(self, shapes) -> None:
        self._mods = [(fqn, FakeLinear(*kn)) for fqn, kn in shapes.items()]

    def named_modules(self):
        return iter(self._mods)


# -- module_filter: a mapping fqn -> (in_features, out_features) ----------------------------------------------
BAD_PAIRS = [
    ((4096.9, 4096.9), r"in_features 4096\.9 is not a whole number"),
    ((2048, 2047.5), r"out_features 2047\.5 is not a whole number"),
    ((True, 2048), r"in_features True is a bool"),
    ((2048, np.bool_(True)), r"out_features True is a bool"),
    ((math.nan, 2048), r"in_features nan is not finite"),
    ((math.inf, 2048), r"in_features inf is not finite"),
    ((2048, -math.inf), r"out_features -inf is not finite"),
    ((np.float32("nan"), 2048), r"in_features .*nan.* is not finite"),
    ((0, 2048), r"in_features 0 is not positive"),
    ((-2048, 2048), r"in_features -2048 is not positive"),
    ((2048, 2**41), r"out_features 2199023255552 is above the largest size"),
    (("2048", "2048"), r"in_features '2048' is a str"),
    ((Fraction(4096, 1), 4096), r"in_features Fraction\(4096, 1\) is a Fraction"),
    ((None, 2048), r"in_features None is a NoneType"),
    ((2048, 2048, 1), r"3 values, not 2"),
    ((2048,), r"1 values, not 2"),
    (2048, r"got int, not an \(in_features, out_features\) pair"),
    ("2048x2048", r"got str, not an \(in_features, out_features\) pair"),
    ({2048, 1024}, r"got set, not an \(in_features, out_features\) pair"),
    (None, r"got NoneType, not an \(in_features, out_features\) pair"),
    (np.array([[2048, 2048]]), r"got ndarray, not an \(in_features, out_features\) pair"),
]


@pytest.mark.parametrize(("shape", "problem"), BAD_PAIRS, ids=[repr(s) for s, _ in BAD_PAIRS])
def test_mapping_shape_is_refused_by_name(shape, problem):
    with pytest.raises(ModuleShapeError, match=rf"Linear '{WQ}' -> .*{problem}.*two positive integers") as err:
        step.module_filter(_shapes(layers__0__attention__wq=shape), head_dim=128, **OPTS)
    assert "(in_features, out_features)" in str(err.value)
    assert isinstance(err.value, PerfModelError) and isinstance(err.value, ValueError)


def test_mapping_shape_never_truncated():
    """The audit's case: 4096.9 was read as 4096 and (True, 4096) as in_features 1 — now both are errors."""
    bad = {f"layers.0.{k}": (4096.9, 4096.9) if k == "attention.wq" else v for k, v in BLOCK.items()}
    with pytest.raises(ModuleShapeError, match="not a whole number"):
        step.module_filter(bad, head_dim=128, **OPTS)
    bad["layers.0.attention.wq"] = (True, 4096)
    with pytest.raises(ModuleShapeError, match="is a bool"):
        step.module_filter(bad, head_dim=128, **OPTS)


def _as(kind, shapes):
    return {fqn: tuple(kind(x) for x in kn) for fqn, kn in shapes.items()}


@pytest.mark.parametrize(
    "convert",
    [
        lambda s: _as(float, s),
        lambda s: _as(np.int64, s),
        lambda s: _as(np.int32, s),
        lambda s: _as(np.float64, s),
        lambda s: {fqn: list(kn) for fqn, kn in s.items()},
        lambda s: {fqn: np.array(kn) for fqn, kn in s.items()},
    ],
    ids=["float", "int64", "int32", "np.float64", "list", "ndarray"],
)
def test_mapping_accepts_whole_numbers_with_the_same_answer(convert):
    ints = step.module_filter(_shapes(), head_dim=128, **OPTS)
    other = step.module_filter(convert(_shapes()), head_dim=128, **OPTS)
    assert other.decisions == ints.decisions and other.skipped == ints.skipped
    lay = LayerShape(name="d2048", hidden=D, ffn=F, heads=16, kv_heads=8)
    assert ints.groups == step.best_convert(lay, **OPTS)
    for canon, (k, n) in BLOCK.items():
        assert other(FakeLinear(k, n), f"layers.1.{canon}") is ints(FakeLinear(k, n), f"layers.1.{canon}")
        assert other(FakeLinear(float(k), np.int64(n)), f"layers.1.{canon}") is ints(
            FakeLinear(k, n), f"layers.1.{canon}"
        )


def test_mapping_block_whose_linears_do_not_fit_together():
    with pytest.raises(ModuleShapeError, match=r"block 'layers.0': wo is 2048x4096, .* has wo 2048x2048"):
        step.module_filter(_shapes(layers__0__attention__wo=(Q, 2 * D)), head_dim=128, **OPTS)
    with pytest.raises(ModuleShapeError, match=r"block 'layers.1': w3 is 2048x4096, .* has w3 2048x8192"):
        step.module_filter(_shapes(layers__1__feed_forward__w3=(D, F // 2)), head_dim=128, **OPTS)
    with pytest.raises(ModuleShapeError, match=r"block 'layers.0': wv is 1024x1024"):
        step.module_filter(_shapes(layers__0__attention__wv=(KV, KV)), head_dim=128, **OPTS)


# -- module_filter: modules (duck-typed and the filter's own check) --------------------------------------------
@pytest.mark.parametrize(
    ("k", "problem"),
    [
        (2048.9, r"in_features 2048\.9 is not a whole number"),
        (True, r"in_features True is a bool"),
        (math.nan, r"in_features nan is not finite"),
        (math.inf, r"in_features inf is not finite"),
        (0, r"in_features 0 is not positive"),
        ("2048", r"in_features '2048' is a str"),
    ],
)
def test_module_shape_is_refused_by_name(k, problem):
    model = FakeModel(_shapes(layers__0__attention__wq=(k, Q)))
    with pytest.raises(ModuleShapeError, match=rf"cannot read the shape of '{WQ}' \(FakeLinear\): {problem}"):
        step.module_filter(model, head_dim=128, **OPTS)
    flt = step.module_filter("llama3-8b", **OPTS)
    with pytest.raises(ModuleShapeError, match=rf"cannot read the shape of '{WQ}' \(FakeLinear\): {problem}"):
        flt(FakeLinear(k, 4096), WQ)


def test_module_path_with_whole_floats_and_numpy_ints_is_unchanged():
    ints = step.module_filter(FakeModel(_shapes()), head_dim=128, **OPTS)
    floats = step.module_filter(FakeModel(_as(float, _shapes())), head_dim=128, **OPTS)
    nps = step.module_filter(FakeModel(_as(np.int64, _shapes())), head_dim=np.int64(128), **OPTS)
    mapping = step.module_filter(_shapes(), head_dim=128, **OPTS)
    assert ints.decisions == floats.decisions == nps.decisions == mapping.decisions
    flt = step.module_filter("llama3-8b", **OPTS)
    assert flt(FakeLinear(4096.0, np.int64(4096)), WQ) is flt(FakeLinear(4096, 4096), WQ)


class WeightOnly:
    def __init__(self, *shape) -> None:
        self.weight = type("W", (), {"shape": shape})()


def test_weight_shape_path():
    """A module without in_features/out_features is read from ``weight.shape`` ([out, in]), checked the same way."""
    from perfmodel.step.filter import _shape

    assert _shape(WeightOnly(14336, 4096), "w1") == (4096, 14336)
    assert _shape(WeightOnly(np.int64(14336), 4096.0), "w1") == (4096, 14336)
    with pytest.raises(ModuleShapeError, match="neither in_features/out_features nor a 2-d weight"):
        _shape(WeightOnly(4096, 4096, 1), "w1")
    with pytest.raises(ModuleShapeError, match=r"cannot read the shape of 'w1' \(WeightOnly\): in_features 0 is not"):
        _shape(WeightOnly(4096, 0), "w1")


# -- module_filter: head_dim -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("head_dim", "problem"),
    [
        (0, "0 is not positive"),
        (-128, "-128 is not positive"),
        (128.5, r"128\.5 is not a whole number"),
        (True, "True is a bool"),
        (math.nan, "nan is not finite"),
        ("128", "'128' is a str"),
    ],
)
def test_head_dim_is_refused_by_name(head_dim, problem):
    for model in (_shapes(), FakeModel(_shapes())):
        with pytest.raises(InvalidShapeError, match=rf"module_filter: head_dim {problem}.*positive integer"):
            step.module_filter(model, head_dim=head_dim, **OPTS)


def test_whole_float_head_dim_gives_the_same_answer():
    want = step.module_filter(_shapes(), head_dim=128, **OPTS).decisions
    assert step.module_filter(_shapes(), head_dim=128.0, **OPTS).decisions == want
    assert step.module_filter(FakeModel(_shapes()), head_dim=np.int32(128), **OPTS).decisions == want


class Config:
    head_dim = 128.5


def test_config_head_dim_is_checked():
    model = FakeModel(_shapes())
    model.config = Config()
    with pytest.raises(ModuleShapeError, match=r"FakeModel: config.head_dim 128\.5 is not a whole number"):
        step.module_filter(model, **OPTS)
    Config.head_dim = 128.0
    assert step.module_filter(model, **OPTS).decisions == step.module_filter(_shapes(), head_dim=128, **OPTS).decisions


# -- LinearShape -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(in_features=0), r"LinearShape 'x': in_features must be a positive int, got 0"),
        (dict(out_features=-4), r"out_features must be a positive int, got -4"),
        (dict(in_features=True), r"in_features must be a positive int, got True"),
        (dict(in_features=4.0), r"in_features must be a positive int, got 4\.0"),
        (dict(in_features="4"), r"in_features must be a positive int, got '4'"),
        (dict(count=False), r"count must be a positive int, got False"),
        (dict(layers=True), r"layers must be a positive int or None .*got True"),
        (dict(layers=0), r"layers must be a positive int or None .*got 0"),
        (dict(layers=1.5), r"layers must be a positive int or None .*got 1\.5"),
        (dict(token_fraction="a"), r"token_fraction must be a number in \(0, 1\] .*got 'a'"),
        (dict(token_fraction=math.nan), r"token_fraction must be a number in \(0, 1\] .*got nan"),
        (dict(token_fraction=True), r"token_fraction must be a number in \(0, 1\] .*got True"),
        (dict(token_fraction=0), r"token_fraction must be a number in \(0, 1\] .*got 0"),
        (dict(token_fraction=1.5), r"token_fraction must be a number in \(0, 1\] .*got 1\.5"),
        (dict(token_fraction=None), r"token_fraction must be a number in \(0, 1\] .*got None"),
        (dict(name=""), r"LinearShape needs a name \(a non-empty string\), got ''"),
        (dict(name=3), r"LinearShape needs a name \(a non-empty string\), got 3"),
    ],
)
def test_linear_shape_refuses_bad_fields(kwargs, match):
    with pytest.raises(InvalidShapeError, match=match):
        LinearShape(**(dict(name="x", in_features=4, out_features=4) | kwargs))


def test_linear_shape_valid_paths_unchanged():
    lin = LinearShape(name="e", in_features=4096, out_features=14336, count=8, layers=3, token_fraction=2 / 8)
    assert (lin.in_features, lin.out_features, lin.count, lin.layers, lin.token_fraction) == (4096, 14336, 8, 3, 0.25)
    assert lin.tokens(8192) == 2048 and lin.tokens(3) == 1 and lin.tokens(np.int64(8192)) == 2048
    assert LinearShape(name="x", in_features=4, out_features=4, token_fraction=Fraction(1, 4)).token_fraction == 0.25
    assert LinearShape(name="x", in_features=4, out_features=4, token_fraction=np.float64(0.5)).tokens(10) == 5


@pytest.mark.parametrize("tokens", [math.nan, math.inf, 0, -1, True, "8192", None, 10**400])
def test_linear_shape_tokens_refuses_bad_counts(tokens):
    lin = LinearShape(name="x", in_features=4, out_features=4)
    with pytest.raises(InvalidShapeError, match=r"LinearShape 'x': tokens must be a positive number"):
        lin.tokens(tokens)


# -- ModelPreset -----------------------------------------------------------------------------------------------
LIN = (LinearShape(name="x", in_features=4, out_features=4),)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(layers=0), r"ModelPreset 'm': layers must be a positive int, got 0"),
        (dict(layers=True), r"ModelPreset 'm': layers must be a positive int, got True"),
        (dict(layers=2.0), r"ModelPreset 'm': layers must be a positive int, got 2\.0"),
        (dict(linears=()), r"ModelPreset 'm': no linears"),
        (dict(linears=None), r"linears must be a sequence of LinearShape, got None"),
        (dict(linears="q_proj"), r"linears must be a sequence of LinearShape, got 'q_proj'"),
        (dict(linears=("x",)), r"linears must all be LinearShape, got 'x'"),
        (dict(linears=((4, 4),)), r"linears must all be LinearShape, got \(4, 4\)"),
        (
            dict(linears=(LinearShape(name="y", in_features=4, out_features=4, layers=3),)),
            r"'y' is in 3 layers, but the model has only 2",
        ),
        (dict(source=""), r"source is required, a non-empty string"),
        (dict(source=5), r"source is required, a non-empty string .*got 5"),
        (dict(notes=None), r"notes must be a string; got None"),
        (dict(layer_note=1), r"layer_note must be a string; got 1"),
        (dict(layer="llama"), r"layer must be a LayerShape or None, got 'llama'"),
        (dict(name=""), r"ModelPreset needs a name \(a non-empty string\), got ''"),
        (dict(name=None), r"ModelPreset needs a name \(a non-empty string\), got None"),
    ],
)
def test_model_preset_refuses_bad_fields(kwargs, match):
    with pytest.raises(InvalidShapeError, match=match):
        ModelPreset(**(dict(name="m", layers=2, linears=LIN, source="s") | kwargs))


def test_model_preset_valid_paths_unchanged():
    p = ModelPreset(name="m", layers=2, linears=list(LIN), source="s")
    assert p.linears == LIN and p.layer is None and p.total_count(LIN[0]) == 2 and p.shapes() == [(4, 4)]
    assert ModelPreset(name="m", layers=2, linears=(lin for lin in LIN), source="s").linears == LIN
    llama = PRESETS["llama3-8b"]
    assert llama.shapes()[:3] == [(4096, 4096), (4096, 1024), (4096, 1024)] and llama.layers == 32
    mixtral = PRESETS["mixtral-8x7b"]
    expert = next(lin for lin in mixtral.linears if lin.name == "experts.w1")
    assert expert.token_fraction == 0.25 and mixtral.total_count(expert) == 256 and expert.tokens(8192) == 2048


def test_layer_shape_source_must_be_text():
    with pytest.raises(InvalidShapeError, match=r"LayerShape 'a': source must be a string; got 5"):
        LayerShape(name="a", hidden=2048, ffn=8192, heads=16, source=5)
    assert LayerShape(name="a", hidden=2048, ffn=8192, heads=16, source="x").source == "x"
