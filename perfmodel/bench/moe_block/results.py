"""Results: atomic JSON rewrite after every record; the budgeted item loop."""

from __future__ import annotations

import json
import math
import os
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .config import SCHEMA
from .plan import BlockItem

__all__ = [
    "Measure",
    "Recorder",
    "run_items",
]

# ---- results: atomic JSON rewrite after every record ------------------------------------------------------------


class Recorder:
    """A dataset file ``{"schema", "meta", "records", "status"}`` rewritten atomically (tmp + rename) on every
    :meth:`add`, so a phase killed at any point leaves valid JSON holding everything it finished."""

    def __init__(self, path: str | Path, meta: Mapping[str, Any], *, resume: bool = False) -> None:
        self.path = Path(path)
        self.meta = dict(meta)
        self.records: list[dict[str, Any]] = []
        self.status: dict[str, Any] = {"finished": False}
        if resume and self.path.exists():
            try:
                old = json.loads(self.path.read_text())
            except (OSError, ValueError):
                old = {}
            self.records = list(old.get("records", []))
            cur = (old.get("status") or {}).get("current")
            if cur and cur not in self.done_ids():  # the last process died inside this item (CUDA context, kill)
                self.records.append({"id": cur, "status": "error", "error_type": "ProcessDied",
                                     "error": "the process ended while measuring this item"})  # fmt: skip
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.flush()

    def done_ids(self) -> set[str]:
        return {r["id"] for r in self.records if "id" in r and r.get("status") in ("ok", "error", "skipped_memory")}

    def add(self, record: Mapping[str, Any]) -> None:
        self.records.append(dict(record))
        self.flush()

    def finish(self, **status: Any) -> None:
        self.status.update(status, finished=True)
        self.flush()

    def flush(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        data = {"schema": SCHEMA, "meta": self.meta, "status": self.status, "records": self.records}
        tmp.write_text(json.dumps(data, default=_json_default))
        os.replace(tmp, self.path)


def _json_default(o: Any) -> Any:
    if isinstance(o, float) and not math.isfinite(o):
        return None
    return str(o)


Measure = Callable[[BlockItem], list[dict[str, Any]]]


def run_items(
    items: Sequence[BlockItem],
    measure: Measure,
    *,
    budget_s: float,
    recorder: Recorder,
    estimate: Callable[[BlockItem], float],
    clock: Callable[[], float] = time.monotonic,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Measure ``items`` in order while ``elapsed + estimate(item) <= budget_s``; each failing item is recorded
    (``status="error"``, the exception's type, message, last traceback lines) and the loop goes on; items already in
    the recorder (``--resume``) are skipped; the rest are listed as ``skipped_budget`` in the final status."""
    t0 = clock()
    done = recorder.done_ids()
    skipped: list[str] = []
    n_ok = n_err = 0
    for it in items:
        if it.id in done:
            continue
        elapsed = clock() - t0
        est = estimate(it)
        if elapsed + est > budget_s:
            skipped.append(it.id)
            continue
        log(f"[{elapsed:6.1f} s] {it.id} (est {est:.1f} s)")
        recorder.status["current"] = it.id
        recorder.flush()
        try:
            recs = measure(it)
        except Exception as exc:
            n_err += 1
            recorder.status.pop("current", None)
            recorder.add(_error_record(it, exc))
            log(f"  error: {type(exc).__name__}: {str(exc)[:300]}")
            _after_error()
            continue
        for r in recs:
            recorder.records.append(dict(r))
        recorder.status.pop("current", None)
        recorder.flush()
        n_ok += 1
    status = {"ok_items": n_ok, "error_items": n_err, "skipped_budget": skipped, "elapsed_s": clock() - t0}
    recorder.finish(**status)
    return status


def _error_fields(exc: BaseException) -> dict[str, Any]:
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return {"status": "error", "error_type": type(exc).__name__, "error": str(exc)[:2000],
            "traceback_tail": "".join(tb[-3:])[-3000:]}  # fmt: skip


def _error_record(it: BlockItem, exc: BaseException) -> dict[str, Any]:
    return {"id": it.id, "model": it.model, "tokens": it.tokens, "routing": it.routing} | _error_fields(exc)


def _after_error() -> None:
    """Free cached GPU memory after a failure (an OOM leaves the allocator's cache full)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        try:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        except Exception:
            pass
