"""Training-step estimates at cluster scale: FSDP2 (optionally with float8 all-gather), HSDP and tensor
parallelism with sequence parallelism (vanilla or async), as torchtitan runs them.

::

    import perfmodel.train as train
    est = train.estimate("llama3-70b", gpu="H100", n_gpus=256, tp=8, seq_len=8192, batch_per_gpu=16,
                         recipe="tensorwise", float8_all_gather=True, ac="full")
    est.step_s, est.tokens_per_s_per_gpu, est.memory_bytes, est.fits
    print(est)                     # the breakdown: compute by part, each collective, exposed vs overlapped

One rank's step is::

    step_s = L · (layer_fwd + layer_bwd)        decoder layers, TP-sharded, from perfmodel.step (+ async TP chunking)
           + output layer + loss + embedding    bf16 output Linear over vocab / tp, compiled cross-entropy
           + overhead                            optimizer step and FSDP2's copies (fitted, perfmodel.train.compute)
           + float8_gather                       float8 all-gather's shard casts and scales (measured pieces,
                                                 perfmodel.train.fp8_gather; only with float8_all_gather=True)
           + exposed communication               FSDP / HSDP / TP collectives the compute does not hide

with the collectives priced by :mod:`perfmodel.models.collectives` (bandwidths of the GPU's fabric and the inter-node
network; estimated from published NCCL figures) and their overlap as in :mod:`perfmodel.train.comm`.
``tokens_per_s_per_gpu = batch_per_gpu · seq_len / (step_s · tp)`` (torchtitan's TPS: a TP group shares
its ranks' batch).

Where the numbers come from: the layer compute is the step model's (its provenance: measured on the H200,
transferred to other Hopper GPUs, estimated elsewhere); the optimizer/FSDP overhead is fitted on one-GPU
FSDP2 steps measured on an H200 (``perfmodel/calibrations/h200_train.json``); the collectives are an
estimate from published figures. ``est.provenance`` says so, with the error measured against published
multi-GPU float8 runs (``docs/validation.md``, "Training at cluster scale"). ``compile=True`` (the job under
``torch.compile``) changes the memory estimate only (docs/train.md, "torch.compile").

Modules: :mod:`~perfmodel.train.pricing` (:func:`estimate`), :mod:`~perfmodel.train.result` (:class:`TrainEstimate`
and its text), :mod:`~perfmodel.train.config`, :mod:`~perfmodel.train.compute`, :mod:`~perfmodel.train.comm`,
:mod:`~perfmodel.train.fp8_gather`, :mod:`~perfmodel.train.memory`, :mod:`~perfmodel.train.mfu`,
:mod:`~perfmodel.train.moe`, :mod:`~perfmodel.train.grid`.

MoE models (the GQA MoE presets: mixtral-8x7b, qwen3-30b-a3b, llama4-scout, llama4-maverick, gpt-oss-120b,
mixtral-8x22b, qwen3-235b-a22b, qwen3-coder-480b-a35b, dbrx, olmoe-1b-7b, gpt-oss-20b, glm-4.5-air) with
``ep=`` (expert parallelism out of the FSDP shard ranks, ``tp = 1``): each MoE layer is
:func:`perfmodel.step.layer_time` (attention half + routed-expert block + EP all-to-all, serial), dense layers
``dense_layer=True``; parameter counts with every expert, 6·N model FLOPs with the active ones (docs/train.md,
"MoE models").

Not modeled (refused by name): pipeline and context parallelism, MLA layers (DeepSeek), TP of MoE models,
activation checkpointing of MoE layers, arrays or symbols for an MoE model's seq_len / batch_per_gpu / layers.
Assumed (not measured by us): the activation memory a layer saves, the loss kernel's bytes, that communication
kernels do not slow the GEMMs they overlap.
"""

# ruff: noqa: F401  (the old flat module's names stay importable from here; __all__ is its public list)

from __future__ import annotations

from .comm import CommCall, CommPlan, comm_plan
from .compute import LayerCompute, TrainParams, shipped_train_params
from .config import ModelSizes, TrainConfig, check_config, model_sizes, with_convert
from .grid import TrainEstimateGrid
from .mfu import MFU, StepFlops, mfu_from_run, predicted_mfu, step_flops
from .pricing import TRAIN_EXPECTED_ERROR, _auto_candidates, _flops_per_step, _priced, _provenance, estimate
from .result import MEMORY_CHECKED, MEMORY_HEADROOM, TOKENS_PER_S_BIAS, TrainEstimate, _num, _short

__all__ = [
    "MEMORY_HEADROOM",
    "MFU",
    "TOKENS_PER_S_BIAS",
    "TRAIN_EXPECTED_ERROR",
    "CommCall",
    "StepFlops",
    "TrainEstimate",
    "TrainEstimateGrid",
    "TrainParams",
    "estimate",
    "mfu_from_run",
    "step_flops",
]
