"""Selftest: the block against its float64 reference."""

from __future__ import annotations

from typing import Any

from .block import _rel, build_block, convert_fp8, reference_forward, routing_indices
from .config import BlockConfig
from .measure import _bench, _fwd_bwd_fns

__all__ = [
    "SELFTEST_CFG",
    "SELFTEST_CFG_SIGMOID",
    "SELFTEST_TOL",
    "run_selftest",
    "selftest_case",
]

# ---- selftest -----------------------------------------------------------------------------------------------------

SELFTEST_CFG = BlockConfig("tiny", 64, 32, 8, 2, 48, "softmax", 8, "selftest")
SELFTEST_CFG_SIGMOID = BlockConfig("tiny_sigmoid", 64, 48, 4, 1, 0, "sigmoid", 6, "selftest")


def selftest_case(torch: Any, cfg: BlockConfig, routing: str, device: str, tokens: int = 40,
                  loop: bool | None = None) -> dict[str, Any]:  # fmt: skip
    """Block (float32 on CPU, bf16 on GPU) against :func:`reference_forward` in float64: output and gradients of
    x and w1 (relative errors); the grouped GEMM where it runs, else the per-expert loop."""
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    if loop is None:
        loop = not _grouped_mm_runs(torch, device, dtype)
    blk = build_block(torch, cfg, "bf16", device=device, dtype=dtype, seed=3, loop=loop)
    idx = routing_indices(torch, cfg, tokens, routing, seed=5)
    x = torch.randn(tokens, cfg.dim, device=device, dtype=dtype, generator=torch.Generator(device).manual_seed(7))
    x.requires_grad_(True)
    if idx is None:
        _, idx = blk.route(x.detach())
    else:
        blk.forced = idx.to(device)
    out = blk(x)
    out.float().square().sum().backward()
    xr = x.detach().double().requires_grad_(True)
    w1r = blk.experts.w1.detach().double().requires_grad_(True)
    ref = reference_forward(torch, blk, xr, idx.to(device), w1=w1r)
    ref.square().sum().backward()
    return {
        "model": cfg.name, "routing": routing, "device": device, "dtype": str(dtype), "loop": loop,
        "out_rel_err": _rel(torch, out.detach(), ref.detach()),
        "x_grad_rel_err": _rel(torch, x.grad, xr.grad),
        "w1_grad_rel_err": _rel(torch, blk.experts.w1.grad, w1r.grad),
        "all_finite": bool(torch.isfinite(out).all()),
    }  # fmt: skip


def _grouped_mm_runs(torch: Any, device: str, dtype: Any) -> bool:
    try:
        a = torch.ones(16, 16, device=device, dtype=dtype)
        b = torch.ones(2, 16, 16, device=device, dtype=dtype)
        torch._grouped_mm(a, b.transpose(-2, -1), offs=torch.tensor([8, 16], device=device, dtype=torch.int32))
        return True
    except (RuntimeError, AttributeError, NotImplementedError, TypeError):
        return False


SELFTEST_TOL = {"cpu": 1e-5, "cuda": 3e-2}  # float32 vs float64; bf16 operands (METHOD.md: 1e-3..1e-2, per tensor)


def run_selftest(device: str | None = None) -> dict[str, Any]:
    """Self-test on tiny shapes: CPU (float32) or GPU (bf16 grouped GEMM; fp8 conversion if torchao imports).
    Returns ``{"ok": bool, "cases": [...], "fp8": {...}}``; a missing torchao is reported in ``fp8`` but does not
    fail the selftest (the bf16 block is still checked)."""
    import torch

    dev = device or ("cuda" if torch.cuda.is_available() else "cpu")
    tol = SELFTEST_TOL["cpu" if dev == "cpu" else "cuda"]
    cases = []
    for cfg, routing in ((SELFTEST_CFG, "balanced"), (SELFTEST_CFG, "skewed"), (SELFTEST_CFG_SIGMOID, "natural")):
        c = selftest_case(torch, cfg, routing, dev)
        c["ok"] = c["all_finite"] and max(c["out_rel_err"], c["x_grad_rel_err"], c["w1_grad_rel_err"]) < tol
        cases.append(c)
    res: dict[str, Any] = {"device": dev, "tolerance": tol, "cases": cases}
    ok = all(c["ok"] for c in cases)
    if dev != "cpu":
        res["fp8"] = _selftest_fp8(torch)
        ok = ok and (res["fp8"].get("ok", False) or res["fp8"].get("error_type") == "ModuleNotFoundError")
    res["ok"] = ok
    return res


def _selftest_fp8(torch: Any) -> dict[str, Any]:
    """fp8 conversion on a small real-shaped block: converted params, output/grad error vs bf16, one timing."""
    cfg = BlockConfig("small", 1024, 512, 8, 2, 512, "softmax", 8, "selftest")
    item_tokens = 2048
    try:
        blk = build_block(torch, cfg, "bf16", device="cuda", dtype=torch.bfloat16)
        blk.forced = routing_indices(torch, cfg, item_tokens, "skewed").cuda()
        x = torch.randn(item_tokens, cfg.dim, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        ref = blk(x)
        ref.float().square().sum().backward()
        gref = blk.experts.w2.grad.float().clone()
        blk.zero_grad(set_to_none=True)
        conv = convert_fp8(torch, blk)
        out = blk(x)
        out.float().square().sum().backward()
        r = {"converted": conv, "out_rel_err": _rel(torch, out.detach(), ref.detach()),
             "w2_grad_rel_err": _rel(torch, blk.experts.w2.grad.float(), gref)}  # fmt: skip
        _, fwd_bwd = _fwd_bwd_fns(torch, blk, x, torch.randn_like(x))
        r["fwd_bwd_s"] = _bench(fwd_bwd)["time_s"]
        r["ok"] = sorted(conv) == ["experts.w1", "experts.w2", "experts.w3"] and r["out_rel_err"] < 0.1
        return r
    except Exception as exc:
        return {"ok": False, "error_type": type(exc).__name__, "error": str(exc)[:2000]}
