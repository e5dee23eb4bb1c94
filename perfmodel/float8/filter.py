"""torchao's ``module_filter_fn`` from perfmodel's decision (public: :func:`perfmodel.float8.module_filter`).

Fully-qualified names (fqns) are matched by whole dot-separated components: the pattern ``"lm_head"``
matches ``lm_head`` and ``model.lm_head`` but not ``lm_head_norm``; ``"layers.1"`` matches
``layers.1.attention.wq`` but not ``layers.12.attention.wq``. A compiled regular expression
(``re.compile(...)``) matches where ``pattern.search(fqn)`` does. A single string is one pattern.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Union

from .._backend import check_flag, check_ratio, check_size, short_repr
from ..errors import PerfModelError
from ..models.registry import ModelLike
from ..specs.gpu import GPULike, get_gpu
from .decide import should_use
from .linear import FP8_ALIGN, _linear_time
from .recipes import Recipe, get_recipe

__all__ = ["FqnPattern", "TokensLike", "fqn_matches", "module_filter"]

FqnPattern = Union[str, "re.Pattern[str]"]
TokensLike = Union[int, Mapping[Any, int], Callable[[str], int]]  # noqa: UP007


def _components(text: str) -> tuple[str, ...]:
    return tuple(part for part in text.split(".") if part)


def fqn_matches(pattern: FqnPattern, fqn: str) -> bool:
    """True when ``pattern`` matches the module name ``fqn``: a compiled regex by ``search``, a string by
    whole dot-separated components (a contiguous run of ``fqn``'s components equals the pattern's)."""
    if isinstance(pattern, re.Pattern):
        return pattern.search(fqn) is not None
    want, have = _components(pattern), _components(fqn)
    n = len(want)
    return n > 0 and any(have[i : i + n] == want for i in range(len(have) - n + 1))


def _patterns(name: str, value: Any) -> tuple[FqnPattern, ...]:
    """``exclude`` as a tuple of patterns: one string or regex is one pattern; else an iterable of them."""
    if isinstance(value, (str, re.Pattern)):
        items: list[Any] = [value]
    elif isinstance(value, Iterable):
        items = list(value)
    else:
        raise PerfModelError(
            f"{name} must be a module-name pattern, a compiled regex, or a list of them, got {short_repr(value)}"
        )
    for item in items:
        if not isinstance(item, (str, re.Pattern)) or (isinstance(item, str) and not _components(item)):
            raise PerfModelError(
                f"{name} entries must be non-empty module-name patterns ('lm_head', 'layers.1') or compiled "
                f"regexes, got {short_repr(item)}"
            )
    return tuple(items)


def _specificity(pattern: FqnPattern) -> tuple[int, int]:
    return (len(_components(pattern)), len(pattern)) if isinstance(pattern, str) else (0, len(pattern.pattern))


def _tokens_lookup(tokens: TokensLike) -> Callable[[str], int | None]:
    """Normalise ``module_filter``'s ``tokens`` to ``fqn -> tokens | None`` (checked values)."""
    if isinstance(tokens, Mapping):
        if not tokens:
            raise PerfModelError("tokens mapping is empty; give at least one 'module-name pattern': tokens entry")
        table: dict[Any, int] = {}
        for key, v in tokens.items():
            if key != "*":
                _patterns("a tokens mapping key", key)
            table[key] = int(check_size(f"tokens[{short_repr(key)}]", v))
        keys = sorted((k for k in table if k != "*"), key=_specificity, reverse=True)  # the most specific wins

        def lookup(fqn: str) -> int | None:
            return next((table[k] for k in keys if fqn_matches(k, fqn)), table.get("*"))

        return lookup
    if callable(tokens):

        def call(fqn: str) -> int:
            return int(check_size(f"tokens({fqn!r})", tokens(fqn)))

        return call
    value = int(check_size("tokens", tokens))
    return lambda fqn: value


def _is_linear(module: Any) -> bool:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(module, torch.nn.Module):
        return isinstance(module, torch.nn.Linear)  # subclasses too (torchao's Float8Linear)
    return hasattr(module, "in_features") and hasattr(module, "out_features")  # duck-typed stand-ins


def module_filter(
    gpu: GPULike = "H100",
    tokens: TokensLike = 8192,
    recipe: str | Recipe = "tensorwise",
    *,
    min_speedup: float = 1.0,
    exclude: FqnPattern | Iterable[FqnPattern] = (),
    dynamic_shapes: bool = False,
    fuse_input_with_prev: bool = False,
    fuse_grad_output_with_prev: bool = False,
    cache_weight_cast: bool = False,
    model: ModelLike = None,
) -> Callable[[Any, str], bool]:
    """A ``module_filter_fn(module, fqn) -> bool`` for torchao's ``convert_to_float8_training``.

    It converts an ``nn.Linear`` when ``should_use(tokens, in_features, out_features, ...)`` holds (so
    both feature sizes are multiples of 16, which float8 GEMM kernels need) and no pattern of
    ``exclude`` matches its fully-qualified name (whole dot-separated components, or a compiled regex:
    see the module doc). Other modules return ``False`` (torchao asks about every module; only Linears
    are swapped).

    ``tokens`` is the number of rows a Linear sees per step (batch × sequence length): one int for
    every layer, or per layer — a mapping from module-name patterns to tokens (the most specific
    matching key wins; layers no key matches use the ``"*"`` entry, else are not converted) or a
    callable ``fqn -> tokens``. Routed MoE experts see ``tokens · top_k / experts``. The cast options
    are those of :func:`perfmodel.float8.linear_time`.
    """
    spec, rec = get_gpu(gpu), get_recipe(recipe)
    min_speedup = check_ratio("min_speedup", min_speedup)
    tokens_of = _tokens_lookup(tokens)
    excluded = _patterns("exclude", exclude)
    opts = dict(
        dynamic_shapes=check_flag("dynamic_shapes", dynamic_shapes),
        fuse_input_with_prev=check_flag("fuse_input_with_prev", fuse_input_with_prev),
        fuse_grad_output_with_prev=check_flag("fuse_grad_output_with_prev", fuse_grad_output_with_prev),
        cache_weight_cast=check_flag("cache_weight_cast", cache_weight_cast),
        model=model,
    )
    _linear_time(FP8_ALIGN, FP8_ALIGN, FP8_ALIGN, rec, spec, **opts)  # fail now on an unsupported recipe/GPU
    cache: dict[tuple[int, int, int], bool] = {}

    def module_filter_fn(module: Any, fqn: str) -> bool:
        if not _is_linear(module) or any(fqn_matches(p, fqn) for p in excluded):
            return False
        k, n = int(module.in_features), int(module.out_features)
        m = tokens_of(fqn)
        if k % FP8_ALIGN or n % FP8_ALIGN or m is None:
            return False
        if (m, k, n) not in cache:
            cache[m, k, n] = should_use(m, k, n, rec, spec, min_speedup=min_speedup, **opts)
        return cache[m, k, n]

    label = tokens if isinstance(tokens, int) else "per-layer"
    module_filter_fn.__name__ = f"perfmodel_filter_{rec.name}_{spec.name}_{label}"
    return module_filter_fn
