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

from ..errors import PerfModelError, ProfileError, TooManyBatchesError
from ..formats import get_format
from ..perfdata import PerfData
from ..specs.gpu import GPULike

__all__ = [
    "MAX_BATCHES",
    "LogEntry",
    "add_roofline_cli",
    "batch_series",
    "batches_from_ranges",
    "has_native_mx4",
    "predicted_series",
    "profile_path",
    "read_log_metadata",
    "roofline_chart",
    "run_roofline",
]

#: the seed's batch ranges (range(start, stop, step)) for the MoE and dense runs
MOE_BATCH_RANGES = ((128, 512, 32), (512, 32000, 128))
DENSE_BATCH_RANGES = ((1024, 32768, 1024),)
#: the most batch sizes :func:`batches_from_ranges` (``perfmodel roofline --batch-ranges``) accepts: each is one
#: profile per log read and one chart point, and the seed's ranges hold 258; 10**6 batches took 56 s and 408 MB
#: before failing on the missing profiles (issue #35), so more is refused before any work
MAX_BATCHES = 10_000


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
    128, 160, ..., 480, 512, 640, ...

    Raises:
        TooManyBatchesError: the ranges hold more than :data:`MAX_BATCHES` batch sizes (counted with ``len(range)``,
            before any list is built).
    """
    ranges = [range(*r) for r in ranges]
    total = sum(_range_len(r) for r in ranges)
    if total > MAX_BATCHES:
        shown = ",".join(f"{r.start}:{r.stop}:{r.step}" for r in ranges[:4]) + (",..." if len(ranges) > 4 else "")
        raise TooManyBatchesError(
            f"batch ranges {shown} hold {total} batch sizes; at most {MAX_BATCHES} are read (one profile per batch "
            "per log): use a larger step or fewer ranges"
        )
    return list(chain.from_iterable(ranges))


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


#: stored bits per weight element: mx4 (e2m1) is 4 bits plus one 8-bit e8m0 scale per 32 elements = 4.25
_W_BYTES = {"bf16": 2.0, "fp8": 1.0, "mx4": 4.25 / 8}
PREDICTED_LABEL = "predicted (perfmodel.moe)"


def predicted_series(
    batches: Iterable[int],
    *,
    x_dtype: str,
    w_dtype: str,
    dim1: int = 5120,
    dim2: int = 8192,
    n_expts_tot: int = 128,
    n_expts_act: int = 4,
    tp: int = 1,
    ep: int = 1,
    gpu: GPULike = "H200",
    label: str = PREDICTED_LABEL,
    matmuls: Sequence[str] = ("w1", "w2"),
    experts_run: int | None = None,
) -> list[PerfData]:
    """One predicted :class:`PerfData` per batch for ``triton_kernels``' ``bench_mlp`` (``source="predicted"``).

    ``bench_mlp`` runs two ``matmul_ogs`` per batch: ``x @ w1`` with ``w1 [E/EP, dim1, dim2/TP]`` and ``h @ w2`` with
    ``w2 [E/EP, dim2/TP/2, dim1]`` (the SwiGLU halves the width), over ``batch * n_expts_act / EP`` routed rows
    (balanced over the local experts: :func:`perfmodel.moe.balanced_group_sizes`). Each is priced by
    :func:`perfmodel.moe.grouped_gemm` (kernel time) and the two are summed, as the measured point sums the matmul
    kernels. **Labelled estimates**: the grouped model was fitted on ``torch._grouped_mm`` (bf16) and
    ``torch._scaled_grouped_mm`` (fp8 rowwise), not on triton_kernels' ``matmul_ogs``; fp8 x fp8 is priced as the
    fp8 rowwise kernel (including its 16-row group padding); a mx4 weight is priced as the compute of the
    activation's dtype (bf16 without native mx4) with the weight's bytes at 4.25 bits per element (the model's
    memory term recomputed with those bytes). ``meta``: batch, x (tokens per expert), provenance, note.

    ``matmuls``: which of the two run ("w1", "w2"); ``experts_run``: how many experts' GEMMs run, each with
    ``batch * n_expts_act / n_expts_tot`` rows (default every local expert, ``n_expts_tot / EP``) — a profile
    of fewer expert GEMMs (the 4-launch fixture of ``tests/data/moe``) is priced with ``experts_run=4``.
    """
    from .. import moe

    if n_expts_tot % ep or dim2 % (2 * tp):
        raise PerfModelError(f"n_expts_tot={n_expts_tot} must divide by EP={ep} and dim2={dim2} by 2*TP={2 * tp}")
    if x_dtype not in ("bf16", "fp8") or w_dtype not in _W_BYTES:
        raise PerfModelError(f"x_dtype must be bf16 or fp8 and w_dtype bf16, fp8 or mx4; got {x_dtype}, {w_dtype}")
    E = n_expts_tot // ep if experts_run is None else experts_run
    if isinstance(E, bool) or not isinstance(E, int) or E < 1 or set(matmuls) - {"w1", "w2"} or not matmuls:
        raise PerfModelError(f"experts_run must be a positive int and matmuls some of w1, w2; got {E!r}, {matmuls!r}")
    both = {"w1": (dim1, dim2 // tp), "w2": (dim2 // tp // 2, dim1)}
    shapes = tuple(both[m] for m in matmuls)
    note = "torch grouped-GEMM model applied to triton_kernels matmul_ogs (not fitted on it)"
    if w_dtype == "mx4":
        note += "; mx4 weights: compute of the activation dtype, weight bytes at 4.25 bits/element"
    out = []
    for b in batches:
        g = moe.balanced_group_sizes(b * n_expts_act * E // n_expts_tot, E, 1)  # batch * k / EP rows by default
        t = flops = nbytes = 0.0
        prov = ""
        for K, N in shapes:
            r = moe.grouped_gemm(g, K, N, dtype=x_dtype, op="fwd", timing="kernel", gpu=gpu)
            dt, db = _mx4_adjusted(r, g, K, N, x_dtype, w_dtype)
            # FLOPs of the routed rows (as the profile counts them), not of the fp8 kernel's padded rows
            t, flops, nbytes, prov = t + dt, flops + 2.0 * float(g.sum()) * K * N, nbytes + db, r.provenance
        out.append(
            PerfData(
                time_s=t, flops=flops, bytes=nbytes, dtype=get_format(x_dtype), gpu=gpu, label=label,
                source="predicted",
                meta={"batch": b, "x": b * n_expts_act / n_expts_tot, "provenance": prov, "note": note},
            )
        )  # fmt: skip
    return out


def _mx4_adjusted(r: Any, g: Any, K: int, N: int, x_dtype: str, w_dtype: str) -> tuple[float, float]:
    """(seconds, bytes) of one grouped GEMM with the weights stored in ``w_dtype`` instead of ``x_dtype``: the
    model's memory term recomputed with the weight bytes (fixed + (compute^p + memory^p)^(1/p) inverted for its
    compute part); the roofline estimate (other GPUs) keeps its time and reports the bytes."""
    import numpy as np

    from ..moe import grouped as gm

    in_b = _W_BYTES[x_dtype]
    used = float(np.count_nonzero(r.rows))
    w_old, w_new = used * K * N * in_b, used * K * N * _W_BYTES[w_dtype]
    nbytes = float(r.bytes) - w_old + w_new
    if w_dtype == x_dtype or r.kernel == "roofline":
        return float(r.time_s), nbytes
    cal = gm.load_params()
    p = cal["params"][f"kernel/{'bf16' if x_dtype == 'bf16' else 'fp8'}/fwd"]
    from ..moe.grouped_kernel import memory_rate_bytes_per_s
    from ..specs.gpu import get_gpu

    bw = memory_rate_bytes_per_s(p, get_gpu(r.gpu), get_gpu(cal["gpu"]))
    fixed = p["t0_s"] + p["t_group_s"] * r.G
    q = p["p"]
    body = max(float(r.time_s) - fixed, 0.0)
    comp = max(body**q - (float(r.bytes) / bw) ** q, 0.0) ** (1 / q)
    return fixed + (comp**q + (nbytes / bw) ** q) ** (1 / q), nbytes


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
    predict: bool = False,
    dim1: int = 5120,
    dim2: int = 8192,
    predict_matmuls: Sequence[str] = ("w1", "w2"),
    predict_experts: int | None = None,
) -> Any:
    """Read every log's batch series and draw them on one batch-roofline chart; returns the Axes. ``predict``: add
    :func:`predicted_series` for the same batches (on the measured profiles' GPU, or ``gpu``)."""
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
    if predict:
        first = next(iter(series.values()))
        on = gpu if gpu is not None else first[0].gpu
        pred = predicted_series(
            batches, x_dtype=x_dtype, w_dtype=w_dtype, dim1=dim1, dim2=dim2, n_expts_tot=n_expts_tot,
            n_expts_act=n_expts_act, tp=tp, ep=ep, gpu=on, matmuls=predict_matmuls, experts_run=predict_experts,
        )  # fmt: skip
        series[PREDICTED_LABEL] = pred
        if verbose:
            print(f"[{PREDICTED_LABEL}] {pred[0].meta['note']}; {pred[0].meta['provenance']}")
            for p in pred:
                print(f"[{PREDICTED_LABEL}] batch {p.meta['batch']}: {p.tflops:.1f} TFLOP/s; {p.tbps:.2f} TB/s")
    if verbose:
        print("=" * 63)
    return batch_roofline(series, roofs=[e.name for e in entries if e.draw_roofline], title=f"{case} roofline")


def _range_len(r: range) -> int:
    """``len(r)``, also past ``sys.maxsize`` (where ``len`` raises OverflowError)."""
    try:
        return len(r)
    except OverflowError:
        return (r.stop - r.start + r.step - (1 if r.step > 0 else -1)) // r.step


def _ranges(text: str) -> list[tuple[int, int, int]]:
    try:
        out = [tuple(int(v) for v in part.split(":")) for part in text.split(",") if part.strip()]
    except ValueError:
        out = []
    if not out or any(len(r) != 3 or r[2] <= 0 for r in out):
        raise argparse.ArgumentTypeError(f"{text!r}: expected start:stop:step[,start:stop:step...]")
    try:
        batches_from_ranges(out)  # a usage error (exit 2) before any file is read
    except TooManyBatchesError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
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
    p.add_argument("--dim1", type=_positive_int, default=5120, help="hidden size (default 5120; used by --predict)")
    p.add_argument("--dim2", type=_positive_int, default=8192, help="expert FFN size (default 8192)")
    p.add_argument("--n-expts-tot", type=_positive_int, default=128, help="experts in total (default 128)")
    p.add_argument("--n-expts-act", type=_positive_int, default=4, help="experts per token (default 4)")
    p.add_argument("--tp", type=_positive_int, default=1, help="tensor parallel degree (default 1)")
    p.add_argument("--ep", type=_positive_int, default=1, help="expert parallel degree (default 1)")
    p.add_argument("--gpu", default=None, help="GPU name for the roofs when profiles lack device metadata")
    p.add_argument("--quiet", "-q", action="store_true", help="do not print per-batch numbers")
    p.add_argument(
        "--predict",
        action="store_true",
        help="also draw perfmodel.moe's predicted points for the same batches (a labelled estimate: the torch "
        "grouped-GEMM model applied to matmul_ogs)",
    )
    p.add_argument(
        "--predict-matmuls", default="w1,w2", help="which of bench_mlp's matmuls the profiles hold (default w1,w2)"
    )
    p.add_argument(
        "--predict-experts",
        type=_positive_int,
        default=None,
        help="expert GEMMs per profile (default every local expert, n-expts-tot / EP)",
    )
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
        if args.n_expts_act > args.n_expts_tot:
            raise PerfModelError(
                f"--n-expts-act {args.n_expts_act} is above --n-expts-tot {args.n_expts_tot}: a token is routed to at "
                f"most {args.n_expts_tot} distinct experts (valid: 1 to {args.n_expts_tot})"
            )
        if args.n_expts_tot % args.ep:
            raise PerfModelError(f"--n-expts-tot {args.n_expts_tot} is not divisible by --ep {args.ep}")
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
                predict=args.predict,
                dim1=args.dim1,
                dim2=args.dim2,
                predict_matmuls=tuple(m.strip() for m in args.predict_matmuls.split(",") if m.strip()),
                predict_experts=args.predict_experts,
            )
        out = save(ax, args.output, force=args.force, inputs=inputs)
    except PerfModelError as exc:
        print(f"perfmodel roofline: error: {exc}", file=sys.stderr)
        return 2  # an input error (docs/cli.md, "Exit status")
    if not args.quiet:
        print(f"wrote {'standard output' if to_stdout else out}", file=log)
    return 0
