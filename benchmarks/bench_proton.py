"""Time ``perfmodel.measured.proton.read(...).perfdata()`` on a deterministic 100 000-kernel profile
against plain ``json.load`` of the same file (the floor any JSON reader pays, timed in the same run), and,
where ``triton.profiler.viewer`` and llnl-hatchet import, the official viewer on the same
work (the seed's ``viewer.read`` + ``gf.filter(... IS LEAF)`` + sums).

    python benchmarks/bench_proton.py [--kernels 100000] [--repeat 3] [--viewer-kernels 10000] [--deep-levels 10000]

``--deep-levels`` also times a profile whose one kernel sits under that many nested scopes: JSON nested
deeper than Python's recursion limit, which perfmodel parses iteratively (no recursion-limit or stack
change); 0 skips it.

Target (issue #35 item 9): ``--kernels 1000000`` (a 212 MB file) read in under 4 s on a quiet core; the
ratio to ``json.load`` says how much of that is ours on a loaded machine, and the time beyond the paused
``json.load`` is printed as our part (the file is written a block at a time, so a 10^6-kernel profile never
sits in memory as one JSON string). perfmodel is imported before any timing, as ``json`` is: the figures
are the read, not the import.

The viewer is much slower, so by default it runs on a smaller profile and its time is scaled
linearly to the full size (the output says so). ``--viewer-kernels 0`` skips it.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

_H200 = {"arch": "90", "bus_width": 6016, "clock_rate": 1980000, "memory_clock_rate": 3201000, "num_sms": 132}


TARGET_S_PER_MILLION = 4.0


def make_profile(n_kernels: int, *, seed: int = 0) -> list[Any]:
    """``n_kernels`` kernel nodes (half ``_matmul_*``), 100 per block scope, 10 blocks per layer,
    a ``__proton_launch_metadata`` frame per block; 8 H200 devices. Deterministic in ``seed``."""
    rng = random.Random(seed)

    def node(name: str, metrics: dict[str, Any], children: list[Any]) -> dict[str, Any]:
        return {"frame": {"name": name, "type": "function"}, "metrics": metrics, "children": children}

    layers: dict[int, list[Any]] = {}
    for s in range((n_kernels + 99) // 100):
        kernels = []
        for k in range(min(100, n_kernels - 100 * s)):
            name = f"_matmul_ogs_NNT_bf16xbf16_{k % 7}" if k % 2 == 0 else f"_reduce_{k % 5}"
            kernels.append(
                node(
                    name,
                    {
                        "time (ns)": rng.randrange(1_000, 100_000),
                        "count": rng.randrange(1, 9),
                        "device_id": str(s % 8),
                        "device_type": "CUDA",
                        "flops16": rng.randrange(1, 1 << 40),
                        "bytes": rng.randrange(1, 1 << 30),
                    },
                    [],
                )
            )
        kernels.append(node("__proton_launch_metadata", {}, []))
        layers.setdefault(s // 10, []).append(node(f"block_{s}", {}, kernels))
    model = node("model", {}, [node(f"layer_{i}", {}, b) for i, b in layers.items()])
    hints = {"bytes": 0, "count": 0, "flops16": 0, "time (ns)": 0}
    return [node("ROOT", hints, [model]), {"CUDA": {str(i): _H200 for i in range(8)}}]


def write_profile(path: Path, n_kernels: int, *, seed: int = 0) -> None:
    """:func:`make_profile` written to ``path`` as JSON a layer at a time (the same text as
    ``json.dumps(make_profile(...))``, without holding it as one string)."""
    tree, devices = make_profile(n_kernels, seed=seed)
    model = tree["children"][0]
    layers, model["children"] = model["children"], ["@layers@"]
    head, tail = json.dumps(tree).split('"@layers@"')  # the text around the model's children
    with path.open("w") as out:
        out.write("[" + head)
        for i, layer in enumerate(layers):
            out.write((", " if i else "") + json.dumps(layer))
        out.write(tail + ", " + json.dumps(devices) + "]")


def deep_profile_text(levels: int) -> str:
    """A profile with one kernel under ``levels`` nested scopes, as JSON text (json.dumps would recurse)."""
    head = '{"frame": {"name": "scope", "type": "function"}, "metrics": {}, "children": ['
    metrics = {"time (ns)": 1000, "count": 1, "device_id": "0", "device_type": "CUDA", "flops16": 2, "bytes": 4}
    leaf = json.dumps({"frame": {"name": "_matmul_deep", "type": "function"}, "metrics": metrics, "children": []})
    return "[" + head * levels + leaf + "]}" * levels + ", " + json.dumps({"CUDA": {"0": _H200}}) + "]"


def best_of(fn: Any, repeat: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def plain_json(path: Path) -> int:
    """``json.load`` of the file, the collector as Python leaves it (the reference every reader pays)."""
    with path.open() as f:
        return len(json.load(f))


def plain_json_no_gc(path: Path) -> int:
    """``json.load`` with the garbage collector paused, as :func:`perfmodel.measured.proton.read` does."""
    gc.disable()
    try:
        return plain_json(path)
    finally:
        gc.enable()


def ours(path: Path) -> tuple[float, float, float]:
    from perfmodel.measured import proton

    pd = proton.read(path).perfdata(r".*matmul.*", gpu="H200")  # gpu= : time the reader, not the table
    return pd.time_s * 1e9, pd.flops, pd.bytes


def ours_collector_on(path: Path) -> tuple[float, float, float]:
    """:func:`ours` with the garbage collector left running through the parse (the reader before issue #35)."""
    from perfmodel.measured import proton

    pd = proton._read(str(path), None).perfdata(r".*matmul.*", gpu="H200")
    return pd.time_s * 1e9, pd.flops, pd.bytes


def viewer(path: Path) -> tuple[float, float, float]:
    from triton.profiler import viewer as v

    gf, _, _, _ = v.read(str(path))
    df = gf.filter("MATCH ('*', c) WHERE c.'name' =~ '.*matmul.*' AND c IS LEAF").dataframe
    return float(df["time (ns)"].sum()), float(df["flops16"].sum()), float(df["bytes"].sum())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernels", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--viewer-kernels",
        type=int,
        default=10_000,
        help="profile size for the viewer (scaled to --kernels); 0 skips it",
    )
    parser.add_argument("--deep-levels", type=int, default=10_000, help="nesting of the deep profile; 0 skips it")
    args = parser.parse_args()
    from perfmodel.measured import proton  # noqa: F401  (imported before timing: the read is timed, not the import)

    with tempfile.TemporaryDirectory() as tmp:
        if args.deep_levels > 0:
            deep = Path(tmp) / "deep.hatchet"
            deep.write_text(deep_profile_text(args.deep_levels))
            t_deep, totals = best_of(lambda: ours(deep), args.repeat)
            print(
                f"perfmodel.measured.proton: 1 kernel under {args.deep_levels} nested scopes "
                f"({deep.stat().st_size / 1e6:.1f} MB): read+perfdata best of {args.repeat}: {t_deep:.3f} s"
            )
        path = Path(tmp) / "big.hatchet"
        write_profile(path, args.kernels)
        mb = path.stat().st_size / 1e6
        t_json, _ = best_of(lambda: plain_json(path), args.repeat)
        t_json_nogc, _ = best_of(lambda: plain_json_no_gc(path), args.repeat)
        t_ours, totals = best_of(lambda: ours(path), args.repeat)
        t_gc_on, _ = best_of(lambda: ours_collector_on(path), args.repeat)
        print(
            f"perfmodel.measured.proton: {args.kernels} kernels ({mb:.1f} MB): read+perfdata best of "
            f"{args.repeat}: {t_ours:.3f} s  [time {totals[0]:.0f} ns, flops {totals[1]:.4g}, "
            f"bytes {totals[2]:.4g}]"
        )
        print(
            f"the same read with the collector left on (as before issue #35): {t_gc_on:.3f} s "
            f"({t_gc_on / t_ours:.2f}x ours)"
        )
        print(f"json.load of the same file (same run): {t_json:.3f} s; with the collector paused: {t_json_nogc:.3f} s")
        print(
            f"ratio perfmodel / json.load: {t_ours / t_json:.2f}x  (/ paused json.load: {t_ours / t_json_nogc:.2f}x); "
            f"{t_ours / args.kernels * 1e6:.2f} us per kernel"
        )
        print(
            f"our part beyond the paused json.load (walk, perfdata, freeing the columns): "
            f"{t_ours - t_json_nogc:.3f} s, {(t_ours - t_json_nogc) / args.kernels * 1e6:.2f} us per kernel"
        )
        per_million = t_ours * 1e6 / args.kernels
        print(
            f"target < {TARGET_S_PER_MILLION:g} s per 10^6 kernels: {per_million:.2f} s "
            f"{'met' if per_million < TARGET_S_PER_MILLION else 'MISSED'}"
            + ("" if args.kernels == 1_000_000 else " (scaled linearly; run --kernels 1000000 for the figure itself)")
        )
        if args.viewer_kernels <= 0:
            return 0
        try:
            import hatchet  # noqa: F401
            import triton.profiler.viewer  # noqa: F401
        except Exception as exc:  # ImportError, or triton failing to initialise
            print(f"viewer: not measured ({type(exc).__name__}: {exc})")
            return 0
        n = min(args.viewer_kernels, args.kernels)
        small = Path(tmp) / "small.hatchet"
        small.write_text(json.dumps(make_profile(n)))
        t_view, v_totals = best_of(lambda: viewer(small), 1)
        t_small, o_totals = best_of(lambda: ours(small), args.repeat)
        scaled = t_view * args.kernels / n
        note = "" if n == args.kernels else f" (measured on {n} kernels: {t_view:.2f} s, scaled x{args.kernels / n:g})"
        print(f"triton viewer + hatchet: {scaled:.2f} s for {args.kernels} kernels{note}")
        print(
            f"ratio viewer / perfmodel: {scaled / t_ours:.0f}x  (same-size run on {n} kernels: {t_view / t_small:.0f}x)"
        )
        agree = all(abs(a - b) <= 1e-9 * max(abs(a), 1) for a, b in zip(v_totals, o_totals, strict=True))
        print(f"totals agree with the viewer on {n} kernels: {agree}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
