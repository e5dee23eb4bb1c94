"""Write small, real Triton Proton profiles (``.hatchet``) for perfmodel's tests.

Each fixture is one Proton session (``proton.start(path, hook="triton")`` ... ``proton.finalize()``),
with kernels compiled and warmed up before the session starts so no compilation is profiled:

* ``triton_matmul``   a tiled ``tl.dot`` matmul, bf16 and fp8 e4m3 at three sizes, whose
                      ``launch_metadata`` reports flops16 / flops8 and bytes (A + B read, C written).
* ``vector_add``      a memory-bound Triton kernel, bytes = 3 · n · 4 (two fp32 reads, one write).
* ``cublas_scope``    ``torch.mm`` (cuBLAS, bf16) under ``proton.scope(name, {"flops16", "bytes"})``.
* ``float8_linear``   a ``torch.compile``'d torchao float8 (tensorwise) Linear fwd+bwd, two steps.

torch, triton and torchao are imported inside the functions.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._device import require_cuda

__all__ = ["FIXTURES", "write_fixtures"]

Log = Callable[[str], None]


def _matmul_metadata(grid: Any, kernel: Any, args: dict[str, Any]) -> dict[str, Any]:
    """Proton launch metadata: FLOP (1 FMA = 2) by operand width, bytes = A + B read + C written."""
    M, N, K = args["M"], args["N"], args["K"]
    a, b, c = args["a_ptr"], args["b_ptr"], args["c_ptr"]
    width = a.element_size() * 8
    dtype = "fp8" if width == 8 else "bf16"
    return {
        "name": f"matmul_{dtype} [M={M}, N={N}, K={K}]",
        f"flops{width}": 2.0 * M * N * K,
        "bytes": a.element_size() * M * K + b.element_size() * K * N + c.element_size() * M * N,
    }


def _add_metadata(grid: Any, kernel: Any, args: dict[str, Any]) -> dict[str, Any]:
    n = args["n"]
    return {"name": f"vector_add [n={n}]", "bytes": 3 * n * args["x_ptr"].element_size()}


@functools.cache
def _kernels() -> tuple[Any, Any]:
    import triton
    import triton.language as tl

    @triton.jit(launch_metadata=_matmul_metadata)
    def matmul_kernel(
        a_ptr,
        b_ptr,
        c_ptr,
        M,
        N,
        K,
        stride_am,
        stride_ak,
        stride_bk,
        stride_bn,
        stride_cm,
        stride_cn,
        BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr,
        BLOCK_K: tl.constexpr,
    ):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
        b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, (K + BLOCK_K - 1) // BLOCK_K):
            k_left = K - k * BLOCK_K
            a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
            b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))

    @triton.jit(launch_metadata=_add_metadata)
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

    return matmul_kernel, add_kernel


def triton_matmul(a: Any, b: Any, block: tuple[int, int, int] | None = None) -> Any:
    """C = A @ B (bf16 out) with the fixture's Triton kernel; A (M,K), B (K,N) any strides;
    ``block``: (BLOCK_M, BLOCK_N, BLOCK_K), default by operand width."""
    import torch

    matmul_kernel, _ = _kernels()
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty(M, N, device=a.device, dtype=torch.bfloat16)
    bm, bn, bk = block or ((128, 128, 128) if a.element_size() == 1 else (128, 128, 64))
    grid = (-(-M // bm), -(-N // bn))
    matmul_kernel[grid](
        a,
        b,
        c,
        M,
        N,
        K,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        BLOCK_M=bm,
        BLOCK_N=bn,
        BLOCK_K=bk,
        num_warps=8,
        num_stages=3,
    )
    return c


def vector_add(x: Any, y: Any) -> Any:
    import torch

    _, add_kernel = _kernels()
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(-(-n // 1024),)](x, y, out, n, BLOCK=1024)
    return out


def _session(path: Path, body: Callable[[], None]) -> Path:
    import triton.profiler as proton

    proton.start(str(path.with_suffix("")), hook="triton")
    body()
    import torch

    torch.cuda.synchronize()
    proton.finalize()
    return path


def _fixture_triton_matmul(torch: Any, path: Path, log: Log) -> dict[str, Any]:
    cases = []
    for n in (512, 1024, 2048):
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        cases.append(("bf16", a, b))
        a8 = a.to(torch.float8_e4m3fn)
        b8 = torch.randn(n, n, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn).t()  # K-major B
        cases.append(("fp8", a8, b8))
    errors = {}
    for dtype, a, b in cases:  # compile + check before profiling
        ref = a.float() @ b.float()
        c = triton_matmul(a, b).float()
        errors[f"{dtype}_{a.shape[0]}"] = float((c - ref).norm() / ref.norm())

    def body() -> None:
        for _ in range(3):
            for _, a, b in cases:
                triton_matmul(a, b)

    _session(path, body)
    return {"relative_error": errors, "launches_per_kernel": 3}


def _fixture_vector_add(torch: Any, path: Path, log: Log) -> dict[str, Any]:
    xs = [(torch.randn(n, device="cuda"), torch.randn(n, device="cuda")) for n in (1 << 20, 1 << 26)]
    for x, y in xs:
        torch.testing.assert_close(vector_add(x, y), x + y)

    def body() -> None:
        for _ in range(3):
            for x, y in xs:
                vector_add(x, y)

    _session(path, body)
    return {"launches_per_kernel": 3}


def _fixture_cublas_scope(torch: Any, path: Path, log: Log) -> dict[str, Any]:
    import triton.profiler as proton

    mats = []
    for M, K, N in ((4096, 4096, 4096), (8192, 8192, 8192)):
        mats.append(
            (
                M,
                K,
                N,
                torch.randn(M, K, device="cuda", dtype=torch.bfloat16),
                torch.randn(K, N, device="cuda", dtype=torch.bfloat16),
            )
        )
        torch.mm(mats[-1][3], mats[-1][4])

    def body() -> None:
        for M, K, N, a, b in mats:
            for _ in range(3):
                with proton.scope(
                    f"cublas_bf16 [M={M}, N={N}, K={K}]",
                    {"flops16": 2.0 * M * K * N, "bytes": 2.0 * (M * K + K * N + M * N)},
                ):
                    torch.mm(a, b)

    _session(path, body)
    return {"launches_per_scope": 3}


def _fixture_float8_linear(torch: Any, path: Path, log: Log) -> dict[str, Any]:
    import triton.profiler as proton
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    M, K, N = 4096, 4096, 4096
    model = torch.nn.Sequential(torch.nn.Linear(K, N, bias=False, device="cuda", dtype=torch.bfloat16))
    convert_to_float8_training(model, config=Float8LinearConfig.from_recipe_name("tensorwise"))
    compiled = torch.compile(model)
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    grad_out = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)

    def step() -> None:
        x.grad = None
        model.zero_grad(set_to_none=True)
        compiled(x).backward(grad_out)

    t0 = time.perf_counter()
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - t0

    def body() -> None:
        for i in range(2):
            with proton.scope(
                f"float8_linear_tensorwise_step{i} [M={M}, N={N}, K={K}]", {"flops8": 3 * 2.0 * M * K * N}
            ):
                step()
                torch.cuda.synchronize()

    _session(path, body)
    return {"M": M, "K": K, "N": N, "recipe": "tensorwise", "steps": 2, "compile_and_warmup_s": compile_s}


FIXTURES: dict[str, Callable[[Any, Path, Log], dict[str, Any]]] = {
    "triton_matmul": _fixture_triton_matmul,
    "vector_add": _fixture_vector_add,
    "cublas_scope": _fixture_cublas_scope,
    "float8_linear": _fixture_float8_linear,
}


def write_fixtures(
    out_dir: str | Path, *, prefix: str = "h200", names: tuple[str, ...] = tuple(FIXTURES), log: Log = print
) -> dict[str, Any]:
    """Write ``{prefix}_proton_{name}.hatchet`` for each fixture into ``out_dir``; returns, per
    fixture, its file name, size and checks (or the error it raised: one failing fixture does not
    stop the others)."""
    torch = require_cuda()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {}
    for name in names:
        path = out / f"{prefix}_proton_{name}.hatchet"
        t0 = time.perf_counter()
        try:
            info = FIXTURES[name](torch, path, log)
            written = path if path.exists() else next(out.glob(f"{path.stem}*"), None)
            info.update(file=written.name if written else None, size_bytes=written.stat().st_size if written else None)
        except Exception as exc:  # one broken fixture must not lose the others
            info = {"error": f"{type(exc).__name__}: {exc}"}
        info["seconds"] = time.perf_counter() - t0
        summary[name] = info
        log(f"fixture {name}: {info}")
    return summary
