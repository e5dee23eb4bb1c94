"""perfmodel.bench.grouped_gemm: the grouped-GEMM sweep's plan, group-size generators, records, CLI (CPU only)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from perfmodel.bench import grouped_gemm as GG

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def plan0() -> tuple[list[GG.GroupedItem], list[GG.NeighbourItem], GG.PlanInfo]:
    return GG.plan_items(seed=0)


def test_import_does_not_import_torch_or_triton():
    code = (
        "import sys, perfmodel.bench.grouped_gemm;"
        "print(sorted(m for m in ('torch', 'triton', 'torchao') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


# ---- group-size generators, by hand ------------------------------------------------------------------


def test_apportion_floors_then_largest_remainders():
    assert GG.apportion([1, 1, 2], 10) == [3, 2, 5]  # 2.5, 2.5, 5: the tie goes to the lower index
    assert GG.apportion([1, 2], 0) == [0, 0]
    assert GG.apportion([1, 1, 1], 10) == [4, 3, 3]
    assert GG.apportion([0, 3, 1], 7) == [0, 5, 2]  # 0, 5.25, 1.75: the 0.75 remainder wins
    assert GG.apportion([5], 9) == [9]


def test_balanced_and_empty_rows():
    assert GG.balanced_rows(3, 5) == [5, 5, 5]
    assert GG.balanced_rows(1, 0) == [0]
    assert GG.empty_rows(4, 10, {1, 2}) == [5, 0, 0, 5]
    assert GG.empty_rows(4, 11, [1, 2]) == [6, 0, 0, 5]
    assert GG.empty_rows(3, 7, [0]) == [0, 4, 3]
    assert GG.empty_rows(2, 0, [1]) == [0, 0]


class _FixedGamma(random.Random):
    """gammavariate returns the given draws in turn (a hand-checkable Dirichlet)."""

    def __init__(self, draws):
        super().__init__(0)
        self.draws = list(draws)

    def gammavariate(self, alpha, beta):
        return self.draws.pop(0)


def test_dirichlet_rows_apportions_the_drawn_proportions():
    # T = 3 * 3 = 9 split 1:1:2 -> 2.25, 2.25, 4.5 -> floors 2, 2, 4, the one left to the largest remainder (0.5)
    assert GG.dirichlet_rows(3, 3, _FixedGamma([1.0, 1.0, 2.0]), 1.0) == [2, 2, 5]
    # T = 2 * 5 = 10 split 3:1 -> 7.5, 2.5 -> the tie to the lower index
    assert GG.dirichlet_rows(2, 5, _FixedGamma([3.0, 1.0]), 0.3) == [8, 2]
    a = GG.dirichlet_rows(64, 100, random.Random("x"), 0.3)
    assert a == GG.dirichlet_rows(64, 100, random.Random("x"), 0.3)  # seeded
    assert sum(a) == 6400 and len(a) == 64 and max(a) > 3 * 100  # alpha 0.3 skews: the largest group holds > 3 m


def test_pad_rows_and_offsets():
    assert GG.pad_rows([0, 5, 16, 17], 16) == [16, 16, 16, 32]
    assert GG.pad_rows([1, 8, 9], 8) == [8, 8, 16]
    assert GG.offsets([3, 0, 5]) == [3, 3, 8]
    assert GG.offsets([]) == []


def test_pick_empty_counts_and_range():
    assert GG.pick_empty(2, random.Random(0)) in ([0], [1])
    for G, n in ((2, 1), (4, 1), (8, 2), (16, 4), (256, 64)):
        got = GG.pick_empty(G, random.Random(G))
        assert len(got) == n == len(set(got)) and got == sorted(got) and all(0 <= i < G for i in got)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: GG.apportion([], 3), "weights"),
        (lambda: GG.apportion([1, -1], 3), "weights"),
        (lambda: GG.apportion([0, 0], 3), "weights"),
        (lambda: GG.apportion([1], -1), "total"),
        (lambda: GG.balanced_rows(0, 4), "G must be"),
        (lambda: GG.balanced_rows(2, -1), "m must be"),
        (lambda: GG.empty_rows(2, 4, [0, 1]), "at least one"),
        (lambda: GG.empty_rows(2, 4, [2]), "indices"),
        (lambda: GG.pad_rows([3], 0), "multiple"),
        (lambda: GG.pad_rows([-1], 8), "rows"),
        (lambda: GG.dirichlet_rows(4, 4, random.Random(0), 0.0), "alpha"),
        (lambda: GG.pick_empty(1, random.Random(0)), "G must be"),
        (lambda: GG.expected_strides("fwd", "a_row_b_diag", T=1, K=16, N=16, G=1), "layout"),
        (lambda: GG.expected_strides("dgrad", "a_row_b_col", T=1, K=16, N=16, G=1), "form"),
        (lambda: GG.plan_items(families=["nope"]), "unknown families"),
        (lambda: GG.plan_items(budget_s=-5), "budget_s"),
        (lambda: GG.balanced_rows(True, 3), "G must be"),
    ],
)
def test_bad_arguments_raise_named_value_errors(call, match):
    with pytest.raises(GG.GroupedGemmError, match=match) as info:
        call()
    assert isinstance(info.value, ValueError)


# ---- layouts --------------------------------------------------------------------------------------


def test_expected_strides_by_hand():
    fwd = GG.expected_strides("fwd", "a_row_b_col", T=10, K=32, N=44, G=2)
    assert fwd == {
        "a_shape": [10, 32],
        "a_strides": [32, 1],
        "b_shape": [2, 32, 44],
        "b_strides": [32 * 44, 1, 32],  # the transpose of a contiguous [2, 44, 32]
        "out_shape": [10, 44],
        "out_strides": [48, 1],  # 44 rounded up to 8 (16 bytes of bf16)
    }
    assert GG.expected_strides("fwd", "a_row_b_row", T=10, K=32, N=48, G=2)["b_strides"] == [1536, 48, 1]
    wg = GG.expected_strides("wgrad", "a_col_b_row", T=100, K=64, N=48, G=3)
    assert (wg["a_shape"], wg["a_strides"], wg["b_strides"]) == ([48, 100], [1, 48], [64, 1])
    assert (wg["out_shape"], wg["out_strides"]) == ([3, 48, 64], [48 * 64, 64, 1])
    wr = GG.expected_strides("wgrad", "a_row_b_col", T=96, K=64, N=48, G=3)
    assert (wr["a_strides"], wr["b_strides"]) == ([96, 1], [1, 96])


# ---- the plan --------------------------------------------------------------------------------------


def test_plan_is_deterministic_and_seeded(plan0):
    items, nb, _ = plan0
    again = GG.plan_items(seed=0)
    assert [i.id for i in again[0]] == [i.id for i in items] and again[1] == nb
    other = GG.plan_items(seed=1)[0]
    assert [i.id for i in other] != [i.id for i in items]


def test_plan_fits_the_budget_and_cuts_every_family_alike(plan0):
    items, nb, info = plan0
    assert info.estimated_s <= GG.TIME_BUDGET_S
    assert GG.estimate_time_phase_s(items, nb) <= GG.TIME_BUDGET_S * 1.001
    assert set(info.kept) == set(GG.FAMILIES)  # no family cut whole
    shares = [info.kept[f] / info.candidates[f] for f in GG.FAMILIES]
    assert 0.2 < min(shares) and max(shares) - min(shares) < 0.15  # a stratified prefix: the same share of each
    # the cut plan is a prefix of the uncut order
    full = GG.plan_items(seed=0, budget_s=None)[0]
    assert [i.id for i in full[: len(items)]] == [i.id for i in items] and len(full) > len(items)
    small = GG.plan_items(seed=0, budget_s=60)[0]
    assert 0 < len(small) < len(items)
    assert GG.estimate_time_phase_s(small, nb) <= 60 * 1.001


def test_plan_contents(plan0):
    items, _, _ = plan0
    assert len({i.id for i in items}) == len(items)
    experts = {m.name: m.experts for m in GG.MOE_MODELS}
    by_shape: dict[int, list[GG.GroupedItem]] = {}
    for i in items:
        by_shape.setdefault(i.group, []).append(i)
        assert i.G in GG.G_SET and i.G == len(i.rows) == len(i.rows_requested)
        if i.family in experts:
            assert i.G <= experts[i.family]
        assert sum(i.rows_requested) == i.G * i.m <= GG.MAX_TOTAL_ROWS and 1 <= i.m <= GG.MAX_ROWS_PER_GROUP
        if i.fmt == GG.FP8:
            assert i.padding == 16 and all(r >= 16 and r % 16 == 0 for r in i.rows)
        elif i.padding == 8:
            assert (i.form, i.layout) == ("wgrad", "a_row_b_col") and all(r >= 8 and r % 8 == 0 for r in i.rows)
        else:
            assert i.padding is None and i.rows == i.rows_requested
        if i.dist == "balanced":
            assert len(set(i.rows_requested)) == 1
        if i.dist == "empty":
            assert 0 < i.rows_requested.count(0) < i.G
        assert GG.estimate_item_kernel_s(i) <= GG.MAX_ITEM_KERNEL_S * 1.5
    # groups run in order, each shape's items together: vectors x 3 variants, one (form, family, K, N, G)
    assert [i.group for i in items] == sorted(i.group for i in items)
    for shape in by_shape.values():
        assert len({i.shape_id for i in shape}) == 1
        n_vec = len({i.vector for i in shape})
        assert len(shape) == 3 * n_vec and n_vec == (2 if shape[0].G == 1 else 3)
        assert Counter(i.vector_id for i in shape) == dict.fromkeys({i.vector_id for i in shape}, 3)
    forms = Counter((i.form, i.fmt, i.layout, i.padding) for i in items)
    want = {("fwd", f, lay, p) for f, lay, p in GG.FWD_VARIANTS} | {
        ("wgrad", f, lay, p) for f, lay, p in GG.WGRAD_VARIANTS
    }
    assert set(forms) == want
    assert len({forms[k] for k in want if k[0] == "fwd"}) == 1  # every fwd vector in all three variants
    assert {i.dist for i in items} == {"balanced", "skewed", "empty"}
    assert {dict(i.dist_param)["alpha"] for i in items if i.dist == "skewed"} == set(GG.SKEW_ALPHAS)


def test_model_shapes_and_roles():
    dsv3 = next(m for m in GG.MOE_MODELS if m.name == "deepseek_v3")
    shapes = GG._model_shapes(dsv3)
    fwd = {(s.K, s.N) for s in shapes if s.form == "fwd"}
    assert fwd == {(7168, 4096), (4096, 7168), (7168, 2048), (2048, 7168)}
    wgrad = {(s.K, s.N): s.roles for s in shapes if s.form == "wgrad"}
    assert wgrad == {(7168, 4096): ("w13_wgrad",), (7168, 2048): ("w1_wgrad", "w3_wgrad"), (2048, 7168): ("w2_wgrad",)}
    assert {s.G for s in shapes} == set(GG.G_SET)  # 256 experts: every G
    oss = GG._model_shapes(next(m for m in GG.MOE_MODELS if m.name == "gpt_oss_120b"))
    merged = {s.roles for s in oss if s.form == "fwd" and (s.K, s.N) == (2880, 2880)}
    assert merged == {("w1_fwd", "w3_fwd", "w2_dgrad", "w2_fwd", "w1_dgrad", "w3_dgrad")}
    mixtral = GG._model_shapes(next(m for m in GG.MOE_MODELS if m.name == "mixtral_8x7b"))
    assert {s.G for s in mixtral} == {1, 2, 4, 8}
    rnd = GG._random_shapes(0)
    assert all(s.K % 16 == 0 and s.N % 16 == 0 and 512 <= s.K <= 8192 and 512 <= s.N <= 8192 for s in rnd)


# ---- the fresh families: cited values, and no (K, N) shared with an earlier family ----------------------------

BEFORE_FRESH = ("deepseek_v3", "deepseek_v3_16b", "qwen3_30b_a3b", "llama4_scout", "llama4_maverick", "mixtral_8x7b")
BEFORE_FRESH += ("gpt_oss_120b",)  # fit / validation / test families (deepseek_v3_ep8 is deepseek_v3's block only)
FRESH1 = ("qwen3_235b_a22b", "olmoe_1b_7b", "dbrx", "phi35_moe")  # round 1, 2026-12-03
FRESH2 = {  # round 2, 2026-12-04: (hidden, expert inter, experts, top_k) from the config.json each source names
    "granite_3b_a800m": (1536, 512, 40, 8),  # hidden_size, intermediate_size, num_local_experts, num_experts_per_tok
    "ernie45_21b_a3b": (2560, 1536, 64, 6),  # hidden_size, moe_intermediate_size, moe_num_experts, moe_k
    "qwen2_57b_a14b": (3584, 2560, 64, 8),  # hidden_size, moe_intermediate_size, num_experts, num_experts_per_tok
    "minimax_m1": (6144, 9216, 32, 2),  # hidden_size, intermediate_size, num_local_experts, num_experts_per_tok
}
FRESH3 = {  # round 3, 2026-12-04 evening: (hidden, expert inter, experts, top_k) from the source each row names
    "glm45_air": (4096, 1408, 128, 8),  # Megatron-Bridge glm45.md: hidden, MoE FFN hidden, experts, top-k
    "glm45": (5120, 1536, 160, 8),  # same source
    "mixtral_8x22b": (6144, 16384, 8, 2),  # config.json: hidden_size, intermediate_size, num_local_experts, top-k
    "hunyuan_large": (6400, 18304, 16, 1),  # config.json: hidden_size, intermediate_size, num_experts, moe_topk
}
FRESH4 = {  # round 4, 2026-12-04 night: (hidden, expert inter, experts, top_k) from the source each row names
    "minimax_m2": (3072, 1536, 256, 8),  # config.json: hidden_size, intermediate_size, num_local_experts, top-k
    "qwen3_coder_480b": (6144, 2560, 160, 8),  # hidden_size, moe_intermediate_size, num_experts, top-k
    "arctic": (7168, 4864, 128, 2),  # hidden_size, intermediate_size, num_local_experts, num_experts_per_tok
}


def _model(name: str) -> GG.MoEModel:
    return next(m for m in GG.MOE_MODELS if m.name == name)


def _kn(name: str) -> set[tuple[int, int]]:
    return {(s.K, s.N) for s in GG._model_shapes(_model(name))}


def test_fresh_round2_models_match_cited_values():
    for name, exp in FRESH2.items():
        m = _model(name)
        assert (m.hidden, m.inter, m.experts, m.top_k) == exp, name
        assert "config.json" in m.source and m.hidden % 16 == 0 and m.inter % 16 == 0
    assert set(GG.FAMILIES) == {*BEFORE_FRESH, *FRESH1, *FRESH2, *FRESH3, *FRESH4, GG.RANDOM_FAMILY}
    # by hand: gate/up fused (h, 2i), its dgrad (2i, h), w1/w3 (h, i), w2 (i, h)
    assert _kn("minimax_m1") == {(6144, 18432), (18432, 6144), (6144, 9216), (9216, 6144)}
    assert _kn("granite_3b_a800m") == {(1536, 1024), (1024, 1536), (1536, 512), (512, 1536)}


def test_fresh_families_share_no_kn_with_earlier_families():
    earlier = set().union(*(_kn(f) for f in BEFORE_FRESH))
    for fam in FRESH1:
        assert not _kn(fam) & earlier, fam
    earlier |= set().union(*(_kn(f) for f in FRESH1))
    for rnd in (FRESH2, FRESH3, FRESH4):
        seen: set[tuple[int, int]] = set()
        for fam in rnd:
            assert not _kn(fam) & earlier, fam
            assert not _kn(fam) & seen, fam  # nor with another family of the same round
            seen |= _kn(fam)
        earlier |= seen


def test_fresh_round4_models_match_cited_values():
    for name, exp in FRESH4.items():
        m = _model(name)
        assert (m.hidden, m.inter, m.experts, m.top_k) == exp, name
        assert "config.json" in m.source and m.hidden % 16 == 0 and m.inter % 16 == 0
    assert _kn("arctic") == {(7168, 9728), (9728, 7168), (7168, 4864), (4864, 7168)}
    items, _, info = GG.plan_items(seed=0, families=[*FRESH4], budget_s=170)
    assert set(info.kept) == set(FRESH4) and all(info.kept[f] > 0 for f in FRESH4)
    assert {(i.K, i.N) for i in items} <= set().union(*(_kn(f) for f in FRESH4))


def test_fresh_round3_models_match_cited_values():
    for name, exp in FRESH3.items():
        m = _model(name)
        assert (m.hidden, m.inter, m.experts, m.top_k) == exp, name
        assert ("config.json" in m.source or "Megatron-Bridge" in m.source) and m.hidden % 16 == 0
    # by hand: gate/up fused (h, 2i), its dgrad (2i, h), w1/w3 (h, i), w2 (i, h)
    assert _kn("hunyuan_large") == {(6400, 36608), (36608, 6400), (6400, 18304), (18304, 6400)}
    items, _, info = GG.plan_items(seed=0, families=[*FRESH3], budget_s=170)
    assert set(info.kept) == set(FRESH3) and all(info.kept[f] > 0 for f in FRESH3)
    assert {(i.K, i.N) for i in items} <= set().union(*(_kn(f) for f in FRESH3))


def test_plan_picks_up_the_round2_families():
    items, _, info = GG.plan_items(seed=0, families=[*FRESH2], budget_s=170)
    assert set(info.kept) == set(FRESH2) and all(info.kept[f] > 0 for f in FRESH2)
    assert {i.family for i in items} == set(FRESH2)
    assert max(i.G for i in items if i.family == "granite_3b_a800m") == 32  # 40 experts: G up to 32
    assert max(i.G for i in items if i.family == "minimax_m1") <= 32
    assert {(i.K, i.N) for i in items} <= set().union(*(_kn(f) for f in FRESH2))


def test_quick_plan_has_one_cheap_shape_per_family():
    items, nb, info = GG.plan_items(seed=0, quick=True)
    assert info.kept == dict.fromkeys(GG.FAMILIES, 1) and len(nb) == GG.QUICK_NEIGHBOURS
    assert all(GG.estimate_item_kernel_s(i) <= GG.QUICK_MAX_KERNEL_S for i in items)


def test_neighbour_items():
    nb = GG.neighbour_items(0)
    assert len(nb) == (3 * 7 + 5) * 2 * 2 and len({n.id for n in nb}) == len(nb)
    p0 = [n for n in nb if n.pass_ == 0]
    p1 = [n for n in nb if n.pass_ == 1]
    key = [(n.M, n.K, n.N, n.scaling) for n in p0]
    assert sorted(key) == sorted((n.M, n.K, n.N, n.scaling) for n in p1) and key != [
        (n.M, n.K, n.N, n.scaling) for n in p1
    ]
    assert sorted({n.K for n in p0 if n.series == "K"}) == [4032, 4048, 4064, 4080, 4096, 4112, 4128]
    assert {(n.M, n.N) for n in p0 if n.series == "K"} == {(8192, 8192)}
    assert {(n.M, n.K) for n in p0 if n.series == "N"} == {(8192, 8192)}
    assert {(n.K, n.N) for n in p0 if n.series == "M"} == {(8192, 8192)}
    assert sorted({n.N for n in p0 if n.series == "N_vocab"}) == [50240, 50256, 50272, 50288, 50304]
    f = nb[0].fields()
    assert (
        f["op"] == "gemm" and f["family"] == "fp8_neighbours" and f["layout"] == "rc" and f["b_strides"] == [1, f["K"]]
    )


# ---- probes ------------------------------------------------------------------------------------------


def test_probe_cases_expectations_and_order():
    cases = GG.probe_cases()
    names = [c.name for c in cases]
    assert len(names) == len(set(names)) == 32
    exp = {c.name: c.expect for c in cases}
    assert exp["fwd_fp8_e4m3_rowwise_a_row_b_row_pad16"] == "refused"  # B must be column-major
    assert exp["wgrad_fp8_e4m3_rowwise_a_col_b_row_pad16"] == "refused"  # A must be row-major
    assert exp["wgrad_fp8_e4m3_rowwise_a_row_b_col_total_unaligned"] == "refused"  # 81 tokens: not a multiple of 16
    assert exp["wgrad_fp8_e4m3_rowwise_a_row_b_col_empty"] == "crash"
    assert exp["wgrad_bf16_a_row_b_col_unaligned"] == "crash"
    assert exp["wgrad_bf16_a_col_b_row_empty"] == "ok"  # plain transposes: empty groups allowed
    assert exp["fwd_bf16_a_row_b_row_unaligned"] == "ok"
    first_crash = next(j for j, c in enumerate(cases) if c.expect == "crash")
    assert all(c.expect == "crash" for c in cases[first_crash:])  # a crash ends the process: they go last
    assert all(sum(GG.PROBE_ROWS[c]) % 16 == 0 for c in ("pad16", "pad8", "unaligned", "empty"))


def test_probe_conditions_and_skips():
    items = GG.plan_items(seed=0, quick=True)[0]
    fp8 = next(i for i in items if i.fmt == GG.FP8)
    assert fp8.probe_conditions() == {"pad16"}
    pad8 = next(i for i in items if i.padding == 8)
    assert pad8.probe_conditions() == {"pad8"}
    raw = GG.GroupedItem(
        form="fwd",
        family="random",
        K=64,
        N=64,
        G=3,
        fmt=GG.BF16,
        layout="a_row_b_col",
        dist="empty",
        m=5,
        dist_param=(),
        rows_requested=(0, 7, 8),
        padding=None,
        roles=(),
        group=0,
        vector=0,
    )
    assert raw.probe_conditions() == {"pad16", "empty", "unaligned"}
    records = [
        {"op": "probe", "form": "fwd", "fmt": GG.BF16, "layout": "a_row_b_col", "condition": "empty", "status": "ok"},
        {
            "op": "probe",
            "form": "fwd",
            "fmt": GG.BF16,
            "layout": "a_row_b_col",
            "condition": "unaligned",
            "status": "crashed",
        },
    ]
    records.append({**records[0], "condition": "pad16", "status": "wrong"})
    unsafe = GG.unsafe_from_probes(records)
    assert unsafe == {("fwd", GG.BF16, "a_row_b_col", "unaligned")}  # a wrong result is timed, not skipped
    assert GG.wrong_from_probes(records) == {("fwd", GG.BF16, "a_row_b_col", "pad16")}
    assert GG._wrong_probes(raw, GG.wrong_from_probes(records)) == ["fwd_bf16_a_row_b_col_pad16"]
    assert "unaligned" in GG._skip_reason(raw, unsafe)
    assert GG._skip_reason(fp8, unsafe) is None


# ---- records ----------------------------------------------------------------------------------------


def _dataset(tmp_path: Path, records, name="d.json") -> dict:
    w = GG.DatasetWriter(tmp_path / name, {"date": "2026-12-03", "command": "test"})
    for r in records:
        w.add(r)
    return json.loads(w.flush().read_text())


def test_record_fields_and_validation(tmp_path, plan0):
    items, nb, _ = plan0
    recs = []
    for i in items[:40]:
        f = i.fields()
        assert f["op"] == i.form and f["id"] == i.id and f["rows"] == list(i.rows)
        assert f["dtype"] == ("fp8_e4m3" if i.fmt == GG.FP8 else "bf16") and f["layout"] == i.layout
        assert f["flops"] == 2 * sum(i.rows) * i.K * i.N
        assert (f.get("rows_requested") is not None) == (i.padding is not None)
        if i.family != "random":
            assert f["num_experts"] >= i.G
        recs.append({**f, "time_s": 1e-4, "timing": "event"})
    recs.append({**nb[0].fields(), "time_s": 2e-4})
    data = _dataset(tmp_path, recs)
    assert data["schema"] == GG.SCHEMA_TAG and GG.validate_records(data) == []
    bad = json.loads(json.dumps(data))
    del bad["records"][0]["rows"]
    bad["records"][1]["time_s"] = 0
    bad["records"][2]["rows"] = [*bad["records"][2]["rows"][:-1], 1, 1]
    bad["records"][3]["op"] = "dgrad"
    bad["schema"] = "other/1"
    problems = GG.validate_records(bad)
    assert any("lacks 'rows'" in p for p in problems)
    assert any("time_s must be a positive" in p for p in problems)
    assert any("rows for G" in p for p in problems)
    assert any("op is 'dgrad'" in p for p in problems)
    assert any("schema is 'other/1'" in p for p in problems)


def test_parse_kernel_name():
    name = (
        "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<"
        "cute::tuple<int, int, int> >, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::"
        "MainloopSm90ArrayTmaGmmaWarpSpecialized<4, cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, "
        "cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative>, cute::tuple<cute::C<128>, cute::C<256>, "
        "cute::C<64> > > > >(Params)"
    )
    info = GG.parse_kernel_name(name)
    assert (info["role"], info["library"], info["schedule"], info["sm90"]) == ("gemm", "cutlass", "Cooperative", True)
    assert info["cute_triples"] == [[2, 1, 1], [128, 256, 64]] and info["fast_accum"] is False
    assert info["tile"] is None
    mangled = (
        "_ZN7cutlass13device_kernelINS_4gemm6kernel13GemmUniversalINS5_43KernelPtrArrayTmaWarpSpecializedCooperative"
        "EEENSA_IJNSG_ILi128EEENSG_ILi256EEENSG_ILi64EEEEEENS_10bfloat16_tE"
    )
    assert GG.parse_kernel_name(mangled)["tile"] == [128, 256, 64]
    ping = "_ZN7cutlass3xxx40KernelPtrArrayTmaWarpSpecializedPingpongEEENSA_IJNSG_ILi64EEENSG_ILi128EEESN_EEENS_10bf"
    assert GG.parse_kernel_name(ping)["tile"] == [64, 128, None]  # K written as a back-reference
    assert GG.parse_kernel_name("void at::cuda::detail::prepare_grouped_gemm_data<float>(...)")["role"] == "prepare"
    assert GG.parse_kernel_name("Memset (Device)")["role"] == "memset"
    fp8 = GG.parse_kernel_name("void cutlass::device_kernel<KernelPtrArrayTmaWarpSpecializedPingpongFP8FastAccum>")
    assert (fp8["schedule"], fp8["fast_accum"]) == ("Pingpong", True)


def test_split_and_summarize_calls():
    flush = "fill"
    ev = [
        ("x", 0.0, 1.0),
        (flush, 1.0, 1.0),
        ("prep", 2.0, 1e-6),
        ("gemm_cutlass", 2.1, 4e-5),
        (flush, 3.0, 1.0),
        ("prep", 4.0, 2e-6),
        ("gemm_cutlass", 4.1, 6e-5),
    ]
    calls = GG.split_at_markers(ev, flush)
    assert [[n for n, _, _ in c] for c in calls] == [["prep", "gemm_cutlass"], ["prep", "gemm_cutlass"]]
    s = GG.summarize_calls(calls)
    assert s["time_s"] == pytest.approx((4.1e-5 + 6.2e-5) / 2) and s["n_kernels"] == 2
    assert s["gemm_time_s"] == pytest.approx(5e-5) and s["main_kernel"] == "gemm_cutlass"


def test_summary_tables(tmp_path):
    item = GG.plan_items(seed=0, quick=True)[0]
    fwd = [i for i in item if i.form == "fwd"]
    recs = []
    for i in fwd:
        t = 2e-4 if i.fmt == GG.BF16 else 1e-4
        recs.append({**i.fields(), "time_s": t, "tflops": i.flops / t / 1e12, "timing": "event"})
    _dataset(tmp_path, recs, GG.TIME_FILE.format(suffix=""))
    nbs = [n for n in GG.neighbour_items(0) if n.series == "K" and n.scaling == "rowwise"]
    nrec = [{**n.fields(), "time_s": (100e-6 if n.K == 4032 else 120e-6)} for n in nbs]
    _dataset(tmp_path, nrec, GG.NB_TIME_FILE.format(suffix=""))
    text = GG.summarize(tmp_path)
    assert f"grouped: {len(recs)} event records" in text
    assert "median bf16 time / fp8 time" in text and " 2.00" in text
    line_4048 = next(x for x in text.splitlines() if "8192x 4048x 8192" in x)
    assert line_4048.rstrip().endswith("+20.0")
    only = GG.summarize(tmp_path, families=["random"])
    assert f"grouped: {sum(1 for r in recs if r['family'] == 'random')} event records" in only


# ---- CLI --------------------------------------------------------------------------------------------


def test_dry_run_prints_the_plan_without_torch():
    code = (
        "import sys, runpy; sys.argv = ['x', 'time', '--dry-run', '--budget-s', '120'];"
        "from perfmodel.bench import grouped_gemm as g; rc = g.main(sys.argv[1:]);"
        "print('torch loaded:', 'torch' in sys.modules); sys.exit(rc)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "grouped_gemm plan, seed 0" in out.stdout and "budget 120 s" in out.stdout
    assert "torch loaded: False" in out.stdout


def test_plan_writes_its_items(tmp_path, capsys):
    assert GG.main(["plan", "--out", str(tmp_path), "--quick"]) == 0
    body = json.loads((tmp_path / "grouped_gemm_plan.json").read_text())
    assert len(body["items"]) == len(GG.plan_items(seed=0, quick=True)[0]) and len(body["neighbours"]) == 4
    assert body["meta"]["command"].endswith("plan --out " + str(tmp_path) + " --quick")
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "--budget-s", "-1"],
        ["plan", "--budget-s", "nan"],
        ["plan", "--warmup-ms", "0"],
        ["plan", "--families", "deepseek_v3,gpt5"],
        ["kernels", "--calls", "0"],
        ["bogus"],
    ],
)
def test_argument_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as info:
        GG.main(argv)
    assert info.value.code == 2
    assert "error" in capsys.readouterr().err


def test_gpu_phases_need_out_and_summary_needs_out():
    with pytest.raises(SystemExit, match="needs --out"):
        GG.main(["time"])
    with pytest.raises(SystemExit, match="summary needs --out"):
        GG.main(["summary"])


def test_load_names_the_missing_file(tmp_path):
    with pytest.raises(GG.GroupedGemmError, match="cannot read dataset"):
        GG.load(tmp_path / "nothing.json")
