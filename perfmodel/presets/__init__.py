"""The ``nn.Linear`` shapes of common model architectures, as data.

Each :class:`ModelPreset` lists the linear layers of one transformer block (and the output head),
derived from the model's published Hugging Face ``config.json`` by the arithmetic written next to
each row, and — for dense decoders — the whole block's shape as a :class:`LayerShape` (hidden size,
FFN size, attention heads, KV heads, head dim, norm, activation), which the decoder-layer step model
(:mod:`perfmodel.step`) prices. MoE and MLA presets have no :class:`LayerShape`; their
:attr:`ModelPreset.layer_note` says what the step model does not cover. Fused projections are *not*
assumed: q, k, v, o, gate, up and down are separate Linears, as in the Hugging Face implementations
(GPT-2's fused ``c_attn`` is listed as its q, k, v parts).

Counting rules:
* ``in_features`` = ``K`` and ``out_features`` = ``N`` of ``nn.Linear(K, N)``; a Linear run on ``M``
  tokens is the GEMM ``[M, K] @ [K, N]``.
* :attr:`LinearShape.count` is the number of such Linears in one layer that has it;
  :attr:`LinearShape.layers` the number of layers that have it (``None``: all of the model's).
* :attr:`LinearShape.token_fraction` is the share of the step's tokens one instance sees: 1 for
  dense layers, ``top_k / num_experts`` for a routed MoE expert under perfectly balanced routing
  (Mixtral: 2 / 8, so each expert sees a quarter of the tokens; DeepSeek-V3: 8 / 256).
"""

from __future__ import annotations

from ..errors import UnknownLayerKindError, UnknownPresetError
from ._moe import GQA_ATTENTION
from ._registry import PRESETS, get_preset, list_presets, moe_presets
from ._shapes import (
    ACTIVATIONS,
    NORMS,
    ROUTERS,  # noqa: F401  (kept importable: a module attribute of the old presets.py)
    LayerShape,
    LinearShape,
    ModelPreset,
    MoEShape,
)

__all__ = [
    "ACTIVATIONS",
    "GQA_ATTENTION",
    "NORMS",
    "PRESETS",
    "LayerShape",
    "LinearShape",
    "MoEShape",
    "ModelPreset",
    "UnknownLayerKindError",
    "UnknownPresetError",
    "get_preset",
    "list_presets",
    "moe_presets",
]
