"""perfmodel.bench.dist: plans, bandwidth formulas, overlap from kernel intervals, and a 2-process gloo
run of the collectives and training paths on CPU (no GPU needed)."""

from __future__ import annotations

import dataclasses
import json
import math
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from perfmodel.bench import _dist_core as C
from perfmodel.bench import dist as D

ROOT = Path(__file__).resolve().parents[1]


def test_import_does_not_import_torch():
    code = (
        "import sys, perfmodel.bench.dist, perfmodel.bench._dist_train;"
        "print(sorted(m for m in ('torch', 'triton', 'torchao') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_plan_dry_run_needs_no_torch():
    # sys.modules[name] = None makes every `import name` raise ImportError
    code = (
        "import sys; sys.modules.update(torch=None, triton=None, torchao=None);"
        "from perfmodel.bench.dist import main; raise SystemExit(main(['plan', '--dry-run']))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "fsdp_8b_tensorwise_fp8ag" in out.stdout and "78 records" in out.stdout
    lines = [ln for ln in out.stdout.splitlines() if ln.strip().startswith(("1 ", "19 "))]
    assert lines[0].split()[1] == "fsdp_8b_bf16" and lines[-1].split()[1] == "tp_8b_tensorwise_async"


# ---- plans -------------------------------------------------------------------------------------


def test_train_plan_is_deterministic_and_in_priority_order():
    plan = D.train_plan()
    assert plan == D.train_plan()
    assert [c.priority for c in plan] == list(range(1, len(plan) + 1))
    assert len({c.name for c in plan}) == len(plan) == 19
    assert [c.name for c in plan[:6]] == [
        "fsdp_8b_bf16",
        "fsdp_8b_tensorwise",
        "fsdp_8b_tensorwise_fp8ag",
        "fsdp_8b_rowwise",
        "tp_8b_bf16",
        "tp_8b_tensorwise",
    ]
    first_70b = min(i for i, c in enumerate(plan) if c.layer_name == "llama3_70b")
    assert first_70b == 6 and all(c.layer_name == "llama3_70b" for c in plan[6:12])
    assert all(c.async_tp for c in plan[-2:]) and not any(c.async_tp for c in plan[:-2])
    for c in plan:
        assert c.seq == 8192
        assert (c.layer_name, c.n_layers) in {("llama3_8b", 4), ("llama3_70b", 2)}
        assert c.batch == (2 if c.name.endswith("_b2") else 1)
        assert (c.ac == "full") == c.name.endswith("_ac")
        assert c.fp8_all_gather == ("fp8ag" in c.name)
        assert 30 < c.estimate_s() < 150
    assert D.LAYERS["llama3_8b"] == C.DecoderConfig(dim=4096, ffn=14336, heads=32, kv_heads=8)
    assert D.LAYERS["llama3_70b"] == C.DecoderConfig(dim=8192, ffn=28672, heads=64, kv_heads=8)


def test_train_plan_quick_and_selection():
    quick = D.train_plan(quick=True)
    assert [c.name for c in quick] == ["fsdp_8b_bf16_quick", "fsdp_8b_tensorwise_fp8ag_quick", "tp_8b_tensorwise_quick"]
    assert all(c.n_layers == 1 and c.seq == 2048 for c in quick)
    sel = D.train_plan(only=["fsdp_70b_*", "tp_8b_bf16"])
    assert [c.name for c in sel] == [
        "tp_8b_bf16",
        "fsdp_70b_bf16",
        "fsdp_70b_tensorwise_fp8ag",
        "fsdp_70b_tensorwise",
        "fsdp_70b_rowwise",
    ]
    with pytest.raises(ValueError, match="no training config matches"):
        D.train_plan(only=["nope"])


def test_train_config_validation():
    c = D.train_plan()[0]
    with pytest.raises(ValueError, match="float8 all-gather"):
        dataclasses.replace(c, fp8_all_gather=True)  # bf16
    with pytest.raises(ValueError, match="async TP"):
        dataclasses.replace(c, async_tp=True)  # fsdp
    with pytest.raises(ValueError, match="recipe"):
        dataclasses.replace(c, recipe="mxfp8")


def test_train_flops_and_tokens_by_hand():
    fsdp, tp = D.train_plan(only=["fsdp_8b_bf16", "tp_8b_bf16"])
    # wq, wo 4096x4096; wk, wv 4096x1024; w1, w2, w3 4096x14336
    assert fsdp.linear_params_per_layer() == 2 * 16_777_216 + 2 * 4_194_304 + 3 * 58_720_256 == 218_103_808
    linear = 6 * 218_103_808 * 8192  # 10_720_238_370_816
    attention = 6 * 8192**2 * 32 * 128  # causal QK^T + PV, fwd + bwd: 1_649_267_441_664
    assert fsdp.flops_per_step_per_gpu(2) == 4 * (linear + attention) == 49_478_023_249_920
    assert tp.flops_per_step_per_gpu(2) == 49_478_023_249_920 / 2
    assert fsdp.tokens_per_step_per_gpu(2) == 8192 and tp.tokens_per_step_per_gpu(2) == 4096


def test_collective_plan_sizes_and_iterations():
    specs = D.collective_plan()
    assert specs == D.collective_plan()
    assert len(specs) == 3 * 2 * 13
    sizes = C.collective_sizes()
    assert sizes == [2**k for k in range(20, 33)]  # 1 MiB ... 4 GiB
    assert {(s.op, s.dtype) for s in specs} == {(o, d) for o in D.COLLECTIVE_OPS for d in D.COLLECTIVE_DTYPES}
    its = [s.iters for s in specs if s.op == "all_reduce" and s.dtype == "bf16"]
    assert its == sorted(its, reverse=True) and its[-1] >= 10
    big = [s for s in specs if s.bytes == 2**32]
    assert {s.elements for s in big} == {2**31, 2**32}  # bf16, fp8
    assert max(C.collective_sizes(quick=True)) == 64 << 20
    assert sum(C.estimate_collective_s(s) for s in specs) < 60


# ---- formulas ----------------------------------------------------------------------------------


def test_bus_bandwidth_against_hand_values():
    a = D.algbw(2**30, 2.5e-3)
    assert a == 429_496_729_600.0  # 1 GiB / 2.5 ms
    assert D.busbw("all_gather_into_tensor", a, 2) == 214_748_364_800.0  # (2-1)/2
    assert D.busbw("reduce_scatter_tensor", 100e9, 4) == 75e9  # (4-1)/4
    assert D.busbw("all_reduce", 100e9, 8) == 175e9  # 2(8-1)/8
    assert D.busbw("all_reduce", 100e9, 2) == 100e9  # 2(2-1)/2
    with pytest.raises(ValueError):
        D.busbw("broadcast", 1.0, 2)


def test_quantiles_and_time_stats():
    assert C.quantile([5, 1, 3, 2, 4], 0.2) == pytest.approx(1.8)
    assert C.quantile([1, 2, 3, 4, 5], 0.8) == pytest.approx(4.2)
    assert D.time_stats([3.0, 1.0, 2.0]) == {"time_s": 2.0, "time_s_p20": 1.4, "time_s_p80": 2.6, "time_s_min": 1.0}
    assert set(D.time_stats([1.0], "step_time_s")) == {
        "step_time_s",
        "step_time_s_p20",
        "step_time_s_p80",
        "step_time_s_min",
    }


def test_intervals():
    assert D.merge_intervals([(5, 6), (0, 2), (1, 3), (3, 4)]) == [(0, 4), (5, 6)]
    assert C.union_length([(0, 2), (1, 3), (10, 11)]) == 4
    assert C.intersection_length([(0, 10)], [(2, 3), (5, 12)]) == 6
    assert C.intersection_length([(0, 1)], [(1, 2)]) == 0
    with pytest.raises(ValueError):
        D.merge_intervals([(2, 1)])


def test_overlap_on_a_hand_made_step():
    # compute 0-10 and 12-20 (two streams overlap nothing), NCCL 5-15, a memcpy 30-31 (seconds)
    events = [
        ("sm90_xmma_gemm_bf16bf16_bf16f32", 0.0, 10.0),
        ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 5.0, 10.0),
        ("triton_poi_fused_mul_0", 12.0, 8.0),
        ("Memcpy DtoD (Device -> Device)", 30.0, 1.0),
    ]
    s = D.overlap_summary(events)
    assert s["comm_kernel_time_s"] == 10 and s["compute_kernel_time_s"] == 18 and s["copy_time_s"] == 1
    assert s["comm_busy_s"] == 10 and s["compute_busy_s"] == 18
    assert s["overlap_s"] == 8  # 5-10 and 12-15
    assert s["exposed_comm_s"] == 2  # 10-12
    assert s["comm_overlap_fraction"] == 0.8
    assert s["span_s"] == 31 and s["gpu_busy_s"] == 21
    assert s["copy_busy_s"] == 1 and s["copy_compute_overlap_s"] == 0
    # two steps: the second has no overlap at all; medians and NCCL time by collective
    step2 = [("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", 0.0, 4.0), ("gemm", 4.0, 6.0)]
    agg = C.steps_overlap([events, step2])
    assert agg["overlap_s"] == 4 and agg["exposed_comm_s"] == 3 and len(agg["overlap_per_step"]) == 2
    assert agg["nccl_time_s_by_collective"] == {"AllGather": 5.0, "ReduceScatter": 2.0}
    assert agg["nccl_calls_by_collective"] == {"AllGather": 0.5, "ReduceScatter": 0.5}
    assert D.overlap_summary([("gemm", 0.0, 1.0)])["comm_overlap_fraction"] is None


def test_gpu_activities_drop_annotations_and_host_events():
    pytest.importorskip("torch")
    from torch.autograd import DeviceType

    class Ev:
        def __init__(self, name, dev, kind, start_ns, dur_ns):
            self.v = (name, dev, kind, start_ns, dur_ns)

        def name(self):
            return self.v[0]

        def device_type(self):
            return self.v[1]

        def activity_type(self):
            return self.v[2]

        def is_user_annotation(self):
            return "annotation" in self.v[2]

        def start_ns(self):
            return self.v[3]

        def duration_ns(self):
            return self.v[4]

    events = [
        Ev("FSDP::all_gather", DeviceType.CUDA, "gpu_user_annotation", 0, 5000),
        Ev("nccl:all_gather_into_tensor", DeviceType.CUDA, "gpu_user_annotation", 100, 900),
        Ev("ncclDevKernel_AllGather_RING_LL", DeviceType.CUDA, "kernel", 200, 700),
        Ev("Memset (Device)", DeviceType.CUDA, "gpu_memset", 50, 10),
        Ev("aten::mm", DeviceType.CPU, "cpu_op", 0, 10000),
    ]
    prof = type(
        "P", (), {"profiler": type("K", (), {"kineto_results": type("R", (), {"events": lambda self: events})()})()}
    )()
    got = D.gpu_activities(prof)
    assert [n for n, _, _ in got] == ["Memset (Device)", "ncclDevKernel_AllGather_RING_LL"]
    assert [v for _, s, d in got for v in (s, d)] == pytest.approx([50e-9, 10e-9, 200e-9, 700e-9])


def test_kernel_categories():
    assert D.kernel_category("ncclKernel_AllReduce_RING_LL_Sum_bfloat16") == "comm"
    assert D.kernel_category("Memset (Device)") == "copy"
    assert D.kernel_category("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT") == "compute"
    assert C.nccl_collective("ncclDevKernel_AllGather_RING_LL") == "AllGather"
    assert C.nccl_collective("something") == "other"


def test_summary_of_synthetic_files(tmp_path):
    rec = {"collective": "all_reduce", "dtype": "bf16", "transport_dtype": "bfloat16", "bytes": 2**20}
    coll = {"records": [{**rec, "busbw_bytes_per_s": 1.5e11}]}
    train = {
        "records": [
            {"config": "fsdp_8b_bf16", "status": "ok", "step_time_s": 0.1, "tokens_per_s_per_gpu": 81920.0,
             "tflops_per_gpu": 494.8, "peak_memory_allocated_bytes": [2**34, 2**34], "comm_busy_s": 0.01,
             "exposed_comm_s": 0.002, "comm_overlap_fraction": 0.8, "first_step_s": 55.0},
            {"config": "tp_8b_bf16_async", "status": "error", "error": "RuntimeError: no symmetric memory"},
        ]
    }  # fmt: skip
    (tmp_path / "collectives.json").write_text(json.dumps(coll))
    (tmp_path / "train.json").write_text(json.dumps(train))
    text = D.summarize(tmp_path)
    assert "150.0" in text and "100.0" in text and "81920" in text and "80%" in text
    assert "error: RuntimeError: no symmetric memory" in text


# ---- 2 processes, gloo, CPU -------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _gloo_worker(rank: int, port: int, out_dir: str) -> None:
    import os
    import time

    os.environ.update(
        RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )
    from perfmodel.bench import dist as D
    from perfmodel.bench._dist_train import run_train
    from perfmodel.bench.dataset import DatasetWriter

    ctx = D.init_distributed("cpu", timeout_s=60)
    quiet = lambda msg: None  # noqa: E731
    specs = [
        D.CollectiveSpec(op=op, dtype=dt, bytes=b, warmup=1, iters=3)
        for op in D.COLLECTIVE_OPS
        for dt in D.COLLECTIVE_DTYPES
        for b in (65536,)
    ]
    w = DatasetWriter(Path(out_dir) / "collectives.json", {"command": "test"}) if rank == 0 else None
    res = D.run_collectives(ctx, w, specs, budget_s=60, log=quiet)
    if rank == 0:
        w.meta["summary"] = res
        w.flush()
    tiny = C.DecoderConfig(dim=64, ffn=128, heads=4, kv_heads=2, head_dim=16)
    (cfg,) = D.train_plan(only=["fsdp_8b_bf16"])
    cfg = dataclasses.replace(cfg, layer=tiny, n_layers=1, seq=32)
    w = DatasetWriter(Path(out_dir) / "train.json", {"command": "test"}) if rank == 0 else None
    run_train(
        ctx, w, [cfg], t_start=time.perf_counter(), warmup_steps=2, timed_steps=2, profile_steps=0, backend="eager",
        log=quiet,
    )  # fmt: skip
    ctx.dist.destroy_process_group()
    # leave without running C++ static destructors: gloo's threads can still be joinable then, and a
    # joinable std::thread's destructor aborts the process ("terminate called without an active exception")
    # in about one run in three on a 2-core machine; everything this worker writes is flushed above
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def test_gloo_collectives_and_train_step_on_cpu(tmp_path):
    mp = pytest.importorskip("torch.multiprocessing")
    mp.spawn(_gloo_worker, args=(_free_port(), str(tmp_path)), nprocs=2, join=True)
    data = json.loads((tmp_path / "collectives.json").read_text())
    recs = data["records"]
    assert len(recs) == 6
    for r in recs:
        assert r["op"] == "collective" and r["world_size"] == 2 and r["backend"] == "gloo"
        assert r["time_s"] > 0 and len(r["time_s_all"]) == 3 and len(r["time_s_per_rank"]) == 2
        assert r["time_s_p20"] <= r["time_s"] <= r["time_s_p80"]
        assert math.isclose(r["algbw_bytes_per_s"], r["bytes"] / r["time_s"])
        factor = 1.0 if r["collective"] == "all_reduce" else 0.5
        assert math.isclose(r["busbw_bytes_per_s"], factor * r["algbw_bytes_per_s"])
        if r["dtype"] == "bf16":
            assert r["transport_dtype"] == "bfloat16" and r["elements"] == r["bytes"] // 2
        else:  # gloo refuses float8: sent as .view(torch.uint8), reductions then only a bytes proxy
            assert r["transport_dtype"] in ("float8_e4m3fn", "uint8") and r["elements"] == r["bytes"]
            if r["transport_dtype"] == "uint8" and r["collective"] != "all_gather_into_tensor":
                assert r["semantics"] == "bytes_proxy"
    (train,) = json.loads((tmp_path / "train.json").read_text())["records"]
    assert train["status"] == "ok", train
    assert train["op"] == "train_step" and train["parallel"] == "fsdp" and train["fsdp_degree"] == 2
    assert train["step_time_s"] > 0 and len(train["step_time_s_all"]) == 2
    assert train["tokens_per_step_per_gpu"] == 32 and train["dynamo_graph_breaks"] == 0
