"""The Linear filter: torchao's ``module_filter_fn`` from perfmodel's per-Linear decision (public:
:func:`perfmodel.float8.module_filter`, also named :func:`perfmodel.float8.linear_filter`).

It prices each ``nn.Linear`` by its own shape (:func:`perfmodel.float8.speedup`), as one rank runs it under
tensor parallelism. :func:`perfmodel.step.module_filter` (the layer-group filter) prices whole decoder layers
of a preset instead; ``docs/float8.md`` ("Which filter?") says when to use which.

Fully-qualified names (fqns) are matched by whole dot-separated components: the pattern ``"lm_head"``
matches ``lm_head`` and ``model.lm_head`` but not ``lm_head_norm``; ``"layers.1"`` matches
``layers.1.attention.wq`` but not ``layers.12.attention.wq``. A compiled regular expression
(``re.compile(...)``) matches where ``pattern.search(fqn)`` does. A single string is one pattern.
``exclude``, the keys of a ``tokens`` mapping and the keys of ``tp_plan`` are such patterns.

Tensor parallelism (``tp > 1``): torchtitan converts to float8 *before* it shards, so the filter sees each
Linear's full shape while every rank runs a shard. A column-parallel Linear runs ``K x N/tp``, a row-parallel
one ``K/tp x N`` (a replicated one the full shape); the filter prices that shard. Which is which comes from
``tp_plan`` (default :data:`LLAMA_TP_PLAN`, torchtitan's plan for Llama blocks with the Hugging Face names of
the same Linears). Under ``tp > 1`` a Linear that no plan entry matches raises
:class:`~perfmodel.errors.InvalidParallelismError` (guessing its sharding could flip the decision).
"""

from __future__ import annotations

import dataclasses
import math
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Union

import numpy as np

from .._backend import check_flag, check_ratio, check_size, short_repr, time_model_arg
from ..errors import (
    IneligibleShapeError,
    InvalidParallelismError,
    NoCurrentGPUError,
    PerfModelError,
    PerfModelWarning,
    UnknownGPUError,
)
from ..models.registry import ModelLike
from ..presets import ModelPreset, get_preset
from ..specs.gpu import GPULike, GPUSpec, get_gpu
from .decide import speedup
from .linear import FP8_ALIGN, linear_time
from .recipes import Recipe, get_recipe

__all__ = [
    "LLAMA_TP_PLAN",
    "SHARDINGS",
    "FilterDecision",
    "Float8ModuleFilter",
    "FqnPattern",
    "TokensLike",
    "current_gpu",
    "fqn_matches",
    "linear_filter",
    "module_filter",
    "preset_filters",
]

FqnPattern = Union[str, "re.Pattern[str]"]
TokensLike = Union[int, Mapping[Any, int], Callable[[str], int]]  # noqa: UP007

#: how tensor parallelism splits a Linear: ``colwise`` shards out_features (N), ``rowwise`` in_features (K),
#: ``replicate`` keeps the whole weight on every rank (torchtitan's ColwiseParallel / RowwiseParallel / none)
SHARDINGS = ("colwise", "rowwise", "replicate")

#: torchtitan's TP plan for Llama-style blocks (``torchtitan/models/llama3/infra/parallelize.py``, ``apply_tp``:
#: attention wq/wk/wv ColwiseParallel, wo RowwiseParallel; feed_forward w1/w3 Colwise, w2 Rowwise; the final
#: ``output`` Colwise), with the Hugging Face names of the same Linears (q/k/v/gate/up_proj column,
#: o/down_proj row, lm_head column) and the GeLU MLP's fc1 (column) / fc2 (row). Patterns are whole leaf
#: components; ``output`` only as the last component (``attention.output.dense`` is not a head).
LLAMA_TP_PLAN: Mapping[FqnPattern, str] = MappingProxyType(
    {
        **dict.fromkeys(("wq", "wk", "wv", "w1", "w3"), "colwise"),
        **dict.fromkeys(("wo", "w2"), "rowwise"),
        **dict.fromkeys(("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "fc1"), "colwise"),
        **dict.fromkeys(("o_proj", "down_proj", "fc2"), "rowwise"),
        re.compile(r"(?:^|\.)output$"): "colwise",
        "lm_head": "colwise",
    }
)

_SHARDING_ALIASES = {
    "colwise": "colwise",
    "column": "colwise",
    "colwiseparallel": "colwise",
    "rowwise": "rowwise",
    "row": "rowwise",
    "rowwiseparallel": "rowwise",
    "replicate": "replicate",
    "none": "replicate",
}


def _components(text: str) -> tuple[str, ...]:
    return tuple(part for part in text.split(".") if part)


def fqn_matches(pattern: FqnPattern, fqn: str) -> bool:
    """True when ``pattern`` matches the module name ``fqn``: a compiled regex by ``search``, a string by
    whole dot-separated components (a contiguous run of ``fqn``'s components equals the pattern's)."""
    if isinstance(pattern, re.Pattern):
        return pattern.search(fqn) is not None
    want, have = _components(pattern), _components(fqn)
    n = len(want)
    return n > 0 and any(have[i : i + n] == want for i in range(len(have) - n + 1))


def _patterns(name: str, value: Any) -> tuple[FqnPattern, ...]:
    """``exclude`` as a tuple of patterns: one string or regex is one pattern; else an iterable of them."""
    if isinstance(value, (str, re.Pattern)):
        items: list[Any] = [value]
    elif isinstance(value, Iterable):
        items = list(value)
    else:
        raise PerfModelError(
            f"{name} must be a module-name pattern, a compiled regex, or a list of them, got {short_repr(value)}"
        )
    for item in items:
        if not isinstance(item, (str, re.Pattern)) or (isinstance(item, str) and not _components(item)):
            raise PerfModelError(
                f"{name} entries must be non-empty module-name patterns ('lm_head', 'layers.1') or compiled "
                f"regexes, got {short_repr(item)}"
            )
    return tuple(items)


def _specificity(pattern: FqnPattern) -> tuple[int, int]:
    return (len(_components(pattern)), len(pattern)) if isinstance(pattern, str) else (0, len(pattern.pattern))


def _pattern_text(pattern: FqnPattern) -> str:
    return pattern if isinstance(pattern, str) else f"re.compile({pattern.pattern!r})"


def _tokens_lookup(tokens: TokensLike) -> Callable[[str], int | None]:
    """Normalise ``module_filter``'s ``tokens`` to ``fqn -> tokens | None`` (checked values)."""
    if isinstance(tokens, Mapping):
        if not tokens:
            raise PerfModelError("tokens mapping is empty; give at least one 'module-name pattern': tokens entry")
        table: dict[Any, int] = {}
        for key, v in tokens.items():
            if key != "*":
                _patterns("a tokens mapping key", key)
            table[key] = int(check_size(f"tokens[{short_repr(key)}]", v))
        keys = sorted((k for k in table if k != "*"), key=_specificity, reverse=True)  # the most specific wins

        def lookup(fqn: str) -> int | None:
            return next((table[k] for k in keys if fqn_matches(k, fqn)), table.get("*"))

        return lookup
    if callable(tokens):

        def call(fqn: str) -> int:
            return int(check_size(f"tokens({fqn!r})", tokens(fqn)))

        return call
    value = int(check_size("tokens", tokens))
    return lambda fqn: value


def _is_linear(module: Any) -> bool:
    torch = sys.modules.get("torch")
    nn = getattr(torch, "nn", None)
    if nn is not None and isinstance(getattr(nn, "Module", None), type) and isinstance(module, nn.Module):
        return isinstance(module, nn.Linear)  # subclasses too (torchao's Float8Linear)
    return hasattr(module, "in_features") and hasattr(module, "out_features")  # duck-typed stand-ins


# ------------------------------------------------------------------------------------------------
# gpu="auto"
# ------------------------------------------------------------------------------------------------
def current_gpu() -> GPUSpec:
    """The GPU of the current CUDA device: ``get_gpu(torch.cuda.get_device_name())`` (torch imported here).

    Raises:
        NoCurrentGPUError: torch is not installed, or sees no CUDA device (the message says to pass ``gpu=``).
        UnknownGPUError: the device's name is not in the hardware table (the message names it).
    """
    hint = 'pass the GPU the job will run on, e.g. gpu="H100" or gpu="B200" (perfmodel.list_gpus() lists them)'
    try:
        import torch
    except ImportError:
        raise NoCurrentGPUError(
            f'gpu="auto" reads the current CUDA device with torch.cuda.get_device_name(), but torch is not '
            f'installed (pip install ".[torch]" from a perfmodel checkout, or pip install torch); {hint}'
        ) from None
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not cuda.is_available():
        raise NoCurrentGPUError(
            f'gpu="auto" reads the current CUDA device, but torch sees none (torch.cuda.is_available() is False, '
            f"e.g. on a CPU-only build or a login node); {hint}"
        )
    name = str(cuda.get_device_name())
    try:
        return get_gpu(name)
    except UnknownGPUError as exc:
        raise UnknownGPUError(
            f"gpu='auto': the current CUDA device is {name!r}, which is not in the table: {exc}"
        ) from None


def _resolve_gpu(gpu: GPULike) -> GPUSpec:
    if isinstance(gpu, str) and gpu.strip().lower() == "auto":
        return current_gpu()
    if gpu is None:
        raise UnknownGPUError(
            'module_filter needs the GPU the job runs on: gpu="auto" (the current CUDA device) or a name such as '
            'gpu="H100" (perfmodel.list_gpus() lists them)'
        )
    return get_gpu(gpu)


# ------------------------------------------------------------------------------------------------
# tensor parallelism
# ------------------------------------------------------------------------------------------------
def _check_tp(tp: Any) -> int:
    if isinstance(tp, (bool, np.bool_)) or not isinstance(tp, (int, np.integer, float, np.floating)):
        raise InvalidParallelismError(
            f"tp must be the tensor-parallel degree, a positive whole number (1: no TP), got {short_repr(tp)}"
        )
    if not math.isfinite(float(tp)) or not float(tp).is_integer() or tp < 1:
        raise InvalidParallelismError(
            f"tp must be a positive whole number (1, 2, 4, 8, ...; 1: no TP), got {short_repr(tp)}"
        )
    return int(tp)


def _check_plan(plan: Any) -> tuple[tuple[FqnPattern, str], ...]:
    """``tp_plan`` as ``((pattern, sharding), ...)``, most specific pattern first."""
    if not isinstance(plan, Mapping) or not plan:
        raise InvalidParallelismError(
            "tp_plan must be a non-empty mapping {fqn pattern: 'colwise' | 'rowwise' | 'replicate'}, e.g. "
            f"{{'attn.c_attn': 'colwise', 'attn.c_proj': 'rowwise'}}; got {short_repr(plan)}"
        )
    out = []
    for key, value in plan.items():
        _patterns("a tp_plan key", key)
        kind = _SHARDING_ALIASES.get(str(value).strip().lower()) if isinstance(value, str) else None
        if kind is None:
            raise InvalidParallelismError(
                f"tp_plan[{short_repr(key)}] is {short_repr(value)}; valid: 'colwise' (shards out_features, "
                "torchtitan's ColwiseParallel), 'rowwise' (shards in_features, RowwiseParallel), 'replicate'"
            )
        out.append((key, kind))
    return tuple(sorted(out, key=lambda kv: _specificity(kv[0]), reverse=True))


def _sharding(plan: tuple[tuple[FqnPattern, str], ...], fqn: str) -> tuple[str, FqnPattern] | None:
    """The sharding of ``fqn`` by its most specific matching plan entry; two equally specific entries that
    disagree are a named error."""
    hits = [(p, kind) for p, kind in plan if fqn_matches(p, fqn)]
    if not hits:
        return None
    top = [h for h in hits if _specificity(h[0]) == _specificity(hits[0][0])]
    if len({kind for _, kind in top}) > 1:
        what = ", ".join(f"{_pattern_text(p)!s} -> {kind}" for p, kind in top)
        raise InvalidParallelismError(f"{fqn!r} matches tp_plan entries that disagree ({what}); make one more specific")
    return top[0][1], top[0][0]


# ------------------------------------------------------------------------------------------------
# the filter
# ------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class FilterDecision:
    """What :class:`Float8ModuleFilter` answered for one module.

    ``in_features``/``out_features``: the module's full shape (``None`` for a module that is not a Linear);
    ``shard_in``/``shard_out``: the shape one TP rank runs (equal to the full one for ``tp=1``);
    ``sharding``: ``"colwise"``, ``"rowwise"``, ``"replicate"`` or ``""`` (tp=1 / not a Linear);
    ``tokens``: rows M priced; ``speedup``: predicted fwd+bwd speedup of the shard over bf16 (``None`` where
    not priced); ``convert``: the answer; ``reason``: why.
    """

    fqn: str
    in_features: int | None
    out_features: int | None
    shard_in: int | None
    shard_out: int | None
    sharding: str
    tokens: int | None
    speedup: float | None
    convert: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """Plain types (JSON-ready)."""
        return dataclasses.asdict(self)


class Float8ModuleFilter:
    """The Linear filter: ``filt(module, fqn) -> bool``, torchao's ``module_filter_fn`` contract (for
    ``convert_to_float8_training``; ``quantize_``'s ``filter_fn`` for mxfp8). Build it with
    :func:`perfmodel.float8.module_filter`.

    Every call is recorded: :attr:`decisions` (one :class:`FilterDecision` per fqn, in call order),
    :meth:`table` (text for logs), :meth:`fqns` (the Linears converted) and :meth:`skip_fqns` (the Linears
    kept in bf16: what torchtitan's ``filter_fqns`` lists, since torchtitan's list names modules to SKIP).
    """

    def __init__(
        self,
        *,
        gpu: GPUSpec,
        recipe: Recipe,
        tokens: TokensLike,
        min_speedup: float,
        exclude: tuple[FqnPattern, ...],
        tp: int,
        tp_plan: tuple[tuple[FqnPattern, str], ...],
        options: dict[str, Any],
    ) -> None:
        self.gpu, self.recipe, self.min_speedup, self.tp = gpu, recipe, min_speedup, tp
        self.tokens = tokens
        self.exclude = exclude
        self.tp_plan = tp_plan
        self.options = dict(options)
        self._tokens_of = _tokens_lookup(tokens)
        self._cache: dict[tuple[int, int, int], float | None] = {}
        self._seen: dict[str, FilterDecision] = {}
        label = tokens if isinstance(tokens, int) else "per-layer"
        self.__name__ = f"perfmodel_filter_{recipe.name}_{gpu.name}_{label}" + (f"_tp{tp}" if tp > 1 else "")

    # -- torchao's question ----------------------------------------------------------------------
    def __call__(self, module: Any, fqn: str) -> bool:
        rec = self._decide(module, str(fqn))
        self._seen.pop(rec.fqn, None)  # a second call about the same fqn replaces the first
        self._seen[rec.fqn] = rec
        return rec.convert

    def _decide(self, module: Any, fqn: str) -> FilterDecision:
        def out(reason: str, convert: bool = False, **kw: Any) -> FilterDecision:
            base = dict(in_features=None, out_features=None, shard_in=None, shard_out=None, sharding="")
            base.update(tokens=None, speedup=None)
            return FilterDecision(fqn=fqn, **{**base, **kw}, convert=convert, reason=reason)

        if not _is_linear(module):
            return out("not a Linear")
        k = int(check_size(f"{fqn!r}.in_features", module.in_features))
        n = int(check_size(f"{fqn!r}.out_features", module.out_features))
        shape = dict(in_features=k, out_features=n, shard_in=k, shard_out=n)
        hit = next((p for p in self.exclude if fqn_matches(p, fqn)), None)
        if hit is not None:
            return out(f"excluded ({_pattern_text(hit)})", **shape)
        if k % FP8_ALIGN or n % FP8_ALIGN:  # never float8, whatever its sharding (torchtitan skips it too)
            return out(f"ineligible shape (K or N not a multiple of {FP8_ALIGN})", **shape)
        sharding, ks, ns = "", k, n
        if self.tp > 1:
            sharding, ks, ns = self._shard(fqn, k, n)
            shape.update(shard_in=ks, shard_out=ns)
        m = self._tokens_of(fqn)
        if m is None:
            return out("no tokens entry (no key of tokens matches, no '*')", sharding=sharding, **shape)
        if ks % FP8_ALIGN or ns % FP8_ALIGN:
            why = f"ineligible shard shape {ks}x{ns} (K or N not a multiple of {FP8_ALIGN} after tp={self.tp})"
            return out(why, sharding=sharding, **shape, tokens=m)
        s = self._speedup(m, ks, ns)
        if s < self.min_speedup:
            why = "slower than bf16" if s < 1 else f"below min_speedup {self.min_speedup:g}"
            return out(why, sharding=sharding, **shape, tokens=m, speedup=s)
        return out(f"{s:.3f}x >= {self.min_speedup:g}", True, sharding=sharding, **shape, tokens=m, speedup=s)

    def _shard(self, fqn: str, k: int, n: int) -> tuple[str, int, int]:
        """``(sharding, K, N)`` of one rank's shard under ``tp > 1`` (named errors: no plan entry, tp not dividing)."""
        found = _sharding(self.tp_plan, fqn)
        if found is None:
            raise InvalidParallelismError(
                f"tp={self.tp}: {fqn!r} ({k}x{n}) matches no entry of tp_plan, so its shard is unknown; add it: "
                f"tp_plan={{**perfmodel.float8.LLAMA_TP_PLAN, {fqn!r}: 'colwise' | 'rowwise' | "
                "'replicate'}, or exclude it"
            )
        kind = found[0]
        if kind == "replicate":
            return kind, k, n
        field, size = ("out_features", n) if kind == "colwise" else ("in_features", k)
        if size % self.tp:
            raise InvalidParallelismError(
                f"tp={self.tp} does not divide {fqn!r}'s {field} {size} ({kind} shards {field}); valid tp degrees "
                f"divide {size}"
            )
        return (kind, k, n // self.tp) if kind == "colwise" else (kind, k // self.tp, n)

    def _speedup(self, m: int, k: int, n: int) -> float:
        if (m, k, n) not in self._cache:
            try:
                self._cache[m, k, n] = float(speedup(m, k, n, self.recipe, self.gpu, **self.options))
            except IneligibleShapeError:  # pragma: no cover - eligibility is checked before
                self._cache[m, k, n] = 0.0
        return self._cache[m, k, n]

    # -- what it decided ---------------------------------------------------------------------------
    @property
    def decisions(self) -> list[FilterDecision]:
        """One record per fqn asked about, in the order of the calls (non-Linear modules included)."""
        return list(self._seen.values())

    def fqns(self) -> list[str]:
        """The fqns of the Linears converted to float8 (torchao's ``module_filter_fn`` said True)."""
        return [d.fqn for d in self._seen.values() if d.convert]

    def skip_fqns(self) -> list[str]:
        """The fqns of the Linears kept in bf16: torchtitan's ``filter_fqns`` (a list of modules to SKIP).

        torchtitan matches ``filter_fqns`` by substring (``filter_fqn in fqn``); a skipped fqn that is a
        substring of a converted one would skip that one too, so that case warns (:class:`PerfModelWarning`).
        """
        skip = [d.fqn for d in self._seen.values() if d.in_features is not None and not d.convert]
        clash = [(s, c) for s in skip for c in self.fqns() if s in c]
        if clash:
            warnings.warn(
                f"torchtitan matches filter_fqns by substring: skipping {clash[0][0]!r} also skips converted "
                f"{clash[0][1]!r} ({len(clash)} such pair(s)); use this filter object as module_filter_fn instead",
                PerfModelWarning,
                stacklevel=2,
            )
        return skip

    def table(self, *, linears_only: bool = True) -> str:
        """The decisions as aligned text for a training log (Linears only unless ``linears_only=False``)."""
        rows = [d for d in self._seen.values() if d.in_features is not None or not linears_only]
        tp_cols = ("shard K x N", "sharding") if self.tp > 1 else ("", "")
        head = ["fqn", "K x N", *tp_cols, "M", "speedup", "float8", "reason"]
        body = []
        for d in rows:
            full = "" if d.in_features is None else f"{d.in_features}x{d.out_features}"
            shard = "" if d.shard_in is None else f"{d.shard_in}x{d.shard_out}"
            body.append(
                [
                    d.fqn,
                    full,
                    shard if self.tp > 1 else "",
                    d.sharding,
                    "" if d.tokens is None else str(d.tokens),
                    "" if d.speedup is None else f"{d.speedup:.3f}x",
                    "yes" if d.convert else "no",
                    d.reason,
                ]
            )
        keep = [i for i, h in enumerate(head) if h or any(r[i] for r in body)]
        widths = {i: max(len(head[i]), *(len(r[i]) for r in body)) if body else len(head[i]) for i in keep}
        lines = [repr(self), "  ".join(head[i].ljust(widths[i]) for i in keep).rstrip()]
        lines.append("-" * len(lines[-1]))
        lines += ["  ".join(r[i].ljust(widths[i]) for i in keep).rstrip() for r in body]
        if not body:
            lines.append("(no Linear asked about yet)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        tokens = self.tokens if isinstance(self.tokens, int) else "per-layer"
        seen = sum(d.in_features is not None for d in self._seen.values())
        extra = f", exclude={[_pattern_text(p) for p in self.exclude]}" if self.exclude else ""
        return (
            f"Float8ModuleFilter(gpu={self.gpu.name!r}, recipe={self.recipe.name!r}, tokens={tokens}, "
            f"min_speedup={self.min_speedup:g}, tp={self.tp}{extra}; {seen} Linears seen, {len(self.fqns())} converted)"
        )


def module_filter(
    gpu: GPULike = "auto",
    tokens: TokensLike = 8192,
    recipe: str | Recipe = "tensorwise",
    *,
    min_speedup: float = 1.0,
    exclude: FqnPattern | Iterable[FqnPattern] = (),
    dynamic_shapes: bool = False,
    fuse_input_with_prev: bool = False,
    fuse_grad_output_with_prev: bool = False,
    cache_weight_cast: bool = False,
    tp: int = 1,
    tp_plan: Mapping[FqnPattern, str] | None = None,
    time_model: ModelLike = None,
    model: ModelLike = None,
) -> Float8ModuleFilter:
    """The Linear filter: a ``module_filter_fn(module, fqn) -> bool`` for torchao's ``convert_to_float8_training``
    that prices each ``nn.Linear`` by its own shape (as one TP rank runs it).

    It converts an ``nn.Linear`` when ``speedup(tokens, K, N, recipe, gpu) >= min_speedup`` on the shape one
    rank runs (K and N multiples of 16, which float8 GEMM kernels need) and no pattern of ``exclude`` matches
    its fully-qualified name (whole dot-separated components, or a compiled regex: see the module doc). Other
    modules return ``False``. For a dense preset whose whole decoder layer the step model prices, the
    layer-group filter :func:`perfmodel.step.module_filter` is the better choice (docs/float8.md, "Which filter?").

    Args:
        gpu: the GPU the job runs on (a name, alias or :class:`GPUSpec`), or ``"auto"`` (the default): the
            current CUDA device, ``torch.cuda.get_device_name()``, read once when the filter is built. Without
            torch or a CUDA device ``"auto"`` raises :class:`~perfmodel.errors.NoCurrentGPUError` (never a
            silent H100).
        tokens: rows a Linear sees per step on one rank (batch per data-parallel rank × sequence length; under
            sequence parallelism the column-parallel input is all-gathered, so still the full sequence): one int,
            or per layer — a mapping from module-name patterns to tokens (the most specific matching key wins;
            layers no key matches use the ``"*"`` entry, else are not converted) or a callable ``fqn -> tokens``.
            Routed MoE experts see ``tokens · top_k / experts``.
        recipe: the float8 recipe (name or :class:`Recipe`).
        min_speedup: convert from this predicted fwd+bwd speedup on.
        exclude: module-name patterns never converted (e.g. ``"output"``, ``"lm_head"``).
        dynamic_shapes, fuse_input_with_prev, fuse_grad_output_with_prev, cache_weight_cast: the cast options
            of :func:`perfmodel.float8.linear_time`.
        tp: tensor-parallel degree (1: none). Each Linear is priced as one rank's shard: ``colwise`` K x N/tp,
            ``rowwise`` K/tp x N, ``replicate`` K x N.
        tp_plan: ``{fqn pattern: "colwise" | "rowwise" | "replicate"}`` (patterns as ``exclude``; the most
            specific matching one wins); default :data:`LLAMA_TP_PLAN` (torchtitan's Llama plan, torchtitan and
            Hugging Face names). It replaces the default: extend it with ``{**LLAMA_TP_PLAN, ...}``. Used only
            for ``tp > 1``.
        time_model: the GEMM/cast time model (``"roofline"``, ``"calibrated"``, ...); ``model=`` is its deprecated
            old name (a DeprecationWarning; both: :class:`~perfmodel.errors.ConflictingArgumentsError`).

    Returns:
        A :class:`Float8ModuleFilter` (callable; ``.decisions``, ``.table()``, ``.fqns()``, ``.skip_fqns()``).

    Raises:
        NoCurrentGPUError: ``gpu="auto"`` without torch or a CUDA device. UnknownGPUError: an unknown GPU.
        InvalidParallelismError: ``tp`` not a positive whole number, a bad ``tp_plan``; at call time, under
            ``tp > 1``, a Linear no ``tp_plan`` entry matches or whose sharded dimension ``tp`` does not divide.
        UnknownRecipeError, UnsupportedFormatError, InvalidShapeError, PerfModelError: other bad input.
    """
    time_model = time_model_arg(time_model, model, "module_filter")  # model=: the deprecated old name
    rec = get_recipe(recipe)
    min_speedup = check_ratio("min_speedup", min_speedup)
    _tokens_lookup(tokens)  # checked now (a callable is checked at call time)
    excluded = _patterns("exclude", exclude)
    tp = _check_tp(tp)
    plan = _check_plan(LLAMA_TP_PLAN if tp_plan is None else tp_plan)
    opts = {
        "dynamic_shapes": check_flag("dynamic_shapes", dynamic_shapes),
        "fuse_input_with_prev": check_flag("fuse_input_with_prev", fuse_input_with_prev),
        "fuse_grad_output_with_prev": check_flag("fuse_grad_output_with_prev", fuse_grad_output_with_prev),
        "cache_weight_cast": check_flag("cache_weight_cast", cache_weight_cast),
        "time_model": time_model,  # speedup's time-model keyword
    }
    spec = _resolve_gpu(gpu)
    speedup(FP8_ALIGN, FP8_ALIGN, FP8_ALIGN, rec, spec, **opts)  # fail now on an unsupported recipe/GPU
    return Float8ModuleFilter(
        gpu=spec,
        recipe=rec,
        tokens=tokens,
        min_speedup=min_speedup,
        exclude=excluded,
        tp=tp,
        tp_plan=plan,
        options=opts,
    )


class _Stand:
    """A duck-typed Linear (``in_features``/``out_features``) for pricing a preset's Linears by name."""

    def __init__(self, k: int, n: int) -> None:
        self.in_features, self.out_features = k, n


def preset_filters(
    model: str | ModelPreset,
    *,
    gpu: GPULike,
    tokens: int,
    recipes: Iterable[str],
    tp: int = 1,
    tp_plan: Mapping[FqnPattern, str] | None = None,
    min_speedup: float = 1.0,
    **options: Any,
) -> dict[str, tuple[Float8ModuleFilter, float]]:
    """The Linear filter of every recipe applied to a preset's Linears (by their preset names, each once):
    ``recipe -> (filter, seconds saved per step)`` where the saving is ``sum over converted Linears of
    count x layers x (t_bf16 - t_bf16 / speedup)`` of one rank's shards (fwd+bwd, :func:`linear_time`), sorted
    by saving, largest first. What ``perfmodel float8 --tp`` prints. ``options``: :func:`module_filter`'s."""
    preset = get_preset(model)
    spec = get_gpu(gpu) if not (isinstance(gpu, str) and gpu.strip().lower() == "auto") else current_gpu()
    m_of = {lin.name: lin.tokens(tokens) for lin in preset.linears}
    out: dict[str, tuple[Float8ModuleFilter, float]] = {}
    for r in recipes:
        same = len(set(m_of.values())) == 1
        toks: TokensLike = next(iter(m_of.values())) if same else (lambda fqn: m_of[fqn])
        filt = module_filter(spec, toks, r, tp=tp, tp_plan=tp_plan, min_speedup=min_speedup, **options)
        saved = 0.0
        for lin in preset.linears:
            if not filt(_Stand(lin.in_features, lin.out_features), lin.name):
                continue
            d = filt.decisions[-1]
            tm = filt.options["time_model"]
            base = float(linear_time(d.tokens, d.shard_in, d.shard_out, None, spec, time_model=tm).total_s)
            saved += preset.total_count(lin) * base * (1 - 1 / float(d.speedup))
        out[get_recipe(r).name] = (filt, saved)
    return dict(sorted(out.items(), key=lambda kv: -kv[1][1]))


#: the Linear filter by the name that says what it prices (``module_filter`` is its original name)
linear_filter = module_filter
