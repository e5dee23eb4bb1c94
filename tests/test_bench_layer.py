"""perfmodel.bench.layer: the decoder-layer sweep's plan, module filter, step and scheduler (CPU only)."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
import time
from collections import Counter

import pytest

from perfmodel.bench import layer as L
from perfmodel.bench.dataset import DatasetWriter
from perfmodel.bench.layer import worker as LW

TINY = L.LayerSize(key="t256", model="test", dim=256, ffn=512, heads=4, kv_heads=2, head_dim=64)
SMALL_CASES = ("d2048-b1s4096", "d2048-b4s4096", "d4096-b1s4096", "d4096-b4s4096")
BIG_CASES = ("d8192-b1s4096", "d8192-b4s4096")
ALL_SUBSETS = [frozenset(c) for n in range(5) for c in itertools.combinations(L.GROUPS, n)]


def _groups_of(spec: L.LayerSpec) -> frozenset[str]:
    return frozenset(g for g in L.GROUPS if set(L.LINEAR_GROUPS[g]) <= set(spec.converted))


# ---- plan ---------------------------------------------------------------------------------------


def test_import_does_not_import_torch():
    code = (
        "import sys, perfmodel.bench.layer;print(sorted(m for m in ('torch', 'triton', 'torchao') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_plan_is_deterministic_with_unique_stable_ids():
    specs = L.layer_plan()
    assert specs == L.layer_plan()
    ids = [s.id for s in specs]
    assert len(ids) == len(set(ids))
    for stable in (
        "d2048-b1s4096-bf16",
        "d2048-b1s4096-rowwise-all",
        "d4096-b4s4096-rowwise-qkv+w13",
        "d8192-b1s4096-tensorwise-q",
        "d8192-b4s4096-rowwise_with_gw_hp-all",
        "d4096-b1s4096-tensorwise-qkv+o+w2",
    ):
        assert stable in ids
    assert L.layer_plan(quick=True) == L.layer_plan(quick=True)


def test_config_counts_and_priorities():
    specs = L.layer_plan()
    assert len(specs) == 164
    assert Counter(s.priority for s in specs) == {0: 18, 1: 6, 2: 48, 3: 12, 4: 80}
    per_case = Counter(s.case for s in specs)
    assert {c: per_case[c] for c in SMALL_CASES} == dict.fromkeys(SMALL_CASES, 34)
    assert {c: per_case[c] for c in BIG_CASES} == dict.fromkeys(BIG_CASES, 14)
    assert {s.tokens for s in specs} == {4096, 16384}
    for s in specs:
        assert s.seq_len == 4096 and s.batch in (1, 4)
        if s.priority == 0:
            assert s.recipe == "bf16" or s.subset == "all"
        if s.priority == 1:
            assert (s.recipe, s.subset) == ("rowwise_with_gw_hp", "all")
        if s.priority == 2:
            assert len(s.groups) == 1 and s.recipe in L.FP8_RECIPES
        if s.priority == 3:
            assert s.converted == ("attention.wq",) and s.groups == () and s.subset == "q"
        if s.priority == 4:
            assert len(s.groups) in (2, 3) and s.case in SMALL_CASES
    shapes = {(s.dim, s.ffn, s.heads, s.kv_heads, s.head_dim) for s in specs}
    assert shapes == {(2048, 8192, 16, 8, 128), (4096, 14336, 32, 8, 128), (8192, 28672, 64, 8, 128)}


def test_small_layers_enumerate_all_16_subsets_and_the_big_one_does_not():
    specs = L.layer_plan()
    for case in SMALL_CASES + BIG_CASES:
        for recipe in L.FP8_RECIPES:
            got = {_groups_of(s) for s in specs if s.case == case and s.recipe == recipe and s.subset != "q"}
            got.add(frozenset())  # the bf16 config of the case
            if case in SMALL_CASES:
                assert got == set(ALL_SUBSETS)
            else:
                assert got == {frozenset(), frozenset(L.GROUPS), *(frozenset([g]) for g in L.GROUPS)}
        assert sum(s.recipe == "bf16" for s in specs if s.case == case) == 1
        assert sum(s.recipe == "rowwise_with_gw_hp" for s in specs if s.case == case) == 1


def test_converted_names_match_groups():
    for s in L.layer_plan():
        if s.subset not in ("q", "none"):
            assert s.converted == tuple(n for g in s.groups for n in L.LINEAR_GROUPS[g])
            assert s.subset == ("all" if s.groups == L.GROUPS else "+".join(s.groups))


def test_order_puts_important_configs_first_and_the_enumeration_last():
    specs = L.layer_plan()
    prios = [s.priority for s in specs]
    assert prios == sorted(prios)
    first4 = prios.index(4)
    assert all(p == 4 for p in prios[first4:]) and len(prios) - first4 == 80
    # the enumeration does the 4096-token cases first
    enum_cases = list(dict.fromkeys(s.case for s in specs[first4:]))
    assert enum_cases == ["d2048-b1s4096", "d4096-b1s4096", "d2048-b4s4096", "d4096-b4s4096"]


def test_budget_cut_drops_a_suffix_of_the_plan():
    specs = L.layer_plan()
    kw = {"workers": 12, "compile_cores": 14, "eta_check": False}
    started_before = None
    for budget in (60, 200, 400, 500, math.inf):
        est = L.estimate_sweep(specs, budget_s=budget, **kw)
        started = est["done"] + est["killed"]
        n = len(started)
        assert set(started) == {s.id for s in specs[:n]}  # a prefix in plan order
        assert est["dropped"] == [s.id for s in specs[n:]]
        if started_before is not None:
            assert set(started_before) <= set(started)
        started_before = started
    assert not L.estimate_sweep(specs, **kw)["dropped"]
    # the default budget keeps all of priorities 0-3 (estimates with the prior compile times)
    est = L.estimate_sweep(specs, budget_s=500, deadline_s=550, workers=12, compile_cores=14)
    assert {s.id for s in specs if s.priority <= 3} <= set(est["done"])
    assert est["end_s"] <= 550
    # with the deadline check, nothing started is estimated to be killed
    assert est["killed"] == []


def test_extra_sizes_plan_their_own_configs_and_bad_names_are_refused(capsys):
    extra = L.layer_plan(sizes=[L.layer_size("d5120")])
    assert {s.case for s in extra} == {"d5120-b1s4096", "d5120-b4s4096"}
    assert max(s.priority for s in extra) == 3  # no 2- and 3-group subsets for it
    assert len(extra) == 2 * (1 + 3 + 4 * 2 + 2)  # bf16, 3 recipes x all, 4 groups x 2 recipes, q x 2
    big = next(s for s in extra if s.id == "d5120-b1s4096-bf16")
    assert (big.dim, big.ffn, big.heads, big.kv_heads, big.head_dim) == (5120, 13824, 40, 8, 128)
    assert L.layer_plan() == L.layer_plan(sizes=L.LAYER_SIZES)  # the default sweep is unchanged
    with pytest.raises(ValueError, match="unknown layer size 'd9999'; valid: d2048, d4096, d8192, d5120"):
        L.layer_size("d9999")
    with pytest.raises(SystemExit, match="--sizes: unknown layer size"):
        L.main(["plan", "--sizes", "d9999"])


def test_select_filters():
    specs = L.layer_plan()
    assert len(L.select(specs, priority_max=0)) == 18
    d2048 = L.select(specs, only=["d2048-*"])
    assert len(d2048) == 68 and all(s.dim == 2048 for s in d2048)
    skip = {s.id for s in specs[:10]}
    assert [s.id for s in L.select(specs, skip_ids=skip)] == [s.id for s in specs[10:]]


def test_quick_plan_is_a_small_bf16_and_tensorwise_pair():
    q = L.layer_plan(quick=True)
    assert [(s.recipe, s.subset) for s in q] == [("bf16", "none"), ("tensorwise", "all")]
    assert all(s.tokens <= 4096 and s.dim <= 1024 for s in q)


def test_make_spec_validates():
    with pytest.raises(ValueError, match="recipe"):
        L.make_spec(TINY, 1, 64, "mxfp8", L.GROUPS)
    with pytest.raises(ValueError, match="group"):
        L.make_spec(TINY, 1, 64, "rowwise", ("qkvo",))
    with pytest.raises(ValueError, match="bf16"):
        L.make_spec(TINY, 1, 64, "bf16", ("qkv",))
    with pytest.raises(ValueError, match="at least one"):
        L.make_spec(TINY, 1, 64, "rowwise", ())
    with pytest.raises(ValueError, match="Linear name"):
        L.make_spec(TINY, 1, 64, "rowwise", (), converted=("attention.wx",), subset="x")


def test_flop_counts():
    s = L.make_spec(L.LAYER_SIZES[1], 1, 4096, "bf16")
    params = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336
    assert s.linear_params() == params
    assert s.linear_flops == 6 * 4096 * params
    assert s.attention_flops == 7 * 1 * 4096**2 * 32 * 128


def test_estimates_are_sane():
    specs = L.layer_plan()
    mem = {s.id: L.estimate_peak_mem_bytes(s) for s in specs}
    assert max(mem.values()) < 40e9  # one layer: 141 GB is plenty; 12 in flight are admitted by estimate
    assert mem["d8192-b4s4096-rowwise-all"] > mem["d2048-b1s4096-rowwise-all"]
    step = {s.id: L.estimate_step_s(s) for s in specs}
    assert 1e-3 < step["d2048-b1s4096-bf16"] < step["d8192-b4s4096-bf16"] < 0.5
    assert step["d4096-b4s4096-rowwise-all"] < step["d4096-b4s4096-bf16"]
    assert L.estimate_compile_s(specs[0]) < L.estimate_compile_s(specs[2])  # bf16 < rowwise all
    assert L.estimate_compile_s(specs[2], threads=4) < L.estimate_compile_s(specs[2])


def test_cpu_split_keeps_two_cores_for_the_measurement():
    measure, compile_ = L._cpu_split(range(16))
    assert measure == [0, 1] and compile_ == list(range(2, 16))
    assert L.default_workers(16) == 12
    assert L._cpu_split(range(4)) == ([0, 1, 2, 3], [0, 1, 2, 3])


# ---- CLI ----------------------------------------------------------------------------------------


def test_dry_run_prints_the_plan_with_an_estimated_time(tmp_path, capsys):
    assert L.main(["run", "--out", str(tmp_path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "164 configs in 6 cases" in out
    assert "estimated:" in out and "would take" in out and "within budget 500 s" in out
    for p in range(5):
        assert f"priority {p}:" in out
    assert "d2048-b1s4096-bf16" in out and "(past the budget)" in out
    assert not list(tmp_path.iterdir())  # a dry run writes nothing


def test_plan_command_and_filters(capsys):
    assert L.main(["plan", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "2 configs" in out and "d1024-b1s2048-tensorwise-all" in out
    assert L.main(["plan", "--priority-max", "1", "--only", "d2048-*"]) == 0
    assert "8 configs in 2 cases" in capsys.readouterr().out


def test_cli_dry_run_needs_no_torch():
    code = (
        "import sys; from perfmodel.bench.layer import main; main(['run', '--out', 'x', '--dry-run', '--quick']);"
        "print(sorted(m for m in ('torch', 'torchao') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().endswith("[]")


# ---- records and tables -------------------------------------------------------------------------


def test_step_stats_percentiles():
    st = L.step_stats([5.0, 1.0, 2.0, 3.0, 4.0])
    assert st["step_time_s"] == 3.0
    assert st["step_time_s_p20"] == pytest.approx(1.8)
    assert st["step_time_s_p80"] == pytest.approx(4.2)
    assert st["step_time_s_all"] == [5.0, 1.0, 2.0, 3.0, 4.0]


def test_kernel_classes():
    assert L.kernel_class("nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_TNT") == "gemm_bf16"
    assert L.kernel_class("nvjet_sm90_qqtst_128x256_128x6_1x2_h_bz_coopA_TNT") == "gemm_fp8"
    assert L.kernel_class("void cutlass::device_kernel<f8f8bf16_rowwise<cutlass::float_e4m3_t>>") == "gemm_fp8"
    assert L.kernel_class("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, cutlass::bf16>>") == (
        "attention"
    )
    assert L.kernel_class("triton_per_fused_mul_rsqrt_0") == "triton"
    assert L.kernel_class("Memset (Device)") == "memory"
    summary = L.kernel_summary(
        [
            {"name": "nvjet_sm90_tst_a", "time_s": 1.0, "calls": 2.0},
            {"name": "nvjet_sm90_qqtst_b", "time_s": 0.5, "calls": 3.0},
            {"name": "triton_poi_fused_0", "time_s": 0.25, "calls": 4.0},
        ]
    )
    assert summary["kernel_time_by_class_s"] == {"gemm_bf16": 1.0, "gemm_fp8": 0.5, "triton": 0.25}
    assert summary["gemm_kernels_per_step"] == 5.0 and summary["fp8_gemm_kernels_per_step"] == 3.0


def test_base_record_has_every_field():
    spec = L.layer_plan()[2]
    rec = L.base_record(spec)
    assert tuple(rec) == L.RECORD_FIELDS
    assert rec["op"] == "layer" and rec["compile"] == "static" and rec["backward"] == "grad_output"
    assert rec["converted"] == list(L.ALL_LINEARS) and rec["groups"] == list(L.GROUPS)
    assert rec["tokens"] == 4096 and rec["expected_fp8_gemm_kernels_per_step"] == 21
    gw = next(s for s in L.layer_plan() if s.recipe == "rowwise_with_gw_hp")
    assert L.base_record(gw)["expected_fp8_gemm_kernels_per_step"] == 14
    json.dumps(rec)


def test_format_table_speedups():
    base = L.make_spec(TINY, 1, 64, "bf16")
    recs = [
        {**L.base_record(base), "step_time_s": 2e-3},
        {**L.base_record(L.make_spec(TINY, 1, 64, "rowwise", L.GROUPS)), "step_time_s": 2.5e-3},
        {**L.base_record(L.make_spec(TINY, 1, 64, "tensorwise", ("w13",))), "step_time_s": 1.6e-3},
        {**L.base_record(L.make_spec(TINY, 1, 64, "tensorwise", ("o",))), "errors": ["OutOfMemoryError: x"]},
    ]
    text = L.format_table(recs)
    assert "t256-b1s64 (64 tokens): bf16 2.000 ms" in text
    assert "0.80x" in text and "1.25x" in text
    assert "best: tensorwise w13 1.25x" in text
    assert "failed (1): t256-b1s64-tensorwise-o" in text
    recs += [
        {**L.base_record(L.make_spec(TINY, 1, 64, "rowwise", g)), "step_time_s": t}
        for g, t in ((("qkv", "o"), 2.2e-3), (("qkv", "w13", "w2"), 1.0e-3))
    ]
    text = L.format_table(recs)
    assert "rowwise            2 subsets of 2-3 groups: best qkv+w13+w2 2.00x, worst qkv+o 0.91x" in text
    assert "best: rowwise qkv+w13+w2 2.00x" in text


# ---- the module filter and the step on CPU ------------------------------------------------------


@pytest.fixture(scope="module")
def torch_mod():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("recipe", ["tensorwise", "rowwise", "rowwise_with_gw_hp"])
def test_module_filter_converts_exactly_the_named_linears(torch_mod, recipe):
    pytest.importorskip("torchao.float8")
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    from perfmodel.bench._decoder import build_layer

    subsets = [*(s for s in ALL_SUBSETS if s), None]  # None: q alone
    for groups in subsets:
        spec = (
            L.make_spec(TINY, 1, 64, recipe, (), converted=L.Q_ONLY, subset="q")
            if groups is None
            else L.make_spec(TINY, 1, 64, recipe, tuple(groups))
        )
        layer = build_layer(spec.decoder_config(), device="cpu", dtype=torch_mod.float32)
        convert_to_float8_training(
            layer, config=Float8LinearConfig.from_recipe_name(recipe), module_filter_fn=L.LinearFilter(spec.converted)
        )
        assert sorted(L.float8_modules(layer)) == sorted(spec.converted)
        plain = {n for n, m in layer.named_modules() if type(m) is torch_mod.nn.Linear}
        assert plain == set(L.ALL_LINEARS) - set(spec.converted)


def test_convert_checks_what_was_converted(torch_mod):
    pytest.importorskip("torchao.float8")
    from perfmodel.bench._decoder import build_layer

    spec = L.make_spec(TINY, 1, 64, "tensorwise", ("qkv", "w2"))
    layer = build_layer(spec.decoder_config(), device="cpu", dtype=torch_mod.float32)
    L.convert(layer, "tensorwise", spec.converted)
    assert sorted(L.float8_modules(layer)) == sorted(
        ["attention.wq", "attention.wk", "attention.wv", "feed_forward.w2"]
    )
    layer = build_layer(spec.decoder_config(), device="cpu", dtype=torch_mod.float32)
    with pytest.raises(RuntimeError, match="expected"):
        L.convert(layer, "tensorwise", [*spec.converted, "feed_forward.w9"])  # a name the layer lacks
    bf16 = build_layer(spec.decoder_config(), device="cpu", dtype=torch_mod.float32)
    assert L.float8_modules(L.convert(bf16, "bf16", ())) == []


def test_build_case_with_float8_on_cpu_converts_before_compiling(torch_mod):
    pytest.importorskip("torchao.float8")
    spec = L.make_spec(TINY, 2, 32, "rowwise", (), converted=L.Q_ONLY, subset="q")
    case = L.build_case(spec, device="cpu", dtype=torch_mod.float32, compile=False)
    assert L.float8_modules(case.layer) == ["attention.wq"]
    assert tuple(case.x.shape) == (2, 32, 256) and case.x.requires_grad
    assert tuple(case.cos.shape) == (32, 1, 32) and tuple(case.grad_out.shape) == (2, 32, 256)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_eager_step_on_cpu_runs_fwd_bwd_without_accumulating(torch_mod, dtype):
    spec = L.make_spec(TINY, 2, 32, "bf16")
    case = L.build_case(spec, device="cpu", dtype=getattr(torch_mod, dtype), compile=False)
    case.step()
    params = dict(case.layer.named_parameters())
    assert len(params) == 9  # 7 Linear weights + 2 norm weights
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in params.values())
    assert case.x.grad is not None and case.x.grad.shape == case.x.shape
    first = {n: p.grad.clone() for n, p in params.items()}
    x_grad = case.x.grad.clone()
    case.step()  # grads set to None first: the same grads again, not twice them
    for n, p in params.items():
        torch_mod.testing.assert_close(p.grad, first[n])
    torch_mod.testing.assert_close(case.x.grad, x_grad)


@pytest.mark.parametrize(("recipe", "groups"), [("tensorwise", L.GROUPS), ("rowwise", ("qkv", "w2"))])
def test_eager_float8_step_on_cpu(torch_mod, recipe, groups):
    pytest.importorskip("torchao.float8")
    spec = L.make_spec(TINY, 1, 32, recipe, groups)
    case = L.build_case(spec, device="cpu", compile=False)  # bf16, like the GPU sweep
    case.step()
    assert sorted(L.float8_modules(case.layer)) == sorted(spec.converted)
    assert all(p.grad is not None for p in case.layer.parameters()) and case.x.grad is not None


def test_gpu_lock_is_exclusive_reentrant_and_gives_up_at_a_deadline(tmp_path):
    a, b = L.GpuLock(tmp_path / "gpu.lock"), L.GpuLock(tmp_path / "gpu.lock")  # two open files, like two workers
    assert a.acquire()
    assert not b.acquire(deadline=time.time() + 0.05)
    assert a.acquire(deadline=time.time())  # re-entrant (autotuning inside a measured step)
    a.release()
    assert a.held and not b.acquire(deadline=time.time() + 0.02)
    a.release()
    assert not a.held and b.acquire(deadline=time.time() + 1)
    b.release()
    with a.hold():
        assert a.held
    assert not a.held


class _FakeEvent:
    """torch.cuda.Event stand-in: host time at record()."""

    def __init__(self, enable_timing: bool = False) -> None:
        self.t = None

    def record(self) -> None:
        self.t = time.perf_counter()

    def elapsed_time(self, end: _FakeEvent) -> float:
        return (end.t - self.t) * 1e3

    def query(self) -> bool:
        return False  # "the GPU has not reached it yet": the stubbed spin outlasts every launch


def test_measure_code_path_on_cpu_with_cuda_stubbed(torch_mod, monkeypatch, tmp_path):
    """The GPU measurement function end to end, with CUDA calls stubbed and the layer eager on CPU."""
    cuda = torch_mod.cuda
    for name in ("synchronize", "reset_peak_memory_stats", "empty_cache"):
        monkeypatch.setattr(cuda, name, lambda *a, **k: None)
    monkeypatch.setattr(cuda, "max_memory_allocated", lambda *a, **k: 123)
    monkeypatch.setattr(cuda, "max_memory_reserved", lambda *a, **k: 456)
    monkeypatch.setattr(cuda, "Event", _FakeEvent)
    spins = []
    monkeypatch.setattr(cuda, "_sleep", spins.append)
    real_profile = torch_mod.profiler.profile
    cpu_only = [torch_mod.profiler.ProfilerActivity.CPU]  # no CUDA activity to record here
    monkeypatch.setattr(torch_mod.profiler, "profile", lambda activities, **kw: real_profile(activities=cpu_only))
    real_build = L.build_case
    monkeypatch.setattr(  # the worker module's names: _measure_gpu looks them up there
        LW, "build_case", lambda spec, **kw: real_build(spec, device="cpu", dtype=torch_mod.float32, compile=False)
    )
    monkeypatch.setattr(LW, "_LOCK", L.GpuLock(tmp_path / "gpu.lock"))
    cpus = L._available_cpus()
    opts = {"warmup_steps": 2, "timed_steps": 6, "profile_steps": 3, "measure_cpus": cpus, "compile_cpus": cpus}
    phases = []
    spec = L.make_spec(TINY, 1, 32, "bf16")
    rec = {**L.base_record(spec), **L._measure_gpu(spec, opts, time.time() + 60, lambda p, **kw: phases.append(p))}
    assert phases == ["waiting", "measuring"]
    assert len(rec["step_time_s_all"]) == 6 and rec["timed_steps"] == 6
    assert rec["step_time_s_p20"] <= rec["step_time_s"] <= rec["step_time_s_p80"]
    assert rec["peak_mem_bytes"] == 123 and rec["compile_s"] > 0 and rec["lock_wait_s"] >= 0
    assert rec["step_kernel_time_s_all"] is not None and isinstance(rec["kernels"], list)
    assert "_events" not in rec and not LW._LOCK.held
    assert len(spins) == L.HOST_REPS and all(c > 0 for c in spins)
    assert rec["host_step_valid"] is True and len(rec["host_step_s_all"]) == L.HOST_REPS
    assert min(rec["host_step_s_all"]) <= rec["host_step_s"] <= max(rec["host_step_s_all"])
    json.dumps(rec)
    with pytest.raises(L.NoTimeLeft):  # too close to the deadline to time 5 steps
        L._measure_gpu(spec, opts, time.time() + 0.5, lambda p, **kw: None)
    assert not LW._LOCK.held


class _SpinTorch:
    """A torch stand-in for :func:`perfmodel.bench.layer._host_time`: a spin that ends after ``gpu_s``
    of host time (so an Event recorded behind it reports done once that has passed)."""

    def __init__(self, gpu_s: float) -> None:
        self.gpu_s, self.spin_end, self.cycles = gpu_s, 0.0, []
        outer = self

        class _Event:
            def record(self) -> None:
                self.at = outer.spin_end

            def query(self) -> bool:
                return time.perf_counter() >= self.at

        class _Cuda:
            Event = _Event

            @staticmethod
            def synchronize() -> None:
                pass

            @staticmethod
            def _sleep(cycles: int) -> None:
                outer.cycles.append(cycles)
                outer.spin_end = time.perf_counter() + outer.gpu_s

        self.cuda = _Cuda


class _SleepCase:
    def __init__(self, host_s: float) -> None:
        self.host_s, self.steps = host_s, 0

    def step(self) -> None:
        self.steps += 1
        time.sleep(self.host_s)


@pytest.mark.parametrize(("gpu_s", "valid"), [(5.0, True), (0.0, False)])
def test_host_time_launches_behind_a_spin_and_says_whether_it_held(gpu_s, valid):
    fake, case = _SpinTorch(gpu_s), _SleepCase(0.004)
    rec = L._host_time(fake, case, step_s=0.01, steps=3, reps=2)
    assert case.steps == 6 and len(fake.cycles) == 2
    assert fake.cycles[0] == int(2 * 3 * 0.01 * L.HOST_SPIN_CYCLES_PER_S)  # twice the steps' wall time
    assert 0.004 <= rec["host_step_s"] < 0.05 and len(rec["host_step_s_all"]) == 2
    assert rec["host_step_valid"] is valid  # a spin that ended before the launches did proves nothing
    assert L._host_time(fake, case, step_s=0.01, steps=0, reps=2) == {}


# ---- the scheduler, simulated (spawned workers, the real lock, no torch) -----------------------


def _writer(tmp_path):
    return DatasetWriter(tmp_path / "layer.json", {"date": "test", "command": "test"})


def _quick_sweep(tmp_path, specs, **kw):
    """A simulated sweep with time enough to measure every config of ``specs`` (``kw`` overrides), silent."""
    opts = dict(workers=1, budget_s=20, deadline_s=40, simulate={"compile_s": 0.05, "measure_s": 0.02}, eta_check=False)
    return L.run_sweep(_writer(tmp_path), specs, **(opts | kw), log=lambda m: None)


def test_simulated_sweep_measures_one_at_a_time_and_survives_failures(tmp_path):
    specs = L.layer_plan()[:6]
    w = _writer(tmp_path)
    logs: list[str] = []
    summary = L.run_sweep(
        w,
        specs,
        workers=3,
        budget_s=30,
        deadline_s=60,
        simulate={"compile_s": 0.3, "measure_s": 0.15, "fail": ["*-rowwise-all"]},
        eta_check=False,
        log=logs.append,
    )
    data = json.loads((tmp_path / "layer.json").read_text())
    recs = {r["id"]: r for r in data["records"]}
    assert set(recs) == {s.id for s in specs}
    assert sorted(summary["errors"]) == sorted(s.id for s in specs if s.id.endswith("-rowwise-all"))
    assert len(summary["done"]) == 4 and not summary["not_started"]
    for r in recs.values():
        assert set(L.RECORD_FIELDS) <= set(r)
        if r["errors"]:
            assert r["step_time_s"] is None and "simulated failure" in r["errors"][0]
        else:
            assert r["step_time_s"] > 0 and r["kernels"]
    windows = sorted(r["simulated_lock_window"] for r in recs.values() if not r["errors"])
    for (_, end), (start, _) in itertools.pairwise(windows):
        assert start >= end - 1e-3  # measurements never overlap
    assert len({r["worker"] for r in recs.values()}) > 1  # compiled in parallel
    assert any("FAILED" in line for line in logs)
    assert L.done_ids([tmp_path / "layer.json"]) == set(summary["done"])


def test_simulated_quiet_sweep_never_measures_while_a_worker_compiles(tmp_path):
    specs = L.layer_plan()[:7]
    w = _writer(tmp_path)
    summary = L.run_sweep(
        w,
        specs,
        workers=3,
        budget_s=30,
        deadline_s=60,
        simulate={"compile_s": 0.3, "measure_s": 0.1, "fail": ["*-tensorwise-all"]},
        eta_check=False,
        quiet=True,
        log=lambda m: None,
    )
    recs = {r["id"]: r for r in json.loads((tmp_path / "layer.json").read_text())["records"]}
    assert set(recs) == {s.id for s in specs} and not summary["not_started"]
    measured = [r for r in recs.values() if not r["errors"]]
    assert len(measured) == len([s for s in specs if not s.id.endswith("-tensorwise-all")]) == 5
    # the parent counted no compiling worker at the start of any measurement
    assert [r["concurrent_compiles"] for r in measured] == [0] * len(measured)
    # batches: a config dispatched while others measured would start inside a measurement window
    windows = sorted(r["simulated_lock_window"] for r in measured)
    for (_, end), (start, _) in itertools.pairwise(windows):
        assert start >= end - 1e-3
    assert len({r["worker"] for r in recs.values()}) > 1  # still compiled in parallel


def test_simulated_sweep_budget_crash_and_deadline(tmp_path):
    specs = L.layer_plan()[:60]  # more than 2 workers can start in the 3 s budget on any machine
    hang, crash = specs[0].id, specs[1].id
    w = _writer(tmp_path)
    t = time.monotonic()
    summary = L.run_sweep(
        w,
        specs,
        workers=2,
        budget_s=3.0,
        deadline_s=7.0,
        simulate={"compile_s": 0.2, "measure_s": 0.05, "hang": [hang], "crash": [crash]},
        eta_check=False,
        log=lambda m: None,
    )
    assert time.monotonic() - t < 7.0 + 6  # the deadline plus the shutdown
    recs = {r["id"]: r for r in w.records}
    assert "killed at the deadline" in recs[hang]["errors"][0]
    assert recs[hang]["error_kind"] == "deadline"
    assert "worker died" in recs[crash]["errors"][0] and recs[crash]["error_kind"] == "crash"
    assert summary["not_started"]  # the budget stopped new configs
    started = [s.id for s in specs if s.id in recs]
    assert started == [s.id for s in specs[: len(started)]]  # in plan order
    for i in started:  # the others ran, or (a slow machine) their fresh worker was not up by the deadline
        if i not in (hang, crash):
            assert not recs[i]["errors"] or recs[i]["errors"][0].endswith("while queued")
    assert len(started) > 2  # a new worker replaced the crashed one


def test_eta_check_skips_configs_that_cannot_finish(tmp_path):
    specs = L.layer_plan()[:3]
    summary = L.run_sweep(
        _writer(tmp_path), specs, workers=1, budget_s=5, deadline_s=8, simulate={"compile_s": 0.1}, log=lambda m: None
    )
    # the prior compile estimates (tens of seconds) are past an 8 s deadline: nothing starts
    assert summary["skipped"] == [s.id for s in specs] and not summary["done"]


def test_table_command_reads_the_dataset(tmp_path, capsys):
    specs = L.layer_plan()[:3]
    _quick_sweep(tmp_path, specs, workers=2, simulate={"compile_s": 0.1, "measure_s": 0.02})
    assert L.main(["table", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "== layer.json" in out and "d2048-b1s4096 (4096 tokens): bf16" in out
    assert "tensorwise" in out and "rowwise" in out and "best:" in out
    # a second call skips what the first measured
    assert L.main(["plan", "--priority-max", "0", "--skip-from", str(tmp_path / "layer.json")]) == 0
    assert "15 configs" in capsys.readouterr().out


def test_mix_order_plan_tests_the_rule_both_ways():
    from perfmodel.step.kernels import mix_order_cast

    specs = L.mix_order_plan()
    assert len(specs) == len({s.id for s in specs}) == 21
    assert L.layer_size("d3072").dim == 3072
    fires = {
        s.id
        for s in specs
        if s.recipe == "tensorwise" and s.subset in ("all", "qkv") and mix_order_cast(s.dim, s.batch, s.seq_len)
    }
    # batch 1 where the rule fires, batch 2 at the same tokens where it does not, and a case below its row test
    assert "d2048-b1s8192-tensorwise-all" in fires and "d2048-b2s8192-tensorwise-all" not in fires
    assert "d3072-b1s4096-tensorwise-all" not in fires and "d4096-b1s8192-tensorwise-qkv" in fires
    assert all(s.subset != "none" or s.recipe == "bf16" for s in specs)
    # every case has its bf16 baseline
    assert {s.case for s in specs} == {s.case for s in specs if s.recipe == "bf16"}


def test_filter_plan_and_named_plans():
    specs = L.named_plan("filter")
    assert len(specs) == len({s.id for s in specs}) == 16
    assert "d4096-b1s8192-tensorwise-o+w13+w2" in {s.id for s in specs}
    for case in {s.case for s in specs}:  # every pick is measured next to bf16 and every Linear converted
        ids = {s.id for s in specs if s.case == case}
        assert {f"{case}-bf16", f"{case}-tensorwise-all"} <= ids
    assert [s.id for s in L.named_plan("mix_order")] == [s.id for s in L.mix_order_plan()]
    with pytest.raises(ValueError, match="unknown plan"):
        L.named_plan("nope")


def test_compile_mode_is_recorded_and_checked(tmp_path):
    specs = L.layer_plan()[:2]
    _quick_sweep(tmp_path, specs, budget_s=10, deadline_s=20, compile_mode="reduce-overhead")
    recs = json.loads((tmp_path / "layer.json").read_text())["records"]
    assert [r["compile_mode"] for r in recs] == ["reduce-overhead"] * 2
    assert L.base_record(specs[0])["compile_mode"] == "default"
    with pytest.raises(ValueError, match="not one of default, reduce-overhead"):
        L.run_sweep(_writer(tmp_path), specs, compile_mode="max-autotune", simulate={}, log=lambda m: None)
    with pytest.raises(ValueError, match="reduce-overhead"):
        L.base_record(specs[0], "graphs")


def test_build_case_takes_cuda_graphs_only_when_compiled(torch_mod):
    spec = L.layer_plan()[0]
    eager = L.build_case(spec, device="cpu", dtype=torch_mod.float32, compile=False, compile_mode="reduce-overhead")
    assert eager.cudagraphs is False  # nothing compiled: no graphs to replay
    with pytest.raises(ValueError, match="compile mode 'graphs'"):
        L.build_case(spec, device="cpu", dtype=torch_mod.float32, compile=False, compile_mode="graphs")
