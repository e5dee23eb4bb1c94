"""Many training jobs in one call: :func:`perfmodel.train.estimate` with numpy arrays for the layout knobs
(public face: :mod:`perfmodel.train`).

Every numeric knob of ``estimate`` may be a numpy array; the arrays broadcast together (numpy rules) and every
result comes back as an array of the broadcast shape:

* ``seq_len``, ``batch_per_gpu`` and ``layers`` run through the formulas as arrays (as they always did);
* ``n_gpus``, ``tp``, ``dp_replicate``, ``pp`` and ``cp`` (:data:`GRID_KNOBS`) decide the job's structure
  (process groups, the TP-sharded layer, which collectives run): each distinct combination of them is checked and
  priced once, with the other knobs' elements of that combination as arrays, and the answers are scattered back.

So an element of the result is the same arithmetic as the scalar call with that element's knobs (a test checks
it, rel 1e-9). Knobs that are names or flags (the model, ``gpu``, ``recipe``, ``convert``, ``ac``,
``float8_all_gather``, ``async_tp``, ``compile``, ``network``, ``time_model``, ``train_params``) stay one value per
call, and so does ``vocab``: it belongs to the model (its tokenizer) as the preset does, and an array is refused as
before.

A combination the scalar call refuses (``tp`` not dividing the heads, ``n_gpus`` not a multiple of ``tp``, a
``seq_len`` element not a multiple of ``tp``, ``pp != 1`` ...) is refused for the whole call with one error that
lists the refused elements' indices and the reason (:func:`refuse`); nothing is priced as NaN. Whether a job fits
in memory is an answer, not an error: ``fits`` is per element.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from .._backend import check_compatible, check_size, is_symbolic, short_repr
from .._files import short
from ..errors import InvalidParallelismError, InvalidShapeError, PerfModelError
from ..models.base import Provenance

__all__ = ["ARRAY_FIELDS", "GRID_KNOBS", "NATIVE_KNOBS", "TrainEstimateGrid", "is_grid", "price_grid"]

#: knobs priced once per distinct combination (they decide the process groups and the sharded layer)
GRID_KNOBS = ("n_gpus", "tp", "dp_replicate", "pp", "cp")
#: knobs that run through the formulas as numpy arrays
NATIVE_KNOBS = ("seq_len", "batch_per_gpu", "layers")
#: the scalar estimate's numeric fields that come back as arrays of the broadcast shape
ARRAY_FIELDS = (
    "step_s",
    "tokens_per_s_per_gpu",
    "mfu",
    "mfu_bf16",
    "memory_bytes",
    "fits",
    "exposed_comm_s",
    "exposed_fsdp_s",
    "exposed_tp_s",
    "overlapped_comm_s",
    "model_flops_per_step",
)
#: refused elements listed in an error message (the error's ``indices`` attribute holds every one)
_SHOWN = 6


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainEstimateGrid:
    """Training-step estimates of many jobs, every field an array of :attr:`shape` (module doc).

    Attributes:
        shape: the broadcast shape of the array knobs.
        knobs: knob name -> its broadcast array (every numeric knob given, also the scalar ones).
        step_s, tokens_per_s_per_gpu, mfu, mfu_bf16, memory_bytes, fits, exposed_comm_s, exposed_fsdp_s,
            exposed_tp_s, overlapped_comm_s, model_flops_per_step: as on :class:`~perfmodel.train.TrainEstimate`
            (seconds, tokens/s, fractions, bytes, bool), one element per job.
        compute_s, memory: part -> array (seconds, bytes); a part a job does not have is 0.
        provenance: the distinct provenances of the jobs (a one-GPU and a multi-GPU job differ).
        combinations: how many distinct structural combinations (:data:`GRID_KNOBS`) were priced.
    """

    shape: tuple[int, ...]
    knobs: dict[str, np.ndarray]
    step_s: np.ndarray
    tokens_per_s_per_gpu: np.ndarray
    mfu: np.ndarray
    mfu_bf16: np.ndarray
    memory_bytes: np.ndarray
    fits: np.ndarray
    exposed_comm_s: np.ndarray
    exposed_fsdp_s: np.ndarray
    exposed_tp_s: np.ndarray
    overlapped_comm_s: np.ndarray
    model_flops_per_step: np.ndarray
    compute_s: dict[str, np.ndarray]
    memory: dict[str, np.ndarray]
    provenance: tuple[Provenance, ...]
    combinations: int
    _price: Callable[..., Any] = dataclasses.field(repr=False, compare=False)

    @property
    def is_scalar(self) -> bool:
        """Always False (an array estimate); :meth:`at` gives one job's full estimate."""
        return False

    def at(self, *index: int) -> Any:
        """The full :class:`~perfmodel.train.TrainEstimate` of one element (its table, collectives, layer),
        priced again with that element's knobs; ``index`` as numpy indexes the result arrays.

        Raises:
            InvalidShapeError: an index that is not one element of :attr:`shape`.
        """
        try:
            flat = int(np.ravel_multi_index(tuple(int(i) for i in index), self.shape))
        except (TypeError, ValueError) as exc:
            raise InvalidShapeError(
                f"at() takes one integer per dimension of the result's shape {self.shape}, got {index!r} ({exc})"
            ) from None
        return self._price(**{k: _item(v.reshape(-1)[flat]) for k, v in self.knobs.items()})

    def to_dict(self) -> dict[str, Any]:
        """Plain types (JSON-ready nested lists); seconds and bytes."""
        out: dict[str, Any] = {"shape": list(self.shape), "knobs": {k: v.tolist() for k, v in self.knobs.items()}}
        out.update({f: getattr(self, f).tolist() for f in ARRAY_FIELDS})
        out["compute_s"] = {k: v.tolist() for k, v in self.compute_s.items()}
        out["memory"] = {k: v.tolist() for k, v in self.memory.items()}
        out["provenance"] = [p.to_dict() for p in self.provenance]
        return out

    def table(self) -> str:
        """Refused: a table prints one job.

        Raises:
            PerfModelError: always; ``est.at(i, j).table()`` prints element ``(i, j)``."""
        raise PerfModelError(
            f"table() prints one configuration, but this estimate holds {int(np.prod(self.shape))} (shape "
            f"{self.shape}); est.at(i, ...).table() prints one element, or read the array fields directly"
        )

    def summary(self) -> str:
        """The knobs that vary, the shape, and step time / tokens/s per GPU ranges of the jobs."""
        varying = ", ".join(k for k, v in self.knobs.items() if np.unique(v).size > 1) or "none"
        ok = self.fits.reshape(-1)
        return (
            f"{int(np.prod(self.shape))} training jobs (shape {self.shape}; varying: {varying}; "
            f"{self.combinations} layouts priced): step {_range(self.step_s)} s, tokens/s per GPU "
            f"{_range(self.tokens_per_s_per_gpu)}; {int(ok.sum())} fit in memory. est.at(i, ...) gives one job"
        )

    def __str__(self) -> str:
        return self.summary()


def _range(x: np.ndarray) -> str:
    return f"{float(np.min(x)):.4g}–{float(np.max(x)):.4g}" if x.size else "(none)"


def _item(x: Any) -> Any:
    """One element as a Python number (a whole float as int, so messages and the scalar path see ``8``)."""
    v = x.item() if isinstance(x, np.generic) else x
    return int(v) if isinstance(v, float) and v.is_integer() else v


def is_grid(knobs: dict[str, Any]) -> bool:
    """True when a structural knob (:data:`GRID_KNOBS`) is a numpy array: the call goes through :func:`price_grid`."""
    return any(isinstance(knobs.get(k), np.ndarray) for k in GRID_KNOBS)


def _broadcast(knobs: dict[str, Any]) -> dict[str, np.ndarray]:
    """The numeric knobs given (``None`` ones left out) broadcast together; structural ones checked numeric.

    Raises:
        InvalidShapeError: arrays that do not broadcast, a symbolic knob with arrays, a non-numeric array.
        InvalidParallelismError: a bool or non-numeric array for a parallel degree.
    """
    given = {k: v for k, v in knobs.items() if v is not None}
    for k in GRID_KNOBS:
        v = given.get(k)
        if isinstance(v, np.ndarray) and (v.dtype.kind not in "iuf"):
            raise InvalidParallelismError(
                f"{k} as an array must hold integers or whole floats (dtype int or float), got dtype {v.dtype} "
                f"{short_repr(v)}"
            )
    symbols = [k for k, v in given.items() if is_symbolic(v)]
    if symbols:
        raise InvalidShapeError(
            f"{', '.join(symbols)} symbolic with an array for {', '.join(k for k in GRID_KNOBS if k in given)}: "
            "array layouts take numbers and numpy arrays only (substitute the symbols first)"
        )
    check_compatible(**{k: np.asarray(v) for k, v in given.items()})
    arrays = np.broadcast_arrays(*(np.asarray(v) for v in given.values()))
    return dict(zip(given, arrays, strict=True))


def price_grid(price: Callable[..., Any], knobs: dict[str, Any]) -> TrainEstimateGrid:
    """Price every element of the broadcast knobs (module doc): one ``price(**knobs)`` call (the scalar
    :func:`perfmodel.train.estimate`) per distinct structural combination, with the native knobs as 1-D arrays.

    Raises:
        InvalidShapeError: knobs that do not broadcast (or out-of-range sizes, checked over the whole array).
        PerfModelError (the class the scalar call raises): some elements refused, :func:`refuse`.
    """
    b = _broadcast(knobs)
    shape = np.broadcast_shapes(*(v.shape for v in b.values()))
    for k in NATIVE_KNOBS:  # sizes checked over the whole array first: their own message, not per combination
        if k in b:
            check_size("batch_per_gpu" if k == "batch_per_gpu" else k, b[k])
    flat = {k: v.reshape(-1) for k, v in b.items()}
    n = int(np.prod(shape))
    keys = [k for k in GRID_KNOBS if k in flat]
    first, inverse = _layouts({k: np.asarray(knobs[k]) for k in keys}, shape)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(first.size + 1))
    results: list[tuple[np.ndarray, Any]] = []
    refused: list[tuple[np.ndarray, dict[str, Any], PerfModelError]] = []
    for g, start in enumerate(first):
        idx = order[bounds[g] : bounds[g + 1]]
        struct = {k: _item(flat[k][start]) for k in keys}
        good, bad = _split_sequence_parallel(idx, struct, flat)
        probe = good if good.size else idx[:1]  # a layout whose every seq_len is refused: check the layout itself
        native = {k: flat[k][probe] for k in NATIVE_KNOBS if k in flat}
        if not good.size:
            native["seq_len"] = np.array([float(struct["tp"])])  # a multiple of tp: only the layout is judged
        try:
            est = price(**struct, **native)
        except PerfModelError as exc:
            refused.append((idx, struct, exc))  # the layout itself is refused: every element of it
            continue
        if good.size:
            results.append((good, est))
        if bad is not None:
            refused.append(bad)
    if refused:
        raise refuse(refused, shape, n)
    return _assemble(results, shape, n, b, price, first.size)


def _layouts(structural: dict[str, np.ndarray], shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct layouts: for each, the flat index of its first element, and every element's layout number.
    Each knob's distinct values are coded on the knob as given (before broadcasting, so small), the codes combined
    into one integer per element (mixed radix) and only that key sorted."""
    key: Any = np.zeros((), dtype=np.int64)
    radix = 1
    for v in structural.values():
        values, code = np.unique(v.astype(np.float64).reshape(-1), return_inverse=True)
        if radix * values.size >= 2**62:  # too many distinct combinations for one int64 key: rows instead
            rows = np.stack([np.broadcast_to(a, shape).reshape(-1).astype(np.float64) for a in structural.values()])
            _, first, inverse = np.unique(rows.T, axis=0, return_index=True, return_inverse=True)
            return first, inverse.reshape(-1)
        key = key + code.reshape(v.shape).astype(np.int64) * radix
        radix *= max(1, values.size)
    _, first, inverse = np.unique(np.broadcast_to(key, shape).reshape(-1), return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def _split_sequence_parallel(
    idx: np.ndarray, struct: dict[str, Any], flat: dict[str, np.ndarray]
) -> tuple[np.ndarray, tuple[np.ndarray, dict[str, Any], PerfModelError] | None]:
    """The elements of one layout whose ``seq_len`` is a multiple of its ``tp`` (sequence parallelism needs it,
    :func:`perfmodel.train.config.check_config`), and the refusal of the others (``None`` when there are none)."""
    tp = struct.get("tp")
    if "seq_len" not in flat or not isinstance(tp, int) or tp <= 1:
        return idx, None
    bad = np.mod(flat["seq_len"][idx], tp) != 0
    if not bad.any():
        return idx, None
    values = np.unique(flat["seq_len"][idx[bad]])
    shown = ", ".join(str(_item(v)) for v in values[:3]) + (", ..." if values.size > 3 else "")
    exc = InvalidParallelismError(
        f"seq_len not a multiple of tp={tp}: sequence parallelism (every tp > 1 job here, as torchtitan runs TP) "
        f"splits each sequence across the {tp} TP ranks; use a seq_len that tp divides"
    )
    return idx[~bad], (idx[bad], {**struct, "seq_len": shown}, exc)


def refuse(refused: list[tuple[np.ndarray, dict[str, Any], PerfModelError]], shape: tuple[int, ...], n: int) -> Any:
    """One error for every refused element: its class is the most specific one every element's error shares
    (e.g. :class:`~perfmodel.errors.InvalidParallelismError`), its message lists the first refused indices
    (into the broadcast shape) with the knobs and the scalar call's reason, and its ``indices`` attribute holds
    every refused index (a tuple of index tuples) and ``reasons`` index -> reason."""
    errors = [e for _, _, e in refused]
    cls = next(c for c in type(errors[0]).__mro__ if all(isinstance(e, c) for e in errors))
    if not issubclass(cls, PerfModelError):
        cls = PerfModelError
    every: list[tuple[int, ...]] = []
    reasons: dict[tuple[int, ...], str] = {}
    lines = []
    for idx, struct, exc in refused:
        at = [tuple(int(i) for i in np.unravel_index(int(j), shape)) for j in np.sort(idx)]
        every += at
        reasons.update({a: str(exc) for a in at})
        more = f" and {len(at) - 4} more" if len(at) > 4 else ""
        knobs = ", ".join(f"{k}={v}" for k, v in struct.items())
        lines.append(f"indices {', '.join(map(str, at[:4]))}{more} ({knobs}): {short(str(exc), 300)}")
    shown = "; ".join(lines[:_SHOWN]) + (f"; and {len(lines) - _SHOWN} more layouts" if len(lines) > _SHOWN else "")
    err = cls(
        f"{len(every)} of {n} configurations cannot be priced (indices into the broadcast shape {shape}; "
        f"nothing was priced): {shown}"
    )
    err.indices = tuple(sorted(every))
    err.reasons = reasons
    return err


def _assemble(
    results: list[tuple[np.ndarray, Any]],
    shape: tuple[int, ...],
    n: int,
    b: dict[str, np.ndarray],
    price: Callable[..., Any],
    combinations: int,
) -> TrainEstimateGrid:
    """Scatter every combination's answers into arrays of the broadcast shape."""
    out = {f: np.zeros(n, dtype=bool if f == "fits" else np.float64) for f in ARRAY_FIELDS}
    parts: dict[str, dict[str, np.ndarray]] = {"compute_s": {}, "memory": {}}
    provenance: dict[str, Provenance] = {}
    for idx, est in results:
        for f in ARRAY_FIELDS:
            out[f][idx] = np.broadcast_to(np.asarray(getattr(est, f)), idx.shape)
        for group, values in (("compute_s", est.compute_s), ("memory", est.memory)):
            for k, v in values.items():
                arr = parts[group].setdefault(k, np.zeros(n))
                arr[idx] = np.broadcast_to(np.asarray(v, dtype=np.float64), idx.shape)
        provenance.setdefault(est.provenance.line(), est.provenance)
    shaped = {f: v.reshape(shape) for f, v in out.items()}
    return TrainEstimateGrid(
        shape=tuple(shape),
        knobs={k: np.array(v) for k, v in b.items()},
        **shaped,
        compute_s={k: v.reshape(shape) for k, v in parts["compute_s"].items()},
        memory={k: v.reshape(shape) for k, v in parts["memory"].items()},
        provenance=tuple(provenance.values()),
        combinations=combinations,
        _price=price,
    )
