"""The grouped-GEMM calls on the device: operands, weights and scales, the call of each variant and of the dense
fp8 neighbours, the layout a call actually ran with, and the session's metadata (op schemas, nvidia-smi, GPU
warm-up). torch is imported only inside these functions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..dataset import collect_meta
from ..dataset import nvidia_smi as _smi
from .config import BF16, FP8
from .items import NeighbourItem, _parse_layout, offsets

__all__ = []


def _mat(torch: Any, rows: int, cols: int, major: str, dtype: Any) -> Any:
    """A random ``(rows, cols)`` matrix, row-major (contiguous) or column-major (the transpose of a contiguous
    ``(cols, rows)``), drawn in bf16 then cast; never zeros (zeros run faster on Hopper)."""
    if major == "row":
        return torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16).to(dtype)
    return torch.randn(cols, rows, device="cuda", dtype=torch.bfloat16).to(dtype).t()


def _mat3(torch: Any, G: int, rows: int, cols: int, major: str, dtype: Any) -> Any:
    """``[G, rows, cols]``: row-major per group, or the transpose of a contiguous ``[G, cols, rows]``."""
    if major == "row":
        return torch.randn(G, rows, cols, device="cuda", dtype=torch.bfloat16).to(dtype)
    return torch.randn(G, cols, rows, device="cuda", dtype=torch.bfloat16).to(dtype).transpose(-2, -1)


def _weights(torch: Any, form: str, fmt: str, layout: str, K: int, N: int, G: int) -> Any:
    """The fwd form's 3D B operand (None for wgrad)."""
    if form != "fwd":
        return None
    dtype = torch.float8_e4m3fn if fmt == FP8 else torch.bfloat16
    return _mat3(torch, G, K, N, _parse_layout(layout)[1], dtype)


def _make_call(
    torch: Any,
    form: str,
    fmt: str,
    layout: str,
    K: int,
    N: int,
    rows: Sequence[int],
    w: Any = None,
) -> tuple[Callable[[], Any], dict[str, Any]]:
    """The callable running one grouped GEMM on fresh random operands, and its operands (``a``, ``b``, ``offs`` and
    for fp8 ``scale_a``, ``scale_b``). ``w``: the fwd form's B operand, shared by the items of a shape."""
    a_major, b_major = _parse_layout(layout)
    G = len(rows)
    T = sum(rows)
    dtype = torch.float8_e4m3fn if fmt == FP8 else torch.bfloat16
    offs = torch.tensor(offsets(rows), device="cuda", dtype=torch.int32)
    if form == "fwd":
        a = _mat(torch, T, K, a_major, dtype)
        b = w if w is not None else _mat3(torch, G, K, N, b_major, dtype)
    else:
        a = _mat(torch, N, T, a_major, dtype)
        b = _mat(torch, T, K, b_major, dtype)
    ops: dict[str, Any] = {"a": a, "b": b, "offs": offs}
    if fmt == BF16:
        return (lambda: torch._grouped_mm(a, b, offs=offs)), ops
    if form == "fwd":
        sa = torch.rand(T, device="cuda", dtype=torch.float32) + 0.5
        sb = torch.rand(G, N, device="cuda", dtype=torch.float32) + 0.5
    else:
        sa = torch.rand(G * N, device="cuda", dtype=torch.float32) + 0.5
        sb = torch.rand(G * K, device="cuda", dtype=torch.float32) + 0.5
    ops.update(scale_a=sa, scale_b=sb)

    def call() -> Any:
        return torch._scaled_grouped_mm(a, b, sa, sb, offs=offs, out_dtype=torch.bfloat16, use_fast_accum=True)

    return call, ops


def _op_schemas(torch: Any) -> dict[str, Any]:
    """The ops' schemas as this torch states them (``None`` where an op is missing)."""
    out: dict[str, Any] = {}
    for name in ("_grouped_mm", "_scaled_grouped_mm", "_scaled_mm", "_scaled_grouped_mm_v2"):
        try:
            op = getattr(torch.ops.aten, name)
            out[name] = [str(getattr(op, o)._schema) for o in op.overloads()]
        except (AttributeError, RuntimeError):
            out[name] = None
    fn = getattr(torch.nn.functional, "scaled_grouped_mm", None)
    out["torch.nn.functional.scaled_grouped_mm"] = fn is not None
    out["torch.nn.functional.grouped_mm"] = getattr(torch.nn.functional, "grouped_mm", None) is not None
    return out


def _meta(command: str) -> dict[str, Any]:
    """``collect_meta`` plus the GPU's UUID and ``nvidia-smi -L``."""
    meta = collect_meta(command)
    meta["gpu_uuid"] = _smi(["--query-gpu=uuid", "--format=csv,noheader", "-i", "0"])
    meta["nvidia_smi_L"] = _smi(["-L"])
    return meta


def _profiler_enabled(torch: Any) -> bool:
    try:
        return bool(torch.autograd._profiler_enabled())
    except AttributeError:  # pragma: no cover - older torch
        return False


def _neighbour_call(torch: Any, item: NeighbourItem) -> tuple[Callable[[], Any], tuple[Any, ...]]:
    f8 = torch.float8_e4m3fn
    x = torch.randn(item.M, item.K, device="cuda", dtype=torch.bfloat16).to(f8)
    w = torch.randn(item.N, item.K, device="cuda", dtype=torch.bfloat16).to(f8)
    if item.scaling == "tensorwise":
        sa = torch.tensor(0.75, device="cuda", dtype=torch.float32)
        sb = torch.tensor(1.25, device="cuda", dtype=torch.float32)
    else:
        sa = torch.rand(item.M, 1, device="cuda", dtype=torch.float32) + 0.5
        sb = torch.rand(1, item.N, device="cuda", dtype=torch.float32) + 0.5
    wt = w.t()
    return (lambda: torch._scaled_mm(x, wt, sa, sb, out_dtype=torch.bfloat16)), (x, wt, sa, sb)


_ERRORS = (RuntimeError, ValueError, TypeError)


def _actual_layout(ops: Mapping[str, Any]) -> dict[str, Any]:
    """Shapes and strides (elements) of the operands as torch holds them (overrides the expected ones)."""
    return {
        "a_shape": list(ops["a"].shape),
        "a_strides": list(ops["a"].stride()),
        "b_shape": list(ops["b"].shape),
        "b_strides": list(ops["b"].stride()),
    }
