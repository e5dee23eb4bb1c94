"""The answer of :func:`perfmodel.train.estimate`: :class:`TrainEstimate`, one GPU's training step in a sharded job,
with its breakdown by part, its collectives, its memory and its provenance, and the text it prints
(:meth:`TrainEstimate.table`, :meth:`TrainEstimate.summary`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .._backend import describe_value, is_symbolic
from .._files import short
from ..errors import PerfModelError
from ..float8.published import known_wrong_lines
from ..models.base import Provenance
from ..step.layer import _plain
from . import memory as _memory
from .comm import CommCall
from .compute import LayerCompute
from .config import TrainConfig
from .mfu import MFU, predicted_mfu
from .moe import moe_dict, moe_table_lines

__all__ = ["MEMORY_CHECKED", "MEMORY_HEADROOM", "TOKENS_PER_S_BIAS", "TrainEstimate"]

#: a configuration "fits" when its estimated peak memory is below this share of the GPU's memory (the rest is left
#: for the CUDA context and the caching allocator's fragmentation: :data:`perfmodel.train.memory.RESERVE_SHARE`)
MEMORY_HEADROOM = 1 - _memory.RESERVE_SHARE
MEMORY_CHECKED = _memory.CHECKED
#: how far absolute throughput was from published runs (docs/validation.md, "Training at cluster scale"): shown
#: beside multi-GPU step times, never applied (published runs validate the model; they do not tune it)
TOKENS_PER_S_BIAS = (
    "predicted tokens/s per GPU were a median 54 % above 28 published multi-GPU runs (bf16 and float8 alike)"
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainEstimate:
    """One training step of one GPU in a sharded job.

    Attributes:
        config: the checked job (model sizes, layout, recipe, options).
        step_s: seconds per step.
        tokens_per_s_per_gpu: ``batch_per_gpu · seq_len / (step_s · tp)``.
        compute_s: part -> seconds (``layers``, ``output``, ``loss``, ``embedding``, ``overhead``); their sum
            plus :attr:`exposed_comm_s` is :attr:`step_s`.
        layer: one decoder layer's compute (:class:`~perfmodel.train.compute.LayerCompute`); an MoE model's MoE
            layer (attention half + expert block + all-to-all; ``layer.layer_time`` its
            :class:`~perfmodel.step.MoELayerTime`).
        dense_layer: an MoE model's dense layer (``None`` for dense models and MoE models without dense layers).
        comm: every collective of the step (:class:`CommCall`), its time and count.
        exposed_comm_s, overlapped_comm_s: communication time the compute does not / does hide;
            ``exposed_comm_s = exposed_fsdp_s + exposed_tp_s`` (FSDP/HSDP's and TP's).
        memory: part -> bytes of one GPU's peak memory (estimate); :attr:`memory_bytes` their sum.
        fits: :attr:`memory_bytes` below ``MEMORY_HEADROOM`` of the GPU's memory.
        model_flops_per_step: torchtitan's ``(6·N + 12·L·heads·head_dim·seq) · tokens`` per rank.
        provenance: where the answer comes from, part by part, and its measured error.

    ``str(est)`` is :meth:`table` for one configuration and :meth:`summary` (the configuration line, step and
    tokens/s as arrays or expressions) when ``seq_len``, ``batch_per_gpu`` or ``layers`` is an array or symbol.
    """

    config: TrainConfig
    step_s: Any
    tokens_per_s_per_gpu: Any
    compute_s: dict[str, Any]
    layer: LayerCompute
    comm: tuple[CommCall, ...]
    exposed_comm_s: Any
    overlapped_comm_s: Any
    exposed_fsdp_s: Any
    exposed_tp_s: Any
    memory: dict[str, Any]
    memory_bytes: Any
    fits: Any
    model_flops_per_step: Any
    provenance: Provenance
    dense_layer: LayerCompute | None = None

    @property
    def mfu_report(self) -> MFU:
        """The predicted MFU, against the mixed-precision peak and the bf16 peak (:mod:`perfmodel.train.mfu`)."""
        return predicted_mfu(self.config, self.tokens_per_s_per_gpu)

    @property
    def mfu(self) -> Any:
        """Model FLOPs utilisation: model FLOP/s of one GPU over the peak of the step's format mix (every FLOP at
        its own format's dense peak; for bf16 steps the bf16 peak). :attr:`mfu_bf16` is the bf16-peak figure."""
        return self.mfu_report.mfu

    @property
    def mfu_bf16(self) -> Any:
        """Model FLOP/s of one GPU over its dense bf16 peak (torchtitan's MFU; a float8 step can pass 100 %)."""
        return self.model_flops_per_step / self.config.tp / self.step_s / self.config.gpu.peak_flops_per_s("bf16")

    def to_dict(self) -> dict[str, Any]:
        """Plain types (JSON-ready); seconds and bytes."""
        c = self.config
        return {
            "model": c.sizes.name,
            "gpu": c.gpu.name,
            "n_gpus": c.n_gpus,
            "tp": c.tp,
            "dp_shard": c.dp_shard,
            "dp_replicate": c.dp_replicate,
            "seq_len": _plain(c.seq_len),
            "batch_per_gpu": _plain(c.batch_per_gpu),
            "recipe": c.recipe.name,
            "converted": list(c.converted),
            "float8_all_gather": c.float8_all_gather,
            "async_tp": c.async_tp,
            "ac": c.ac,
            "ep": c.ep,
            "compile": c.compile,
            "layers": c.sizes.layers,
            "step_s": _plain(self.step_s),
            "tokens_per_s_per_gpu": _plain(self.tokens_per_s_per_gpu),
            "mfu": _plain(self.mfu),
            "mfu_bf16": _plain(self.mfu_bf16),
            "compute_s": {k: _plain(v) for k, v in self.compute_s.items()},
            "layer_s": {"fwd": _plain(self.layer.fwd_s), "bwd": _plain(self.layer.bwd_s)},
            "comm": [x.to_dict() for x in self.comm],
            "exposed_comm_s": _plain(self.exposed_comm_s),
            "exposed_fsdp_s": _plain(self.exposed_fsdp_s),
            "exposed_tp_s": _plain(self.exposed_tp_s),
            "overlapped_comm_s": _plain(self.overlapped_comm_s),
            "memory_bytes": _plain(self.memory_bytes),
            "memory": {k: _plain(v) for k, v in self.memory.items()},
            "fits": _plain(self.fits),
            "provenance": self.provenance.to_dict(),
            **({"moe": moe_dict(self)} if c.sizes.is_moe else {}),
        }

    def _header(self) -> str:
        """The configuration line: model, layout, tokens per rank, recipe and what it converts, AC."""
        c = self.config
        lay = (
            f"{c.n_gpus} GPUs = {c.dp_replicate} x {c.dp_shard} (FSDP) x {c.tp} (TP)"
            if c.dp_replicate > 1
            else f"{c.n_gpus} GPUs = {c.dp_shard} (FSDP) x {c.tp} (TP{', async' if c.async_tp else ''})"
        )
        fp8ag = ", float8 all-gather" if c.float8_all_gather else ""
        fp8ag += ", compiled" if c.compile else ""
        every = tuple(lin.name for lin in c.sizes.layer.linears())
        conv = (
            f" on {', '.join(c.converted) or 'no Linear'}" if c.recipe.name != "bf16" and c.converted != every else ""
        )
        return (
            f"{c.sizes.name} ({c.sizes.layers} layers) on {c.gpu.name}: {lay}; seq {_num(c.seq_len)} x batch "
            f"{_num(c.batch_per_gpu)} per rank, {c.recipe.name}{conv}{fp8ag}, AC {c.ac}"
        )

    def filter_code(self) -> dict[str, Any] | None:
        """How to apply the Linears this estimate converts (``config.converted``, what ``convert="auto"`` chose):
        the torchao ``module_filter_fn`` and torchtitan's ``filter_fqns`` (:func:`perfmodel.step.choice_code`);
        ``None`` for bf16 or a model that is not a preset (a LayerShape: name its Linears yourself)."""
        from ..presets import PRESETS
        from ..step.filter import choice_code

        c = self.config
        if c.recipe.name == "bf16" or c.sizes.name not in PRESETS or c.sizes.is_moe:
            return None  # MoE models: perfmodel.moe's filter_fn / fqns convert the experts
        return choice_code(c.sizes.name, c.converted, c.recipe.name)

    @property
    def is_scalar(self) -> bool:
        """True when the estimate is one configuration (numbers), False for numpy-array or sympy results."""
        c = self.config
        values = (c.seq_len, c.batch_per_gpu, c.sizes.layers, self.step_s)
        return not any(is_symbolic(v) or np.ndim(v) > 0 for v in values)

    def table(self, baseline: TrainEstimate | None = None) -> str:
        """A readable breakdown of one configuration, what is validated first: the float8/bf16 speedup with its
        measured error (when ``baseline``, the bf16 estimate of the same job, is given), whether it fits in memory,
        then step in ms with the measured bias of absolute throughput, compute by part, every collective (MB, ms),
        memory by part in GB, provenance. A configuration that does not fit says so first and shows no step time
        or MFU (it would not run).

        Raises:
            PerfModelError: an array or symbolic estimate (``seq_len``, ``batch_per_gpu`` or ``layers`` a numpy
                array or sympy expression, see :attr:`is_scalar`); ``str(est)`` gives :meth:`summary` instead.
        """
        c = self.config
        if not self.is_scalar:
            raise PerfModelError(
                "table() prints one configuration, but this estimate is "
                f"{'symbolic' if self._symbolic else 'an array'} (seq_len={_num(c.seq_len)}, batch_per_gpu="
                f"{_num(c.batch_per_gpu)}, layers={_num(c.sizes.layers)}); pass one number each for seq_len, "
                "batch_per_gpu and layers, or read the fields (step_s, tokens_per_s_per_gpu, compute_s, comm, "
                "memory_bytes) directly; str(est) prints a short summary"
            )
        lines = [self._header()]
        gb = float(self.memory_bytes) / 1e9
        cap = f"{c.gpu.mem_bytes / 1e9:.0f} GB" if c.gpu.mem_bytes else "(GPU memory not known)"
        if not bool(self.fits):
            lines.append(
                f"  DOES NOT FIT: estimated peak memory {gb:.1f} GB is above {MEMORY_HEADROOM:.0%} of {cap}; no step "
                "time or MFU shown (the job would not run). Shard more (tp, n_gpus), checkpoint more (ac) or "
                "shorten seq_len / batch_per_gpu."
            )
            lines += self._memory_lines()
            checked = _memory.MOE_NOTE if c.sizes.is_moe else MEMORY_CHECKED
            lines.append(f"provenance: {self.provenance.kind} (memory: {checked})")
            return "\n".join(lines)
        if baseline is not None:
            lines.append(self._speedup_line(baseline))
            lines += [f"  {x}" for x in known_wrong_lines(c.gpu, c.recipe)]
        lines.append(
            f"  step            {float(self.step_s) * 1e3:10.1f} ms   {float(self.tokens_per_s_per_gpu):,.0f} "
            f"tokens/s per GPU, MFU {float(self.mfu):.1%} of the mixed-precision peak"
            + (f" ({float(self.mfu_bf16):.1%} of bf16's)" if c.recipe.name != "bf16" else "")
        )
        if c.n_gpus > 1:
            lines.append(f"  {'':15} absolute figures: {TOKENS_PER_S_BIAS} (not corrected)")
        for part, t in self.compute_s.items():
            lines.append(f"  {part:<15} {float(t) * 1e3:10.1f} ms")
            if part == "layers" and c.sizes.is_moe:
                lines += moe_table_lines(self)
        ms = {k: float(getattr(self, k)) * 1e3 for k in ("exposed_comm_s", "exposed_fsdp_s", "exposed_tp_s")}
        lines.append(
            f"  comm exposed    {ms['exposed_comm_s']:10.1f} ms   (FSDP {ms['exposed_fsdp_s']:.1f}, TP "
            f"{ms['exposed_tp_s']:.1f}; hidden under compute: {float(self.overlapped_comm_s) * 1e3:.1f} ms)"
        )
        width = 11 if c.sizes.is_moe else 9  # "expert_fsdp"
        for x in self.comm:
            lines.append(
                f"    {x.group:<{width}} {x.op:<14} {x.name:<36} {float(x.nbytes) / 1e6:9.1f} MB x {x.calls:<5} "
                f"{float(x.time_s) * 1e3:8.3f} ms each"
            )
        limit = MEMORY_HEADROOM * (c.gpu.mem_bytes or float("inf"))
        near = float(self.memory_bytes) * (1 + _memory.MAX_HELD_OUT_ERROR) > limit
        fit_word = (
            f"fits, but within the model's largest held-out error ({_memory.MAX_HELD_OUT_ERROR:.1%}) of the limit"
            if near
            else "fits"
        )
        checked = _memory.MOE_NOTE if c.sizes.is_moe else MEMORY_CHECKED
        lines.append(f"  memory          {gb:10.1f} GB of {cap}: {fit_word} ({checked})")
        lines += self._memory_lines()[1:]
        lines.append(f"provenance: {self.provenance.line()}")
        return "\n".join(lines)

    def _memory_lines(self) -> list[str]:
        """The memory total and its parts, GB (:func:`perfmodel.train.memory.peak_memory`)."""
        gb = float(self.memory_bytes) / 1e9
        parts = ", ".join(f"{k} {float(v) / 1e9:.1f}" for k, v in self.memory.items())
        checked = _memory.MOE_NOTE if self.config.sizes.is_moe else MEMORY_CHECKED
        return [f"  memory          {gb:10.1f} GB ({checked})", f"    by part (GB): {parts}"]

    def _speedup_line(self, baseline: TrainEstimate) -> str:
        """``recipe vs bf16: 1.105x faster`` with the speedup's measured error on published runs."""
        if baseline.config.recipe.name != "bf16":
            raise PerfModelError(f"baseline must be the bf16 estimate of the same job, got {baseline.config.recipe}")
        sp = float(baseline.step_s / self.step_s)
        verdict = "faster" if sp >= 1 else "slower"
        err = self.provenance.expected_error
        how = []
        if err.speedup_pct is not None:
            how.append(f"±{err.speedup_pct:.1f} % median error")
        if err.decisions_pct is not None:
            how.append(f"{err.decisions_pct:.0f} % of clear decisions right")
        where = "published multi-GPU runs" if self.config.n_gpus > 1 else "H200 layer steps"
        sure = f"{', '.join(how)} on {where}" if how else "error not measured"
        return (
            f"  {self.config.recipe.name} vs bf16: {sp:.3f}x ({verdict}; bf16 step "
            f"{float(baseline.step_s) * 1e3:.1f} ms); {sure}"
        )

    @property
    def _symbolic(self) -> bool:
        c = self.config
        return any(is_symbolic(v) for v in (c.seq_len, c.batch_per_gpu, c.sizes.layers, self.step_s))

    def summary(self) -> str:
        """A short text for any estimate: the configuration line, then the step (seconds) and tokens/s per GPU
        as they are (numbers, numpy arrays or sympy expressions, shortened)."""
        kind = "symbolic" if self._symbolic else "array"
        return (
            f"{self._header()}\n  step_s = {_short(self.step_s)} s; tokens/s per GPU = "
            f"{_short(self.tokens_per_s_per_gpu)} ({kind} estimate: table() prints one configuration; read "
            "the fields, or pass one number each for seq_len, batch_per_gpu and layers)"
        )

    def __str__(self) -> str:
        return self.table() if self.is_scalar else self.summary()

    def __repr__(self) -> str:
        d = describe_value
        mem = f"memory {d(self.memory_bytes / 1e9, 'GB')}"
        fits = "" if self._symbolic or bool(np.all(self.fits)) else " (does not fit)"
        return (
            f"TrainEstimate({self._header()}: step {d(self.step_s, 's')}, {d(self.tokens_per_s_per_gpu)} tokens/s per "
            f"GPU, {mem}{fits}; {self.provenance.kind})"
        )


def _num(x: Any) -> str:
    """A size for the text: ``8192``, not ``8192.0``; arrays and symbols as they print (shortened)."""
    if is_symbolic(x) or np.ndim(x) > 0:
        return _short(x)
    v = _plain(x)
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def _short(x: Any) -> str:
    """A value of any backend for the text, bounded in length (a long array or expression is cut)."""
    if isinstance(x, np.ndarray):
        text = np.array2string(x, precision=4, threshold=8, separator=", ")
    else:
        text = str(x) if is_symbolic(x) else str(_plain(x))
    return short(text, 160)
