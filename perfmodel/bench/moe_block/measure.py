"""GPU phases: time, kernels, pieces."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .block import _rel, build_block, convert_fp8, permute_plan, routing_indices
from .config import ALIGN, PIECE_GEMMS, PROFILE_ITERS, RECIPES, REP_MS, SKEW_ALPHA, WARMUP_MS, MoEBlockError
from .plan import BlockItem, estimate_memory_bytes, fits_memory, rep_ms_for
from .results import _after_error, _error_fields
from .shapes import max_rows, padded_group_sizes

__all__ = [
    "measure_kernels",
    "measure_pieces",
    "measure_time",
    "piece_fns",
]

# ---- GPU phases -------------------------------------------------------------------------------------------------


def _bench(fn: Callable[[], Any], rep_ms: float = REP_MS) -> dict[str, float]:
    from .._device import bench

    return bench(fn, warmup_ms=WARMUP_MS, rep_ms=rep_ms)


def _utc() -> str:
    """Now, UTC, to the millisecond (aligns a record with the nvidia-smi log of its run)."""
    import datetime

    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


def _prepared(torch: Any, item: BlockItem, recipe: str, device: str = "cuda") -> tuple[Any, Any, Any, dict[str, Any]]:
    """Block, input (requires grad), output gradient and the routing facts of ``item``, on ``device``."""
    blk = build_block(torch, item.cfg, recipe, device=device, dtype=torch.bfloat16)
    idx = routing_indices(torch, item.cfg, item.tokens, item.routing)
    gen = torch.Generator(device=device).manual_seed(1)
    x = torch.randn(item.tokens, item.cfg.dim, device=device, dtype=torch.bfloat16, generator=gen)
    x.requires_grad_(True)
    g = torch.randn(item.tokens, item.cfg.dim, device=device, dtype=torch.bfloat16, generator=gen)
    if idx is None:  # natural routing: the counts the router gives on this input
        with torch.no_grad():
            _, idx = blk.route(x)
        idx = idx.cpu()
    else:
        blk.forced = idx.to(device)
    return blk, x, g, {"idx": idx}


def _routing_facts(torch: Any, item: BlockItem, idx: Any, recipe: str) -> dict[str, Any]:
    c = item.cfg
    counts = torch.bincount(idx.reshape(-1), minlength=c.experts).tolist()
    total = max_rows(item.tokens, c.top_k, c.experts, ALIGN[recipe])
    return {"counts": counts, "group_rows": padded_group_sizes(counts, ALIGN[recipe], total), "rows": total,
            "align": ALIGN[recipe], "routed_rows": item.tokens * c.top_k}  # fmt: skip


def _fwd_bwd_fns(torch: Any, blk: Any, x: Any, g: Any) -> tuple[Callable[[], Any], Callable[[], Any]]:
    params = [p for p in blk.parameters() if p.requires_grad]

    def fwd() -> Any:
        return blk(x)

    def fwd_bwd() -> None:
        x.grad = None
        for p in params:
            p.grad = None
        blk(x).backward(g)

    return fwd, fwd_bwd


def _peak_bytes(torch: Any, fn: Callable[[], Any]) -> tuple[int, int, float]:
    """Peak and starting allocated bytes of one call of ``fn``, and its wall seconds (synchronized)."""
    import time

    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return int(torch.cuda.max_memory_allocated()), int(base), time.perf_counter() - t0


def _base_record(item: BlockItem, recipe: str) -> dict[str, Any]:
    c = item.cfg
    return {
        "id": item.id, "model": c.name, "tokens": item.tokens, "routing": item.routing, "recipe": recipe,
        "dim": c.dim, "inter": c.inter, "experts": c.experts, "top_k": c.top_k, "shared_inter": c.shared_inter,
        "router_experts": c.router_experts, "score_func": c.score_func, "compiled": False,
        "skew_alpha": SKEW_ALPHA if item.routing == "skewed" else None,
        "expert_flops_fwd": item.expert_flops_fwd(recipe), "shared_flops_fwd": item.shared_flops_fwd(),
    }  # fmt: skip


def measure_time(item: BlockItem, recipes: Sequence[str] = RECIPES, min_reps: int = 1) -> list[dict[str, Any]]:
    """do_bench of fwd and fwd+bwd for each recipe (bf16 first; fp8 converts the same block in place, so the
    weights are identical and no second copy is held), each timing at least ``min_reps`` runs (:func:`rep_ms_for`
    of the fwd+bwd call's wall time; the forward is timed with the same ``rep``). Each record carries the UTC start
    and end of its do_bench calls (``t_start_utc``, ``t_end_utc``) and the ``rep_ms`` used. A failing recipe is
    recorded and the next one still runs."""
    from .._device import require_cuda

    torch = require_cuda()
    recs: list[dict[str, Any]] = []
    blk, x, g, facts = _prepared(torch, item, "bf16")
    ref_out = None
    for recipe in recipes:
        rec = _base_record(item, recipe) | _routing_facts(torch, item, facts["idx"], recipe)
        try:
            if not fits_memory(item, recipe):
                rec.update(status="skipped_memory", est_memory_bytes=estimate_memory_bytes(item, recipe))
                recs.append(rec)
                continue
            if recipe == "fp8_rowwise":
                rec["converted"] = convert_fp8(torch, blk)
            elif recipe != "bf16":
                raise MoEBlockError(f"unknown recipe {recipe!r}; valid: {', '.join(RECIPES)}")
            fwd, fwd_bwd = _fwd_bwd_fns(torch, blk, x, g)
            with torch.no_grad():
                out = blk(x).float()
            if ref_out is None:
                ref_out = out
            else:
                rec["rel_err_vs_bf16"] = _rel(torch, out, ref_out)
            del out
            fwd_bwd()
            peak, base, call_s = _peak_bytes(torch, fwd_bwd)
            rep_ms = rep_ms_for(call_s, min_reps)
            rec.update(peak_memory_bytes=peak, memory_before_bytes=base, rep_ms=rep_ms, t_start_utc=_utc())
            f = _bench(fwd, rep_ms)
            fb = _bench(fwd_bwd, rep_ms)
            rec.update(status="ok", t_end_utc=_utc())
            for key, r in (("fwd_s", f), ("fwd_bwd_s", fb)):
                rec.update({key: r["time_s"], f"{key}_p20": r["time_s_p20"], f"{key}_p80": r["time_s_p80"],
                            f"{key}_mean": r["time_s_mean"], f"{key}_reps": r["reps"]})  # fmt: skip
        except Exception as exc:
            rec.update(_error_fields(exc))
            _after_error()
        recs.append(rec)
    del blk, x, g
    _after_error()
    return recs


def _profile_kernels(torch: Any, fn: Callable[[], Any], iters: int) -> dict[str, Any]:
    from torch.profiler import ProfilerActivity, profile

    from .._device import kernel_times_s

    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    per: dict[str, list[float]] = {}
    for name, _, dur in kernel_times_s(prof):
        per.setdefault(name, []).append(dur)
    kernels = sorted(
        ({"name": k, "time_s": sum(v) / iters, "calls": len(v) / iters} for k, v in per.items()),
        key=lambda r: -r["time_s"],
    )
    return {"iters": iters, "kernel_time_s": sum(k["time_s"] for k in kernels), "kernels": kernels}


def measure_kernels(item: BlockItem, recipes: Sequence[str] = RECIPES) -> list[dict[str, Any]]:
    """torch.profiler pass: kernels of the forward and of fwd+bwd per iteration, per recipe (no do_bench here)."""
    from .._device import require_cuda

    torch = require_cuda()
    recs = []
    blk, x, g, facts = _prepared(torch, item, "bf16")
    for recipe in recipes:
        rec = _base_record(item, recipe) | _routing_facts(torch, item, facts["idx"], recipe)
        try:
            if not fits_memory(item, recipe):
                rec.update(status="skipped_memory")
                recs.append(rec)
                continue
            if recipe == "fp8_rowwise":
                convert_fp8(torch, blk)
            fwd, fwd_bwd = _fwd_bwd_fns(torch, blk, x, g)
            rec.update(status="ok", fwd=_profile_kernels(torch, fwd, PROFILE_ITERS),
                       fwd_bwd=_profile_kernels(torch, fwd_bwd, PROFILE_ITERS))  # fmt: skip
        except Exception as exc:
            rec.update(_error_fields(exc))
            _after_error()
        recs.append(rec)
    del blk, x, g
    _after_error()
    return recs


def piece_fns(torch: Any, item: BlockItem, device: str = "cuda") -> tuple[dict[str, Callable[[], Any]], dict[str, Any]]:
    """The bf16 pieces of ``item``'s block as callables on ``device`` (each runs one piece alone on fixed inputs of
    the block's shapes and routing) and the record they are measured into (the block's facts, its routing's counts and
    group rows, and ``gemm_shapes``: each grouped GEMM piece's ``[op, K, N]`` in perfmodel.moe's convention,
    :data:`~.config.PIECE_GEMMS`).

    Pieces: ``router_fwd``, ``router_fwd_bwd``, ``permute_plan`` (the sync-free plan), ``permute`` (pad row + gather),
    the six grouped GEMMs (``gemm_w13_*`` for one of w1 / w3, ``gemm_w2_*``; fwd, dgrad, wgrad), ``swiglu_fwd``,
    ``unpermute`` (scores gathered, the rows scaled, zeros + ``index_add_``), and with a shared expert ``shared_fwd``
    and ``shared_fwd_bwd``."""
    F = torch.nn.functional
    blk, x, g, facts = _prepared(torch, item, "bf16", device)
    c = item.cfg
    with torch.no_grad():
        top, idx = blk.route(x)
        tok, pos, offs = permute_plan(torch, idx, c.experts, blk.align)
        xp = torch.cat([x, x.new_zeros(1, c.dim)]).index_select(0, tok)
        R = xp.shape[0]
        h1 = torch._grouped_mm(xp, blk.experts.w1.transpose(-2, -1), offs=offs)
        hh = F.silu(h1) * h1
        gen = torch.Generator(device=device).manual_seed(2)
        gy = torch.randn(R, c.dim, device=device, dtype=torch.bfloat16, generator=gen)
        gh = torch.randn(R, c.inter, device=device, dtype=torch.bfloat16, generator=gen)
    w1, w2 = blk.experts.w1.detach(), blk.experts.w2.detach()
    xd = x.detach()

    def router_fb() -> None:
        t, _ = blk.route(x)
        t.sum().backward()

    def unpermute() -> Any:
        s = torch.cat([top.reshape(-1), top.new_zeros(1)]).index_select(0, pos)
        return xd.new_zeros(item.tokens + 1, c.dim).index_add(0, tok, xp * s.to(xp.dtype)[:, None])[: item.tokens]

    pieces: dict[str, Callable[[], Any]] = {
        "router_fwd": lambda: blk.route(xd),
        "router_fwd_bwd": router_fb,
        "permute": lambda: torch.cat([xd, xd.new_zeros(1, c.dim)]).index_select(0, tok),
        "permute_plan": lambda: permute_plan(torch, idx, c.experts, blk.align),
        "gemm_w13_fwd": lambda: torch._grouped_mm(xp, w1.transpose(-2, -1), offs=offs),
        "gemm_w13_dgrad": lambda: torch._grouped_mm(gh, w1, offs=offs),
        "gemm_w13_wgrad": lambda: torch._grouped_mm(gh.t(), xp, offs=offs),
        "gemm_w2_fwd": lambda: torch._grouped_mm(hh, w2.transpose(-2, -1), offs=offs),
        "gemm_w2_dgrad": lambda: torch._grouped_mm(gy, w2, offs=offs),
        "gemm_w2_wgrad": lambda: torch._grouped_mm(gy.t(), hh, offs=offs),
        "swiglu_fwd": lambda: F.silu(h1) * h1,
        "unpermute": unpermute,
    }
    if blk.shared_experts is not None:
        se = blk.shared_experts

        def shared_fb() -> None:
            for p in se.parameters():
                p.grad = None
            se(x).backward(g)

        pieces["shared_fwd"] = lambda: se(xd)
        pieces["shared_fwd_bwd"] = shared_fb
    widths = {"dim": c.dim, "inter": c.inter}
    rec = _base_record(item, "bf16") | _routing_facts(torch, item, facts["idx"], "bf16")
    rec["gemm_shapes"] = {n: [op, widths[k], widths[nn]] for n, (op, k, nn) in PIECE_GEMMS.items()}
    return pieces, rec


def measure_pieces(item: BlockItem) -> list[dict[str, Any]]:
    """bf16 pieces of ``item``'s block alone (:func:`piece_fns`), each timed with do_bench (L2 flushed before every
    run): one record, ``pieces`` ``{name: {time_s, time_s_p20, time_s_p80, reps}}`` (or ``{error}`` for a piece that
    failed; the others still run)."""
    from .._device import require_cuda

    torch = require_cuda()
    pieces, rec = piece_fns(torch, item)
    rec.update(status="ok", pieces={})
    for name, fn in pieces.items():
        try:
            fn()
            r = _bench(fn)
            rec["pieces"][name] = {"time_s": r["time_s"], "time_s_p20": r["time_s_p20"],
                                   "time_s_p80": r["time_s_p80"], "reps": r["reps"]}  # fmt: skip
        except Exception as exc:
            rec["pieces"][name] = {"error": f"{type(exc).__name__}: {str(exc)[:500]}"}
    return [rec]
