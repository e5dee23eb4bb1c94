"""Write ``perfmodel/calibrations/h200_tile_kinds.json``: the shipped tile model's formula kinds without its learned
corrections (the trees), for answers that read no correction (``perfmodel gemm ... --gpu h200``'s split-K flag,
:func:`perfmodel.models.registry.tile_kinds`).

The shipped ``h200_tile_kinds.json`` is the whole model ``h200_tiles.json.gz`` (1.7 MB gzip, 5.3 MB of JSON, ~40 ms
to gunzip and scan) with ``corrections`` and ``event_corrections`` dropped (~25 KB, read in ~1 ms); everything else
(schema, gpu, source, kinds, event kinds, measured range, residuals) is the big file's, written by
:meth:`perfmodel.models.tiles.TileModel.save`. Run it after refitting the tile model; ``tests/test_tile_kinds_file.py``
checks that the small file says what the big one says.

    python benchmarks/make_tile_kinds.py            # (re)write the small file
    python benchmarks/make_tile_kinds.py --check    # exit 1 if it is not what the big file says; writes nothing
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from pathlib import Path

from perfmodel.models.registry import TILE_KINDS_PATH, TILES_PATH
from perfmodel.models.tiles import load_tile_model

__all__ = ["kinds_text", "main"]


def kinds_text(tiles_path: Path = TILES_PATH) -> str:
    """The text of the small file for the tile model at ``tiles_path`` (its trees dropped)."""
    full = load_tile_model(tiles_path)
    formula = dataclasses.replace(full, corrections={}, event_corrections={})
    with tempfile.TemporaryDirectory() as tmp:
        out = formula.save(Path(tmp) / "kinds.json")
        return out.read_text()


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check``, compare) :data:`perfmodel.models.registry.TILE_KINDS_PATH`; 1 if it is stale."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 where the file is stale")
    args = parser.parse_args(argv)
    text = kinds_text()
    if args.check:
        same = TILE_KINDS_PATH.exists() and TILE_KINDS_PATH.read_text() == text
        print(f"{TILE_KINDS_PATH.name}: {'up to date' if same else 'STALE: run python benchmarks/make_tile_kinds.py'}")
        return 0 if same else 1
    TILE_KINDS_PATH.write_text(text)
    print(f"wrote {TILE_KINDS_PATH} ({len(text.encode()):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
