"""Reading a tile model file: :func:`load_tile_model` (whole) and :func:`load_tile_kinds` (without its trees)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ...errors import CalibrationError
from .model import TileModel

__all__ = ["load_tile_kinds", "load_tile_model"]

#: the top-level entries a formula-only tile model needs (:func:`load_tile_kinds`)
_KINDS_ONLY_KEYS = ("schema", "gpu", "source", "kinds", "event_kinds", "measured_range", "residuals")


def load_tile_kinds(path: str | Path, *, base: Any = None) -> TileModel:
    """The tile model of ``path`` without its learned corrections (the trees: 5.3 of the shipped file's 5.35 MB of
    JSON), for answers that read no correction, e.g. :meth:`TileModel.split_k` (``perfmodel gemm``'s split-K flag).

    The top-level entries :meth:`TileModel.save` writes one a line (``\\n "key": ``) are decoded one by one with
    :meth:`json.JSONDecoder.raw_decode`, the trees skipped unparsed; a file laid out otherwise is read whole
    (:func:`load_tile_model`, then its corrections dropped). Same checks and named errors as :func:`load_tile_model`.
    """
    import json
    import re

    from ..._files import DATA_MAX_BYTES, read_text

    path = Path(path)
    try:
        text = read_text(path, what="tile model", default_limit_bytes=DATA_MAX_BYTES)
    except (OSError, ValueError):  # the full reader words every such error
        return load_tile_model(path, base=base)
    decode = json.JSONDecoder().raw_decode
    data: dict[str, Any] = {}
    for match in re.finditer(r'\n "(\w+)": ', text):
        if match[1] in _KINDS_ONLY_KEYS:
            try:
                data[match[1]] = decode(text, match.end())[0]
            except ValueError:
                return load_tile_model(path, base=base)
    if "kinds" not in data or "schema" not in data:
        full = load_tile_model(path, base=base)
        return dataclasses.replace(full, corrections={}, event_corrections={})
    return TileModel.from_dict(data, origin=str(path), base=base)


def load_tile_model(path: str | Path, *, base: Any = None) -> TileModel:
    """Read a tile model written by :meth:`TileModel.save` (named errors for anything else)."""
    from ..._files import DATA_MAX_BYTES, load_json

    path = Path(path)
    data = load_json(path, what="tile model", error=CalibrationError, default_limit_bytes=DATA_MAX_BYTES)
    return TileModel.from_dict(data, origin=str(path), base=base)
