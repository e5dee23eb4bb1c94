"""Multi-GPU sweeps: NCCL collectives, and FSDP2 / tensor-parallel training steps of decoder stacks.

Launch with torchrun, all ranks on one host (written for 2 × H200 over NVLink)::

    torchrun --nproc-per-node 2 -m perfmodel.bench.dist collectives --out DIR [--budget-s 60] [--quick]
    torchrun --nproc-per-node 2 -m perfmodel.bench.dist train --out DIR [--budget-s 480] [--quick]
    python -m perfmodel.bench.dist plan --dry-run     # the plans and estimated seconds (no torch)
    python -m perfmodel.bench.dist summary --out DIR  # a table of what DIR holds (no torch)

Rank 0 writes ``DIR/collectives.json`` (op ``collective``) and ``DIR/train.json`` (op ``train_step``)
in the format of :mod:`.dataset`, flushed after every record.

Conventions (the NCCL-tests ones): the size of a collective, ``bytes``, is the full output tensor of an
all-gather, the full input of a reduce-scatter and the tensor of an all-reduce; ``algbw = bytes /
time_s``; ``busbw = algbw · (n−1)/n`` for all-gather and reduce-scatter and ``algbw · 2(n−1)/n`` for
all-reduce, n ranks. Times are CUDA-event times per call, the maximum over ranks of each iteration,
then median and 20th/80th percentiles over iterations.

NVLink SHARP / multicast stays off: :data:`SAFE_ENV` is forced into the environment before NCCL starts
(``NCCL_NVLS_ENABLE=0``, ``TORCH_SYMM_MEM_DISABLE_MULTICAST=1``, ``NVSHMEM_DISABLE_NVLS=1``); the
collectives never touch symmetric memory. Only the optional async-TP training configs (last in the
plan) enable symmetric memory for the TP group, guarded, with multicast disabled.

torch is imported inside the functions: importing this module (and the plan and summary commands)
touches neither torch nor a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ._dist_core import (
    COLLECTIVE_DTYPES,
    COLLECTIVE_OPS,
    LAYERS,
    CollectiveSpec,
    DistContext,
    TrainConfig,
    algbw,
    busbw,
    collective_plan,
    dry_run,
    gpu_activities,
    kernel_category,
    merge_intervals,
    overlap_summary,
    time_stats,
    train_plan,
)

__all__ = [
    "COLLECTIVE_DTYPES",
    "COLLECTIVE_OPS",
    "LAYERS",
    "SAFE_ENV",
    "CollectiveSpec",
    "DistContext",
    "TrainConfig",
    "algbw",
    "busbw",
    "collective_plan",
    "init_distributed",
    "main",
    "merge_intervals",
    "overlap_summary",
    "run_collectives",
    "time_stats",
    "train_plan",
]

Log = Callable[[str], None]

#: Forced into os.environ before the process group starts: never NVLink SHARP / multicast.
SAFE_ENV: Mapping[str, str] = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
_ENV_PREFIXES = ("NCCL_", "TORCH_NCCL_", "TORCH_SYMM_MEM", "NVSHMEM_", "CUDA_DEVICE_MAX_CONNECTIONS", "TORCH_DIST")


def enforce_safe_env() -> dict[str, str | None]:
    """Set :data:`SAFE_ENV` in ``os.environ``; returns the values that were there before (None: unset)."""
    before = {k: os.environ.get(k) for k in SAFE_ENV}
    os.environ.update(SAFE_ENV)
    return before


def init_distributed(device: str = "cuda", timeout_s: float = 180.0) -> DistContext:
    """Start the process group from torchrun's environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
    ``MASTER_ADDR/PORT``): NCCL on ``cuda:LOCAL_RANK`` (eager init), or gloo on CPU (tests).
    ``timeout_s``: NCCL watchdog timeout (a hung collective ends the process after this)."""
    import datetime

    env_before = enforce_safe_env()
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    timeout = datetime.timedelta(seconds=timeout_s)
    if device == "cuda":
        from ._device import require_cuda

        require_cuda()
        dev = torch.device("cuda", local)
        torch.cuda.set_device(dev)
        if not dist.is_initialized():
            dist.init_process_group("nccl", timeout=timeout, device_id=dev)
        backend = "nccl"
    else:
        dev = torch.device("cpu")
        if not dist.is_initialized():
            dist.init_process_group("gloo", timeout=timeout)
        backend = "gloo"
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"torch\.distributed")
    return DistContext(
        torch=torch, dist=dist, rank=rank, world=world, device=dev, backend=backend, env_before=env_before
    )


def _run_text(cmd: Sequence[str]) -> str | None:
    try:
        out = subprocess.run(list(cmd), capture_output=True, text=True, timeout=20, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.rstrip() or None


def dist_meta(ctx: DistContext, command: str) -> dict[str, Any]:
    """Dataset meta for a multi-GPU sweep: :func:`.dataset.collect_meta` plus world size, backend,
    NCCL version, the NCCL / symmetric-memory environment and ``nvidia-smi topo -m``."""
    from .dataset import collect_meta

    meta = collect_meta(command)
    nccl = None
    if ctx.cuda:
        try:
            v = ctx.torch.cuda.nccl.version()
            nccl = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
        except Exception:  # pragma: no cover - no NCCL in this build
            nccl = None
    meta.update(
        world_size=ctx.world,
        backend=ctx.backend,
        nccl_version=nccl,
        nccl_env={k: os.environ[k] for k in sorted(os.environ) if k.startswith(_ENV_PREFIXES)},
        safe_env=dict(SAFE_ENV),
        safe_env_found=ctx.env_before,
        topology=_run_text(["nvidia-smi", "topo", "-m"]) if ctx.cuda else None,
        gpu_names=[ctx.torch.cuda.get_device_name(i) for i in range(ctx.torch.cuda.device_count())] if ctx.cuda else [],
    )
    return meta


def command_line(argv: Sequence[str], world: int) -> str:
    """The command as launched: ``torchrun --nproc-per-node N -m perfmodel.bench.dist <args>``."""
    return f"torchrun --nproc-per-node {world} -m perfmodel.bench.dist " + shlex.join(list(argv))


# ---- runtime: collectives ----------------------------------------------------------------------

_SLEEP_CYCLES_PER_ITER = 100_000  # ~50 µs at 2 GHz: keeps the GPU busy while the CPU enqueues calls


def _collective_call(
    ctx: DistContext,
    op: str,
    nbytes: int,
    dtype: Any,
    *,
    as_uint8: bool = False,
    fill: bool = True,
    async_op: bool = False,
) -> Callable[[], Any]:
    """A closure running ``op`` once on fresh buffers of ``dtype`` (``nbytes`` per the module doc);
    ``as_uint8``: the buffers are passed as ``.view(torch.uint8)`` (same bytes, as torchao's float8
    all-gather sends them where the backend refuses float8); ``async_op``: the closure returns the
    collective's work handle (torch.distributed's ``async_op=True``) for the caller to wait on."""
    torch, dist = ctx.torch, ctx.dist
    n = nbytes // torch.empty((), dtype=dtype).element_size()
    shard = n // ctx.world

    def make(numel: int, random: bool) -> Any:
        if random and fill:
            t = torch.randn(numel, dtype=torch.bfloat16, device=ctx.device).to(dtype)
        else:
            t = torch.empty(numel, dtype=dtype, device=ctx.device)
        return t.view(torch.uint8) if as_uint8 else t

    if op == "all_gather_into_tensor":
        out, inp = make(n, False), make(shard, True)
        return lambda: dist.all_gather_into_tensor(out, inp, async_op=async_op)
    if op == "reduce_scatter_tensor":
        out, inp = make(shard, False), make(n, True)
        return lambda: dist.reduce_scatter_tensor(out, inp, async_op=async_op)
    if op == "all_reduce":
        buf = make(n, True)
        return lambda: dist.all_reduce(buf, async_op=async_op)
    raise ValueError(f"unknown collective {op!r}")


def timed_calls(ctx: DistContext, fn: Callable[[], Any], iters: int) -> tuple[list[float], float]:
    """Per-call seconds of ``iters`` back-to-back calls on this rank, and the mean call time from the
    first start to the last end. CUDA: an event pair around every call, all enqueued behind a GPU
    spin so that no host launch gap enters; CPU: ``perf_counter`` around every call."""
    torch = ctx.torch
    ctx.dist.barrier()
    if ctx.cuda:
        ctx.sync()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        torch.cuda._sleep(_SLEEP_CYCLES_PER_ITER * iters)
        for s, e in zip(starts, ends, strict=True):
            s.record()
            fn()
            e.record()
        ctx.sync()
        return [s.elapsed_time(e) * 1e-3 for s, e in zip(starts, ends, strict=True)], starts[0].elapsed_time(
            ends[-1]
        ) * 1e-3 / iters
    times = []
    t0 = time.perf_counter()
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times, (time.perf_counter() - t0) / iters


def _transport(ctx: DistContext, op: str, dtype: str) -> tuple[Any, bool, bool | None, str | None]:
    """(torch dtype, send as uint8 view?, fp8 taken natively?, refusal message) for ``dtype``. For fp8
    a tiny call probes whether the backend takes float8_e4m3fn itself (agreed over ranks)."""
    torch = ctx.torch
    if dtype == "bf16":
        return torch.bfloat16, False, None, None
    err = None
    try:
        # waited on here: gloo (torch 2.13) enqueues the call and reports a refused dtype only when the work is
        # waited on, so without the wait the error could surface in a later collective on one rank only
        work = _collective_call(ctx, op, 64 * ctx.world, torch.float8_e4m3fn, async_op=True)()
        if work is not None:
            work.wait()
        ctx.sync()
        ok = True
    except Exception as exc:  # the backend refuses the dtype before launching anything
        ok, err = False, f"{type(exc).__name__}: {str(exc)[:300]}"
    ok = ctx.all_true(ok)
    return torch.float8_e4m3fn, not ok, ok, err


def run_collectives(
    ctx: DistContext,
    writer: Any,
    specs: Sequence[CollectiveSpec],
    *,
    budget_s: float = 60.0,
    profile: bool = True,
    log: Log = print,
) -> dict[str, Any]:
    """Time every spec (all ranks take part; ``writer`` is used on rank 0 only, None elsewhere);
    stop starting specs once ``budget_s`` seconds are spent (rank 0's clock). ``profile``: one more
    call of each size under torch.profiler on rank 0, for the NCCL kernel name and duration (CUDA only).
    Returns a summary for meta."""
    torch = ctx.torch
    t0 = time.perf_counter()
    groups: dict[tuple[str, str], list[CollectiveSpec]] = {}
    for s in specs:
        groups.setdefault((s.op, s.dtype), []).append(s)
    summary: dict[str, Any] = {"transports": {}, "truncated": False, "skipped": 0}
    for (op, dtype), items in groups.items():
        tdtype, as_uint8, native, err = _transport(ctx, op, dtype)
        tname = "uint8" if as_uint8 else str(tdtype).removeprefix("torch.")
        summary["transports"][f"{op}/{dtype}"] = {"transport_dtype": tname, "fp8_native": native, "error": err}
        if dtype != "bf16" and not native:
            log(f"collectives: {op} refused float8_e4m3fn ({err}); sending .view(torch.uint8)")
        done: list[tuple[CollectiveSpec, dict[str, Any] | None]] = []
        for spec in items:
            if not ctx.broadcast_flag(time.perf_counter() - t0 < budget_s):
                summary["truncated"] = True
                summary["skipped"] += 1
                continue
            fn = _collective_call(ctx, op, spec.bytes, tdtype, as_uint8=as_uint8)
            for _ in range(spec.warmup):
                fn()
            times, mean_b2b = timed_calls(ctx, fn, spec.iters)
            worst = ctx.max_over_ranks(times)
            per_rank = [r[0] for r in ctx.gather_floats([statistics.median(times)])]
            del fn
            stats = time_stats(worst)
            a = algbw(spec.bytes, stats["time_s"])
            rec = {
                "op": "collective",
                "collective": op,
                "dtype": dtype,
                "transport_dtype": tname,  # uint8: float8_e4m3fn buffers sent as .view(torch.uint8)
                "fp8_native": native,
                "semantics": "exact" if dtype == "bf16" or op == "all_gather_into_tensor" or native else "bytes_proxy",
                "bytes": spec.bytes,
                "elements": spec.elements,
                "world_size": ctx.world,
                "backend": ctx.backend,
                **stats,
                "time_s_all": worst,
                "time_s_back_to_back": mean_b2b,
                "time_s_per_rank": per_rank,
                "algbw_bytes_per_s": a,
                "busbw_bytes_per_s": busbw(op, a, ctx.world),
                "warmup": spec.warmup,
                "iters": spec.iters,
            }
            stored = writer.add(rec, flush=True) if writer is not None else None
            done.append((spec, stored))
            log(
                f"collectives: {op:<22} {dtype:<8} {spec.bytes / 2**20:7.0f} MiB  {stats['time_s'] * 1e6:9.1f} us"
                f"  busbw {rec['busbw_bytes_per_s'] / 1e9:6.1f} GB/s"
            )
        if profile and ctx.cuda and done:
            _profile_collectives(ctx, writer, op, tdtype, as_uint8, done, log)
        if ctx.cuda:
            torch.cuda.empty_cache()
    summary["seconds_total"] = time.perf_counter() - t0
    return summary


def _profile_collectives(
    ctx: DistContext,
    writer: Any,
    op: str,
    dtype: Any,
    as_uint8: bool,
    done: Sequence[tuple[CollectiveSpec, dict[str, Any] | None]],
    log: Log,
) -> None:
    """One call per size under torch.profiler (rank 0 records; every rank calls): adds ``kernel_name``
    and ``kernel_time_s`` (the NCCL kernel's own duration, one sample) to the stored records."""
    import contextlib

    from torch.profiler import ProfilerActivity, profile

    prof_cm = profile(activities=[ProfilerActivity.CUDA]) if ctx.rank == 0 else contextlib.nullcontext()
    with prof_cm as prof:
        for spec, _ in done:
            fn = _collective_call(ctx, op, spec.bytes, dtype, as_uint8=as_uint8, fill=False)
            ctx.sync()
            ctx.dist.barrier()
            fn()
            ctx.sync()
            del fn
    if ctx.rank != 0 or writer is None:
        return
    nccl = [(n, d) for n, _, d in gpu_activities(prof) if kernel_category(n) == "comm"]
    # barrier() adds one small all-reduce kernel before each call: keep the last NCCL kernel of each pair
    calls = nccl[1::2] if len(nccl) == 2 * len(done) else nccl if len(nccl) == len(done) else None
    if calls is None:
        log(f"collectives: profiled {len(nccl)} NCCL kernels for {len(done)} {op} calls; names not matched")
        return
    for (_, stored), (name, dur) in zip(done, calls, strict=True):
        if stored is not None:
            stored.update(kernel_name=name, kernel_time_s=dur)
    writer.flush()


# ---- summary (pure) ----------------------------------------------------------------------------


def summarize(folder: str | os.PathLike[str]) -> str:
    """A short text table of ``collectives*.json`` and ``train*.json`` in ``folder``."""
    lines = []
    for path in sorted(Path(folder).glob("collectives*.json")):
        recs = json.loads(path.read_text()).get("records", [])
        lines.append(f"{path.name}: {len(recs)} records; busbw GB/s (median time) at sizes in MiB")
        sizes = sorted({r["bytes"] for r in recs})
        show = [s for s in sizes if s in (1 << 20, 1 << 26, 1 << 30, 1 << 32)] or sizes[:4]
        lines.append("  collective             dtype    transport      " + "".join(f"{s >> 20:>9}" for s in show))
        for op in COLLECTIVE_OPS:
            for dt in COLLECTIVE_DTYPES:
                rs = {r["bytes"]: r for r in recs if r["collective"] == op and r["dtype"] == dt}
                if rs:
                    tr = next(iter(rs.values())).get("transport_dtype", "?")
                    cells = "".join(
                        f"{rs[s]['busbw_bytes_per_s'] / 1e9:9.1f}" if s in rs else f"{'-':>9}" for s in show
                    )
                    lines.append(f"  {op:<22} {dt:<8} {tr:<14} {cells}")
    for path in sorted(Path(folder).glob("train*.json")):
        recs = json.loads(path.read_text()).get("records", [])
        lines.append(f"{path.name}: {len(recs)} records")
        lines.append(
            "  config                         step ms  tok/s/GPU  TFLOP/s/GPU  peak GiB  comm ms  exposed ms"
            "  overlap  compile s"
        )
        for r in recs:
            if r.get("status") != "ok":
                lines.append(f"  {r.get('config', '?'):<30} {r.get('status')}: {str(r.get('error'))[:80]}")
                continue

            def f(key: str, scale: float, fmt: str, r: dict[str, Any] = r) -> str:
                v = r.get(key)
                return format(v * scale, fmt) if isinstance(v, (int, float)) else format("-", ">" + fmt.split(".")[0])

            mem = max(r.get("peak_memory_allocated_bytes") or [0]) / 2**30
            lines.append(
                f"  {r['config']:<30} {f('step_time_s', 1e3, '7.1f')}  {f('tokens_per_s_per_gpu', 1, '9.0f')}"
                f"  {f('tflops_per_gpu', 1, '11.1f')}  {mem:8.1f}  {f('comm_busy_s', 1e3, '7.1f')}"
                f"  {f('exposed_comm_s', 1e3, '10.1f')}  {f('comm_overlap_fraction', 100, '6.0f') + '%':>7}"
                f"  {f('first_step_s', 1, '9.0f')}"
            )
    return "\n".join(lines) if lines else f"no collectives*.json or train*.json in {folder}"


# ---- command line ------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="torchrun --nproc-per-node 2 -m perfmodel.bench.dist", description=__doc__)
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("command", choices=["collectives", "train", "plan", "summary"])
    p.add_argument("--out", type=Path, help="output folder (created); needed by collectives, train, summary")
    p.add_argument(
        "--budget-s", type=float, help="start nothing new after this many seconds (collectives 60, train 480)"
    )
    p.add_argument(
        "--deadline-s",
        type=float,
        default=560.0,
        help="train: never start a config whose estimated end passes this many seconds since start (560)",
    )
    p.add_argument("--quick", action="store_true", help="small sizes, three 1-layer configs (smoke test)")
    p.add_argument("--dry-run", action="store_true", help="plan: print the plans (the plan command always does)")
    p.add_argument("--configs", default="", help="train: comma-separated config names or patterns (default all)")
    p.add_argument("--suffix", default="", help="appended to the dataset file names")
    p.add_argument("--steps", type=int, default=10, help="train: CUDA-event-timed steps per config (10)")
    p.add_argument("--warmup-steps", type=int, default=3, help="train: steps before timing, the first compiles (3)")
    p.add_argument("--profile-steps", type=int, default=3, help="train: torch.profiler steps on rank 0 (3; 0: none)")
    p.add_argument("--no-profile", action="store_true", help="collectives: skip the profiled kernel-name pass")
    p.add_argument("--compile-backend", default="inductor", help="train: torch.compile backend (inductor)")
    p.add_argument(
        "--compile-wrap",
        action="store_true",
        help="train: wrap each layer in torch.compile(layer) instead of layer.compile() in place",
    )
    p.add_argument("--nccl-timeout-s", type=float, default=180.0, help="NCCL watchdog timeout (180)")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="cpu: gloo, for tests only")
    return p


def _log_for(rank: int) -> Log:
    def log(msg: str) -> None:
        if rank == 0:
            print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)

    return log


def main(argv: Sequence[str] | None = None) -> int:
    t_start = time.perf_counter()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    only = [c.strip() for c in args.configs.split(",") if c.strip()] or None
    if args.command == "plan":
        print(dry_run(args.quick, only))
        return 0
    if args.out is None:
        raise SystemExit(f"{args.command} needs --out DIR")
    if args.command == "summary":
        print(summarize(args.out))
        return 0
    from .dataset import DatasetWriter

    ctx = init_distributed(args.device, timeout_s=args.nccl_timeout_s)
    log = _log_for(ctx.rank)
    writer = None
    meta = dist_meta(ctx, command_line(argv, ctx.world)) if ctx.rank == 0 else {}
    ok = False
    try:
        if args.command == "collectives":
            specs = collective_plan(args.quick)
            budget = 60.0 if args.budget_s is None else args.budget_s
            if ctx.rank == 0:
                writer = DatasetWriter(args.out / f"collectives{args.suffix}.json", meta)
                writer.meta["sections"] = {
                    "collectives": {
                        "settings": {"budget_s": budget, "quick": args.quick, "sleep_cycles_per_iter": 100_000},
                        "size_definition": "bytes = full output (all-gather), full input (reduce-scatter, "
                        "all-reduce); busbw per NCCL-tests",
                    }
                }
                writer.flush()
            res = run_collectives(ctx, writer, specs, budget_s=budget, profile=not args.no_profile, log=log)
            if writer is not None:
                writer.meta["sections"]["collectives"].update(res)
                writer.flush()
        else:
            from ._dist_train import run_train

            configs = train_plan(args.quick, only)
            budget = 480.0 if args.budget_s is None else args.budget_s
            if ctx.rank == 0:
                writer = DatasetWriter(args.out / f"train{args.suffix}.json", meta)
                writer.meta["sections"] = {"train": {"configs": [c.as_dict() for c in configs]}}
                writer.flush()
            res = run_train(
                ctx,
                writer,
                configs,
                t_start=t_start,
                budget_s=budget,
                deadline_s=args.deadline_s,
                warmup_steps=args.warmup_steps,
                timed_steps=args.steps,
                profile_steps=args.profile_steps,
                backend=args.compile_backend,
                compile_wrap=args.compile_wrap,
                log=log,
            )
            if writer is not None:
                writer.meta["sections"]["train"].update(res)
                writer.flush()
        ok = True
    finally:
        if ok:  # after an escaped exception the other rank may sit in a collective: no barrier then
            ctx.dist.barrier()
        ctx.dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    from perfmodel.bench._device import run_cli

    raise SystemExit(run_cli(main))
