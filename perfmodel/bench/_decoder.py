"""A Llama-style decoder layer in plain PyTorch, for the layer and multi-GPU sweeps (torch imported lazily).

Module names follow torchtitan's Llama (``attention.wq/wk/wv/wo``, ``feed_forward.w1/w2/w3``,
``attention_norm``, ``ffn_norm``), so torchao's ``convert_to_float8_training`` filters and
torchtitan's tensor-parallel plans apply unchanged::

    h   = x + wo(attn(rope(wq(n1)), rope(wk(n1)), wv(n1)))     n1 = attention_norm(x)   (RMSNorm)
    out = h + w2(silu(w1(n2)) * w3(n2))                         n2 = ffn_norm(h)          (SwiGLU)

Attention is ``F.scaled_dot_product_attention(..., is_causal=True)`` (FlashAttention on Hopper),
grouped-query: ``kv_heads`` key/value heads shared by ``heads // kv_heads`` query heads.
Shapes: activations ``[batch, seq, dim]``; ``wq [heads·head_dim, dim]``, ``wk, wv [kv_heads·head_dim, dim]``,
``wo [dim, heads·head_dim]``, ``w1, w3 [ffn, dim]``, ``w2 [dim, ffn]``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["LINEAR_GROUPS", "DecoderConfig", "build_layer", "build_stack", "linear_names", "rope_tables"]

#: Linears that share one input (one norm output or one activation), torchtitan names.
LINEAR_GROUPS: dict[str, tuple[str, ...]] = {
    "qkv": ("attention.wq", "attention.wk", "attention.wv"),
    "o": ("attention.wo",),
    "w13": ("feed_forward.w1", "feed_forward.w3"),
    "w2": ("feed_forward.w2",),
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class DecoderConfig:
    """One decoder layer's shape (Llama 3 conventions: RMSNorm, SwiGLU, RoPE, GQA)."""

    dim: int
    ffn: int
    heads: int
    kv_heads: int
    head_dim: int = 128
    norm_eps: float = 1e-5
    rope_theta: float = 500000.0

    def __post_init__(self) -> None:
        if self.heads % self.kv_heads:
            raise ValueError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")

    @property
    def name(self) -> str:
        return f"d{self.dim}_f{self.ffn}_h{self.heads}_kv{self.kv_heads}"


def linear_names(groups: tuple[str, ...] | list[str] | None = None) -> tuple[str, ...]:
    """The Linear module names of ``groups`` (keys of :data:`LINEAR_GROUPS`; ``None``: all)."""
    keys = LINEAR_GROUPS if groups is None else groups
    bad = [g for g in keys if g not in LINEAR_GROUPS]
    if bad:
        raise ValueError(f"unknown Linear group(s) {bad}; valid: {', '.join(LINEAR_GROUPS)}")
    return tuple(n for g in keys for n in LINEAR_GROUPS[g])


def _classes() -> dict[str, Any]:
    import torch
    import torch.nn.functional as F
    from torch import nn

    class RMSNorm(nn.Module):
        def __init__(self, dim: int, eps: float) -> None:
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight

    def rope(x, cos, sin):  # x [b, s, h, d]; rotate pairs (d/2 complex numbers)
        x1, x2 = x.float().unflatten(-1, (-1, 2)).unbind(-1)
        out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)
        return out.type_as(x)

    class Attention(nn.Module):
        def __init__(self, c: DecoderConfig) -> None:
            super().__init__()
            self.c = c
            self.wq = nn.Linear(c.dim, c.heads * c.head_dim, bias=False)
            self.wk = nn.Linear(c.dim, c.kv_heads * c.head_dim, bias=False)
            self.wv = nn.Linear(c.dim, c.kv_heads * c.head_dim, bias=False)
            self.wo = nn.Linear(c.heads * c.head_dim, c.dim, bias=False)

        def forward(self, x, cos, sin):
            b, s, _ = x.shape
            # -1 heads: under tensor parallelism each rank holds heads / tp of them
            q = rope(self.wq(x).view(b, s, -1, self.c.head_dim), cos, sin)
            k = rope(self.wk(x).view(b, s, -1, self.c.head_dim), cos, sin)
            v = self.wv(x).view(b, s, -1, self.c.head_dim)
            q, k, v = (t.transpose(1, 2) for t in (q, k, v))
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            return self.wo(out.transpose(1, 2).reshape(b, s, -1))

    class FeedForward(nn.Module):
        def __init__(self, c: DecoderConfig) -> None:
            super().__init__()
            self.w1 = nn.Linear(c.dim, c.ffn, bias=False)
            self.w2 = nn.Linear(c.ffn, c.dim, bias=False)
            self.w3 = nn.Linear(c.dim, c.ffn, bias=False)

        def forward(self, x):
            return self.w2(F.silu(self.w1(x)) * self.w3(x))

    class DecoderLayer(nn.Module):
        def __init__(self, c: DecoderConfig) -> None:
            super().__init__()
            self.c = c
            self.attention_norm = RMSNorm(c.dim, c.norm_eps)
            self.attention = Attention(c)
            self.ffn_norm = RMSNorm(c.dim, c.norm_eps)
            self.feed_forward = FeedForward(c)

        def forward(self, x, cos, sin):
            h = x + self.attention(self.attention_norm(x), cos, sin)
            return h + self.feed_forward(self.ffn_norm(h))

    return {"DecoderLayer": DecoderLayer}


def rope_tables(c: DecoderConfig, seq: int, device: Any) -> tuple[Any, Any]:
    """``cos, sin`` of shape ``[seq, 1, head_dim / 2]`` (fp32), broadcast over batch and heads."""
    import torch

    freqs = 1.0 / (c.rope_theta ** (torch.arange(0, c.head_dim, 2, device=device).float() / c.head_dim))
    angles = torch.outer(torch.arange(seq, device=device).float(), freqs)
    return angles.cos()[:, None, :], angles.sin()[:, None, :]


def build_layer(c: DecoderConfig, *, device: Any = "cuda", dtype: Any = None, seed: int = 0) -> Any:
    """One :class:`DecoderLayer` with random weights (std 0.02), on ``device`` in ``dtype`` (default bf16)."""
    import torch

    torch.manual_seed(seed)
    layer = _classes()["DecoderLayer"](c)
    for p in layer.parameters():
        if p.dim() == 2:
            torch.nn.init.normal_(p, std=0.02)
    return layer.to(device=device, dtype=dtype or torch.bfloat16)


def build_stack(c: DecoderConfig, n_layers: int, *, device: Any = "cuda", dtype: Any = None, seed: int = 0) -> Any:
    """``n_layers`` decoder layers: an ``nn.Module`` whose ``layers`` (``nn.ModuleList``) run in order;
    ``forward(x, cos, sin)``."""
    from torch import nn

    class Stack(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList(
                build_layer(c, device=device, dtype=dtype, seed=seed + i) for i in range(n_layers)
            )

        def forward(self, x, cos, sin):
            for layer in self.layers:
                x = layer(x, cos, sin)
            return x

    return Stack()
