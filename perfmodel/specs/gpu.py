"""The hardware table: look up a GPU's spec by name, alias or device string.

Every public name about GPU specs is imported from here: the classes (:class:`GPUSpec`,
:class:`Peaks`, :class:`Efficiency`, defined in :mod:`perfmodel.specs.spec` with the counting rules),
the rows (:data:`GPUS`, written in :mod:`perfmodel.specs.table` with a source for every number) and
specs built from Proton profile metadata (:func:`gpu_from_proton`, :mod:`perfmodel.specs.proton`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Union

from ..errors import UnknownGPUError, choices_message
from .proton import gpu_from_proton, proton_mem_bw_bytes_per_s, proton_peak_flops_per_s
from .spec import (
    AMD_DEFAULT_EFFICIENCY,
    NVIDIA_DEFAULT_EFFICIENCY,
    ORIGINAL_EFFICIENCY,
    Efficiency,
    GPUSpec,
    Interconnect,
    Peaks,
    default_efficiency,
)
from .table import ALIAS_NAMES, TABLE

__all__ = [
    "ALIASES",
    "AMD_DEFAULT_EFFICIENCY",
    "GPUS",
    "NVIDIA_DEFAULT_EFFICIENCY",
    "ORIGINAL_EFFICIENCY",
    "Efficiency",
    "GPULike",
    "GPUSpec",
    "Interconnect",
    "Peaks",
    "default_efficiency",
    "get_gpu",
    "gpu_from_proton",
    "list_gpus",
    "proton_mem_bw_bytes_per_s",
    "proton_peak_flops_per_s",
]


def _normalise(name: str) -> str:
    return re.sub(r"[\s_]+", "-", name.strip().lower())


#: canonical name -> spec
GPUS: Mapping[str, GPUSpec] = MappingProxyType({g.name: g for g in TABLE})


def _build_aliases() -> dict[str, str]:
    out: dict[str, str] = {}
    canonical = {_normalise(n): n for n in GPUS}
    for name, aliases in ALIAS_NAMES.items():
        for alias in aliases:
            key = _normalise(alias)
            if out.get(key, name) != name or canonical.get(key, name) != name:  # pragma: no cover
                raise RuntimeError(f"alias {alias!r} is claimed by two GPUs")
            out[key] = name
    return out


#: normalised alias -> canonical name. Built from real device names (``torch.cuda.get_device_name()``),
#: marketing names and short names; ambiguous short names ("h100", "a100") mean the SXM part.
ALIASES: Mapping[str, str] = MappingProxyType(_build_aliases())

GPULike = Union[str, GPUSpec]  # noqa: UP007  (a runtime alias; kept as written)


def list_gpus() -> list[str]:
    """Canonical names of every GPU in the table."""
    return list(GPUS)


def get_gpu(gpu: GPULike) -> GPUSpec:
    """Resolve a :class:`GPUSpec` from a canonical name, an alias or a device-name string.

    Lookup is exact after normalisation (lower case, runs of spaces/underscores -> ``-``);
    there is no substring or prefix guessing. Ambiguous short names resolve to the SXM part
    (``"h100"`` -> H100-SXM, ``"a100"`` -> A100-SXM-80GB).

    >>> get_gpu("NVIDIA H100 80GB HBM3").name
    'H100-SXM'

    Raises:
        UnknownGPUError: with close matches and the valid names (a ``LookupError``).
    """
    if isinstance(gpu, GPUSpec):
        return gpu
    if not isinstance(gpu, str):
        raise UnknownGPUError(choices_message("GPU", gpu, GPUS, "Pass a name (str) or a GPUSpec."))
    key = _normalise(gpu)
    canonical = ALIASES.get(key) or {k.lower(): k for k in GPUS}.get(key)
    if canonical is None:
        raise UnknownGPUError(
            choices_message(
                "GPU",
                gpu,
                GPUS,
                "See perfmodel.list_gpus(); for another GPU build a GPUSpec (dataclasses.replace an entry).",
                candidates=ALIASES,
            )
        )
    return GPUS[canonical]
