"""The tile formula's parameters and candidate tiles: :class:`Tile`, :class:`TileKind` (one format and layout's
fitted parameters and tiles, and the formula of :mod:`perfmodel.models.tiles` that prices them).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...counting import alignment, layout_lead_dims
from ...errors import CalibrationError

__all__ = [
    "CORRECTION_KEYS",
    "FALLBACK_PARAM_NAMES",
    "PARAM_NAMES",
    "SCHEMA",
    "Tile",
    "TileKind",
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
