"""benchmarks.harness.gemm_layouts (moved out of perfmodel.bench; not in the wheel): the layout sweep's plan,
kernel-name parser, CLI and phases (CPU only)."""

from __future__ import annotations

import ast
import gzip
import inspect
import json
import statistics
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.harness import gemm_layouts as G
from perfmodel.bench import DatasetWriter, GemmSpec, validate_dataset
from perfmodel.bench import plan as P

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def plan0() -> list[G.LayoutItem]:
    return G.plan_items(seed=0)[0]


def _shapes(items):
    """{group: [items]} in run order."""
    out: dict[int, list[G.LayoutItem]] = {}
    for i in items:
        out.setdefault(i.group, []).append(i)
    return out


def test_import_does_not_import_torch_or_triton():
    code = (
        "import sys, benchmarks.harness.gemm_layouts;"
        "print(sorted(m for m in ('torch', 'triton', 'torchao') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


# ---- plan ------------------------------------------------------------------------------------------


def test_plan_is_deterministic_per_seed_and_keeps_the_mix_across_seeds(plan0):
    assert plan0 == G.plan_items(seed=0)[0]
    other = G.plan_items(seed=7)[0]
    assert other != plan0
    count = Counter((i.spec.family, i.spec.layout, i.fmt.key) for i in plan0)
    assert count == Counter((i.spec.family, i.spec.layout, i.fmt.key) for i in other)
    # the fixed grid is the same at every seed, the random draws are not
    assert {i.id for i in plan0 if i.spec.family == "square"} == {i.id for i in other if i.spec.family == "square"}
    assert {i.id for i in plan0 if i.spec.family == "random"} != {i.id for i in other if i.spec.family == "random"}


def test_order_seed_runs_the_same_gemms_in_another_order(plan0):
    # --order-seed: the shapes of --seed, shuffled by another seed; each shape's five items stay together
    assert G.plan_items(seed=0, order_seed=0)[0] == plan0
    other = G.plan_items(seed=0, order_seed=9000)[0]
    assert sorted(i.id for i in other) == sorted(i.id for i in plan0)
    assert [i.id for i in other] != [i.id for i in plan0]
    for items in (plan0, other):
        groups = [i.group for i in items]
        assert groups == sorted(groups)
        by_group: dict[int, set[str]] = {}
        for i in items:
            by_group.setdefault(i.group, set()).add(i.shape_id)
        assert all(len(v) == 1 for v in by_group.values())
    with pytest.raises(ValueError, match="order_seed must be an int"):
        G.plan_items(seed=0, order_seed="1")  # type: ignore[arg-type]
    text = G.plan_summary(other, {}, seed=0, order_seed=9000, family_mix=G.FAMILY_MIX)
    assert text.startswith("gemm_layouts plan, seed 0, run order of seed 9000")
    assert G.plan_summary(plan0, {}, seed=0, family_mix=G.FAMILY_MIX).startswith("gemm_layouts plan, seed 0\n")


def test_rotate_starts_each_shape_at_another_of_its_five(plan0):
    # --rotate: the same shapes in the same order, shape g's five items starting at its (g mod 5)-th, so every kind
    # runs first after another shape for a fifth of the shapes (by default bf16 rr always does)
    rot = G.plan_items(seed=0, rotate=True)[0]
    assert G.plan_items(seed=0, rotate=False)[0] == plan0
    assert sorted(i.id for i in rot) == sorted(i.id for i in plan0)
    assert [i.shape_id for i in rot[::5]] == [i.shape_id for i in plan0[::5]]

    def kinds(items):
        return [(i.spec.layout, i.fmt.key) for i in items]

    natural = kinds(plan0[:5])
    assert natural == [("rr", "bf16"), ("rc", "bf16"), ("cr", "bf16"), *(("rc", f.key) for f in G.FP8_FORMATS)]
    assert all(kinds(plan0[g : g + 5]) == natural for g in range(0, len(plan0), 5))
    for g in range(len(rot) // 5):
        five = rot[5 * g : 5 * g + 5]
        assert {i.group for i in five} == {g}
        assert kinds(five) == natural[g % 5 :] + natural[: g % 5]
    firsts = Counter(kinds(rot[::5]))
    assert len(firsts) == 5 and max(firsts.values()) - min(firsts.values()) <= 1
    with pytest.raises(ValueError, match="rotate must be True or False, got 1"):
        G.plan_items(seed=0, rotate=1)  # type: ignore[arg-type]
    text = G.plan_summary(rot, {}, seed=0, rotate=True, family_mix=G.FAMILY_MIX)
    assert text.startswith("gemm_layouts plan, seed 0, each shape's five GEMMs rotated (shape g first runs its")


def test_family_mix_matches_the_constants(plan0):
    shapes = _shapes(plan0)
    per_family = Counter(group[0].spec.family for group in shapes.values())
    assert per_family == Counter({f: n for f, n in G.FAMILY_MIX.items() if n})
    assert len(plan0) == 5 * sum(G.FAMILY_MIX.values())
    assert set(G.FAMILY_MIX) == set(G.FAMILIES)


def test_every_shape_runs_bf16_in_three_layouts_and_fp8_rc(plan0):
    for group in _shapes(plan0).values():
        got = [(i.spec.layout, i.fmt.key) for i in group]
        assert got == [
            ("rr", "bf16"),
            ("rc", "bf16"),
            ("cr", "bf16"),
            ("rc", "fp8_e4m3_tensorwise"),
            ("rc", "fp8_e4m3_rowwise"),
        ]
        bf16 = {(i.spec.M, i.spec.K, i.spec.N) for i in group if i.fmt.dtype == "bf16"}
        assert len(bf16) == 1  # the same shape in every layout
        assert len({i.shape_id for i in group}) == 1
        assert len({(i.spec.family, i.alignment, i.natural_layout) for i in group}) == 1


def test_ids_are_unique_and_shapes_distinct(plan0):
    ids = [i.id for i in plan0]
    assert len(ids) == len(set(ids))
    assert len({i.shape_id for i in plan0}) == len(_shapes(plan0))
    assert plan0[0].id == f"{plan0[0].shape_id}_rr_bf16"


def test_fp8_rounds_k_and_n_up_to_16_and_keeps_requested(plan0):
    fp8 = [i for i in plan0 if i.fmt.dtype == "fp8_e4m3"]
    assert fp8 and all(i.spec.layout == "rc" for i in fp8)
    assert all(i.spec.K % 16 == 0 and i.spec.N % 16 == 0 for i in fp8)
    assert all(i.spec.M == i.requested.M for i in fp8)
    assert all(0 <= i.spec.K - i.requested.K < 16 and 0 <= i.spec.N - i.requested.N < 16 for i in fp8)
    rounded = [i for i in fp8 if (i.spec.K, i.spec.N) != (i.requested.K, i.requested.N)]
    assert len(rounded) > 50  # odd, random and small_m shapes
    rec = rounded[0].fields()
    assert rec["requested"] == {"M": rounded[0].requested.M, "K": rounded[0].requested.K, "N": rounded[0].requested.N}
    assert (rec["K"], rec["N"]) == (rounded[0].spec.K, rounded[0].spec.N)
    assert "requested" not in next(i for i in plan0 if i.fmt.dtype == "bf16").fields()


def test_fp8_rounding_of_one_odd_shape():
    shape = G._Shape(GemmSpec(M=1000, K=4097, N=5000, family="odd"), alignment="K:1")
    items = G._shape_items(shape, 3)
    tw = items[3]
    assert (tw.spec.M, tw.spec.K, tw.spec.N, tw.spec.layout) == (1000, 4112, 5008, "rc")
    assert tw.id == "1000x4097x5000_rc_fp8_e4m3_tensorwise"
    assert tw.fields()["requested"] == {"M": 1000, "K": 4097, "N": 5000}
    assert [i.group for i in items] == [3] * 5


def test_llm_family_roles_natural_layouts_and_token_counts(plan0):
    llm = [i for i in plan0 if i.spec.family == "llm" and i.fmt.dtype == "bf16"]
    natural = {"out": "rc", "grad_input": "rr", "grad_weight": "cr"}
    kn = {(K, N) for K, N, _ in P.LLM_LINEAR_SHAPES}
    tokens = Counter()
    for i in llm:
        s = i.spec
        assert i.natural_layout == natural[s.role]
        assert s.model is not None
        if s.role == "out":
            assert (s.K, s.N) in kn and s.M in G.LLM_M
        elif s.role == "grad_input":
            assert (s.N, s.K) in kn and s.M in G.LLM_M
        else:  # grad_weight reduces over the tokens
            assert (s.M, s.N) in kn and s.K in G.LLM_M
        tokens[s.K if s.role == "grad_weight" else s.M] += 1
    # round-robin over M: every token count is there, in about equal numbers (shapes shared by two
    # roles, e.g. the out GEMM of (K, N) and the grad_input GEMM of (N, K), are kept once)
    assert set(tokens) == set(G.LLM_M)
    assert max(tokens.values()) <= 1.3 * min(tokens.values())
    assert sum(1 for i in llm if i.spec.layout == i.natural_layout) == G.FAMILY_MIX["llm"]


def test_random_family_ranges_and_exact_alignment_fractions(plan0):
    rnd = [i for i in plan0 if i.spec.family == "random" and i.fmt.dtype == "bf16" and i.spec.layout == "rr"]
    n = G.FAMILY_MIX["random"]
    cycle = sum(a[4] for a in G.RANDOM_ALIGNMENTS)
    assert n % cycle == 0
    assert Counter(i.alignment for i in rnd) == {name: w * n // cycle for name, *_, w in G.RANDOM_ALIGNMENTS}
    mult = {name: (m, k, nn) for name, m, k, nn, _ in G.RANDOM_ALIGNMENTS}
    for i in rnd:
        s = i.spec
        m, k, nn = mult[i.alignment]
        assert s.M % m == 0 and s.K % k == 0 and s.N % nn == 0
        assert 1 <= s.M <= 65536 and 256 <= s.K <= 28672 and 256 <= s.N <= 28672
    arbitrary_m = [i for i in rnd if i.alignment in ("a1", "m1")]
    assert sum(i.spec.M % 8 != 0 for i in arbitrary_m) > len(arbitrary_m) // 2
    assert min(i.spec.M for i in rnd) < 16 and max(i.spec.M for i in rnd) > 8192  # log-uniform 1..65536


def test_odd_and_small_m_families(plan0):
    odd = [i for i in plan0 if i.spec.family == "odd" and i.fmt.dtype == "bf16" and i.spec.layout == "rr"]
    assert len(odd) == G.FAMILY_MIX["odd"]
    for i in odd:
        kind, m = i.alignment.split(":")
        m = int(m)
        for d in "KN":
            v = getattr(i.spec, d)
            if d in kind:
                assert v % m == 0 and v % (2 * m) != 0  # not a multiple of 8 (or of 16 for m = 8)
            else:
                assert v % 64 == 0
        assert i.spec.M % 64 == 0
    assert Counter(i.alignment for i in odd) == {
        f"{k}:{m}": len(odd) // 12 for k in G.ODD_KINDS for m in G.ODD_MISALIGN
    }
    small = [i for i in plan0 if i.spec.family == "small_m" and i.fmt.dtype == "bf16" and i.spec.layout == "rr"]
    kn = {(K, N) for K, N, _ in P.LLM_LINEAR_SHAPES}
    assert all(1 <= i.spec.M <= 256 and (i.spec.K, i.spec.N) in kn for i in small)
    assert sum(i.spec.M % 8 != 0 for i in small) > len(small) // 2


def test_budget_cut_drops_a_uniform_random_subset_not_families(plan0):
    shapes = list(_shapes(plan0).values())
    assert [g[0].group for g in shapes] == list(range(len(shapes)))  # items of a shape are contiguous
    total = Counter(g[0].spec.family for g in shapes)
    for frac in (0.25, 0.5):
        head = Counter(g[0].spec.family for g in shapes[: int(frac * len(shapes))])
        for fam, n in total.items():
            expected = frac * n
            assert abs(head[fam] - expected) <= 4 * (expected * (1 - frac)) ** 0.5 + 2, (fam, frac, head[fam])
    # families are interleaved from the start, not run one after another
    assert len({g[0].spec.family for g in shapes[:60]}) == len(total)
    # the cost is spread too: the first half holds between a third and two thirds of the estimated time
    cost = [G._shape_time_s(g) for g in shapes]
    assert 1 / 3 < sum(cost[: len(cost) // 2]) / sum(cost) < 2 / 3


def test_estimated_phase_times_fit_their_limits(plan0):
    for seed in (0, 1, 2026):
        items = plan0 if seed == 0 else G.plan_items(seed=seed)[0]
        assert G.estimate_time_phase_s(items) < G.TIME_BUDGET_S < 240
        assert G.estimate_kernels_phase_s(items) < G.KERNELS_BUDGET_S < 180
    # no single shape can overrun the budgets by much
    assert all(G._shape_time_s(g) <= G.MAX_SHAPE_TIME_S for g in _shapes(plan0).values())


def test_layout_penalty_marks_misaligned_leading_dims():
    bf16 = G.BF16
    assert G._layout_penalty(GemmSpec(M=4096, K=4096, N=4096, layout="rc"), bf16) == 1.0
    assert G._layout_penalty(GemmSpec(M=4096, K=4096, N=4096, layout="rr"), bf16) == G.RR_PENALTY
    # cr: A's leading dim is M
    assert G._layout_penalty(GemmSpec(M=4095, K=4096, N=4096, layout="cr"), bf16) == G.ALIGN_PENALTY
    assert G._layout_penalty(GemmSpec(M=4095, K=4096, N=4096, layout="rc"), bf16) == 1.0
    assert G._layout_penalty(GemmSpec(M=4096, K=4096, N=4095, layout="rc"), bf16) == G.ALIGN_PENALTY  # C
    assert G._layout_penalty(GemmSpec(M=4095, K=4096, N=4096, layout="rc"), G.FP8_FORMATS[0]) == 1.0


def test_quick_plan_is_small_and_cheap():
    items, _ = G.plan_items(seed=0, quick=True)
    per_family = Counter(i.spec.family for i in items if i.fmt.dtype == "bf16" and i.spec.layout == "rr")
    assert per_family == dict.fromkeys(G.FAMILIES, G.QUICK_SHAPES_PER_FAMILY)
    assert all(G.estimate_item_kernel_s(i) < G.QUICK_MAX_KERNEL_S for i in items)
    # items only: the two processes' startup (torch import, CUDA init) comes on top
    item_s = G.estimate_time_phase_s(items) - G.TIME_STARTUP_S + G.estimate_kernels_phase_s(items)
    assert item_s - G.KERNELS_STARTUP_S < 5


def test_family_mix_override_and_errors():
    items, _ = G.plan_items(seed=0, family_mix={"square": 3, "random": 4})
    assert Counter(i.spec.family for i in items) == {"square": 15, "random": 20}
    with pytest.raises(ValueError, match="unknown families"):
        G.plan_items(family_mix={"huge": 1})
    with pytest.raises(ValueError, match="has only 15 distinct shapes"):
        G.plan_items(family_mix={"square": 16})
    assert G._family_mix("llm=10, random=0")["llm"] == 10
    assert G._family_mix("llm=10")["random"] == G.FAMILY_MIX["random"]
    with pytest.raises(Exception, match="unknown family"):
        G._family_mix("llmm=10")


# ---- kernel names ----------------------------------------------------------------------------------


def test_parse_nvjet_names():
    k = G.parse_kernel_name("nvjet_sm90_tst_64x32_64x16_4x2_h_bz_NNT")
    assert k["family"] == "nvjet" and k["sm"] == 90 and k["types"] == "tst"
    assert (k["tile"], k["tile_k"], k["stages"], k["cluster"]) == ("64x32", 64, 16, "4x2")
    assert (k["raster"], k["bz"], k["split_k"], k["coop"], k["transposes"]) == ("h", True, False, None, "NNT")
    assert k["role"] == "gemm" and k["align"] is None and k["flags"] == []

    k = G.parse_kernel_name("nvjet_sm90_qqtst_128x256_128x2_2x1_v_bz_coopA_NTN")
    assert (k["types"], k["tile_m"], k["tile_n"], k["tile_k"], k["stages"]) == ("qqtst", 128, 256, 128, 2)
    assert (k["cluster_m"], k["cluster_n"], k["raster"], k["coop"], k["transposes"]) == (2, 1, "v", "A", "NTN")

    k = G.parse_kernel_name("nvjet_sm90_tst_128x256_64x4_2x1_v_bz_NNT")
    assert (k["tile"], k["cluster"], k["raster"], k["bz"]) == ("128x256", "2x1", "v", True)

    k = G.parse_kernel_name("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_splitK_NNT")
    assert k["split_k"] and k["coop"] == "A" and k["transposes"] == "NNT"

    k = G.parse_kernel_name("nvjet_sm90_qqtst_128x128_128x6_1x1_h_bz_coopA_algo2_ovscale_TNT")
    assert (k["algo"], k["flags"], k["cluster"]) == (2, ["ovscale"], "1x1")

    k = G.parse_kernel_name("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT")
    assert k["flags"] == ["bias"]

    k = G.parse_kernel_name("nvjet_tst_128x8_TNT")  # a shortened name: what is there
    assert (k["family"], k["tile"], k["transposes"], k["sm"]) == ("nvjet", "128x8", "TNT", None)


def test_parse_pre_hopper_and_helper_kernel_names():
    k = G.parse_kernel_name(
        "sm75_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize32x32x64_stage3_warpsize1x2x1_tensor16x8x16_align1"
    )
    assert (k["family"], k["sm"], k["align"], k["transposes"]) == ("xmma", 75, 1, "tn")
    assert (k["tile"], k["tile_k"], k["stages"], k["types"]) == ("32x32", 64, 3, "bf16bf16_bf16f32_f32")
    assert not k["split_k"]

    k = G.parse_kernel_name(
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off"
        "_kernel__5x_cublas"
    )
    assert (k["family"], k["sm"], k["tile"], k["transposes"], k["split_k"]) == ("xmma", 90, "128x256", "nt", False)

    name = "cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_nn_align1"
    k = G.parse_kernel_name(f"void cutlass::Kernel2<{name}>({name}::Params)")
    assert (k["family"], k["sm"], k["tile"], k["align"], k["transposes"]) == ("cutlass", 75, "256x128", 1, "nn")
    assert k["tile_k"] is None

    name = "cutlass_80_tensorop_bf16_s16816gemm_bf16_128x256_64x3_nn_align2"
    k = G.parse_kernel_name(f"void cutlass::Kernel2<{name}>({name}::Params)")
    assert (k["sm"], k["tile"], k["tile_k"], k["stages"], k["align"]) == (80, "128x256", 64, 3, 2)

    k = G.parse_kernel_name("void cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_bf16_256x64_32x4_nn_align2>(x)")
    assert (k["sm"], k["tile"], k["stages"], k["align"], k["types"]) == (80, "256x64", 4, 2, "s16816gemm_bf16")

    k = G.parse_kernel_name(
        "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, false>"
        "(cublasLt::cublasSplitKParams<float>, float const*)"
    )
    assert (k["family"], k["role"], k["split_k"]) == ("splitk_reduce", "reduce", True)

    k = G.parse_kernel_name("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nn")
    assert (k["family"], k["sm"], k["tile"], k["transposes"]) == ("cublas_legacy", 80, "128x128", "nn")

    k = G.parse_kernel_name("void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, 128, 16>(x)")
    assert (k["family"], k["role"]) == ("gemv", "gemm")
    assert G.parse_kernel_name("Memset (Device)")["role"] == "memset"
    k = G.parse_kernel_name("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>>(int)")
    assert (k["family"], k["role"]) == ("other", "other")
    keys = set(G.parse_kernel_name("nvjet_sm90_tst_64x32_64x16_4x2_h_bz_NNT"))
    assert keys == set(G.parse_kernel_name("Memset (Device)")) == set(G.parse_kernel_name("anything"))


def test_parse_every_kernel_name_in_the_shipped_linear_data():
    data = ROOT / "benchmarks" / "data" / "h200_2026-11-30"
    names = {
        k["name"]
        for path in data.glob("h200_linear*.json.gz")
        for r in json.loads(gzip.decompress(path.read_bytes()))["records"]
        for k in r.get("kernels", [])
    }
    nvjet = [n for n in names if n.startswith("nvjet_sm90_")]
    assert len(nvjet) > 50
    for n in nvjet:
        k = G.parse_kernel_name(n)
        assert k["tile"] and k["cluster"] and k["raster"] in ("v", "h") and len(k["transposes"]) == 3, n
        assert set(k["flags"]) <= {"ovscale", "bias"}, n
    for n in names:
        if "cutlass_" in n and "align" in n:
            k = G.parse_kernel_name(n)
            assert k["family"] == "cutlass" and k["sm"] in (75, 80) and k["align"] in (1, 2) and k["tile"], n


# ---- kernels phase helpers -------------------------------------------------------------------------

FLUSH = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>>"


def test_split_at_markers_and_summarize_calls():
    gemm, red = "nvjet_sm90_tst_128x64_64x8_2x1_v_bz_splitK_NNT", "void cublasLt::splitKreduce_kernel<32>"
    ev = [("junk", 0.0, 1.0)]
    t = 10.0
    for d in (5e-6, 6e-6, 5e-6):
        ev += [(FLUSH, t, 80e-6), (gemm, t + 1e-4, d), (red, t + 1e-4 + d + 1e-6, 2e-6)]
        t += 1.0
    calls = G.split_at_markers(ev, {FLUSH})
    assert [[n for n, _, _ in c] for c in calls] == [[gemm, red]] * 3
    s = G.summarize_calls(calls)
    assert s["time_s"] == pytest.approx(7e-6) and s["time_s_all"] == pytest.approx([7e-6, 8e-6, 7e-6])
    assert s["span_s"] == pytest.approx(8e-6)
    assert s["n_kernels"] == 2 and s["kernel_sequences"] == 1
    assert s["main_kernel"] == gemm and s["tile"] == "128x64" and s["cluster"] == "2x1" and s["split_k"]
    assert s["kernels"][1] == {"name": red, "time_s": pytest.approx(2e-6), "family": "splitk_reduce", "sm": None}
    assert s["main_kernel_info"]["raster"] == "v" and "coop" not in s["main_kernel_info"]


def test_summarize_calls_takes_the_most_common_sequence():
    a, b = "nvjet_sm90_tst_64x32_64x16_4x2_h_bz_NNT", "Memset (Device)"
    calls = [[(a, 0.0, 4e-6)], [(b, 0.0, 1e-6), (a, 1e-5, 5e-6)], [(a, 0.0, 6e-6)]]
    s = G.summarize_calls(calls)
    assert s["kernel_sequences"] == 2 and s["n_kernels"] == 1
    assert s["kernels"][0]["time_s"] == pytest.approx(5e-6)  # median of the calls running (a,)
    assert s["time_s"] == pytest.approx(6e-6)  # median of all per-call sums 4, 6, 6


def test_chunks_bound_items_time_and_bytes(plan0):
    chunks = G._chunks(plan0)
    assert [i for c in chunks for i in c] == plan0
    for c in chunks:
        assert len(c) <= G.CHUNK_ITEMS
        if len(c) > 1:
            assert sum((G.PROFILE_WARMUP_CALLS + G.PROFILED_CALLS) * G.estimate_item_kernel_s(i) for i in c) <= (
                G.CHUNK_MAX_S
            )


# ---- the time phase never starts a profiler ------------------------------------------------------------

FORBIDDEN = {"profile", "profiler", "ProfilerActivity", "kernel_times_s", "run_kernels", "proton", "_enable_profiler"}


def _module_functions() -> dict[str, ast.FunctionDef]:
    tree = ast.parse(inspect.getsource(G))
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def _names(node: ast.AST) -> set[str]:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
        elif isinstance(n, ast.ImportFrom):
            out |= set((n.module or "").split(".")) | {a.name for a in n.names}
        elif isinstance(n, ast.Import):
            out |= {part for a in n.names for part in a.name.split(".")}
    return out


def _reachable_names(roots: list[ast.AST]) -> set[str]:
    """Every name used by ``roots`` and by the module functions they call, transitively."""
    funcs = _module_functions()
    names: set[str] = set()
    todo, seen = list(roots), set()
    while todo:
        node = todo.pop()
        new = _names(node)
        names |= new
        for name in new & set(funcs):
            if name not in seen:
                seen.add(name)
                todo.append(funcs[name])
    return names


def _time_branch(main: ast.FunctionDef) -> ast.If:
    for n in ast.walk(main):
        if isinstance(n, ast.If) and "time" in ast.unparse(n.test) and "phase" in ast.unparse(n.test):
            return n
    raise AssertionError("main has no `if args.phase == 'time'` branch")


def test_time_code_path_never_references_a_profiler():
    main = _module_functions()["main"]
    branch = _time_branch(main)
    kernels_branch = branch.orelse
    branch.orelse = []  # main as the time process runs it: everything but the kernels branch
    time_path = _reachable_names([main])
    assert "run_time" in time_path and "bench" in time_path and "_make_case" in time_path
    assert not (time_path & FORBIDDEN), time_path & FORBIDDEN
    # the module-level imports the time process runs do not start one either
    assert "from torch" not in inspect.getsource(G).split("\n__all__")[0]
    # the check does catch the kernels path
    kernels_path = _reachable_names(kernels_branch)
    assert {"profile", "ProfilerActivity", "kernel_times_s"} <= kernels_path


def test_run_time_on_cpu_starts_no_profiler(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    import torch.autograd.profiler as autograd_profiler

    def refuse(*args, **kwargs):
        raise AssertionError("the time phase started a profiler")

    class Refused:
        def __init__(self, *args, **kwargs):
            refuse()

    monkeypatch.setattr(torch.profiler, "profile", Refused)
    monkeypatch.setattr(autograd_profiler, "profile", Refused)
    monkeypatch.setattr(torch._C._autograd, "_enable_profiler", refuse)
    monkeypatch.setattr(torch._C._autograd, "_prepare_profiler", refuse)
    calls = []

    def fake_bench(fn, *, warmup_ms, rep_ms):
        out = fn()
        calls.append((tuple(out.shape), warmup_ms, rep_ms))
        return {"time_s": 2e-5, "time_s_p20": 1.9e-5, "time_s_p80": 2.1e-5}

    monkeypatch.setattr(G, "bench", fake_bench)
    items = G._shape_items(G._Shape(GemmSpec(M=24, K=40, N=16, family="square")), 0)
    w = DatasetWriter(tmp_path / "t.json", {"command": "test"})
    summary = G.run_time(w, items, device="cpu", log=lambda m: None)
    bf16 = [r for r in w.records if r["dtype"] == "bf16"]
    assert [r["layout"] for r in bf16] == ["rr", "rc", "cr"]
    assert summary["records"] == len(w.records) == 5 - summary["n_errors"]  # fp8 may be GPU-only
    assert all(r["timing"] == "event" and r["time_s"] == 2e-5 for r in w.records)
    assert w.records[0]["tflops"] == pytest.approx(2 * 24 * 40 * 16 / 2e-5 / 1e12)
    assert calls[0] == ((24, 16), 1.0, 10.0)
    assert summary["profiler_enabled_after"] is False
    data = json.loads((tmp_path / "t.json").read_text())
    assert [r["id"] for r in data["records"]] == [r["id"] for r in w.records]


def test_run_time_stops_starting_items_after_the_budget(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setattr(G, "bench", lambda fn, **kw: {"time_s": 1e-5, "time_s_p20": 1e-5, "time_s_p80": 1e-5})
    items = G._shape_items(G._Shape(GemmSpec(M=8, K=8, N=8, family="square")), 0)
    w = DatasetWriter(tmp_path / "t.json", {})
    summary = G.run_time(w, items, device="cpu", budget_s=-1.0, log=lambda m: None)
    assert summary["truncated"] and summary["records"] == 0


def test_rep_stats_by_hand():
    from perfmodel.bench._device import rep_stats

    # sorted 1, 2, 3, 10: the 20th percentile sits 0.6 of the way from 1 to 2, the 80th 0.4 from 3 to 10
    got = rep_stats([3.0, 1.0, 2.0, 10.0])
    assert got == pytest.approx({"time_s": 2.5, "time_s_p20": 1.6, "time_s_p80": 5.8, "time_s_mean": 4.0, "reps": 4})
    with pytest.raises(ValueError, match="no runs"):
        rep_stats([])


def test_bench_keeps_every_timed_run_of_do_bench(monkeypatch):
    import types

    from perfmodel.bench import _device

    seen = {}

    def fake_do_bench(fn, **kw):
        seen.update(kw)
        fn()
        return [1.0, 4.0, 2.0]  # ms, one per timed run

    monkeypatch.setitem(sys.modules, "triton.testing", types.SimpleNamespace(do_bench=fake_do_bench))
    got = _device.bench(lambda: None, warmup_ms=25.0, rep_ms=100.0)
    assert seen == {"warmup": 25.0, "rep": 100.0, "return_mode": "all"}
    assert got["time_s"] == pytest.approx(2e-3) and got["time_s_mean"] == pytest.approx(7e-3 / 3)
    assert got["reps"] == 3 and got["time_s_p20"] == pytest.approx(1.4e-3)


def test_time_phase_takes_do_bench_settings(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")
    calls = []

    def fake_bench(fn, *, warmup_ms, rep_ms):
        calls.append((warmup_ms, rep_ms))
        return {"time_s": 1e-5, "time_s_p20": 1e-5, "time_s_p80": 1e-5}

    monkeypatch.setattr(G, "bench", fake_bench)
    items = G._shape_items(G._Shape(GemmSpec(M=8, K=8, N=8, family="square")), 0)
    summary = G.run_time(DatasetWriter(tmp_path / "t.json", {}), items, device="cpu", warmup_ms=25, rep_ms=100)
    assert calls and set(calls) == {(25, 100)}  # an 8x8x8 GEMM is far under 25 ms: the settings as given
    assert (summary["warmup_ms"], summary["rep_ms"]) == (25, 100)
    args = G.build_parser().parse_args(["time", "--warmup-ms", "25", "--rep-ms", "100"])
    assert (args.warmup_ms, args.rep_ms) == (25.0, 100.0)
    assert (G.build_parser().parse_args(["time"]).warmup_ms, G.WARMUP_MS) == (1.0, 1.0)
    for bad in ("0", "-1", "nan", "soon"):
        with pytest.raises(SystemExit):
            G.build_parser().parse_args(["time", "--rep-ms", bad])
        assert "above 0" in capsys.readouterr().err
    items = G.plan_items(seed=0, quick=True)[0]
    default = G.plan_summary(items, {}, seed=0, family_mix=G.FAMILY_MIX)
    slow = G.plan_summary(items, {}, seed=0, family_mix=G.FAMILY_MIX, warmup_ms=25, rep_ms=100)
    assert "do_bench warmup 25 ms, rep 100 ms" in slow and "do_bench warmup" not in default

    slow_s = G.estimate_time_phase_s(items, warmup_ms=25, rep_ms=100)
    assert f"estimated: time phase {slow_s:.0f} s" in slow
    # 50 items, each with >= 100 ms of timed runs against >= 10 ms (the warm-up runs of a tiny GEMM cost ~0)
    assert slow_s - G.estimate_time_phase_s(items) >= 50 * 0.09 * 0.95


def test_operands_have_the_named_layouts():
    torch = pytest.importorskip("torch")
    r = G._operand(torch, 3, 5, "r", torch.bfloat16, "cpu")
    c = G._operand(torch, 3, 5, "c", torch.bfloat16, "cpu")
    assert r.shape == c.shape == (3, 5)
    assert r.stride() == (5, 1) and c.stride() == (1, 3)
    item = G._shape_items(G._Shape(GemmSpec(M=6, K=10, N=4, family="square")), 0)[2]  # cr
    fn, (a, b) = G._make_case(torch, item, "cpu")
    assert a.stride() == (1, 6) and b.stride() == (4, 1) and fn().shape == (6, 4)
    assert bool((a != 0).any())


# ---- CLI and summary -------------------------------------------------------------------------------


def test_dry_run_prints_the_plan_without_torch(tmp_path):
    code = textwrap.dedent(
        f"""
        import sys
        from benchmarks.harness.gemm_layouts import main
        assert main(["time", "--dry-run", "--out", {str(tmp_path)!r}]) == 0
        assert main(["kernels", "--dry-run", "--quick", "--out", {str(tmp_path)!r}]) == 0
        print(sorted(m for m in ("torch", "triton") if m in sys.modules))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    text = out.stdout
    assert text.strip().endswith("[]")
    assert "FAMILY_MIX (shapes): llm=270" in text
    assert f"items: {5 * sum(G.FAMILY_MIX.values())}" in text
    assert "items: 50" in text  # --quick
    assert "estimated: time phase" in text and "kernels phase" in text
    assert "random" in text and "a64 (64,64,64) x5/20" in text
    assert not list(tmp_path.iterdir())  # a dry run writes nothing


def test_plan_writes_the_item_list(tmp_path, capsys):
    assert G.main(["plan", "--out", str(tmp_path), "--seed", "3", "--family-mix", "llm=6,random=20"]) == 0
    data = json.loads((tmp_path / "gemm_layouts_plan.json").read_text())
    assert data["meta"]["seed"] == 3 and data["meta"]["family_mix"]["llm"] == 6
    assert data["meta"]["command"].startswith("python -m benchmarks.harness.gemm_layouts plan")
    ids = [r["id"] for r in data["items"]]
    assert len(ids) == len(set(ids)) == 5 * (6 + 20 + 15 + 144 + 96)
    assert "wrote" in capsys.readouterr().out


def test_gpu_phase_without_out_or_cuda_fails_clearly(tmp_path):
    with pytest.raises(SystemExit, match="needs --out"):
        G.main(["time"])
    with pytest.raises(SystemExit):
        G.build_parser().parse_args(["nope"])
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        from perfmodel.bench import NoGPUError

        with pytest.raises(NoGPUError, match="--dry-run"):
            G.main(["time", "--out", str(tmp_path), "--quick"])


def _rec(item: G.LayoutItem, **kw) -> dict:
    rec = item.fields()
    rec.update(kw)
    return rec


def test_summary_joins_event_and_kernel_records(tmp_path, capsys):
    items = G.plan_items(seed=0, quick=True)[0]
    meta = {k: "x" for k in ("date", "gpu_name", "sm_count", "driver", "cuda", "torch", "triton", "torchao")}
    meta["command"] = "test"
    ev = DatasetWriter(tmp_path / "gemm_layouts_time.json", meta)
    kr = DatasetWriter(tmp_path / "gemm_layouts_kernels.json", meta)
    for i in items:
        ev.add(_rec(i, timing="event", time_s=13e-6, tflops=1.0))
        sm = 75 if i.spec.layout == "cr" else 90
        kr.add(_rec(i, timing="kernel", time_s=10e-6, main_kernel_family="nvjet", main_kernel_sm=sm, tflops=1.3))
    ev.flush()
    kr.flush()
    for path in (ev.path, kr.path):
        assert validate_dataset(json.loads(path.read_text())) == []
    assert G.main(["summary", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "50 event records, 50 kernel records" in text
    row = next(line for line in text.splitlines() if line.startswith("llm") and " cr " in line)
    assert row.split()[3:] == ["2", "2", "1", "3.00", "100%"]
    assert "median 3.00 us" in text
    gaps = [13 - 10] * 50
    assert statistics.median(gaps) == 3


def test_gpu_sweep_script_runs_both_phases_in_order_within_the_deadline():
    text = (ROOT / "benchmarks" / "gpu_sweep_gemm_layouts.sh").read_text()
    assert text.index("run time ") < text.index("run kernels ") < text.index("gemm_layouts summary")
    assert "DEADLINE_S=${DEADLINE_S:-560}" in text and "--only-ids-from" in text
    out = subprocess.run(["bash", "-n", str(ROOT / "benchmarks" / "gpu_sweep_gemm_layouts.sh")], capture_output=True)
    assert out.returncode == 0, out.stderr


def test_gpu_sweep_script_passes_the_family_mix_to_the_plan(tmp_path):
    # the script end to end with no time left for either phase (DEADLINE_S=1): its plan, as the sweep would run it,
    # takes FAMILY_MIX when given and the fixed mix otherwise; python3 is this interpreter
    import os

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # python3 is this interpreter, but for the script's environment line (`python3 -c 'import torch, triton; ...'`,
    # nothing of it asserted here): importing torch and triton took ~3 s of each run's ~4.5 s
    stand_in = bin_dir / "python3"
    stand_in.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-c" ]; then case "$2" in *"import torch, triton"*) echo "torch: not imported (test)"; exit 0;; '
        "esac; fi\n"
        f'exec "{sys.executable}" "$@"\n'
    )
    stand_in.chmod(0o755)
    script = ROOT / "benchmarks" / "gpu_sweep_gemm_layouts.sh"
    logs = {}
    runs = (
        ("mixed", "random=5,odd=3,llm=0,small_m=0,square=0", ""),
        ("fixed", "", ""),
        ("ordered", "", "9"),
        ("rotated", "random=5,odd=3,llm=0,small_m=0,square=0", ""),
    )
    for name, mix, order in runs:
        env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", OUT=str(tmp_path / name))
        env.update(FAMILY_MIX=mix, SEED="7", DEADLINE_S="1")
        if order:
            env["ORDER_SEED"] = order
        if name == "rotated":
            env["ROTATE"] = "1"
        subprocess.run(["bash", str(script)], env=env, capture_output=True, timeout=120, check=False)
        logs[name] = (tmp_path / name / "log.txt").read_text()
    assert "FAMILY_MIX (shapes): llm=0, odd=3, random=5, small_m=0, square=0" in logs["mixed"]
    assert "shapes: 8 (odd=3, random=5)" in logs["mixed"]
    assert "FAMILY_MIX (shapes): llm=270, odd=96, random=420, small_m=144, square=15" in logs["fixed"]
    assert "gemm_layouts plan, seed 7\n" in logs["fixed"]
    assert "gemm_layouts plan, seed 7, run order of seed 9\n" in logs["ordered"]
    assert "gemm_layouts plan, seed 7, each shape's five GEMMs rotated" in logs["rotated"]
    assert "shapes: 8 (odd=3, random=5)" in logs["rotated"]  # the family mix and --rotate together
    assert "rotated" not in logs["fixed"] + logs["mixed"] + logs["ordered"]
    for log in logs.values():
        assert "no time left for the time phase (DEADLINE_S=1)" in log
        assert "no time left for the kernels phase (DEADLINE_S=1)" in log


def test_run_kernels_with_a_fake_gpu(tmp_path, monkeypatch):
    """run_kernels end to end against a stand-in GPU: a timeline the fake kernels append to while the
    (fake) profiler records; checks the call splitting, the records, errors and the redo path."""
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    timeline: list[tuple[str, float, float]] = []
    state = {"clock": 0.0, "recording": False}

    def emit(name, dur):
        if state["recording"]:
            timeline.append((name, state["clock"], dur))
        state["clock"] += dur + 1e-6

    class Cache:
        def zero_(self):
            emit(FLUSH, 80e-6)

        def fill_(self, value):
            emit(FLUSH, 80e-6)

    fake_torch = SimpleNamespace(
        manual_seed=lambda s: None,
        empty=lambda *a, **k: Cache(),
        int=None,
        cuda=SimpleNamespace(synchronize=lambda: None, empty_cache=lambda: None),
    )

    class FakeProfile:
        def __init__(self, activities):
            self.events: list = []

        def __enter__(self):
            timeline.clear()
            state["recording"] = True
            return self

        def __exit__(self, *exc):
            state["recording"] = False
            self.events = list(timeline)

    nvjet = "nvjet_sm90_tst_128x64_64x8_2x1_v_bz_splitK_NNT"
    slow = "sm75_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize32x32x64_stage3_warpsize1x2x1_tensor16x8x16_align1"
    reduce = "void cublasLt::splitKreduce_kernel<32, 16>"
    items = G.plan_items(seed=0, quick=True)[0]
    broken, flaky = items[7].id, items[11].id

    def fake_case(torch_, item, device="cuda"):
        if item.id == broken:
            raise RuntimeError("CUBLAS_STATUS_NOT_SUPPORTED")
        if item.spec.layout == "cr" and item.spec.M % 8:
            kernels = [(slow, 50e-6)]
        else:
            kernels = [("Memset (Device)", 1e-6), (nvjet, 9e-6), (reduce, 2e-6)]

        def fn():
            for name, dur in kernels:
                emit(name, dur)
            if item.id == flaky:  # an extra marker-named kernel: the trace no longer splits
                emit(FLUSH, 1e-6)

        return fn, ()

    monkeypatch.setattr(G, "require_cuda", lambda: fake_torch)
    monkeypatch.setattr(torch.profiler, "profile", FakeProfile)
    monkeypatch.setattr(G, "kernel_times_s", lambda prof: prof.events)
    monkeypatch.setattr(G, "_make_case", fake_case)
    logs: list[str] = []
    w = DatasetWriter(tmp_path / "k.json", {"command": "test"})
    summary = G.run_kernels(w, items, log=logs.append)
    assert summary["flush_marker"] == FLUSH
    assert summary["records"] == len(items) - 2 == len(w.records)
    assert {e["id"] for e in summary["errors"]} == {broken, flaky}
    assert any("redoing them one by one" in m for m in logs)
    assert [r["id"] for r in w.records] == [i.id for i in items if i.id not in (broken, flaky)]
    for r in w.records:
        assert r["timing"] == "kernel" and r["calls"] == G.PROFILED_CALLS and r["l2_flush"]
        if r["main_kernel"] == slow:
            assert r["layout"] == "cr" and r["M"] % 8 and r["main_kernel_sm"] == 75 and r["align"] == 1
            assert r["n_kernels"] == 1 and r["time_s"] == pytest.approx(50e-6)
        else:
            assert r["main_kernel"] == nvjet and r["n_kernels"] == 3 and r["split_k"]
            assert r["time_s"] == pytest.approx(12e-6) and r["span_s"] == pytest.approx(14e-6)
            assert [k["family"] for k in r["kernels"]] == ["memset", "nvjet", "splitk_reduce"]
        assert r["tflops"] == pytest.approx(2 * r["M"] * r["K"] * r["N"] / r["time_s"] / 1e12)
    assert any(r["main_kernel"] == slow for r in w.records)
    data = json.loads((tmp_path / "k.json").read_text())
    assert len(data["records"]) == len(w.records)
