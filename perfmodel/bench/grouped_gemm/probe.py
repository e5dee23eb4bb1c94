"""The probe phase: the cases that check each variant's and layout's device rules (aligned, unaligned, empty
groups), what each is expected to do, and :func:`run_probes`, which runs them against a float64 reference per group.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._device import require_cuda
from ..dataset import DatasetWriter
from .calls import _make_call
from .config import BF16, FP8, FWD_VARIANTS, PROBE_CRASH_EXIT, WGRAD_VARIANTS, Log
from .items import GroupedItem, _parse_layout

__all__ = [
    "PROBE_G",
    "PROBE_K",
    "PROBE_N",
    "PROBE_ROWS",
    "ProbeCase",
    "probe_cases",
    "run_probes",
    "unsafe_from_probes",
    "wrong_from_probes",
]


PROBE_K, PROBE_N, PROBE_G = 256, 384, 4
PROBE_ROWS: Mapping[str, tuple[int, ...]] = {
    "pad16": (32, 48, 16, 64),  # every group a non-empty multiple of 16
    "pad8": (8, 24, 40, 8),  # multiples of 8, not all of 16
    "unaligned": (5, 37, 22, 16),  # not multiples of 8; the total (80) a multiple of 16
    "empty": (32, 0, 48, 16),  # one empty group, the others multiples of 16
    "total_unaligned": (5, 37, 22, 17),  # total 81: not a multiple of 16
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class ProbeCase:
    """One acceptance check: ``form``/``fmt``/``layout`` on ``rows`` (a PROBE_ROWS pattern, ``condition``);
    ``expect`` what torch's source (GroupedMMUtils.h, GroupedBlas.cpp, GroupMMCommon.cuh) says should happen:
    ``ok``, ``refused`` (a host-side check) or ``crash`` (a device-side assert: the process's CUDA context dies)."""

    form: str
    fmt: str
    layout: str
    condition: str
    expect: str

    @property
    def name(self) -> str:
        return f"{self.form}_{self.fmt}_{self.layout}_{self.condition}"

    @property
    def rows(self) -> tuple[int, ...]:
        return PROBE_ROWS[self.condition]


def _expect(form: str, fmt: str, layout: str, condition: str) -> str:
    a, b = _parse_layout(layout)
    rows = PROBE_ROWS[condition]
    T = sum(rows)
    if fmt == FP8:
        if a != "row" or b != "col":
            return "refused"  # "Expected mat1 to not be transposed" / "Expected mat2 to be transposed"
        if form == "wgrad" and T % 16:
            return "refused"  # trailing dim of mat_a (T) must be divisible by 16
    elif form == "wgrad" and ((a == "row" and T % 8) or (b == "col" and T % 8)):
        return "refused"  # "strides should be multiple of 16 bytes"
    if form == "wgrad" and not (a == "col" and b == "row"):
        el = 16 if fmt == FP8 else 8
        if any(r == 0 for r in rows) or any(r % el for r in rows[:-1]):
            return "crash"  # device assert: groups > 0 and multiples of 16 bytes
    if form == "fwd" and a == "col" and any(r % (16 if fmt == FP8 else 8) for r in rows[:-1]):
        return "crash"
    return "ok"


def probe_cases() -> list[ProbeCase]:
    """Every probe, safest first (a crash ends the process; ``--resume`` goes on after it): the swept variants and
    the other layouts on ``pad16`` rows, ``pad8`` for the pad-8 variant, then unaligned / empty / total_unaligned
    group sizes for the swept variants, those expected to crash last."""
    swept = [("fwd", f, lay) for f, lay, _ in FWD_VARIANTS] + [("wgrad", f, lay) for f, lay, _ in WGRAD_VARIANTS]
    cases = []
    for form, fmt, lay in swept:
        cases.append((form, fmt, lay, "pad16"))
    for form, fmt, lay, p in [("fwd", *v) for v in FWD_VARIANTS] + [("wgrad", *v) for v in WGRAD_VARIANTS]:
        if p == 8:
            cases.append((form, fmt, lay, "pad8"))
    for form in ("fwd", "wgrad"):
        for fmt in (BF16, FP8):
            for lay in ("a_row_b_row", "a_row_b_col", "a_col_b_row", "a_col_b_col"):
                if (form, fmt, lay) not in swept:
                    cases.append((form, fmt, lay, "pad16"))
    for form, fmt, lay in swept:
        cases += [(form, fmt, lay, c) for c in ("unaligned", "empty")]
        if form == "wgrad":
            cases.append((form, fmt, lay, "total_unaligned"))
    out = [ProbeCase(form=f, fmt=fm, layout=lay, condition=c, expect=_expect(f, fm, lay, c)) for f, fm, lay, c in cases]
    rank = {"ok": 0, "refused": 1, "crash": 2}
    return sorted(out, key=lambda p: (p.condition not in ("pad16", "pad8"), rank[p.expect]))


def unsafe_from_probes(records: Iterable[Mapping[str, Any]]) -> set[tuple[str, str, str, str]]:
    """(form, fmt, layout, condition) whose probe was refused or crashed (neither ``ok`` nor ``wrong``): the time and
    kernels phases skip items that depend on one of them (:meth:`GroupedItem.probe_conditions`)."""
    return {
        (r["form"], r["fmt"], r["layout"], r["condition"])
        for r in records
        if r.get("op") == "probe" and r.get("status") not in ("ok", "wrong")
    }


def wrong_from_probes(records: Iterable[Mapping[str, Any]]) -> set[tuple[str, str, str, str]]:
    """(form, fmt, layout, condition) whose probe ran but did not match float64 (or left output unwritten): such items
    are still timed, their records name the probe in ``probe_wrong``."""
    return {
        (r["form"], r["fmt"], r["layout"], r["condition"])
        for r in records
        if r.get("op") == "probe" and r.get("status") == "wrong"
    }


def _wrong_probes(item: GroupedItem, wrong: set[tuple[str, str, str, str]]) -> list[str]:
    return sorted(
        f"{item.form}_{item.fmt}_{item.layout}_{c}"
        for c in item.probe_conditions()
        if (item.form, item.fmt, item.layout, c) in wrong
    )


def _skip_reason(item: GroupedItem, unsafe: set[tuple[str, str, str, str]]) -> str | None:
    bad = sorted(c for c in item.probe_conditions() if (item.form, item.fmt, item.layout, c) in unsafe)
    return f"skipped: probe {item.form}_{item.fmt}_{item.layout}_{bad[0]} did not pass" if bad else None


def _reference(torch: Any, form: str, fmt: str, ops: Mapping[str, Any], rows: Sequence[int]) -> list[Any]:
    """Per group, the float64 result of the same operands (times the scales for fp8)."""
    a, b = ops["a"].float().double(), ops["b"].float().double()
    out, start = [], 0
    for g, r in enumerate(rows):
        end = start + r
        if form == "fwd":
            ref = a[start:end] @ b[g]
            if fmt == FP8:
                ref = ref * ops["scale_a"][start:end, None].double() * ops["scale_b"][g][None, :].double()
        else:
            ref = a[:, start:end] @ b[start:end]
            if fmt == FP8:
                n, k = a.shape[0], b.shape[1]
                ref = ref * ops["scale_a"][g * n : (g + 1) * n, None].double()
                ref = ref * ops["scale_b"][g * k : (g + 1) * k][None, :].double()
        out.append(ref)
        start = end
    return out


def _group_errors(torch: Any, form: str, out: Any, refs: Sequence[Any], rows: Sequence[int]) -> list[float | None]:
    """Per group ‖out − ref‖ / ‖ref‖ (for an empty wgrad group, max |out|: it should be 0); None where the output
    holds NaN (the poisoned memory was not overwritten) or the group has no output rows."""
    errs: list[float | None] = []
    start = 0
    for g, (r, ref) in enumerate(zip(rows, refs, strict=True)):
        got = out[start : start + r] if form == "fwd" else out[g]
        start += r
        if got.numel() == 0:
            errs.append(None)
            continue
        got = got.double()
        if torch.isnan(got).any():
            errs.append(math.nan)
            continue
        norm = float(ref.norm())
        errs.append(float((got - ref).norm()) / norm if norm > 0 else float(got.abs().max()))
    return errs


def _poison(torch: Any, nbytes: int) -> None:
    """Fill a block of ``nbytes`` with NaN and free it, so the op's output (likely the same cached block) starts as
    NaN: an element the op does not write shows up."""
    t = torch.full((max(1, nbytes // 2),), float("nan"), device="cuda", dtype=torch.bfloat16)
    del t


def _is_cuda_death(exc: BaseException) -> bool:
    text = str(exc)
    return any(
        s in text
        for s in (
            "device-side assert",
            "CUDA error",
            "illegal memory",
            "misaligned address",
            "unspecified launch failure",
            "AcceleratorError",
        )
    )


def run_probes(
    writer: DatasetWriter, cases: Sequence[ProbeCase], *, done: set[str], tol: Mapping[str, float], log: Log = print
) -> int:
    """Run each probe not in ``done``: poison, call, synchronize, compare per group with float64. Appends one
    ``op="probe"`` record per case (status ok | wrong | refused | crashed) and rewrites the file after each (a
    ``started`` record first, so a process that dies hard leaves its mark). Returns 0, or PROBE_CRASH_EXIT after
    recording a case that killed the CUDA context."""
    torch = require_cuda()
    torch.manual_seed(0)
    for case in cases:
        if case.name in done:
            continue
        rec: dict[str, Any] = {
            "op": "probe",
            "name": case.name,
            "form": case.form,
            "fmt": case.fmt,
            "layout": case.layout,
            "condition": case.condition,
            "rows": list(case.rows),
            "K": PROBE_K,
            "N": PROBE_N,
            "expect": case.expect,
            "status": "started",
        }
        stored = writer.add(rec, flush=True)
        try:
            fn, ops = _make_call(torch, case.form, case.fmt, case.layout, PROBE_K, PROBE_N, case.rows)
            stored.update(
                a_shape=list(ops["a"].shape),
                a_strides=list(ops["a"].stride()),
                b_shape=list(ops["b"].shape),
                b_strides=list(ops["b"].stride()),
            )
            torch.cuda.synchronize()
            T = sum(case.rows)
            _poison(torch, 2 * (T * PROBE_N if case.form == "fwd" else PROBE_G * PROBE_N * PROBE_K))
            out = fn()
            torch.cuda.synchronize()
        except Exception as exc:  # every failure is the probe's answer
            dead = _is_cuda_death(exc)
            if not dead:
                try:
                    torch.cuda.synchronize()
                except Exception as exc2:
                    dead, exc = True, exc2
            stored.update(status="crashed" if dead else "refused", error=f"{type(exc).__name__}: {str(exc)[:600]}")
            writer.flush()
            log(f"probe {case.name}: {stored['status']} (expected {case.expect}): {str(exc)[:160]}")
            if dead:
                return PROBE_CRASH_EXIT
            continue
        refs = _reference(torch, case.form, case.fmt, ops, case.rows)
        errs = _group_errors(torch, case.form, out, refs, case.rows)
        bad = [e for e in errs if e is not None and not (math.isfinite(e) and e <= tol[case.fmt])]
        stored.update(
            status="wrong" if bad else "ok",
            group_rel_errors=errs,
            tolerance=tol[case.fmt],
            out_shape=list(out.shape),
            out_strides=list(out.stride()),
        )
        writer.flush()
        log(f"probe {case.name}: {stored['status']} (expected {case.expect}), errors {errs}")
        del out, fn, ops
    return 0
