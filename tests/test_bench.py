"""perfmodel.bench: shape plans, dataset files, CLI, and the committed H200 sweeps (benchmarks/data) (CPU-only CI)."""

from __future__ import annotations

import gzip
import itertools
import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from perfmodel.bench import SCHEMA, DatasetWriter, GemmSpec, NoGPUError, gemm_plan, linear_plan, validate_dataset
from perfmodel.bench import plan as P
from perfmodel.bench.__main__ import build_parser, dry_run, main
from perfmodel.bench._device import split_steps, summarize_steps
from perfmodel.bench.report import summarize

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "h200_2026-11-30"  # raw sweeps, gzipped; not in the wheel
FIXTURES = ROOT / "tests" / "data"

try:
    import torch

    HAS_CUDA = torch.cuda.is_available()
except ImportError:  # pragma: no cover
    torch = None
    HAS_CUDA = False


def test_import_does_not_import_torch_or_triton():
    code = (
        "import sys, perfmodel.bench, perfmodel.bench.__main__, perfmodel.bench.kernels, "
        "perfmodel.bench.linear, perfmodel.bench.fixtures, perfmodel.bench.report;"
        "print(sorted(m for m in ('torch', 'triton', 'torchao') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---- shape plans -------------------------------------------------------------------------------


def test_gemm_plan_is_deterministic_deduplicated_and_large_enough():
    specs = gemm_plan()
    assert specs == gemm_plan()
    keys = [(s.M, s.K, s.N, s.layout) for s in specs]
    assert len(keys) == len(set(keys))
    assert len(specs) * len(P.GEMM_FORMATS) >= 1200
    assert set(Counter(s.family for s in specs)) == {"square", "odd", "llm", "random"}
    assert all(s.operand_bytes() <= P.MAX_OPERAND_BYTES for s in specs)


def test_gemm_plan_covers_squares_including_non_powers_of_two():
    squares = {s.M for s in gemm_plan() if s.family == "square" and s.M == s.K == s.N}
    assert {256, 768, 1536, 3072, 6144, 12288, 16384} <= squares


def test_linear_gemms_are_the_three_gemms_of_fwd_and_bwd():
    M, K, N = 32768, 4096, 14336
    out, grad_input, grad_weight = P.linear_gemms(M, K, N)
    assert (out.M, out.K, out.N, out.role) == (M, K, N, "out")
    assert (grad_input.M, grad_input.K, grad_input.N, grad_input.role) == (M, N, K, "grad_input")
    # grad_weight reduces over the tokens: M is its K
    assert (grad_weight.M, grad_weight.K, grad_weight.N, grad_weight.role) == (K, M, N, "grad_weight")
    assert out.flops == grad_input.flops == grad_weight.flops == 2 * M * K * N


def test_llm_family_has_every_role_for_every_token_count():
    llm = [s for s in gemm_plan() if s.family == "llm"]
    for K, N, _ in P.LLM_LINEAR_SHAPES:
        for M in P.LLM_M:
            got = {(s.role, s.M, s.K, s.N) for s in llm if s.model is not None}
            assert ("grad_weight", K, M, N) in got or 2 * (K * M + M * N) + 2 * K * N > P.MAX_OPERAND_BYTES


def test_random_family_rounding_fractions():
    specs = P.random_shapes(200, seed=3)
    assert specs == P.random_shapes(200, seed=3)
    assert specs != P.random_shapes(200, seed=4)
    mult64 = sum(all(v % 64 == 0 for v in (s.M, s.K, s.N)) for s in specs)
    assert mult64 >= 100  # half are rounded to 64 (others may land on multiples by chance)
    arbitrary = [s for i, s in enumerate(specs) if i % 4 == 3]
    assert any(any(v % 8 for v in (s.M, s.K, s.N)) for s in arbitrary)
    assert all(16 <= s.M <= 32768 and 256 <= s.K <= 28672 and 256 <= s.N <= 28672 for s in specs)


def test_for_fp8_rounds_k_and_n_up_to_16_and_uses_rc_layout():
    s = GemmSpec(M=1000, K=4097, N=5000, layout="rr", family="odd").for_fp8()
    assert (s.M, s.K, s.N, s.layout) == (1000, 4112, 5008, "rc")


def test_gemm_spec_rejects_bad_values():
    with pytest.raises(ValueError, match=r"GemmSpec.M must be a positive int, got 0"):
        GemmSpec(M=0, K=1, N=1)
    with pytest.raises(ValueError, match=r"layout must be one of rr, rc, cr, cc, got 'xx'"):
        GemmSpec(M=1, K=1, N=1, layout="xx")


def test_linear_plan_groups_by_shape_then_recipe():
    specs = linear_plan(shapes=[(4096, 4096), (8192, 1024)], ms=[256, 1024])
    assert len(specs) == 2 * 4 * 2
    groups = [(s.K, s.N, s.recipe) for s in specs]
    assert groups[0] == groups[1] == (4096, 4096, "bf16")
    assert specs[0].flops == 3 * 2 * 256 * 4096 * 4096


def test_estimates_grow_with_work_and_include_overhead():
    fmt = P.GEMM_FORMATS[0]
    small = P.estimate_gemm_s(GemmSpec(M=256, K=256, N=256), fmt)
    big = P.estimate_gemm_s(GemmSpec(M=8192, K=8192, N=8192), fmt)
    assert small >= 4e-6
    assert big == pytest.approx(2 * 8192**3 / 750e12 + 4e-6)
    assert P.estimate_do_bench_s(big, warmup_ms=1, rep_ms=10, min_reps=10) > 10 * big
    assert 0 < P.estimate_gemm_sweep_s(gemm_plan()) < 600


def test_memory_sizes_are_1mb_to_4gb():
    sizes = P.memory_sizes()
    assert sizes[0] == 2**20 and sizes[-1] == 2**32
    assert all(b == 2 * a for a, b in itertools.pairwise(sizes))


# ---- dataset files -----------------------------------------------------------------------------

META = {k: "x" for k in ("date", "gpu_name", "sm_count", "driver", "cuda", "torch", "triton", "torchao", "command")}


def test_writer_flushes_valid_json_and_nan_becomes_null(tmp_path):
    w = DatasetWriter(tmp_path / "d" / "gemm.json", META)
    w.add(
        {
            "op": "gemm",
            "M": 1,
            "K": 2,
            "N": 3,
            "dtype": "bf16",
            "scaling": None,
            "layout": "rr",
            "family": "square",
            "time_s": 1e-5,
            "time_s_p20": math.nan,
        },
        flush=True,
    )
    data = json.loads((tmp_path / "d" / "gemm.json").read_text())
    assert data["schema"] == SCHEMA
    assert data["records"][0]["time_s_p20"] is None
    assert validate_dataset(data) == []
    assert not list((tmp_path / "d").glob("*.tmp"))


def test_writer_rejects_record_without_op(tmp_path):
    with pytest.raises(ValueError, match="record has no 'op' field"):
        DatasetWriter(tmp_path / "x.json", META).add({"time_s": 1.0})


def test_validate_dataset_names_each_problem():
    bad = {
        "schema": "other",
        "meta": {"date": "2026-11-30"},
        "records": [{"op": "gemm", "M": 1}, {"op": "nope"}, {"op": "copy", "bytes": 2, "time_s": -1}],
    }
    problems = validate_dataset(bad)
    assert any("schema is 'other'" in p for p in problems)
    assert "meta.gpu_name missing" in problems
    assert any("records[0] (gemm) lacks 'K'" in p for p in problems)
    assert any("records[1].op is 'nope'" in p for p in problems)
    assert any("records[2].time_s must be a positive number" in p for p in problems)


def test_split_steps_cuts_at_the_largest_gaps():
    ev = [("a", 0.0, 1.0), ("b", 1.1, 1.0), ("a", 10.0, 1.0), ("b", 11.2, 1.0), ("a", 20.0, 1.0), ("b", 21.0, 2.0)]
    steps = split_steps(ev, 3)
    assert [len(s) for s in steps] == [2, 2, 2]
    summary = summarize_steps(steps)
    assert summary["step_kernel_time_s"] == 2.0
    assert summary["kernels"][0] == {"name": "b", "time_s": pytest.approx(4 / 3), "calls": 1.0}


# ---- CLI ---------------------------------------------------------------------------------------


def test_cli_parses_sections_and_lists(tmp_path):
    args = build_parser().parse_args(
        [
            "linear",
            "--out",
            str(tmp_path),
            "--linear-shapes",
            "4096x1024",
            "--linear-m",
            "256,1024",
            "--linear-dynamic",
            "static",
        ]
    )
    assert args.linear_shapes == [(4096, 1024)] and args.linear_m == [256, 1024]
    with pytest.raises(SystemExit):
        build_parser().parse_args(["linear", "--out", "x", "--linear-shapes", "4096by1024"])
    with pytest.raises(SystemExit):
        build_parser().parse_args(["nope", "--out", "x"])


def test_cli_dry_run_prints_plan_without_gpu(tmp_path, capsys):
    assert main(["all", "--out", str(tmp_path), "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "gemm:" in text and "records" in text and "estimated" in text
    assert "linear:" in text and "compile groups" in text
    args = build_parser().parse_args(["gemm", "--out", "x", "--quick"])
    assert "13 shapes" in dry_run(args, ["gemm"])


def test_cli_rejects_unknown_recipe(tmp_path):
    with pytest.raises(SystemExit, match="unknown recipe"):
        main(["linear", "--out", str(tmp_path), "--dry-run", "--recipes", "bf16,blockwise"])


@pytest.mark.skipif(HAS_CUDA, reason="checks the no-GPU error")
def test_gpu_section_without_cuda_raises_clear_error(tmp_path):
    with pytest.raises(NoGPUError, match=r"needs a CUDA GPU.*--dry-run"):
        main(["gemm", "--out", str(tmp_path)])


def test_report_summarizes_a_folder(tmp_path):
    w = DatasetWriter(tmp_path / "gemm.json", META)
    w.add(
        {
            "op": "gemm",
            "M": 8,
            "K": 8,
            "N": 8,
            "dtype": "bf16",
            "scaling": None,
            "layout": "rr",
            "family": "square",
            "time_s": 1e-6,
            "tflops": 1e-3,
        }
    )
    w.add({"op": "copy", "bytes": 2e9, "size_bytes": 1e9, "time_s": 5e-4})
    w.flush()
    text = summarize(tmp_path)
    assert "gemm (2)" in text and "bf16" in text and "4000 GB/s" in text
    assert main(["report", "--out", str(tmp_path)]) == 0


@pytest.mark.skipif(torch is None, reason="needs torch")
def test_kernel_times_reads_profiler_events_on_cpu():
    from torch.profiler import ProfilerActivity, profile

    from perfmodel.bench._device import kernel_times_s

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        torch.ones(4).add_(1)
    assert kernel_times_s(prof) == []  # no GPU activity on a CPU run, but the API answered


# ---- committed data and fixtures ---------------------------------------------------------------


def _load_gz(path: Path):
    """A committed ``.json.gz`` data file's JSON."""
    return json.loads(gzip.decompress(path.read_bytes()))


@pytest.mark.parametrize("path", sorted(DATA.rglob("*.json.gz")), ids=lambda p: p.name)
def test_shipped_datasets_are_valid(path):
    data = _load_gz(path)
    assert validate_dataset(data) == []
    assert data["meta"]["gpu_name"] == "NVIDIA H200"
    assert "hostname" not in json.dumps(data["meta"]).lower()


def test_shipped_gemm_dataset_breadth():
    files = sorted(DATA.glob("h200_gemm_*.json.gz"))
    assert files, f"the H200 GEMM dataset is missing from {DATA}"
    recs = _load_gz(files[-1])["records"]
    fmts = Counter((r["dtype"], r["scaling"]) for r in recs)
    assert len(recs) >= 1200
    assert set(fmts) == {("bf16", None), ("fp8_e4m3", "tensorwise"), ("fp8_e4m3", "rowwise")}
    assert any(r["role"] == "grad_weight" and r["K"] == 32768 for r in recs)
    assert all(r["K"] % 16 == 0 and r["N"] % 16 == 0 for r in recs if r["dtype"] == "fp8_e4m3")
    for r in recs:  # nothing faster than the H200's dense peaks (989 bf16, 1979 fp8 TFLOP/s)
        assert r["tflops"] < (1979 if r["dtype"] == "fp8_e4m3" else 989)


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("h200_proton_*.hatchet")), ids=lambda p: p.name)
def test_proton_fixtures_are_small_hatchet_json(path):
    assert path.stat().st_size < 200_000
    data = json.loads(path.read_text())
    assert isinstance(data, list) and len(data) == 2
    assert "CUDA" in data[1]  # device block: arch, num_sms, clock_rate, ...


def _hatchet_leaves(node, path=()):
    path = (*path, node["frame"]["name"])
    if not node["children"]:
        yield path, node["metrics"]
    for child in node["children"]:
        yield from _hatchet_leaves(child, path)


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("h200_proton_*.hatchet")), ids=lambda p: p.name)
def test_viewer_reference_matches_the_raw_fixture(path):
    ref = json.loads((FIXTURES / "viewer_reference.json").read_text())["files"][path.name]
    tree, device = json.loads(path.read_text())
    assert ref["device_info"] == device
    leaves = list(_hatchet_leaves(tree))
    assert ref["all_leaves"]["leaves"] == len(leaves)
    assert ref["all_leaves"]["time (ns)"] == sum(m.get("time (ns)", 0) for _, m in leaves)
    assert ref["all_leaves"]["count"] == sum(m.get("count", 0) for _, m in leaves)


def test_triton_matmul_fixture_flops_are_2mnk_per_launch():
    tree, _ = json.loads((FIXTURES / "h200_proton_triton_matmul.hatchet").read_text())
    for node in tree["children"]:
        name, m = node["frame"]["name"], node["metrics"]
        n = int(name.split("M=")[1].split(",")[0])
        width = 8 if name.startswith("matmul_fp8") else 16
        assert m[f"flops{width}"] == m["count"] * 2 * n**3
        assert m["bytes"] == m["count"] * (3 * n * n * (width // 8) + (2 - width // 8) * n * n)


def test_shipped_linear_datasets_ran_fp8_gemms():
    files = sorted(DATA.rglob("h200_linear_*.json.gz"))
    assert files, f"the H200 Linear datasets are missing from {DATA}"
    expected = {"bf16": 0, "tensorwise": 3, "rowwise": 3, "rowwise_with_gw_hp": 2}
    for f in files:
        for r in _load_gz(f)["records"]:
            assert r["fp8_gemm_kernels_per_step"] == expected[r["recipe"]], (f.name, r["M"], r["K"], r["N"])
            assert r["step_kernel_time_s"] <= r["step_wall_time_s"] * 1.05
            assert sum(k["time_s"] for k in r["kernels"]) == pytest.approx(r["step_kernel_time_s"], rel=0.2)


# ---- GPU (skipped in CI) -----------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
def test_gpu_quick_gemm(tmp_path):  # pragma: no cover
    from perfmodel.bench.kernels import check_gemm_accuracy, run_gemm

    assert all(err < 0.05 for err in check_gemm_accuracy(256).values())
    w = DatasetWriter(tmp_path / "gemm.json", META)
    run_gemm(w, [GemmSpec(M=512, K=512, N=512)], kernel_name_specs=1, log=lambda _: None)
    assert len(w.records) == 3 and all(r["time_s"] > 0 for r in w.records)


def test_random_only_plan_is_a_fresh_seed():
    from perfmodel.bench.plan import gemm_plan

    fresh = gemm_plan(random_only=True, n_random=40, seed=2026)
    assert len(fresh) == 40 and {s.family for s in fresh} == {"random"}
    assert {(s.M, s.K, s.N) for s in fresh}.isdisjoint(
        {(s.M, s.K, s.N) for s in gemm_plan(random_only=True, n_random=40, seed=0)}
    )


def test_run_cli_turns_a_missing_gpu_or_extra_into_one_error_line(capsys):
    """Every bench's ``python -m`` entry goes through run_cli: no GPU / no torch / a missing extra is one ``error:``
    line and exit code 2; any other failure is left to propagate; a normal run returns main's code."""
    from perfmodel.bench._device import run_cli
    from perfmodel.errors import MissingExtraError

    def no_gpu() -> int:
        raise NoGPUError("perfmodel.bench needs a CUDA GPU (test)")

    def no_extra() -> int:
        raise MissingExtraError("install perfmodel[bench] (test)")

    def broken() -> int:
        raise ValueError("a bug")

    assert run_cli(no_gpu) == 2 and capsys.readouterr().err == "error: perfmodel.bench needs a CUDA GPU (test)\n"
    assert run_cli(no_extra) == 2 and "error: install perfmodel[bench]" in capsys.readouterr().err
    assert run_cli(lambda: 0) == 0 and run_cli(lambda: 3) == 3
    with pytest.raises(ValueError, match="a bug"):
        run_cli(broken)


def test_bench_entry_points_print_one_error_line_without_a_gpu(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the benches would run")
    for args in (["perfmodel.bench.index_add"], ["perfmodel.bench.moe_block", "pieces", "--models", "dbrx"]):
        r = subprocess.run([sys.executable, "-m", *args, "--out", str(tmp_path / args[0])], capture_output=True,
                           text=True, timeout=120, cwd=ROOT)  # fmt: skip
        assert r.returncode == 2, (args, r.stderr[-500:])
        assert r.stderr.startswith("error: perfmodel.bench needs a CUDA GPU") and "Traceback" not in r.stderr, args
