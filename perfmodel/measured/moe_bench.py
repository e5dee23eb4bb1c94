"""The ``triton_kernels`` MoE benchmark workflow: profiles per batch -> PerfData -> roofline chart.

The bench writes one Proton profile per batch size::

    {log_root}/{name}/{x_dtype}-{w_dtype}-TP{TP}-EP{EP}/profiles/batch-{batch}.hatchet

and a ``log_metadata.json`` lists the runs to compare: ``[[label, log_root, draw_roofline], ...]``.
Each batch becomes one measured :class:`PerfData` (the matmul leaf kernels summed, see
:meth:`perfmodel.measured.proton.Profile.perfdata`) with ``meta={"batch": b, "x": b * n_expts_act /
n_expts_tot}`` (tokens per expert). ``perfmodel roofline`` draws them the way Triton's MoE roofline
script did, without importing torch or triton.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
from collections.abc import Iterable, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

from ..errors import PerfModelError, ProfileError
from ..formats import get_format
from ..perfdata import PerfData
from ..specs.gpu import GPULike

__all__ = [
    "LogEntry",
    "add_roofline_cli",
    "batch_series",
    "batches_from_ranges",
    "has_native_mx4",
    "profile_path",
    "read_log_metadata",
    "roofline_chart",
    "run_roofline",
]

#: the seed's batch ranges (range(start, stop, step)) for the MoE and dense runs
MOE_BATCH_RANGES = ((128, 512, 32), (512, 32000, 128))
DENSE_BATCH_RANGES = ((1024, 32768, 1024),)


@dataclasses.dataclass(frozen=True, kw_only=True)
class LogEntry:
    """One run of ``log_metadata.json``: legend label, log root folder, whether to draw its roofs."""

    name: str
    log_dir: Path
    draw_roofline: bool


def profile_path(
    log_root: str | os.PathLike[str], name: str, x_dtype: str, w_dtype: str, batch: int, *, tp: int = 1, ep: int = 1
) -> Path:
    """``{log_root}/{name}/{x_dtype}-{w_dtype}-TP{tp}-EP{ep}/profiles/batch-{batch}.hatchet``."""
    return Path(log_root) / name / f"{x_dtype}-{w_dtype}-TP{tp}-EP{ep}" / "profiles" / f"batch-{batch}.hatchet"


def batches_from_ranges(ranges: Iterable[Sequence[int]]) -> list[int]:
    """Concatenate ``range(*r)`` over ``ranges``: ``[(128, 512, 32), (512, 32000, 128)]`` ->
    128, 160, ..., 480, 512, 640, ..."""
    return list(chain.from_iterable(range(*r) for r in ranges))


def read_log_metadata(path: str | os.PathLike[str], *, max_bytes: int | None = None) -> list[LogEntry]:
    """Parse ``log_metadata.json``: a list of ``[name, log_dir, draw_roofline]``. Relative log
    folders are relative to the current directory (as in the original script).

    Only a regular file of at most 64 MiB is read (``max_bytes`` or ``$PERFMODEL_MAX_FILE_BYTES``
    override the limit).

    Raises:
        FileRefusedError: not a regular file (FIFO, device, folder), or above the size limit.
        ProfileError: unreadable file or another layout (the message names the file).
    """
    from .._files import DATA_MAX_BYTES, load_json

    data = load_json(
        path, what="log metadata", error=ProfileError, limit_bytes=max_bytes, default_limit_bytes=DATA_MAX_BYTES
    )
    ok = (
        isinstance(data, list)
        and data
        and all(isinstance(e, list) and len(e) == 3 and isinstance(e[0], str) and isinstance(e[1], str) for e in data)
    )
    if not ok:
        raise ProfileError(
            f"{path}: expected a non-empty JSON list of [name, log_dir, draw_roofline], "
            f'e.g. [["triton", "logs/triton", true]]'
        )
    return [LogEntry(name=n, log_dir=Path(d), draw_roofline=bool(r)) for n, d, r in data]


def has_native_mx4(device_type: str, device_info: dict[str, Any]) -> bool:
    """True when the GPU multiplies mxfp4 natively: CUDA arch 100 and newer (Blackwell) or HIP gfx950."""
    arch = str(device_info.get("arch", ""))
    if device_type == "CUDA":
        return arch.isdigit() and int(arch) >= 100
    return device_type == "HIP" and arch == "gfx950"


def batch_series(
    log_root: str | os.PathLike[str],
    name: str,
    x_dtype: str,
    w_dtype: str,
    batches: Iterable[int],
    *,
    n_expts_tot: int,
    n_expts_act: int,
    tp: int = 1,
    ep: int = 1,
    pattern: str = r".*matmul.*",
    gpu: GPULike | None = None,
    label: str = "",
) -> list[PerfData]:
    """One measured :class:`PerfData` per batch: the matmul leaf kernels of ``batch-{b}.hatchet``.

    The compute roof is ``x_dtype``'s format (fp8 -> fp8_e4m3, bf16), as the original script used
    the activation's bit width. ``meta``: ``batch``, ``x`` (tokens per expert), ``path``.

    Raises:
        ProfileError: a missing profile (the message names the expected path) or a bad one.
    """
    if n_expts_tot % ep:
        raise PerfModelError(f"n_expts_tot={n_expts_tot} is not divisible by EP={ep}")
    from . import proton

    dtype = get_format(x_dtype)
    out = []
    for b in batches:
        path = profile_path(log_root, name, x_dtype, w_dtype, b, tp=tp, ep=ep)
        if not path.is_file():
            raise ProfileError(
                f"{path}: profile missing (log {str(log_root)!r}, batch {b}); expected "
                "{log_root}/{name}/{x}-{w}-TP{tp}-EP{ep}/profiles/batch-{batch}.hatchet"
            )
        pd = proton.read(path).perfdata(pattern, gpu=gpu, dtype=dtype, label=label or f"batch {b}")
        out.append(
            dataclasses.replace(pd, meta={**pd.meta, "batch": b, "x": b * n_expts_act / n_expts_tot, "path": str(path)})
        )
    return out


def roofline_chart(
    entries: Sequence[LogEntry],
    batches: Sequence[int],
    *,
    name: str,
    x_dtype: str,
    w_dtype: str,
    n_expts_tot: int,
    n_expts_act: int,
    tp: int = 1,
    ep: int = 1,
    gpu: GPULike | None = None,
    verbose: bool = True,
) -> Any:
    """Read every log's batch series and draw them on one batch-roofline chart; returns the Axes."""
    from .plot import batch_roofline

    case = f"{name} ({x_dtype}x{w_dtype}, TP={tp}, EP={ep})"
    series: dict[str, list[PerfData]] = {}
    if verbose:
        print(f"Benchmarking {case}...\n" + "=" * 63)
    for e in entries:
        series[e.name] = batch_series(
            e.log_dir,
            name,
            x_dtype,
            w_dtype,
            batches,
            n_expts_tot=n_expts_tot,
            n_expts_act=n_expts_act,
            tp=tp,
            ep=ep,
            gpu=gpu,
            label=e.name,
        )
        if verbose:
            for p in series[e.name]:
                print(
                    f"[{e.name}] batch {p.meta['batch']}: util {p.util:.3f}; {p.tflops:.1f} TFLOP/s; {p.tbps:.2f} TB/s"
                )
    if verbose:
        print("=" * 63)
    return batch_roofline(series, roofs=[e.name for e in entries if e.draw_roofline], title=f"{case} roofline")


def _ranges(text: str) -> list[tuple[int, int, int]]:
    try:
        out = [tuple(int(v) for v in part.split(":")) for part in text.split(",") if part.strip()]
    except ValueError:
        out = []
    if not out or any(len(r) != 3 or r[2] <= 0 for r in out):
        raise argparse.ArgumentTypeError(f"{text!r}: expected start:stop:step[,start:stop:step...]")
    return out  # type: ignore[return-value]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number >= 1")
    return value


def add_roofline_cli(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``perfmodel roofline`` on an argparse ``subparsers``; returns its parser."""
    fmt = ",".join(":".join(map(str, r)) for r in MOE_BATCH_RANGES)
    p = subparsers.add_parser(
        "roofline",
        help="roofline chart of triton_kernels MoE bench profiles",
        description="Read {log_dir}/{name}/{x}-{w}-TP{tp}-EP{ep}/profiles/batch-{b}.hatchet for every "
        "log of log_metadata.json and draw TFLOP/s against tokens per expert.",
    )
    p.add_argument("--log-metadata", "-m", required=True, help="JSON list of [name, log_dir, draw_roofline]")
    p.add_argument(
        "--output",
        "-o",
        default="perf.png",
        help="chart file, format from the extension (png, pdf, svg, ...; '-': PNG to standard output); "
        "an existing file is replaced only with --force; never an input (default perf.png)",
    )
    p.add_argument("--force", action="store_true", help="replace the chart file if it exists")
    p.add_argument(
        "--dtype",
        "-d",
        choices=["fp8fp8", "fp8mx4"],
        default="fp8fp8",
        help="fp8fp8: fp8 x fp8; fp8mx4: fp8 (bf16 without native mx4) x mx4",
    )
    mx4 = p.add_mutually_exclusive_group()
    mx4.add_argument(
        "--native-mx4",
        dest="native_mx4",
        action="store_true",
        default=None,
        help="the GPU multiplies mx4 natively (x dtype fp8)",
    )
    mx4.add_argument(
        "--no-native-mx4",
        dest="native_mx4",
        action="store_false",
        help="no native mx4 (x dtype bf16); default: from the profiles' device metadata",
    )
    p.add_argument(
        "--batch-ranges", type=_ranges, default=list(MOE_BATCH_RANGES), help=f"start:stop:step,... (default {fmt})"
    )
    p.add_argument("--name", default="llama4-maverick", help="model folder name (default llama4-maverick)")
    p.add_argument("--dim1", type=_positive_int, default=5120, help="hidden size (default 5120; recorded only)")
    p.add_argument("--dim2", type=_positive_int, default=8192, help="expert FFN size (default 8192)")
    p.add_argument("--n-expts-tot", type=_positive_int, default=128, help="experts in total (default 128)")
    p.add_argument("--n-expts-act", type=_positive_int, default=4, help="experts per token (default 4)")
    p.add_argument("--tp", type=_positive_int, default=1, help="tensor parallel degree (default 1)")
    p.add_argument("--ep", type=_positive_int, default=1, help="expert parallel degree (default 1)")
    p.add_argument("--gpu", default=None, help="GPU name for the roofs when profiles lack device metadata")
    p.add_argument("--quiet", "-q", action="store_true", help="do not print per-batch numbers")
    p.set_defaults(func=run_roofline)
    return p


def _native_mx4_from_profiles(entries: Sequence[LogEntry], args: argparse.Namespace, batches: Sequence[int]) -> bool:
    from . import proton

    tried = []
    for x in ("fp8", "bf16"):
        for e in entries:
            for b in batches:
                path = profile_path(e.log_dir, args.name, x, "mx4", b, tp=args.tp, ep=args.ep)
                if path.is_file():
                    devices = proton.read(path).devices
                    if not devices:
                        raise ProfileError(
                            f"{path}: no device metadata to tell whether the GPU has native "
                            "mx4; pass --native-mx4 or --no-native-mx4"
                        )
                    return any(has_native_mx4(t, info) for t, ids in devices.items() for info in ids.values())
                tried.append(str(path))
                break
    raise ProfileError(f"no mx4 profile found (tried {', '.join(tried)}); check --log-metadata and --name")


def run_roofline(args: argparse.Namespace) -> int:
    """Run ``perfmodel roofline``; returns the exit status (0, or 1 after printing the error)."""
    from .._files import check_output, is_stdout
    from .plot import image_format, save

    to_stdout = is_stdout(args.output)
    log = sys.stderr if to_stdout else sys.stdout  # with -o -, standard output carries the PNG only
    try:
        if args.dim2 % args.tp:
            raise PerfModelError(f"--dim2 {args.dim2} is not divisible by --tp {args.tp}")
        check_output(args.output, force=args.force, inputs=[args.log_metadata])  # before any work
        image_format(args.output)
        entries = read_log_metadata(args.log_metadata)
        batches = batches_from_ranges(args.batch_ranges)
        if not batches:
            raise PerfModelError(f"--batch-ranges {args.batch_ranges} hold no batch size")
        if args.dtype == "fp8fp8":
            x_dtype, w_dtype = "fp8", "fp8"
        else:
            native = args.native_mx4
            if native is None:
                native = _native_mx4_from_profiles(entries, args, batches)
            x_dtype, w_dtype = ("fp8" if native else "bf16"), "mx4"
        inputs = [args.log_metadata] + [
            str(profile_path(e.log_dir, args.name, x_dtype, w_dtype, b, tp=args.tp, ep=args.ep))
            for e in entries
            for b in batches
        ]
        check_output(args.output, force=args.force, inputs=inputs)
        with contextlib.redirect_stdout(log):
            ax = roofline_chart(
                entries,
                batches,
                name=args.name,
                x_dtype=x_dtype,
                w_dtype=w_dtype,
                n_expts_tot=args.n_expts_tot,
                n_expts_act=args.n_expts_act,
                tp=args.tp,
                ep=args.ep,
                gpu=args.gpu,
                verbose=not args.quiet,
            )
        out = save(ax, args.output, force=args.force, inputs=inputs)
    except PerfModelError as exc:
        print(f"perfmodel roofline: error: {exc}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"wrote {'standard output' if to_stdout else out}", file=log)
    return 0
