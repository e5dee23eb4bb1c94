"""The torchao code that enables a recipe on a model (public: :func:`perfmodel.report.torchao_code`).

The report and the ``perfmodel float8`` command print it under their recommendation. It is written
for torchao :data:`TORCHAO_VERSION` (``tests/test_torchao_code.py`` runs it against the installed
torchao on CPU, where conversion needs no float8 GEMM):

* ``tensorwise``, ``rowwise``, ``rowwise_with_gw_hp``: ``convert_to_float8_training(model,
  config=Float8LinearConfig.from_recipe_name(name), module_filter_fn=...)`` (``torchao.float8``;
  the recipe names date from pytorch/ao#1731, February 2025);
* ``mxfp8``: ``quantize_(model, MXFP8TrainingOpConfig.from_recipe(MXFP8TrainingRecipe.MXFP8_RCEIL),
  filter_fn=...)`` from torchao's MX training prototype (``torchao.prototype.moe_training.config``;
  prototype names change between releases). Its ``filter_fn(module, fqn)`` has the signature of
  ``module_filter_fn``, so :func:`perfmodel.float8.module_filter` is passed as it is.

``dynamic`` and ``delayed`` (the original 2024 model's recipes) and ``blockwise`` get no code: torchao
no longer offers the first two, and its blockwise prototype needs more than the filter checks.
"""

from __future__ import annotations

import json
import numbers
import re
from collections.abc import Mapping
from typing import Any

from .._backend import time_model_arg
from ..errors import PerfModelError
from .recipes import get_recipe

__all__ = ["TORCHAO_VERSION", "torchao_code", "torchao_missing_reason"]

#: The torchao release the printed code is written for and tested against.
TORCHAO_VERSION = "0.18"

#: torchao's ``Float8LinearRecipeName`` values (``torchao.float8.config``), by perfmodel recipe.
_FLOAT8_LINEAR = {"tensorwise": "tensorwise", "rowwise": "rowwise", "rowwise_with_gw_hp": "rowwise_with_gw_hp"}
#: torchao's ``MXFP8TrainingRecipe`` member (``torchao.prototype.moe_training.config``), by perfmodel recipe.
_MX_TRAINING = {"mxfp8": "MXFP8_RCEIL"}

_MISSING = {
    "dynamic": (
        "'dynamic' prices the original 2024 model's per-tensor dynamic scaling (perfmodel.compat); torchao's "
        "form of it today is the 'tensorwise' recipe, whose casts cost differently: compare with recipe "
        "'tensorwise' to get code"
    ),
    "delayed": (
        "'delayed' (delayed scaling with an amax history, the 2024 model) was removed from torchao in 0.10 "
        "(pytorch/ao#1753): compare with recipe 'tensorwise' (dynamic scaling) to get code"
    ),
    "blockwise": (
        "torchao has no Float8LinearConfig recipe for 1x128 / 128x128 blockwise scaling; its prototype "
        f"(torchao.prototype.blockwise_fp8_training in torchao {TORCHAO_VERSION}) needs SM90, Linears without "
        "bias and in/out features that are multiples of 128, which perfmodel's filter does not check"
    ),
}

#: ``module_filter`` keywords the code carries, with the default it leaves out.
_FILTER_OPTIONS: dict[str, Any] = {
    "min_speedup": 1.0,
    "exclude": (),
    "dynamic_shapes": False,
    "fuse_input_with_prev": False,
    "fuse_grad_output_with_prev": False,
    "cache_weight_cast": False,
    "time_model": None,
}


def torchao_missing_reason(recipe: str) -> str:
    """Why torchao has no code for ``recipe`` (``""`` when :func:`torchao_code` writes some).

    Raises:
        UnknownRecipeError: ``recipe`` is not a perfmodel recipe.
    """
    name = get_recipe(recipe).name
    if name in _FLOAT8_LINEAR or name in _MX_TRAINING:
        return ""
    if name == "bf16":
        return "bf16 is the baseline: nothing to convert"
    return _MISSING.get(name, f"perfmodel does not know torchao's call for recipe {name!r}")


def _as_tuple(exclude: Any) -> tuple[Any, ...]:
    return (exclude,) if isinstance(exclude, (str, re.Pattern)) else tuple(exclude)


def _literal(value: Any) -> str:
    """A Python literal for ``value`` (strings in double quotes, as ruff formats them)."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, bool) or type(value).__name__ in ("bool", "bool_"):  # numpy bools too
        return repr(bool(value))
    if isinstance(value, numbers.Integral):
        return repr(int(value))
    if isinstance(value, numbers.Real):  # numpy floats print as plain floats
        return repr(float(value))
    return repr(value)


def torchao_code(
    recipe: str,
    gpu: str,
    tokens: int,
    options: Mapping[str, Any] | None = None,
    *,
    calibration_file: str | None = None,
) -> str | None:
    """Python code that converts the Linears of ``model`` (your ``nn.Module``) to ``recipe`` with torchao.

    Only the Linears :func:`perfmodel.float8.module_filter` selects are converted; its call carries
    ``gpu``, ``tokens``, ``recipe`` and every option of ``options`` that is not the default.

    Args:
        recipe: a perfmodel recipe name.
        gpu: the GPU's canonical name (``"H100-SXM"``).
        tokens: tokens per step each Linear sees.
        options: ``module_filter`` keywords: ``min_speedup``, ``exclude``, ``dynamic_shapes``,
            ``fuse_input_with_prev``, ``fuse_grad_output_with_prev``, ``cache_weight_cast``, ``time_model``
            (a time model name; ``model``, its deprecated old name, is read as it).
        calibration_file: your calibration JSON; the code then attaches it to the GPU, as the table did.

    Returns:
        The code, lines without indentation, for torchao :data:`TORCHAO_VERSION`; ``None`` when torchao
        has no such recipe (:func:`torchao_missing_reason` says why).

    Raises:
        UnknownRecipeError, PerfModelError (an option ``module_filter`` does not take).
    """
    name = get_recipe(recipe).name
    options = dict(options or {})
    if "model" in options:  # the time model's old keyword
        options["time_model"] = time_model_arg(options.get("time_model"), options.pop("model"), "torchao_code")
    unknown = sorted(set(options) - set(_FILTER_OPTIONS))
    if unknown:
        raise PerfModelError(
            f"unknown module_filter option(s) {', '.join(map(repr, unknown))}; valid: {', '.join(_FILTER_OPTIONS)}"
        )
    if name not in _FLOAT8_LINEAR and name not in _MX_TRAINING:
        return None
    exclude = _as_tuple(options.get("exclude", ()))
    regex = any(isinstance(e, re.Pattern) for e in exclude)
    stdlib = ["dataclasses"] * (calibration_file is not None) + ["re"] * regex
    lines = [*(f"import {m}" for m in stdlib), *([""] if stdlib else [])]
    if calibration_file is not None:
        lines += ["import perfmodel", "import perfmodel.float8", "from perfmodel.calibrate import load_calibration"]
    else:
        lines.append("import perfmodel.float8")
    if name in _FLOAT8_LINEAR:
        lines.append("from torchao.float8 import Float8LinearConfig, convert_to_float8_training")
    else:
        lines.append("from torchao.prototype.moe_training.config import MXFP8TrainingOpConfig, MXFP8TrainingRecipe")
        lines.append("from torchao.quantization import quantize_")
    lines.append("")
    if calibration_file is not None:
        spec = f"perfmodel.get_gpu({_literal(gpu)}), calibration=load_calibration({_literal(calibration_file)})"
        one_line = f"gpu = dataclasses.replace({spec})"
        lines += [one_line] if len(one_line) <= 100 else ["gpu = dataclasses.replace(", f"    {spec}", ")"]
    gpu_arg = "gpu" if calibration_file is not None else _literal(gpu)
    args = [f"gpu={gpu_arg}", f"tokens={int(tokens)}", f"recipe={_literal(name)}"]
    for key, default in _FILTER_OPTIONS.items():
        value = options.get(key, default)
        if key == "exclude":
            value = _as_tuple(value)
        if value != default:
            args.append(f"{key}={_literal(value)}")
    filt = f"perfmodel.float8.module_filter({', '.join(args)})"
    if len(filt) > 90:  # one keyword a line, as ruff would format it
        filt = "\n".join(["perfmodel.float8.module_filter(", *(f"        {a}," for a in args), "    )"])
    if name in _FLOAT8_LINEAR:
        lines += [
            "convert_to_float8_training(",
            "    model,",
            f"    config=Float8LinearConfig.from_recipe_name({_literal(_FLOAT8_LINEAR[name])}),",
            f"    module_filter_fn={filt},",
            ")",
        ]
    else:
        lines += [
            "quantize_(",
            "    model,",
            f"    MXFP8TrainingOpConfig.from_recipe(MXFP8TrainingRecipe.{_MX_TRAINING[name]}),",
            f"    filter_fn={filt},",
            ")",
        ]
    return "\n".join(lines)
