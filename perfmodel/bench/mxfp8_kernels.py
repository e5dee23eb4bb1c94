"""Time torchao 0.17's mxfp8 MoE helper kernels on the GPU at hand: the scale re-layouts and the 1x32 casts.

torchao's mxfp8 grouped GEMM (``prototype/moe_training/mxfp8_grouped_mm.py``) runs, around its three
``torch._scaled_grouped_mm`` calls, kernels that are not GEMMs: 1x32-block quantization of the activations,
the weights and the output gradient (dim0 and dim1), and re-layouts of the e8m0 scales into the blocked layout
the tensor cores read, per group (``triton_mx_block_rearrange_2d_M_groups``, ``..._2d_K_groups``,
``..._per_group_3d`` in ``prototype/moe_training/kernels/mxfp8/quant.py``). The re-layouts are Triton kernels
defined on any GPU with Triton, so they run on a Hopper GPU as written; the casts' Triton kernels
(``prototype/mx_formats/kernels.py``) are defined by torchao only on sm100, so this bench asks torchao to define
them anyway (``--force-mx-casts``: ``torchao.utils.is_sm_at_least_100`` patched before import; recorded in the
output) and records a failure if they do not compile here. The CUDA-only kernels torchao prefers on Blackwell
(``mxfp8_quantize_cuda_3d``, the dim1 CUDA cast, ``mx_block_rearrange_2d_M_groups_cuda``) cannot run on Hopper and
are not timed.

    python -m perfmodel.bench.mxfp8_kernels --out DIR [--budget-s 90] [--force-mx-casts]

Writes ``DIR/mxfp8_kernels.json``: one record per (kernel, shape, groups) with ``triton.testing.do_bench`` event
time (L2 flushed, warmup 25 / rep 100 ms: do_bench's defaults) and the bytes the kernel reads and writes. torch,
triton and torchao are imported inside the functions.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import PerfModelError
from ._device import select_cases

__all__ = ["CASES", "Mxfp8BenchError", "cases", "main", "run"]

SCHEMA = "perfmodel.bench.mxfp8_kernels/1"
WARMUP_MS = 25.0  # do_bench's defaults
REP_MS = 100.0
BLOCK = 32  # the MX block (elements per e8m0 scale)

#: (kernel, rows, cols, groups): rows x cols is the high-precision tensor the scales belong to (tokens x K for the
#: activations, N x tokens for the K-groups case, experts x N x K for the 3-D weights, where groups = experts).
#: Token totals 16384-131072 (torchtitan issue 2086 ran 131072 tokens, top-1), K / N from DeepSeek-V3-16B
#: (2048, 1408), DeepSeek-V3 (7168, 2048) and Llama 4 (5120, 8192); groups 8 and 64.
CASES: tuple[tuple[str, int, int, int], ...] = (
    *(("rearrange_2d_K_groups", n, m, g) for n in (1408, 2048, 7168) for m in (16384, 131072) for g in (8, 64)),
    *(("rearrange_2d_M_groups", m, k, g) for k in (1408, 2048, 7168) for m in (16384, 131072) for g in (8, 64)),
    *(("rearrange_per_group_3d", n, k, e) for (n, k) in ((1408, 2048), (2048, 1408), (8192, 5120)) for e in (8, 64)),
    *(("cast_dim0", m, k, 1) for k in (1408, 2048, 7168) for m in (16384, 131072)),
    *(("cast_dim1", m, k, 1) for k in (1408, 2048, 7168) for m in (16384, 131072)),
)


class Mxfp8BenchError(PerfModelError, ValueError):
    """A bad argument to the mxfp8 kernel bench."""


def cases(names: Sequence[str] | None = None) -> list[tuple[str, int, int, int]]:
    """The planned cases, all or those of the kernels named."""
    return select_cases(CASES, names, Mxfp8BenchError)


def _ends(torch: Any, total: int, groups: int, unit: int) -> Any:
    """Balanced group end offsets (int32, cuda) of ``total`` rows, each group a multiple of ``unit``."""
    per = total // groups // unit * unit
    ends = [per * (i + 1) for i in range(groups - 1)] + [total]
    return torch.tensor(ends, dtype=torch.int32, device="cuda")


def _call(torch: Any, kernel: str, rows: int, cols: int, groups: int) -> tuple[Callable[[], Any], float]:
    """The timed call and the bytes it moves (read + written, the blocked-layout padding counted as written)."""
    q = __import__("torchao.prototype.moe_training.kernels.mxfp8.quant", fromlist=["quant"])
    u8 = torch.uint8
    if kernel == "rearrange_2d_K_groups":  # scales (N, tokens / 32), groups along the scale columns
        s = torch.randint(0, 255, (rows, cols // BLOCK), dtype=u8, device="cuda")
        ends = _ends(torch, cols // BLOCK, groups, 1)
        return (lambda: q.triton_mx_block_rearrange_2d_K_groups(s, ends)), 2.0 * s.numel()
    if kernel == "rearrange_2d_M_groups":  # scales (tokens, K / 32), groups along the rows
        s = torch.randint(0, 255, (rows, cols // BLOCK), dtype=u8, device="cuda")
        ends = _ends(torch, rows, groups, BLOCK)
        return (lambda: q.triton_mx_block_rearrange_2d_M_groups(s, ends)), 2.0 * s.numel()
    if kernel == "rearrange_per_group_3d":  # weight scales (E, N, K / 32)
        s = torch.randint(0, 255, (groups, rows, cols // BLOCK), dtype=u8, device="cuda")
        return (lambda: q.triton_mx_block_rearrange_per_group_3d(s)), 2.0 * s.numel()
    k = __import__("torchao.prototype.mx_formats.kernels", fromlist=["kernels"])
    x = torch.randn(rows, cols, dtype=torch.bfloat16, device="cuda")
    moved = rows * cols * (2 + 1 + 1 / BLOCK)  # bf16 in, e4m3 out, one e8m0 per 32
    if kernel == "cast_dim0":
        return (lambda: k.triton_to_mxfp8_dim0(x, inner_block_size=BLOCK)), moved
    if kernel == "cast_dim1":
        return (lambda: k.triton_to_mxfp8_dim1(x, inner_block_size=BLOCK)), moved
    raise Mxfp8BenchError(f"unknown kernel {kernel!r}")


def _force_mx_casts() -> None:
    """Let torchao define its mx_formats Triton casts on a pre-sm100 GPU (it gates them on sm100)."""
    import importlib
    import sys

    import torchao.utils as tu

    tu.is_sm_at_least_100 = lambda: True  # read by torchao.prototype.mx_formats.kernels at import time
    mod = sys.modules.get("torchao.prototype.mx_formats.kernels")
    if mod is not None:  # imported already (by ``import torchao``): define its gated branch now
        importlib.reload(mod)


def run(
    out: Path, *, budget_s: float = 90.0, force_mx_casts: bool = False, names: Sequence[str] | None = None
) -> dict[str, Any]:
    """Time every case (in order, stopping after ``budget_s`` seconds) and write ``out/mxfp8_kernels.json``."""
    from ._device import bench, device_meta, require_cuda

    torch = require_cuda()
    import triton

    if force_mx_casts:
        _force_mx_casts()
    import torchao

    out.mkdir(parents=True, exist_ok=True)
    records: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for kernel, rows, cols, groups in cases(names):
        if time.perf_counter() - t0 > budget_s:
            records.append({"kernel": kernel, "rows": rows, "cols": cols, "groups": groups, "skipped": "budget"})
            continue
        rec: dict[str, Any] = {"kernel": kernel, "rows": rows, "cols": cols, "groups": groups}
        try:
            fn, moved = _call(torch, kernel, rows, cols, groups)
            fn()
            torch.cuda.synchronize()
            rec.update(bench(fn, warmup_ms=WARMUP_MS, rep_ms=REP_MS), bytes=moved)
            rec["bytes_per_s"] = moved / rec["time_s"]
        except Exception as exc:  # a kernel that does not run here is a result, recorded
            rec["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
            torch.cuda.synchronize()
        records.append(rec)
        print(json.dumps(rec), flush=True)
    meta = {
        "schema": SCHEMA,
        **device_meta(torch, triton),
        "torchao": torchao.__version__,
        "force_mx_casts": force_mx_casts,
        "timing": f"triton.testing.do_bench warmup {WARMUP_MS} ms, rep {REP_MS} ms, L2 flushed; median",
        "command": "python -m perfmodel.bench.mxfp8_kernels",
    }
    doc = {"meta": meta, "records": records}
    (out / "mxfp8_kernels.json").write_text(json.dumps(doc, indent=1))
    return doc


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m perfmodel.bench.mxfp8_kernels", description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument("--budget-s", type=float, default=90.0, help="stop starting cases after this many seconds")
    p.add_argument("--force-mx-casts", action="store_true", help="define torchao's sm100-gated Triton casts here")
    p.add_argument("--kernels", default=None, help="comma list of kernels (default: all)")
    args = p.parse_args(argv)
    if not args.budget_s > 0:
        raise Mxfp8BenchError(f"--budget-s must be positive, got {args.budget_s}")
    names = args.kernels.split(",") if args.kernels else None
    doc = run(args.out, budget_s=args.budget_s, force_mx_casts=args.force_mx_casts, names=names)
    ok = sum("time_s" in r for r in doc["records"])
    print(f"mxfp8_kernels: {ok}/{len(doc['records'])} timed -> {args.out / 'mxfp8_kernels.json'}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    from perfmodel.bench._device import run_cli

    raise SystemExit(run_cli(main))
