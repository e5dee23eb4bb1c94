"""Peak GPU memory of one training rank, as the CUDA caching allocator counts it (``torch.cuda.max_memory_allocated``).

The peak of a step is the largest of up to four moments (gradients set to ``None`` before each forward, as
``optimizer.zero_grad()`` does by default, so they do not exist while the forward runs):

* **loss** (end of forward, start of backward): fp32 parameters (4 B each, sharded over ``tp · dp_shard``) and AdamW's
  two fp32 states (8 B), every layer's saved activations, the loss's logits chain over ``T · V / tp`` logits, and the
  bf16 weights FSDP2 keeps gathered there (the head ``[norm, output]`` and the last layer are not resharded after
  forward). Under ``mode="amp"`` (plain single GPU, ``torch.autocast``) autocast's cached bf16 copies of the Linear
  weights (2 B each) are alive too.
* **end of backward**: parameters, AdamW states and fp32 gradients (16 B per parameter in all), plus the transient
  gradient buffers of the last block to reduce (the embedding's: bf16 unsharded gradient and its reduce buffer,
  :data:`TRANSIENT_BYTES_PER_EMBEDDING_PARAM`).
* **the embedding's backward** (FSDP2 only, :data:`EMBEDDING_MOMENT`): as the end of backward, but the embedding's
  gradient is not reduced yet, and the first decoder layer's fp32 reduce-scatter input (:data:`REDUCE_BYTES` per
  parameter of that layer) is still alive — FSDP2 frees it at the next reduce-scatter. It is the peak when one layer
  holds more parameters than the embedding (Llama 3 70B / 405B with a 32k vocabulary, short sequences).
* **the first layer's backward** (``ac`` = selective / full only, :data:`RECOMPUTE_MOMENT`): the first decoder
  layer's recomputed activations and its SwiGLU backward's buffers, its gathered weights, every gradient but the
  embedding's and the first layer's (:func:`_recompute_moment`). It is the peak when one layer's activations are
  large against the logits (long sequences, wide layers, a small vocabulary).

The two backward moments were read off the allocator's traces (``benchmarks/harness/memory_peak.py``:
``h200_2026-12-04m`` for the recompute, ``h200_2026-12-04r`` and ``h200_2026-12-04s`` for the embedding's backward).

Activations: the elements per token each layer saves come from the layer's shape (``none``: every Linear input, q/k/v
after RoPE, the attention output, the MLP's three ``ffn``-wide tensors, norm inputs; ``selective``: torchtitan's
op-level SAC keeps matmul and attention outputs and recomputes every second ``mm``; ``full``: the layer input only),
in bf16, times a factor measured in eager mode (:data:`ACT_FACTOR`). The logits chain is :data:`LOGIT_BYTES` bytes per
logit: bf16 logits, their fp32 copy and ``log_softmax`` output, and the fp32 gradient (torchtitan's
``cross_entropy(logits.float(), labels)``), measured.

Where the constants come from: fitted on the 15 single-GPU FSDP2/plain-GPU training steps that ran on an H200 on
2026-12-03 (``benchmarks/data/h200_2026-12-03c/memory.json.gz``; ``python -m benchmarks.harness.validate_memory
--fit`` reproduces them). Scored, never fitted, on held-out configurations: 10 measured later that day
(``h200_2026-12-03d``), then four pre-registered rounds of 2026-12-04 (predictions committed before each run):
round 3 (``h200_2026-12-04``, 9 runs) and round 4 (``h200_2026-12-04r``, 8 runs) each had one miss that, with an
allocator trace, changed a moment, so today's figures on them are post-selection; round 5 (``h200_2026-12-04s``, 7
runs, 5 predicted to peak at the embedding's backward) and round 6 (``h200_2026-12-04v``, 7 compiled runs) are
pre-registered against this model: the figure the output quotes (:data:`CHECKED`; docs/train.md, "Memory").
``torch.compile``'s figures (:data:`COMPILED`) rest on two compiled configurations whose peak is the end of backward
and four compiled runs predicted before they ran (``h200_2026-12-03e``: -1.5 % to +5.9 %, the float8 ones high by
2.2-2.7 GiB); compiled float8 steps save fewer activations (:data:`FLOAT8_COMPILED_UNSAVED`, read from the allocator
at the 8B compiled peak, ``h200_2026-12-04u``; 03e is post-selection for it: -2.8 % to -1.3 %), checked on the
pre-registered round 6 (``h200_2026-12-04v``: seven compiled runs, median 1.6 %, max 3.0 %, every one a little low).

MoE models (estimated, never measured: the constants above were fitted on dense Llama steps only): each GPU holds
``experts / ep`` experts of every MoE layer, sharded over the ``dp_shard / ep`` ranks that hold the same experts, so
a rank's parameter, gradient and optimizer shard is ``total / dp_shard`` as without EP; FSDP2 keeps the last layer's
non-expert weights and its ``experts / ep`` experts gathered; an MoE layer saves (per token, bf16) the attention
half's tensors as a dense layer does, the router's scores (``experts``), the routed rows (``top_k · dim``: the
permuted input) and the expert MLP's three saved tensors per routed row (``top_k · 3 · moe_inter``), and the shared
experts' (``3 · shared_experts · shared_inter``) — times the same :data:`ACT_FACTOR`. :data:`MOE_NOTE` says so.

Not counted: the CUDA context and allocator fragmentation (``memory_reserved`` is 5–25 % above the allocated peak in
those runs); :func:`fits` leaves :data:`RESERVE_SHARE` of the GPU for them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._backend import is_symbolic, namespace
from ..errors import PerfModelError
from ..presets import LayerShape

__all__ = [
    "ACT_FACTOR",
    "CHECKED",
    "COMPILED",
    "EMBEDDING_MOMENT",
    "FLOAT8_COMPILED_UNSAVED",
    "LOGIT_BYTES",
    "MAX_HELD_OUT_ERROR",
    "MEMORY_EXPECTED_ERROR",
    "MODES",
    "MOE_NOTE",
    "RECOMPUTE_MOMENT",
    "REDUCE_BYTES",
    "RESERVE_SHARE",
    "TRANSIENT_BYTES_PER_EMBEDDING_PARAM",
    "activation_elements",
    "fits",
    "float8_compiled_unsaved",
    "moe_activation_elements",
    "peak_memory",
]

#: eager activations measured / the layer-shape count, per ``ac`` mode (fit: see module doc)
ACT_FACTOR: dict[str, float] = {"none": 1.32, "selective": 0.74, "full": 1.0}
#: bytes per logit of the loss's chain at its peak, eager (fit: see module doc; 2 + 4 + 4 + 4 = 14 if nothing is freed)
LOGIT_BYTES = 12.8
#: end-of-backward transient, bytes per embedding parameter (fit on the compiled configurations)
TRANSIENT_BYTES_PER_EMBEDDING_PARAM = 4.3
#: under torch.compile: activation factor 1 (the shape count) and 4 B per logit (bf16 logits and a bf16 gradient:
#: inductor's fused loss keeps no fp32 copy) — an estimate, bounded above by the two compiled fit runs' peaks
COMPILED: dict[str, float] = {"act_factor": 1.0, "logit_bytes": 4.0}
#: under torch.compile with float8 Linears (tensorwise or rowwise; ``ac="none"``): inductor's partitioner stores no
#: bf16 copy of an input that only float8 Linears consume and that it can recompute from what is saved anyway (the
#: backward casts it again): the attention norm's output when wq, wk, wv are all float8, the MLP norm's when w1, w3
#: are, the down projection's input (``silu(gate) * up``, ffn wide) when w2 is. Read from the allocator at the peak of
#: the 8B, 4-layer, batch-2 step (``benchmarks/data/h200_2026-12-04u/memory_peak.json.gz``): the step's blocks alive at
#: the loss are 18.22 GiB compiled bf16 and 15.47 GiB compiled tensorwise, 2.75 GiB = 4 layers x (2 x 4096 + 14336)
#: x 2 B x 16384 tokens, with four fewer 448 MiB (ffn-wide) tensors among them; derived after the 03e runs' +5.9 % /
#: +4.6 % misses were seen (post-selection there), checked on the pre-registered round 6 (h200_2026-12-04v: rowwise,
#: Qwen 7B / 14B, 6 layers with float8 all-gather, 16k tokens: -3.0 % to -1.3 %).
FLOAT8_COMPILED_UNSAVED: dict[tuple[str, ...], str] = {
    ("wq", "wk", "wv"): "hidden",
    ("w1", "w3"): "hidden",
    ("w2",): "ffn",
}
#: share of the GPU's memory left for the CUDA context and fragmentation when deciding "fits"
RESERVE_SHARE = 0.05
#: the memory figure's quoted error bar, percent: the 5 % target (held out: rounds 5 and 6, pre-registered, 14 of 14
#: within, worst -3.0 %; every held-out run of today's model, 45, post-selection ones included: worst 4.2 %;
#: :data:`MAX_HELD_OUT_ERROR`; docs/train.md)
MEMORY_EXPECTED_ERROR = 5.0
#: the largest estimate/measured error of today's model on any held-out configuration (45 runs: h200_2026-12-03d/e,
#: rounds 3-6 of h200_2026-12-04; most post-selection, rounds 5 and 6 pre-registered), as a fraction: the margin of
#: the output's "near the limit" warning
MAX_HELD_OUT_ERROR = 0.042
#: what the output says of the memory figures
CHECKED = (
    "peak allocated; vs the H200 allocator: pre-registered held-out median error 1.1 %, max 3.0 % (14 runs); "
    "max 4.2 % over all 45 held-out runs (most post-selection)"
)
#: what the output says of an MoE model's memory figures
MOE_NOTE = (
    "MoE memory estimated: experts / ep per GPU sharded over dp_shard / ep ranks, routed rows and expert MLP "
    "activations by count; the memory model was fitted on dense Llama steps only, no MoE step was measured"
)
#: how the parameters are held: FSDP2 fp32 masters with bf16 compute; plain GPU + autocast; everything in bf16
MODES = ("fsdp", "amp", "bf16")


def activation_elements(layer: LayerShape, ac: str, tp: int = 1) -> float:
    """bf16 elements per token one layer saves for backward by the layer's shape (before :data:`ACT_FACTOR`)."""
    h = layer.hidden
    q, kv, f = layer.q_dim / tp, layer.kv_dim / tp, layer.ffn / tp
    sp_h = h / tp  # sequence-parallel tensors: norm inputs, the residual stream
    full = sp_h + h + (q + 2 * kv) + q + sp_h + h + 3 * f
    if ac == "none":
        return full
    if ac == "selective":
        return sp_h + q + 0.5 * (q + 2 * kv + 2 * sp_h + 2 * f)
    if ac == "full":
        return sp_h
    raise PerfModelError(f"ac={ac!r}: valid activation-checkpointing modes are 'none', 'selective', 'full'")


def moe_activation_elements(sizes: Any) -> float:
    """bf16 elements per token one MoE layer saves (module doc; ``ac="none"`` only): the attention half as a dense
    layer's, the router scores, the routed rows and the expert MLP's saved tensors per routed row, shared experts."""
    m = sizes.moe
    attn = activation_elements(sizes.layer, "none") - 3 * sizes.layer.ffn  # the dense formula without its MLP
    routed = m.top_k * (m.dim + 3 * m.moe_inter)
    return attn + m.experts + routed + 3 * m.shared_experts * m.shared_inter


def float8_compiled_unsaved(layer: LayerShape, float8_linears: Any, tp: int = 1) -> float:
    """bf16 elements per token a compiled ``ac="none"`` layer does not save when the Linears named in
    ``float8_linears`` run in float8 (:data:`FLOAT8_COMPILED_UNSAVED`): ``hidden`` per norm whose consumers are all
    float8, ``ffn / tp`` for w2. 0 when none is."""
    if isinstance(float8_linears, str):
        raise PerfModelError(f"float8_linears={float8_linears!r}: pass a collection of Linear names, e.g. ('w1', 'w2')")
    names = set(float8_linears or ())
    valid = {lin.name for lin in layer.linears()}
    if names - valid:
        raise PerfModelError(
            f"float8_linears: unknown Linear name(s) {', '.join(sorted(map(str, names - valid)))}; valid: "
            + ", ".join(lin.name for lin in layer.linears())
        )
    width = {"hidden": layer.hidden, "ffn": layer.ffn / tp}
    return float(sum(width[w] for group, w in FLOAT8_COMPILED_UNSAVED.items() if names.issuperset(group)))


def _layer_activations(sizes: Any, ac: str, tp: int, unsaved: float = 0.0) -> Any:
    """bf16 elements per token every decoder layer of the model saves, summed (MoE: MoE and dense layers);
    ``unsaved``: elements per token a dense layer does not save (:func:`float8_compiled_unsaved`)."""
    if not getattr(sizes, "is_moe", False):
        return (activation_elements(sizes.layer, ac, tp) - unsaved) * sizes.layers
    dense = activation_elements(sizes.layer, ac, tp) if sizes.dense_layers else 0  # layer.ffn is the dense width
    return moe_activation_elements(sizes) * sizes.moe_layers + dense * sizes.dense_layers


def peak_memory(
    sizes: Any,
    *,
    tokens: Any,
    ac: str,
    tp: int = 1,
    dp_shard: int = 1,
    compile: bool = False,
    mode: str = "fsdp",
    ep: int = 1,
    float8_linears: Any = (),
) -> dict[str, Any]:
    """Peak allocated bytes of one rank, with its parts at the peak moment (module doc).

    Args:
        sizes: the model's :class:`~perfmodel.train.config.ModelSizes`.
        tokens: tokens per rank per step (``batch_per_gpu · seq_len``); numpy arrays broadcast.
        ac: ``"none"``, ``"selective"`` or ``"full"``.
        tp, dp_shard: tensor-parallel degree and FSDP shard degree (parameters shard over both).
        compile: layers and loss under ``torch.compile`` (:data:`COMPILED`).
        mode: one of :data:`MODES`; ``"amp"`` and ``"bf16"`` are plain single-GPU training (no sharding).
        ep: expert-parallel degree of an MoE model (module doc; an estimate).
        float8_linears: names of the decoder layers' Linears that run in float8 (``wq``, ``wk``, ``wv``, ``wo``, ``w1``,
            ``w3``, ``w2``); with ``compile`` and ``ac="none"`` the inputs only they consume are not saved
            (:data:`FLOAT8_COMPILED_UNSAVED`; dense models only: no MoE step was measured). Eager float8 steps
            measured the same peak as bf16, so nothing changes without ``compile``.

    Returns:
        ``{"peak": bytes, "moment": "loss" | "end of backward" | :data:`EMBEDDING_MOMENT` | :data:`RECOMPUTE_MOMENT`
        (an array of those for array input), "parts": {part: bytes at that moment}}``.
    """
    if mode not in MODES:
        raise PerfModelError(f"mode={mode!r}: valid modes are {', '.join(MODES)}")
    if mode != "fsdp" and (tp != 1 or dp_shard != 1):
        raise PerfModelError(f"mode={mode!r} is plain single-GPU training: tp and dp_shard must be 1")
    V = sizes.vocab
    shard = sizes.total_params / (tp * dp_shard)
    T = tokens
    act_k = COMPILED["act_factor"] if compile else ACT_FACTOR[ac]
    logit_b = COMPILED["logit_bytes"] if compile else LOGIT_BYTES
    p_b, g_b, o_b = (2, 2, 4) if mode == "bf16" else (4, 4, 8)
    unsaved = float8_compiled_unsaved(sizes.layer, float8_linears, tp)  # checks the names in every case
    if not compile or ac != "none" or getattr(sizes, "is_moe", False):
        unsaved = 0.0
    acts = 2 * T * _layer_activations(sizes, ac, tp, unsaved) * act_k
    last = sizes.layer_params
    if getattr(sizes, "is_moe", False):  # the last layer is an MoE layer: its experts / ep experts
        last = sizes.layer_params - sizes.expert_params * (1 - 1 / ep)
    gathered = 0 if mode != "fsdp" else 2 * (sizes.output_params + last) / tp
    # autocast's cached bf16 copies of every Linear weight used in forward (the layers' and the output layer's)
    autocast = 2 * (sizes.layers * sizes.layer_linear_params + sizes.output_params) if mode == "amp" else 0
    loss = {
        "params": p_b * shard,
        "optimizer": o_b * shard,
        "grads": 0 * shard,
        "activations": acts,
        "logits": logit_b * T * (V // tp) if V else 0 * T,
        "gathered_weights": gathered + autocast,
    }
    end = {
        "params": p_b * shard,
        "optimizer": o_b * shard,
        "grads": g_b * shard,
        "activations": 0 * T,
        "logits": 0 * T,
        "gathered_weights": TRANSIENT_BYTES_PER_EMBEDDING_PARAM * sizes.embedding_params / tp + 0 * T,
    }
    moments = {"loss": loss, "end of backward": end}
    if mode == "fsdp":
        moments[EMBEDDING_MOMENT] = _embedding_moment(sizes, end, tp, dp_shard, g_b, last)
    if ac != "none":
        moments[RECOMPUTE_MOMENT] = _recompute_moment(sizes, T, tp, dp_shard, shard, last, p_b, g_b, o_b)
    return _peak_of(moments)


#: the moment FSDP2 runs the embedding's backward: the first decoder layer's gradients are reduced, and the fp32
#: reduce-scatter input of that layer is still alive (``benchmarks/data/h200_2026-12-04r/memory_peak.json.gz``, 405B)
EMBEDDING_MOMENT = "embedding's backward"


def _embedding_moment(sizes: Any, end: dict[str, Any], tp: int, dp_shard: int, g_b: int, last: Any) -> dict[str, Any]:
    """Bytes alive while the embedding's backward runs (FSDP2 only; module doc): the end of backward's, less the
    embedding's sharded gradient (not reduced yet), plus the first decoder layer's fp32 reduce-scatter input
    (:data:`REDUCE_BYTES` per parameter of that layer, unsharded over ``dp_shard``, split by ``tp``), which FSDP2 frees
    only at the next reduce-scatter, the embedding's. It exceeds the end of backward when one layer has more
    parameters than the embedding (405B with a 32k vocabulary: by 9.9 GiB). The first layer of an MoE model with
    dense layers is dense; else it is an MoE layer holding ``experts / ep`` experts (``last``)."""
    first = sizes.dense_layer_params if getattr(sizes, "is_moe", False) and sizes.dense_layers else last
    return {
        **end,
        "grads": end["grads"] - g_b * sizes.embedding_params / (tp * dp_shard) + REDUCE_BYTES * first / tp,
    }


#: the moment an activation-checkpointed step recomputes its first layer: the SwiGLU backward of that layer's MLP
#: (where ``benchmarks/harness/memory_peak.py`` found the allocated peak of the 70B one-layer runs)
RECOMPUTE_MOMENT = "first layer's backward"
#: bytes per element of FSDP2's reduce-scatter input (``reduce_dtype`` float32, as torchtitan and our bench set it)
REDUCE_BYTES = 4


def _recompute_moment(
    sizes: Any, T: Any, tp: int, dp_shard: int, shard: Any, layer_params: Any, p_b: int, g_b: int, o_b: int
) -> dict[str, Any]:
    """Bytes alive in the first decoder layer's MLP backward under ``ac`` = selective / full (module doc), as the
    allocator's trace showed them (``benchmarks/data/h200_2026-12-04m``: 70B and 8B, one layer, 16k-32k tokens):

    * parameters and AdamW states; the gradients of everything but the embedding and the first layer (theirs come
      after), sharded; the fp32 reduce-scatter input of the group reduced last (FSDP2 frees it at the next
      reduce-scatter): the second layer's, or the head's (``output_params``) in a one-layer model;
    * the first layer's gathered bf16 weights and its down projection's bf16 weight gradient;
    * the layer's recomputed activations (all of them, as ``ac="none"`` saves them, times :data:`ACT_FACTOR`) and the
      SwiGLU backward's three ``ffn``-wide bf16 gradients (of the down projection's input, of ``silu(gate)``, of
      ``up``). An MoE model's layers differ: their mean count, its dense ``ffn``.
    """
    layer_elems = _layer_activations(sizes, "none", tp) / sizes.layers
    ffn, hidden = sizes.layer.ffn / tp, sizes.layer.hidden
    layers = sizes.layers  # a number, an array (a grid of depths) or a symbol
    reduced_last = namespace(layers, layer_params).where(layers > 1, layer_params, sizes.output_params)
    return {
        "params": p_b * shard,
        "optimizer": o_b * shard,
        "grads": g_b * (shard - (sizes.embedding_params + layer_params) / (tp * dp_shard))
        + REDUCE_BYTES * reduced_last / tp,
        "activations": 2 * T * (layer_elems * ACT_FACTOR["none"] + 3 * ffn),
        "logits": 0 * T,
        "gathered_weights": 2 * layer_params / tp + 2 * hidden * ffn + 0 * T,
    }


def _peak_of(moments: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The largest moment's total, its name and its parts (element-wise for arrays; a ``Max`` for symbols)."""
    names = list(moments)
    totals = [sum(m.values()) for m in moments.values()]
    keys = list(moments[names[0]])
    if any(is_symbolic(t) for t in totals):
        import sympy

        peak = sympy.Max(*totals)
        pieces = [(sympy.And(*(sympy.Ge(t, o) for o in totals if o is not t)), i) for i, t in enumerate(totals)]
        parts = {
            k: sympy.Piecewise(*((moments[names[i]][k], c) for c, i in pieces[:-1]), (moments[names[-1]][k], True))
            for k in keys
        }
        return {"peak": peak, "moment": " or ".join(names) + " (symbolic)", "parts": parts}
    stack = np.stack(np.broadcast_arrays(*[np.asarray(t, dtype=float) for t in totals]))
    which = np.argmax(stack, axis=0)  # the first of equal totals: loss before end of backward, as before
    parts = {k: np.choose(which, np.broadcast_arrays(*[np.asarray(m[k], dtype=float) for m in moments.values()]))
             for k in keys}  # fmt: skip
    if which.ndim == 0:
        return {
            "peak": float(stack.max()),
            "moment": names[int(which)],
            "parts": {k: float(v) for k, v in parts.items()},
        }
    return {"peak": stack.max(axis=0), "moment": np.asarray(names, dtype=object)[which].astype(str), "parts": parts}


def fits(peak_bytes: Any, gpu_memory_bytes: float) -> Any:
    """Whether a predicted allocated peak leaves :data:`RESERVE_SHARE` of the GPU's memory free (bool or array; a
    sympy relational for a symbolic peak)."""
    limit = (1 - RESERVE_SHARE) * gpu_memory_bytes
    if is_symbolic(peak_bytes):
        return peak_bytes <= limit
    out = np.less_equal(peak_bytes, limit)
    return bool(out) if np.ndim(out) == 0 else out
