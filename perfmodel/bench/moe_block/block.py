"""The MoE block (torch): modules, routing, permutation plan, fp8 conversion, reference."""

from __future__ import annotations

from typing import Any

from .config import ALIGN, ALL_ROUTINGS, SEED, SKEW_ALPHA, BlockConfig, MoEBlockError
from .shapes import dirichlet_weights, max_rows

__all__ = [
    "build_block",
    "convert_fp8",
    "permute_plan",
    "reference_forward",
    "routing_indices",
]

# ---- the block (torch) ------------------------------------------------------------------------------------------

_CLASSES: dict[str, Any] = {}


def _classes(torch: Any) -> dict[str, Any]:
    """The block's nn.Module classes, made once torch is imported."""
    if _CLASSES:
        return _CLASSES
    nn, F = torch.nn, torch.nn.functional

    class GroupedExperts(nn.Module):
        """torchtitan's layout: w1, w3 ``[E, inter, dim]``, w2 ``[E, dim, inter]``."""

        def __init__(self, E: int, dim: int, inter: int, loop: bool = False) -> None:
            super().__init__()
            self.w1 = nn.Parameter(torch.empty(E, inter, dim))
            self.w2 = nn.Parameter(torch.empty(E, dim, inter))
            self.w3 = nn.Parameter(torch.empty(E, inter, dim))
            self.loop = loop  # per-expert matmuls instead of torch._grouped_mm (CPU fallback)

        def forward(self, x: Any, offs: Any) -> Any:
            if self.loop:
                return _experts_loop(torch, self.w1, self.w2, self.w3, x, offs)
            h = F.silu(torch._grouped_mm(x, self.w1.transpose(-2, -1), offs=offs))
            h = h * torch._grouped_mm(x, self.w3.transpose(-2, -1), offs=offs)
            return torch._grouped_mm(h, self.w2.transpose(-2, -1), offs=offs)

    class SharedExpert(nn.Module):
        def __init__(self, dim: int, inter: int) -> None:
            super().__init__()
            self.w1 = nn.Linear(dim, inter, bias=False)
            self.w2 = nn.Linear(inter, dim, bias=False)
            self.w3 = nn.Linear(dim, inter, bias=False)

        def forward(self, x: Any) -> Any:
            return self.w2(F.silu(self.w1(x)) * self.w3(x))

    class MoEBlock(nn.Module):
        def __init__(self, cfg: BlockConfig, align: int, loop: bool = False) -> None:
            super().__init__()
            self.cfg, self.align = cfg, align
            self.gate = nn.Linear(cfg.dim, cfg.router_experts, bias=False)
            self.experts = GroupedExperts(cfg.experts, cfg.dim, cfg.inter, loop)
            self.shared_experts = SharedExpert(cfg.dim, cfg.shared_inter) if cfg.shared_inter else None
            self.forced: Any = None  # (T, k) int64 expert indices, or None: the router's own top-k

        def route(self, x: Any) -> tuple[Any, Any]:
            logits = self.gate(x).float()
            scores = torch.sigmoid(logits) if self.cfg.score_func == "sigmoid" else F.softmax(logits, dim=-1)
            idx = torch.topk(scores[:, : self.cfg.experts], self.cfg.top_k, dim=-1, sorted=False).indices
            if self.forced is not None:
                idx = self.forced
            return scores.gather(1, idx), idx

        def forward(self, x: Any) -> Any:
            T, dim = x.shape
            top, idx = self.route(x)
            with torch.no_grad():
                slot_tok, slot_pos, offs = permute_plan(torch, idx, self.cfg.experts, self.align)
            xp = torch.cat([x, x.new_zeros(1, dim)]).index_select(0, slot_tok)
            y = self.experts(xp, offs)
            s = torch.cat([top.reshape(-1), top.new_zeros(1)]).index_select(0, slot_pos)
            out = x.new_zeros(T + 1, dim).index_add(0, slot_tok, y * s.to(y.dtype)[:, None])[:T]
            if self.shared_experts is not None:
                out = out + self.shared_experts(x)
            return out

    _CLASSES.update(MoEBlock=MoEBlock, GroupedExperts=GroupedExperts, SharedExpert=SharedExpert)
    return _CLASSES


def _experts_loop(torch: Any, w1: Any, w2: Any, w3: Any, x: Any, offs: Any) -> Any:
    F = torch.nn.functional
    outs, start = [], 0
    for e, end in enumerate(offs.tolist()):
        xe = x[start:end]
        outs.append((F.silu(xe @ w1[e].t()) * (xe @ w3[e].t())) @ w2[e].t())
        start = end
    if start < x.shape[0]:
        outs.append(x.new_zeros(x.shape[0] - start, w2.shape[1]))
    return torch.cat(outs)


def permute_plan(torch: Any, idx: Any, experts: int, align: int) -> tuple[Any, Any, Any]:
    """Sync-free permutation of routed rows (see module doc): per GEMM row the token (``T`` = pad) and the flat
    routed position (``T*k`` = pad), and the int32 group ends ``offs``."""
    T, k = idx.shape
    total = max_rows(T, k, experts, align)
    flat = idx.reshape(-1)
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=experts)
    sizes = torch.clamp_min((counts + align - 1) // align * align, align)
    sizes = torch.cat([sizes[:-1], sizes[-1:] + (total - sizes.sum())])
    ends = torch.cumsum(sizes, 0)
    starts = ends - sizes
    cstarts = torch.cumsum(counts, 0) - counts
    j = torch.arange(total, device=idx.device)
    g = torch.clamp(torch.searchsorted(ends, j, right=True), max=experts - 1)
    r = j - starts[g]
    valid = r < counts[g]
    src = torch.where(valid, cstarts[g] + r, torch.zeros_like(r))
    pos = torch.where(valid, order[src], torch.full_like(r, T * k))
    tok = torch.where(valid, pos // k, torch.full_like(r, T))
    return tok, pos, ends.to(torch.int32)


def routing_indices(torch: Any, cfg: BlockConfig, tokens: int, routing: str, seed: int = SEED) -> Any:
    """(T, k) int64 expert indices on the CPU: ``balanced`` round-robin (token t: experts ``(t*k + j) % E``),
    ``skewed`` k distinct experts per token drawn (seeded) from Dirichlet(SKEW_ALPHA) popularity; ``natural``: None."""
    E, k = cfg.experts, cfg.top_k
    if routing == "balanced":
        return torch.arange(tokens * k, dtype=torch.int64).reshape(tokens, k) % E
    if routing == "skewed":
        w = torch.tensor(dirichlet_weights(E, SKEW_ALPHA, seed + E), dtype=torch.float64)
        gen = torch.Generator().manual_seed(seed)
        return torch.multinomial(w.expand(tokens, E), k, replacement=False, generator=gen)
    if routing == "natural":
        return None
    raise MoEBlockError(f"unknown routing {routing!r}; valid: {', '.join(ALL_ROUTINGS)}")


def build_block(torch: Any, cfg: BlockConfig, recipe: str, *, device: Any, dtype: Any, seed: int = SEED,
                loop: bool = False) -> Any:  # fmt: skip
    """The block with weights ~ N(0, 0.02) (seeded), on ``device`` in ``dtype``; ``recipe`` sets the alignment."""
    cls = _classes(torch)["MoEBlock"]
    torch.manual_seed(seed)
    with torch.device(device):
        blk = cls(cfg, ALIGN[recipe], loop)
    with torch.no_grad():
        for p in blk.parameters():
            p.normal_(0.0, 0.02)
    return blk.to(dtype)


def convert_fp8(torch: Any, block: Any) -> list[str]:
    """torchao 0.17 float8 rowwise MoE conversion of ``block.experts`` (``quantize_`` with a filter on the fqn
    ``experts``; the shared expert's fqn ``shared_experts`` does not match); returns the converted parameter names."""
    from torchao.prototype.moe_training.config import Float8TrainingOpConfig, Float8TrainingRecipe
    from torchao.quantization.quant_api import quantize_

    config = Float8TrainingOpConfig.from_recipe(Float8TrainingRecipe.FP8_ROWWISE)
    quantize_(block, config=config, filter_fn=lambda mod, fqn: fqn == "experts")
    block.align = ALIGN["fp8_rowwise"]
    return [n for n, p in block.named_parameters() if "Wrapper" in type(p).__name__ + type(p.data).__name__]


def reference_forward(torch: Any, block: Any, x: Any, idx: Any, w1: Any = None) -> Any:
    """Per-token float64 loop: ``sum_j score_j * FFN_{e_j}(x_t) + shared(x_t)`` with the block's own weights
    (``w1``: a float64 leaf to use instead of the block's, for its gradient)."""
    F = torch.nn.functional
    d = lambda t: t.detach().double()  # noqa: E731
    x64 = x.double()
    logits = x64 @ d(block.gate.weight).t()
    scores = torch.sigmoid(logits) if block.cfg.score_func == "sigmoid" else F.softmax(logits, dim=-1)
    top = scores.gather(1, idx)
    w2, w3 = d(block.experts.w2), d(block.experts.w3)
    w1 = d(block.experts.w1) if w1 is None else w1
    out = torch.zeros_like(x64)
    for e in range(block.cfg.experts):
        t, j = (idx == e).nonzero(as_tuple=True)
        if t.numel():
            h = F.silu(x64[t] @ w1[e].t()) * (x64[t] @ w3[e].t())
            out = out.index_add(0, t, (h @ w2[e].t()) * top[t, j][:, None])
    if block.shared_experts is not None:
        s = block.shared_experts
        out = out + (F.silu(x64 @ d(s.w1.weight).t()) * (x64 @ d(s.w3.weight).t())) @ d(s.w2.weight).t()
    return out


def _rel(torch: Any, a: Any, b: Any) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-30))
