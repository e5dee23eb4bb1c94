"""The grouped-GEMM sweep's items: group-size draws (balanced, skewed, empty), padding, offsets and the strides each
variant runs with (:class:`GroupedItem`), and the dense fp8 neighbours (:class:`NeighbourItem`). Pure Python.
"""

from __future__ import annotations

import dataclasses
import math
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .config import (
    EMPTY_FRACTION,
    EST_BYTES_PER_S,
    FP8,
    MOE_MODELS,
    NEIGHBOUR_BIG,
    NEIGHBOUR_FAMILY,
    NEIGHBOUR_PASSES,
    NEIGHBOUR_SCALINGS,
    NEIGHBOURS_4096,
    NEIGHBOURS_VOCAB,
    PADDING_WHY,
    QUICK_NEIGHBOURS,
    RANDOM_FAMILY,
    GroupedGemmError,
    MoEModel,
)

__all__ = [
    "GroupedItem",
    "NeighbourItem",
    "apportion",
    "balanced_rows",
    "dirichlet_rows",
    "empty_rows",
    "expected_strides",
    "neighbour_items",
    "offsets",
    "pad_rows",
    "pick_empty",
]


def _check_int(name: str, value: Any, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise GroupedGemmError(f"{name} must be an int >= {lo}, got {value!r}")
    return value


def apportion(weights: Sequence[float], total: int) -> list[int]:
    """``total`` split in proportion to ``weights`` (non-negative, not all zero) into integers summing to ``total``:
    floors of the exact shares, then one more to the largest remainders (ties: the lower index). E.g.
    ``apportion([1, 1, 2], 10)`` -> shares 2.5, 2.5, 5 -> ``[3, 2, 5]``."""
    _check_int("total", total, 0)
    w = [float(x) for x in weights]
    if not w or any(not math.isfinite(x) or x < 0 for x in w) or sum(w) <= 0:
        raise GroupedGemmError(f"weights must be non-negative finite numbers, not all zero, got {list(weights)!r}")
    s = sum(w)
    exact = [x / s * total for x in w]
    out = [math.floor(e) for e in exact]
    rest = total - sum(out)
    order = sorted(range(len(w)), key=lambda i: (-(exact[i] - out[i]), i))
    for i in order[:rest]:
        out[i] += 1
    return out


def balanced_rows(G: int, m: int) -> list[int]:
    """``G`` groups of ``m`` rows each."""
    _check_int("G", G, 1)
    _check_int("m", m, 0)
    return [m] * G


def dirichlet_rows(G: int, m: int, rng: random.Random, alpha: float) -> list[int]:
    """``T = G*m`` rows split by proportions drawn from a symmetric Dirichlet(``alpha``) (normalised
    ``rng.gammavariate(alpha, 1)`` draws), apportioned to integers (:func:`apportion`). Small ``alpha`` skews more;
    the largest group holds about H_G / G of the tokens at alpha = 1 (H_G the harmonic number)."""
    _check_int("G", G, 1)
    _check_int("m", m, 0)
    if not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and alpha > 0):
        raise GroupedGemmError(f"alpha must be a positive number, got {alpha!r}")
    draws = [rng.gammavariate(alpha, 1.0) for _ in range(G)]
    if sum(draws) <= 0:  # pragma: no cover - gammavariate underflow at tiny alpha
        draws = [1.0] * G
    return apportion(draws, G * m)


def empty_rows(G: int, total: int, empty: Iterable[int]) -> list[int]:
    """``G`` groups, those at the indices ``empty`` holding 0 rows, the others sharing ``total`` equally (the first
    ones one more where it does not divide). E.g. ``empty_rows(4, 10, {1, 2})`` -> ``[5, 0, 0, 5]``."""
    _check_int("G", G, 1)
    _check_int("total", total, 0)
    gone = set(empty)
    if any(not isinstance(i, int) or not 0 <= i < G for i in gone):
        raise GroupedGemmError(f"empty group indices must be in 0..{G - 1}, got {sorted(gone)!r}")
    if len(gone) >= G:
        raise GroupedGemmError(f"at least one of the {G} groups must be non-empty, got {len(gone)} empty")
    keep = [i for i in range(G) if i not in gone]
    share = apportion([1.0] * len(keep), total)
    out = [0] * G
    for i, r in zip(keep, share, strict=True):
        out[i] = r
    return out


def pick_empty(G: int, rng: random.Random, fraction: float = EMPTY_FRACTION) -> list[int]:
    """The indices an ``empty`` vector leaves empty: ``round(fraction * G)`` of them, at least 1, at most ``G - 1``,
    drawn without replacement (sorted)."""
    _check_int("G", G, 2)
    n = min(G - 1, max(1, round(fraction * G)))
    return sorted(rng.sample(range(G), n))


def pad_rows(rows: Sequence[int], multiple: int) -> list[int]:
    """Each group padded to ``max(rows, multiple)`` rounded up to ``multiple`` (torchtitan's
    ``generate_permute_indices``: empty groups get ``multiple`` rows). E.g. ``pad_rows([0, 5, 16, 17], 16)`` ->
    ``[16, 16, 16, 32]``."""
    _check_int("multiple", multiple, 1)
    out = []
    for r in rows:
        _check_int("rows[i]", r, 0)
        r = max(r, multiple)
        out.append(-(-r // multiple) * multiple)
    return out


def offsets(rows: Sequence[int]) -> list[int]:
    """The ``offs`` of ``torch._grouped_mm``: cumulative group ends. E.g. ``offsets([3, 0, 5])`` -> ``[3, 3, 8]``."""
    out, s = [], 0
    for r in rows:
        _check_int("rows[i]", r, 0)
        s += r
        out.append(s)
    return out


# ---- layouts -------------------------------------------------------------------------------------


def _round_up(x: int, multiple: int) -> int:
    return -(-x // multiple) * multiple


def expected_strides(form: str, layout: str, *, T: int, K: int, N: int, G: int) -> dict[str, list[int]]:
    """Shapes and strides (elements) of A, B and the output for a ``form``/``layout`` item (what torch should show):

    * fwd: A ``[T, K]`` (row: ``(K, 1)``; col: ``(1, T)``), B ``[G, K, N]`` (row: ``(K*N, N, 1)``; col: the transpose
      of a contiguous ``[G, N, K]``: ``(K*N, 1, K)``), out ``[T, N]`` with its row stride N rounded up to 8 (torch pads
      the output's leading dim to 16 bytes).
    * wgrad: A ``[N, T]`` (row ``(T, 1)``; col ``(1, N)``), B ``[T, K]`` (row ``(K, 1)``; col ``(1, T)``), out
      ``[G, N, K]`` with K rounded up to 8 in its strides.
    """
    a_major, b_major = _parse_layout(layout)
    if form == "fwd":
        a = ([T, K], [K, 1] if a_major == "row" else [1, T])
        b = ([G, K, N], [K * N, N, 1] if b_major == "row" else [K * N, 1, K])
        n8 = _round_up(N, 8)
        out = ([T, N], [n8, 1])
    elif form == "wgrad":
        a = ([N, T], [T, 1] if a_major == "row" else [1, N])
        b = ([T, K], [K, 1] if b_major == "row" else [1, T])
        k8 = _round_up(K, 8)
        out = ([G, N, K], [N * k8, k8, 1])
    else:
        raise GroupedGemmError(f"form must be 'fwd' or 'wgrad', got {form!r}")
    return {
        "a_shape": a[0],
        "a_strides": a[1],
        "b_shape": b[0],
        "b_strides": b[1],
        "out_shape": out[0],
        "out_strides": out[1],
    }


_LAYOUT = re.compile(r"^a_(row|col)_b_(row|col)$")


def _parse_layout(layout: str) -> tuple[str, str]:
    m = _LAYOUT.match(layout) if isinstance(layout, str) else None
    if not m:
        raise GroupedGemmError(f"layout must be a_{{row,col}}_b_{{row,col}}, e.g. 'a_row_b_col', got {layout!r}")
    return m[1], m[2]


# ---- plan ----------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class GroupedItem:
    """One grouped GEMM to time: ``form`` (fwd | wgrad), ``fmt`` (bf16 | fp8_e4m3_rowwise), ``layout``, the problem
    (``K``, ``N``, ``G``) and its group sizes ``rows`` (after ``padding``; ``rows_requested`` before it).
    ``vector`` names the group-size vector (``dist``, ``m``, ``dist_param``), ``group`` the shape's index in run
    order (the items of a shape share its weights and run together)."""

    form: str
    family: str
    K: int
    N: int
    G: int
    fmt: str
    layout: str
    dist: str
    m: int
    dist_param: tuple[tuple[str, Any], ...]
    rows_requested: tuple[int, ...]
    padding: int | None
    roles: tuple[str, ...]
    group: int
    vector: int

    @property
    def rows(self) -> tuple[int, ...]:
        """The group sizes that run (``rows_requested`` padded where ``padding`` is set)."""
        if self.padding is None:
            return self.rows_requested
        return tuple(pad_rows(self.rows_requested, self.padding))

    @property
    def T(self) -> int:
        return sum(self.rows)

    @property
    def shape_id(self) -> str:
        """``"{form}_{family}_{K}x{N}_G{G}"``: the items sharing weights."""
        return f"{self.form}_{self.family}_{self.K}x{self.N}_G{self.G}"

    @property
    def vector_id(self) -> str:
        """``"{dist}{param}_m{m}_v{vector}"``, e.g. ``"skewed-a0.3_m300_v1"``: the same for every format of a vector."""
        tag = self.dist
        if self.dist == "skewed":
            tag += f"-a{dict(self.dist_param)['alpha']:g}"
        return f"{tag}_m{self.m}_v{self.vector}"

    @property
    def id(self) -> str:
        return f"{self.shape_id}_{self.vector_id}_{self.fmt}_{self.layout}"

    @property
    def flops(self) -> int:
        """2 T K N for the rows that run (the padded ones for padded items)."""
        return 2 * self.T * self.K * self.N

    @property
    def flops_requested(self) -> int:
        return 2 * sum(self.rows_requested) * self.K * self.N

    @property
    def bytes_per_element(self) -> int:
        return 1 if self.fmt == FP8 else 2

    def min_bytes(self) -> int:
        """Each operand read once and the bf16 output written once, bytes (fp8 scales left out)."""
        b = self.bytes_per_element
        if self.form == "fwd":
            return b * (self.T * self.K + self.G * self.K * self.N) + 2 * self.T * self.N
        return b * self.T * (self.N + self.K) + 2 * self.G * self.N * self.K

    def weight_bytes(self) -> int:
        """Bytes of the fwd form's 3D weights (shared by the items of a shape; 0 for wgrad)."""
        return self.bytes_per_element * self.G * self.K * self.N if self.form == "fwd" else 0

    def probe_conditions(self) -> set[str]:
        """The probe conditions this item depends on (see :func:`probe_cases`): ``pad8``/``pad16`` for padded items,
        else ``pad16`` plus ``empty`` (a group of 0 rows) and ``unaligned`` (a group not a multiple of 16)."""
        if self.padding is not None:
            return {f"pad{self.padding}"}
        out = {"pad16"}
        if any(r == 0 for r in self.rows):
            out.add("empty")
        if any(r % 16 for r in self.rows):
            out.add("unaligned")
        return out

    def fields(self) -> dict[str, Any]:
        """The record fields that describe the item (no measurement); strides are the expected ones."""
        rows = list(self.rows)
        rec: dict[str, Any] = {
            "op": self.form,
            "id": self.id,
            "shape_id": self.shape_id,
            "family": self.family,
            "roles": list(self.roles),
            "K": self.K,
            "N": self.N,
            "G": self.G,
            "dtype": "fp8_e4m3" if self.fmt == FP8 else "bf16",
            "scaling": "rowwise" if self.fmt == FP8 else None,
            "torch_op": "_scaled_grouped_mm" if self.fmt == FP8 else "_grouped_mm",
            "use_fast_accum": True if self.fmt == FP8 else None,
            "out_dtype": "bf16",
            "layout": self.layout,
            "dist": self.dist,
            "dist_param": dict(self.dist_param),
            "rows_mean_requested": self.m,
            "rows": rows,
            "total_rows": sum(rows),
            "n_empty": sum(1 for r in rows if r == 0),
            "max_rows": max(rows),
            "min_rows": min(rows),
            "padding": None
            if self.padding is None
            else {"multiple": self.padding, "min": self.padding, "why": PADDING_WHY[self.padding]},
            "flops": self.flops,
            "flops_requested": self.flops_requested,
            "min_bytes": self.min_bytes(),
            "group": self.group,
            "vector": self.vector_id,
        }
        if self.padding is not None:
            rec["rows_requested"] = list(self.rows_requested)
            rec["total_rows_requested"] = sum(self.rows_requested)
        if self.family != RANDOM_FAMILY:
            model = _MODEL_BY_NAME[self.family]
            rec.update(num_experts=model.experts, top_k=model.top_k)
        rec.update(expected_strides(self.form, self.layout, T=self.T, K=self.K, N=self.N, G=self.G))
        return rec


_MODEL_BY_NAME: Mapping[str, MoEModel] = {m.name: m for m in MOE_MODELS}


@dataclasses.dataclass(frozen=True, kw_only=True)
class NeighbourItem:
    """A dense fp8 ``torch._scaled_mm(x, W.t())``: ``x [M, K]`` row-major, ``W [N, K]`` contiguous (layout ``rc``),
    ``scaling`` tensorwise or rowwise, ``series`` the dim varied (``K``, ``N``, ``M`` around 4096; ``N_vocab``),
    ``pass_`` 0 or 1."""

    M: int
    K: int
    N: int
    scaling: str
    series: str
    pass_: int

    @property
    def id(self) -> str:
        return f"nb_{self.series}_{self.M}x{self.K}x{self.N}_{self.scaling}_p{self.pass_}"

    @property
    def flops(self) -> int:
        return 2 * self.M * self.K * self.N

    def kernel_s(self) -> float:
        """Sizing estimate, seconds."""
        by = self.M * self.K + self.K * self.N + 2 * self.M * self.N
        return max(self.flops / 1300e12, by / EST_BYTES_PER_S) + 5e-6

    def fields(self) -> dict[str, Any]:
        return {
            "op": "gemm",
            "id": self.id,
            "shape_id": f"{self.M}x{self.K}x{self.N}",
            "M": self.M,
            "K": self.K,
            "N": self.N,
            "dtype": "fp8_e4m3",
            "scaling": self.scaling,
            "layout": "rc",
            "out_dtype": "bf16",
            "use_fast_accum": False,
            "family": NEIGHBOUR_FAMILY,
            "series": self.series,
            "pass": self.pass_,
            "torch_op": "_scaled_mm",
            "a_shape": [self.M, self.K],
            "a_strides": [self.K, 1],
            "b_shape": [self.K, self.N],
            "b_strides": [1, self.K],
        }


def neighbour_items(seed: int = 0, *, quick: bool = False) -> list[NeighbourItem]:
    """The fp8 neighbour GEMMs: M = N = 8192 with K in NEIGHBOURS_4096; M = K = 8192 with N in it; K = N = 8192 with
    M in it; M = K = 8192 with N in NEIGHBOURS_VOCAB; each tensorwise and rowwise; pass 0 in that order, pass 1 the
    same GEMMs shuffled with ``seed``. ``quick``: the first QUICK_NEIGHBOURS of pass 0."""
    base: list[tuple[str, int, int, int]] = []
    big = NEIGHBOUR_BIG
    base += [("K", big, k, big) for k in NEIGHBOURS_4096]
    base += [("N", big, big, n) for n in NEIGHBOURS_4096]
    base += [("M", m, big, big) for m in NEIGHBOURS_4096]
    base += [("N_vocab", big, big, n) for n in NEIGHBOURS_VOCAB]
    first = [
        NeighbourItem(M=M, K=K, N=N, scaling=s, series=ser, pass_=0)
        for ser, M, K, N in base
        for s in NEIGHBOUR_SCALINGS
    ]
    if quick:
        return first[:QUICK_NEIGHBOURS]
    out = list(first)
    for p in range(1, NEIGHBOUR_PASSES):
        again = [dataclasses.replace(i, pass_=p) for i in first]
        random.Random(f"neighbours:{seed}:{p}").shuffle(again)
        out += again
    return out
