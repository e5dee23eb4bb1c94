"""The memory sweep's configurations: :class:`MemConfig`, the priority-ordered :data:`PLAN`, lookup by name
and pattern."""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Sequence
from typing import Any

from ...errors import PerfModelError

__all__ = [
    "AC_MODES",
    "FP8AG_TRIOS",
    "MODES",
    "PLAN",
    "RECIPES",
    "ROUND3",
    "ROUND4",
    "ROUND5",
    "ROUND6",
    "SELFTEST_SHAPE",
    "SHAPES",
    "MemConfig",
    "get_config",
    "select",
]

MODES = ("fsdp", "amp", "bf16")
AC_MODES = ("none", "selective", "full")
RECIPES = ("bf16", "tensorwise", "rowwise")
#: Llama-style shapes that are not perfmodel presets: dim, ffn, heads, kv_heads, head_dim, vocab, rope theta
#: (Llama 3.2 1B: huggingface.co/meta-llama/Llama-3.2-1B config.json; its embedding is tied, ours is not)
SHAPES: dict[str, dict[str, Any]] = {
    "llama3.2-1b": dict(
        dim=2048, ffn=8192, heads=32, kv_heads=8, head_dim=64, vocab=128256, layers=16, rope_theta=500000.0
    ),
}
_MEM_STATS = (
    "allocated_bytes.all.peak",
    "active_bytes.all.peak",
    "reserved_bytes.all.peak",
    "requested_bytes.all.peak",
    "inactive_split_bytes.all.peak",
    "allocated_bytes.all.current",
    "reserved_bytes.all.current",
    "num_alloc_retries",
    "num_ooms",
    "num_device_alloc",
    "num_device_free",
    "num_sync_all_streams",
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class MemConfig:
    """One training configuration on one GPU (sizes in tokens and layers; see the module doc)."""

    name: str
    model: str  # a perfmodel preset (Llama-style) or a key of SHAPES
    layers: int
    seq: int
    batch: int
    ac: str = "none"
    mode: str = "fsdp"
    recipe: str = "bf16"
    fp8_all_gather: bool = False
    compile: bool = False
    vocab: int | None = None  # None: the model's
    expect: str = ""  # "oom" / "near": chosen to test est.fits at the GPU's limit
    note: str = ""

    def __post_init__(self) -> None:
        for field, value, valid in (
            ("mode", self.mode, MODES),
            ("ac", self.ac, AC_MODES),
            ("recipe", self.recipe, RECIPES),
        ):
            if value not in valid:
                raise PerfModelError(f"MemConfig {self.name}: {field}={value!r}; valid: {', '.join(valid)}")
        if self.fp8_all_gather and (self.recipe != "tensorwise" or self.mode != "fsdp"):
            raise PerfModelError(f"MemConfig {self.name}: fp8_all_gather needs recipe='tensorwise' and mode='fsdp'")
        for field in ("layers", "seq", "batch"):
            v = getattr(self, field)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise PerfModelError(f"MemConfig {self.name}: {field} must be a positive int, got {v!r}")

    @property
    def tokens(self) -> int:
        return self.seq * self.batch

    def shape(self) -> dict[str, Any]:
        """dim, ffn, heads, kv_heads, head_dim, vocab, rope_theta of the model (vocab overridden by ``vocab``)."""
        if self.model in SHAPES:
            s = dict(SHAPES[self.model])
        else:
            from ...presets import get_preset

            p = get_preset(self.model)
            lay = p.layer
            if lay is None or lay.activation != "swiglu" or lay.norm != "rmsnorm" or not lay.rope:
                raise PerfModelError(f"{self.model}: not a Llama-style preset (RMSNorm, SwiGLU, RoPE); use one that is")
            head = [lin.out_features for lin in p.linears if lin.layers == 1 and lin.name in ("lm_head", "output")]
            s = dict(
                dim=lay.hidden,
                ffn=lay.ffn,
                heads=lay.heads,
                kv_heads=lay.kv_heads or lay.heads,
                head_dim=lay.head_dim or lay.hidden // lay.heads,
                vocab=head[0] if head else 0,
                layers=p.layers,
                rope_theta=500000.0,
            )
        if self.vocab is not None:
            s["vocab"] = self.vocab
        return s

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "vocab": self.shape()["vocab"], "tokens": self.tokens}


def _c(name: str, model: str, layers: int, seq: int, batch: int, **kw: Any) -> MemConfig:
    return MemConfig(name=name, model=model, layers=layers, seq=seq, batch=batch, **kw)


_8B, _70B = "llama3-8b", "llama3-70b"
#: priority order (most valuable first): the estimate's own setup (FSDP2, world 1) across AC modes and shapes,
#: float8 with and without float8 all-gather, the configurations at the GPU's limit, compile, then the rest.
PLAN: tuple[MemConfig, ...] = (
    _c("fsdp_8b_L2_s8k_b1_none", _8B, 2, 8192, 1),
    _c("fsdp_8b_L2_s8k_b1_full", _8B, 2, 8192, 1, ac="full"),
    _c("fsdp_8b_L2_s8k_b1_sel", _8B, 2, 8192, 1, ac="selective"),
    _c("fsdp_70b_L1_s8k_b1_none", _70B, 1, 8192, 1),
    _c("fsdp_8b_L4_s8k_b2_none", _8B, 4, 8192, 2),
    _c("fsdp_8b_L4_s8k_b2_none_tw", _8B, 4, 8192, 2, recipe="tensorwise"),
    _c("fsdp_8b_L4_s8k_b2_none_tw_fp8ag", _8B, 4, 8192, 2, recipe="tensorwise", fp8_all_gather=True),
    _c("fsdp_8b_L4_s8k_b8_none_oom", _8B, 4, 8192, 8, expect="oom", note="estimate 126 GiB: above 95 % of the GPU"),
    _c("fsdp_8b_L4_s8k_b6_none_near", _8B, 4, 8192, 6, expect="near", note="estimate 104 GiB; fp32 loss adds more"),
    _c("fsdp_8b_L2_s8k_b1_none_compile", _8B, 2, 8192, 1, compile=True),
    _c("fsdp_8b_L2_s8k_b1_sel_compile", _8B, 2, 8192, 1, ac="selective", compile=True),
    _c("amp_8b_L4_s8k_b2_none", _8B, 4, 8192, 2, mode="amp"),
    _c("fsdp_1b_L16_s8k_b2_sel", "llama3.2-1b", 16, 8192, 2, ac="selective"),
    _c("fsdp_70b_L1_s8k_b4_none_near", _70B, 1, 8192, 4, expect="near", note="estimate 102 GiB; fp32 loss adds more"),
    _c("fsdp_8b_L4_s8k_b2_none_rw", _8B, 4, 8192, 2, recipe="rowwise"),
    _c("fsdp_8b_L2_s8k_b1_none_tw_compile", _8B, 2, 8192, 1, recipe="tensorwise", compile=True),
    _c("fsdp_8b_L4_s8k_b2_full_tw_fp8ag", _8B, 4, 8192, 2, ac="full", recipe="tensorwise", fp8_all_gather=True),
    _c("fsdp_70b_L1_s8k_b1_full_tw_fp8ag", _70B, 1, 8192, 1, ac="full", recipe="tensorwise", fp8_all_gather=True),
    _c("fsdp_qwen7b_L2_s8k_b2_none", "qwen2.5-7b", 2, 8192, 2),
    _c("amp_8b_L4_s8k_b2_none_tw", _8B, 4, 8192, 2, mode="amp", recipe="tensorwise"),
    _c("bf16_8b_L4_s8k_b2_none", _8B, 4, 8192, 2, mode="bf16"),
    _c("fsdp_8b_L4_s4k_b4_full", _8B, 4, 4096, 4, ac="full"),
    _c("fsdp_8b_L4_s8k_b8_full_near", _8B, 4, 8192, 8, ac="full", expect="near", note="full AC: logits dominate"),
    _c("fsdp_70b_L2_s8k_b2_full_near", _70B, 2, 8192, 2, ac="full", expect="near"),
    _c("fsdp_8b_L2_s8k_b1_none_tw", _8B, 2, 8192, 1, recipe="tensorwise", note="eager pair of the compiled one"),
    _c("fsdp_8b_L2_s8k_b1_none_rw_compile", _8B, 2, 8192, 1, recipe="rowwise", compile=True),
    # compiled steps as torchtitan runs them: float8 all-gather against its pair, and stacks where the loss moment
    # (not the end of backward) is the compiled peak
    _c("fsdp_8b_L4_s8k_b2_none_compile", _8B, 4, 8192, 2, compile=True),
    _c("fsdp_8b_L4_s8k_b2_none_tw_compile", _8B, 4, 8192, 2, recipe="tensorwise", compile=True),
    _c(
        "fsdp_8b_L4_s8k_b2_none_tw_fp8ag_compile",
        _8B,
        4,
        8192,
        2,
        recipe="tensorwise",
        fp8_all_gather=True,
        compile=True,
    ),
    _c("fsdp_8b_L4_s8k_b4_sel_compile", _8B, 4, 8192, 4, ac="selective", compile=True),
    _c("fsdp_70b_L1_s8k_b2_none_tw_compile", _70B, 1, 8192, 2, recipe="tensorwise", compile=True),
    _c(
        "fsdp_70b_L1_s8k_b2_none_tw_fp8ag_compile",
        _70B,
        1,
        8192,
        2,
        recipe="tensorwise",
        fp8_all_gather=True,
        compile=True,
    ),
    # round 3 (2026-12-04), held out and pre-registered: eager AC runs added after the end-of-backward fix
    # (perfmodel.train.memory: no recomputed activations alive at the end of backward; the first layer's
    # recompute as its own moment, an estimate), predictions committed before the run. The 32k-vocabulary and
    # long-sequence runs are where that new moment is predicted to be the peak.
    _c("fsdp_70b_L1_s16k_b1_full_v32k", _70B, 1, 16384, 1, ac="full", vocab=32000),
    _c("fsdp_70b_L1_s16k_b1_sel_v32k", _70B, 1, 16384, 1, ac="selective", vocab=32000),
    _c("fsdp_8b_L1_s32k_b1_full_v32k", _8B, 1, 32768, 1, ac="full", vocab=32000),
    _c("fsdp_70b_L1_s32k_b1_full_v32k", _70B, 1, 32768, 1, ac="full", vocab=32000),
    _c("fsdp_8b_L2_s16k_b1_full", _8B, 2, 16384, 1, ac="full"),
    _c("fsdp_qwen7b_L4_s8k_b2_sel", "qwen2.5-7b", 4, 8192, 2, ac="selective"),
    _c("fsdp_1b_L8_s16k_b2_full", "llama3.2-1b", 8, 16384, 2, ac="full"),
    _c("fsdp_70b_L1_s8k_b1_sel_tw", _70B, 1, 8192, 1, ac="selective", recipe="tensorwise"),
    _c("amp_8b_L2_s8k_b2_full", _8B, 2, 8192, 2, ac="full", mode="amp"),
    # round 4 (pre-registered 2026-12-04, after the first layer's recompute moment was rebuilt from the allocator's
    # trace, h200_2026-12-04m): two shapes no run had (Llama 3 405B, Qwen3 14B), 70B with two layers (the second
    # layer's reduce-scatter buffer) and 40k tokens; predictions committed before the run.
    _c("fsdp_405b_L1_s16k_b1_full_v32k", "llama3-405b", 1, 16384, 1, ac="full", vocab=32000),
    _c("fsdp_405b_L1_s8k_b1_sel_v32k", "llama3-405b", 1, 8192, 1, ac="selective", vocab=32000),
    _c("fsdp_70b_L2_s24k_b1_full_v32k", _70B, 2, 24576, 1, ac="full", vocab=32000),
    _c("fsdp_70b_L2_s16k_b1_sel_v32k", _70B, 2, 16384, 1, ac="selective", vocab=32000),
    _c("fsdp_70b_L1_s40k_b1_full_v32k", _70B, 1, 40960, 1, ac="full", vocab=32000),
    _c("fsdp_qwen7b_L1_s32k_b1_full_v32k", "qwen2.5-7b", 1, 32768, 1, ac="full", vocab=32000),
    _c("fsdp_qwen14b_L1_s32k_b1_full_v32k", "qwen3-14b", 1, 32768, 1, ac="full", vocab=32000),
    _c("fsdp_qwen14b_L2_s16k_b2_sel", "qwen3-14b", 2, 16384, 2, ac="selective"),
    # round 5 (pre-registered 2026-12-04, after the embedding's-backward moment was added from round 4's 405B trace,
    # h200_2026-12-04r): layers with more parameters than the embedding, short sequences, every ac mode, a 64k
    # vocabulary, so that moment is predicted to be the peak of all but the last; predictions committed before the run.
    _c("fsdp_405b_L1_s4k_b1_full_v32k", "llama3-405b", 1, 4096, 1, ac="full", vocab=32000),
    _c("fsdp_405b_L1_s8k_b1_none_v32k", "llama3-405b", 1, 8192, 1, ac="none", vocab=32000),
    _c("fsdp_405b_L1_s4k_b1_sel_v64k", "llama3-405b", 1, 4096, 1, ac="selective", vocab=65536),
    _c("fsdp_70b_L1_s4k_b1_full_v32k", _70B, 1, 4096, 1, ac="full", vocab=32000),
    _c("fsdp_70b_L2_s4k_b2_sel_v32k", _70B, 2, 4096, 2, ac="selective", vocab=32000),
    _c("fsdp_qwen14b_L1_s4k_b1_full_v32k", "qwen3-14b", 1, 4096, 1, ac="full", vocab=32000),
    _c("fsdp_8b_L2_s4k_b1_full_v32k", _8B, 2, 4096, 1, ac="full", vocab=32000),
    # round 6 (pre-registered 2026-12-04 evening, after the compiled-float8 term, perfmodel.train.memory
    # FLOAT8_COMPILED_UNSAVED, was read from the allocator at the 8B compiled peak, h200_2026-12-04u): rowwise (never
    # measured at a loss peak), other shapes (Qwen2.5 7B, Qwen3 14B), 6 layers with float8 all-gather, 16k sequences,
    # and two controls: selective AC (where the term does not apply) and a 70B stack whose peak is the end of backward.
    _c("fsdp_8b_L4_s8k_b2_none_rw_compile", _8B, 4, 8192, 2, recipe="rowwise", compile=True),
    _c("fsdp_qwen7b_L4_s8k_b2_none_rw_compile", "qwen2.5-7b", 4, 8192, 2, recipe="rowwise", compile=True),
    _c(
        "fsdp_8b_L6_s8k_b2_none_tw_fp8ag_compile",
        _8B,
        6,
        8192,
        2,
        recipe="tensorwise",
        fp8_all_gather=True,
        compile=True,
    ),
    _c("fsdp_8b_L4_s16k_b2_none_tw_compile", _8B, 4, 16384, 2, recipe="tensorwise", compile=True),
    _c("fsdp_qwen14b_L2_s8k_b2_none_rw_compile", "qwen3-14b", 2, 8192, 2, recipe="rowwise", compile=True),
    _c("fsdp_8b_L4_s8k_b4_sel_tw_compile", _8B, 4, 8192, 4, ac="selective", recipe="tensorwise", compile=True),
    _c("fsdp_70b_L2_s8k_b2_none_tw_compile", _70B, 2, 8192, 2, recipe="tensorwise", compile=True),
    # float8 all-gather at torchtitan's batch (2026-12-04 evening, predictions committed before the run): the bf16 /
    # tensorwise / tensorwise + float8 all-gather trio of h200_2026-12-03e at batch 1, to set beside torchtitan's
    # batch-1 run (+0.2 points measured) and the batch-2 trio (run again in the same call: its repeatability)
    _c("fsdp_8b_L4_s8k_b1_none_compile", _8B, 4, 8192, 1, compile=True),
    _c("fsdp_8b_L4_s8k_b1_none_tw_compile", _8B, 4, 8192, 1, recipe="tensorwise", compile=True),
    _c(
        "fsdp_8b_L4_s8k_b1_none_tw_fp8ag_compile",
        _8B,
        4,
        8192,
        1,
        recipe="tensorwise",
        fp8_all_gather=True,
        compile=True,
    ),
)


def _names(first: str, last: str) -> tuple[str, ...]:
    """The names of :data:`PLAN`'s configurations from ``first`` to ``last``, both included (one round)."""
    names = [c.name for c in PLAN]
    return tuple(names[names.index(first) : names.index(last) + 1])


#: names of the round-3 configurations (held out, pre-registered 2026-12-04)
ROUND3 = _names("fsdp_70b_L1_s16k_b1_full_v32k", "amp_8b_L2_s8k_b2_full")
#: names of the round-4 configurations (held out, pre-registered 2026-12-04, after the recompute-moment change)
ROUND4 = _names("fsdp_405b_L1_s16k_b1_full_v32k", "fsdp_qwen14b_L2_s16k_b2_sel")
#: names of the round-5 configurations (held out, pre-registered 2026-12-04, after the embedding-moment change)
ROUND5 = _names("fsdp_405b_L1_s4k_b1_full_v32k", "fsdp_8b_L2_s4k_b1_full_v32k")
#: names of the round-6 configurations (held out, pre-registered 2026-12-04 evening, after the compiled-float8 term)
ROUND6 = _names("fsdp_8b_L4_s8k_b2_none_rw_compile", "fsdp_70b_L2_s8k_b2_none_tw_compile")
#: the float8 all-gather trios (batch 2 of h200_2026-12-03e, again, and batch 1), 2026-12-04 evening
FP8AG_TRIOS = (
    "fsdp_8b_L4_s8k_b2_none_compile",
    "fsdp_8b_L4_s8k_b2_none_tw_compile",
    "fsdp_8b_L4_s8k_b2_none_tw_fp8ag_compile",
    *_names("fsdp_8b_L4_s8k_b1_none_compile", "fsdp_8b_L4_s8k_b1_none_tw_fp8ag_compile"),
)
#: the tiny model ``selftest`` runs (dim 128, vocab 256; 361 088 parameters with 2 layers)
SELFTEST_SHAPE = dict(dim=128, ffn=256, heads=2, kv_heads=1, head_dim=64, vocab=256, layers=2, rope_theta=10000.0)


def get_config(name: str, plan: Sequence[MemConfig] = PLAN) -> MemConfig:
    """The plan's configuration called ``name`` (raises :class:`PerfModelError` listing the valid names)."""
    for cfg in plan:
        if cfg.name == name:
            return cfg
    raise PerfModelError(f"no memory configuration {name!r}; valid: {', '.join(c.name for c in plan)}")


def select(patterns: str, plan: Sequence[MemConfig] = PLAN) -> list[MemConfig]:
    """The configurations whose names match one of the comma-separated shell ``patterns`` (empty: all), in
    plan order. A pattern that matches none raises :class:`PerfModelError`."""
    pats = [p.strip() for p in patterns.split(",") if p.strip()]
    if not pats:
        return list(plan)
    for p in pats:
        if not any(fnmatch.fnmatchcase(c.name, p) for c in plan):
            raise PerfModelError(f"pattern {p!r} matches no configuration; valid: {', '.join(c.name for c in plan)}")
    return [c for c in plan if any(fnmatch.fnmatchcase(c.name, p) for p in pats)]
