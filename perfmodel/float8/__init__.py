"""float8 training of ``nn.Linear``: predicted fwd+bwd time per recipe, speedup, and the decision.

``linear_time(M, K, N, recipe)`` adds up the three GEMMs of a Linear's forward and backward
(see :mod:`perfmodel.float8.recipes` for shapes and the casting kernels each recipe launches), each
priced by the GPU's time model (:func:`perfmodel.models.registry.time_model`). The decision API compares a
recipe with the bf16 baseline on the same model. Every function takes ints, floats, numpy
arrays of any integer or float dtype (a whole grid of shapes in one call) or sympy expressions.

This module is the public face; the code lives in :mod:`perfmodel.float8.linear` (the Linear's time),
:mod:`perfmodel.float8.decide` (speedup, should_use, best_recipe, break-even) and :mod:`perfmodel.float8.filter`
(torchao's module filter). Shapes float8 cannot run (K or N not a multiple of 16) are answered as
"keep bf16": see :func:`eligible` and :mod:`perfmodel.float8.decide`.
"""

from __future__ import annotations

import sys
from typing import Any

from .decide import BREAK_EVEN_EXACT_UP_TO, best_recipe, break_even_tokens, should_use, speedup, speedup_error_bar
from .filter import (
    LLAMA_TP_PLAN,
    SHARDINGS,
    FilterDecision,
    Float8ModuleFilter,
    FqnPattern,
    TokensLike,
    current_gpu,
    fqn_matches,
    linear_filter,
    module_filter,
    preset_filters,
)
from .linear import FP8_ALIGN, GemmCall, KernelCall, LinearTime, eligible, linear_time, supported_recipes
from .published import KNOWN_WRONG, PublishedDisagreement, known_wrong
from .recipes import RECIPES, CastOptions, Recipe, get_recipe, recipe_names

__all__ = [
    "BREAK_EVEN_EXACT_UP_TO",
    "FP8_ALIGN",
    "KNOWN_WRONG",
    "LLAMA_TP_PLAN",
    "RECIPES",
    "SHARDINGS",
    "CastOptions",
    "FilterDecision",
    "Float8ModuleFilter",
    "FqnPattern",
    "GemmCall",
    "KernelCall",
    "LinearTime",
    "PublishedDisagreement",
    "Recipe",
    "TokensLike",
    "best_recipe",
    "break_even_tokens",
    "current_gpu",
    "eligible",
    "fqn_matches",
    "get_recipe",
    "known_wrong",
    "linear_filter",
    "linear_time",
    "module_filter",
    "preset_filters",
    "recipe_names",
    "report",
    "should_use",
    "speedup",
    "speedup_error_bar",
    "supported_recipes",
]


def __getattr__(name: str) -> Any:
    # ``perfmodel.float8.report`` is :func:`perfmodel.report.report`, which sits on the floor above (it prices
    # whole models with the functions here). The package face wires such names (``perfmodel._HANDED_ON``), so
    # importing float8 never imports the report: the layers stay one-way.
    if name == "report":
        return sys.modules[__name__.rpartition(".")[0]]._handed_on(__name__, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
