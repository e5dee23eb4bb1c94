"""Pure-Python shape rules (tested on CPU): row counts, padded groups, routing weights, permutation."""

from __future__ import annotations

import random
from collections.abc import Sequence

from .config import MoEBlockError

__all__ = [
    "balanced_counts",
    "dirichlet_weights",
    "max_rows",
    "padded_group_sizes",
    "permutation_reference",
]

# ---- pure-Python shape rules (tested on CPU) ------------------------------------------------------------------


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def max_rows(tokens: int, top_k: int, experts: int, align: int) -> int:
    """Rows the grouped GEMMs run on: ``round_up(T*k + E*align, align)`` (static, no host sync; torchtitan's
    ``padded_max_len``)."""
    for name, v in (("tokens", tokens), ("top_k", top_k), ("experts", experts), ("align", align)):
        if not isinstance(v, int) or v < 1:
            raise MoEBlockError(f"{name} must be a positive int, got {v!r}")
    return _round_up(tokens * top_k + experts * align, align)


def padded_group_sizes(counts: Sequence[int], align: int, total: int) -> list[int]:
    """Each expert's rows in the grouped GEMM: ``max(round_up(count, align), align)``; the last group also takes
    ``total - sum`` (the static remainder). Raises :class:`MoEBlockError` if ``total`` is too small."""
    if align < 1:
        raise MoEBlockError(f"align must be >= 1, got {align}")
    sizes = [max(_round_up(int(c), align), align) for c in counts]
    rest = total - sum(sizes)
    if not sizes or rest < 0:
        raise MoEBlockError(f"total rows {total} < padded group sizes {sum(sizes)} (counts {list(counts)[:8]}...)")
    sizes[-1] += rest
    return sizes


def balanced_counts(tokens: int, top_k: int, experts: int) -> list[int]:
    """Per-expert rows of round-robin routing (token t picks experts ``(t*k + j) % E``, j < k)."""
    n = tokens * top_k
    return [n // experts + (1 if e < n % experts else 0) for e in range(experts)]


def dirichlet_weights(experts: int, alpha: float, seed: int) -> list[float]:
    """Expert popularity for skewed routing: a Dirichlet(alpha) draw from ``random.Random(seed)`` (sums to 1)."""
    if experts < 1 or not alpha > 0:
        raise MoEBlockError(f"experts must be >= 1 and alpha > 0, got {experts}, {alpha}")
    rng = random.Random(seed)
    g = [rng.gammavariate(alpha, 1.0) for _ in range(experts)]
    s = sum(g)
    return [v / s for v in g]


def permutation_reference(
    idx: Sequence[Sequence[int]], experts: int, align: int, total: int
) -> tuple[list[int], list[int], list[int]]:
    """Pure-Python reference of the block's permutation: for every GEMM row (slot) the token it holds (``T`` for a
    pad row), the flat routed position ``t*k + j`` (``T*k`` for pad), and the padded group sizes."""
    T = len(idx)
    k = len(idx[0]) if T else 0
    flat = [e for row in idx for e in row]
    counts = [0] * experts
    for e in flat:
        counts[e] += 1
    order = sorted(range(len(flat)), key=lambda p: (flat[p], p))  # stable sort by expert
    sizes = padded_group_sizes(counts, align, total)
    slot_tok, slot_pos = [], []
    c0 = 0
    for e in range(experts):
        mine = order[c0 : c0 + counts[e]]
        c0 += counts[e]
        for r in range(sizes[e]):
            if r < len(mine):
                slot_pos.append(mine[r])
                slot_tok.append(mine[r] // k)
            else:
                slot_pos.append(T * k)
                slot_tok.append(T)
    return slot_tok, slot_pos, sizes
