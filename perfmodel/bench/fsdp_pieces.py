"""Float8 all-gather as FSDP2 runs it, piece by piece (issue 34, item 5): what each rank does before and
after the collective, timed on the GPUs it is given (one, or ``torchrun --nproc-per-node N``).

``python -m perfmodel.bench.fsdp_pieces --out DIR --deadline-s S`` (one GPU: a world of 1 it starts itself)
``torchrun --nproc-per-node 2 -m perfmodel.bench.fsdp_pieces --out DIR`` (rank 0 writes)

Pieces (records ``piece``):

* ``shard_cast``: one rank's fp32 weight shard (FSDP2 shards dim 0: ``rows / world`` rows) cast to float8
  e4m3 with a tensorwise scale, as ``WeightWithDynamicFloat8CastTensor.fsdp_pre_all_gather`` does without
  precomputed scales: amax (``abs().max()``), ``scale = 448 / max(amax, 1e-12)``, ``(x * scale).clamp`` and
  the cast; ``eager`` (three kernels and a scalar) and ``compiled`` (``torch.compile`` of the same function),
  and ``cast_only`` with the scale given (what is left when ``precompute_float8_dynamic_scale_for_fsdp`` has
  run). With a world above 1 the amax is all-reduced (MAX) as torchao does; on a world of 1 that is
  skipped and the record says so. ``bytes_min``: the fewest bytes the eager version moves (read the shard
  twice, write one byte per element).
* ``precompute``: ``precompute_float8_dynamic_scale_for_fsdp(model)`` on a Llama 3 8B stack of N layers
  under FSDP2 with float8 all-gather (one ``_foreach_norm(inf)``, an all-reduce, the scales' update).
* ``payload``: bytes one layer's all-gather carries in bf16 and in float8 (1 byte per element; the scale
  is not gathered, every rank computes the same one), per preset (counted, not timed).
* ``all_gather``: ``all_gather_into_tensor`` of bf16 and of float8 (as uint8) by message size. **On a world
  of 1 this is a device copy, not a collective** (labelled ``degenerate``); beside it ``copy`` (the same bytes
  through ``Tensor.copy_``) for scale.

Times: CUDA events around ``reps`` back-to-back calls after a warm-up, repeated; the median of the
per-call means (seconds). Inputs are random normal (never zeros).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["CAST_SHAPES", "GATHER_BYTES", "main", "payload_records"]

#: (rows, cols) of fp32 weights FSDP2 shards on dim 0: Llama 3 8B wq / w1 / w2 and Llama 3 70B w1 / w2
CAST_SHAPES: tuple[tuple[int, int], ...] = ((4096, 4096), (14336, 4096), (4096, 14336), (28672, 8192), (8192, 28672))
#: world sizes whose shard sizes are cast on one GPU
CAST_WORLDS: tuple[int, ...] = (1, 2, 8)
#: all-gather output sizes, bytes (1 MiB .. 1 GiB)
GATHER_BYTES: tuple[int, ...] = tuple(2**k for k in range(20, 31, 2))
_E4M3_MAX = 448.0


def payload_records() -> list[dict[str, Any]]:
    """Per preset: one decoder layer's Linear weights in elements and the all-gather bytes in bf16 and
    float8 (counted from the preset's shapes; no GPU)."""
    from ..presets import get_preset

    out = []
    for name in ("llama3-8b", "llama3-70b", "llama3-405b"):
        lay = get_preset(name).layer
        n = sum(lin.in_features * lin.out_features for lin in lay.linears())
        norms = 2 * lay.hidden
        out.append({"op": "fsdp_piece", "piece": "payload", "model": name, "linear_elements": n,
                    "norm_elements": norms, "bf16_bytes": 2 * (n + norms), "float8_bytes": n + 2 * norms,
                    "ratio": (n + 2 * norms) / (2 * (n + norms)), "source": "counted"})  # fmt: skip
    return out


def _events_time(torch: Any, fn: Callable[[], Any], reps: int = 10, rounds: int = 5) -> dict[str, float]:
    fn()
    torch.cuda.synchronize()
    means = []
    for _ in range(rounds):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps):
            fn()
        b.record()
        torch.cuda.synchronize()
        means.append(a.elapsed_time(b) * 1e-3 / reps)
    return {"time_s": statistics.median(means), "time_s_min": min(means), "reps": reps, "rounds": rounds}


def _cast_fns(torch: Any, dist: Any, world: int) -> dict[str, Callable]:
    f8 = torch.float8_e4m3fn

    def eager(x: Any) -> Any:
        amax = x.abs().max().float()
        if world > 1:
            dist.all_reduce(amax, op=dist.ReduceOp.MAX)
        scale = _E4M3_MAX / torch.clamp(amax, min=1e-12)
        return (x * scale).clamp(-_E4M3_MAX, _E4M3_MAX).to(f8), scale

    def cast_only(x: Any, scale: Any) -> Any:
        return (x * scale).clamp(-_E4M3_MAX, _E4M3_MAX).to(f8)

    def local(x: Any) -> Any:  # the compiled version: no collective inside the graph
        amax = x.abs().max().float()
        scale = _E4M3_MAX / torch.clamp(amax, min=1e-12)
        return (x * scale).clamp(-_E4M3_MAX, _E4M3_MAX).to(f8), scale

    return {"eager": eager, "cast_only": cast_only, "compiled": torch.compile(local)}


def _time_cast(torch: Any, fns: dict[str, Callable], x: Any, base: dict[str, Any], emit: Callable) -> None:
    """The three cast variants of one shard ``x`` (records into ``emit``)."""
    scale = torch.tensor(_E4M3_MAX / 4.0, device=x.device)
    n = x.numel()
    calls = {
        "eager": lambda: fns["eager"](x),
        "compiled": lambda: fns["compiled"](x),
        "cast_only": lambda: fns["cast_only"](x, scale),
    }
    for variant, fn in calls.items():
        try:
            t = _events_time(torch, fn)
            bmin = 9 * n if variant != "cast_only" else 5 * n
            emit({**base, "variant": variant, **t, "bytes_min": bmin, "bytes_per_s": bmin / t["time_s"]})
        except Exception as exc:
            emit({**base, "variant": variant, "error": f"{type(exc).__name__}: {exc}"[:800]})


def _shard_casts(torch: Any, dist: Any, world: int, emit: Callable, deadline: float) -> None:
    """Each shape of :data:`CAST_SHAPES` as one rank's shard, for each world size (module doc)."""
    fns = _cast_fns(torch, dist, world)
    worlds = (world,) if world > 1 else CAST_WORLDS
    for rows, cols in CAST_SHAPES:
        for w in worlds:
            if time.perf_counter() > deadline:
                return
            x = torch.randn(rows // w, cols, device="cuda", dtype=torch.float32)
            base = {
                "op": "fsdp_piece",
                "piece": "shard_cast",
                "rows": rows,
                "cols": cols,
                "world_size": w,
                "ranks_here": world,
                "shard_elements": x.numel(),
                "amax_all_reduce": world > 1,
                "note": "one GPU: the shard a rank of this world holds" if world == 1 else "real world",
            }
            _time_cast(torch, fns, x, base, emit)
            if world == 1 and w == 1:  # our cast against torchao's own cast of the same tensor
                emit({**base, "variant": "check", **_check_torchao(torch, x, fns)})


def _check_torchao(torch: Any, x: Any, fns: dict[str, Callable]) -> dict[str, Any]:
    """Our eager cast against torchao's ``hp_tensor_to_float8_dynamic`` (scale and bits), where importable."""
    try:
        from torchao.float8.config import ScalingGranularity
        from torchao.float8.float8_scaling_utils import hp_tensor_to_float8_dynamic
        from torchao.float8.float8_training_tensor import LinearMMConfig
    except Exception as exc:
        return {"torchao_check": f"not importable: {type(exc).__name__}: {exc}"[:400]}
    try:
        ours, scale = fns["eager"](x)
        t8 = hp_tensor_to_float8_dynamic(x, torch.float8_e4m3fn, LinearMMConfig(),
                                         scaling_granularity=ScalingGranularity.TENSORWISE)  # fmt: skip
        same = float((t8._data.view(torch.uint8) == ours.view(torch.uint8)).float().mean())
        return {"torchao_scale": float(t8._scale), "our_scale": float(scale), "bits_equal_share": same}
    except Exception as exc:
        return {"torchao_check": f"failed: {type(exc).__name__}: {exc}"[:400]}


def _precompute(torch: Any, world: int, emit: Callable, deadline: float, mesh: Any) -> None:
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training
    from torchao.float8 import precompute_float8_dynamic_scale_for_fsdp as precompute

    from ._decoder import DecoderConfig, build_stack

    c = DecoderConfig(dim=4096, ffn=14336, heads=32, kv_heads=8)
    for n_layers in (1, 4, 8):
        if time.perf_counter() > deadline:
            return
        with torch.device("cuda"):
            model = build_stack(c, n_layers, device="cuda", dtype=torch.float32)
        convert_to_float8_training(model, config=Float8LinearConfig(enable_fsdp_float8_all_gather=True))
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for layer in model.layers:
            fully_shard(layer, mesh=mesh, mp_policy=mp)
        fully_shard(model, mesh=mesh, mp_policy=mp)
        t = _events_time(torch, lambda m=model: precompute(m), reps=5, rounds=5)
        n = sum(p.numel() for name, p in model.named_parameters() if p.dim() == 2) // world
        emit({"op": "fsdp_piece", "piece": "precompute", "model": "llama3-8b", "layers": n_layers, "world_size": world,
              "shard_linear_elements": n, **t, "bytes_min": 4 * n, "bytes_per_s": 4 * n / t["time_s"]})  # fmt: skip
        del model
        torch.cuda.empty_cache()


def _gathers(torch: Any, dist: Any, world: int, emit: Callable, deadline: float) -> None:
    for nbytes in GATHER_BYTES:
        for dtype in ("bf16", "fp8_e4m3"):
            if time.perf_counter() > deadline:
                return
            dt, size = (torch.bfloat16, 2) if dtype == "bf16" else (torch.uint8, 1)
            out = torch.empty(nbytes // size, device="cuda", dtype=dt)
            inp = torch.randn(nbytes // size // world, device="cuda").to(dt) if dt != torch.uint8 else \
                torch.randint(0, 255, (nbytes // world,), device="cuda", dtype=dt)  # fmt: skip
            t = _events_time(torch, lambda o=out, i=inp: dist.all_gather_into_tensor(o, i))
            lab = "degenerate: world 1, a device copy, not a collective" if world == 1 else "collective"
            emit({"op": "fsdp_piece", "piece": "all_gather", "dtype": dtype, "bytes": nbytes, "world_size": world,
                  "label": lab, **t, "algbw_bytes_per_s": nbytes / t["time_s"]})  # fmt: skip
            if world == 1:
                t = _events_time(torch, lambda o=out, i=inp: o.copy_(i))
                emit({"op": "fsdp_piece", "piece": "copy", "dtype": dtype, "bytes": nbytes, **t,
                      "copy_bytes_per_s": 2 * nbytes / t["time_s"]})  # fmt: skip
            del out, inp


def _init() -> tuple[Any, Any, int, int, Any]:
    import socket

    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    for k, v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"), ("NVSHMEM_DISABLE_NVLS", "1")):
        os.environ[k] = v
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(s.getsockname()[1]), RANK="0", WORLD_SIZE="1")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    return torch, dist, rank, world, init_device_mesh("cuda", (world,))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m perfmodel.bench.fsdp_pieces", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--out", type=Path, default=Path("out"))
    p.add_argument("--deadline-s", type=float, default=40.0)
    p.add_argument("--suffix", default="")
    p.add_argument("--note", default="", help="recorded in meta (e.g. what ran beside this)")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    deadline = t0 + a.deadline_s
    from .memory import file_meta

    try:
        torch, dist, rank, world, mesh = _init()
    except Exception as exc:  # no GPU or no NCCL: say so in the file, with the counted payloads
        a.out.mkdir(parents=True, exist_ok=True)
        err = {"error": f"{type(exc).__name__}: {exc}"[:800], "records": payload_records()}
        (a.out / "fsdp_pieces.json").write_text(json.dumps(err, indent=1) + "\n")
        print(f"fsdp_pieces: could not start: {err['error']}", flush=True)
        return 2
    meta = file_meta("python -m perfmodel.bench.fsdp_pieces " + " ".join(sys.argv[1:] if argv is None else argv))
    meta.update(note=a.note, world_size=world, torch_runtime=torch.__version__, nccl=str(torch.cuda.nccl.version()))
    doc: dict[str, Any] = {"schema": "perfmodel.bench.fsdp_pieces/1", "meta": meta, "records": [], "errors": []}
    path = a.out / f"fsdp_pieces{a.suffix or ('' if world == 1 else f'_w{world}')}.json"

    def emit(rec: dict[str, Any]) -> None:
        if rank != 0:
            return
        doc["records"].append(rec)
        a.out.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1, default=str) + "\n")
        tmp.replace(path)

    for rec in payload_records():
        emit(rec)
    for name, fn in (("shard_cast", lambda: _shard_casts(torch, dist, world, emit, deadline - 0.45 * a.deadline_s)),
                     ("precompute", lambda: _precompute(torch, world, emit, deadline - 0.2 * a.deadline_s, mesh)),
                     ("all_gather", lambda: _gathers(torch, dist, world, emit, deadline))):  # fmt: skip
        try:
            fn()
        except Exception as exc:  # one piece failing (torchao missing, say) must not stop the others
            doc["errors"].append({"piece": name, "error": f"{type(exc).__name__}: {exc}"[:800],
                                  "traceback": traceback.format_exc()[-2000:]})  # fmt: skip
            emit({"op": "fsdp_piece", "piece": name, "error": f"{type(exc).__name__}: {exc}"[:800]})
        if rank == 0:
            print(f"fsdp_pieces: {name} done at {time.perf_counter() - t0:.0f} s", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    from perfmodel.bench._device import run_cli

    sys.exit(run_cli(main))
