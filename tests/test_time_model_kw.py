"""``time_model=`` wherever a time model is chosen (issue 32, item 2): the old ``model=`` still works, warns a
DeprecationWarning naming the new keyword and answers the same; both at once is a named error; perfmodel's own
callers use the new keyword (no DeprecationWarning raised from inside perfmodel)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import perfmodel as pm
import perfmodel.float8 as f8
from perfmodel._backend import time_model_arg
from perfmodel.errors import ConflictingArgumentsError, PerfModelError
from perfmodel.report import report

SHAPE = (8192, 4096, 14336)

#: (name, call taking the time-model keywords, how to compare two answers)
CALLS = [
    ("speedup", lambda **kw: f8.speedup(*SHAPE, "rowwise", "H100", **kw), float),
    ("should_use", lambda **kw: f8.should_use(*SHAPE, "rowwise", "H100", min_speedup=1.1, **kw), bool),
    ("best_recipe", lambda **kw: f8.best_recipe(*SHAPE, "H100", **kw), str),
    ("break_even_tokens", lambda **kw: f8.break_even_tokens(4096, 14336, "tensorwise", "H100", **kw), int),
    ("speedup_error_bar", lambda **kw: f8.speedup_error_bar("H100", **kw), repr),
    ("linear_time", lambda **kw: f8.linear_time(*SHAPE, "rowwise", "H100", **kw).total_s, float),
    ("gemm_time_s", lambda **kw: pm.gemm_time_s(*SHAPE, "bf16", "H100", **kw), float),
    ("gemm_perfdata", lambda **kw: pm.gemm_perfdata(*SHAPE, "bf16", "H100", **kw).time_s, float),
    ("gemm_error_bar", lambda **kw: pm.gemm_error_bar(*SHAPE, "bf16", "H200", **kw), repr),
    ("report", lambda **kw: report(["4096x14336"], tokens=8192, gpu="H100", **kw).rows[0].speedups, repr),
    (
        "module_filter",
        lambda **kw: f8.module_filter("H100", 8192, **kw).options["time_model"],
        repr,
    ),
]
IDS = [c[0] for c in CALLS]


@pytest.mark.parametrize(("name", "call", "as_"), CALLS, ids=IDS)
@pytest.mark.parametrize("value", ["roofline", "original"])
def test_the_old_keyword_warns_naming_the_new_one_and_answers_the_same(name, call, as_, value):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        new = call(time_model=value)
    with pytest.warns(DeprecationWarning, match=rf"{name}\(model=\.\.\.\) is deprecated.*time_model=") as rec:
        old = call(model=value)
    assert as_(old) == as_(new)
    assert all(w.filename == __file__ for w in rec if issubclass(w.category, DeprecationWarning)), (
        "the warning points at the caller's line"
    )


@pytest.mark.parametrize(("name", "call", "as_"), CALLS, ids=IDS)
def test_both_keywords_are_a_named_error(name, call, as_):
    with pytest.raises(ConflictingArgumentsError, match=rf"{name}: pass the time model once, as time_model="):
        call(time_model="roofline", model="roofline")


def test_the_default_differs_from_the_roofline_so_the_keyword_is_really_passed():
    default = float(f8.speedup(*SHAPE, "rowwise", "H100"))
    assert float(f8.speedup(*SHAPE, "rowwise", "H100", time_model="roofline")) != pytest.approx(default, rel=1e-3)
    peak = pm.get_gpu("H100").peak_flops_per_s("bf16")  # the original model: 60 % of the dense peak
    assert pm.gemm_time_s(*SHAPE, time_model="original") == pytest.approx(2 * np.prod(SHAPE) / (peak * 0.6), rel=1e-9)


def test_the_helper_is_one_rule():
    assert time_model_arg(None, None, "f") is None
    assert time_model_arg("tiles", None, "f") == "tiles"
    with pytest.warns(DeprecationWarning, match=r"f\(model=\.\.\.\)"):
        assert time_model_arg(None, "roofline", "f") == "roofline"
    with pytest.raises(ConflictingArgumentsError) as err:
        time_model_arg("roofline", "original", "f")
    assert isinstance(err.value, PerfModelError) and isinstance(err.value, TypeError)


def test_no_deprecation_warning_from_inside_perfmodel():
    """perfmodel's own callers (report and its step model, the filters, the printed torchao code, the CLI) pass
    the new keyword."""
    from perfmodel.cli import main

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        rep = report("llama3-8b", seq_len=4096, gpu="H200", time_model="roofline")
        assert rep.filter_options()["time_model"] == "roofline"
        filt = f8.module_filter(gpu="H200", tokens=4096, recipe="rowwise", **rep.filter_options())
        assert filt.options["time_model"] == "roofline"
        code = rep.torchao_code()
        assert 'time_model="roofline"' in code and " model=" not in code  # the printed code uses the new keyword
        assert f8.best_recipe(np.array([1024, 8192]), 4096, 4096, "H100", time_model="roofline").shape == (2,)
        for argv in (
            ["gemm", "4096", "4096", "4096", "--time-model", "roofline"],
            ["float8", "--shapes", "4096x14336", "--time-model", "roofline"],
            ["break-even", "4096x14336", "--time-model", "roofline"],
        ):
            try:
                code = main(argv)
            except SystemExit as exc:  # a verb that exits with its code
                code = exc.code
            assert code in (0, None), argv
