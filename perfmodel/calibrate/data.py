"""Calibration datasets: load and check ``python -m perfmodel.bench`` files, the held-out split, APE statistics."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..counting import resolve_scaling
from ..errors import CalibrationError, PerfModelError
from ..formats import get_format

__all__ = ["ape_stats", "is_heldout", "load_dataset", "read_data_json"]


def read_data_json(path: str | Path) -> Any:
    """A committed data file's JSON: ``.json``, or gzip-compressed ``.json.gz`` (the layout sweeps' large files are
    committed compressed, so that the checkout stays within what a device call carries)."""
    import gc

    from .._files import load_json

    # a layout sweep decodes into ~10^5 dicts and lists: with the cyclic collector on, each full collection the
    # parse triggers rescans every record decoded so far (about half of the suite's decode time when it reads the
    # ~180 sweeps); JSON values hold no cycles, so pausing it changes nothing but the time
    was_on = gc.isenabled()
    gc.disable()
    try:
        return load_json(path, what="data", error=CalibrationError)
    finally:
        if was_on:
            gc.enable()


def load_dataset(
    source: str | Path | Mapping[str, Any] | Sequence[str | Path], *, max_bytes: int | None = None
) -> dict[str, Any]:
    """Load one or several bench datasets (``python -m perfmodel.bench``) into one ``{meta, records}``.

    Files: only regular files of at most 64 MiB each (``max_bytes`` or ``$PERFMODEL_MAX_FILE_BYTES``
    override the limit), any nesting depth. The records the calibrator fits are checked here, so a
    bad one is named (file, index, field) instead of failing inside the fit: ``gemm`` needs ``M``,
    ``K``, ``N`` (whole numbers > 0), ``dtype`` (a known format) and ``time_s`` (> 0); ``linear``
    needs ``M``, ``K``, ``N``, and its ``kernels`` (if any) a ``name`` and ``time_s`` >= 0; ``copy``
    and ``cast`` need ``bytes`` >= 0 and ``time_s`` > 0; ``launch`` needs ``time_s`` > 0. Records
    with ``errors`` (failed configurations) and other ops are kept unchecked; the fit skips them.

    Raises:
        FileRefusedError: a path that is not a regular file, or above the size limit.
        CalibrationError: unreadable file, wrong layout, a bad record, or no records.
    """
    from .._files import DATA_MAX_BYTES, load_json

    if isinstance(source, Mapping):
        parts = [("<dict>", source)]
    else:
        paths = [source] if isinstance(source, (str, Path)) else list(source)
        parts = [
            (
                str(p),
                load_json(
                    p,
                    what="dataset",
                    error=CalibrationError,
                    limit_bytes=max_bytes,
                    default_limit_bytes=DATA_MAX_BYTES,
                ),
            )
            for p in paths
        ]
    records: list[dict[str, Any]] = []
    metas = []
    for origin, data in parts:
        if not isinstance(data, Mapping) or not isinstance(data.get("records"), list):
            raise CalibrationError(f"{origin}: expected a JSON object with a 'records' list (perfmodel.bench)")
        meta = data.get("meta", {})
        if not isinstance(meta, Mapping):
            raise CalibrationError(f"{origin}: 'meta' is a {type(meta).__name__}, expected an object")
        metas.append(dict(meta))
        for i, r in enumerate(data["records"]):
            if not isinstance(r, Mapping) or "op" not in r:
                raise CalibrationError(f"{origin}: records[{i}] has no 'op'")
            _check_record(r, f"{origin}: records[{i}]")
            records.append(dict(r))
    if not records:
        raise CalibrationError("the dataset has no records")
    return {"meta": metas[0] if len(metas) == 1 else {"parts": metas}, "records": records}


#: Fields of each op that the calibrator reads: "size" whole > 0, "time" > 0, "nonneg" >= 0, "format".
_FIT_FIELDS: dict[str, dict[str, str]] = {
    "gemm": {"M": "size", "K": "size", "N": "size", "dtype": "format", "time_s": "time"},
    "linear": {"M": "size", "K": "size", "N": "size"},
    "copy": {"bytes": "nonneg", "time_s": "time"},
    "cast": {"bytes": "nonneg", "time_s": "time"},
    "launch": {"time_s": "time"},
}


def _usable(record: Mapping[str, Any]) -> bool:
    """False for a failed configuration (a record with ``errors``): its times are null by design."""
    return not record.get("errors")


def _check_record(r: Mapping[str, Any], where: str) -> None:
    """Raise :class:`CalibrationError` naming ``where`` and the field if ``r`` cannot be fitted."""
    from .._files import short, short_repr

    op = r["op"]
    fields = _FIT_FIELDS.get(op) if isinstance(op, str) else None
    if fields is None or not _usable(r):
        return
    missing = [f for f in fields if f not in r]
    if missing:
        raise CalibrationError(
            f"{where} (op {op!r}) lacks {', '.join(map(repr, missing))}; a {op} record needs "
            f"{', '.join(fields)} (see perfmodel.bench.dataset.REQUIRED_FIELDS)"
        )
    for name, kind in fields.items():
        value = r[name]
        if kind == "format":
            if not isinstance(value, str):
                raise CalibrationError(f"{where}.{name} is {short_repr(value)}, expected a format name such as 'bf16'")
            try:
                fmt = get_format(value)
                if op == "gemm" and (r.get("scaling") is None or isinstance(r.get("scaling"), str)):
                    resolve_scaling(fmt, r.get("scaling"))
            except PerfModelError as exc:
                raise CalibrationError(f"{where}: {short(exc)}") from None
            continue
        number = type(value) in (int, float) and math.isfinite(value)
        if kind == "size":
            ok = number and value > 0 and value == int(value)
            want = "a whole number > 0"
        elif kind == "time":
            ok, want = number and value > 0, "a time in seconds > 0"
        else:
            ok, want = number and value >= 0, "a finite number >= 0"
        if not ok:
            raise CalibrationError(f"{where}.{name} is {short_repr(value)}, expected {want}")
    for name in ("recipe", "scaling", "dynamic", "method"):
        if r.get(name) is not None and not isinstance(r[name], str):
            raise CalibrationError(f"{where}.{name} is {short_repr(r[name])}, expected a string or null")
    kernels = r.get("kernels")
    if op == "linear" and kernels is not None:
        if not isinstance(kernels, list):
            raise CalibrationError(f"{where}.kernels is {short_repr(kernels)}, expected a list")
        for j, k in enumerate(kernels):
            ok = (
                isinstance(k, Mapping)
                and isinstance(k.get("name"), str)
                and type(k.get("time_s")) in (int, float)
                and math.isfinite(k["time_s"])
                and k["time_s"] >= 0
            )
            if not ok:
                raise CalibrationError(
                    f"{where}.kernels[{j}] is {short_repr(k)}, expected {{'name': str, 'time_s': seconds >= 0}}"
                )


def is_heldout(*key: Any, fraction: float = 0.3) -> bool:
    """Deterministic held-out split: hash of the shape (and any other key parts) -> [0, 1) < fraction."""
    digest = hashlib.sha256(repr(tuple(key)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def ape_stats(pred: Iterable[float], meas: Iterable[float]) -> dict[str, float]:
    """Absolute percentage errors ``|pred - meas| / meas``: count, median (MdAPE), p90, max, in %."""
    # arrays as they are (list() of one makes a Python float per element); other iterables through a list
    p, m = (np.asarray(x if isinstance(x, np.ndarray) else list(x), float) for x in (pred, meas))
    if p.size == 0:
        return {"n": 0}
    ape = np.abs(p - m) / m * 100
    return {
        "n": int(p.size),
        "mdape": float(np.median(ape)),
        "p90": float(np.percentile(ape, 90)),
        "max": float(ape.max()),
    }
