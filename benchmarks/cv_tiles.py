"""Cross-validate the tile model's learned-correction settings over folds of its own fit sessions.

Each fold holds a block of fresh-sweep sessions out of a fit of one kind's correction on all the other sessions of
:data:`benchmarks.harness.calibrate_tiles.CORRECTION_SESSIONS`,
then scores it on the held-out sessions' measurements of that
kind (MdAPE / p90 of predicted / measured − 1, %, over the folds pooled). Nothing here reads a session outside the
fit: it is how the boosting settings were chosen (the tree count of f3873d0: run with ``--without 2063-2070``, the
sessions that joined the fit in that version). A fallback kind (``bf16@fallback/rr`` …) reads its padded shapes'
times from its layout's main-kind correction, fitted on the same training sessions first (``--main``).

    python benchmarks/cv_tiles.py event bf16@rr '[{}, {"trees": 300}]' --without 2063-2070
    python benchmarks/cv_tiles.py kernel bf16@fallback/cr '[{"trees": 300}]' --main '{"trees": 300}'

Each setting is a JSON object of :func:`benchmarks.harness.calibrate_tiles.fit_boost`
keywords (``{}``: the shipped ones).
Needs the fit data (``benchmarks/data/h200_2026-12-01``); ~5–25 s per fold and setting on a 2-core machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import benchmarks.harness.calibrate_tiles as ct  # noqa: E402
from perfmodel.errors import CalibrationError  # noqa: E402
from perfmodel.models.registry import tile_model  # noqa: E402
from perfmodel.models.tiles import correction_features  # noqa: E402
from perfmodel.specs.gpu import get_gpu  # noqa: E402

#: the held-out blocks (fresh-sweep seeds of earlier versions, each block a few GPUs' sessions)
FOLDS: tuple[tuple[int, ...], ...] = (tuple(range(2038, 2046)), tuple(range(2046, 2054)), tuple(range(2054, 2062)))


def _seeds(text: str) -> set[int]:
    """``"2063-2070"`` or ``"2063,2065"`` -> the seeds."""
    out: set[int] = set()
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        if not (lo.isdigit() and (hi.isdigit() or not hi)):
            raise ValueError(f"--without: {part!r} is not a seed or a range of seeds (valid: 2063, 2063-2070, a,b)")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def cross_validate(
    timing: str, key: str, settings: list[dict], main: dict | None = None, without: set[int] = frozenset()
) -> list[tuple[float, float]]:
    """Per setting, (MdAPE, p90) % of ``key``'s ``timing`` correction over :data:`FOLDS`, pooled."""
    spec, field = get_gpu("H200"), "event_corrections" if timing == "event" else "corrections"
    model0 = dataclasses.replace(tile_model(), corrections={}, event_corrections={})
    dropped = {f"_fresh{s}" for s in without}
    sessions = {sfx: p for sfx, p in ct.CORRECTION_SESSIONS[timing].items() if sfx not in dropped}
    fallback = "@fallback/" in key
    fmt, scaling, layout = ct.kind_parts(key)
    out = []
    for cfg in settings:
        errs = []
        for fold in FOLDS:
            test_sfx = {f"_fresh{s}" for s in fold}
            train = [p for sfx, p in sessions.items() if sfx not in test_sfx]
            test = [p for sfx, p in sessions.items() if sfx in test_sfx]
            t0 = time.perf_counter()
            priced = model0
            if fallback:
                mains, _ = ct.fit_corrections(model0, train, timing, keys=[f"bf16@{layout}"], **(main or {}))
                priced = dataclasses.replace(model0, **{field: mains})
            trees, _ = ct.fit_corrections(priced, train, timing, keys=[key], **cfg)
            rows = ct.load_rows(test, in_all=False, each=True, single_row=True)[key]
            M, K, N, t = rows["M"], rows["K"], rows["N"], rows["t"]
            f = model0.formula_time_s(M, K, N, fmt=fmt, scaling=scaling, gpu=spec, layout=layout, timing=timing)
            padded = None
            if fallback:
                padded = priced.padded_time_s(M, K, N, fmt=fmt, gpu=spec, layout=layout, timing=timing)
            e = np.abs(f * np.exp(trees[key].predict(correction_features(M, K, N, f, spec.num_sms, padded))) / t - 1)
            errs.append(e)
            print(f"  {cfg} fold {fold[0]}-{fold[-1]}: {100 * np.median(e):.2f} / {100 * np.quantile(e, 0.9):.2f} "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)  # fmt: skip
        e = np.concatenate(errs)
        out.append((100 * float(np.median(e)), 100 * float(np.quantile(e, 0.9))))
        print(f"{timing} {key} {cfg}: MdAPE {out[-1][0]:.2f} %, p90 {out[-1][1]:.2f} %", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("timing", choices=("kernel", "event"))
    ap.add_argument("key", help='a correction key: "bf16@rr", "bf16@fallback/cr", "fp8_e4m3/tensorwise" …')
    ap.add_argument("settings", help="a JSON list of fit_boost keyword objects")
    ap.add_argument("--main", default="{}", help="fit_boost keywords of the main kind a fallback kind reads")
    ap.add_argument("--without", default="", help='fit sessions left out of every fold\'s training, "2063-2070"')
    args = ap.parse_args()
    try:
        settings, main_cfg = json.loads(args.settings), json.loads(args.main)
    except json.JSONDecodeError as e:
        ap.error(f"settings and --main must be JSON ({e})")
    try:
        without = _seeds(args.without)
    except ValueError as e:
        ap.error(str(e))
    if not (isinstance(settings, list) and all(isinstance(c, dict) for c in settings) and isinstance(main_cfg, dict)):
        ap.error("settings must be a JSON list of objects (e.g. '[{}, {\"trees\": 300}]'), --main one object")
    try:
        cross_validate(args.timing, args.key, settings, main_cfg, without)
    except (CalibrationError, TypeError) as e:  # an unknown kind; a fit_boost keyword it does not take
        ap.error(str(e))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
