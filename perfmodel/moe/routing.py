"""What an MoE block routes: the block's shape from a preset or a config, and rows per expert — balanced, a named
skew, or the user's count vector — padded to the kernels' group alignment (used by :mod:`perfmodel.moe.block`)."""

from __future__ import annotations

import numbers
import random
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import InvalidShapeError, NoClosedFormError
from ..presets import ModelPreset, MoEShape, get_preset

__all__ = ["as_moe_shape", "block_group_sizes", "check_tokens", "expert_counts", "skewed_counts"]


def as_moe_shape(config: Any) -> MoEShape:
    """An :class:`~perfmodel.presets.MoEShape` from a preset name or :class:`ModelPreset` with an MoE block, a
    ``MoEShape``, or a mapping / object with ``dim``, ``moe_inter`` (or ``inter``), ``experts``, ``top_k`` and
    optionally ``shared_inter`` (total shared width), ``router`` (or ``score_func``), ``name``.

    Raises:
        UnknownPresetError: a name that is not a preset. InvalidShapeError: a dense preset, or bad fields.
    """
    if isinstance(config, MoEShape):
        return config
    if isinstance(config, (str, ModelPreset)):
        preset = get_preset(config)
        if preset.moe is None:
            from ..presets import moe_presets

            raise InvalidShapeError(
                f"{preset.name} is a dense model (no MoE block); perfmodel.moe prices MoE presets: "
                f"{', '.join(moe_presets())}, or a MoEShape"
            )
        return preset.moe
    get = config.get if isinstance(config, Mapping) else (lambda k, d=None: getattr(config, k, d))
    inter = get("moe_inter", get("inter"))
    shared = get("shared_inter", 0) or 0
    fields = {
        "name": str(get("name", "custom")),
        "dim": get("dim"),
        "moe_inter": inter,
        "experts": get("experts"),
        "top_k": get("top_k"),
        "shared_experts": 1 if shared else 0,
        "shared_inter": shared,
        "router": get("router", get("score_func", "softmax")),
        "source": str(get("source", "") or "user-supplied"),
        "router_experts": get("router_experts", None),
    }
    if any(fields[k] is None for k in ("dim", "moe_inter", "experts", "top_k")):
        raise InvalidShapeError(
            "an MoE config needs dim, moe_inter (or inter), experts and top_k; got "
            f"{ {k: fields[k] for k in ('dim', 'moe_inter', 'experts', 'top_k')} }"
        )
    return MoEShape(**fields)


def check_tokens(tokens: Any) -> int:
    """``tokens`` (tokens per step on this GPU) as an int, or a named error (sympy: no closed form)."""
    if type(tokens).__module__.startswith("sympy"):
        raise NoClosedFormError(
            "expert_block_time has no closed form in symbolic tokens (padding maxima, the kernel switch and the "
            "static last group); use pm.moe.grouped_gemm_time_s_balanced for one grouped GEMM, or numbers"
        )
    if isinstance(tokens, bool) or not isinstance(tokens, numbers.Real) or not float(tokens).is_integer() or tokens < 1:
        raise InvalidShapeError(f"tokens must be a whole number >= 1 (tokens per step on this GPU), got {tokens!r}")
    return int(tokens)


def skewed_counts(tokens: int, experts: int, top_k: int, skew: Any) -> np.ndarray:
    """Rows per expert (int64, sums to ``tokens * top_k``, each at most ``tokens``: a token picks distinct experts)
    for a named skew: ``("dirichlet", alpha, seed)`` — expert popularity drawn as our bench draws it
    (``random.Random(seed).gammavariate(alpha, 1)``, normalised; :func:`perfmodel.bench.moe_block.dirichlet_weights`)
    — or ``("zipf", s)`` — popularity ``1 / rank**s``. The expected counts are rounded by largest remainder.

    Raises:
        InvalidShapeError: an unknown skew name, a non-positive alpha or s.
    """
    if not isinstance(skew, (tuple, list)) or not skew or skew[0] not in ("dirichlet", "zipf"):
        raise InvalidShapeError(f"skew must be ('dirichlet', alpha, seed) or ('zipf', s), got {skew!r}")
    if skew[0] == "dirichlet":
        if len(skew) != 3 or not isinstance(skew[1], numbers.Real) or not skew[1] > 0:
            raise InvalidShapeError(f"('dirichlet', alpha, seed) needs alpha > 0 and an int seed, got {skew!r}")
        rng = random.Random(skew[2])
        w = np.array([rng.gammavariate(float(skew[1]), 1.0) for _ in range(experts)])
    else:
        if len(skew) != 2 or not isinstance(skew[1], numbers.Real) or not skew[1] > 0:
            raise InvalidShapeError(f"('zipf', s) needs s > 0, got {skew!r}")
        w = 1.0 / np.arange(1, experts + 1, dtype=float) ** float(skew[1])
    return _round_capped(w / w.sum(), tokens * top_k, tokens)


def _round_capped(w: np.ndarray, total: int, cap: int) -> np.ndarray:
    """Largest-remainder rounding of ``total * w`` with every entry <= ``cap`` (water-filling the excess)."""
    x = total * w
    for _ in range(w.size):
        over = x > cap
        if not over.any():
            break
        excess = float((x[over] - cap).sum())
        x[over] = cap
        free = ~over & (x < cap)
        x[free] += excess * x[free] / x[free].sum() if x[free].sum() > 0 else excess / max(int(free.sum()), 1)
    base = np.floor(x).astype(np.int64)
    short = total - int(base.sum())
    order = np.argsort(-(x - base), kind="stable")
    for i in order:
        if short <= 0:
            break
        if base[i] < cap:
            base[i] += 1
            short -= 1
    return base


def expert_counts(counts: Any, skew: Any, tokens: int, moe: MoEShape) -> np.ndarray:
    """Rows per routed expert: ``counts`` checked, a ``skew`` drawn, or balanced (neither given)."""
    E, k = moe.experts, moe.top_k
    if counts is not None and skew is not None:
        raise InvalidShapeError("pass counts= (the per-expert vector) or skew= (a named skew), not both")
    if skew is not None:
        return skewed_counts(tokens, E, k, skew)
    if counts is None:
        q, r = divmod(tokens * k, E)
        out = np.full(E, q, dtype=np.int64)
        out[:r] += 1
        return out
    try:
        a = np.asarray(counts)
    except ValueError:
        a = None
    if a is None or a.dtype == object or a.ndim != 1:
        raise InvalidShapeError("counts must be a 1-D vector of whole numbers, one per routed expert")
    if a.size != E:
        raise InvalidShapeError(f"counts has {a.size} entries but the block has {E} routed experts (G must equal E)")
    if a.dtype == bool or not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)):
        raise InvalidShapeError(f"counts must be whole numbers, got dtype {a.dtype}")
    if np.issubdtype(a.dtype, np.floating) and (not np.all(np.isfinite(a)) or np.any(a != np.round(a))):
        raise InvalidShapeError("counts must be whole numbers of rows; a fractional or non-finite one was given")
    if np.any(a < 0):
        raise InvalidShapeError(f"counts must be >= 0 rows each, got {a.min()}")
    a = a.astype(np.int64)
    if int(a.sum()) != tokens * k:
        raise InvalidShapeError(
            f"counts sum to {int(a.sum())}, but tokens * top_k = {tokens} * {k} = {tokens * k} routed rows: "
            "each token is routed to exactly top_k experts"
        )
    if int(a.max()) > tokens:
        raise InvalidShapeError(
            f"an expert has {int(a.max())} rows but there are only {tokens} tokens (a token picks distinct experts)"
        )
    return a


def block_group_sizes(counts: Any, align: int, *, static_rows: bool = True) -> np.ndarray:
    """Rows per group the expert GEMMs run: ``max(round_up(n, align), align)`` per expert; with ``static_rows``
    the last group also takes the static remainder up to ``round_up(sum(counts) + E*align, align)``."""
    c = np.asarray(counts, dtype=np.int64)
    g = np.maximum(-(-c // align) * align, align)
    if static_rows:
        total = -(-(int(c.sum()) + c.size * align) // align) * align
        g[-1] += total - int(g.sum())
    return g
