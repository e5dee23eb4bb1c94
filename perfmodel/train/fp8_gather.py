"""What float8 all-gather (torchao's FSDP2 float8 all-gather, tensorwise) adds to one rank's step, priced from the
pieces we measured on one H200 (issue 34; ``benchmarks/data/h200_2026-12-03c/fsdp_pieces.json.gz``).

With ``enable_fsdp_float8_all_gather`` and ``precompute_float8_dynamic_scale_for_fsdp`` (how torchtitan and our
bench run it), the float8 Linears' weights are not cast inside the layer (:func:`perfmodel.train.compute._scale`
drops those kernels) and their bf16 copy-in is not made; instead each step runs:

* **the shard cast** (``fsdp_pre_all_gather`` with the scale given): each all-gather of a layer reads the rank's
  fp32 shard of its float8 Linears and writes float8, :data:`SHARD_CAST_BYTES_PER_ELEMENT` bytes per element, at
  :data:`SHARD_CAST_BYTES_PER_S_H200` (the measured eager ``cast_only`` rate). A layer is gathered once in
  forward and again in backward but for the last (FSDP2 keeps it gathered, as :mod:`perfmodel.train.comm`
  counts): ``2 - 1/L`` casts per layer on average;
* **the precompute** (``precompute_float8_dynamic_scale_for_fsdp``, once per step after the optimizer): one
  ``_foreach_norm(inf)`` over every float8 shard (reads :data:`PRECOMPUTE_BYTES_PER_ELEMENT` bytes per element),
  the scales' update: :data:`PRECOMPUTE_FIXED_S` plus the bytes at :data:`PRECOMPUTE_BYTES_PER_S_H200` — a fixed
  launch part and a part proportional to the layers' shard (0.26 ms per Llama 3 8B layer on one H200).

Both rates are measured on one H200 and transferred to other GPUs as the same share of their HBM bandwidth
(:data:`SHARD_CAST_BW_FRACTION`, :data:`PRECOMPUTE_BW_FRACTION`); the fixed part is taken as the same seconds
everywhere (an assumption: it is launch-bound). The pieces ran beside compile warm-up processes (the CPU busy), on
a world of 1: the amax all-reduce of a world above 1, and the small shards of a large ``dp_shard`` (a 10 MB shard
ran at 0.25 TB/s, a per-kernel floor near 40 us this price leaves out) are not priced. Validated end to end only
on one GPU (docs/train.md, "Float8 all-gather on one GPU"); the constants come from the same sessions as the runs
they are scored on, so that score is post-selection.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import statistics
from pathlib import Path
from typing import Any

from ..errors import PerfModelError
from .config import TrainConfig

__all__ = [
    "PIECES_FILE",
    "PRECOMPUTE_BW_FRACTION",
    "PRECOMPUTE_BYTES_PER_ELEMENT",
    "PRECOMPUTE_BYTES_PER_S_H200",
    "PRECOMPUTE_FIXED_S",
    "SHARD_CAST_BW_FRACTION",
    "SHARD_CAST_BYTES_PER_ELEMENT",
    "SHARD_CAST_BYTES_PER_S_H200",
    "SOURCE",
    "Float8GatherCost",
    "fit_pieces",
    "float8_gather_cost",
]

#: the measurement the constants below come from (``perfmodel.bench.fsdp_pieces``, one H200, 2026-12-03 14:14 UTC)
PIECES_FILE = "benchmarks/data/h200_2026-12-03c/fsdp_pieces.json.gz"
#: HBM bandwidth of the H200 the pieces ran on (perfmodel.specs: 4.8 TB/s), to carry the rates to other GPUs
_H200_HBM_BYTES_PER_S = 4.8e12
#: the shard cast's fewest bytes per element: read the fp32 master (4 B), write float8 (1 B)
SHARD_CAST_BYTES_PER_ELEMENT = 5
#: eager ``cast_only`` (scale given) on one H200: the median of its 10 records of at least 100 MB (0.80-0.86 TB/s
#: but one at 0.33 TB/s), :func:`fit_pieces` on :data:`PIECES_FILE`
SHARD_CAST_BYTES_PER_S_H200 = 825.773e9
#: what ``precompute_float8_dynamic_scale_for_fsdp`` reads per float8 shard element (fp32, once)
PRECOMPUTE_BYTES_PER_ELEMENT = 4
#: the precompute's fixed part and its rate: a least-squares line ``time = fixed + bytes / rate`` through its three
#: records (Llama 3 8B, 1 / 4 / 8 layers: 1.28 / 1.94 / 3.10 ms; residuals within 4.2 %), :func:`fit_pieces`
PRECOMPUTE_FIXED_S = 0.96883e-3
PRECOMPUTE_BYTES_PER_S_H200 = 3.33163e12
#: the rates as shares of the H200's HBM bandwidth (how they are carried to other GPUs: transferred)
SHARD_CAST_BW_FRACTION = SHARD_CAST_BYTES_PER_S_H200 / _H200_HBM_BYTES_PER_S
PRECOMPUTE_BW_FRACTION = PRECOMPUTE_BYTES_PER_S_H200 / _H200_HBM_BYTES_PER_S
#: where the price comes from, for provenance
SOURCE = (
    f"float8 all-gather casts: measured pieces on one H200 ({PIECES_FILE}: shard cast at "
    f"{SHARD_CAST_BYTES_PER_S_H200 / 1e12:.2f} TB/s, precompute {PRECOMPUTE_FIXED_S * 1e3:.2f} ms + bytes at "
    f"{PRECOMPUTE_BYTES_PER_S_H200 / 1e12:.2f} TB/s)"
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Float8GatherCost:
    """Seconds one rank spends per step on float8 all-gather's own work (module doc).

    Attributes:
        shard_cast_s: the fp32 shard -> float8 casts before the all-gathers (forward, and backward but the last
            layer).
        precompute_s: ``precompute_float8_dynamic_scale_for_fsdp``, fixed part included.
        shard_elements: float8 weight elements of one rank's shard, all layers.
    """

    shard_cast_s: Any
    precompute_s: Any
    shard_elements: Any

    @property
    def total_s(self) -> Any:
        return self.shard_cast_s + self.precompute_s


def float8_gather_cost(cfg: TrainConfig) -> Float8GatherCost:
    """The float8 all-gather work of one rank per step (module doc); zeros when ``cfg.float8_all_gather`` is off.

    Rates: :data:`SHARD_CAST_BW_FRACTION` and :data:`PRECOMPUTE_BW_FRACTION` of ``cfg.gpu``'s HBM bandwidth
    (measured on the H200, transferred elsewhere); :data:`PRECOMPUTE_FIXED_S` as measured.

    Raises:
        PerfModelError: float8 all-gather on a GPU whose HBM bandwidth is not known.
    """
    if not cfg.float8_all_gather:
        return Float8GatherCost(shard_cast_s=0, precompute_s=0, shard_elements=0)
    bw = cfg.gpu.mem_bw_bytes_per_s
    if not bw:
        raise PerfModelError(f"float8_all_gather=True needs {cfg.gpu.name}'s HBM bandwidth, which is not known")
    layers = cfg.sizes.layers
    shard = layers * cfg.fp8_gathered_params / (cfg.tp * cfg.dp_shard)
    casts_per_layer = 2 - 1 / layers  # forward every layer, backward all but the last (kept gathered)
    cast = casts_per_layer * SHARD_CAST_BYTES_PER_ELEMENT * shard / (SHARD_CAST_BW_FRACTION * bw)
    pre = PRECOMPUTE_FIXED_S + PRECOMPUTE_BYTES_PER_ELEMENT * shard / (PRECOMPUTE_BW_FRACTION * bw)
    return Float8GatherCost(shard_cast_s=cast, precompute_s=pre, shard_elements=shard)


def fit_pieces(path: str | Path) -> dict[str, float]:
    """The constants above, refitted from a pieces file (:data:`PIECES_FILE` in the repository): ``cast_bytes_per_s``
    (median ``bytes_per_s`` of the ``cast_only`` records of at least 100 MB), ``precompute_fixed_s`` and
    ``precompute_bytes_per_s`` (least-squares line of the ``precompute`` records' time on their bytes).

    Raises:
        PerfModelError: the file lacks those records.
    """
    p = Path(path)
    with gzip.open(p, "rt") as f:
        records = json.load(f)["records"]
    casts = [r["bytes_per_s"] for r in records if r.get("variant") == "cast_only" and r["bytes_min"] >= 1e8]
    pre = [(float(r["bytes_min"]), float(r["time_s"])) for r in records if r.get("piece") == "precompute"]
    if not casts or len(pre) < 2:
        raise PerfModelError(f"{p}: needs cast_only shard_cast records of >= 100 MB and two precompute records")
    n = len(pre)
    mb, mt = sum(b for b, _ in pre) / n, sum(t for _, t in pre) / n
    slope = sum((b - mb) * (t - mt) for b, t in pre) / sum((b - mb) ** 2 for b, _ in pre)
    return {
        "cast_bytes_per_s": statistics.median(casts),
        "precompute_fixed_s": mt - slope * mb,
        "precompute_bytes_per_s": 1 / slope,
    }
