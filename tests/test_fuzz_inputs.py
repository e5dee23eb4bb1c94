"""Fuzz the public API's edges with bad input: every one must be refused with a named error (a
:class:`~perfmodel.errors.PerfModelError` subclass, which is also a TypeError/ValueError/LookupError/OSError
where that fits) — never a raw exception, never accepted with a NaN, an infinity or a silent answer.

Categories (issue 35): sizes (sympy nan/oo/zoo/I, huge ints, denormals, strings, containers, masked arrays, an
array mixed with a symbol, arrays that do not broadcast), options (recipes, min_speedup, max_tokens, dtype, gpu),
PerfData fields and ``meta``, Proton device metadata (``gpu_from_proton``, ``PerfData.from_proton_fields``:
clocks of 5e-324 or 10**400, bus width 1.5, bit width 16.5), ``proton.read`` arguments and files, calibration
files (absurd values, unknown keys, a ``gpu`` label of another GPU).

``python tests/test_fuzz_inputs.py`` prints the counts per outcome (refused / raw exception / accepted).
"""

from __future__ import annotations

import copy
import json
import sys
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import perfmodel as pm
from perfmodel import float8 as f8
from perfmodel.errors import PerfModelError

HERE = Path(__file__).parent
K_ = sp.Symbol("K", positive=True, integer=True)
H200_INFO = {"arch": "90", "bus_width": 6016, "clock_rate": 1980000, "memory_clock_rate": 3201000, "num_sms": 132}
SHIPPED = Path(pm.__file__).parent / "calibrations" / "h200.json"

#: sizes no formula may accept (M, K, N, tokens, seq_len)
BAD_SIZES = {
    "sympy.nan": sp.nan,
    "sympy.oo": sp.oo,
    "sympy.zoo": sp.zoo,
    "sympy.I": sp.I,
    "sympy 1/2": sp.Rational(1, 2),
    "sympy 0": sp.Integer(0),
    "sympy -4": sp.Integer(-4),
    "sympy relation": K_ > 3,
    "10**400": 10**400,
    "2**40+1": 2**40 + 1,
    "-1": -1,
    "0": 0,
    "0.5": 0.5,
    "5e-324": 5e-324,
    "nan": float("nan"),
    "inf": float("inf"),
    "str": "4096",
    "None": None,
    "list": [4096],
    "tuple": (4096,),
    "complex": 3 + 0j,
    "bool": True,
    "empty array": np.array([]),
    "nan array": np.array([np.nan]),
    "str array": np.array(["a"]),
    "object array": np.array([4096], dtype=object),
    "masked entry": np.ma.masked_array([4096.0, 4096.0], mask=[False, True]),
    "float16 inf": np.float16("inf"),
    "Decimal nan": Decimal("NaN"),
    "Fraction 1/2": Fraction(1, 2),
    "dict": {},
}


def _size_calls():
    ok = 4096
    return {
        "gemm_time_s M": lambda v: pm.gemm_time_s(v, ok, ok, "bf16", "H200"),
        "gemm_time_s K fp8": lambda v: pm.gemm_time_s(ok, v, ok, "fp8", "H200"),
        "gemm_flops N": lambda v: pm.gemm_flops(ok, ok, v),
        "gemm_bytes M": lambda v: pm.gemm_bytes(v, ok, ok),
        "speedup M": lambda v: f8.speedup(v, ok, ok, "tensorwise", "H200"),
        "should_use K": lambda v: f8.should_use(ok, v, ok, "tensorwise", "H200"),
        "linear_time N": lambda v: f8.linear_time(ok, ok, v, "rowwise", "H200"),
        "best_recipe M": lambda v: f8.best_recipe(v, ok, ok, "H200"),
        "break_even K": lambda v: f8.break_even_tokens(v, ok, "tensorwise", "H200", max_tokens=1 << 14),
        "layer_time seq_len": lambda v: pm.step.layer_time("llama3-8b", gpu="H200", seq_len=v),
        "train.estimate batch": lambda v: pm.train.estimate(
            "llama3-8b", gpu="H200", n_gpus=8, seq_len=4096, batch_per_gpu=v
        ),
    }


#: sizes that are valid times (PerfData.time_s is seconds, not a size)
VALID_TIMES = ("sympy 1/2", "0.5", "2**40+1", "Fraction 1/2")


def _combo_calls():
    a3, a4 = np.array([4096.0, 8192.0, 16.0]), np.array([16.0, 32.0, 48.0, 64.0])
    return {
        "array with symbol (gemm)": lambda: pm.gemm_time_s(a3, K_, 4096, "bf16", "H200"),
        "array with symbol (speedup)": lambda: f8.speedup(a3, K_, 4096, "tensorwise", "H200"),
        "array with symbol (flops)": lambda: pm.gemm_flops(a3, K_, 4096),
        "array with symbol (break-even)": lambda: f8.break_even_tokens(a3 * 0 + 4096, K_, "tensorwise", "H200"),
        "no broadcast (gemm)": lambda: pm.gemm_time_s(a3, a4, 4096, "bf16", "H200"),
        "no broadcast (speedup)": lambda: f8.speedup(a3, a4, 4096, "tensorwise", "H200"),
        "no broadcast (flops)": lambda: pm.gemm_flops(a3, a4, 4096),
        "no broadcast (break-even)": lambda: f8.break_even_tokens(a3 * 0 + 4096, a4, "tensorwise", "H200"),
        "no broadcast (PerfData)": lambda: pm.PerfData(time_s=a3 * 1e-3, flops=a4, bytes=1.0, dtype="bf16", gpu="H200"),
        "array with symbol (PerfData)": lambda: pm.PerfData(
            time_s=a3 * 1e-3, flops=K_, bytes=1.0, dtype="bf16", gpu="H200"
        ),
        "break-even masked output into speedup": lambda: f8.speedup(
            f8.break_even_tokens(np.array([4096, 4095]), 4096, "tensorwise", "H200", max_tokens=1 << 14),
            4096,
            4096,
            "tensorwise",
            "H200",
        ),
    }


def _option_calls():
    out = {}
    for name, v in {"int": 5, "list of int": [5], "unknown": ["nope"], "None in list": [None], "dict": {}}.items():
        out[f"best_recipe recipes={name}"] = lambda v=v: f8.best_recipe(4096, 4096, 4096, "H200", recipes=v)
    for name, v in {"nan": float("nan"), "inf": float("inf"), "-1": -1, "0": 0, "str": "1", "None": None}.items():
        out[f"should_use min_speedup={name}"] = lambda v=v: f8.should_use(4096, 4096, 4096, min_speedup=v)
        out[f"break_even min_speedup={name}"] = lambda v=v: f8.break_even_tokens(4096, 4096, min_speedup=v)
    for name, v in {"0": 0, "2.5": 2.5, "nan": float("nan"), "10**400": 10**400, "str": "x"}.items():
        out[f"break_even max_tokens={name}"] = lambda v=v: f8.break_even_tokens(4096, 4096, max_tokens=v)
    for name, v in {"int": 5, "unknown": "nope", "list": []}.items():
        out[f"gemm_time_s gpu={name}"] = lambda v=v: pm.gemm_time_s(4096, 4096, 4096, "bf16", v)
        out[f"gemm_time_s dtype={name}"] = lambda v=v: pm.gemm_time_s(4096, 4096, 4096, v, "H200")
        out[f"speedup recipe={name}"] = lambda v=v: f8.speedup(4096, 4096, 4096, v, "H200")
    return out


def _perfdata_calls():
    base = dict(time_s=1e-3, flops=1e12, bytes=1e9, dtype="bf16", gpu="H200")
    out = {}
    for field, values in {
        "flops": {"nan": float("nan"), "-1": -1, "10**400": 10**400, "str": "1", "masked": BAD_SIZES["masked entry"]},
        "bytes": {"inf": float("inf"), "sympy.nan": sp.nan, "None": None},
        "meta": {"int": 5, "list": [1, 2], "str": "x"},
        "label": {"int": 5, "None": None},
        "source": {"unknown": "guessed"},
        "dtype": {"unknown": "fp7", "int": 5},
        "gpu": {"unknown": "H900"},
    }.items():
        for name, v in values.items():
            out[f"PerfData {field}={name}"] = lambda field=field, v=v: pm.PerfData(**{**base, field: v})
    proton = dict(time=1e6, flops=1e12, bytes=1e9, bitwidth=16, device_type="CUDA", device_info=H200_INFO)
    for field, values in {
        "time": {"10**400": 10**400, "5e-324": 5e-324, "-1": -1, "nan": float("nan"), "str": "1", "None": None},
        "bitwidth": {"16.5": 16.5, "7": 7, "str": "16", "bool": True, "None": None},
        "flops": {"nan": float("nan")},
        "device_type": {"int": 5, "TPU": "TPU"},
    }.items():
        for name, v in values.items():
            out[f"from_proton_fields {field}={name}"] = lambda field=field, v=v: pm.PerfData.from_proton_fields(
                **{**proton, field: v}
            )
    return out


BAD_DEVICE_NUMBERS = {
    "5e-324": 5e-324,
    "10**400": 10**400,
    "1.5": 1.5,
    "-1": -1,
    "0": 0,
    "nan": float("nan"),
    "inf": float("inf"),
    "str": "1",
    "None": None,
    "bool": True,
}


def _device_calls():
    out = {}
    for key in ("num_sms", "clock_rate", "memory_clock_rate", "bus_width"):
        for name, v in BAD_DEVICE_NUMBERS.items():
            if name == "1.5" and key in ("clock_rate", "memory_clock_rate"):
                v = 1e-3  # fractional clocks are fine; 1e-3 kHz is not a clock
            info = {**H200_INFO, key: v}
            out[f"gpu_from_proton {key}={name}"] = lambda info=info: pm.gpu_from_proton("CUDA", info)
    out["gpu_from_proton bitwidth-like bus 16.5"] = lambda: pm.gpu_from_proton("CUDA", {**H200_INFO, "bus_width": 16.5})
    for name, v in {"int": 5, "None": None, "list": [], "str": "x"}.items():
        out[f"gpu_from_proton device_info={name}"] = lambda v=v: pm.gpu_from_proton("CUDA", v)
    for name, v in {"int": 5, "None": None, "TPU": "TPU"}.items():
        out[f"gpu_from_proton device_type={name}"] = lambda v=v: pm.gpu_from_proton(v, H200_INFO)
    for name, v in {"float": 9.5, "None": None, "empty": "", "unknown": "sm_999"}.items():
        out[f"gpu_from_proton arch={name}"] = lambda v=v: pm.gpu_from_proton("CUDA", {**H200_INFO, "arch": v})
    return out


def _profile(devices=None, metrics=None):
    kernel = {"time (ns)": 1000, "count": 1, "device_id": "0", "device_type": "CUDA", "flops16": 1e9, "bytes": 1e6}
    kernel.update(metrics or {})
    root = {"frame": {"name": "ROOT", "type": "function"}, "metrics": {}, "children": []}
    root["children"].append({"frame": {"name": "k", "type": "function"}, "metrics": kernel, "children": []})
    return [root, {"CUDA": {"0": {**H200_INFO, **(devices or {})}}}]


def _proton_calls(tmp: Path):
    from perfmodel.measured import proton

    out = {}
    for name, v in {"None": None, "int": 5, "list": ["a"], "bytes": b"x.hatchet", "folder": tmp}.items():
        out[f"proton.read({name})"] = lambda v=v: proton.read(v)
    out["proton.read(missing)"] = lambda: proton.read(tmp / "missing.hatchet")
    files = {
        "clock 5e-324": _profile({"clock_rate": 5e-324}),
        "memory clock 5e-324": _profile({"memory_clock_rate": 5e-324}),
        "clock 10**400": _profile({"clock_rate": 10**400}),
        "bus width 1.5": _profile({"bus_width": 1.5}),
        "num_sms 1e9": _profile({"num_sms": 10**9}),
        "time -1": _profile(metrics={"time (ns)": -1}),
        "count 1.5": _profile(metrics={"count": 1.5}),
        "flops 10**400": _profile(metrics={"flops16": 10**400}),
        "not a list": {"a": 1},
        "number": 5,
        "empty list": [],
    }
    for name, data in files.items():
        path = tmp / f"{name.replace(' ', '_').replace('*', '')}.hatchet"
        path.write_text(json.dumps(data))

        def call(path=path):  # reading may be lazy: ask for what a user asks for
            prof = proton.read(path)
            return [k.time_s for k in prof.kernels] + [prof.perfdata()]

        out[f"proton file {name}"] = call
    good = tmp / "good.hatchet"
    good.write_text(json.dumps(_profile()))
    out["Profile.perfdata pattern=5"] = lambda: proton.read(good).perfdata(5)
    out["Profile.perfdata pattern='('"] = lambda: proton.read(good).perfdata("(")
    out["Profile.perfdata gpu=5"] = lambda: proton.read(good).perfdata(gpu=5)
    return out


def _set(data, path, value):
    node = data
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value


_DELETE = object()


def _calibration_calls(tmp: Path):
    from perfmodel.models.calibrated import load_calibration

    base = json.loads(SHIPPED.read_text())
    first_cast = next(iter(base["casts"]))
    mutations = {
        "kernels.latency_s=1e308": (("kernels", "latency_s"), 1e308),
        "kernels.latency_s=-1": (("kernels", "latency_s"), -1),
        "kernels.launch_s=1": (("kernels", "launch_s"), 1.0),
        "kernels.bw_fraction=5e-324": (("kernels", "bw_fraction"), 5e-324),
        "gemm.bf16.latency_s=1e308": (("gemm", "bf16", "latency_s"), 1e308),
        "gemm.bf16.k_overhead=1e308": (("gemm", "bf16", "k_overhead"), 1e308),
        "gemm.bf16.rate_fraction=5e-324": (("gemm", "bf16", "rate_fraction"), 5e-324),
        "gemm.bf16.throttle_time_s=5e-324": (("gemm", "bf16", "throttle_time_s"), 5e-324),
        "gemm.bf16.throttle_gain=1e6": (("gemm", "bf16", "throttle_gain"), 1e6),
        "gemm.bf16.misaligned_factors=1e308": (("gemm", "bf16", "misaligned_factors"), [1e308, 1, 1]),
        "gemm.bf16.tile_m=1.5": (("gemm", "bf16", "tile_m"), 1.5),
        "gemm.bf16 unknown key": (("gemm", "bf16", "latency"), 1e-6),
        f"casts.{first_cast}.latency_s=1e308": (("casts", first_cast, "latency_s"), 1e308),
        f"casts.{first_cast} unknown key": (("casts", first_cast, "latency"), 1e-6),
        "casts unknown recipe": (("casts", "tensorwize"), base["casts"][first_cast]),
        "top-level unknown key": (("gemms",), {}),
        "gpu label of another GPU": (("gpu",), "B200"),
        "gpu label not a string": (("gpu",), 5),
        "reference.num_sms=1.5": (("reference", "num_sms"), 1.5),
        "reference.num_sms=10**400": (("reference", "num_sms"), 10**400),
        "reference.mem_bw=1e308": (("reference", "mem_bw_bytes_per_s"), 1e308),
        "reference unknown key": (("reference", "sms"), 132),
        "step_gemm_factors.bf16=1e308": (("step_gemm_factors", "bf16"), 1e308),
        "kernels missing": (("kernels",), _DELETE),
        "casts not an object": (("casts",), [1]),
    }
    out = {}
    for name, (path, value) in mutations.items():
        data = copy.deepcopy(base)
        _set(data, path, value)
        file = tmp / f"cal_{len(out)}.json"
        file.write_text(json.dumps(data))
        out[f"calibration {name}"] = lambda file=file: load_calibration(file)
    nan_file = tmp / "cal_nan.json"
    nan_file.write_text(SHIPPED.read_text().replace('"latency_s": ', '"latency_s": NaN, "x": ', 1))
    out["calibration NaN literal"] = lambda: load_calibration(nan_file)
    return out


def all_cases(tmp: Path) -> dict[str, object]:
    cases: dict[str, object] = {}
    for fn_name, fn in _size_calls().items():
        for v_name, v in BAD_SIZES.items():
            cases[f"{fn_name} = {v_name}"] = lambda fn=fn, v=v: fn(v)
    for v_name, v in BAD_SIZES.items():
        if v_name not in VALID_TIMES:
            cases[f"PerfData time_s = {v_name}"] = lambda v=v: pm.PerfData(
                time_s=v, flops=1.0, bytes=1.0, dtype="bf16", gpu="H200"
            )
    for group in (_combo_calls(), _option_calls(), _perfdata_calls(), _device_calls()):
        cases.update(group)
    cases.update(_proton_calls(tmp))
    cases.update(_calibration_calls(tmp))
    return cases


def _bad_number(x) -> bool:
    """True where ``x`` (a result, or a field of one) holds a NaN or an infinity."""
    if isinstance(x, (bool, str, type(None))):
        return False
    if isinstance(x, (int, float, np.generic, np.ndarray)):
        arr = np.asarray(x)
        return arr.dtype.kind in "fc" and not bool(np.all(np.isfinite(np.ma.getdata(arr))))
    if isinstance(x, sp.Basic):
        return x.has(sp.nan, sp.oo, -sp.oo, sp.zoo)
    for attr in ("total_s", "util", "step_s", "time_s"):
        if hasattr(type(x), attr) or attr in getattr(x, "__dict__", {}):
            try:
                if _bad_number(getattr(x, attr)):
                    return True
            except PerfModelError:
                pass
    if isinstance(x, (list, tuple)):
        return any(_bad_number(v) for v in x)
    return False


def outcome(call) -> tuple[str, str]:
    """``("refused" | "raw" | "accepted", detail)``."""
    try:
        result = call()
        nan = _bad_number(result)
    except PerfModelError as exc:
        return "refused", f"{type(exc).__name__}: {str(exc)[:120]}"
    except Exception as exc:
        return "raw", f"{type(exc).__name__}: {str(exc)[:160]}"
    return "accepted", ("NaN/inf in the result; " if nan else "") + repr(result)[:120]


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return all_cases(tmp_path_factory.mktemp("fuzz"))


def test_every_bad_input_is_refused_with_a_named_error(cases):
    bad = {}
    for name, call in cases.items():
        kind, detail = outcome(call)
        if kind != "refused":
            bad[name] = f"{kind}: {detail}"
    assert not bad, f"{len(bad)} of {len(cases)} bad inputs not refused:\n" + "\n".join(
        f"  {k}: {v}" for k, v in bad.items()
    )
    assert len(cases) > 400


def test_refusals_say_what_is_valid(cases):
    """A named error is not enough: the message names the value or the argument."""
    for name in (
        "gemm_time_s M = sympy.nan",
        "gpu_from_proton memory_clock_rate=5e-324",
        "calibration gpu label of another GPU",
    ):
        kind, detail = outcome(cases[name])
        assert kind == "refused" and len(detail) > 40, (name, detail)


@pytest.mark.parametrize(
    "call",
    [
        lambda: pm.gemm_time_s(2**40, 2**40, 2**40, "bf16", "H200"),
        lambda: pm.gemm_time_s(np.array([1, 2**40]), 16, 16, "fp8", "H200"),
        lambda: f8.speedup(np.array([1.0, 2.0**30]), 4096, 4096, "rowwise", "H200"),
        lambda: pm.gpu_from_proton("CUDA", {**H200_INFO, "clock_rate": 1e4}),
        lambda: pm.PerfData(time_s=1e-9, flops=0, bytes=0, dtype="bf16", gpu="H200").util,
    ],
)
def test_edges_that_are_valid_give_finite_answers(call):
    result = call()
    assert not _bad_number(result)


@pytest.mark.parametrize(
    "call",
    [
        lambda: pm.step.layer_time("llama3-8b", gpu="H200", seq_len=np.array([1024, 2048]), batch=np.array([1, 2, 3])),
        lambda: pm.train.estimate(
            "llama3-8b", gpu="H200", n_gpus=8, seq_len=np.array([1024, 2048]), batch_per_gpu=np.array([1, 2, 3])
        ),
    ],
)
def test_step_and_train_arrays_that_do_not_broadcast(call):
    assert outcome(call)[0] == "refused"


def test_calibration_checks_match_the_package():
    """The calibration file's cast names are the float8 recipes; the shipped calibration loads and every valid
    file perfmodel writes reads back (the range checks refuse nothing perfmodel fits)."""
    from perfmodel.models.calibrated import CAST_RECIPES, CalibratedModel, load_calibration

    assert set(CAST_RECIPES) == set(f8.RECIPES) - {"bf16"}
    model = load_calibration(SHIPPED)
    assert CalibratedModel.from_dict(json.loads(json.dumps(model.to_dict()))).to_dict() == model.to_dict()


def test_a_calibration_gpu_label_must_name_its_reference_gpu(tmp_path):
    from perfmodel.errors import CalibrationError
    from perfmodel.models.calibrated import load_calibration

    data = json.loads(SHIPPED.read_text())
    data["gpu"] = "h200"  # an alias of the reference GPU is fine
    (tmp_path / "ok.json").write_text(json.dumps(data))
    assert load_calibration(tmp_path / "ok.json").gpu == "h200"
    data["gpu"] = "H100"
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(CalibrationError, match="reference facts are those of 'H200'"):
        load_calibration(tmp_path / "bad.json")


def test_unknown_keys_are_named_with_the_valid_ones(tmp_path):
    from perfmodel.errors import CalibrationError
    from perfmodel.models.calibrated import load_calibration

    data = json.loads(SHIPPED.read_text())
    cast = next(iter(data["casts"]))
    data["casts"][cast]["latency"] = 1e-6
    (tmp_path / "c.json").write_text(json.dumps(data))
    with pytest.raises(CalibrationError, match=r"unknown key 'latency'; valid keys: activation_bw_fraction, latency_s"):
        load_calibration(tmp_path / "c.json")


def main() -> int:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        cases = all_cases(Path(tmp))
        counts: dict[str, int] = {"refused": 0, "raw": 0, "accepted": 0}
        for name, call in cases.items():
            kind, detail = outcome(call)
            counts[kind] += 1
            if kind != "refused" and "-v" in sys.argv:
                print(f"{kind:9s} {name}: {detail}")
    print(f"{len(cases)} bad inputs: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
