"""A group-aware ``module_filter_fn`` for torchao's ``convert_to_float8_training`` (public face:
:func:`perfmodel.step.module_filter`).

The decision is made per decoder layer by :func:`perfmodel.step.best_convert` — whole groups of Linears
that share an input (q/k/v; w1/w3) are converted together or not at all — and the filter answers torchao's
per-module question from it. Module names are read by the naming conventions of :mod:`perfmodel.step.names`
(torchtitan, Hugging Face); a torch module is only touched when you pass one.
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .._backend import MAX_SIZE, short_repr
from ..errors import InvalidShapeError, ModuleShapeError, PerfModelError, PerfModelWarning, UnknownLinearError
from ..float8.filter import current_gpu
from ..float8.recipes import Recipe, get_recipe
from ..models.registry import ModelLike
from ..presets import LayerShape, ModelPreset
from ..specs.gpu import GPULike
from .layer import best_convert, resolve_layer
from .names import CONVENTIONS, resolve_convert, split_fqn
from .params import LayerParams

__all__ = [
    "UNMATCHED_WARN_AFTER",
    "GroupFilter",
    "LayerGroupFilter",
    "choice_code",
    "layer_filter",
    "module_filter",
    "torchtitan_filter_fqns",
]

#: a layer-group filter that has seen this many Linears and matched none of them warns (PerfModelWarning): it is
#: applied to a model whose names it does not know (GPT-2, NeoX, ...) and would keep every Linear in bf16
UNMATCHED_WARN_AFTER = 8


#: what a Linear's shape must be, for the messages
_VALID_SHAPE = (
    "a Linear's shape is two positive integers, (in_features, out_features): int, numpy integer or a whole "
    "float such as 4096.0"
)


def _size_problem(value: Any) -> tuple[int, str]:
    """``(value as an int, "")`` for a positive whole number (Python int, numpy integer, whole finite float),
    else ``(0, what is wrong with it)``. Bools, strings, NaN/inf, fractions, zero and negatives are refused."""
    if isinstance(value, (bool, np.bool_)):
        return 0, f"{bool(value)!r} is a bool, not a size"
    if isinstance(value, (int, np.integer)):
        v = int(value)
    elif isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            return 0, f"{short_repr(value)} is not finite"
        if not float(value).is_integer():
            return 0, f"{short_repr(value)} is not a whole number"
        v = int(value)
    else:
        return 0, f"{short_repr(value)} is a {type(value).__name__}, not an int or float"
    if v <= 0:
        return 0, f"{v} is not positive"
    if v > MAX_SIZE:
        return 0, f"{v} is above the largest size modelled (2**40)"
    return v, ""


def _pair(fqn: str, value: Any) -> tuple[int, int]:
    """``(in_features, out_features)`` of one entry ``fqn -> value`` of a shape mapping, checked."""
    where = f"module_filter: Linear {fqn!r} -> {short_repr(value)}"
    if isinstance(value, np.ndarray) and value.ndim == 1:
        value = tuple(value.tolist())
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        raise ModuleShapeError(
            f"{where}: got {type(value).__name__}, not an (in_features, out_features) pair; {_VALID_SHAPE}"
        )
    if len(value) != 2:
        raise ModuleShapeError(f"{where}: {len(value)} values, not 2; {_VALID_SHAPE}")
    sizes = []
    for field, v in zip(("in_features", "out_features"), value, strict=True):
        size, problem = _size_problem(v)
        if problem:
            raise ModuleShapeError(f"{where}: {field} {problem}; {_VALID_SHAPE}")
        sizes.append(size)
    return sizes[0], sizes[1]


def _shape(module: Any, fqn: str) -> tuple[int, int]:
    """``(in_features, out_features)`` of a Linear-like module (``in_features``/``out_features``, else
    ``weight.shape`` as ``[out, in]``), each checked to be a positive whole number."""
    where = f"cannot read the shape of {fqn!r} ({type(module).__name__})"
    try:
        if hasattr(module, "in_features") and hasattr(module, "out_features"):
            k, n = module.in_features, module.out_features
        else:
            n, k = tuple(module.weight.shape)
    except (AttributeError, TypeError, ValueError):
        raise ModuleShapeError(
            f"{where}: it has neither in_features/out_features nor a 2-d weight; pass module_filter a preset or "
            "LayerShape instead"
        ) from None
    sizes = []
    for field, v in (("in_features", k), ("out_features", n)):
        size, problem = _size_problem(v)
        if problem:
            raise ModuleShapeError(f"{where}: {field} {problem}; {_VALID_SHAPE}")
        sizes.append(size)
    return sizes[0], sizes[1]


def _head_dim_arg(value: Any) -> int:
    """The ``head_dim`` argument of :func:`module_filter`, checked: a positive whole number."""
    size, problem = _size_problem(value)
    if problem:
        raise InvalidShapeError(
            f"module_filter: head_dim {problem}; head_dim is the width of one attention head, a positive integer "
            "(e.g. 128)"
        )
    return size


def _is_linear(module: Any) -> bool:
    torch = sys.modules.get("torch")  # a torch module can only exist if torch is imported already
    if torch is not None and isinstance(module, torch.nn.Module):
        return isinstance(module, torch.nn.Linear)
    return hasattr(module, "in_features") and hasattr(module, "out_features")


def _head_dim(model: Any, head_dim: int | None) -> int | None:
    """``head_dim`` if given, else from a Hugging Face ``config`` or torchtitan ``model_args``, else None."""
    if head_dim is not None:
        return head_dim
    cfg = getattr(model, "config", None)
    if cfg is not None:
        hd = getattr(cfg, "head_dim", None)
        if hd:
            size, problem = _size_problem(hd)
            if problem:
                raise ModuleShapeError(
                    f"{type(model).__name__}: config.head_dim {problem}; it must be a positive integer, or pass "
                    "head_dim= explicitly"
                )
            return size
        if getattr(cfg, "hidden_size", None) and getattr(cfg, "num_attention_heads", None):
            return int(cfg.hidden_size) // int(cfg.num_attention_heads)
    args = getattr(model, "model_args", None)
    if args is not None and getattr(args, "dim", None) and getattr(args, "n_heads", None):
        return int(args.dim) // int(args.n_heads)
    return None


class GroupFilter:
    """The layer-group filter: ``module_filter_fn(module, fqn) -> bool``, True for the Linears of the chosen
    groups of each decoder layer, False for everything else (other modules, output heads, Linears of other
    blocks). Build it with :func:`perfmodel.step.module_filter` (also named :func:`perfmodel.step.layer_filter`).

    It knows Linears by the torchtitan and Hugging Face names of :mod:`perfmodel.step.names`. A filter that has
    seen :data:`UNMATCHED_WARN_AFTER` Linears and matched none warns once (:class:`PerfModelWarning`): it was
    applied to a model named otherwise (GPT-2, NeoX, ...) and keeps every Linear in bf16. After the conversion,
    :meth:`check` raises if it matched no Linear at all.

    Attributes:
        recipe: the float8 recipe the decision was made for.
        decisions: layer name -> the groups chosen for it (for ``convert=``: the Linear names given).
        skipped: fqn -> why a Linear-like module is not a decoder-layer Linear (only when built from a model).
        matched, unmatched: Linears asked about that are / are not one of the layer's (by name).
    """

    def __init__(
        self,
        *,
        recipe: str,
        layer: LayerShape | None,
        chosen: dict[str, tuple[str, ...]],
        blocks: dict[str, LayerShape] | None = None,
        skipped: dict[str, str] | None = None,
        names: dict[str, frozenset[str]] | None = None,
    ) -> None:
        self.recipe = recipe
        self._layer = layer
        self._blocks = blocks or {}
        self.decisions = dict(chosen)
        self.skipped = dict(skipped or {})
        self._names = dict(names or {})
        self.matched = 0
        self.unmatched = 0
        self._unmatched_examples: list[str] = []
        self._answers: dict[str, bool] = {}
        self._warned = False

    @property
    def groups(self) -> tuple[str, ...]:
        """The chosen groups when every layer has the same shape (else see :attr:`decisions`)."""
        distinct = set(self.decisions.values())
        return next(iter(distinct)) if len(distinct) == 1 else ()

    def _layer_for(self, prefix: str) -> LayerShape | None:
        if self._layer is not None:
            return self._layer
        return self._blocks.get(prefix)

    def _converts(self, lay: LayerShape, canon: str) -> bool:
        if lay.name in self._names:
            return canon in self._names[lay.name]
        return any(canon in lay.groups[g] for g in self.decisions[lay.name])

    def __call__(self, module: Any, fqn: str) -> bool:
        if not _is_linear(module):
            return False
        hit = split_fqn(fqn)
        lay = None if hit is None else self._layer_for(hit[0])
        expected = {} if lay is None else {lin.name: (lin.in_features, lin.out_features) for lin in lay.linears()}
        if hit is None or lay is None or hit[1] not in expected:
            self._miss(str(fqn))
            return False
        canon = hit[1]
        got = _shape(module, fqn)
        if got != expected[canon]:
            raise ModuleShapeError(
                f"{fqn!r} is {got[0]}x{got[1]}, but {lay.name}'s {canon} is {expected[canon][0]}x{expected[canon][1]} "
                "(in x out features): pass the model itself (module_filter(model, ...)) or the preset that matches it"
            )
        self.matched += 1
        answer = self._converts(lay, canon)
        self._answers[str(fqn)] = answer
        return answer

    def _miss(self, fqn: str) -> None:
        self.unmatched += 1
        self._answers[fqn] = False
        if len(self._unmatched_examples) < 3:
            self._unmatched_examples.append(fqn)
        if self.matched == 0 and self.unmatched >= UNMATCHED_WARN_AFTER and not self._warned:
            self._warned = True
            warnings.warn(
                f"{self!r} has seen {self.unmatched} Linears and matched none of them "
                f"(e.g. {', '.join(map(repr, self._unmatched_examples))}): it knows decoder-layer Linears by their "
                "torchtitan (attention.wq, feed_forward.w1) and Hugging Face (self_attn.q_proj, mlp.gate_proj) names, "
                "so this model keeps every Linear in bf16. Use the Linear filter "
                "perfmodel.float8.module_filter(gpu=..., tokens=...), which prices any nn.Linear by its shape",
                PerfModelWarning,
                stacklevel=3,
            )

    def check(self) -> dict[str, int]:
        """Call after ``convert_to_float8_training``: ``{"matched", "unmatched", "converted"}`` Linear counts.

        Raises:
            UnknownLinearError: the filter matched no Linear of the model it was applied to (or was never called).
        """
        if self.matched == 0:
            seen = (
                f"it was asked about {self.unmatched} Linears (e.g. {', '.join(map(repr, self._unmatched_examples))})"
                if self.unmatched
                else "it was never asked about a Linear"
            )
            raise UnknownLinearError(
                f"{self!r} matched no Linear: {seen}. It knows torchtitan (attention.wq, feed_forward.w1) and Hugging "
                "Face (self_attn.q_proj, mlp.gate_proj) names; for other models use perfmodel.float8.module_filter"
            )
        return {"matched": self.matched, "unmatched": self.unmatched, "converted": len(self.fqns())}

    def fqns(self) -> list[str]:
        """The fqns of the Linears it converted (said True to), in call order."""
        return [f for f, yes in self._answers.items() if yes]

    def skip_fqns(self) -> list[str]:
        """The fqns of the Linears it kept in bf16 (torchtitan's ``filter_fqns`` lists modules to SKIP)."""
        return [f for f, yes in self._answers.items() if not yes]

    def __repr__(self) -> str:
        return f"GroupFilter({self.recipe}: {self.decisions})"


#: the layer-group filter's class by the name that says what it is
LayerGroupFilter = GroupFilter


def _blocks_from(items: list[tuple[str, tuple[int, int]]], head_dim: int | None, rope: bool, norms: dict[str, str]):
    """Group ``(fqn, (K, N))`` by decoder block; infer one LayerShape per complete block."""
    found: dict[str, dict[str, tuple[int, int]]] = {}
    skipped: dict[str, str] = {}
    for fqn, shape in items:
        hit = split_fqn(fqn)
        if hit is None:
            skipped[fqn] = "not named like a decoder-layer Linear (torchtitan or Hugging Face)"
            continue
        found.setdefault(hit[0], {})[hit[1]] = shape
    blocks: dict[str, LayerShape] = {}
    for prefix, lins in found.items():
        missing = [n for n in ("wq", "wk", "wv", "wo", "w1", "w2") if n not in lins]
        if missing:
            for canon in lins:
                skipped[f"{prefix}.{canon}" if prefix else canon] = f"block {prefix!r} lacks {', '.join(missing)}"
            continue
        if head_dim is None:
            raise ModuleShapeError(
                f"block {prefix!r}: head_dim is needed to read heads from wq/wk and the model has no config "
                "(config.head_dim, config.hidden_size / num_attention_heads, model_args.dim / n_heads); pass head_dim="
            )
        (hidden, q), (_, kv), (_, ffn) = lins["wq"], lins["wk"], lins["w1"]
        if q % head_dim or kv % head_dim:
            raise ModuleShapeError(
                f"block {prefix!r}: wq ({hidden}x{q}) and wk (x{kv}) are not whole heads of head_dim {head_dim}"
            )
        blocks[prefix] = LayerShape(
            name=f"{prefix or 'layer'}",
            hidden=hidden,
            ffn=ffn,
            heads=q // head_dim,
            kv_heads=kv // head_dim,
            head_dim=head_dim,
            norm=norms.get(prefix, "rmsnorm"),
            activation="swiglu" if "w3" in lins else "gelu",
            rope=rope,
            source="read from the model's Linear shapes",
        )
        want = {lin.name: (lin.in_features, lin.out_features) for lin in blocks[prefix].linears()}
        for canon, (k, n) in lins.items():
            if canon in want and (k, n) != want[canon]:
                raise ModuleShapeError(
                    f"block {prefix!r}: {canon} is {k}x{n}, but the layer read from wq, wk and w1 (hidden {hidden}, "
                    f"{q // head_dim} heads, {kv // head_dim} KV heads of {head_dim}, ffn {ffn}) has {canon} "
                    f"{want[canon][0]}x{want[canon][1]} (in x out features): the block's Linears do not fit together"
                )
    return blocks, skipped


def module_filter(
    layer_or_model: Any,
    *,
    gpu: GPULike | None = None,
    seq_len: Any = None,
    batch: Any = 1,
    recipe: str | Recipe = "tensorwise",
    ac: str = "none",
    min_gain: float = 0.0,
    head_dim: int | None = None,
    rope: bool = True,
    time_model: ModelLike = None,
    layer_params: LayerParams | None = None,
    convert: str | Iterable[str] | None = None,
) -> GroupFilter:
    """The layer-group filter: a ``module_filter_fn`` for ``convert_to_float8_training(model, config=...,
    module_filter_fn=...)`` that prices a preset's decoder layer with the step model (attention, norms, casts
    that fuse or that Linears sharing an input share) and converts whole groups of Linears (q/k/v, w1/w3).
    For models the step model does not price (MoE, other names, custom shapes) use the Linear filter
    :func:`perfmodel.float8.module_filter`, which prices each ``nn.Linear`` by its own shape.

    ``layer_or_model`` is either the layer — a preset name, a :class:`~perfmodel.presets.ModelPreset` or a
    :class:`~perfmodel.presets.LayerShape` — whose Linears the filter then recognises in any model named by
    torchtitan or Hugging Face conventions (and checks their shapes), or the model itself: an ``nn.Module``
    (or a mapping ``fqn -> (in_features, out_features)``), whose decoder blocks are found by those names and
    whose layer shapes are read from the Linears (``head_dim`` from the argument, the model's ``config`` or
    ``model_args``; LayerNorm when the block holds a ``LayerNorm`` module, else RMSNorm). Each distinct layer
    shape gets :func:`perfmodel.step.best_convert`'s groups; everything else (embeddings, output head, MoE
    experts, routers) stays in bf16.

    A shape (a mapping's value, or a module's ``in_features``/``out_features``) must be two positive whole
    numbers — Python or numpy integers, or floats that are exactly integral (``4096.0``); bools, strings,
    fractional or non-finite floats, zero and negatives are refused, never rounded.

    ``gpu`` and ``seq_len`` are required unless ``convert`` is given; ``gpu="auto"`` is the current CUDA device
    (:func:`perfmodel.float8.current_gpu`). ``convert`` fixes the choice instead of pricing it: group or Linear
    names as :func:`perfmodel.step.layer_time` takes them (``["wo", "w13", "w2"]``), e.g. what
    ``perfmodel train --convert auto`` chose; the filter then converts exactly those Linears of every layer.

    The filter warns (:class:`PerfModelWarning`) once it has seen :data:`UNMATCHED_WARN_AFTER` Linears without
    matching one (a model named otherwise keeps every Linear in bf16); ``filt.check()`` after the conversion
    raises :class:`UnknownLinearError` if it matched none.

    Raises:
        ModuleShapeError: a Linear whose shape cannot be read (not a pair of positive integers), does not match
            the given layer, or does not fit the other Linears of its block.
        InvalidShapeError: a ``head_dim`` that is not a positive integer.
        UnknownLinearError: a model without any complete decoder block (q, k, v, o and MLP Linears).
        UnsupportedLayerError, UnknownPresetError: as :func:`perfmodel.step.layer_time`.
        PerfModelError: no ``gpu`` or ``seq_len`` and no ``convert``. NoCurrentGPUError: ``gpu="auto"`` without CUDA.
    """
    rec = get_recipe(recipe)
    if convert is None and (gpu is None or seq_len is None):
        missing = " and ".join(n for n, v in (("gpu", gpu), ("seq_len", seq_len)) if v is None)
        raise PerfModelError(
            f"step.module_filter needs {missing} to price the layer (gpu='H100' or 'auto', seq_len=8192), or "
            "convert=[group or Linear names] to apply a choice made already"
        )
    if isinstance(gpu, str) and gpu.strip().lower() == "auto":
        gpu = current_gpu()
    if head_dim is not None:
        head_dim = _head_dim_arg(head_dim)
    opts = dict(
        gpu=gpu,
        seq_len=seq_len,
        batch=batch,
        recipe=rec,
        ac=ac,
        min_gain=min_gain,
        time_model=time_model,
        layer_params=layer_params,
    )
    if isinstance(layer_or_model, (str, ModelPreset, LayerShape)):
        lay, _ = resolve_layer(layer_or_model)
        if convert is not None:
            names = resolve_convert(lay, convert)
            return GroupFilter(
                recipe=rec.name, layer=lay, chosen={lay.name: tuple(sorted(names))}, names={lay.name: names}
            )
        return GroupFilter(recipe=rec.name, layer=lay, chosen={lay.name: best_convert(lay, **opts)})
    norms: dict[str, str] = {}
    if isinstance(layer_or_model, Mapping):
        items = [(str(fqn), _pair(str(fqn), shape)) for fqn, shape in layer_or_model.items()]
        hd, what = head_dim, "mapping"
    elif hasattr(layer_or_model, "named_modules"):
        items = []
        for fqn, mod in layer_or_model.named_modules():
            if "layernorm" in type(mod).__name__.lower() and "rms" not in type(mod).__name__.lower():
                hit = fqn.rsplit(".", 1)[0] if "." in fqn else ""
                norms[hit] = "layernorm"
            if _is_linear(mod):
                items.append((fqn, _shape(mod, fqn)))
        hd, what = _head_dim(layer_or_model, head_dim), type(layer_or_model).__name__
    else:
        raise UnknownLinearError(
            f"module_filter needs a preset name, ModelPreset, LayerShape, an nn.Module or a mapping fqn -> (K, N); "
            f"got {type(layer_or_model).__name__}"
        )
    blocks, skipped = _blocks_from(items, hd, rope, norms)
    if not blocks:
        raise UnknownLinearError(
            f"{what}: no decoder block with q, k, v, o and MLP Linears named like torchtitan (attention.wq, "
            "feed_forward.w1) or Hugging Face (self_attn.q_proj, mlp.gate_proj); pass the preset or LayerShape"
        )
    chosen: dict[str, tuple[str, ...]] = {}
    by_shape: dict[tuple, tuple[str, ...]] = {}
    named: dict[str, LayerShape] = {}
    fixed: dict[str, frozenset[str]] = {}
    for prefix, lay in blocks.items():
        key = (lay.hidden, lay.ffn, lay.heads, lay.kv_heads, lay.head_dim, lay.norm, lay.activation, lay.rope)
        if convert is not None:
            fixed[lay.name] = resolve_convert(lay, convert)
            by_shape[key] = tuple(sorted(fixed[lay.name]))
        elif key not in by_shape:
            by_shape[key] = best_convert(lay, **opts)
        chosen[lay.name] = by_shape[key]
        named[prefix] = lay
    return GroupFilter(recipe=rec.name, layer=None, chosen=chosen, blocks=named, skipped=skipped, names=fixed)


def torchtitan_filter_fqns(layer: str | ModelPreset | LayerShape, convert: str | Iterable[str] | None) -> list[str]:
    """torchtitan's ``filter_fqns`` — the modules torchtitan SKIPS, matched by substring (``filter_fqn in fqn``) —
    that convert exactly ``convert`` of every decoder layer's Linears (torchtitan's names, ``attention.wq`` ...)
    and keep the output head (``output``) in bf16, as :func:`perfmodel.train.estimate` prices it.

    ``convert`` as :func:`module_filter` takes it (``None``: every Linear of the layer)."""
    lay, _ = resolve_layer(layer)
    keep = resolve_convert(lay, convert)
    names = CONVENTIONS["torchtitan"]
    return [*(names[lin.name] for lin in lay.linears() if lin.name not in keep), "output"]


def choice_code(model: str, convert: Iterable[str], recipe: str) -> dict[str, Any]:
    """How to apply a choice made already (``perfmodel train``'s priced ``convert``) to preset ``model``:
    ``{"python": the module_filter_fn=... argument for torchao, "filter_fqns": torchtitan's skip list,
    "torchtitan": its command-line flags}``. The output head stays bf16 in both (as the estimate prices it)."""
    names = list(convert)
    skip = torchtitan_filter_fqns(model, names or "none")
    section = "quantize.linear.mx" if get_recipe(recipe).name == "mxfp8" else "quantize.linear.float8"
    return {
        "python": f"module_filter_fn=perfmodel.step.module_filter({model!r}, convert={names!r})",
        "filter_fqns": skip,
        "torchtitan": f'--{section}.recipe_name {get_recipe(recipe).name} --{section}.filter_fqns "{",".join(skip)}"',
    }


#: the layer-group filter by the name that says what it prices (``module_filter`` is its original name)
layer_filter = module_filter
