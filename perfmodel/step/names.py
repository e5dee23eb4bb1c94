"""Linear names of a decoder layer: canonical names, groups, and the naming conventions of torchtitan and
Hugging Face models (public face: :mod:`perfmodel.step`).

Canonical names are torchtitan's short ones (``wq wk wv wo w1 w3 w2``). A module's fully-qualified name
(fqn) is read by its last two components, else its last one::

    canonical     torchtitan         Hugging Face
    wq wk wv wo   attention.wq ...   self_attn.q_proj  self_attn.k_proj  self_attn.v_proj  self_attn.o_proj
    w1 w3 w2      feed_forward.w1 .. mlp.gate_proj     mlp.up_proj       mlp.down_proj
    w1 w2 (GeLU)  feed_forward.w1 .. mlp.fc1           mlp.fc2

so ``layers.3.attention.wq`` and ``model.layers.3.self_attn.q_proj`` both read as ``wq`` of block
``layers.3`` / ``model.layers.3``.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import UnknownLinearError, choices_message
from ..presets import LayerShape

__all__ = ["CONVENTIONS", "UnknownLinearError", "canonical", "resolve_convert", "split_fqn"]


#: convention -> canonical name -> the module path inside one decoder block
CONVENTIONS: dict[str, dict[str, str]] = {
    "torchtitan": {
        "wq": "attention.wq",
        "wk": "attention.wk",
        "wv": "attention.wv",
        "wo": "attention.wo",
        "w1": "feed_forward.w1",
        "w3": "feed_forward.w3",
        "w2": "feed_forward.w2",
    },
    "huggingface": {
        "wq": "self_attn.q_proj",
        "wk": "self_attn.k_proj",
        "wv": "self_attn.v_proj",
        "wo": "self_attn.o_proj",
        "w1": "mlp.gate_proj",
        "w3": "mlp.up_proj",
        "w2": "mlp.down_proj",
    },
    "huggingface-gelu": {"w1": "mlp.fc1", "w2": "mlp.fc2"},
}

_SUFFIX2: dict[tuple[str, str], str] = {}
_SUFFIX1: dict[str, str] = {}
for _table in CONVENTIONS.values():
    for _canon, _path in _table.items():
        _a, _b = _path.split(".")
        _SUFFIX2[_a, _b] = _canon
        _SUFFIX1.setdefault(_b, _canon)
for _canon in ("wq", "wk", "wv", "wo", "w1", "w3", "w2"):
    _SUFFIX1[_canon] = _canon


def split_fqn(fqn: str) -> tuple[str, str] | None:
    """``(block prefix, canonical name)`` of a module's fqn, or ``None`` when it is no decoder-layer Linear."""
    parts = [p for p in str(fqn).split(".") if p]
    if len(parts) >= 2 and (parts[-2], parts[-1]) in _SUFFIX2:
        return ".".join(parts[:-2]), _SUFFIX2[parts[-2], parts[-1]]
    if parts and parts[-1] in _SUFFIX1 and (len(parts) < 2 or parts[-2] not in ("attention", "self_attn", "mlp")):
        # a bare name ("q_proj", "wq"); a two-component name we do not know stays unknown
        return ".".join(parts[:-1]), _SUFFIX1[parts[-1]]
    return None


def canonical(name: str) -> str | None:
    """The canonical Linear name of ``name`` in any convention, or ``None``."""
    hit = split_fqn(name)
    return hit[1] if hit else None


def resolve_convert(layer: LayerShape, convert: str | Iterable[str] | None) -> frozenset[str]:
    """Canonical names of the Linears ``convert`` selects: ``None`` — all of them; else group names
    (``"qkv"``), canonical names (``"wq"``), torchtitan or Hugging Face names / fqns, or ``"none"``.

    Raises:
        UnknownLinearError: a name that is none of those (the message lists the valid ones).
    """
    names = {lin.name for lin in layer.linears()}
    if convert is None:
        return frozenset(names)
    if not isinstance(convert, (str, Iterable)):
        raise UnknownLinearError(
            f"convert must be None, a name or an iterable of Linear or group names, got {type(convert).__name__} "
            f"{convert!r}"
        )
    items = [convert] if isinstance(convert, str) else list(convert)
    out: set[str] = set()
    for item in items:
        if not isinstance(item, str):
            raise UnknownLinearError(f"convert entries must be Linear or group names (str), got {item!r}")
        key = item.strip()
        if key.lower() in ("none", ""):
            continue
        if key in layer.groups:
            out |= set(layer.groups[key])
            continue
        canon = canonical(key)
        if canon is None or canon not in names:
            valid = [
                *layer.groups,
                *sorted(names),
                *(p for t in CONVENTIONS.values() for c, p in t.items() if c in names),
            ]
            raise UnknownLinearError(
                choices_message(
                    f"Linear or group of {layer.name!r}",
                    item,
                    valid,
                    "Names may also be fully qualified (layers.0.attention.wq, model.layers.0.self_attn.q_proj).",
                )
            )
        out.add(canon)
    return frozenset(out)
