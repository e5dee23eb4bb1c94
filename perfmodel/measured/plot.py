"""Roofline charts of :class:`PerfData` points, predicted and measured on one set of axes.

matplotlib is imported inside the functions (``pip install ".[plot]"`` from a checkout; without it a
:class:`~perfmodel.errors.MissingExtraError` says so); without a display
the Agg backend is selected before pyplot is first imported. Axes units: arithmetic intensity in
FLOP/byte, performance in TFLOP/s (1e12 FLOP/s), bandwidth in TB/s (1e12 B/s).
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import FileRefusedError, PerfModelError, require
from ..formats import FormatLike, get_format
from ..perfdata import PerfData
from ..specs.gpu import GPULike, get_gpu

__all__ = ["batch_roofline", "image_format", "image_formats", "roofline", "save"]

_ROOF_COLORS = ("tab:gray", "tab:brown", "tab:olive", "tab:cyan", "tab:pink")
_POINT_COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")
_MARKERS = "osD^vP*X"


def _pyplot() -> Any:
    matplotlib = require("matplotlib", "a roofline chart")

    headless = sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    if headless and "matplotlib.pyplot" not in sys.modules and "MPLBACKEND" not in os.environ:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _axes(ax: Any, figsize: tuple[float, float], dpi: int) -> Any:
    if ax is not None:
        return ax
    _, ax = _pyplot().subplots(figsize=figsize, dpi=dpi)
    return ax


def _values(x: Any, what: str, label: str) -> list[float]:
    import numpy as np

    try:
        return [float(v) for v in np.ravel(np.asarray(x, dtype=float))]
    except (TypeError, ValueError):
        raise PerfModelError(f"cannot plot {label!r}: {what} is {x!r}; substitute numbers for symbols") from None


def roofline(
    points: Iterable[PerfData] = (),
    gpu: GPULike | None = None,
    ax: Any = None,
    *,
    formats: Sequence[FormatLike] | None = None,
    achievable: bool = False,
    title: str | None = None,
) -> Any:
    """Log-log roofline: TFLOP/s against arithmetic intensity (FLOP/byte).

    Draws the memory slope (``intensity * bandwidth``), a compute roof per format (those of the
    points, or ``formats``), the ridge point of each (``peak / bandwidth`` FLOP/B), optionally the
    achievable roofs (``gpu.efficiency`` fractions, dotted), then the points: predicted hollow,
    measured filled, one legend entry per label. Array-valued points plot as one series.

    Args:
        points: :class:`PerfData` to plot (may be empty: roofs only).
        gpu: the roofs' GPU; default the first point's.
        ax: axes to draw on; default a new 7x5 in figure.
        formats: formats whose compute roofs to draw (default: the points' formats).
        achievable: also draw ``peak * efficiency`` roofs.
        title: axes title (default "<GPU> roofline").

    Returns:
        The matplotlib ``Axes``.

    Raises:
        PerfModelError: no GPU given and no points, a point with zero bytes or symbolic values.
    """
    points = list(points)
    for p in points:
        if not isinstance(p, PerfData):
            raise PerfModelError(f"roofline() plots PerfData points, got {type(p).__name__}")
    if gpu is None:
        if not points:
            raise PerfModelError("roofline() needs points or gpu= to know which roofs to draw")
        gpu = points[0].gpu
    spec = get_gpu(gpu)
    fmts = [get_format(f) for f in formats] if formats is not None else []
    for p in points:
        if formats is None and p.dtype not in fmts:
            fmts.append(p.dtype)
    fmts = [f for f in fmts if spec.supports(f)] or [get_format("bf16")]
    ax = _axes(ax, (7, 5), 120)

    xs = [x for p in points for x in _values(p.opint, "the intensity", p.label)]
    ridges = [spec.ridge_flops_per_byte(f) for f in fmts]
    lo = min([*xs, *ridges]) / 8
    hi = max([*xs, *ridges]) * 8
    bw_t = spec.mem_bw_bytes_per_s * 1e-12
    top = max(spec.peak_flops_per_s(f) for f in fmts) * 1e-12
    ax.plot([lo, top / bw_t], [lo * bw_t, top], "-", color="0.25", lw=1.5, label=f"{spec.name} memory  {bw_t:.2f} TB/s")
    for k, (f, ridge) in enumerate(sorted(zip(fmts, ridges, strict=True), key=lambda t: -t[1])):
        peak_t = spec.peak_flops_per_s(f) * 1e-12
        line = ax.plot(
            [ridge, hi],
            [peak_t, peak_t],
            "-",
            lw=1.5,
            color=_ROOF_COLORS[k % len(_ROOF_COLORS)],
            label=f"{f.name} peak  {peak_t:.0f} TFLOP/s (ridge {ridge:.0f} FLOP/B)",
        )[0]
        ax.plot([ridge], [peak_t], "D", color=line.get_color(), ms=5)
        if achievable:
            a_peak = spec.achievable_flops_per_s(f) * 1e-12
            a_bw = spec.achievable_mem_bw_bytes_per_s * 1e-12
            ax.plot(
                [lo, a_peak / a_bw, hi],
                [lo * a_bw, a_peak, a_peak],
                ":",
                color=line.get_color(),
                lw=1.2,
                label=f"{f.name} achievable  {a_peak:.0f} TFLOP/s, {a_bw:.2f} TB/s",
            )

    for n, p in enumerate(points):
        x = _values(p.opint, "the intensity", p.label)
        y = _values(p.tflops, "TFLOP/s", p.label)
        color = _POINT_COLORS[n % len(_POINT_COLORS)]
        measured = p.source == "measured"
        ax.scatter(
            x,
            y,
            s=48,
            marker=_MARKERS[n % len(_MARKERS)],
            linewidths=1.5,
            zorder=3,
            facecolors=color if measured else "none",
            edgecolors=color,
            label=f"{p.label or f'point {n}'} ({p.source}, {p.dtype.name})",
        )
        if len(x) > 1:
            ax.plot(x, y, "-", lw=0.8, alpha=0.6, color=color)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ymin = min([lo * bw_t, *(v for p in points for v in _values(p.tflops, "TFLOP/s", p.label))])
    ax.set_ylim(ymin / 2, top * 2)
    ax.set_xlabel("arithmetic intensity  [FLOP/byte]")
    ax.set_ylabel("performance  [TFLOP/s]")
    ax.set_title(title if title is not None else f"{spec.name} roofline")
    ax.grid(True, which="both", ls=":", lw=0.5)
    ax.legend(loc="lower right", fontsize=7, frameon=False)
    return ax


def batch_roofline(
    series: Mapping[str, Sequence[PerfData]],
    ax: Any = None,
    *,
    roofs: Iterable[str] | None = None,
    title: str | None = None,
    xlabel: str = "batch size (toks/expt)",
    x_key: str = "x",
    ylim_min: float | None = None,
) -> Any:
    """The MoE benchmark view: TFLOP/s against tokens per expert, one ``+`` series per log.

    Each :class:`PerfData` carries its x value in ``meta[x_key]`` (``batch * n_expts_act /
    n_expts_tot``). For each name in ``roofs`` (default: every series) the roof at each point is
    drawn: memory-bound ``intensity * bandwidth`` (TFLOP/s) while below the compute peak, the peak
    after the knee (interpolated in x); a roof all on one side of the knee draws one segment.
    Labels, limits and styling follow the Triton MoE roofline script, except that the y axis starts
    at 100 TFLOP/s only when no point lies below it (``ylim_min`` overrides) and the legend goes
    where it covers the fewest points: the script's fixed floor hid slow batches.

    Returns:
        The matplotlib ``Axes``.

    Raises:
        PerfModelError: an empty series, or a point without ``meta[x_key]``.
    """
    names = list(series)
    roofs = set(names if roofs is None else roofs)
    ax = _axes(ax, (7, 5), 120)
    all_x: list[float] = []
    all_y: list[float] = []
    peaks: list[float] = []
    for n, name in enumerate(names):
        color = f"C{n % 10}"
        pts = list(series[name])
        if not pts:
            raise PerfModelError(f"batch_roofline: series {name!r} is empty")
        missing = [p.label for p in pts if x_key not in p.meta]
        if missing:
            raise PerfModelError(f"batch_roofline: points {missing[:3]} of {name!r} have no meta[{x_key!r}]")
        pts.sort(key=lambda p: p.meta[x_key])
        xs = [float(p.meta[x_key]) for p in pts]
        all_x += xs
        peaks.append(pts[0].max_tflops)
        if name in roofs:
            prefix = "" if len(roofs) == 1 else f"{name} "
            _draw_roof(ax, xs, pts, prefix, color)
        ys = [float(p.tflops) for p in pts]
        all_y += ys
        ax.scatter(xs, ys, marker="+", color=color, label=name, zorder=3)
    xmin, xmax = min(all_x), max(all_x)
    dx = 0.05 * (xmax - xmin) if xmax > xmin else 1.0
    ax.set_xlim(xmin - dx, xmax + dx)
    if ylim_min is None:
        ylim_min = 100.0 if min(all_y) >= 100.0 else 0.0
    ax.set_ylim(ylim_min, max(peaks) + 500)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("performance  [TFLOP/s]")
    if title is not None:
        ax.set_title(title)
    ax.legend(frameon=False, loc="best")
    ax.grid(True, which="both", ls=":", lw=0.5)
    return ax


def _draw_roof(ax: Any, xs: list[float], pts: list[PerfData], prefix: str, color: str) -> None:
    peak = pts[0].max_tflops
    bw = pts[0].max_tbps
    mem = [float(p.opint) * bw for p in pts]  # memory roof at each point's intensity, TFLOP/s
    below = [i for i, y in enumerate(mem) if y < peak]
    knee_x = None
    if below and below[-1] + 1 < len(xs):  # crossing between point k and k+1: interpolate in x
        k = below[-1]
        t = (peak - mem[k]) / (mem[k + 1] - mem[k])
        knee_x = xs[k] + t * (xs[k + 1] - xs[k])
    if below:
        bx = [xs[i] for i in range(below[-1] + 1)] + ([knee_x] if knee_x is not None else [])
        by = [min(mem[i], peak) for i in range(below[-1] + 1)] + ([peak] if knee_x is not None else [])
        ax.plot(bx, by, "--", color=color, lw=1.2, label=f"{prefix}BW-bound  ({bw:.1f} TB/s)")
    if not below or knee_x is not None:
        cx = [knee_x if knee_x is not None else xs[0], xs[-1]]
        ax.plot(cx, [peak, peak], "-.", color=color, lw=1.2, label=f"{prefix}Compute-bound  ({peak:.0f} TFLOP/s)")


def image_formats() -> dict[str, str]:
    """The image formats matplotlib writes, ``{extension: description}`` (``png``, ``pdf``, ``svg``, ...)."""
    _pyplot()
    from matplotlib.backend_bases import FigureCanvasBase

    return dict(FigureCanvasBase.get_supported_filetypes())


def image_format(path: str | os.PathLike[str]) -> str:
    """The image format of an output path: its extension, lower-cased (``"-"``, standard output: png).

    Raises:
        FileRefusedError: an extension matplotlib does not write (the message lists the ones it does).
    """
    from .._files import is_stdout, short

    name = os.fspath(path)
    if is_stdout(name):
        return "png"
    ext = Path(name).suffix.lower().lstrip(".")
    formats = image_formats()
    if ext not in formats:
        shown = repr(short(ext, 40)) if ext else "none"
        raise FileRefusedError(
            f"{name}: unknown image format (extension {shown}); matplotlib writes "
            f"{', '.join(sorted(formats))}. Name the file e.g. roofline.png or roofline.pdf."
        )
    return ext


def save(
    fig_or_ax: Any,
    path: str | os.PathLike[str],
    *,
    dpi: int | None = None,
    close: bool = True,
    force: bool = False,
    inputs: Sequence[str | os.PathLike[str]] = (),
) -> Path:
    """Write a figure (or the figure of an ``Axes``) to ``path``, format from the extension; closes it
    unless ``close=False``. Returns the path.

    The image is rendered in memory and written atomically (:func:`perfmodel._files.write_atomic`):
    an existing file is replaced only with ``force=True``, a path that is one of ``inputs`` is
    refused, a missing folder is an error (never created), ``"-"`` writes PNG to standard output.

    Raises:
        FileRefusedError: unknown extension (lists matplotlib's), file exists (without ``force``), is
            an input, or its folder does not exist.
    """
    from .._files import check_output, write_atomic

    fmt = image_format(path)
    check_output(path, force=force, inputs=inputs)  # before rendering
    fig = fig_or_ax if hasattr(fig_or_ax, "savefig") else fig_or_ax.figure
    buffer = io.BytesIO()
    try:
        fig.tight_layout()
        fig.savefig(buffer, dpi=dpi, format=fmt)
    finally:
        if close:
            _pyplot().close(fig)
    return write_atomic(path, buffer.getvalue(), force=force, inputs=inputs)
