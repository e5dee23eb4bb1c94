"""The report's inputs: Linear shapes from text, a preset, a module or a list, grouped by (K, N, M)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from .._backend import check_size
from ..errors import InvalidShapeError, PerfModelError
from ..presets import ModelPreset, get_preset

__all__ = ["parse_shape"]

_SHAPE = re.compile(r"^\s*(\d+)\s*[xX×,]\s*(\d+)\s*$")


def parse_shape(text: str) -> tuple[int, int]:
    """``"4096x14336"`` (also ``X``, ``×`` or ``,``) -> ``(4096, 14336)``: (in_features K, out_features N).

    Raises:
        InvalidShapeError: with the text and the expected form.
    """
    m = _SHAPE.match(text) if isinstance(text, str) else None
    if m is None or int(m[1]) <= 0 or int(m[2]) <= 0:
        raise InvalidShapeError(
            f"bad Linear shape {text!r}: expected 'KxN' with positive integers, e.g. '4096x14336' "
            "(in_features x out_features)"
        )
    return int(m[1]), int(m[2])


def _fold(fqn: str) -> str:
    """``layers.3.attn.wq`` -> ``layers.*.attn.wq``: one name for a Linear repeated per layer/expert."""
    return re.sub(r"(?<=\.)\d+(?=\.|$)|^\d+(?=\.|$)", "*", fqn) or "(root)"


def _is_module(obj: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)


def _one_size(name: str, value: Any) -> int:
    """``value`` as one positive integer (:func:`check_size`'s rules); a report prices one configuration, so an
    array or a symbol is a named error."""
    v = check_size(name, value)
    if getattr(v, "ndim", 0) or (not isinstance(v, (int, float)) and not hasattr(v, "__index__")):
        raise PerfModelError(
            f"report prices one configuration: {name} must be one number, got {value!r}; for arrays or symbols "
            "use perfmodel.float8.linear_time or perfmodel.step.layer_time"
        )
    return int(v)


def _pair(name: str, value: Any) -> tuple[int, int]:
    if isinstance(value, str):
        return parse_shape(value)
    try:
        k, n = value
    except (TypeError, ValueError):
        raise InvalidShapeError(f"shape of {name!r} must be (K, N) or 'KxN', got {value!r}") from None
    return int(check_size(f"K of {name!r}", k)), int(check_size(f"N of {name!r}", n))


def _entries(obj: Any, tokens: int) -> tuple[str, list[tuple[str, int, int, int, int]]]:
    """``(title, [(name, K, N, M, count), ...])`` from any accepted input."""
    if isinstance(obj, str) and _SHAPE.match(obj):
        k, n = parse_shape(obj)
        return "1 shape", [(f"{k}x{n}", k, n, tokens, 1)]
    if isinstance(obj, (str, ModelPreset)):
        preset = get_preset(obj)
        return f"{preset.name} ({preset.layers} layers)", [
            (lin.name, lin.in_features, lin.out_features, lin.tokens(tokens), preset.total_count(lin))
            for lin in preset.linears
        ]
    from ..presets import LayerShape

    if isinstance(obj, LayerShape):
        return f"{obj.name} (one decoder layer)", [
            (lin.name, lin.in_features, lin.out_features, tokens, 1) for lin in obj.linears()
        ]
    if _is_module(obj):
        import torch

        found = [
            (_fold(fqn), int(m.in_features), int(m.out_features), tokens, 1)
            for fqn, m in obj.named_modules()
            if isinstance(m, torch.nn.Linear)
        ]
        if not found:
            raise PerfModelError(f"{type(obj).__name__} has no nn.Linear modules to analyse")
        return type(obj).__name__, found
    if isinstance(obj, Mapping):
        out = [(str(name), *_pair(str(name), v), tokens, 1) for name, v in obj.items()]
    elif isinstance(obj, Iterable) and not isinstance(obj, (str, bytes)):
        out = []
        for v in obj:
            k, n = _pair(str(v), v)
            out.append((f"{k}x{n}", k, n, tokens, 1))
    else:
        raise PerfModelError(
            f"cannot analyse {type(obj).__name__}: pass an nn.Module, a preset name or ModelPreset, a mapping "
            "name -> (K, N), or an iterable of (K, N) / 'KxN'"
        )
    if not out:
        raise PerfModelError("no Linear shapes given")
    return f"{len(out)} shape{'s' * (len(out) > 1)}", out


def _group(entries: list[tuple[str, int, int, int, int]]) -> list[tuple[tuple[str, ...], int, int, int, int]]:
    """Merge entries of identical ``(K, N, M)``: names joined in order (no repeats), counts summed."""
    groups: dict[tuple[int, int, int], tuple[list[str], int]] = {}
    for name, k, n, m, count in entries:
        names, total = groups.get((k, n, m), ([], 0))
        if name not in names:
            names.append(name)
        groups[k, n, m] = (names, total + count)
    return [(tuple(names), k, n, m, c) for (k, n, m), (names, c) in groups.items()]
