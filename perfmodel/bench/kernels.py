"""GPU sweeps of single kernels: GEMMs (cuBLAS bf16, fp8 ``_scaled_mm``), copies and casts, launches.

Every time is a ``triton.testing.do_bench`` median (CUDA events, L2 flushed before each timed run)
unless the record's ``method`` says otherwise. Operands are random normal, never zeros (zeros run
faster than real data on Hopper). torch and triton are imported inside the functions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from ._device import bench, kernel_times_s, require_cuda, split_steps
from .dataset import DatasetWriter
from .plan import GEMM_FORMATS, GemmFormat, GemmSpec, bench_budget_ms, estimate_gemm_s

__all__ = ["check_gemm_accuracy", "run_cast", "run_copy", "run_gemm", "run_launch"]

Log = Callable[[str], None]


def _operand(torch: Any, rows: int, cols: int, major: str, dtype: Any) -> Any:
    """A (rows, cols) random-normal tensor, row-major (``r``) or column-major (``c``)."""
    if major == "r":
        return torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16).to(dtype)
    return torch.randn(cols, rows, device="cuda", dtype=torch.bfloat16).to(dtype).t()


def _gemm_case(torch: Any, spec: GemmSpec, fmt: GemmFormat) -> tuple[Callable[[], Any], tuple[Any, ...]]:
    """The callable that runs one GEMM of ``spec`` in ``fmt`` on fresh random operands, and the
    operands ``(a, b)`` or ``(a, b, scale_a, scale_b)``."""
    if fmt.dtype == "bf16":
        a = _operand(torch, spec.M, spec.K, spec.layout[0], torch.bfloat16)
        b = _operand(torch, spec.K, spec.N, spec.layout[1], torch.bfloat16)
        return (lambda: torch.mm(a, b)), (a, b)
    f8 = torch.float8_e4m3fn
    a = _operand(torch, spec.M, spec.K, "r", f8)  # _scaled_mm: A row-major, B column-major
    b = _operand(torch, spec.K, spec.N, "c", f8)
    if fmt.scaling == "tensorwise":
        sa = torch.tensor(0.75, device="cuda", dtype=torch.float32)
        sb = torch.tensor(1.25, device="cuda", dtype=torch.float32)
    elif fmt.scaling == "rowwise":
        sa = torch.rand(spec.M, 1, device="cuda", dtype=torch.float32) + 0.5
        sb = torch.rand(1, spec.N, device="cuda", dtype=torch.float32) + 0.5
    else:  # pragma: no cover - GEMM_FORMATS is fixed
        raise ValueError(f"unknown fp8 scaling {fmt.scaling!r}; valid: tensorwise, rowwise")
    return (lambda: torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)), (a, b, sa, sb)


def _gemm_fn(torch: Any, spec: GemmSpec, fmt: GemmFormat) -> Callable[[], Any]:
    return _gemm_case(torch, spec, fmt)[0]


def check_gemm_accuracy(n: int = 1024) -> dict[str, float]:
    """‖C − C_ref‖/‖C_ref‖ of each format on one random n³ GEMM (reference: float64 of the same
    quantized operands, times the scales), so a wrong operand layout or scale shows up as an error."""
    torch = require_cuda()
    torch.manual_seed(1)
    out = {}
    spec = GemmSpec(M=n, K=n, N=n, layout="rc")
    for fmt in GEMM_FORMATS:
        fn, ops = _gemm_case(torch, spec, fmt)
        c = fn().double()
        ref = ops[0].float().double() @ ops[1].float().double()
        if len(ops) == 4:
            ref = ref * ops[2].double() * ops[3].double()
        out[fmt.key] = float((c - ref).norm() / ref.norm())
    return out


def run_gemm(
    writer: DatasetWriter,
    specs: Sequence[GemmSpec],
    *,
    formats: Sequence[GemmFormat] = GEMM_FORMATS,
    warmup_ms: float = 1.0,
    rep_ms: float = 10.0,
    min_reps: int = 10,
    budget_s: float = 240.0,
    kernel_name_specs: int = 80,
    log: Log = print,
) -> dict[str, Any]:
    """Time every (spec, format); append ``op="gemm"`` records to ``writer``, flushing as it goes.
    Then, while time is left, run up to ``kernel_name_specs`` specs once more under torch.profiler
    to record which cuBLAS/CUTLASS kernel ran. Returns a summary for the meta block."""
    torch = require_cuda()
    torch.manual_seed(0)
    t0 = time.perf_counter()
    done = 0
    truncated = False
    index: dict[tuple[int, int, int, str, str], dict[str, Any]] = {}
    errors: list[dict[str, Any]] = []
    for i, spec in enumerate(specs):
        if time.perf_counter() - t0 > budget_s:
            truncated = True
            log(f"gemm: budget {budget_s:.0f}s spent after {i}/{len(specs)} shapes; stopping")
            break
        for fmt in formats:
            ran = spec.for_fp8() if fmt.dtype.startswith("fp8") else spec
            warm, rep = bench_budget_ms(
                estimate_gemm_s(ran, fmt), warmup_ms=warmup_ms, rep_ms=rep_ms, min_reps=min_reps
            )
            try:
                fn = _gemm_fn(torch, ran, fmt)
                t = bench(fn, warmup_ms=warm, rep_ms=rep)
            except (RuntimeError, ValueError) as exc:  # one unsupported shape must not end the sweep
                errors.append({"M": ran.M, "K": ran.K, "N": ran.N, "format": fmt.key, "error": str(exc)[:300]})
                log(f"gemm: {ran} {fmt.key} failed: {str(exc)[:200]}")
                torch.cuda.empty_cache()
                continue
            rec = {
                "op": "gemm",
                "M": ran.M,
                "K": ran.K,
                "N": ran.N,
                "dtype": fmt.dtype,
                "scaling": fmt.scaling,
                "layout": ran.layout,
                "out_dtype": "bf16",
                "family": spec.family,
                "role": spec.role,
                "model": spec.model,
                **t,
                "tflops": ran.flops / t["time_s"] / 1e12,
            }
            if (ran.M, ran.K, ran.N) != (spec.M, spec.K, spec.N):
                rec["requested"] = {"M": spec.M, "K": spec.K, "N": spec.N, "layout": spec.layout}
            index[(ran.M, ran.K, ran.N, ran.layout, fmt.key)] = writer.add(rec)
            del fn
            done += 1
        if i % 25 == 0:
            writer.flush()
            log(f"gemm: {i + 1}/{len(specs)} shapes, {done} records, {time.perf_counter() - t0:.0f}s")
    writer.flush()
    seconds_timing = time.perf_counter() - t0
    named = 0
    if kernel_name_specs and not truncated:
        named = _record_kernel_names(
            torch, writer, specs, formats, index, kernel_name_specs, deadline=t0 + budget_s, log=log
        )
    torch.cuda.empty_cache()
    return {
        "records": done,
        "truncated": truncated,
        "seconds_timing": seconds_timing,
        "seconds_total": time.perf_counter() - t0,
        "errors": errors[:50],
        "n_errors": len(errors),
        "kernel_names_for_specs": named,
        "warmup_ms": warmup_ms,
        "rep_ms": rep_ms,
        "min_reps": min_reps,
    }


def _record_kernel_names(
    torch: Any,
    writer: DatasetWriter,
    specs: Sequence[GemmSpec],
    formats: Sequence[GemmFormat],
    index: dict[tuple[int, int, int, str, str], dict[str, Any]],
    limit: int,
    *,
    deadline: float,
    log: Log,
) -> int:
    """Run the first ``limit`` square/llm specs once per format under torch.profiler and store the GPU
    kernel names in the matching records (``kernels``: list of names, in launch order)."""
    from torch.profiler import ProfilerActivity, profile

    chosen = [s for s in specs if s.family in ("square", "llm") and (s.family == "square" or s.M in (256, 4096))]
    chosen += [s for s in specs if s.family in ("odd", "random")][: max(0, limit - len(chosen))]
    n = 0
    for spec in chosen[:limit]:
        if time.perf_counter() > deadline:
            break
        runs = []
        for fmt in formats:
            ran = spec.for_fp8() if fmt.dtype.startswith("fp8") else spec
            try:
                fn = _gemm_fn(torch, ran, fmt)
                fn()
            except (RuntimeError, ValueError):
                continue
            runs.append((fn, (ran.M, ran.K, ran.N, ran.layout, fmt.key)))
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for fn, _ in runs:
                fn()
                torch.cuda.synchronize()
                time.sleep(0.002)
        groups = split_steps(kernel_times_s(prof), len(runs))
        if len(groups) == len(runs):
            for (_, key), group in zip(runs, groups, strict=True):
                if key in index:
                    index[key]["kernels"] = [name for name, _, _ in group]
                    index[key]["kernel_time_s_profiler"] = sum(d for _, _, d in group)
            n += 1
    writer.flush()
    log(f"gemm: kernel names recorded for {n} shapes")
    return n


def run_copy(writer: DatasetWriter, sizes: Sequence[int], *, log: Log = print) -> None:
    """Device-to-device copies of ``size`` bytes: ``op="copy"``, ``bytes`` = read + written = 2·size."""
    torch = require_cuda()
    for size in sizes:
        src = torch.randn(size // 4, device="cuda", dtype=torch.float32)
        dst = torch.empty_like(src)
        t_est = 2 * size / 4e12
        t = bench(
            lambda dst=dst, src=src: dst.copy_(src), warmup_ms=max(2.0, 1e3 * t_est), rep_ms=max(20.0, 20e3 * t_est)
        )
        writer.add(
            {
                "op": "copy",
                "size_bytes": size,
                "bytes": 2 * size,
                **t,
                "bytes_per_s": 2 * size / t["time_s"],
                "method": "do_bench",
                "api": "Tensor.copy_",
            }
        )
        del src, dst
    writer.flush()
    best = max(r["bytes_per_s"] for r in writer.records if r["op"] == "copy")
    log(f"copy: best {best / 1e12:.2f} TB/s (read + write)")


def run_cast(writer: DatasetWriter, elements: Sequence[int], *, log: Log = print) -> None:
    """bf16 -> fp8 e4m3 casts: ``op="cast"``. ``bytes`` counts one read of the bf16 input (2 B) and
    one write of the fp8 output (1 B) per element, plus a second read where the variant must find the
    amax first (two passes). Variants::

        eager_to            x_bf16 -> x_fp8                               (1 kernel, no scale)
        compiled_scale      x_bf16 * s -> x_fp8                           (torch.compile)
        compiled_tensorwise x_bf16 -> amax -> s -> x_fp8                  (torch.compile; 2 passes)
        compiled_rowwise    x_bf16 -> amax per row -> s_row -> x_fp8      (torch.compile; 1 pass/row)
    """
    torch = require_cuda()
    f8 = torch.float8_e4m3fn
    fmax = torch.finfo(f8).max

    def tensorwise(x):
        s = fmax / x.abs().amax().float().clamp(min=1e-12)
        return (x.float() * s).clamp(-fmax, fmax).to(f8), s

    def rowwise(x):
        s = fmax / x.abs().amax(dim=-1, keepdim=True).float().clamp(min=1e-12)
        return (x.float() * s).clamp(-fmax, fmax).to(f8), s

    variants = {
        "eager_to": (lambda x, s: x.to(f8), 3),
        "compiled_scale": (torch.compile(lambda x, s: (x * s).to(f8)), 3),
        "compiled_tensorwise": (torch.compile(lambda x, s: tensorwise(x)), 5),
        "compiled_rowwise": (torch.compile(lambda x, s: rowwise(x)), 3),
    }
    for n in elements:
        x = torch.randn(n // 8192, 8192, device="cuda", dtype=torch.bfloat16)
        s = torch.tensor(2.0, device="cuda", dtype=torch.bfloat16)
        for name, (fn, bytes_per_element) in variants.items():
            t0 = time.perf_counter()
            try:
                fn(x, s)
                torch.cuda.synchronize()
            except Exception as exc:  # a compile failure must not lose the copies
                log(f"cast {name} at {n} elements failed: {type(exc).__name__}: {str(exc)[:300]}")
                continue
            first_call_s = time.perf_counter() - t0
            t_est = bytes_per_element * n / 3.5e12
            t = bench(lambda fn=fn, x=x, s=s: fn(x, s), warmup_ms=max(2.0, 1e3 * t_est), rep_ms=max(20.0, 20e3 * t_est))
            writer.add(
                {
                    "op": "cast",
                    "variant": name,
                    "from_dtype": "bf16",
                    "to_dtype": "fp8_e4m3",
                    "elements": n,
                    "shape": [n // 8192, 8192],
                    "bytes": bytes_per_element * n,
                    "bytes_one_pass": 3 * n,
                    **t,
                    "bytes_per_s": bytes_per_element * n / t["time_s"],
                    "first_call_s": first_call_s,
                    "method": "do_bench",
                }
            )
        del x
    writer.flush()
    log(
        "cast: "
        + ", ".join(
            f"{r['variant']}@{r['elements']}: {r['time_s'] * 1e6:.0f} us"
            for r in writer.records
            if r["op"] == "cast" and r["elements"] == max(elements)
        )
    )


def run_launch(writer: DatasetWriter, *, n: int = 200, log: Log = print) -> None:
    """GPU time of 1-element kernels (``torch`` in-place add, and a Triton kernel), three ways:
    the profiler's kernel duration (median), ``do_bench`` (event to event, median), and a CUDA graph
    of ``n`` launches replayed, divided by ``n`` (back-to-back cost per kernel)."""
    torch = require_cuda()
    import triton
    import triton.language as tl
    from torch.profiler import ProfilerActivity, profile

    @triton.jit
    def add_one(x_ptr):
        tl.store(x_ptr, tl.load(x_ptr) + 1.0)

    x = torch.randn(1, device="cuda", dtype=torch.float32)
    kernels = {"torch_add_1elem": lambda: x.add_(1.0), "triton_1elem": lambda: add_one[(1,)](x)}
    for name, fn in kernels.items():
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(n):
                fn()
            torch.cuda.synchronize()
        durations = sorted(d for _, _, d in kernel_times_s(prof))
        if durations:
            writer.add(
                {
                    "op": "launch",
                    "kernel": name,
                    "method": "profiler_kernel_duration",
                    "time_s": durations[len(durations) // 2],
                    "samples": len(durations),
                }
            )
        t = bench(fn, warmup_ms=5, rep_ms=50)
        writer.add({"op": "launch", "kernel": name, "method": "do_bench", **t})
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            fn()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(n):
                fn()
        graph.replay()
        torch.cuda.synchronize()
        t = bench(graph.replay, warmup_ms=5, rep_ms=50)
        writer.add(
            {
                "op": "launch",
                "kernel": name,
                "method": "cuda_graph_per_kernel",
                "time_s": t["time_s"] / n,
                "graph_kernels": n,
            }
        )
        # wall clock of eager back-to-back launches (host-bound): n launches / n
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        writer.add(
            {
                "op": "launch",
                "kernel": name,
                "method": "eager_wall_per_launch",
                "time_s": (time.perf_counter() - t0) / n,
            }
        )
    writer.flush()
    log(
        "launch: "
        + ", ".join(
            f"{r['kernel']}/{r['method']}: {r['time_s'] * 1e6:.2f} us" for r in writer.records if r["op"] == "launch"
        )
    )
