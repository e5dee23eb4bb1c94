"""cuBLAS's kernel choice (perfmodel.gemm_kernel, kernel_class, calibrated_model.fallback_kernels): hand-checked
shapes, the named errors, agreement with the measured kernels, and the default model's one-row fix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy
from bench_modules import bench_module, validation_docs

import perfmodel as pm
from perfmodel.models.calibrated import fallback_kernels
from perfmodel.models.kernel_choice import KERNEL_RULE_AGREEMENT, KERNEL_RULE_HELD_OUT, KERNELS, SPLIT_K_AGREEMENT

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("shape", "layout", "kernel", "align", "aligned_shape", "alternative"),
    [
        # cr leads with M and N: M = 2103 is odd -> sm75 align1; one more token row makes it Hopper
        ((2103, 2272, 7472), "cr", "cutlass_sm75", 1, (2104, 2272, 7472), None),
        # the same sizes as x @ W: K = 2272 = 8 * 284 and N = 7472 = 8 * 934 lead -> Hopper
        ((2103, 2272, 7472), "rr", "hopper", 8, None, None),
        # N = 4100 = 4 * 1025: even, not a multiple of 8 -> sm80 align2; padded to 4104
        ((100, 4096, 4100), "rr", "cutlass_sm80", 4, (100, 4096, 4104), None),
        # one row, N = 50257 odd -> gemv; 50264 is the next multiple of 8
        ((1, 4096, 50257), "rr", "gemv", 1, (1, 4096, 50264), None),
        # one row with K and N aligned: Hopper even in cr, where M = 1 is a leading dimension
        ((1, 4096, 4096), "cr", "hopper", 1, None, None),
        # K = 1 < 8 in cr: the fallback, though M and N are aligned
        ((2048, 1, 8192), "cr", "cutlass_sm75", 1, (2048, 8, 8192), None),
        # five rows, K = 1069 odd, in rc: sm75 align1, or gemmSN for a third of such shapes
        ((5, 1069, 1168), "rc", "cutlass_sm75", 1, (5, 1072, 1168), "gemmSN"),
        # the same in cr leads with M = 5 and N = 1168: no gemmSN there
        ((5, 1069, 1168), "cr", "cutlass_sm75", 1, (8, 1069, 1168), None),
    ],
)
def test_gemm_kernel_by_hand(shape, layout, kernel, align, aligned_shape, alternative):
    k = pm.gemm_kernel(*shape, "bf16", "H200", layout=layout)
    assert (k.kernel, k.alignment, k.aligned_shape, k.alternative) == (kernel, align, aligned_shape, alternative)
    assert k.description == KERNELS[kernel] and k.kind == "measured"
    assert (k.split_k is None) == (kernel == "gemv")
    if aligned_shape is not None:  # the shape it names does run the Hopper kernels
        assert pm.gemm_kernel(*aligned_shape, "bf16", "H200", layout=layout).kernel == "hopper"
    assert str(pm.kernel_class(*shape, "bf16", layout=layout)) == kernel


def test_gemm_kernel_says_why_and_where_from():
    k = pm.gemm_kernel(2103, 2272, 7472, "bf16", "H200", layout="cr")
    assert k.lead_dims == (("M", 2103), ("N", 7472))
    assert "M = 2103" in k.reason and "odd" in k.reason and "N = 7472" in k.reason
    # the agreement figures the docs quote (docs/validation.md, "Which kernel cuBLAS runs"), held out included
    assert "90.4 %" in k.basis and "99.4 % of their 230561" in k.basis and "held out, 99.4 % of 140008" in k.basis
    line = pm.gemm_kernel(5, 1069, 1168, "bf16", "H200", layout="rc").line()
    assert "gemmSN kernel instead" in line and "split-K: no" in line


def test_split_k_follows_the_tile_formula():
    # 128 x 128 output on 132 SMs with K = 65536: one tile, a long reduction -> split; 8192^3: 2048 tiles -> not
    assert pm.gemm_kernel(128, 65536, 128, "bf16", "H200").split_k is True
    assert pm.gemm_kernel(8192, 8192, 8192, "bf16", "H200").split_k is False
    tm = pm.registry.tile_model()
    got = tm.split_k(
        np.array([128, 8192]), np.array([65536, 8192]), np.array([128, 8192]), fmt=pm.get_format("bf16"),
        scaling=None, gpu=pm.get_gpu("H200"), layout="rc",
    )  # fmt: skip
    assert got.tolist() == [True, False]


def test_fp8_runs_hopper_kernels_and_its_limits_are_named():
    k = pm.gemm_kernel(8192, 8192, 8192, "fp8_e4m3", "H200", "tensorwise")
    assert k.kernel == "hopper" and k.aligned_shape is None
    with pytest.raises(pm.IneligibleShapeError, match="multiples of 16"):
        pm.gemm_kernel(8192, 8200, 8192, "fp8_e4m3", "H200")
    with pytest.raises(pm.UnsupportedFormatError, match="layout 'rc' only"):
        pm.gemm_kernel(8192, 8192, 8192, "fp8_e4m3", "H200", layout="rr")


def test_other_hopper_gpus_transfer_and_other_architectures_are_refused():
    k = pm.gemm_kernel(2103, 2272, 7472, "bf16", "H100", layout="cr")
    assert k.kind == "transferred" and k.split_k is None and k.kernel == "cutlass_sm75"
    assert "transferred to the H100-SXM" in k.basis
    import dataclasses

    h200 = pm.get_gpu("H200")
    mine = dataclasses.replace(h200, mem_bw_bytes_per_s=1.1 * h200.mem_bw_bytes_per_s)  # a spec built from the H200
    k = pm.gemm_kernel(2103, 2272, 7472, "bf16", mine, layout="cr")
    assert k.kind == "transferred" and k.split_k is None and "a modified H200 spec" in k.basis
    with pytest.raises(pm.PerfModelError, match=r"Hopper GPUs only.*sm80.*Valid GPUs: .*H200"):
        pm.gemm_kernel(4096, 4096, 4096, "bf16", "A100-SXM-80GB")


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((np.array([64, 128]), 4096, 4096), pm.InvalidShapeError, "use kernel_class for arrays"),
        ((sympy.Symbol("M", positive=True), 4096, 4096), pm.InvalidShapeError, "symbolic"),
        ((4096.5, 4096, 4096), pm.InvalidShapeError, "M must be a positive integer"),
        ((0, 4096, 4096), pm.InvalidShapeError, "M must be a positive integer"),
        ((True, 4096, 4096), pm.InvalidShapeError, "M must be"),
    ],
)
def test_gemm_kernel_bad_sizes_are_named(args, error, match):
    with pytest.raises(error, match=match):
        pm.gemm_kernel(*args, "bf16", "H200")


def test_bad_layout_lists_the_valid_ones():
    with pytest.raises(pm.PerfModelError, match=r"Valid choices: cr, rc, rr"):
        pm.gemm_kernel(64, 64, 64, "bf16", "H200", layout="cc")
    with pytest.raises(pm.InvalidShapeError, match="sympy"):
        pm.kernel_class(sympy.Symbol("M", positive=True), 64, 64)


def test_kernel_class_on_arrays_agrees_with_gemm_kernel_one_by_one():
    rng = np.random.default_rng(7)
    M = np.concatenate([[1, 1, 2, 5, 16, 17], rng.integers(1, 5000, 60)])
    K = np.concatenate([[4096, 4095, 1, 1069, 4100, 7], rng.integers(1, 5000, 60)])
    N = np.concatenate([[50257, 4096, 8192, 1168, 4096, 4096], rng.integers(1, 5000, 60)])
    for layout in ("rr", "rc", "cr"):
        got = pm.kernel_class(M.astype(np.int32), K, N, "bf16", layout=layout)
        one = [
            pm.gemm_kernel(int(m), int(k), int(n), "bf16", "H200", layout=layout).kernel
            for m, k, n in zip(M, K, N, strict=True)
        ]
        assert got.tolist() == one
        assert set(got) >= {"hopper", "cutlass_sm75", "cutlass_sm80"}


def test_fallback_kernels_numeric_array_and_symbolic_agree():
    M, K = sympy.symbols("M K", positive=True, integer=True)
    cond = fallback_kernels(M, K, K, 4100)  # rr: K and N lead
    cases = [(1, 4096), (2, 4096), (64, 7), (64, 4095), (1, 5)]
    want = [False, True, True, True, True]
    assert [fallback_kernels(m, k, k, 4100) for m, k in cases] == want
    assert [bool(cond.subs({M: m, K: k})) for m, k in cases] == want
    arr = fallback_kernels(
        np.array([m for m, _ in cases]), np.array([k for _, k in cases]), np.array([k for _, k in cases]), 4100
    )
    assert arr.tolist() == want
    assert fallback_kernels(4096, 4096, 4096, 4096) is False


def test_the_default_model_prices_one_row_gemms_off_the_fallback():
    # cr leads with M: one row was priced as a misaligned fallback GEMM (3.3x its measured time on the sweeps);
    # it runs a Hopper kernel, priced like the same aligned GEMM in rc (the default fit is one bf16 group)
    cr = pm.gemm_time_s(1, 4096, 4096, "bf16", "H200", layout="cr")
    rc = pm.gemm_time_s(1, 4096, 4096, "bf16", "H200", layout="rc")
    assert cr == pytest.approx(rc, rel=1e-12)
    two_cr, two_rc = (pm.gemm_time_s(2, 4096, 4096, "bf16", "H200", layout=lay) for lay in ("cr", "rc"))
    assert two_cr > 1.5 * two_rc  # two rows, M = 2 leads in cr: the fallback group
    # the symbolic answer takes the same branch once M is a number
    m = sympy.Symbol("M", positive=True, integer=True)
    expr = pm.gemm_time_s(m, 4096, 4100, "bf16", "H200", layout="rr")
    for value in (1, 2, 77):
        num = pm.gemm_time_s(value, 4096, 4100, "bf16", "H200", layout="rr")
        assert float(expr.subs(m, value)) == pytest.approx(num, rel=1e-12)


@pytest.fixture(scope="module")
def report():
    vk = bench_module("validate_kernel_choice")
    return vk, vk.evaluate()


def test_agreement_constants_are_what_the_sweeps_give(report):
    vk, rep = report
    rule, split = vk.constants(rep)
    assert rule == KERNEL_RULE_AGREEMENT and split == SPLIT_K_AGREEMENT
    assert rule["right"] / rule["gemms"] > 0.99  # what the docs and the basis line claim
    assert split["right"] > split["never"]  # better than never splitting
    held = vk.held_out(rep)
    assert held == KERNEL_RULE_HELD_OUT
    assert held["right"] / held["gemms"] > 0.99  # the held-out score the basis line states


def test_validation_doc_section_is_current(report):
    vk, rep = report
    doc = validation_docs()
    assert f"{vk.BEGIN}\n{vk.markdown(rep)}{vk.END}" in doc, "run python benchmarks/validate.py kernel-choice --write"


def test_measured_class_reads_the_kernel_names():
    vk = bench_module("validate_kernel_choice")

    assert vk.measured_class({"main_kernel": "nvjet_sm90_tst_128x128", "main_kernel_family": "nvjet",
                              "main_kernel_sm": 90}) == "hopper"  # fmt: skip
    assert vk.measured_class({"main_kernel": "cutlass_75_align1", "main_kernel_family": "cutlass", "align": 1}) == (
        "cutlass_sm75"
    )
    assert vk.measured_class({"main_kernel": "void gemmSN_NN_kernel<...>", "main_kernel_family": "other"}) == "gemmSN"
    assert vk.measured_class({"main_kernel": "gemvx::kernel", "main_kernel_family": "gemv"}) == "gemv"


def _cli(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "perfmodel", *args], capture_output=True, text=True, check=True)
    return out.stdout


def test_cli_gemm_names_the_kernel_and_the_aligned_shape():
    text = _cli("gemm", "2103", "2272", "7472", "--layout", "cr", "--gpu", "H200")
    assert "kernel     cutlass_sm75" in text and "aligned    2104 x 2272 x 7472 runs cuBLAS's Hopper kernels" in text
    assert "kernel: measured" in text
    rec = json.loads(_cli("gemm", "2103", "2272", "7472", "--layout", "cr", "--gpu", "H200", "--json"))
    k = rec["kernel"]
    assert k["kernel"] == "cutlass_sm75" and k["aligned_shape"] == [2104, 2272, 7472]
    faster = pm.gemm_time_s(2104, 2272, 7472, "bf16", "H200", layout="cr")
    assert k["aligned_time_s"] == pytest.approx(faster, rel=1e-12) and rec["time_s"] > 3 * faster
    off = json.loads(_cli("gemm", "4096", "4096", "4096", "--gpu", "A100-SXM-80GB", "--json"))
    assert off["kernel"] is None
    assert "  kernel " not in _cli("gemm", "4096", "4096", "4096", "--gpu", "A100-SXM-80GB")


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT", "hopper"),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_stage3_warpsize2x2x1_align8", "hopper"),
        ("cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_nn_align2", "cutlass_sm80"),
        (
            "void cutlass::Kernel<cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_32x2_nn_align1>(Params)",
            "cutlass_sm75",
        ),
        ("std::enable_if<true, void>::type internal::gemvx::kernel<int, int, __nv_bfloat16>(...)", "gemv"),
        ("void gemmSN_NN_kernel<float, 256, 4, 2, 8, 3, 4, false>(...)", "gemmSN"),
        ("void cublasLt::splitKreduce_kernel<32, 16, int, float>(...)", None),
        ("add_n67108864", None),
    ],
)
def test_kernel_class_of_names(name, cls):
    assert pm.kernel_choice.kernel_class_of(name) == cls


def test_a_profile_names_its_gemm_kernels_class():
    prof = pm.proton.read(str(ROOT / "tests" / "data" / "h200_triton3.6_scope_and_kernel.hatchet"))
    got = {k.name: k.gemm_kernel for k in prof.kernels}
    assert {c for n, c in got.items() if n.startswith("nvjet_sm90")} == {"hopper"}
    assert all(c is None for n, c in got.items() if not n.startswith("nvjet"))
    with pytest.raises(pm.PerfModelError, match="a kernel name is a string"):
        pm.kernel_choice.kernel_class_of(None)


def test_a_linears_kernel_table_names_each_gemms_layout_and_kernel_class():
    table = pm.float8.linear_time(4096, 768, 50257, None, "H200").table()
    assert "output                       bf16        rc  cutlass_sm75" in table
    assert "grad_input                   bf16        rr  cutlass_sm75" in table  # gO @ W: K = 50257 leads
    assert "grad_weight                  bf16        cr  cutlass_sm75" in table
    fp8 = pm.float8.linear_time(4096, 768, 50257, "tensorwise", "H200").table()
    assert "fp8_e4m3    rc  not /16" in fp8  # priced (what it would cost), but _scaled_mm cannot run it
    aligned = pm.float8.linear_time(4096, 768, 50272, "tensorwise", "H200").table()
    assert aligned.count(" hopper ") == 3
    assert "cutlass" not in pm.float8.linear_time(4096, 768, 50257, None, "A100-SXM-80GB").table()  # not Hopper


def test_formats_the_rule_covers_and_those_it_does_not():
    k = pm.gemm_kernel(100, 4096, 4100, "fp16", "H200", layout="rr")
    assert k.kernel == "cutlass_sm80" and k.kind == "transferred" and "transferred to fp16" in k.basis
    assert k.split_k is not None  # the H200 tile model prices fp16 as bf16
    with pytest.raises(pm.UnsupportedFormatError, match=r"covers bf16, fp16, fp8_e4m3, fp8_e5m2 GEMMs, not fp32"):
        pm.gemm_kernel(4096, 4096, 4096, "fp32", "H200")
    with pytest.raises(pm.UnsupportedFormatError, match="not tf32"):
        pm.kernel_class(np.array([4096]), 4096, 4096, "tf32")
    assert (
        json.loads(_cli("gemm", "4096", "4096", "4096", "--dtype", "fp32", "--gpu", "H200", "--json"))["kernel"] is None
    )
    assert pm.gemm_kernel(64, 4096, 4096, "fp8_e5m2", "H200").kernel == "hopper"


def test_cli_says_when_its_model_does_not_tell_the_fallback_apart():
    text = _cli("gemm", "8192", "4096", "50257", "--gpu", "H100", "--time-model", "roofline")
    assert "kernel     cutlass_sm75" in text and "does not tell cuBLAS's fallback kernels apart" in text
    assert "x faster, same model" in _cli("gemm", "8192", "4096", "50257", "--gpu", "H100")


def test_the_aligned_shape_is_never_smaller_and_always_runs_the_hopper_kernels():
    rng = np.random.default_rng(3)
    for _ in range(600):
        M, K, N = (int(x) for x in rng.integers(1, 300, 3))
        M = 1 if rng.random() < 0.2 else M
        K = int(rng.integers(1, 8)) if rng.random() < 0.1 else K
        for layout in ("rr", "rc", "cr"):
            k = pm.gemm_kernel(M, K, N, "bf16", "H200", layout=layout)
            if k.aligned_shape is None:
                assert k.kernel == "hopper"
                continue
            assert k.kernel != "hopper" and all(a >= b for a, b in zip(k.aligned_shape, (M, K, N), strict=True))
            assert str(pm.kernel_class(*k.aligned_shape, "bf16", layout=layout)) == "hopper", (M, K, N, layout)


def test_the_gemmsn_count_the_docs_quote_is_the_constant():
    # the module doc and docs/validation/kernel-choice.md name how many few-row fallback GEMMs ran gemmSN: the
    # constant's count
    from perfmodel.models import kernel_choice

    n = kernel_choice.KERNEL_RULE_AGREEMENT["alternative"]
    doc = validation_docs()
    assert f"fallback for {n} of" in " ".join(kernel_choice.__doc__.split())
    assert f"the CUTLASS one for {n} of" in " ".join(doc.split())
