"""What the decoder-layer sweep measures: the layer sizes (:data:`LAYER_SIZES`, :data:`EXTRA_SIZES`), the named
plans (``mix_order``, ``filter``), each config's :class:`LayerSpec`, the priority order and the selection by
``--only`` / ``--skip-from``. Pure Python.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from fnmatch import fnmatch
from pathlib import Path

from .._decoder import LINEAR_GROUPS, DecoderConfig

__all__ = [
    "ALL_LINEARS",
    "BATCHES",
    "EXTRA_SIZES",
    "FILTER_CASES",
    "FP8_RECIPES",
    "GROUPS",
    "LAYER_SIZES",
    "MIX_ORDER_CASES",
    "PLANS",
    "PRIORITIES",
    "QUICK_SEQ_LEN",
    "QUICK_SIZE",
    "Q_ONLY",
    "RECIPES",
    "SEQ_LEN",
    "SUBSET_CASE_ORDER",
    "LayerSize",
    "LayerSpec",
    "Log",
    "cases_plan",
    "done_ids",
    "layer_plan",
    "layer_size",
    "make_spec",
    "mix_order_plan",
    "named_plan",
    "select",
]


Log = Callable[[str], None]

# ---- plan -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class LayerSize:
    """A decoder-layer shape of the sweep; ``subsets``: enumerate all 16 group subsets for it."""

    key: str
    model: str
    dim: int
    ffn: int
    heads: int
    kv_heads: int
    head_dim: int = 128
    subsets: bool = False


LAYER_SIZES: tuple[LayerSize, ...] = (
    LayerSize(key="d2048", model="llama3.2-1b-like", dim=2048, ffn=8192, heads=16, kv_heads=8, subsets=True),
    LayerSize(key="d4096", model="llama3-8b", dim=4096, ffn=14336, heads=32, kv_heads=8, subsets=True),
    LayerSize(key="d8192", model="llama3-70b", dim=8192, ffn=28672, heads=64, kv_heads=8),
)
#: sizes measured only when asked for (``--sizes``): layers no fit has seen, to score the step model on
EXTRA_SIZES: tuple[LayerSize, ...] = (
    # Qwen2.5-14B's shapes (hidden 5120, MLP 13824, 40 query / 8 KV heads of 128; huggingface.co/Qwen/Qwen2.5-14B
    # config.json) as a Llama-style layer (no q/k/v bias)
    LayerSize(key="d5120", model="qwen2.5-14b-like", dim=5120, ffn=13824, heads=40, kv_heads=8),
    # Llama 3.2 3B (hidden 3072, MLP 8192, 24 query / 8 KV heads of 128; huggingface.co/meta-llama/Llama-3.2-3B
    # config.json)
    LayerSize(key="d3072", model="llama3.2-3b", dim=3072, ffn=8192, heads=24, kv_heads=8),
    # Qwen2.5-7B's shapes (hidden 3584, MLP 18944, 28 query / 4 KV heads of 128; huggingface.co/Qwen/Qwen2.5-7B
    # config.json) as a Llama-style layer (no q/k/v bias): 7 query heads per KV head, dims not powers of two
    LayerSize(key="d3584", model="qwen2.5-7b-like", dim=3584, ffn=18944, heads=28, kv_heads=4),
    # Qwen3-14B's shapes (hidden 5120, MLP 17408, 40 query / 8 KV heads of 128; huggingface.co/Qwen/Qwen3-14B
    # config.json) as a Llama-style layer (no per-head q/k RMSNorm): dim 5120 with another MLP width
    LayerSize(key="d5120q", model="qwen3-14b-like", dim=5120, ffn=17408, heads=40, kv_heads=8),
)
#: ``--plan mix_order``: (size, batch, seq_len) -> configs (recipe, groups; "q" = attention.wq alone) that test
#: the step model's rule for inductor's persistent mix-order norm backward with tensorwise q/k/v
#: (perfmodel.step.kernels.mix_order_cast): batch 1 where the rule fires, batch 2 at the same tokens where it
#: does not, three layer sizes, and token counts the main sweep does not have (8192, 16384 at batch 1)
MIX_ORDER_CASES: tuple[tuple[str, int, int, tuple[tuple[str, str], ...]], ...] = (
    ("d2048", 1, 8192, (("bf16", ""), ("tensorwise", "all"), ("tensorwise", "qkv"), ("rowwise", "all"))),
    ("d2048", 2, 8192, (("bf16", ""), ("tensorwise", "all"))),
    ("d2048", 1, 16384, (("bf16", ""), ("tensorwise", "all"))),
    ("d3072", 1, 4096, (("bf16", ""), ("tensorwise", "all"))),
    (
        "d3072",
        1,
        8192,
        (("bf16", ""), ("tensorwise", "all"), ("tensorwise", "qkv"), ("tensorwise", "q"), ("rowwise", "all")),
    ),
    ("d4096", 1, 8192, (("bf16", ""), ("tensorwise", "all"), ("tensorwise", "qkv"), ("rowwise", "all"))),
    ("d4096", 2, 8192, (("bf16", ""), ("tensorwise", "all"))),
)
#: ``--plan filter``: the float8 groups the step model's filter picks where the mix-order rule fires (tensorwise:
#: every group but q/k/v; rowwise: w13 or w13 + w2), next to bf16 and every Linear converted in the same session
FILTER_CASES: tuple[tuple[str, int, int, tuple[tuple[str, str], ...]], ...] = (
    ("d2048", 1, 8192, (("bf16", ""), ("tensorwise", "all"), ("tensorwise", "o+w13+w2"))),
    ("d2048", 1, 16384, (("bf16", ""), ("tensorwise", "all"), ("tensorwise", "o+w13+w2"), ("rowwise", "w13"))),
    ("d3072", 1, 8192, (("bf16", ""), ("tensorwise", "all"), ("tensorwise", "o+w13+w2"), ("rowwise", "w13"))),
    (
        "d4096",
        1,
        8192,
        (
            ("bf16", ""),
            ("tensorwise", "all"),
            ("tensorwise", "o+w13+w2"),
            ("rowwise", "w13+w2"),
            ("rowwise", "all"),
        ),
    ),
)
#: named plans besides the main sweep (``--plan``)
PLANS: tuple[str, ...] = ("sweep", "mix_order", "filter")
QUICK_SIZE = LayerSize(key="d1024", model="tiny", dim=1024, ffn=4096, heads=8, kv_heads=4)
SEQ_LEN = 4096
BATCHES: tuple[int, ...] = (1, 4)
QUICK_SEQ_LEN = 2048
FP8_RECIPES: tuple[str, ...] = ("tensorwise", "rowwise")
RECIPES: tuple[str, ...] = ("bf16", "tensorwise", "rowwise", "rowwise_with_gw_hp")
GROUPS: tuple[str, ...] = tuple(LINEAR_GROUPS)
ALL_LINEARS: tuple[str, ...] = tuple(n for g in GROUPS for n in LINEAR_GROUPS[g])
Q_ONLY: tuple[str, ...] = ("attention.wq",)

#: priority -> what it holds; lower runs first.
PRIORITIES: Mapping[int, str] = {
    0: "bf16, tensorwise all, rowwise all (every layer and token count)",
    1: "rowwise_with_gw_hp all",
    2: "one group alone (qkv, o, w13, w2) x tensorwise, rowwise",
    3: "q alone (attention.wq) x tensorwise, rowwise: the shared-input cast effect against qkv",
    4: "the other group subsets (2 and 3 groups) x tensorwise, rowwise, two smaller layers",
}
# the enumeration (priority 4) does the 4096-token cases first: float8 loses most there
SUBSET_CASE_ORDER: tuple[tuple[str, int], ...] = (("d2048", 1), ("d4096", 1), ("d2048", 4), ("d4096", 4))


@dataclasses.dataclass(frozen=True, kw_only=True)
class LayerSpec:
    """One decoder-layer config: shape, tokens, recipe and the Linears converted to float8."""

    id: str
    priority: int
    case: str
    model: str
    dim: int
    ffn: int
    heads: int
    kv_heads: int
    head_dim: int
    batch: int
    seq_len: int
    recipe: str  # "bf16" or a torchao Float8LinearRecipeName value
    subset: str  # "none" | "all" | "q" | "+"-joined groups
    groups: tuple[str, ...]  # groups whose Linears are all converted
    converted: tuple[str, ...]  # Linear module names converted to Float8Linear

    @property
    def tokens(self) -> int:
        return self.batch * self.seq_len

    def decoder_config(self) -> DecoderConfig:
        return DecoderConfig(
            dim=self.dim, ffn=self.ffn, heads=self.heads, kv_heads=self.kv_heads, head_dim=self.head_dim
        )

    def linear_shapes(self) -> dict[str, tuple[int, int]]:
        """(in_features K, out_features N) of every Linear, by module name."""
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        return {
            "attention.wq": (self.dim, q),
            "attention.wk": (self.dim, kv),
            "attention.wv": (self.dim, kv),
            "attention.wo": (q, self.dim),
            "feed_forward.w1": (self.dim, self.ffn),
            "feed_forward.w2": (self.ffn, self.dim),
            "feed_forward.w3": (self.dim, self.ffn),
        }

    def linear_params(self, names: Iterable[str] | None = None) -> int:
        shapes = self.linear_shapes()
        return sum(shapes[n][0] * shapes[n][1] for n in (shapes if names is None else names))

    @property
    def linear_flops(self) -> int:
        """fwd + bwd FLOP of the seven Linears: 3 GEMMs × 2·tokens·K·N each."""
        return 6 * self.tokens * self.linear_params()

    @property
    def attention_flops(self) -> int:
        """Causal SDPA fwd + bwd: fwd 2·b·s²·heads·head_dim (half of 4·b·s²·h·d), bwd 2.5 × fwd."""
        return 7 * self.batch * self.seq_len**2 * self.heads * self.head_dim


def _subset_label(groups: Sequence[str]) -> str:
    if not groups:
        return "none"
    return "all" if tuple(groups) == GROUPS else "+".join(groups)


def make_spec(
    size: LayerSize,
    batch: int,
    seq_len: int,
    recipe: str,
    groups: Sequence[str] = (),
    *,
    converted: Sequence[str] | None = None,
    subset: str | None = None,
    priority: int = 0,
) -> LayerSpec:
    """A :class:`LayerSpec`; ``converted`` defaults to the Linears of ``groups`` (none for bf16)."""
    if recipe not in RECIPES:
        raise ValueError(f"unknown recipe {recipe!r}; valid: {', '.join(RECIPES)}")
    bad = [g for g in groups if g not in LINEAR_GROUPS]
    if bad:
        raise ValueError(f"unknown Linear group(s) {bad}; valid: {', '.join(GROUPS)}")
    groups = tuple(g for g in GROUPS if g in groups)  # canonical order
    if converted is None:
        converted = tuple(n for g in groups for n in LINEAR_GROUPS[g])
    converted = tuple(converted)
    if recipe == "bf16" and converted:
        raise ValueError("a bf16 config converts no Linear")
    if recipe != "bf16" and not converted:
        raise ValueError(f"a {recipe} config must convert at least one Linear")
    unknown = [n for n in converted if n not in ALL_LINEARS]
    if unknown:
        raise ValueError(f"unknown Linear name(s) {unknown}; valid: {', '.join(ALL_LINEARS)}")
    subset = subset or _subset_label(groups)
    case = f"{size.key}-b{batch}s{seq_len}"
    return LayerSpec(
        id=case + "-bf16" if recipe == "bf16" else f"{case}-{recipe}-{subset}",
        priority=priority,
        case=case,
        model=size.model,
        dim=size.dim,
        ffn=size.ffn,
        heads=size.heads,
        kv_heads=size.kv_heads,
        head_dim=size.head_dim,
        batch=batch,
        seq_len=seq_len,
        recipe=recipe,
        subset=subset,
        groups=groups,
        converted=converted,
    )


def layer_size(key: str) -> LayerSize:
    """The sweep size named ``key`` (:data:`LAYER_SIZES` and :data:`EXTRA_SIZES`)."""
    sizes = {s.key: s for s in (*LAYER_SIZES, *EXTRA_SIZES)}
    if key not in sizes:
        raise ValueError(f"unknown layer size {key!r}; valid: {', '.join(sizes)}")
    return sizes[key]


def layer_plan(*, quick: bool = False, sizes: Sequence[LayerSize] = LAYER_SIZES) -> list[LayerSpec]:
    """Every config in run order (priority, then case, then recipe/subset); deterministic.

    Per (layer, tokens): bf16; tensorwise and rowwise with all 7 Linears, each group alone and q
    alone; rowwise_with_gw_hp with all; for the two smaller layers also the 2- and 3-group subsets
    (with the bf16, single-group and all configs: all 16 subsets of the 4 groups per recipe).
    ``quick``: bf16 and tensorwise-all of a small layer (dim 1024, 2048 tokens)."""
    if quick:
        return [
            make_spec(QUICK_SIZE, 1, QUICK_SEQ_LEN, "bf16"),
            make_spec(QUICK_SIZE, 1, QUICK_SEQ_LEN, "tensorwise", GROUPS),
        ]
    cases = [(size, b) for size in sizes for b in BATCHES]
    specs: list[LayerSpec] = []
    for size, b in cases:
        specs.append(make_spec(size, b, SEQ_LEN, "bf16", priority=0))
        specs += [make_spec(size, b, SEQ_LEN, r, GROUPS, priority=0) for r in FP8_RECIPES]
    specs += [make_spec(size, b, SEQ_LEN, "rowwise_with_gw_hp", GROUPS, priority=1) for size, b in cases]
    for size, b in cases:
        specs += [make_spec(size, b, SEQ_LEN, r, (g,), priority=2) for g in GROUPS for r in FP8_RECIPES]
    for size, b in cases:
        specs += [make_spec(size, b, SEQ_LEN, r, (), converted=Q_ONLY, subset="q", priority=3) for r in FP8_RECIPES]
    by_key = {s.key: s for s in sizes}
    subsets = [c for n in (2, 3) for c in itertools.combinations(GROUPS, n)]
    for key, b in SUBSET_CASE_ORDER:
        if key in by_key and by_key[key].subsets:
            specs += [
                make_spec(by_key[key], b, SEQ_LEN, r, c, priority=4) for c in subsets for r in ("rowwise", "tensorwise")
            ]
    return specs


def mix_order_plan() -> list[LayerSpec]:
    """The ``mix_order`` plan (:data:`MIX_ORDER_CASES`), in that order."""
    return cases_plan(MIX_ORDER_CASES)


def named_plan(name: str) -> list[LayerSpec]:
    """A ``--plan``: ``"mix_order"`` (:data:`MIX_ORDER_CASES`) or ``"filter"`` (:data:`FILTER_CASES`)."""
    if name == "mix_order":
        return cases_plan(MIX_ORDER_CASES)
    if name == "filter":
        return cases_plan(FILTER_CASES)
    raise ValueError(f"unknown plan {name!r}; valid: {', '.join(PLANS)}")


def cases_plan(cases: Sequence[tuple[str, int, int, Sequence[tuple[str, str]]]]) -> list[LayerSpec]:
    """Specs for (size key, batch, seq_len, ((recipe, groups), ...)): groups ``""`` (bf16), ``"all"``, ``"q"``
    (attention.wq alone) or ``+``-joined group names."""
    specs = []
    for key, batch, seq_len, configs in cases:
        size = layer_size(key)
        for recipe, groups in configs:
            if groups == "q":
                specs.append(make_spec(size, batch, seq_len, recipe, (), converted=Q_ONLY, subset="q"))
            else:
                chosen = GROUPS if groups == "all" else tuple(groups.split("+")) if groups else ()
                specs.append(make_spec(size, batch, seq_len, recipe, chosen))
    return specs


def select(
    specs: Sequence[LayerSpec],
    *,
    only: Sequence[str] = (),
    priority_max: int | None = None,
    skip_ids: Iterable[str] = (),
) -> list[LayerSpec]:
    """The specs whose id matches one of ``only`` (fnmatch patterns; empty: all), priority ≤
    ``priority_max`` and id not in ``skip_ids``, in plan order."""
    skip = set(skip_ids)
    return [
        s
        for s in specs
        if (not only or any(fnmatch(s.id, p) for p in only))
        and (priority_max is None or s.priority <= priority_max)
        and s.id not in skip
    ]


def done_ids(paths: Iterable[str | os.PathLike[str]]) -> set[str]:
    """Ids with a successful ``layer`` record (a step time and no errors) in the dataset files."""
    out = set()
    for p in paths:
        for rec in json.loads(Path(p).read_text()).get("records", []):
            if rec.get("op") == "layer" and rec.get("step_time_s") and not rec.get("errors"):
                out.add(rec["id"])
    return out
