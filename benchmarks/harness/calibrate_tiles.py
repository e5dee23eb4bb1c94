"""Fit the tile model (:mod:`perfmodel.models.tiles`, ``time_model="tiles"``) on the H200 layout sweep's kernel times.

``python -m benchmarks.harness.calibrate_tiles [--force] [-o perfmodel/calibrations/h200_tiles.json.gz]`` (from the
repository's root; this module moved out of the package when the tile model was frozen: the wheel does not ship it)
fits on the two
device sessions of the layout sweep with seed 0 (:data:`FIT_FILES`: 4725 GEMMs each — bf16 ``rr``/``rc``/``cr``
and fp8 e4m3 ``rc`` tensorwise and rowwise over 945 shapes — profiled kernel time with L2 flushed before every
call), on the geometric mean of the two sessions per GEMM; and, for ``timing="event"``, the same formula and
candidates again on the same two sessions' ``do_bench`` times (:data:`EVENT_FIT_FILES`, ``event_kinds``). The
sessions with other seeds are never read here: seed 2026 was looked at while the formula was developed, seed
2027 was measured after the kernel fit was committed and looked at before the event fit was added, seed 2028
after both (``python benchmarks/validate.py tiles`` scores them apart). Nothing in the package imports this module;
it needs scipy.

**The learned correction** (``corrections``, ``event_corrections``): per kind (bf16 layout, main or fallback
kernels; fp8 scaling) and per timing, 300 boosted regression trees of depth 5 (:func:`fit_boost`, settings
:data:`BOOST`) on :func:`perfmodel.models.tiles.correction_features` of the log of measured over formula time, fitted
on every layout-sweep session in :data:`CORRECTION_FILES` (seeds 0, 2026, 2027 to 2035 and 2038 to 2070, and three
fit sessions of random and odd shapes only, seeds 3001 to 3003), one row per measurement: a GEMM measured in several
sessions (the ``llm`` shapes are in all of them) gives one row each. Least absolute deviation boosting: each tree is
grown on the sign of the residual, its leaves set to the median residual of their rows (scaled by the learning
rate), so a few wild GEMMs do not steer it, and it fits the median measurement. One GEMM's times across sessions are
skewed: most sessions within ~2 % of its median, a few 10–20 % slower (``docs/validation.md``, "The tile model").
The geometric mean per GEMM that an earlier version fitted leans toward that slow tail: on the ``llm`` GEMMs of a
held-out session it predicted 1.6 % above their median over the fit sessions, and it scored 4.8 % and 4.5 %
kernel-time MdAPE on seeds 2035 and 2034 held out of the fit, against 4.2 % and 3.9 % one row per measurement, and
4.1 % and 3.8 % with depth 5 instead of 4 (depth 6: the same to 0.05, at twice the file size). It is a lookup fitted
on our own measurements, not a formula: the settings were chosen on seed 2028, one set per fallback kind on seeds
2029 and 2030 (when a first, joint version was scored on them), the fallback kernels' features (alignment to 2 and
4, 64x64 and 256x64 tile counts) by holding out seed 2029, then 2030, from a fit on the others (seed 2031 held out
of both); seed 2032 scored that version, seeds 2033 to 2035 were then measured as more fit data (without them, seed
2032 scored 4.8 % kernel-time MdAPE; with them 4.6 %, event time 3.2 % both ways), seed 2036 scored the version with
them, and seeds 2037 to 2043, measured after the version with one row per measurement was committed, scored it. Then
seed 3001 was measured as more fit data: 13 722 GEMMs of 2745 shapes of the random and odd families only (the
families of the misaligned shapes, and of the shapes no other session shares), with the boosting settings unchanged
(more or deeper trees moved seeds 2034 and 2035, held out of a fit with seed 3001, by 0.1–0.2 points either way, at
two to four times the file size); seeds 2044 and 2045, measured after it was committed, scored it. The one-row bf16
GEMMs (M = 1) whose leading dimensions are misaligned run cuBLAS's Hopper or gemv kernels, not its fallback: the
formula fit leaves them out, and the correction fits them in their layout's main kind, where the model prices them
(:func:`_kind_of`). They were in neither fit before, and seeds 2037–2045 measured the model off on them by 31–33 %
(``rr``/``rc``, 35 GEMMs each, kernel-time MdAPE) and 6.8 % (``cr``, 243 GEMMs: every one-row ``cr`` GEMM, M being
its leading dimension); fitted, 11–22 % and 3.0 %. Seeds 2046 to 2048, measured after that was committed, scored
that version. Then seeds 2038 to 2045 (fresh sessions of the versions before) and seed 3002 (9348 GEMMs of random
and odd shapes, measured as fit data) joined the fit, the settings unchanged, by a learning curve on seeds 2046 to
2048 (about half a point per doubling of the fit data); seeds 2049 to 2055, measured after it was committed, scored
that version. Then seeds 2046 to 2055 and seed 3003 (8859 GEMMs of random and odd shapes, measured with 2053 as fit
data) joined the fit, the settings unchanged (the same learning curve; on seeds 2053 to 2055 held out, the fit with
2049 to 2052 against the one without them: ``docs/validation.md``); seeds 2056 to 2061, measured after that was
committed (2907511), scored that version. Then seeds 2056 to 2062 joined the fit, and each fallback kind's
correction got two more features: the model's time of the GEMM's :func:`perfmodel.models.tiles.padded_shape` (its
layout's main kind, corrected) and the log of the formula's time over it. They were chosen over six folds of fit
sessions (seeds 2038 to 2052) held out in turn, then checked once on seeds 2056 to 2061 before those joined the fit
(bf16 event-time p90 ``rr`` 13.9 → 13.6 %, kernel-time MdAPE ``cr`` 4.35 → 4.29 %); seeds 2063 to 2070, measured
after that was committed (8c6a841), scored that version. Then seeds 2063 to 2070 joined the fit, and each kind
got 300 trees instead of 100, chosen over three folds of fit sessions (seeds 2038 to 2045, 2046 to 2053 and 2054 to
2061, each held out of a fit on the others, before 2063 to 2070 joined: bf16 event-time ``rr`` 2.53 / 11.30 →
2.40 / 10.83 %, kernel-time ``cr`` MdAPE 3.57 → 3.40 %; 600 trees, depth 6 or 7, a lower learning rate, more bins
or larger leaves no better); the sessions measured after that was committed (f3873d0) score the shipped version.
The boosting uses no BLAS: :func:`fit_corrections` on the
shipped formula's times gives the shipped trees on every build; after a formula refit on another BLAS build
(parameters ~1e-5 apart) a near-tied split can flip (``docs/validation.md``, "The tile model").

Per kind, :func:`scipy.optimize.least_squares` on ``log(predicted) − log(measured)`` (soft-L1 loss, scale 0.05,
bounds :data:`LOWER` / :data:`UPPER`) from :data:`START`, with the parameters of :data:`PINNED` held at their
values: those that sat on a bound or left the fit's error unchanged, pinned so that the fit is the same on every
BLAS build (a free one moved by 65 % between OpenBLAS kernels while the error stayed put).

The candidate tiles (:data:`CANDIDATES`) were chosen on the fit sessions only: greedy forward selection of 12 from
the research grid and every (tile, cluster, split-K) cuBLAS ran, then one swap pass, with 5-fold cross-validation
grouped by shape run around the whole selection to pick the count (``docs/validation.md``, "The tile model"). They
are basis functions of the soft minimum, not claims about the kernel cuBLAS picks: 22 of their 24 tile shapes are
ones cuBLAS ran. :data:`START` holds the selection's parameters (4 significant digits), from which this fit
reproduces the shipped file.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perfmodel._files import CALIBRATIONS
from perfmodel.calibrate import read_data_json
from perfmodel.counting import layout_lead_dims, misaligned
from perfmodel.errors import CalibrationError, choices_message
from perfmodel.formats import Format, get_format
from perfmodel.models.tiles import (
    CORRECTION_KEYS,
    FALLBACK_PARAM_NAMES,
    PARAM_NAMES,
    Tile,
    TileKind,
    TileModel,
    correction_features,
    fallback_mask,
)
from perfmodel.models.trees import BoostedTrees
from perfmodel.specs.gpu import get_gpu

__all__ = ["CANDIDATES", "EVENT_FIT_FILES", "FIT_FILES", "PINNED", "START", "fit", "kind_parts", "load_rows", "main"]

ROOT = Path(__file__).resolve().parents[2]  # the repository (benchmarks/harness/ is two folders down)
DATA = ROOT / "benchmarks" / "data" / "h200_2026-12-01"
FIT_FILES: tuple[Path, ...] = (
    DATA / "h200_gemm_layouts_kernels_2026-12-01.json.gz",
    DATA / "h200_gemm_layouts_kernels_repeat_2026-12-01.json.gz",
)
#: the same sessions' CUDA-event (do_bench) times, for the event fit
EVENT_FIT_FILES: tuple[Path, ...] = (
    DATA / "h200_gemm_layouts_time_2026-12-01.json.gz",
    DATA / "h200_gemm_layouts_time_repeat_2026-12-01.json.gz",
)
OUT = CALIBRATIONS / "h200_tiles.json.gz"
#: every session the learned correction is fitted on, per timing, one row per measurement: seed 0 twice, seed 2026
#: twice, seeds 2027 to 2031, seed 2032 twice — on two GPUs — and seeds 2033 to 2035, measured as fit data (2033's
#: session stopped at 2635 of its 4725 GEMMs); seed 3001's session of random and odd shapes only (13 722 GEMMs,
#: measured as fit data after seeds 2037 to 2043 had scored the version without it); seeds 2038 to 2045 (measured
#: as fresh sessions, held out until they had scored the versions before) with seed 3002's session of random and
#: odd shapes (9348 GEMMs of 1870 shapes, fit data); and seeds 2046 to 2055 (the fresh sessions that scored the
#: two versions before, 2055 partial) with seed 3003's session of random and odd shapes (8859 GEMMs, fit data);
#: seeds 2056 to 2062 (the fresh sessions that scored the version before; 2062 kernel time only); and seeds 2063 to
#: 2070 (the fresh sessions that scored the version before, 2070 partial).
#: Not in it: seeds 2036 and 2037 (the held-out sessions of the repeat and clock tables) and the sessions measured
#: after this version was committed (``python benchmarks/validate.py tiles``: the held-out score of record)
CORRECTION_SUFFIXES: tuple[str, ...] = (
    "",
    "_repeat",
    "_fresh",
    "_fresh_repeat",
    "_fresh2027",
    "_fresh2028",
    "_fresh2029",
    "_fresh2030",
    "_fresh2031",
    "_fresh2032",
    "_fresh2032_repeat",
    "_fresh2033",
    "_fresh2034",
    "_fresh2035",
    "_fit3001",
    *(f"_fresh{seed}" for seed in range(2038, 2046)),
    "_fit3002",
    *(f"_fresh{seed}" for seed in range(2046, 2056)),
    "_fit3003",
    *(f"_fresh{seed}" for seed in range(2056, 2063)),
    *(f"_fresh{seed}" for seed in range(2063, 2071)),
)
#: sessions in :data:`CORRECTION_SUFFIXES` with kernel times only (seed 2062: the device time ran out before its
#: event phase)
KERNEL_ONLY_SUFFIXES: tuple[str, ...] = ("_fresh2062",)
#: the days the layout sweep's sessions were measured on, in their file names (every session is in :data:`DATA`)
SWEEP_DATES: tuple[str, ...] = ("2026-12-01", "2026-12-02")


def sweep_path(kind: str, suffix: str, data: Path = DATA) -> Path:
    """The file of one layout-sweep session in ``data``: ``kind`` "kernels" (profiled) or "time" (do_bench),
    ``suffix`` the session's ("", "_repeat", "_fresh2063" …), measured on one of :data:`SWEEP_DATES`; the first
    day's name where none exists (so that reading it gives the missing file's named error)."""
    names = [data / f"h200_gemm_layouts_{kind}{suffix}_{day}.json.gz" for day in SWEEP_DATES]
    return next((p for p in names if p.exists()), names[0])


#: per timing, each session of :data:`CORRECTION_SUFFIXES` that has that timing -> its file, in that order
CORRECTION_SESSIONS: dict[str, dict[str, Path]] = {
    timing: {
        sfx: sweep_path(kind, sfx)
        for sfx in CORRECTION_SUFFIXES
        if timing == "kernel" or sfx not in KERNEL_ONLY_SUFFIXES
    }
    for timing, kind in (("kernel", "kernels"), ("event", "time"))
}
#: per timing, the files the learned correction is fitted on (:data:`CORRECTION_SESSIONS`' files)
CORRECTION_FILES: dict[str, tuple[Path, ...]] = {t: tuple(s.values()) for t, s in CORRECTION_SESSIONS.items()}
#: the boosting settings of the learned correction (module doc; chosen on the seed-2028 session, which the
#: shipped correction was then also fitted on, the depth on seeds 2034 and 2035 held out of the fit; the tree count
#: (300, was 100) over three folds of fit sessions (seeds 2038-2045, 2046-2053, 2054-2061 each held out of a fit on
#: the others): its held-out score is a session measured after it)
BOOST: dict[str, Any] = {"trees": 300, "depth": 5, "learning_rate": 0.15, "min_leaf": 20, "bins": 64, "l2": 1.0}
GPU = "H200"
SOFTMIN = 0.1  # temperature of the soft minimum, in log time (the research setting; not fitted)
TILE_K = {"bf16": 64, "fp8": 128, "fallback": 32}  # K step of the kernels, elements

#: kind -> candidate tiles (m, n, cluster_m, cluster_n, split_k), torch orientation (m along M)
CANDIDATES: dict[str, list[tuple[int, int, int, int, bool]]] = {
    "bf16@rr": [
        (128, 48, 1, 2, False), (72, 64, 1, 2, True), (96, 128, 1, 2, False), (128, 16, 2, 1, False),
        (128, 128, 2, 1, False), (56, 128, 1, 4, True), (16, 128, 1, 2, True), (128, 40, 4, 1, False),
        (128, 40, 2, 1, True), (128, 72, 2, 1, False), (128, 48, 4, 1, False), (64, 256, 1, 4, False),
    ],
    "bf16@rc": [
        (128, 48, 1, 2, False), (96, 64, 1, 2, True), (88, 128, 1, 2, False), (64, 56, 4, 1, False),
        (128, 16, 2, 1, True), (96, 192, 2, 1, False), (128, 32, 2, 1, False), (64, 128, 1, 2, True),
        (128, 48, 4, 1, False), (64, 256, 1, 4, False), (16, 128, 1, 2, True), (128, 64, 2, 1, False),
    ],
    "bf16@cr": [
        (96, 64, 2, 1, False), (32, 256, 1, 2, True), (128, 160, 1, 2, False), (32, 64, 1, 4, True),
        (448, 64, 2, 1, False), (104, 128, 1, 2, False), (128, 64, 4, 1, False), (104, 128, 1, 2, True),
        (128, 128, 2, 1, False), (32, 192, 1, 4, False), (128, 40, 4, 1, False), (128, 64, 1, 2, True),
    ],
    "fp8_e4m3/tensorwise": [
        (128, 48, 1, 2, False), (32, 64, 4, 1, True), (128, 128, 2, 1, False), (48, 64, 1, 4, False),
        (80, 256, 1, 2, False), (64, 16, 1, 4, True), (128, 32, 2, 1, False), (128, 80, 1, 2, False),
        (8, 128, 1, 4, True), (32, 128, 1, 2, False), (64, 24, 4, 1, False), (64, 128, 1, 2, True),
    ],
    # the only kernel cuBLAS ran for rowwise-scaled fp8 on this stack
    "fp8_e4m3/rowwise": [(128, 128, 1, 1, False)],
}  # fmt: skip
#: the fallback kernels (pre-Hopper CUTLASS): 8 tiles, each with and without split-K, no clusters
_FALLBACK_TILES = ((64, 64), (128, 64), (64, 128), (128, 128), (128, 256), (256, 128), (256, 64), (64, 256))
for _lay in ("rr", "rc", "cr"):
    CANDIDATES[f"bf16@fallback/{_lay}"] = [(m, n, 1, 1, s) for m, n in _FALLBACK_TILES for s in (False, True)]

# bounds of the fit, in PARAM_NAMES order (+ FALLBACK_PARAM_NAMES): rate_fraction at most the peak
LOWER = (0, 0.1, 0, 1e9, 1e12, 1e12, 1e9, 1, 1, 1, 0, 0, 1e11, 0, 0, 1e11, 64)
UPPER = (2e-5, 1.0, 1e-6, 1e13, 1e14, 8e12, 1e13, 30, 4, 3, 1e-5, 1e-4, 1e13, 5, 1e-5, 1e13, 16384)
FALLBACK_LOWER, FALLBACK_UPPER = (0.05, 0.01), (1.0, 1.0)


def _p(*values: float) -> dict[str, float]:
    names = PARAM_NAMES + (FALLBACK_PARAM_NAMES if len(values) > len(PARAM_NAMES) else ())
    return dict(zip(names, values, strict=True))


#: start values per kind (the candidate selection's parameters, 4 significant digits)
START: dict[str, dict[str, float]] = {
    "fp8_e4m3/rowwise": _p(3.71e-06, 1.0, 7.532e-16, 2.595e11, 1.957e13, 4.491e12, 1e13, 1.902, 1.769, 1.183,
                           1.485e-06, 3.311e-07, 2.517e12, 0.7884, 1.5e-06, 2e12, 1024.0),
    "fp8_e4m3/tensorwise": _p(3.08e-06, 1.0, 1.219e-15, 1.564e11, 1.13e13, 3.878e12, 8.734e10, 2.917, 1.201, 1.0,
                              1.787e-06, 7.614e-07, 3.529e12, 0.3767, 2.054e-06, 5.915e11, 1024.0),
    "bf16@rr": _p(2.556e-06, 0.8234, 3.162e-08, 1.682e11, 1.681e13, 3.315e12, 9.956e12, 6.087, 1.757, 1.0,
                  3.411e-07, 7.831e-07, 6.268e12, 0.07138, 3.152e-06, 1e13, 1024.0),
    "bf16@rc": _p(2.765e-06, 0.7539, 8.287e-10, 1.611e11, 1e14, 3.432e12, 6.691e12, 4.357, 1.247, 1.0,
                  2.189e-12, 6.876e-07, 5.725e12, 0.1532, 2.563e-06, 1.525e12, 1024.0),
    "bf16@cr": _p(2.507e-06, 1.0, 8.413e-18, 3.271e11, 9.475e12, 3.732e12, 1.163e11, 3.845, 1.223, 1.0,
                  9.218e-07, 9.938e-07, 6.442e12, 0.3585, 2.211e-06, 1.199e12, 1024.0),
    "bf16@fallback/rr": _p(3.366e-06, 0.8809, 1.648e-08, 1.911e12, 4.229e12, 3.37e12, 1e13, 1.0, 1.001, 1.002,
                           1.507e-06, 2.356e-06, 2.673e12, 0.06806, 9.993e-11, 9.993e12, 393.0, 0.9999, 0.01479),
    "bf16@fallback/rc": _p(4.531e-06, 1.0, 6.961e-15, 3.83e11, 5.221e12, 3.689e12, 1e13, 1.0, 1.0, 1.311,
                           2.264e-06, 5.103e-07, 1.833e12, 1.994e-26, 8.453e-16, 1e13, 958.5, 0.2692, 0.2433),
    "bf16@fallback/cr": _p(1.736e-06, 0.9999, 5.831e-17, 2.909e12, 4.526e12, 8e12, 1e13, 1.0, 1.0, 1.055,
                           2.435e-06, 3.743e-06, 3.124e12, 0.3448, 1.654e-06, 1e13, 190.1, 1.0, 0.01),
}  # fmt: skip
#: parameters held at their values (module doc)
PINNED: dict[str, dict[str, float]] = {
    "bf16@rr": {"split_k_min": 1024.0, "stride128": 1.0, "cta_hbm_bw": 1e13, "reduce_bw": 1e13},
    "bf16@rc": {
        "split_k_min": 1024.0, "stride128": 1.0, "multi_wave_s": 0.0, "k_step_s": 0.0, "cta_hbm_bw": 1e13,
        "l2_bw": 1e14,
    },
    "bf16@cr": {"split_k_min": 1024.0, "stride128": 1.0, "rate_fraction": 1.0, "k_step_s": 0.0},
    "fp8_e4m3/tensorwise": {"split_k_min": 1024.0, "stride128": 1.0, "rate_fraction": 1.0, "k_step_s": 0.0},
    "fp8_e4m3/rowwise": {
        "rate_fraction": 1.0, "k_step_s": 0.0, "cta_hbm_bw": 1e13, "reduce_latency_s": 1.5e-06, "reduce_bw": 2e12,
        "split_k_min": 1024.0,
    },
    "bf16@fallback/rr": {
        "p_norm": 1.0, "stride32": 1.0, "stride128": 1.0, "cta_hbm_bw": 1e13, "reduce_bw": 1e13,
        "reduce_latency_s": 0.0, "align1_rate": 1.0, "split_k_min": 384.0, "rate_fraction": 1.0, "align1_load": 0.01,
    },
    "bf16@fallback/rc": {
        "p_norm": 1.0, "stride32": 1.0, "cta_hbm_bw": 1e13, "reduce_bw": 1e13, "reduce_latency_s": 0.0,
        "partial_m": 0.0, "rate_fraction": 1.0, "split_k_min": 960.0, "k_step_s": 0.0,
    },
    "bf16@fallback/cr": {
        "p_norm": 1.0, "stride32": 1.0, "cta_hbm_bw": 1e13, "reduce_bw": 1e13, "hbm_bw": 8e12, "k_step_s": 0.0,
        "align1_rate": 1.0, "align1_load": 0.01, "split_k_min": 128.0,
    },
}  # fmt: skip


def _kind_of(record: Mapping[str, Any], *, single_row: bool = False) -> str:
    """The kind a GEMM record is fitted in ("" for none). A bf16 GEMM of one row (M = 1) whose leading dimensions
    are misaligned runs cuBLAS's Hopper or gemv kernels, not the fallback ones (:func:`fallback_mask`): it is
    left out of the formula fit (whose per-kind formula does not describe gemv kernels) and, with
    ``single_row``, fitted in its layout's main kind (the learned correction, which prices it there)."""
    return _kinds_of([record], single_row=single_row)[0]


def _kinds_of(records: Sequence[Mapping[str, Any]], *, single_row: bool = False) -> list[str]:
    """:func:`_kind_of` of each record, the bf16 ones' masks computed per layout as arrays."""
    out = [f"fp8_e4m3/{r['scaling']}" if r["dtype"] != "bf16" else "" for r in records]
    by_layout: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        if r["dtype"] == "bf16":
            by_layout[r["layout"]].append(i)
    for lay, idx in by_layout.items():
        M, K, N = (np.array([records[i][d] for i in idx], dtype=np.float64) for d in "MKN")
        fb = fallback_mask(M, K, N, lay)
        keep = np.ones(len(idx), dtype=bool) if single_row else ~misaligned(*layout_lead_dims(lay, M, K, N))
        for i, f, k in zip(idx, fb, keep, strict=True):
            out[i] = f"bf16@fallback/{lay}" if f else (f"bf16@{lay}" if k else "")
    return out


#: the fields of a GEMM record the fits read
_FIELDS = ("id", "M", "K", "N", "dtype", "scaling", "layout", "time_s")


def _file_key(p: str | Path) -> tuple[str, int, int]:
    """A file's cache key: its resolved path, modification time and size (a missing file: read_data_json's named
    error when it is read)."""
    path = Path(p)
    st = path.stat() if path.is_file() else None
    return str(path.resolve()), st.st_mtime_ns if st else 0, st.st_size if st else -1


def session_records(path: str | Path) -> tuple[Mapping[str, Any], ...]:
    """Every record of one sweep file (``perfmodel.bench/1`` JSON, optionally gzipped), decoded once per process
    while the file is unchanged: the fit and ``python benchmarks/validate.py tiles`` (and the tests, which run both)
    read the same sessions. The records are shared: do not change them."""
    return _file_records(*_file_key(path))


@functools.lru_cache(maxsize=256)  # every layout-sweep file of both timings (176 now)
def _file_records(path: str, _mtime_ns: int, _size: int) -> tuple[Mapping[str, Any], ...]:
    return tuple(read_data_json(path).get("records", []))


def _gemm_records(paths: Iterable[str | Path]) -> Iterable[Mapping[str, Any]]:
    """The timed GEMM records of the files in ``paths`` (each file read once per process while it is unchanged:
    the fit reads the same sessions for its formula, its corrections and its measured range)."""
    for p in paths:
        yield from _file_gemms(*_file_key(p))


@functools.lru_cache(maxsize=256)
def _file_gemms(path: str, _mtime_ns: int, _size: int) -> tuple[Mapping[str, Any], ...]:
    records = _file_records(path, _mtime_ns, _size)
    return tuple({k: r.get(k) for k in _FIELDS} for r in records if r.get("op") == "gemm" and r.get("time_s"))


def load_rows(
    paths: Sequence[str | Path] = FIT_FILES, *, in_all: bool = True, each: bool = False, single_row: bool = False
) -> dict[str, dict[str, np.ndarray]]:
    """Per kind: ``M``, ``K``, ``N`` and the measured seconds ``t`` of each GEMM ``id`` measured in all of the
    files (``in_all``, the formula fit), or in any (the learned correction): the geometric mean over the files,
    or with ``each`` one row per file that measured it (the learned correction: module doc); with ``single_row``
    (the learned correction) the one-row bf16 GEMMs with misaligned leading dimensions too (:func:`_kind_of`)."""
    by_id: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in _gemm_records(paths):
        by_id[r["id"]].append(r)
    rows: dict[str, list[tuple[float, float, float, float]]] = defaultdict(list)
    groups = [rs for rs in by_id.values() if not in_all or len(rs) == len(paths)]
    for rs, kind in zip(groups, _kinds_of([rs[0] for rs in groups], single_row=single_row), strict=True):
        r = rs[0]
        if not kind:
            continue
        if each:
            rows[kind] += [(r["M"], r["K"], r["N"], float(x["time_s"])) for x in rs]
        else:
            rows[kind].append((r["M"], r["K"], r["N"], float(np.exp(np.mean([np.log(x["time_s"]) for x in rs])))))
    if not rows:
        raise CalibrationError(f"no GEMM measured in {'all' if in_all else 'any'} of {', '.join(map(str, paths))}")
    out = {}
    for kind, vals in rows.items():
        a = np.array(sorted(vals), dtype=np.float64)
        out[kind] = {"M": a[:, 0], "K": a[:, 1], "N": a[:, 2], "t": a[:, 3]}
    return out


def measured_range(paths: Iterable[str | Path]) -> dict[str, tuple[int, int]]:
    """The smallest and largest M, K and N of the GEMMs measured in ``paths`` (the tile model's
    ``measured_range``: its answers outside it are extrapolations)."""
    lo: dict[str, int] = {}
    hi: dict[str, int] = {}
    for r in _gemm_records(dict.fromkeys(Path(x) for x in paths)):
        for d in "MKN":
            lo[d], hi[d] = min(lo.get(d, r[d]), r[d]), max(hi.get(d, r[d]), r[d])
    if not lo:
        raise CalibrationError(f"no GEMM measured in {', '.join(map(str, paths))}")
    return {d: (int(lo[d]), int(hi[d])) for d in "MKN"}


def _make(kind: str, params: Mapping[str, float]) -> TileKind:
    fallback = "@fallback/" in kind
    tk = TILE_K["fallback" if fallback else kind.split("@")[0].split("_")[0]]
    tiles = tuple(Tile(*t) for t in CANDIDATES[kind])
    return TileKind(
        tiles=tiles,
        tile_k=tk,
        softmin=None if fallback or len(tiles) == 1 else SOFTMIN,
        params=dict(params),
        element_bytes=1 if kind.startswith("fp8") else 2,
        fallback=fallback,
    )


def _layout(kind: str) -> str:
    return kind.rsplit("/", 1)[-1] if kind.startswith("bf16@fallback") else kind.split("@")[1] if "@" in kind else "rc"


def kind_parts(kind: str) -> tuple[Format, str | None, str]:
    """A kind's (or its correction's) format, fp8 scaling (``None`` for bf16) and layout: ``"bf16@rr"`` -> bf16,
    ``None``, ``"rr"``; ``"bf16@fallback/cr"`` -> bf16, ``None``, ``"cr"``; ``"fp8_e4m3/tensorwise"`` -> e4m3,
    ``"tensorwise"``, ``"rc"`` (fp8 ``_scaled_mm`` runs ``rc`` only). Any other kind gets a
    :class:`~perfmodel.errors.CalibrationError` naming the valid ones."""
    if kind not in CORRECTION_KEYS:
        raise CalibrationError(choices_message("kind", kind, CORRECTION_KEYS))
    bf16 = kind.startswith("bf16")
    return get_format("bf16" if bf16 else "fp8_e4m3"), None if bf16 else kind.split("/")[1], _layout(kind)


def _stats(pred: np.ndarray, meas: np.ndarray) -> dict[str, float]:
    ape = np.abs(pred / meas - 1) * 100
    return {"n": int(ape.size), "mdape": float(np.median(ape)), "p90": float(np.percentile(ape, 90))}


def fit_kind(kind: str, rows: Mapping[str, np.ndarray], *, max_nfev: int = 400) -> tuple[TileKind, dict[str, float]]:
    """One kind's fitted :class:`TileKind` and its fit statistics (module doc)."""
    from scipy.optimize import least_squares

    spec = get_gpu(GPU)
    fmt, _, lay = kind_parts(kind)
    peak, sms = spec.peak_flops_per_s(fmt), spec.num_sms
    names = PARAM_NAMES + (FALLBACK_PARAM_NAMES if "@fallback/" in kind else ())
    lo = np.array(LOWER + (FALLBACK_LOWER if len(names) > len(PARAM_NAMES) else ()), dtype=float)
    hi = np.array(UPPER + (FALLBACK_UPPER if len(names) > len(PARAM_NAMES) else ()), dtype=float)
    start = dict(START[kind]) | PINNED.get(kind, {})
    free = [n for n in names if n not in PINNED.get(kind, {})]
    idx = [names.index(n) for n in free]
    M, K, N, y = rows["M"], rows["K"], rows["N"], np.log(rows["t"])

    def params(q: np.ndarray) -> dict[str, float]:
        return start | {n: float(v) for n, v in zip(free, q, strict=True)}

    def residual(q: np.ndarray) -> np.ndarray:
        return np.log(_make(kind, params(q)).time_s(M, K, N, layout=lay, peak=peak, sms=sms)) - y

    x0 = np.clip([start[n] for n in free], lo[idx] * 1.0000001 + 1e-300, hi[idx] * 0.9999999)
    res = least_squares(
        residual, x0, bounds=(lo[idx], hi[idx]), loss="soft_l1", f_scale=0.05, x_scale="jac", max_nfev=max_nfev
    )
    k = _make(kind, params(res.x))
    return k, _stats(k.time_s(M, K, N, layout=lay, peak=peak, sms=sms), rows["t"])


def _fit_kinds(paths: Sequence[str | Path]) -> tuple[dict[str, TileKind], dict[str, dict[str, float]]]:
    rows = load_rows(paths)
    missing = [k for k in CANDIDATES if k not in rows]
    if missing:
        raise CalibrationError(f"the fit data has no GEMM of kind {', '.join(missing)}")
    kinds, residuals = {}, {}
    for kind in CANDIDATES:
        kinds[kind], residuals[kind] = fit_kind(kind, rows[kind])
    return kinds, residuals


def _names(paths: Sequence[str | Path]) -> str:
    rel = [Path(p).resolve() for p in paths]
    return " + ".join(str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p) for p in rel)


def fit_corrections(
    model: TileModel,
    paths: Sequence[str | Path],
    timing: str,
    *,
    keys: Iterable[str] | None = None,
    **boost: Any,
) -> tuple[dict[str, BoostedTrees], dict[str, dict[str, Any]]]:
    """The learned corrections of ``model``'s ``timing`` fit on ``paths`` (per key: boosted trees on
    :func:`perfmodel.models.tiles.correction_features` of log measured / formula time) and their fit statistics;
    with ``keys`` (one kind or several), those kinds' only, each fitted exactly as in the full fit. The kinds
    are independent but for one thing: a fallback kind (``"bf16@fallback/rr"`` …) also reads the time of its
    GEMMs' :func:`perfmodel.models.tiles.padded_shape`, which its layout's main kind's correction prices — fitted
    first in this call, else ``model``'s own (of this timing) where it has one, else fitted for it and not
    returned."""
    spec = get_gpu(GPU)
    all_rows = load_rows(paths, in_all=False, each=True, single_row=True)
    if keys is not None:
        keys = [keys] if isinstance(keys, str) else list(keys)
        unknown = sorted(set(keys) - set(all_rows))
        if unknown:
            raise CalibrationError(
                f"no GEMM of kind {', '.join(unknown)} in the files; kinds: {', '.join(sorted(all_rows))}"
            )
    else:
        keys = list(all_rows)
    field = "event_corrections" if timing == "event" and model.event_kinds else "corrections"
    out, stats = {}, {}

    def fit_key(key: str) -> BoostedTrees:
        rows = all_rows[key]
        fmt, scaling, layout = kind_parts(key)
        M, K, N, t = rows["M"], rows["K"], rows["N"], rows["t"]
        f = model.formula_time_s(M, K, N, fmt=fmt, scaling=scaling, gpu=spec, layout=layout, timing=timing)
        padded = None
        if "@fallback/" in key:
            main = f"bf16@{layout}"
            trees = out.get(main)
            trees = getattr(model, field).get(main) if trees is None else trees
            trees = fit_key(main) if trees is None else trees
            priced = dataclasses.replace(model, **{field: {main: trees}})
            padded = priced.padded_time_s(M, K, N, fmt=fmt, gpu=spec, layout=layout, timing=timing)
        X = correction_features(M, K, N, f, spec.num_sms, padded)
        trees = fit_boost(X, np.log(t / f), **boost)
        if key in keys:
            out[key] = trees
            stats[key] = {"formula": _stats(f, t), "corrected": _stats(f * np.exp(trees.predict(X)), t)}
        return trees

    for key in sorted(keys, key=lambda k: ("@fallback/" in k, k)):  # main kinds first: the fallback kinds read them
        fit_key(key)
    return dict(sorted(out.items())), stats


def fit(
    paths: Sequence[str | Path] = FIT_FILES,
    event_paths: Sequence[str | Path] | None = EVENT_FIT_FILES,
    correction_paths: Mapping[str, Sequence[str | Path]] | None = CORRECTION_FILES,
) -> TileModel:
    """The tile model fitted on the kernel times in ``paths`` (default: :data:`FIT_FILES`) and, unless
    ``event_paths`` is ``None``, on the CUDA-event times in ``event_paths`` (default: :data:`EVENT_FIT_FILES`);
    then, unless ``correction_paths`` is ``None``, the learned corrections of each timing on its files
    (default: :data:`CORRECTION_FILES`)."""
    kinds, residuals = _fit_kinds(paths)
    source = (
        f"python -m benchmarks.harness.calibrate_tiles on {_names(paths)} (H200, torch 2.11, cuBLAS kernel time, "
        "L2 flushed, 2026-12-01; geometric mean of the two sessions)"
    )
    res: dict[str, Any] = {k: {"train": v} for k, v in residuals.items()}
    event_kinds: dict[str, TileKind] = {}
    if event_paths is not None:
        event_kinds, event_res = _fit_kinds(event_paths)
        for k, v in event_res.items():
            res[k]["event_train"] = v
        source += f"; event fit on {_names(event_paths)} (triton.testing.do_bench, L2 flushed)"
    files = [*paths, *(event_paths or ()), *(f for fs in (correction_paths or {}).values() for f in fs)]
    rng = measured_range(files)
    model = TileModel(gpu=GPU, kinds=kinds, source=source, residuals=res, event_kinds=event_kinds, measured_range=rng)
    if correction_paths is None:
        return model
    corr: dict[str, dict[str, BoostedTrees]] = {}
    for timing, field in (("kernel", "corrections"), ("event", "event_corrections")):
        files = correction_paths.get(timing)
        if not files or (timing == "event" and not event_kinds):
            continue
        corr[field], stats = fit_corrections(model, files, timing)
        res[f"correction_{timing}"] = stats
        source += f"; learned {timing} correction on {len(files)} sessions ({', '.join(Path(p).name for p in files)})"
    return dataclasses.replace(model, source=source, residuals=res, **corr)


def _bin_edges(x: np.ndarray, bins: int) -> np.ndarray:
    """Split candidates of one feature: midpoints between its distinct values, thinned to at most ``bins − 1``
    by quantile (so a split never falls on a value)."""
    u = np.unique(x)
    mids = (u[:-1] + u[1:]) / 2
    if mids.size <= bins - 1:
        return mids
    pick = np.unique(np.round(np.linspace(0, mids.size - 1, bins - 1)).astype(np.int64))
    return mids[pick]


def fit_boost(
    X: np.ndarray,
    y: np.ndarray,
    *,
    trees: int = BOOST["trees"],
    depth: int = BOOST["depth"],
    learning_rate: float = BOOST["learning_rate"],
    min_leaf: int = BOOST["min_leaf"],
    bins: int = BOOST["bins"],
    l2: float = BOOST["l2"],
) -> BoostedTrees:
    """Least-absolute-deviation gradient boosting (module doc, "The learned correction"): each tree is grown level
    by level on the sign of the residual (split gain ``G_L²/(n_L+l2) + G_R²/(n_R+l2) − G²/(n+l2)``, at least
    ``min_leaf`` rows a side, thresholds at midpoints between a feature's values), then each leaf gets the
    median residual of its rows times ``learning_rate``. Deterministic: no sampling, ties go to the lowest
    feature and threshold."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    n, nf = X.shape
    edges = [_bin_edges(X[:, f], bins) for f in range(nf)]
    nb = max(len(e) for e in edges) + 1
    Xb = np.stack([np.searchsorted(edges[f], X[:, f], side="left") for f in range(nf)], axis=1)  # bin <= b: x <= e_b
    cell = np.arange(nf)[None, :] * nb + Xb  # (row, feature) -> its histogram cell within a node
    nodes = 2**depth - 1
    feature = np.zeros((trees, nodes), dtype=np.int64)
    threshold = np.full((trees, nodes), np.inf)
    value = np.zeros((trees, nodes + 1))
    base = float(np.median(y))
    F = np.full(n, base)
    for t in range(trees):
        r = y - F
        g = np.sign(r)
        local = np.zeros(n, dtype=np.int64)  # node index within the level
        G_up, C_up = np.zeros((1, nf, nb)), np.zeros((1, nf, nb), dtype=np.int64)  # the level above's (set at d = 0)
        for d in range(depth):
            width = 2**d
            # histograms of sign sums and counts per node, feature and bin: the root's from every row; below it, each
            # left child's from its rows and the right child's as its parent's minus the left's (exact: the signs
            # are -1, 0, 1, so every sum is an integer)
            left = (local & 1) == 0 if d else np.ones(n, dtype=bool)
            idx = ((local[left] >> (1 if d else 0))[:, None] * (nf * nb) + cell[left]).reshape(-1)
            size = max(width // 2, 1) * nf * nb
            GL0 = np.bincount(idx, weights=np.repeat(g[left], nf), minlength=size).reshape(-1, nf, nb)
            CL0 = np.bincount(idx, minlength=size).reshape(-1, nf, nb)
            if d:
                G, C = np.empty((width, nf, nb)), np.empty((width, nf, nb), dtype=np.int64)
                G[0::2], G[1::2] = GL0, G_up - GL0
                C[0::2], C[1::2] = CL0, C_up - CL0
            else:
                G, C = GL0, CL0
            G_up, C_up = G, C
            C = C.astype(np.float64)
            GL, CL = np.cumsum(G, axis=2), np.cumsum(C, axis=2)
            Gt, Ct = GL[:, :, -1:], CL[:, :, -1:]
            GR, CR = Gt - GL, Ct - CL
            gain = GL**2 / (CL + l2) + GR**2 / (CR + l2) - Gt**2 / (Ct + l2)
            gain[(CL < min_leaf) | (CR < min_leaf)] = -np.inf
            go = np.zeros(n, dtype=bool)
            for j in range(width):
                flat = int(np.argmax(gain[j]))
                f, b = divmod(flat, nb)
                node = width - 1 + j
                if not np.isfinite(gain[j, f, b]) or gain[j, f, b] <= 1e-12 or b >= len(edges[f]):
                    continue  # no split: every row goes left
                feature[t, node], threshold[t, node] = f, edges[f][b]
                rows = local == j
                go[rows] = Xb[rows, f] > b
            local = 2 * local + go
        for leaf in range(nodes + 1):
            rows = local == leaf
            if rows.any():
                value[t, leaf] = learning_rate * float(np.median(r[rows]))
        F = F + value[t, local]
    return BoostedTrees(base=base, feature=feature, threshold=threshold, value=value, n_features=nf)


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.harness.calibrate_tiles", description=__doc__.split("\n")[0]
    )
    ap.add_argument("data", nargs="*", type=Path, help="kernel-time files of the layout sweep (default: FIT_FILES)")
    ap.add_argument(
        "--event-data",
        nargs="*",
        type=Path,
        default=None,
        help="CUDA-event (do_bench) files of the same sessions for the event fit (default: EVENT_FIT_FILES; "
        "given with no file: no event fit)",
    )
    ap.add_argument("-o", "--out", type=Path, default=OUT, help="output JSON (default: the shipped file)")
    ap.add_argument("--force", action="store_true", help="replace the output file if it exists")
    args = ap.parse_args(list(argv) if argv is not None else None)
    event = EVENT_FIT_FILES if args.event_data is None else (args.event_data or None)
    model = fit(args.data or FIT_FILES, event)
    for kind, r in model.residuals.items():
        if kind.startswith("correction_"):
            for key, st in r.items():
                f, c = st["formula"], st["corrected"]
                print(
                    f"{key:22s} {kind[11:]:6s} {f['n']:5d} measurements  learned correction: MdAPE {f['mdape']:.2f} -> "
                    f"{c['mdape']:.2f} %  p90 {f['p90']:.2f} -> {c['p90']:.2f} %"
                )
            continue
        for fit_name, label in (("train", "kernel"), ("event_train", "event")):
            if fit_name in r:
                st = r[fit_name]
                print(f"{kind:22s} {label:6s} {st['n']:4d} GEMMs  fit MdAPE {st['mdape']:.2f} %  p90 {st['p90']:.2f} %")
    path = model.save(args.out, force=args.force)
    print(f"-> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
