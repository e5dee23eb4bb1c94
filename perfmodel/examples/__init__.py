"""Small real profiles that ship with the package, so that the docs' examples run from an installed wheel.

All were measured on one NVIDIA H200 (132 SMs) with Triton 3.6 Proton; they are byte-for-byte copies of the
repository's test fixtures (``tests/data/``, whose README says how they were recorded; ``tests/test_docs.py``
checks that the copies are identical). About 35 KB in all.

``h200_triton3.6_scope_and_kernel.hatchet``
    One Proton session (2.4 KB): a scope ``outer`` holding 5 launches of a Triton fp32 vector add
    (``add_n67108864``) and a scope ``mm_scope`` with metrics (``flops16`` = 5·2·8192³, ``bytes``) around
    5 cuBLAS bf16 8192³ GEMMs (``nvjet_sm90_tst_*``), as the program of ``docs/measured.md`` section 1 writes it.
``moe``
    A folder (33 files, 33 KB): a ``triton_kernels`` MoE-bench log tree, ``log_metadata.json`` and two
    logs of 16 profiles each (batch 256…4096) of the Triton fp8 matmul fixture with 128x128x128 and
    64x128x128 tiles. The model folder is named ``llama4-maverick`` as the bench lays it out, but the GEMMs
    are the fixture's, ``[batch·4/128, 5120] @ [5120, 8192]``, 4 launches per profile.

>>> from perfmodel import examples, proton
>>> proton.read(examples.path("h200_triton3.6_scope_and_kernel.hatchet")).gpu.name
'H200'
"""

from __future__ import annotations

import pathlib

from ..errors import UnknownExampleError, choices_message

__all__ = ["NAMES", "path"]

#: every shipped example: name -> one line on what it is (the module docstring has the details)
NAMES: dict[str, str] = {
    "h200_triton3.6_scope_and_kernel.hatchet": "H200 Proton profile: a Triton vector add and a cuBLAS bf16 scope",
    "moe": "H200 MoE-bench log tree (log_metadata.json + 2 logs x 16 batch profiles)",
}

_HERE = pathlib.Path(__file__).resolve().parent


def path(name: str) -> pathlib.Path:
    """The absolute path of a shipped example file or folder (see :data:`NAMES`).

    The examples are plain files inside the installed package, so the path can be passed to any reader
    (``proton.read``, ``moe.read_log_metadata``) and copied elsewhere.

    Raises:
        UnknownExampleError: ``name`` is not one of :data:`NAMES` (the message lists them), or the
            installation lacks the file (a package built without its package data).
    """
    if not isinstance(name, str) or name not in NAMES:
        raise UnknownExampleError(choices_message("example", name, NAMES))
    where = _HERE / name
    if not where.exists():
        raise UnknownExampleError(
            f"example {name!r} is missing from this installation ({where}); it ships as package data of "
            "perfmodel: reinstall perfmodel from a checkout (pip install .)"
        )
    return where
