"""Number formats: one registry of the element types GPU work computes in.

Counting rule for this module: ``bytes_per_element`` is the storage size of one element in
device memory (tf32 is stored as fp32: 4 bytes). Block-scaled formats (MX, NVFP4) also store one
scale per ``scale_block`` elements; :attr:`Format.bytes_per_element_with_scales` includes it.

Sources:
* OCP Microscaling Formats (MX) v1.0 specification, 2023: mxfp8/mxfp4 use blocks of 32 elements
  sharing one 8-bit power-of-two (E8M0) scale.
* NVIDIA Blackwell architecture technical brief / "Introducing NVFP4", NVIDIA developer blog,
  2025: nvfp4 is E2M1 with one FP8 (E4M3) scale per 16 elements (plus one fp32 per tensor).
* NVIDIA A100 whitepaper, 2020: tf32 has fp32 range (8-bit exponent) and a 10-bit mantissa.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

from .errors import UnknownFormatError, choices_message

__all__ = ["FORMATS", "Format", "FormatLike", "format_names", "get_format"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Format:
    """A number format.

    Attributes:
        name: registry name, also the field name of the format in :class:`perfmodel.specs.gpu.Peaks`.
        bits: bits of one stored element (tf32: 32, stored as fp32).
        kind: ``"float"`` or ``"int"``.
        exponent_bits, mantissa_bits: layout of one element (int8: 0, 7).
        scale_block: elements sharing one scale for block-scaled formats, else ``None``.
        scale_bits: bits of one block scale (E8M0: 8; E4M3: 8), ``0`` when unscaled.
        proton_width: the bit width Proton's ``flops<width>`` metric and ``specs.max_flops`` use.
        aliases: other names accepted by :func:`get_format` (lower case).
        description: one line for tables.
    """

    name: str
    bits: int
    kind: Literal["float", "int"] = "float"
    exponent_bits: int
    mantissa_bits: int
    scale_block: int | None = None
    scale_bits: int = 0
    proton_width: int
    aliases: tuple[str, ...] = ()
    description: str = ""

    def __post_init__(self) -> None:
        if self.bits <= 0:
            raise ValueError(f"Format {self.name!r}: bits must be positive, got {self.bits}")
        if (self.scale_block is None) != (self.scale_bits == 0):
            raise ValueError(f"Format {self.name!r}: scale_block and scale_bits go together")

    @property
    def bytes_per_element(self) -> float:
        """Storage bytes of one element, scales excluded (fp4: 0.5)."""
        return self.bits / 8

    @property
    def bytes_per_element_with_scales(self) -> float:
        """Storage bytes of one element including its share of the block scale."""
        if self.scale_block is None:
            return self.bytes_per_element
        return self.bits / 8 + self.scale_bits / 8 / self.scale_block

    @property
    def block_scaled(self) -> bool:
        """True for MX / NVFP4 formats, whose scales the tensor cores apply per block."""
        return self.scale_block is not None

    def __str__(self) -> str:
        return self.name


_ALL = (
    Format(
        name="fp32",
        bits=32,
        exponent_bits=8,
        mantissa_bits=23,
        proton_width=32,
        aliases=("float32", "float", "f32", "single"),
        description="IEEE single precision (CUDA cores)",
    ),
    Format(
        name="tf32",
        bits=32,
        exponent_bits=8,
        mantissa_bits=10,
        proton_width=32,
        aliases=("tensorfloat32", "tensorfloat-32"),
        description="fp32 storage, 10-bit mantissa tensor-core math",
    ),
    Format(
        name="bf16",
        bits=16,
        exponent_bits=8,
        mantissa_bits=7,
        proton_width=16,
        aliases=("bfloat16",),
        description="brain float 16",
    ),
    Format(
        name="fp16",
        bits=16,
        exponent_bits=5,
        mantissa_bits=10,
        proton_width=16,
        aliases=("float16", "half", "f16"),
        description="IEEE half precision",
    ),
    Format(
        name="fp8_e4m3",
        bits=8,
        exponent_bits=4,
        mantissa_bits=3,
        proton_width=8,
        aliases=("fp8", "e4m3", "float8", "float8_e4m3fn", "float8_e4m3fnuz", "f8e4m3"),
        description="float8 E4M3 (forward tensors in float8 training)",
    ),
    Format(
        name="fp8_e5m2",
        bits=8,
        exponent_bits=5,
        mantissa_bits=2,
        proton_width=8,
        aliases=("e5m2", "float8_e5m2", "float8_e5m2fnuz", "f8e5m2"),
        description="float8 E5M2 (wider range, gradients)",
    ),
    Format(
        name="mxfp8",
        bits=8,
        exponent_bits=4,
        mantissa_bits=3,
        scale_block=32,
        scale_bits=8,
        proton_width=8,
        aliases=("mx8", "mxfp8_e4m3"),
        description="OCP MX: E4M3 elements, one E8M0 scale per 32",
    ),
    Format(
        name="mxfp4",
        bits=4,
        exponent_bits=2,
        mantissa_bits=1,
        scale_block=32,
        scale_bits=8,
        proton_width=4,
        aliases=("mx4", "mxfp4_e2m1", "float4_e2m1fn_x2"),
        description="OCP MX: E2M1 elements, one E8M0 scale per 32",
    ),
    Format(
        name="nvfp4",
        bits=4,
        exponent_bits=2,
        mantissa_bits=1,
        scale_block=16,
        scale_bits=8,
        proton_width=4,
        aliases=("nvf4",),
        description="NVIDIA FP4: E2M1 elements, one E4M3 scale per 16",
    ),
    Format(
        name="int8",
        bits=8,
        kind="int",
        exponent_bits=0,
        mantissa_bits=7,
        proton_width=8,
        aliases=("i8", "s8"),
        description="8-bit integer (dense TOPS count as FLOP/s)",
    ),
)

#: The registry, name -> :class:`Format`, in table order.
FORMATS: Mapping[str, Format] = MappingProxyType({f.name: f for f in _ALL})

_LOOKUP: dict[str, Format] = {}
for _f in _ALL:
    for _key in (_f.name, *_f.aliases):
        if _key in _LOOKUP:  # pragma: no cover - registry invariant
            raise RuntimeError(f"duplicate format alias {_key!r}")
        _LOOKUP[_key] = _f

FormatLike = str | Format | object  # object: a torch.dtype, matched by name without torch


def format_names() -> list[str]:
    """Registry names, in table order."""
    return list(FORMATS)


def _normalise(value: str) -> str:
    text = value.strip().lower()
    if text.startswith("torch."):
        text = text[len("torch.") :]
    return text.replace("-", "_") if text not in _LOOKUP else text


def get_format(value: FormatLike) -> Format:
    """Resolve a format from our name, an alias, or a torch dtype (torch is not imported).

    >>> get_format("bfloat16").name
    'bf16'
    >>> get_format("fp8").name       # "fp8" means E4M3, the forward format of float8 training
    'fp8_e4m3'

    Raises:
        UnknownFormatError: with the valid names (a ``ValueError``).
    """
    if isinstance(value, Format):
        return value
    if type(value).__module__ == "torch" and type(value).__name__ == "dtype":
        text = str(value)  # "torch.bfloat16"
    elif isinstance(value, str):
        text = value
    else:
        raise UnknownFormatError(
            choices_message("number format", value, FORMATS, "Pass a name, an alias or a torch dtype.")
        )
    key = _normalise(text)
    if key in _LOOKUP:
        return _LOOKUP[key]
    hint = ""
    if key in ("fp4", "float4", "e2m1"):
        hint = "fp4 is ambiguous: use 'mxfp4' (OCP, 32-element blocks) or 'nvfp4' (16-element blocks)."
    raise UnknownFormatError(choices_message("number format", text, FORMATS, hint, candidates=_LOOKUP))
