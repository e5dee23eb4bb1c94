"""What one Proton profile ran at: kernels (or scopes) with time, TFLOP/s, TB/s, roofline utilisation and bound.

The face of ``perfmodel profile FILE.hatchet``::

    perfmodel profile run.hatchet                       # every kernel name, longest first
    perfmodel profile run.hatchet --pattern '.*matmul.*' --json
    perfmodel profile run.hatchet --scopes              # Proton scopes instead of kernels
    perfmodel profile run.hatchet --plot run.png        # the rows on the GPU's roofline

Kernels that share a name are summed (launches, device time, FLOPs, bytes), as Proton's viewer groups them. A
row's format, for its compute roof, is the bit width carrying most of its FLOPs (as
:meth:`perfmodel.measured.proton.Profile.perfdata` picks it); a row with no FLOPs is placed on the memory roof
only (its util is bytes over bandwidth). Every number is measured (``source="measured"``): nothing here is
predicted.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
from collections.abc import Sequence
from typing import Any

from .._files import short, short_repr
from ..errors import PerfModelError, ProfileError
from ..perfdata import PerfData
from ..specs.gpu import GPULike
from .proton import Profile, _default_format, read

__all__ = ["ProfileRow", "add_profile_cli", "format_rows", "profile_rows"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ProfileRow:
    """One kernel name (or scope) of a profile, summed over its launches.

    Attributes:
        name: kernel or scope name.
        kind: ``"kernel"`` or ``"scope"``.
        launches: launches summed (kernels; for scopes, the kernels below it).
        time_s: device time, seconds.
        share: ``time_s`` over the profile's kernel time (0–1).
        point: the measured :class:`~perfmodel.PerfData` (``None`` when the GPU is unknown: no device metadata
            and no ``gpu=``); its ``tflops``, ``tbps``, ``util`` and ``bound`` are the row's.
        flops, bytes: summed FLOPs (every bit width) and bytes.
    """

    name: str
    kind: str
    launches: int
    time_s: float
    share: float
    flops: float
    bytes: float
    point: PerfData | None

    def to_dict(self) -> dict[str, Any]:
        """Plain types (JSON-ready): seconds, FLOP, bytes, TFLOP/s, TB/s."""
        p = self.point
        return {
            "name": self.name,
            "kind": self.kind,
            "launches": self.launches,
            "time_s": self.time_s,
            "share": self.share,
            "flops": self.flops,
            "bytes": self.bytes,
            "tflops": self.flops / self.time_s / 1e12 if self.time_s > 0 and self.flops > 0 else None,
            "tbps": self.bytes / self.time_s / 1e12 if self.time_s > 0 and self.bytes > 0 else None,
            "dtype": p.dtype.name if p is not None else None,
            "util": float(p.util) if p is not None else None,
            "bound": p.bound if p is not None else None,
        }


def _point(prof: Profile, name: str, time_s: float, by_width: dict[int, float], nbytes: float, gpu: Any) -> Any:
    if gpu is None or time_s <= 0 or (not by_width and nbytes <= 0):
        return None
    fmt = _default_format(by_width, prof.path, name, gpu)
    return PerfData(
        time_s=time_s,
        flops=float(sum(by_width.values())),
        bytes=nbytes,
        dtype=fmt,
        gpu=gpu,
        label=name,
        source="measured",
        meta={"profile": prof.path},
    )


def profile_rows(
    profile: Profile | str,
    *,
    pattern: str | None = None,
    scopes: bool = False,
    gpu: GPULike | None = None,
) -> list[ProfileRow]:
    """The rows of :func:`format_rows`, longest device time first.

    Args:
        profile: a :class:`~perfmodel.measured.proton.Profile` or a path to read.
        pattern: keep names matching this regular expression (:func:`re.fullmatch`); ``None``: all.
        scopes: Proton scopes (non-kernel frames) instead of kernel names.
        gpu: the GPU for the roofs when the profile's device metadata is missing (or to override it).

    Raises:
        ProfileError: an invalid pattern, a pattern matching nothing (the message lists names), a profile with
            no kernel time.
    """
    prof = read(profile) if not isinstance(profile, Profile) else profile
    if pattern is not None and not isinstance(pattern, str):
        raise ProfileError(f"{prof.path}: pattern must be a regular expression string, got {short_repr(pattern)}")
    try:
        regex = re.compile(pattern) if pattern is not None else None
    except re.error as exc:
        raise ProfileError(f"{prof.path}: invalid pattern {short_repr(pattern)}: {exc}") from None
    kernels = prof.kernels
    total = sum(k.time_s for k in kernels)
    if total <= 0:
        raise ProfileError(f"{prof.path}: the profile holds no kernel time ({len(kernels)} kernel nodes)")
    spec = gpu if gpu is not None else prof.gpu
    rows: list[ProfileRow] = []
    if scopes:
        points = prof.scopes(pattern, gpu=spec) if spec is not None else {}
        if spec is None:
            raise ProfileError(f"{prof.path}: no device metadata, so scopes need gpu= (e.g. --gpu H200)")
        for name, p in points.items():
            rows.append(
                ProfileRow(
                    name=name,
                    kind="scope",
                    launches=int(p.meta.get("kernels", 0)),
                    time_s=float(p.time_s),
                    share=float(p.time_s) / total,
                    flops=float(p.flops),
                    bytes=float(p.bytes),
                    point=p,
                )
            )
    else:
        sums: dict[str, list[Any]] = {}
        for k in kernels:
            if regex is not None and regex.fullmatch(k.name) is None:
                continue
            s = sums.setdefault(k.name, [0, 0.0, {}, 0.0])
            s[0] += k.count
            s[1] += k.time_s
            for width, v in k.flops.items():
                s[2][width] = s[2].get(width, 0.0) + v
            s[3] += k.bytes
        for name, (count, t, by_width, nbytes) in sums.items():
            rows.append(
                ProfileRow(
                    name=name,
                    kind="kernel",
                    launches=int(count),
                    time_s=t,
                    share=t / total,
                    flops=float(sum(by_width.values())),
                    bytes=nbytes,
                    point=_point(prof, name, t, by_width, nbytes, spec),
                )
            )
    if pattern is not None and not rows:
        names = sorted({k.name for k in kernels})
        shown = ", ".join(repr(short(n, 60)) for n in names[:6]) + (", ..." if len(names) > 6 else "")
        raise ProfileError(f"{prof.path}: no kernel name matches {pattern!r} (re.fullmatch); names: {shown}")
    rows.sort(key=lambda r: (-r.time_s, r.name))
    return rows


def _fmt(x: float | None, spec: str) -> str:
    return "-" if x is None or not math.isfinite(x) else format(x, spec)


def format_rows(rows: Sequence[ProfileRow], *, width: int = 60) -> str:
    """A fixed-width table: name, launches, time (µs), share, TFLOP/s, TB/s, format, util, bound."""
    head = f"{'name':<{width}} {'launches':>8} {'time us':>11} {'share':>6} {'TFLOP/s':>8} {'TB/s':>6} {'dtype':>8}"
    lines = [head + f" {'util':>6} bound"]
    for r in rows:
        d = r.to_dict()
        util = _fmt(d["util"] * 100, ".1f") + "%" if d["util"] is not None else "-"
        lines.append(
            f"{short(r.name, width):<{width}} {r.launches:>8} {r.time_s * 1e6:>11.1f} {r.share:>6.1%} "
            f"{_fmt(d['tflops'], '.1f'):>8} {_fmt(d['tbps'], '.2f'):>6} {d['dtype'] or '-':>8} {util:>6} "
            f"{d['bound'] or '-'}"
        )
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    from .._files import check_output

    if args.plot is not None:  # the output path is checked before any work
        check_output(args.plot, force=args.force, inputs=[args.file])
    if args.top is not None and args.top < 1:
        raise PerfModelError(f"--top must be a positive number of rows, got {args.top}")
    prof = read(args.file)
    rows = profile_rows(prof, pattern=args.pattern, scopes=args.scopes, gpu=args.gpu)
    shown = rows[: args.top] if args.top is not None else rows
    spec = args.gpu if args.gpu is not None else prof.gpu
    if args.json:
        print(json.dumps({"file": prof.path, "gpu": getattr(spec, "name", spec), "rows": [r.to_dict() for r in shown]}))
    else:
        gpu = getattr(spec, "name", spec) or "unknown GPU (no device metadata; pass --gpu for util)"
        total = sum(r.time_s for r in rows)
        what = "scopes" if args.scopes else "kernel names"
        print(f"{prof.path}: {len(rows)} {what}, {total * 1e3:.3f} ms of device time, on {gpu} (measured)")
        print(format_rows(shown))
        if len(shown) < len(rows):
            print(f"... {len(rows) - len(shown)} more (--top)")
    if args.plot is not None:
        from . import plot

        points = [r.point for r in shown if r.point is not None]
        if not points:
            raise PerfModelError("--plot: no row has a roofline point (no FLOPs or bytes, or the GPU is unknown)")
        ax = plot.roofline(points, title=f"{points[0].gpu.name}: {short(prof.path, 60)} (measured)")
        plot.save(ax, args.plot, force=args.force, inputs=[args.file])
        print(f"wrote {args.plot}")
    return 0


def add_profile_cli(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``perfmodel profile`` on an argparse ``subparsers``; returns its parser."""
    p = subparsers.add_parser(
        "profile",
        help="what one Proton profile ran at: kernels or scopes with time, TFLOP/s, TB/s, util, bound",
        description="Read one Proton .hatchet file and list its kernel names (or scopes), longest first.",
    )
    p.add_argument("file", help="a Proton .hatchet profile")
    p.add_argument("--pattern", default=None, help="keep names matching this regular expression (re.fullmatch)")
    p.add_argument("--scopes", action="store_true", help="Proton scopes instead of kernel names")
    p.add_argument("--gpu", default=None, help="GPU for the roofs when the profile has no device metadata")
    p.add_argument("--top", type=int, default=None, help="show the N longest rows")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--plot", default=None, metavar="OUT.png", help="draw the rows on the GPU's roofline")
    p.add_argument("--force", action="store_true", help="replace the --plot file if it exists")
    p.set_defaults(func=_run)
    return p
