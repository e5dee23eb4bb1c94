"""The hardware table: every GPU row and the alias table (looked up through :mod:`perfmodel.specs.gpu`).

The rows are written per architecture family in :mod:`perfmodel.specs.hopper` and
:mod:`perfmodel.specs.others`, with their documents in :mod:`perfmodel.specs.sources`.

Counting rules for every row: dense peaks (2:4-sparse datasheet figures are written as ``x / 2``),
1 FMA = 2 FLOP, int8 TOPS in the FLOP/s fields, B/s, bytes (1 GB = 1e9 B). Per-GPU figures of 8-GPU
boards (HGX/DGX) and 2-GPU superchips are written as ``total / 8`` or ``total / 2``. A peak is
``None`` where the GPU has no native tensor-core path for the format (no fp8 on A100, no MX/NVFP4
before Blackwell/CDNA 4, no NVFP4 on AMD) or where it could not be sourced (said in
``Peaks.source``). Every other number carries a source in ``GPUSpec.sources``; where NVIDIA or AMD
publish nothing, the source says which public device report or reprint it rests on and how weak it is.

Clocks: ``boost_clock_hz`` is the max SM clock the vendor or the device reports. Where neither is
known it is the tensor clock implied by the datasheet peak, stated as arithmetic, or an assumption
said as one. ``mem_clock_hz`` follows the convention of CUDA's ``memoryClockRate`` and Triton's
``specs.max_bps``: ``bandwidth = 2 * bus_width_bits * mem_clock_hz / 8``. ``power_w`` is the board's
maximum power limit (TDP/TGP/TBP).
"""

from __future__ import annotations

from .hopper import HOPPER, HOPPER_ALIASES
from .others import OTHER_ALIASES, OTHERS
from .spec import GPUSpec

__all__ = ["ALIAS_NAMES", "TABLE"]

#: every row, Hopper first (table order decides which row gpu_from_proton picks among equals)
TABLE: tuple[GPUSpec, ...] = (*HOPPER, *OTHERS)

#: canonical name -> names accepted by get_gpu (normalised when the alias table is built)
ALIAS_NAMES: dict[str, tuple[str, ...]] = {**HOPPER_ALIASES, **OTHER_ALIASES}
