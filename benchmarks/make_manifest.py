"""Write ``benchmarks/data/MANIFEST.json``: every file under ``benchmarks/data`` with its size, SHA-256, record count,
GPU and date, so that a checkout can tell a changed, missing or stray measurement file (``tests/test_data_manifest.py``
checks the tree against it).

    python benchmarks/make_manifest.py            # (re)write the manifest
    python benchmarks/make_manifest.py --check    # exit 1 if the manifest is not up to date; writes nothing

What each entry holds (``path`` relative to ``benchmarks/data``, ``/``-separated):

* ``bytes``, ``sha256``: of the file as committed (a ``.gz`` file's compressed bytes), hashed in 1 MiB chunks.
* ``rows``: :data:`ROWS_RULE` — the number of records of a JSON file, ``null`` for everything else.
* ``gpu``: ``{"name", "uuid"}`` from the JSON file's ``meta`` (``gpu_name`` or ``gpu``; ``gpu_uuid``), each ``null``
  where the meta lacks it; ``null`` for a file without a meta (logs, CSV). The sweeps' GPU UUIDs that only their
  logs record are not parsed.
* ``date``, ``date_from``: the JSON meta's ``date`` (``"meta"``), else the last ``YYYY-MM-DD`` in the file name
  (``"name"``), else in its folder's name (``"folder"``), else ``null``.

``README.md`` files are prose about the data, not data: they are left out (:data:`SKIPPED`), and so is the manifest
itself. The output is sorted by path, one entry per line, with no time stamp: the same tree gives the same bytes.
Entries whose path, size and SHA-256 match the old manifest keep its ``rows``/``gpu``/``date`` without re-reading the
file (``--recompute`` reads every file again).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "CHUNK",
    "DATA",
    "FIELDS",
    "MANIFEST",
    "ROWS_RULE",
    "SKIPPED",
    "build",
    "entry",
    "files",
    "main",
    "render",
    "sha256",
]

DATA = Path(__file__).resolve().parent / "data"
MANIFEST = DATA / "MANIFEST.json"
#: file names never listed: the manifest itself and the folders' READMEs (prose, edited often)
SKIPPED = frozenset({"MANIFEST.json", "README.md"})
#: hashing reads this many bytes at a time (1 MiB)
CHUNK = 1 << 20
#: how ``rows`` is counted (also written into the manifest)
ROWS_RULE = (
    "JSON files (.json, .json.gz) only: len(records) of an object with a 'records' list (perfmodel.bench/1 "
    "datasets), else len(items) of an object with an 'items' list (a plan), else len() of a top-level list; "
    "null for any other JSON and for every non-JSON file (logs, CSV)"
)
#: the keys of an entry, in the order they are written
FIELDS = ("path", "bytes", "sha256", "rows", "gpu", "date", "date_from")
_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})")


def sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, read in :data:`CHUNK`-byte pieces."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.hexdigest()


def files(root: Path = DATA) -> Iterator[Path]:
    """Every regular file under ``root`` except :data:`SKIPPED`, sorted by its ``/``-separated relative path."""
    found = [p for p in root.rglob("*") if p.is_file() and p.name not in SKIPPED]
    yield from sorted(found, key=lambda p: p.relative_to(root).as_posix())


def _json(path: Path) -> Any:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.name.endswith(".gz") else raw)


def _rows(data: Any) -> int | None:
    if isinstance(data, dict):
        for key in ("records", "items"):
            if isinstance(data.get(key), list):
                return len(data[key])
        return None
    return len(data) if isinstance(data, list) else None


def entry(path: Path, root: Path = DATA) -> dict[str, Any]:
    """The manifest entry of one file (see the module docstring for the fields)."""
    rel = path.relative_to(root).as_posix()
    out: dict[str, Any] = {"path": rel, "bytes": path.stat().st_size, "sha256": sha256(path)}
    meta: Mapping[str, Any] = {}
    rows = None
    if path.name.endswith((".json", ".json.gz")):
        data = _json(path)
        rows = _rows(data)
        if isinstance(data, dict) and isinstance(data.get("meta"), dict):
            meta = data["meta"]
    out["rows"] = rows
    name, uuid = meta.get("gpu_name") or meta.get("gpu"), meta.get("gpu_uuid")
    out["gpu"] = {"name": name, "uuid": uuid} if meta else None
    date, source = (meta.get("date"), "meta") if isinstance(meta.get("date"), str) else (None, None)
    for part, label in ((path.name, "name"), (path.parent.relative_to(root).as_posix(), "folder")):
        if date is None and (found := _DATE.findall(part)):
            date, source = found[-1], label
    out["date"], out["date_from"] = date, source
    return out


def build(root: Path = DATA, old: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The manifest of ``root``; entries of ``old`` whose path, size and SHA-256 still match are reused as they are."""
    reuse = {e["path"]: e for e in (old or {}).get("files", [])}
    entries = []
    for path in files(root):
        rel = path.relative_to(root).as_posix()
        prev = reuse.get(rel)
        if prev is not None and prev.get("bytes") == path.stat().st_size and prev.get("sha256") == sha256(path):
            entries.append(dict(prev))
        else:
            entries.append(entry(path, root))
    return {
        "about": "every file under benchmarks/data but README.md files; written by python benchmarks/make_manifest.py",
        "rows": ROWS_RULE,
        "n_files": len(entries),
        "total_bytes": sum(e["bytes"] for e in entries),
        "files": entries,
    }


def render(manifest: Mapping[str, Any]) -> str:
    """The manifest as text: header keys first, then one entry per line (keys in :data:`FIELDS` order), a newline at
    the end."""
    head = {k: v for k, v in manifest.items() if k != "files"}
    lines = [f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}," for k, v in head.items()]
    rows = [f"  {json.dumps({k: e.get(k) for k in FIELDS}, ensure_ascii=False)}" for e in manifest["files"]]
    return "{\n" + "\n".join(lines) + '\n "files": [\n' + ",\n".join(rows) + "\n ]\n}\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the manifest is not up to date; write nothing")
    ap.add_argument("--recompute", action="store_true", help="read every file again (no reuse of old entries)")
    ap.add_argument("--root", type=Path, default=DATA, help="the data folder (default: benchmarks/data)")
    args = ap.parse_args(argv)
    target = args.root / MANIFEST.name
    old_text = target.read_text(encoding="utf-8") if target.is_file() else None
    old = None if args.recompute or old_text is None else json.loads(old_text)
    text = render(build(args.root, old))
    if args.check:
        if text != old_text:
            print(f"{target} is not up to date: run python benchmarks/make_manifest.py", file=sys.stderr)
            return 1
        print(f"{target}: up to date")
        return 0
    if text != old_text:
        target.write_text(text, encoding="utf-8")
    n = json.loads(text)["n_files"]
    print(f"{target}: {n} files{' (unchanged)' if text == old_text else ''}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
