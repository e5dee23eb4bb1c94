"""A Linear's fwd+bwd time on a numpy grid under the calibrated model, with the terms its GEMMs share computed once.

:func:`perfmodel.float8.speedup` prices, per shape, the bf16 Linear and the recipe's Linear: six GEMMs, of shapes
``(M, K, N)``, ``(M, N, K)`` and ``(K, M, N)`` twice (:mod:`perfmodel.float8.linear`). Priced one by one
(:meth:`perfmodel.models.calibrated.CalibratedModel.gemm_time_s`), each computes its tile counts, waves, bytes and
kernel-choice flags from scratch, though most are the same arrays: ``ceil(M / 128)`` is a term of four of the six
GEMMs, the tile and wave counts of a 128x256 bf16 GEMM are those of a 128x256 float8 one, the three bf16 GEMMs move
the same bytes ``2·(MK + KN + MN)``, and their fallback-kernel test reads the same leading dimensions ``(K, N)``.

:class:`GridTerms` computes each such term once per grid block and :func:`linear_total_s` prices a Linear from them,
in the operations and order of :meth:`perfmodel.models.calibrated.GemmParams.compute_s` /
:meth:`~perfmodel.models.calibrated.GemmParams.time_s` (the in-place evaluation of
:mod:`perfmodel.models.calibrated.ops`): the same floats, with one exception: the bf16 byte count
``(MK + KN) + MN`` is summed in the forward GEMM's order for all three (the same float wherever the products are
below 2**53, i.e. any shape up to ~2**26 per side; a rounding of ~1e-16 relative beyond). ``tests/test_float8_grid.py``
checks it against the GEMM-by-GEMM path and a hand-written scalar formula (rtol 1e-12).

The cast kernels are the recipe's own (:meth:`~perfmodel.float8.recipes.Recipe.cast_kernels`), priced as
:meth:`~perfmodel.models.calibrated.CalibratedModel.memory_kernel_time_s` prices them (``latency + bytes / rate``)
into reused buffers; parameters, rates and launch costs, which do not depend on the grid, are looked up once per grid.

It applies only where the generic path would run the calibrated formula in place: ``M``, ``K``, ``N`` float64
arrays of one shape (a checked grid block) and the time model a :class:`~perfmodel.models.calibrated.CalibratedModel`
whose pricing methods are the class's own (:func:`applies`); anything else takes the GEMM-by-GEMM path.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ..counting import ALIGN, FP8_GEMM_ALIGN, _add_output_bytes, _scale_bytes
from ..formats import Format, get_format
from ..models.calibrated import CalibratedModel, GemmParams
from ..models.calibrated.params import _without_misalignment
from ..models.shipped import ShippedCalibration
from ..specs.gpu import GPUSpec
from .recipes import CastOptions, Recipe

__all__ = ["GridTerms", "applies", "linear_total_s"]

#: the CalibratedModel methods the shared-term path stands in for: a subclass overriding one of them is priced by
#: its own methods (the GEMM-by-GEMM path)
_METHODS = (
    "gemm_time_s",
    "memory_kernel_time_s",
    "launch_time_s",
    "step_gemm_factor",
    "params_for",
    "transfer_factors",
    "fallback_params",
    "cast_params",
    "_memory_and_power",
)
_BF16 = get_format("bf16")


def applies(tm: Any, M: Any, K: Any, N: Any) -> CalibratedModel | None:
    """The calibrated model behind ``tm`` where the shared-term path prices this grid exactly, else ``None``:
    ``M``, ``K``, ``N`` float64 numpy arrays of one shape, ``tm`` a CalibratedModel (or the shipped file of one)
    that overrides none of :data:`_METHODS`."""
    if not all(isinstance(x, np.ndarray) and x.dtype == np.float64 for x in (M, K, N)):
        return None
    if not M.shape == K.shape == N.shape or M.size == 0:
        return None
    if isinstance(tm, ShippedCalibration):
        tm = tm.load()
    if not isinstance(tm, CalibratedModel):
        return None
    own = type(tm)
    if not all(getattr(own, f) is getattr(CalibratedModel, f) for f in _METHODS):
        return None
    return tm


def _cdiv(x: np.ndarray, d: int, out: np.ndarray) -> np.ndarray:
    """``ceil(x / d)`` into ``out``, as :meth:`perfmodel.models.calibrated.ops.InPlace.cdiv` computes it."""
    if isinstance(d, int) and d > 0 and d & (d - 1) == 0:
        np.multiply(x, 1.0 / d, out=out)  # exactly x / d for a power of two
    else:
        np.divide(x, d, out=out)
    return np.ceil(out, out=out)


class GridTerms:
    """The terms a grid block's GEMMs share, each computed on first use (float64 arrays of the block's shape).

    ``M``, ``K``, ``N``: the block, named ``"M"``, ``"K"``, ``"N"``; a GEMM is named by the dims of its
    ``(M', K', N')`` (the forward GEMM ``("M", "K", "N")``, grad_input ``("M", "N", "K")``, grad_weight
    ``("K", "M", "N")``). ``pool``: buffers of earlier blocks to compute into (a dict the caller keeps across the
    blocks of one grid, each buffer at least this block's size; ``None``: new arrays), so that a grid priced block by
    block allocates its temporaries once. Callers must not write into the arrays it returns.
    """

    def __init__(self, M: np.ndarray, K: np.ndarray, N: np.ndarray, pool: dict[Any, np.ndarray] | None = None):
        self.dims = {"M": M, "K": K, "N": N}
        self.size = M.size
        self._pool = pool
        self._memo: dict[tuple[Any, ...], Any] = {}

    def buffer(self, key: Any, dtype: Any = np.float64) -> np.ndarray:
        """A flat array of the block's size for ``key`` (a pooled one where the pool has it; its old values stay)."""
        if self._pool is None:
            return np.empty(self.size, dtype=dtype)
        buf = self._pool.get(key)
        if buf is None or buf.size < self.size:
            buf = self._pool[key] = np.empty(self.size, dtype=dtype)
        return buf[: self.size]

    def once(self, key: tuple[Any, ...], make: Any) -> Any:
        """``make()`` for ``key``, computed once per pool (values that do not depend on the grid: parameters, rates)."""
        store = self._pool if self._pool is not None else self._memo
        if key not in store:
            store[key] = make()
        return store[key]

    def _get(self, key: tuple[Any, ...], make: Any) -> Any:
        value = self._memo.get(key)
        if value is None:
            value = self._memo[key] = make(key)
        return value

    def cdiv(self, dim: str, d: int) -> np.ndarray:
        """``ceil(dim / d)``."""
        return self._get(("cdiv", dim, d), lambda key: _cdiv(self.dims[dim], d, self.buffer(key)))

    def tiles(self, m: str, n: str, tile_m: int, tile_n: int) -> np.ndarray:
        """``ceil(m / tile_m) · ceil(n / tile_n)``: output tiles of a GEMM with ``m`` rows and ``n`` columns."""
        return self._get(
            ("tiles", m, n, tile_m, tile_n),
            lambda key: np.multiply(self.cdiv(m, tile_m), self.cdiv(n, tile_n), out=self.buffer(key)),
        )

    def waves(self, m: str, n: str, tile_m: int, tile_n: int, sms: int) -> np.ndarray:
        """``ceil(tiles / sms)``: whole waves of those tiles on ``sms`` SMs."""
        return self._get(
            ("waves", m, n, tile_m, tile_n, sms),
            lambda key: _cdiv(self.tiles(m, n, tile_m, tile_n), sms, self.buffer(key)),
        )

    def plus(self, dim: str, c: float) -> np.ndarray:
        """``dim + c`` (a GEMM's ``K + k_overhead``)."""
        return self._get(("plus", dim, c), lambda key: np.add(self.dims[dim], c, out=self.buffer(key)))

    def product(self, a: str, b: str) -> np.ndarray:
        """``a · b`` (the same float either way round: a float product is commutative)."""
        a, b = sorted((a, b))
        return self._get(("prod", a, b), lambda key: np.multiply(self.dims[a], self.dims[b], out=self.buffer(key)))

    def gemm_bytes(self, m: str, k: str, n: str, fmt: Format, out_fmt: Format, scaling: str | None) -> np.ndarray:
        """:func:`perfmodel.counting.gemm_bytes` of GEMM ``(m, k, n)`` in the operations of
        :func:`perfmodel.counting._gemm_bytes_inplace`; one array for the three GEMMs of a Linear where the count is
        symmetric in the dims (equal input and output element sizes, no scales: the bf16 GEMMs)."""
        key = self._bytes_key(m, k, n, fmt, out_fmt, scaling)
        if key[1] == "MKN":
            m, k, n = "M", "K", "N"
        a, c = fmt.bytes_per_element, out_fmt.bytes_per_element

        def make(key: tuple[Any, ...]) -> np.ndarray:
            out = np.add(self.product(m, k), self.product(k, n), out=self.buffer(key))
            _add_output_bytes(out, self.product(m, n), a, c, self.buffer("bytes-tmp"))
            scale = _scale_bytes(self.dims[m], self.dims[k], self.dims[n], fmt, scaling)
            if not (isinstance(scale, int) and scale == 0):
                out += scale
            return out

        return self._get(key, make)

    @staticmethod
    def _bytes_key(m: str, k: str, n: str, fmt: Format, out_fmt: Format, scaling: str | None) -> tuple[Any, ...]:
        if fmt.bytes_per_element == out_fmt.bytes_per_element and scaling is None:
            return ("bytes", "MKN", fmt.bytes_per_element)
        return ("bytes", m, k, n, fmt.name, out_fmt.name, scaling)

    def memory_s(self, m: str, k: str, n: str, fmt: Format, scaling: str | None, bw: float) -> np.ndarray:
        """``gemm_bytes / bw``: a GEMM's streaming time (bf16 output; shared by GEMMs of equal bytes and bandwidth)."""
        nbytes = self.gemm_bytes(m, k, n, fmt, _BF16, scaling)
        key = ("mem", self._bytes_key(m, k, n, fmt, _BF16, scaling), bw)
        return self._get(key, lambda key: np.divide(nbytes, bw, out=self.buffer(key)))

    def fp8_bits(self) -> np.ndarray:
        """``int(K) | int(N)`` (the sizes are whole numbers): its low bits decide both alignment flags below."""

        def make(key: tuple[Any, ...]) -> np.ndarray:
            out, tmp = self.buffer(key, np.int64), self.buffer(("int", "tmp"), np.int64)
            np.copyto(out, self.dims["K"], casting="unsafe")  # truncation, as astype(np.int64)
            np.copyto(tmp, self.dims["N"], casting="unsafe")
            return np.bitwise_or(out, tmp, out=out)

        return self._get(("kn",), make)

    def eligible(self) -> np.ndarray:
        """:func:`perfmodel.float8.eligible`: K and N multiples of 16 (the same booleans as its float test); a new
        array (it is returned to the caller)."""
        return self._get(("eligible",), lambda key: (self.fp8_bits() & (FP8_GEMM_ALIGN - 1)) == 0)

    def misaligned_kn(self) -> tuple[np.ndarray, bool]:
        """:func:`perfmodel.counting.misaligned` of the leading dimensions ``(K, N)`` and whether any entry is."""

        def make(key: tuple[Any, ...]) -> tuple[np.ndarray, bool]:
            off = (self.fp8_bits() & (ALIGN - 1)) != 0
            return off, bool(off.any())

        return self._get(("misaligned",), make)

    def fallback(self, m: str, k: str) -> np.ndarray | None:
        """:func:`perfmodel.models.calibrated.fallback_kernels` of a GEMM ``(m, k, ·)`` with leading dims ``(K, N)``;
        ``None`` where no entry runs a fallback kernel."""

        def make(key: tuple[Any, ...]) -> np.ndarray | bool:
            off, any_off = self.misaligned_kn()
            if not any_off and not self.dims[k].min() < ALIGN:
                return False
            cond = (off & (self.dims[m] != 1)) | (self.dims[k] < ALIGN)
            return cond if cond.any() else False

        cond = self._get(("fallback", m, k), make)
        return None if cond is False else cond


def _gemm_s(terms: GridTerms, p: GemmParams, plan: _GemmPlan, sms: int, out: np.ndarray) -> np.ndarray:
    """:meth:`GemmParams.time_s` of GEMM ``dims`` from the shared terms, into ``out``: the same floats and operations
    as the in-place path of :meth:`GemmParams.compute_s` (the formula: :mod:`perfmodel.models.calibrated`)."""
    m, k, n = plan.dims
    q = p.wave_quantization
    per_wave = 2 * p.tile_m * p.tile_n * sms / p.rate_flops_per_s  # s per wave and element of K
    w = np.multiply(terms.waves(m, n, p.tile_m, p.tile_n, sms), q * per_wave, out=terms.buffer("w"))  # whole waves
    t = np.multiply(terms.tiles(m, n, p.tile_m, p.tile_n), (1 - q) * per_wave / sms, out=out)
    t += w  # waves, in seconds per element of K
    t *= terms.plus(k, p.k_overhead)
    if p.misaligned_factors != (1.0, 1.0, 1.0):
        t *= p.misalignment(terms.dims["K"], terms.dims["N"])  # lead dims (K, N): every GEMM of a Linear
    if p.throttle_gain:
        if p.throttle_settle_s == math.inf:
            np.multiply(t, 1 / p.throttle_time_s, out=w)  # min(t, inf) is t
        else:
            np.minimum(t, p.throttle_settle_s, out=w)
            w *= 1 / p.throttle_time_s
        w += 1
        np.log(w, out=w)
        w *= p.throttle_gain
        w += 1
        t *= w
    np.maximum(t, terms.memory_s(m, k, n, plan.fmt, plan.scaling, p.mem_bw_bytes_per_s), out=t)
    t += p.latency_s
    return t


@dataclasses.dataclass(frozen=True)
class _GemmPlan:
    """What prices one of a Linear's GEMMs on a given GPU, apart from the grid: the GEMM's dims, its fitted
    parameters rescaled to the GPU (``aligned``: without misalignment factors where a fallback group prices the
    misaligned shapes, ``fallback``), and the in-step factor."""

    dims: tuple[str, str, str]
    fmt: Format
    scaling: str | None
    params: GemmParams
    fallback: GemmParams | None
    factor: float


def _plan(tm: CalibratedModel, spec: GPUSpec, rec: Recipe) -> tuple[_GemmPlan, ...] | None:
    """The three GEMMs of ``rec``'s Linear as :meth:`CalibratedModel.gemm_time_s` and
    :func:`~perfmodel.float8.linear._linear_time` choose their parameters (``None``: a group without fitted
    parameters, which the generic path prices by the roofline)."""
    plans = []
    for (m, k, n, layout), dtype in zip(_GEMMS, rec.gemm_dtypes(), strict=True):
        fmt = get_format(dtype)
        scaling = None if fmt.bits >= 16 else rec.scaling
        layout = layout if fmt.bits >= 16 else "rc"  # torchao's casts produce _scaled_mm's rc operands
        p = tm.params_for(fmt, scaling, layout)
        if p is None:
            return None
        p = p.rescaled(**tm.transfer_factors(spec, fmt, scaling, layout))
        fb = tm.fallback_params(fmt)
        if fb is not None:
            p = _without_misalignment(p)
            fb = fb.rescaled(**tm.transfer_factors(spec, fmt, scaling))
        plans.append(_GemmPlan((m, k, n), fmt, scaling, p, fb, tm.step_gemm_factor(fmt, scaling)))
    return tuple(plans)


def _gemm_kernel_s(terms: GridTerms, plan: _GemmPlan, sms: int, out: np.ndarray) -> np.ndarray:
    """:meth:`CalibratedModel.gemm_time_s` of one GEMM into ``out``: the main group's time, and where a shape runs
    cuBLAS's fallback kernels (:func:`perfmodel.models.calibrated.fallback_kernels`), the fallback group's."""
    t = _gemm_s(terms, plan.params, plan, sms, out)
    if plan.fallback is not None:
        cond = terms.fallback(plan.dims[0], plan.dims[1])
        if cond is not None:  # some shape of the block runs a fallback kernel
            np.copyto(t, _gemm_s(terms, plan.fallback, plan, sms, terms.buffer("fb")), where=cond)
    return t


def _cast_rate(tm: CalibratedModel, spec: GPUSpec, key: str, tensor: str) -> tuple[float, float]:
    """``(latency_s, bandwidth B/s)`` of a cast kernel in :meth:`CalibratedModel.memory_kernel_time_s`:
    ``latency + bytes / bandwidth``."""
    factors = tm._memory_and_power(spec)
    copy_bw = tm.kernels.bw_bytes_per_s * factors["bandwidth"]  # streaming copies: HBM-bound
    p = tm.cast_params(key)
    if p is None:
        return tm.kernels.latency_s, copy_bw
    bw = p.weight_bw_bytes_per_s if tensor == "weight" else p.activation_bw_bytes_per_s
    return p.latency_s, min(bw * factors["sm_throughput"], copy_bw)


#: the three GEMMs of a Linear: (M', K', N') as dims of the block, and the bf16 layout (:func:`~.linear._linear_time`)
_GEMMS = (("M", "K", "N", "rc"), ("M", "N", "K", "rr"), ("K", "M", "N", "cr"))


def linear_total_s(
    terms: GridTerms, rec: Recipe, spec: GPUSpec, tm: CalibratedModel, opts: CastOptions, out: np.ndarray
) -> np.ndarray | None:
    """``LinearTime.total_s`` of :func:`perfmodel.float8.linear_time` for recipe ``rec`` (bf16: the baseline) on the
    block of ``terms``, seconds, into ``out`` (a flat array of the block's size); ``None`` where a GEMM group has no
    fitted parameters (the caller then takes the GEMM-by-GEMM path). The recipe's formats must have a peak on ``spec``
    (checked by the caller). The sums in :class:`~perfmodel.float8.linear.LinearTime`'s order:
    ``((g0 + g1 + g2) + casts) + launches``; what does not depend on the grid is worked out once per pool."""
    plans = terms.once(("plan", rec.name), lambda: _plan(tm, spec, rec))
    if plans is None:
        return None
    for i, plan in enumerate(plans):
        t = _gemm_kernel_s(terms, plan, spec.num_sms, out if i == 0 else terms.buffer("t"))
        if plan.factor != 1.0:
            t *= plan.factor
        if i:
            out += t
    d = terms.dims
    key = opts.cast_key(rec.name)
    launch_s: Any = 0
    cast_s: Any = 0  # summed apart, then added: the float sums of LinearTime
    t = terms.buffer("cast")
    for kern in rec.cast_kernels(d["M"], d["K"], d["N"], opts):
        if kern.launch_only:
            launch_s = launch_s + terms.once(("launch",), lambda: tm.launch_time_s(gpu=spec))
            continue
        latency, bw = terms.once(("cast", key, kern.tensor), lambda k=kern: _cast_rate(tm, spec, key, k.tensor))
        nbytes = kern.bytes
        if np.ndim(nbytes) == 0:  # a number: the generic formula
            cast_s = cast_s + (latency + nbytes / bw)
            continue
        if isinstance(cast_s, np.ndarray):
            np.divide(nbytes, bw, out=t)
            t += latency
            cast_s += t
        else:  # the first array (0 + x is x; a number before it is added, as cast_s + x adds it)
            first = np.divide(nbytes, bw, out=terms.buffer("cast_s"))
            first += latency
            if not (isinstance(cast_s, int) and cast_s == 0):
                first += cast_s
            cast_s = first
    out += cast_s
    out += launch_s
    return out
