"""The e8m0 scale re-layouts of torchao's mxfp8 grouped GEMM, priced from our H200 timing of the kernels.

torchao 0.17's mxfp8 MoE path (``prototype/moe_training/mxfp8_grouped_mm.py``) rearranges the 1x32-block scales
into the blocked layout the Blackwell tensor cores read, once per operand and per group: the activation and
output-gradient scales with groups along M (``mx_block_rearrange_2d_M_groups``: a CUDA kernel on Blackwell, its
Triton twin ``triton_mx_block_rearrange_2d_M_groups`` is what we timed), the weight scales per expert
(``triton_mx_block_rearrange_per_group_3d``) and, for the 2D x 2D wgrad, both operands' scales with groups along
K (``triton_mx_block_rearrange_2d_K_groups``). These kernels loop over scale blocks per group and run far below
the memory bandwidth (20-1000 GB/s on the H200), so their time is a latency, not a bandwidth: a re-layout is
priced at the time of the measured case nearest in log(rows, cols, groups), as measured on the H200 (the same
Triton source runs on Blackwell; the time is not rescaled). Data: ``perfmodel/calibrations/h200_mxfp8_relayout.json``
(written by ``benchmarks/derive_mx_relayout.py`` from ``benchmarks/data/h200_2026-12-03f``).
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import Any

from .._files import CALIBRATIONS, load_json
from ..errors import CalibrationError, UnknownOptionError

__all__ = ["RELAYOUT_FILE", "RELAYOUT_KERNELS", "relayout_time_s"]

RELAYOUT_FILE = "h200_mxfp8_relayout.json"
RELAYOUT_KERNELS = ("rearrange_2d_M_groups", "rearrange_2d_K_groups", "rearrange_per_group_3d")


@functools.cache
def _table() -> dict[str, list[tuple[float, float, float, float]]]:
    data = load_json(CALIBRATIONS / RELAYOUT_FILE, what="mxfp8 re-layout timing", error=CalibrationError)
    out: dict[str, list[tuple[float, float, float, float]]] = {}
    for kernel, rows, cols, groups, t in data["records"]:
        out.setdefault(kernel, []).append((math.log(rows), math.log(cols), math.log(groups), float(t)))
    return out


def relayout_time_s(kernel: str, rows: int, cols: int, groups: int) -> tuple[float, str]:
    """Seconds of one re-layout, and where the figure comes from.

    Args:
        kernel: one of :data:`RELAYOUT_KERNELS`.
        rows, cols: the high-precision tensor the scales belong to: tokens x K for ``rearrange_2d_M_groups``,
            N (or K) x tokens for ``rearrange_2d_K_groups``, N x K per expert for ``rearrange_per_group_3d``.
        groups: token groups (experts on this GPU).

    Returns:
        (time_s, note): the H200 median event time of the nearest measured case, and a note naming that case.
    """
    if kernel not in RELAYOUT_KERNELS:
        raise UnknownOptionError(f"kernel={kernel!r}: the mxfp8 re-layouts are {', '.join(RELAYOUT_KERNELS)}")
    for name, v in (("rows", rows), ("cols", cols), ("groups", groups)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
            raise UnknownOptionError(f"{name}={v!r}: a re-layout's {name} is a positive int")
    q = (math.log(int(rows)), math.log(int(cols)), math.log(int(groups)))
    best: Any = min(_table()[kernel], key=lambda c: sum((a - b) ** 2 for a, b in zip(c[:3], q, strict=True)))
    shape = "x".join(str(round(math.exp(x))) for x in best[:2])
    note = f"measured on H200: {kernel} {shape}, {round(math.exp(best[2]))} groups (nearest case)"
    return best[3], note
