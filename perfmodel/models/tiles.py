"""The tile model: H200 cuBLAS GEMM kernel time from a per-tile formula, minimised over candidate tiles.

``model="tiles"`` (:func:`perfmodel.gemm_time_s`, the CLI's ``--model tiles``) prices a GEMM
``[M, K] @ [K, N]`` the way a persistent Hopper kernel runs it: for each candidate tile of a short,
fitted list (:class:`TileKind`), the time of its waves of CTAs, then a soft minimum over the candidates
(an idealised cuBLAS heuristic: no kernel name is needed). It is fitted on the profiled kernel times of
the 2026-12-01 H200 layout sweep (``benchmarks/harness/calibrate_tiles.py``, L2 flushed before every call) and
describes the effects the default calibrated model (:mod:`perfmodel.models.calibrated`) leaves out:
wave quantization at cluster granularity, split-K, per-CTA load and L2 limits, partial M tiles, and
row strides that are 16-byte but not 32- or 128-byte aligned. Where it comes from and how it scored on
shapes measured after the fit: ``docs/validation.md`` ("The tile model").

Per candidate tile ``(tM, tN)`` with cluster ``(cM, cN)`` and optional split-K, for a GEMM in one format
and layout (``S`` SMs, ``eb`` bytes per operand element, ``tK`` the K step, ``peak`` the dense peak)::

    Tm, Tn   = ⌈M/tM⌉, ⌈N/tN⌉;  T = Tm·Tn                                   output tiles
    s        = max(1, min(⌊S/T⌋, ⌊K/split_k_min⌋)) with split-K, else 1     K slices
    Kq       = ⌈K/(s·tK)⌉·tK;   rows, cols = M/Tm, N/Tn                      per-CTA work
    C        = ⌈Tm/cM⌉·cM · ⌈Tn/cN⌉·cN · s                                   CTAs, whole clusters
    slots    = S (clusters of ≤ 2) or S − 4;  W = ⌈C/slots⌉;  r = C − (W−1)·slots
    f(n)     = ‖ compute, tma, l2(n), hbm(n) + out(n), cta_hbm ‖_p + tile_overhead      n CTAs at once
      compute  = Kq/tK · (2·tM·tN·tK / (rate_fraction·peak/S) + k_step)
      tma      = Kq·eb·(rows·iA + cols·iB) / cta_load_bw
      l2(n)    = n·Kq·eb·(rows·iA/cN + cols·iB/cM) / l2_bw                  multicast shares loads
      hbm(n)   = n·(M·K + N·K)·eb/(T·s) · (1 + partial_m·(1 − rows/tM)) / hbm_bw
      cta_hbm  = (M·K + N·K)·eb/(T·s) · (1 + partial_m·(1 − rows/tM)) / cta_hbm_bw
      out(n)   = n·rows·cols·ob / out_bw            (ob: 2 bytes, 4 for split-K partial sums)
    time     = latency + (W−1)·f(slots) + f(r) + multi_wave·[C > 2·slots]
               + [split-K] · (reduce_latency + (4·s·M·N + 2·M·N) / reduce_bw)

``iA``, ``iB``: the row stride of A, B in bytes (its layout's leading dimension × eb) not a multiple of
32 multiplies that operand's loads by ``stride32``, not of 128 by ``stride128`` too. The soft minimum
over candidate times ``t_i`` is ``exp(min ln t − τ·ln Σ exp(−(ln t_i − min ln t)/τ))`` with ``τ`` the
kind's ``softmin``; a kind without one (fp8 rowwise: one candidate; the fallback kernels) takes the
plain minimum. bf16 GEMMs whose leading dimensions are not multiples of 8 (K, N for ``rr``/``rc``;
M, N for ``cr``; and every K < 8), M > 1, run cuBLAS's pre-Hopper fallback kernels: their own kind per
layout (``bf16@fallback/rr`` …: CUTLASS-like tiles without clusters, ``tK`` 32, the rate and the per-CTA
load rate scaled by ``align1_rate`` and ``align1_load`` when the dimensions are only 1-aligned).

Scope, said rather than guessed: the H200 it was measured on only (another GPU — even another Hopper —
gets a named error: nothing here rescales), bf16 (fp16 borrows it) and fp8 e4m3 (e5m2 borrows it) with
tensorwise or rowwise scaling, bf16 output; numbers and numpy arrays only — the minimum over candidate
tiles has no compact closed form, so sympy input gets a named error (the default model stays symbolic).
Memory-bound kernels, launches and the event gap are the H200 calibration's (:meth:`TileModel.base`);
the in-step GEMM factors are 1 (the tile model is not fitted to GEMMs inside training steps).

**Two timings, two fits.** ``kinds`` are fitted on profiled kernel times (``timing="kernel"``);
``event_kinds``, the same formula and candidate tiles, on the same sweep's ``triton.testing.do_bench``
times of the same GEMMs (``timing="event"``: CUDA events around each call, a process no profiler has
attached to). A GEMM timed by events is not its kernel time plus a constant gap: back-to-back calls of one
shape for ~100 ms run at the clocks that sustained load leaves, and small calls overlap their launches.
Where a file has no ``event_kinds`` (files written before them), event timing is the kernel fit plus the
calibration's measured gap, as for the other models.

**A learned correction on top.** What the formula misses varies with the shape in ways no term of it describes
(which tile cuBLAS's heuristic takes, epilogue and split-K choices), so the shipped model multiplies the formula's
time by ``exp(c)``, ``c`` the sum of 300 boosted regression trees (:mod:`perfmodel.models.trees`) over
:func:`correction_features` — log sizes, residues modulo tile sizes, tile counts and wave fractions, alignment
flags and the formula's own log time; for the fallback kinds also the model's time of the nearest shape the Hopper
kernels run (:func:`padded_shape`) — one set per kind (bf16 layout, main or fallback kernels; fp8 scaling) and
per timing, fitted on the layout sweeps measured before it, one row per measurement, so that it predicts a GEMM's
median time (``benchmarks/harness/calibrate_tiles.py``; later sweeps' GEMMs of shapes in no fit are its held-out
score). It is a lookup
learned from our measurements, said as such: it describes the H200 and the shapes' range it was fitted on (M and K
1–65 536, N 256–28 672), and :meth:`TileModel.formula_time_s` gives the formula alone.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._backend import is_symbolic
from ..counting import alignment, layout_lead_dims, padded_shape
from ..errors import CalibrationError, PerfModelError, UnsupportedFormatError, choices_message
from ..formats import Format
from ..specs.gpu import GPUSpec, get_gpu
from .calibrated import ReferenceGPU, fallback_kernels
from .trees import BoostedTrees

__all__ = [
    "FP8_K_LATTICE",
    "FP8_K_STEP_OFFSET",
    "FP8_K_WITHIN_CLASS",
    "PARAM_NAMES",
    "SCHEMA",
    "Tile",
    "TileKind",
    "TileModel",
    "fallback_mask",
    "fp8_k_lattice",
    "load_tile_kinds",
    "load_tile_model",
    "padded_shape",
]

SCHEMA = "perfmodel.tiles/1"
#: The formula's parameters (module doc), in the order the fit uses them; units in :class:`TileKind`.
PARAM_NAMES: tuple[str, ...] = (
    "latency_s",
    "rate_fraction",
    "k_step_s",
    "cta_load_bw",
    "l2_bw",
    "hbm_bw",
    "cta_hbm_bw",
    "p_norm",
    "stride32",
    "stride128",
    "multi_wave_s",
    "tile_overhead_s",
    "out_bw",
    "partial_m",
    "reduce_latency_s",
    "reduce_bw",
    "split_k_min",
)
#: Extra parameters of the fallback kinds (pre-Hopper kernels; module doc).
FALLBACK_PARAM_NAMES: tuple[str, ...] = ("align1_rate", "align1_load")
#: SMs a cluster of more than 2 CTAs leaves idle (4 of the H200's 132: fitted as slots, not measured apart).
_CLUSTER_IDLE_SMS = 4
_KIND_OF_FORMAT = {"bf16": "bf16", "fp16": "bf16", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e4m3"}
#: the keys of a model's learned corrections (:func:`correction_key`): one per kind of the formula
CORRECTION_KEYS: tuple[str, ...] = (
    *(f"bf16@{lay}" for lay in ("rr", "rc", "cr")),
    *(f"bf16@fallback/{lay}" for lay in ("rr", "rc", "cr")),
    "fp8_e4m3/tensorwise",
    "fp8_e4m3/rowwise",
)


@dataclasses.dataclass(frozen=True)
class Tile:
    """One candidate: output tile ``m`` × ``n`` elements, cluster ``cluster_m`` × ``cluster_n`` CTAs, split-K or not."""

    m: int
    n: int
    cluster_m: int = 1
    cluster_n: int = 1
    split_k: bool = False

    def __post_init__(self) -> None:
        for name in ("m", "n", "cluster_m", "cluster_n"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= 1024:
                raise CalibrationError(f"Tile.{name} must be an int in 1..1024, got {v!r}")
        if not isinstance(self.split_k, bool):
            raise CalibrationError(f"Tile.split_k must be true or false, got {self.split_k!r}")

    def to_list(self) -> list[Any]:
        return [self.m, self.n, self.cluster_m, self.cluster_n, self.split_k]


@dataclasses.dataclass(frozen=True, kw_only=True)
class TileKind:
    """The fitted formula of one kind of GEMM (format, scaling, layout): candidate tiles and parameters.

    Attributes:
        tiles: the candidate tiles.
        tile_k: the K step of the kernels, elements.
        softmin: temperature of the soft minimum in log time (``None``: the plain minimum).
        params: :data:`PARAM_NAMES` (and :data:`FALLBACK_PARAM_NAMES` for fallback kinds) -> value. Units:
            seconds for ``*_s``; bytes/s for ``*_bw`` (``cta_*``: one CTA's rate; the others the whole GPU's);
            ``rate_fraction`` of the dense peak; ``p_norm``, ``stride*``, ``partial_m``, ``align1_*``
            dimensionless; ``split_k_min`` elements of K per split.
        element_bytes: bytes per operand element (2 for bf16, 1 for fp8).
        fallback: cuBLAS's pre-Hopper fallback kernels (two more parameters, :data:`FALLBACK_PARAM_NAMES`).
    """

    tiles: tuple[Tile, ...]
    tile_k: int
    softmin: float | None
    params: Mapping[str, float]
    element_bytes: int = 2
    fallback: bool = False

    def __post_init__(self) -> None:
        if not self.tiles:
            raise CalibrationError("TileKind.tiles must list at least one candidate tile")
        if isinstance(self.tile_k, bool) or not isinstance(self.tile_k, int) or not 0 < self.tile_k <= 1024:
            raise CalibrationError(f"TileKind.tile_k must be an int in 1..1024, got {self.tile_k!r}")
        if self.element_bytes not in (1, 2):
            raise CalibrationError(f"TileKind.element_bytes must be 1 or 2, got {self.element_bytes!r}")
        if self.softmin is not None and not (math.isfinite(self.softmin) and self.softmin > 0):
            raise CalibrationError(f"TileKind.softmin must be a positive number or null, got {self.softmin!r}")
        want = PARAM_NAMES + (FALLBACK_PARAM_NAMES if self.fallback else ())
        missing = [n for n in want if n not in self.params]
        extra = [n for n in self.params if n not in want]
        if missing or extra:
            raise CalibrationError(f"TileKind.params: missing {missing}, unknown {extra} (valid: {', '.join(want)})")
        for name in want:
            v = self.params[name]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise CalibrationError(f"TileKind.params[{name!r}] must be a finite number >= 0, got {v!r}")
        for name in ("rate_fraction", "cta_load_bw", "l2_bw", "hbm_bw", "cta_hbm_bw", "p_norm", "out_bw", "reduce_bw"):
            if not self.params[name] > 0:
                raise CalibrationError(f"TileKind.params[{name!r}] must be > 0, got {self.params[name]!r}")
        if self.params["rate_fraction"] > 1.0 + 1e-9:
            raise CalibrationError(f"TileKind rate_fraction {self.params['rate_fraction']!r} is above the peak")

    def time_s(self, M: np.ndarray, K: np.ndarray, N: np.ndarray, *, layout: str, peak: float, sms: int) -> np.ndarray:
        """Kernel seconds (float64 arrays in, out; shapes already checked)."""
        return _softmin(self._times(M, K, N, layout, peak, sms), self.softmin)

    def fastest(self, M: np.ndarray, K: np.ndarray, N: np.ndarray, *, layout: str, peak: float, sms: int):
        """The candidate the formula finds fastest per GEMM, and the K slices it runs: ``(index, slices)``, two
        integer arrays (float64 arrays in). The split-K choice of :func:`perfmodel.gemm_kernel` (a candidate
        with split-K at one slice does not split); the candidates' tile shapes are not cuBLAS's."""
        best = np.argmin(np.array(self._times(M, K, N, layout, peak, sms)), axis=0)
        slices = np.ones(np.shape(M))
        for i, t in enumerate(self.tiles):
            if t.split_k:
                slices = np.where(best == i, self._slices(t, M, K, N, sms), slices)
        return best, slices.astype(np.int64)

    def _times(self, M, K, N, layout: str, peak: float, sms: int) -> list[np.ndarray]:
        """Each candidate's seconds."""
        p = self.params
        eb = float(self.element_bytes)
        rate, load = self._rates(M, K, N, layout, peak)
        sa, sb = _strides(layout, M, K, N, eb)
        ia, ib = _inflation(sa, p), _inflation(sb, p)
        return [self._tile_time(t, M, K, N, eb, rate, load, ia, ib, sms) for t in self.tiles]

    def _slices(self, t: Tile, M, K, N, sms: int) -> np.ndarray:
        """The K slices of candidate ``t`` (module doc: ``s``): 1 without split-K."""
        if not t.split_k:
            return np.ones_like(M)
        T = np.ceil(M / t.m) * np.ceil(N / t.n)
        return np.maximum(1.0, np.minimum(np.floor(sms / np.maximum(T, 1.0)), np.floor(K / self.params["split_k_min"])))

    def _rates(self, M, K, N, layout: str, peak: float) -> tuple[Any, Any]:
        """The MMA rate and per-CTA load rate (the fallback kinds' scaled where the leading dimensions are
        1-aligned)."""
        p = self.params
        rate, load = peak * p["rate_fraction"], p["cta_load_bw"]
        if self.fallback:
            a, b = layout_lead_dims(layout, M, K, N)
            one = np.minimum(alignment(a), alignment(b)) == 1
            rate = rate * np.where(one, p["align1_rate"], 1.0)
            load = load * np.where(one, p["align1_load"], 1.0)
        return rate, load

    def _tile_time(self, t: Tile, M, K, N, eb, rate, load, ia, ib, sms) -> np.ndarray:
        p = self.params
        tk = self.tile_k
        Tm, Tn = np.ceil(M / t.m), np.ceil(N / t.n)
        T = Tm * Tn
        s = self._slices(t, M, K, N, sms)
        Kq = np.ceil(K / s / tk) * tk
        slots = sms if t.cluster_m * t.cluster_n <= 2 else sms - _CLUSTER_IDLE_SMS
        C = np.ceil(Tm / t.cluster_m) * t.cluster_m * np.ceil(Tn / t.cluster_n) * t.cluster_n * s
        W = np.ceil(C / slots)
        r = C - (W - 1) * slots
        rows, cols = M / Tm, N / Tn
        hbm_tile = (M * K + N * K) * eb / (T * s) * (1 + p["partial_m"] * (1 - rows / t.m))
        out_tile = (4.0 if t.split_k else 2.0) * rows * cols
        compute = Kq / tk * (2.0 * t.m * t.n * tk / (rate / sms) + p["k_step_s"])
        tma = Kq * eb * (rows * ia + cols * ib) / load
        cta_hbm = hbm_tile / p["cta_hbm_bw"]
        pw = p["p_norm"]

        def wave(n: Any) -> np.ndarray:
            l2 = n * Kq * eb * (rows * ia / t.cluster_n + cols * ib / t.cluster_m) / p["l2_bw"]
            mem = n * hbm_tile / p["hbm_bw"] + n * out_tile / p["out_bw"]
            terms = (compute, tma, l2, mem, cta_hbm)
            return sum(x**pw for x in terms) ** (1.0 / pw) + p["tile_overhead_s"]

        time = p["latency_s"] + (W - 1) * wave(slots) + wave(r) + p["multi_wave_s"] * (C > 2 * slots)
        if t.split_k:
            time = time + p["reduce_latency_s"] + (4.0 * s * M * N + 2.0 * M * N) / p["reduce_bw"]
        return time

    def to_dict(self) -> dict[str, Any]:
        return {
            "tiles": [t.to_list() for t in self.tiles],
            "tile_k": self.tile_k,
            "softmin": self.softmin,
            "element_bytes": self.element_bytes,
            "fallback": self.fallback,
            "params": {k: float(v) for k, v in self.params.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str) -> TileKind:
        try:
            tiles = tuple(Tile(int(a), int(b), int(c), int(d), bool(e)) for a, b, c, d, e in data["tiles"])
            return cls(
                tiles=tiles,
                tile_k=data["tile_k"],
                softmin=None if data.get("softmin") is None else float(data["softmin"]),
                params=dict(data["params"]),
                element_bytes=data.get("element_bytes", 2),
                fallback=bool(data.get("fallback", False)),
            )
        except CalibrationError as exc:
            raise CalibrationError(f"{where}: {exc}") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise CalibrationError(f"{where}: not a tile kind ({type(exc).__name__}: {exc})") from None


def _strides(layout: str, M, K, N, eb: float) -> tuple[Any, Any]:
    """Row strides of A and B in bytes: ``rr`` (K, N), ``rc`` (K, K), ``cr`` (M, N) elements."""
    if layout == "rr":
        return K * eb, N * eb
    if layout == "rc":
        return K * eb, K * eb
    return M * eb, N * eb


def _inflation(stride: np.ndarray, p: Mapping[str, float]) -> np.ndarray:
    return np.where(stride % 32 != 0, p["stride32"], 1.0) * np.where(stride % 128 != 0, p["stride128"], 1.0)


def _softmin(times: Sequence[np.ndarray], tau: float | None) -> np.ndarray:
    logs = np.log(np.array(times))
    low = logs.min(axis=0)
    if tau is None:
        return np.exp(low)
    return np.exp(low - tau * np.log(np.exp(-(logs - low) / tau).sum(axis=0)))


#: the sizes :attr:`TileModel.measured_range` records
_RANGE_DIMS = ("M", "K", "N")
#: tiles whose counts and wave fractions the correction's features hold (the shapes cuBLAS ran most; 64x64 and
#: 256x64 for its CUTLASS fallback kernels)
_FEATURE_TILES = ((128, 128), (128, 256), (256, 128), (64, 128), (64, 64), (256, 64))
#: alignments the correction's features test each dimension against (2 and 4: which CUTLASS fallback kernel a
#: misaligned bf16 GEMM gets, sm75 ``align1`` or sm80 ``align2``)
_FEATURE_ALIGNS = (2, 4, 8, 16, 32, 64, 128)
#: number of features :func:`correction_features` returns
N_CORRECTION_FEATURES = 3 + 1 + 7 + 3 * len(_FEATURE_TILES) + 1 + 3 * len(_FEATURE_ALIGNS)
#: number of features a fallback kind's correction reads where it was fitted with the padded shape's time (two
#: more: :func:`correction_features` with ``padded_t``); older files' fallback corrections read
#: :data:`N_CORRECTION_FEATURES`
N_FALLBACK_FEATURES = N_CORRECTION_FEATURES + 2


def correction_features(
    M: np.ndarray, K: np.ndarray, N: np.ndarray, t: np.ndarray, sms: int, padded_t: np.ndarray | None = None
) -> np.ndarray:
    """The rows the learned correction reads (``(n, N_CORRECTION_FEATURES)``): log2 of M, K, N; the formula's
    own log time, rounded to 1e-3 (so that BLAS noise in it seldom moves a split); M and N modulo 64, 128,
    256 and K modulo 64; per tile of :data:`_FEATURE_TILES` the log2 tile count, its fractional and whole
    waves on ``sms`` SMs; log2 of the arithmetic intensity M·N·K / (M·K + K·N + M·N); and whether each
    dimension is a multiple of 2, 4, 8, 16, 32, 64, 128. With ``padded_t`` (a fallback kind's GEMMs: the
    model's seconds for their :func:`padded_shape`), two more columns (``N_FALLBACK_FEATURES`` in all): its log
    and the log of ``t / padded_t``, rounded to 1e-3 — how the fallback kernel's formula compares with what
    the Hopper kernels take for nearly the same work."""
    M, K, N = (np.asarray(x, dtype=np.float64) for x in (M, K, N))
    cols = [np.log2(M), np.log2(K), np.log2(N), np.round(np.log(t), 3)]
    for a in (64, 128, 256):
        cols += [M % a, N % a]
    cols.append(K % 64)
    for tm, tn in _FEATURE_TILES:
        tiles = np.ceil(M / tm) * np.ceil(N / tn)
        waves = tiles / sms
        cols += [np.log2(tiles), waves - np.floor(waves), np.ceil(waves)]
    cols.append(np.log2(M * N * K / (M * K + K * N + M * N)))
    for d in (M, K, N):
        cols += [(d % a == 0).astype(np.float64) for a in _FEATURE_ALIGNS]
    if padded_t is not None:
        padded_t = np.asarray(padded_t, dtype=np.float64)
        cols += [np.round(np.log(padded_t), 3), np.round(np.log(t / padded_t), 3)]
    return np.stack(cols, axis=1)


def correction_key(kind_key: str, corrections: Mapping[str, Any] | None = None) -> str:
    """The correction a kind's GEMMs get: the kind's own (``"bf16@fallback/cr"`` …); in ``corrections`` without
    one for a fallback kind (files written before they were split), its layout's (``"bf16@cr"``)."""
    if corrections is not None and kind_key not in corrections and "@fallback/" in kind_key:
        return "bf16@" + kind_key.rsplit("/", 1)[1]
    return kind_key


def _kind_rows(
    key: str, M: np.ndarray, K: np.ndarray, N: np.ndarray, layout: str, lead_dims: tuple[Any, Any] | None = None
) -> list[tuple[str, np.ndarray]]:
    """``(kind key, row mask)`` for each kind that prices some of these GEMMs (1-d float arrays) of ``key``: a bf16
    key's GEMMs split between its main kind and its layout's fallback kind (:func:`fallback_mask`, on ``lead_dims``
    where given), any other key's all in that kind."""
    if not key.startswith("bf16"):
        return [(key, np.ones(M.shape, dtype=bool))]
    dims = None if lead_dims is None else tuple(np.broadcast_to(np.asarray(d, float), M.shape) for d in lead_dims)
    fb = fallback_mask(M, K, N, layout, dims)
    return [(k, rows) for k, rows in ((key, ~fb), (f"bf16@fallback/{layout}", fb)) if rows.any()]


def fallback_mask(M: Any, K: Any, N: Any, layout: str, lead_dims: tuple[Any, Any] | None = None) -> np.ndarray:
    """Which bf16 GEMMs run cuBLAS's pre-Hopper fallback kernels: a leading dimension (``lead_dims``, else
    the layout's: K, N for ``rr``/``rc``, M, N for ``cr``) not a multiple of 8 with M > 1, or K < 8."""
    a, b = lead_dims if lead_dims is not None else layout_lead_dims(layout, M, K, N)
    a, b, M, K = (np.asarray(x, dtype=np.float64) for x in (a, b, M, K))
    return fallback_kernels(M, K, a, b)


#: The fp8 K-class rule (:func:`fp8_k_lattice`): the K spacing of the lattice fp8 GEMMs are priced on, elements (the
#: formula's row-stride classes, 32 and 128 bytes of fp8, and the correction's K residues and alignment flags up to
#: 128 all repeat with it).
FP8_K_LATTICE = 128
#: The one class of K with a measured step between aligned fp8 neighbours (``benchmarks/data/h200_2026-12-03``,
#: ``fp8_neighbours_time.json.gz``: ``torch._scaled_mm`` on the H200, M = N = 8192, K = 4032…4128 by 16): K = 16
#: (mod 32), fp8 rows of 16 but not 32 bytes — rowwise 1.27–1.34x slower than its K = 0 (mod 32) neighbours,
#: tensorwise 1.04–1.13x; K = 32, 64, 96 (mod 128) ran within 4 % of K = 4096, and M or N by 16 within 5 %. The
#: held-out layout sweeps agree (2829 tensorwise GEMMs of that class ran a median 10 % slower than the K = 0 mod 128
#: lattice predicts). Such GEMMs are priced on a lattice of their own class, offset by this many elements.
FP8_K_STEP_OFFSET = 16
#: How far an fp8 time may stray from its class's interpolation (a fraction): the largest gap the neighbour
#: measurement shows within one class (K = 4032, 4064, 4128 against K = 4096, rowwise and tensorwise: within 4 %).
#: The model's own K structure is kept up to it, so neighbours within a class stay within ~1.04/0.96 of each other.
FP8_K_WITHIN_CLASS = 0.04


def fp8_k_lattice(K: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fp8 K-class rule: the two K an fp8 GEMM's time is interpolated between, and the weight of the upper one.

    The tile formula (its ``stride32`` and ``stride128`` load factors) and its learned correction (K residues and
    alignment flags) step sharply between aligned fp8 neighbours in K — 1.15x between K = 4096 and 4128, where the
    H200 measured 1.04x (:data:`FP8_K_STEP_OFFSET`). So an fp8 GEMM is priced at the multiples of
    :data:`FP8_K_LATTICE` around its K and interpolated linearly; a K = 16 (mod 32) GEMM, the class with a measured
    step, at the points 16 (mod 128) around it. The model's own time at K is kept where it lies within
    :data:`FP8_K_WITHIN_CLASS` of that interpolation, and clipped to it elsewhere. Exact on the lattice; a K under
    one spacing (above the offset), or on the lattice, is taken as it is.

    Args:
        K: 1-d float array, elements.

    Returns:
        ``(lo, hi, w)``: float arrays of K's shape; the time is ``(1 − w)·t(lo) + w·t(hi)`` (``w = 0``: ``lo = K``).
    """
    step = float(FP8_K_LATTICE)
    off = np.where(K % 32 == FP8_K_STEP_OFFSET, float(FP8_K_STEP_OFFSET), 0.0)
    lo = np.floor((K - off) / step) * step + off
    snap = (K - off >= step) & (lo != K)
    lo = np.where(snap, lo, K)
    return lo, np.where(snap, lo + step, K), np.where(snap, (K - lo) / step, 0.0)


@dataclasses.dataclass(frozen=True, kw_only=True)
class TileModel:
    """A :class:`perfmodel.models.base.TimeModel` whose GEMMs follow the tile formula (module doc).

    Attributes:
        gpu: the GPU it was fitted on (the only one it prices).
        kinds: ``"bf16@rr"``, ``"bf16@rc"``, ``"bf16@cr"``, ``"bf16@fallback/rr"`` (… ``/rc``, ``/cr``),
            ``"fp8_e4m3/tensorwise"``, ``"fp8_e4m3/rowwise"`` -> :class:`TileKind`, fitted on kernel times.
        source: what it was fitted on (files, GPU, date, versions).
        residuals: the fit's error statistics per kind (``train``: kernel fit, ``event_train``: event fit).
        base: the time model that prices everything but GEMMs (memory kernels, launches, the event gap).
        event_kinds: the same kinds fitted on CUDA-event (``do_bench``) times (module doc); empty: event
            timing is the kernel fit plus the base's measured gap.
        corrections, event_corrections: per :func:`correction_key` (``"bf16@rr"``, ``"bf16@fallback/rr"`` …), boosted
            trees (:class:`~perfmodel.models.trees.BoostedTrees`) over :func:`correction_features` whose sum is the
            log of
            measured over formula time, fitted on the measured sessions; the time is the formula's times
            ``exp(correction)``. Empty: the formula alone.
        measured_range: ``{"M": (lo, hi), "K": (lo, hi), "N": (lo, hi)}``, the GEMM sizes of the sessions it
            was fitted on; an answer outside it is an extrapolation, and its error bar says so
            (:meth:`perfmodel.models.base.Provenance.outside_measured`). Empty: not recorded (older files).
    """

    gpu: str
    kinds: Mapping[str, TileKind]
    source: str
    residuals: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    base: Any = None
    name: str = "tiles"
    event_kinds: Mapping[str, TileKind] = dataclasses.field(default_factory=dict)
    corrections: Mapping[str, BoostedTrees] = dataclasses.field(default_factory=dict)
    event_corrections: Mapping[str, BoostedTrees] = dataclasses.field(default_factory=dict)
    measured_range: Mapping[str, tuple[int, int]] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        rng = self.measured_range
        if rng:
            ok = isinstance(rng, Mapping) and set(rng) == set(_RANGE_DIMS)
            for dim in _RANGE_DIMS if ok else ():
                v = rng[dim]
                ok = ok and isinstance(v, (tuple, list)) and len(v) == 2
                ok = ok and all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in v) and v[0] <= v[1]
            if not ok:
                raise CalibrationError(
                    "TileModel.measured_range must map M, K and N each to (lo, hi), integers 1 <= lo <= hi; "
                    f"got {rng!r}"
                )
            object.__setattr__(self, "measured_range", {d: (int(rng[d][0]), int(rng[d][1])) for d in _RANGE_DIMS})

    def kind_key(self, fmt: Format, scaling: str | None, layout: str) -> str:
        family = _KIND_OF_FORMAT.get(fmt.name)
        if family is None:
            raise UnsupportedFormatError(
                f"the tile model prices bf16, fp16, fp8_e4m3 and fp8_e5m2 GEMMs, not {fmt.name}; use the default "
                "model (model=None or 'calibrated') for it"
            )
        if family == "bf16":
            return f"bf16@{layout}"
        if scaling not in ("tensorwise", "rowwise"):
            raise UnsupportedFormatError(
                f"the tile model prices fp8 GEMMs with tensorwise or rowwise scaling, not {scaling!r} "
                "(valid: tensorwise, rowwise); use the default model for it"
            )
        return f"fp8_e4m3/{scaling}"

    def check_gpu(self, gpu: GPUSpec) -> None:
        """A named error unless ``gpu`` is the spec table's entry for the GPU this model was measured on (same
        name and the same SMs, clock, bandwidth, peaks and power): nothing in the model rescales."""
        if gpu.name != self.gpu:
            raise PerfModelError(
                f"the tile model was measured on the {self.gpu} only and does not rescale to {gpu.name}; use the "
                "default model there (model=None), which transfers within an architecture"
            )
        table = get_gpu(self.gpu)
        if gpu is table:  # the spec table's own entry (the common case: no comparison needed)
            return
        ref = ReferenceGPU.from_spec(table)
        if not ref.matches(gpu):
            mine = ReferenceGPU.from_spec(gpu).to_dict()
            differ = sorted(k for k, v in ref.to_dict().items() if mine.get(k) != v)
            raise PerfModelError(
                f"this {gpu.name} spec differs from the spec table's {self.gpu} in {', '.join(differ)}; the tile "
                "model was measured on the table's GPU and does not rescale (use the default model, model=None, "
                "which transfers to a modified spec and says so)"
            )

    def _check_out(self, fmt: Format, out_fmt: Format | None) -> None:
        if out_fmt is not None and out_fmt.name not in ("bf16", "fp16"):
            raise UnsupportedFormatError(
                f"the tile model was measured with bf16 output only, not {out_fmt.name} (valid out_dtype: bf16, "
                "or fp16 for fp16 inputs); use the default model (model=None) for other outputs"
            )

    def gemm_time_s(self, M, K, N, *, fmt, scaling, out_fmt, gpu, lead_dims=None, layout="rc"):
        """Kernel seconds of ``[M, K] @ [K, N]`` (the kernel-time fit, ``kinds``)."""
        self._check_out(fmt, out_fmt)
        kinds, corrections = self._fit("kernel")
        return self._served(kinds, M, K, N, fmt=fmt, scaling=scaling, gpu=gpu, lead_dims=lead_dims, layout=layout,
                            corrections=corrections)  # fmt: skip

    def event_gemm_time_s(self, M, K, N, *, fmt, scaling, out_fmt, gpu, lead_dims=None, layout="rc"):
        """Seconds a CUDA-event (``do_bench``) timing of one call shows, from the event fit (``event_kinds``);
        ``None`` where this model has none (then :func:`perfmodel.gemm_time_s` adds the measured gap to the
        kernel time)."""
        if not self.event_kinds:
            return None
        self._check_out(fmt, out_fmt)
        kinds, corrections = self._fit("event")
        return self._served(kinds, M, K, N, fmt=fmt, scaling=scaling, gpu=gpu, lead_dims=lead_dims, layout=layout,
                            corrections=corrections)  # fmt: skip

    def formula_time_s(self, M, K, N, *, fmt, scaling, gpu, layout="rc", timing="kernel", lead_dims=None):
        """The tile formula's seconds without the learned correction (what the correction is fitted against)."""
        kinds, _ = self._fit(timing)
        return self._price(kinds, M, K, N, fmt=fmt, scaling=scaling, gpu=gpu, lead_dims=lead_dims, layout=layout)

    def split_k(self, M, K, N, *, fmt, scaling, gpu, layout="rc") -> np.ndarray:
        """Whether the kernel fit's fastest candidate splits K (more than one slice), per GEMM (a bool array): the
        split-K choice :func:`perfmodel.gemm_kernel` reports. Numbers or arrays; the same GPU check as the times."""
        self.check_gpu(gpu)
        key = self.kind_key(fmt, scaling, layout)
        M, K, N = (np.atleast_1d(np.asarray(x, dtype=np.float64)) for x in np.broadcast_arrays(M, K, N))
        out = np.zeros(M.shape, dtype=bool)
        lay = layout if key.startswith("bf16") else "rc"
        peak = gpu.peak_flops_per_s(fmt)
        for kind_key, rows in _kind_rows(key, M, K, N, layout):
            _, slices = self.kinds[kind_key].fastest(M[rows], K[rows], N[rows], layout=lay, peak=peak,
                                                     sms=gpu.num_sms)  # fmt: skip
            out[rows] = slices > 1
        return out

    def _fit(self, timing: str) -> tuple[Mapping[str, TileKind], Mapping[str, BoostedTrees]]:
        """The formula kinds and learned corrections of ``timing`` (the kernel fit's where no event fit exists)."""
        if timing == "event" and self.event_kinds:
            return self.event_kinds, self.event_corrections
        return self.kinds, self.corrections

    def _served(self, kinds, M, K, N, *, fmt, scaling, gpu, lead_dims, layout, corrections):
        """What :meth:`gemm_time_s` and :meth:`event_gemm_time_s` give: :meth:`_price`, with the fp8 K-class rule
        (:func:`fp8_k_lattice`) for fp8 kinds: the model's time at K, kept within :data:`FP8_K_WITHIN_CLASS` of its
        linear interpolation between the two K of the GEMM's measured class around it."""
        key = self.kind_key(fmt, scaling, layout)
        if key.startswith("bf16") or any(is_symbolic(x) for x in (M, K, N)):
            return self._price(kinds, M, K, N, fmt=fmt, scaling=scaling, gpu=gpu, lead_dims=lead_dims, layout=layout,
                               corrections=corrections)  # fmt: skip
        scalar = all(np.ndim(x) == 0 for x in (M, K, N))
        M, K, N = (np.atleast_1d(x) for x in np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (M, K, N))))
        lo, hi, w = fp8_k_lattice(K)
        snap = w > 0
        t = np.asarray(self._price(kinds, M, lo, N, fmt=fmt, scaling=scaling, gpu=gpu, lead_dims=None, layout=layout,
                                   corrections=corrections), dtype=np.float64).reshape(M.shape)  # fmt: skip
        if snap.any():
            m, k, n = M[snap], K[snap], N[snap]
            t_hi, own = (
                np.asarray(self._price(kinds, m, x, n, fmt=fmt, scaling=scaling, gpu=gpu, lead_dims=None,
                                       layout=layout, corrections=corrections), dtype=np.float64)
                for x in (hi[snap], k)
            )  # fmt: skip
            smooth = (1 - w[snap]) * t[snap] + w[snap] * t_hi
            t[snap] = np.clip(own, smooth * (1 - FP8_K_WITHIN_CLASS), smooth * (1 + FP8_K_WITHIN_CLASS))
        return float(t.reshape(-1)[0]) if scalar else t

    def _price(self, kinds, M, K, N, *, fmt, scaling, gpu, lead_dims, layout, corrections=None):
        if any(is_symbolic(x) for x in (M, K, N)) or (lead_dims is not None and any(map(is_symbolic, lead_dims))):
            raise PerfModelError(
                "the tile model is numeric only: its minimum over candidate tiles has no compact closed form; for "
                "symbols use the default model (model=None or 'calibrated'), whose formula is symbolic"
            )
        self.check_gpu(gpu)
        key = self.kind_key(fmt, scaling, layout)
        scalar = all(np.ndim(x) == 0 for x in (M, K, N))
        M, K, N = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (M, K, N)))
        M, K, N = (np.atleast_1d(x) for x in (M, K, N))
        peak = gpu.peak_flops_per_s(fmt)
        out = np.empty(M.shape)
        lay = layout if key.startswith("bf16") else "rc"
        for kind_key, rows in _kind_rows(key, M, K, N, layout, lead_dims):
            m, k, n = M[rows], K[rows], N[rows]
            t = kinds[kind_key].time_s(m, k, n, layout=lay, peak=peak, sms=gpu.num_sms)
            trees = corrections.get(correction_key(kind_key, corrections)) if corrections else None
            if trees is not None:
                padded = None
                if trees.n_features == N_FALLBACK_FEATURES:  # a fallback kind's: the padded shape's time
                    padded = self._price(kinds, *padded_shape(m, k, n, layout), fmt=fmt, scaling=scaling, gpu=gpu,
                                         lead_dims=None, layout=layout, corrections=corrections)  # fmt: skip
                t = t * np.exp(trees.predict(correction_features(m, k, n, t, gpu.num_sms, padded)))
            out[rows] = t
        return float(out.reshape(-1)[0]) if scalar else out

    def padded_time_s(self, M, K, N, *, fmt, gpu, layout="rc", timing="kernel") -> np.ndarray:
        """Seconds (of ``timing``, corrected) of bf16 GEMMs' :func:`padded_shape`: what a fallback kind's learned
        correction reads (1-d float arrays in and out)."""
        kinds, corrections = self._fit(timing)
        Mp, Kp, Np = padded_shape(M, K, N, layout)
        return np.atleast_1d(self._price(kinds, Mp, Kp, Np, fmt=fmt, scaling=None, gpu=gpu, lead_dims=None,
                                         layout=layout, corrections=corrections))  # fmt: skip

    def _base(self) -> Any:
        if self.base is None:
            raise PerfModelError("this tile model has no base model for memory kernels and launches")
        return self.base

    def memory_kernel_time_s(self, bytes_moved, *, gpu, recipe=None, tensor=None):
        self.check_gpu(gpu)
        return self._base().memory_kernel_time_s(bytes_moved, gpu=gpu, recipe=recipe, tensor=tensor)

    def launch_time_s(self, *, gpu):
        return self._base().launch_time_s(gpu=gpu)

    def event_overhead_s(self) -> float:
        return float(self._base().event_overhead_s())

    def step_gemm_factor(self, fmt, scaling):
        return 1.0

    def cast_params(self, recipe: str) -> Any:
        return self._base().cast_params(recipe)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "gpu": self.gpu,
            "source": self.source,
            "kinds": {k: v.to_dict() for k, v in sorted(self.kinds.items())},
            **(
                {"event_kinds": {k: v.to_dict() for k, v in sorted(self.event_kinds.items())}}
                if self.event_kinds
                else {}
            ),
            **{
                field: {k: v.to_dict() for k, v in sorted(getattr(self, field).items())}
                for field in ("corrections", "event_corrections")
                if getattr(self, field)
            },
            **({"measured_range": {d: list(v) for d, v in self.measured_range.items()}} if self.measured_range else {}),
            "residuals": dict(self.residuals),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, origin: str = "<dict>", base: Any = None) -> TileModel:
        if not isinstance(data, Mapping) or data.get("schema") != SCHEMA:
            got = data.get("schema") if isinstance(data, Mapping) else type(data).__name__
            raise CalibrationError(f"{origin}: not a tile model (schema {got!r}, expected {SCHEMA!r})")
        kinds_in = data.get("kinds")
        if not isinstance(kinds_in, Mapping) or not kinds_in:
            raise CalibrationError(f"{origin}: 'kinds' must be a non-empty object")
        need = [f"bf16@{lay}" for lay in ("rr", "rc", "cr")] + [f"bf16@fallback/{lay}" for lay in ("rr", "rc", "cr")]
        need += ["fp8_e4m3/tensorwise", "fp8_e4m3/rowwise"]

        def read(field: str, table: Mapping[str, Any]) -> dict[str, TileKind]:
            out = {str(k): TileKind.from_dict(v, where=f"{origin}: {field} {k!r}") for k, v in table.items()}
            missing = [k for k in need if k not in out]
            if missing:
                raise CalibrationError(f"{origin}: {field} missing: {', '.join(missing)}")
            return out

        kinds = read("kinds", kinds_in)
        event_in = data.get("event_kinds", {})
        if not isinstance(event_in, Mapping):
            raise CalibrationError(f"{origin}: 'event_kinds' must be an object (or absent)")
        event_kinds = read("event_kinds", event_in) if event_in else {}
        corr: dict[str, dict[str, BoostedTrees]] = {}
        for field in ("corrections", "event_corrections"):
            table = data.get(field, {})
            if not isinstance(table, Mapping):
                raise CalibrationError(f"{origin}: {field!r} must be an object (or absent)")
            corr[field] = {}
            for k, v in table.items():
                if k not in CORRECTION_KEYS:
                    raise CalibrationError(choices_message(f"{origin}: {field} key", k, CORRECTION_KEYS))
                trees = BoostedTrees.from_dict(v, where=f"{origin}: {field} {k!r}")
                valid = (N_CORRECTION_FEATURES, N_FALLBACK_FEATURES) if "@fallback/" in k else (N_CORRECTION_FEATURES,)
                if trees.n_features not in valid:
                    raise CalibrationError(
                        f"{origin}: {field} {k!r} reads {trees.n_features} features; this version computes "
                        f"{' or '.join(map(str, valid))} for it (refit: python -m benchmarks.harness.calibrate_tiles)"
                    )
                corr[field][k] = trees
            for k, trees in corr[field].items():
                main = "bf16@" + k.rsplit("/", 1)[-1]
                if trees.n_features == N_FALLBACK_FEATURES and main not in corr[field]:
                    raise CalibrationError(
                        f"{origin}: {field} {k!r} reads the padded shape's time, which {main!r}'s correction "
                        f"prices, and {field} has no {main!r}"
                    )
        gpu, source = data.get("gpu"), data.get("source")
        if not isinstance(gpu, str) or not isinstance(source, str):
            raise CalibrationError(f"{origin}: 'gpu' and 'source' must be strings")
        residuals = dict(data.get("residuals") or {})
        rng = data.get("measured_range") or {}
        if not isinstance(rng, Mapping):
            raise CalibrationError(f"{origin}: 'measured_range' must be an object (or absent)")
        try:
            rng = {str(d): tuple(v) for d, v in rng.items()}
        except TypeError:
            raise CalibrationError(f"{origin}: 'measured_range' must map M, K and N to [lo, hi]") from None
        try:
            return cls(gpu=gpu, kinds=kinds, source=source, residuals=residuals, base=base, event_kinds=event_kinds,
                       measured_range=rng, **corr)  # fmt: skip
        except CalibrationError as exc:
            raise CalibrationError(f"{origin}: {exc}") from None

    def save(self, path: str | Path, *, force: bool = False) -> Path:
        """Write the model as JSON (refuses to overwrite an existing file unless ``force``); lists of plain values
        (a tile, a tree's nodes) on one line each; gzip-compressed (:func:`perfmodel._files.gzip_bytes`) when the
        name ends in ``.gz``, as the shipped ``h200_tiles.json.gz`` is."""
        import json
        import re

        path = Path(path)
        if path.exists() and not force:
            raise PerfModelError(f"{path} exists; pass force=True (--force) to overwrite it")
        text = json.dumps(self.to_dict(), indent=1, sort_keys=True)
        text = re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + " ".join(m.group(1).split()) + "]", text)
        if path.name.endswith(".gz"):
            from .._files import gzip_bytes

            path.write_bytes(gzip_bytes((text + "\n").encode()))
        else:
            path.write_text(text + "\n")
        return path


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

    from .._files import DATA_MAX_BYTES, read_text

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
    from .._files import DATA_MAX_BYTES, load_json

    path = Path(path)
    data = load_json(path, what="tile model", error=CalibrationError, default_limit_bytes=DATA_MAX_BYTES)
    return TileModel.from_dict(data, origin=str(path), base=base)
