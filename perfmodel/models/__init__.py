"""Time models: what a GEMM, a cast or a collective costs on a GPU, and which model answers for which GPU.

``base`` (the :class:`TimeModel` protocol, the roofline, provenance), ``calibrated`` (the measured H200 model and its
rescaling to other GPUs), ``estimated`` (non-Hopper GPUs from published figures), ``tiles`` and ``trees`` (the tile
model and its boosted correction), ``kernel_choice`` (cuBLAS's kernel class), ``collectives`` (NCCL), ``errorbars``,
``shipped`` (the calibration files) and ``registry`` (GPU -> model, provenance).
"""
