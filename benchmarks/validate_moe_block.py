"""Score perfmodel.moe.expert_block_time and speedup against measured MoE blocks (perfmodel.bench.moe_block records).

    python benchmarks/validate_moe_block.py DIR            # fit + validation splits, before -> after
    python benchmarks/validate_moe_block.py DIR --final    # ... and the test split (look once, at the end)
    python benchmarks/validate_moe_block.py DIR --kernels  # measured kernels vs the model's, class by class
    python benchmarks/validate_moe_block.py DIR --derive   # the block constants, from the fit families only
    python benchmarks/validate_moe_block.py DIR --final --docs docs/validation/moe.md   # rewrite the tables there
    python benchmarks/validate_moe_block.py benchmarks/data --fp8-in-block  # grouped GEMMs in the block vs alone

DIR holds ``moe_block_results.tar.gz`` (or its JSON files: ``moe_block_time.json``, ``moe_block_kernels.json``).

The split by model family was fixed before any block measurement was looked at (2026-12-03) and is the grouped-GEMM
split's (docs/validation/moe.md, "Split by model family"):

* fit: deepseek_v3, deepseek_v3_ep8, qwen3_30b_a3b, llama4_maverick (every block constant comes from these);
* validation: deepseek_v3_16b, llama4_scout (its block scores were seen before the kernel-level fix: post-selection);
* test: gpt_oss_120b, mixtral_8x7b (also seen, combined with validation, as "held-out" before the fix;
  post-selection too, printed only with ``--final``).

"before" is the model with ``measured_eager=False`` (every memory kernel at copy bandwidth, no host syncs: the
model as first scored), "after" the default (:mod:`perfmodel.moe.block`, "measured eager rates").
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import re
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root: benchmarks.harness

import perfmodel as pm
from benchmarks.harness.tables import Block, table, write_blocks
from perfmodel.moe.block import LONG_STEP_TOKENS, h200_twin

FIT = {"deepseek_v3", "deepseek_v3_ep8", "qwen3_30b_a3b", "llama4_maverick"}
VALIDATION = {"deepseek_v3_16b", "llama4_scout"}
TEST = {"gpt_oss_120b", "mixtral_8x7b"}
#: measured 2026-12-03 (benchmarks/data/h200_2026-12-03f) after the model that scores them was committed (66d1844;
#: the bench's import fix 150bf96 changed no model code): pre-registered, scored once
FRESH = {"qwen3_235b_a22b", "olmoe_1b_7b", "dbrx", "phi35_moe"}
#: round 2, measured 2026-12-04 (benchmarks/data/h200_2026-12-04f) after the block model that scores them (the
#: colwise-dual and backward-power terms) was committed: pre-registered, scored once
FRESH2 = {"granite_3b_a800m", "ernie45_21b_a3b", "qwen2_57b_a14b", "minimax_m1"}
#: round 3, measured 2026-12-04 evening (benchmarks/data/h200_2026-12-04t) after the block model with its event law
#: (EVENT_LAW, derived on the fit families) was committed: pre-registered, scored once
FRESH3 = {"glm45_air", "glm45", "mixtral_8x22b", "hunyuan_large"}
#: round 4, measured 2026-12-04 night (benchmarks/data/h200_2026-12-04y) after the schema-2 grouped-GEMM model and the
#: event law re-derived on it were committed: pre-registered, scored once
FRESH4 = {"minimax_m2", "qwen3_coder_480b", "arctic"}
#: round 5, blocks only, measured 2026-12-04 night (benchmarks/data/h200_2026-12-04zz) after the round-4 model was
#: committed unchanged: pre-registered, scored once; grok-1's experts, the largest few-expert blocks measured
FRESH5 = {"grok1"}
#: round 6, blocks only, measured 2026-12-04 20:40 UTC (benchmarks/data/h200_2026-12-04r6) after the model with the
#: H200 power-cap term (POWER_CAP_SLOPE, fitted on the fit families and llama4_scout) was committed (a04d7f4):
#: pre-registered, scored once
FRESH6 = {"skywork_moe"}
#: round 6's in-shape check of the power-cap term: llama4_maverick's expert shapes (a fit family's) at EP16, 8 local
#: experts, GEMM-dense; measured with round 6, not a held-out family
INSHAPE6 = {"llama4_maverick_ep16"}
#: round 7, blocks only, registered 2026-12-04 night with the model of round 6 unchanged: longer steps than any block
#: measured before (65536 and 131072 tokens) of families held out by shape, where the event law and the power-cap
#: term are extrapolated and most predicted speedups are above 1 (the first clear "enable" calls): every record of
#: its folder (benchmarks/data/h200_2026-12-04r7) is in the round, whatever its family (not in ROUNDS: its families
#: keep their earlier splits)
FRESH7 = {"mixtral_8x7b", "mixtral_8x22b", "dbrx", "skywork_moe", "hunyuan_large", "qwen2_57b_a14b"}
#: round 8, blocks only, registered 2026-12-05 with today's model (the in-block fp8 GEMM rate and the held sustained
#: factor, 1845be0): new step lengths of held-out families near break-even and two families never measured beyond
#: 32768 tokens, at least 3 timed runs per do_bench; its items, counts and predictions are in
#: benchmarks/registered/round8.json (benchmarks/register_moe_round.py); scored by folder once measured. "repeat2"
#: (registered/repeat2.json) measures round 3's contested mixtral_8x22b configuration at 32768 tokens a third time
FRESH8 = {"mixtral_8x22b", "dbrx", "hunyuan_large", "grok1", "minimax_m1", "phi35_moe", "skywork_moe"}
#: the pre-registered block rounds, one home: each file of benchmarks/registered (benchmarks/register_moe_round.py)
#: names its round, the folder its data lands in and the GPU it is priced for ("gpu"; H200 where absent). Scored by
#: folder, not by family (their families were measured before at other token counts). What each round tested is
#: said where it was registered (register_moe_round.ROUNDS) and in docs/validation/moe.md:
#: "fresh8" / "repeat2" (H200, 2026-12-05); "fresh8_h100" / "repeat2_h100" (the same items, priced on the H100:
#: the H200-board transfer was chosen on them); "fresh9_h100" (that transfer's test); "fresh10_h100" (the grouped
#: GEMMs' SM-bound memory rule's test); "fresh11_h100" (the model of round 10 unchanged, five families added for it)
REGISTERED_DIR = Path(__file__).resolve().parent / "registered"


def registered_rounds(directory: Path = REGISTERED_DIR) -> dict[str, dict[str, Any]]:
    """Registration name -> its file's contents, for every block round in ``directory`` (the grouped-GEMM
    registrations, ``"kind": "grouped"``, left out), ordered by folder: date, then the suffix's numbers as numbers
    (r8, r8-repeat, r9, r10)."""
    regs = [json.loads(f.read_text()) for f in sorted(directory.glob("*.json"))]
    regs = [r for r in regs if r.get("kind", "block") == "block"]

    def order(r: dict[str, Any]) -> tuple[Any, ...]:
        rest = r["folder"].partition("_")[2]  # <gpu>_<YYYY-MM-DD><suffix>
        return (rest[:10], *[int(x) if x.isdigit() else x for x in re.split(r"(\d+)", rest[10:])])

    return {r["round"]: r for r in sorted(regs, key=order)}


#: registered rounds of blocks whose expert shapes are a fit family's (in-shape for the H200's block constants, even
#: where held out by family from a later fit): their ``--rounds`` split is ``inshapeN[_gpu]``, not ``freshN``
IN_SHAPE_ROUNDS = ("round13_h100",)


def split_name(registration: str) -> str:
    """The ``--rounds`` split of a registration: ``roundN[_gpu]`` scores as ``freshN[_gpu]`` (``inshapeN[_gpu]`` for
    :data:`IN_SHAPE_ROUNDS`), a repeat as itself."""
    if not registration.startswith("round"):
        return registration
    return ("inshape" if registration in IN_SHAPE_ROUNDS else "fresh") + registration[len("round") :]


_REGISTERED = registered_rounds()
#: split -> folder of every registered block round
REGISTERED_FOLDERS = {split_name(name): reg["folder"] for name, reg in _REGISTERED.items()}
#: the rounds scored by folder, not by family: repeat and round 7 (measured before rounds were registered as files)
#: and every registered one
FOLDER_ROUNDS = {"repeat", "fresh7", *REGISTERED_FOLDERS}
#: the scored-once rounds: split name -> families
ROUNDS = {"fresh": FRESH, "fresh2": FRESH2, "fresh3": FRESH3, "fresh4": FRESH4, "fresh5": FRESH5, "fresh6": FRESH6,
          "inshape6": INSHAPE6}  # fmt: skip
RECIPE = {"bf16": "bf16", "fp8_rowwise": "rowwise"}

# measured kernel name -> class (first match wins); the model's kernels map to the same classes (MODEL_CLASS)
_MEASURED: list[tuple[str, Callable[[str], bool]]] = [
    ("grouped_gemm", lambda n: "GroupProblemShape" in n),
    ("gemm_prep", lambda n: "prepare_grouped_gemm_data" in n),
    ("dense_gemm", lambda n: "nvjet" in n or "cublas" in n or "splitKreduce" in n),
    ("index_add", lambda n: "indexFuncLargeIndex<c10::BFloat16" in n),
    ("bcast_mul", lambda n: "nocast<at::native::BinaryFunctor<c10::BFloat16" in n),
    ("q_colwise_dual", lambda n: "_triton_fp8_per_group_colwise" in n),
    ("q_rowwise_2d", lambda n: "_triton_fp8_rowwise_2d" in n),
    ("q_w_transpose", lambda n: "_triton_fp8_rowwise_3d" in n),
    ("q_w_amax", lambda n: "MaxNanFunctor<c10::BFloat16" in n),
    ("q_w_to_fp32", lambda n: "unrolled_elementwise_kernel<at::native::direct_copy" in n and "lambda(float)" in n),
    ("q_w_mul", lambda n: "nocast<at::native::BinaryFunctor<float" in n),
    ("q_w_stream", lambda n: any(s in n for s in ("AbsFunctor<c10::BFloat16", "clamp_scalar", "float8_copy"))),
    ("q_scale_small", lambda n: any(s in n for s in ("reciprocal", "log2_kernel", "floor_kernel", "exp2", "double"))),
    (
        "gather_scatter",
        lambda n: any(
            s in n for s in ("gather_kernel", "index_elementwise", "scatter_gather", "indexFuncLargeIndex<float")
        ),
    ),
    (
        "permute_plan",
        lambda n: any(
            s in n
            for s in (
                "radix_sort",
                "cub::detail::scan",
                "Histogram",
                "<long",
                "Functor<long",
                "searchsorted",
                "arange",
                "CompareFunctor",
                "OpaqueType<8",
            )
        ),
    ),
    ("memcpy_memset", lambda n: n.startswith(("Memcpy", "Memset"))),
    ("elementwise", lambda n: True),
]
CLASSES = [c for c, _ in _MEASURED]


def measured_class(name: str) -> str:
    """The class of one profiled kernel name (see ``_MEASURED``)."""
    return next(c for c, f in _MEASURED if f(name))


def model_class(k: Any) -> str:
    """The class of one :class:`perfmodel.moe.block.BlockKernel` (by its name; the same classes as measured)."""
    n = k.name
    if k.kind == "gemm":
        return "grouped_gemm"
    if k.flops > 0:
        return "dense_gemm"
    rules = [
        ("memcpy_memset", ("dtoh",)), ("index_add", ("index_add",)), ("bcast_mul", ("mul_score",)),
        ("q_colwise_dual", ("colwise_dual",)), ("q_rowwise_2d", ("rowwise_cast",)), ("q_w_transpose", ("w_t_",)),
        ("q_w_amax", ("w_amax",)), ("q_w_to_fp32", ("w_to_fp32",)), ("q_w_mul", ("w_mul_scale",)),
        ("q_w_stream", ("w_abs", "w_clamp", "w_to_fp8")), ("q_scale_small", ("scale_ops", "reciprocals")),
        ("gather_scatter", ("index_select", "gather_scores", "scores_select", "scatter_grad")),
        ("permute_plan", ("argsort", "plan")),
    ]  # fmt: skip
    return next((c for c, keys in rules if any(s in n for s in keys)), "elementwise")


# -------------------------------------------------------------------------------------------------
# loading
# -------------------------------------------------------------------------------------------------
def _json_files(folder: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in sorted(folder.glob("*.json")):
        out[p.name] = json.loads(p.read_text())
    for p in sorted(folder.glob("*.json.gz")):
        out.setdefault(p.name[: -len(".gz")], json.loads(gzip.decompress(p.read_bytes())))
    for t in sorted(folder.glob("*.tar.gz")):
        with tarfile.open(t) as tf:
            for m in tf.getmembers():
                if m.isfile() and m.name.endswith(".json"):
                    out.setdefault(Path(m.name).name, json.load(io.TextIOWrapper(tf.extractfile(m))))
    return out


def load(folder: Path) -> list[dict[str, Any]]:
    """Every block-time record with status ok (``moe_block_time.json`` in ``folder`` or its tarball), each with
    ``_gpu``: the device it ran on (the file's ``meta.gpu_name``, H200 where a file predates that key), which
    :func:`predict` prices it for."""
    d = _json_files(folder).get("moe_block_time.json", {})
    gpu = d.get("meta", {}).get("gpu_name") or "H200"
    return [{**r, "_gpu": gpu} for r in d.get("records", [])
            if r.get("status") == "ok" and r.get("fwd_bwd_s") and r.get("recipe") in RECIPE]  # fmt: skip


def load_kernels(folder: Path) -> list[dict[str, Any]]:
    """Every kernel-profile record with status ok (``moe_block_kernels.json``), with ``_gpu`` as in :func:`load`."""
    d = _json_files(folder).get("moe_block_kernels.json", {})
    gpu = d.get("meta", {}).get("gpu_name") or "H200"
    return [{**r, "_gpu": gpu} for r in d.get("records", []) if r.get("status") == "ok" and r.get("recipe") in RECIPE]


def split_of(model: str) -> str:
    for name, fams in ROUNDS.items():
        if model in fams:
            return name
    return "fit" if model in FIT else "validation" if model in VALIDATION else "test" if model in TEST else "other"


def in_split(model: str, split: str) -> bool:
    """``split`` is fit, validation, test, or held-out (validation + test); a folder round (:data:`FOLDER_ROUNDS`)
    holds every record it is given."""
    if split in FOLDER_ROUNDS:
        return True
    return split_of(model) in (("validation", "test") if split == "held-out" else (split,))


def pairs_by_config(recs: list[dict[str, Any]], key: Callable[[dict[str, Any]], Any] | None = None) -> dict[Any, dict]:
    """Each configuration's records by recipe, ``{key: {recipe: record}}`` (``key`` default the record's ``id``)."""
    out: dict[Any, dict[str, dict[str, Any]]] = {}
    for r in recs:
        out.setdefault(key(r) if key else r["id"], {})[r["recipe"]] = r
    return out


def ratio_stats(q: Any) -> dict[str, float]:
    """Of predicted / measured ratios ``q``: |q - 1| median and p90 (%), q's median, minimum and maximum, the count."""
    a = np.asarray(q, dtype=float)
    e = np.abs(a - 1) * 100
    return {"p50": float(np.median(e)), "p90": float(np.percentile(e, 90)), "median_ratio": float(np.median(a)),
            "min_ratio": float(a.min()), "max_ratio": float(a.max()), "n": float(a.size)}  # fmt: skip


def ratio_stats_over(q: Any) -> dict[str, float]:
    """:func:`ratio_stats` of ``q`` with ``over``, the share of ratios above 1 (over-predicted)."""
    return {**ratio_stats(q), "over": float(np.mean(np.asarray(q, dtype=float) > 1))}


def predict(r: dict[str, Any], measured_eager: bool = True, timing: str = "event") -> Any:
    """The block model's answer for record ``r`` on the GPU it ran on (``_gpu``, H200 if absent)."""
    cfg = {
        "name": r["model"], "dim": r["dim"], "inter": r["inter"], "experts": r["experts"], "top_k": r["top_k"],
        "shared_inter": r.get("shared_inter", 0), "score_func": r.get("score_func", "softmax"),
        "router_experts": r.get("router_experts"),
    }  # fmt: skip
    return pm.moe.expert_block_time(
        cfg, tokens=r["tokens"], gpu=r.get("_gpu", "H200"), recipe=RECIPE[r["recipe"]], counts=r["counts"],
        timing=timing, measured_eager=measured_eager,
    )  # fmt: skip


def ape(p: float, m: float) -> float:
    return abs(p / m - 1) * 100


# -------------------------------------------------------------------------------------------------
# kernels: measured vs model, class by class
# -------------------------------------------------------------------------------------------------
def measured_by_class(rec: dict[str, Any], phase: str = "fwd_bwd") -> dict[str, list[float]]:
    """{class: [calls, seconds]} of one kernel record's phase (per iteration)."""
    out = {c: [0.0, 0.0] for c in CLASSES}
    for x in rec[phase]["kernels"]:
        c = measured_class(x["name"])
        out[c][0] += x["calls"]
        out[c][1] += x["time_s"]
    return out


def model_by_class(b: Any, phase: str = "fwd_bwd") -> dict[str, list[float]]:
    out = {c: [0.0, 0.0] for c in CLASSES}
    for k in b.kernels:
        if phase == "fwd_bwd" or k.phase == "fwd":
            c = model_class(k)
            out[c][0] += k.launches
            out[c][1] += k.seconds
    return out


def kernel_tables(krecs: list[dict[str, Any]], trecs: list[dict[str, Any]]) -> str:
    """Markdown: per class (median over configs of each recipe) and per config (sums and gaps), before and after."""
    wall = {(r["id"], r["recipe"]): r for r in trecs}
    tokens = ", ".join(str(t) for t in sorted({r["tokens"] for r in krecs})) or "no"
    lines = [f"Per kernel class, fwd+bwd at {tokens} tokens, summed over the configs of each recipe (ms; launches):"]
    lines.append("")
    lines += [
        "| recipe | class | measured launches | measured ms | before: launches | before ms | after: launches | "
        "after ms | after / measured |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for rec in RECIPE:
        rs = [r for r in krecs if r["recipe"] == rec]
        tot = {k: {c: [0.0, 0.0] for c in CLASSES} for k in ("m", "b", "a")}
        for r in rs:
            for key, d in (
                ("m", measured_by_class(r)), ("b", model_by_class(predict(r, False, "kernel"))),
                ("a", model_by_class(predict(r, True, "kernel"))),
            ):  # fmt: skip
                for c in CLASSES:
                    tot[key][c][0] += d[c][0]
                    tot[key][c][1] += d[c][1]
        for c in CLASSES:
            m, b, a = tot["m"][c], tot["b"][c], tot["a"][c]
            if not (m[0] or b[0] or a[0]):
                continue
            ratio = f"{a[1] / m[1]:.2f}" if m[1] else "—"
            lines.append(
                f"| {rec} | {c} | {m[0]:.0f} | {m[1] * 1e3:.2f} | {b[0]:.0f} | {b[1] * 1e3:.2f} | {a[0]:.0f} | "
                f"{a[1] * 1e3:.2f} | {ratio} |"
            )
    lines += [
        "",
        f"Per config (fwd+bwd, {tokens} tokens; ms): measured wall (do_bench) and kernel sum (profiler), their gap; "
        "the model's kernel sum before and after, and its wall (event timing: kernels + host syncs + event):",
        "",
    ]
    lines += [
        "| split | config | recipe | wall | kernel sum | gap | launches | before kernels | after kernels | "
        "after wall | after / wall |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in krecs:
        w = wall.get((r["id"], r["recipe"]))
        if w is None:
            continue
        ks = r["fwd_bwd"]["kernel_time_s"]
        n = sum(x["calls"] for x in r["fwd_bwd"]["kernels"])
        b = predict(r, False, "kernel").total_s
        a = predict(r, True, "kernel").total_s
        aw = predict(r, True, "event").total_s
        lines.append(
            f"| {split_of(r['model'])} | {r['id']} | {r['recipe']} | {w['fwd_bwd_s'] * 1e3:.2f} | {ks * 1e3:.2f} | "
            f"{(w['fwd_bwd_s'] - ks) * 1e3:.2f} | {n:.0f} | {b * 1e3:.2f} | {a * 1e3:.2f} | {aw * 1e3:.2f} | "
            f"{aw / w['fwd_bwd_s']:.2f} |"
        )
    return "\n".join(lines)


# -------------------------------------------------------------------------------------------------
# derive: the block constants of perfmodel.moe.block, from the fit families' kernel profiles
# -------------------------------------------------------------------------------------------------
def derive(krecs: list[dict[str, Any]], trecs: list[dict[str, Any]]) -> dict[str, float]:
    """The block constants of :mod:`perfmodel.moe.block`, medians over the fit families' profiles only:
    ``slowdown_<class>`` = a class's measured time over the time the model prices its bytes at copy bandwidth
    (``measured_eager=False``), and the host gaps = measured wall (do_bench) minus profiled kernel sum."""
    fit = [r for r in krecs if r["model"] in FIT]
    derived = ("index_add", "bcast_mul", "q_colwise_dual", "q_rowwise_2d", "q_w_to_fp32", "q_w_mul", "q_w_amax",
               "q_w_stream", "q_w_transpose")  # fmt: skip
    ratios: dict[str, list[float]] = {}
    for r in fit:
        mc, pc = measured_by_class(r), model_by_class(predict(r, False, "kernel"))
        for c in derived:
            if mc[c][1] > 0 and pc[c][1] > 0:
                ratios.setdefault(c, []).append(mc[c][1] / pc[c][1])
    out = {}
    for c, v in ratios.items():
        out[f"slowdown_{c}"] = float(np.median(v))
        out[f"slowdown_{c}_min"], out[f"slowdown_{c}_max"] = float(min(v)), float(max(v))
    out.update(_derive_colwise(fit))
    out.update(_derive_fp8_in_block(krecs))
    wall = {(r["id"], r["recipe"]): r for r in trecs}
    gf, gb = [], []
    for r in fit:
        w = wall.get((r["id"], r["recipe"]))
        if w is None:
            continue
        f_gap = w["fwd_s"] - r["fwd"]["kernel_time_s"]
        gf.append(f_gap)
        gb.append(w["fwd_bwd_s"] - r["fwd_bwd"]["kernel_time_s"] - f_gap)
    out["host_gap_fwd_s"] = float(np.median(gf))
    out["host_gap_bwd_s"] = float(np.median(gb))
    out["n_fit_profiles"] = float(len(fit))
    out.update(_derive_power([r for r in trecs if r["model"] in FIT]))
    out.update(_derive_event_law([r for r in trecs if r["model"] in FIT]))
    return out


def in_block_gemm(r: dict[str, Any]) -> tuple[float, float, float] | None:
    """One kernel profile's grouped GEMMs, fwd+bwd: their share of the profiled kernel sum, the grouped-GEMM model's
    isolated price (fp8: before FP8_GEMM_IN_BLOCK_SPEEDUP) over their profiled seconds, and those seconds; None if
    the profile holds no grouped-GEMM time."""
    from perfmodel.moe.block_constants import FP8_GEMM_IN_BLOCK_SPEEDUP

    m = measured_by_class(r)
    meas = m["grouped_gemm"][1]
    if meas <= 0:
        return None
    model = model_by_class(predict(r, True, "kernel"))["grouped_gemm"][1]
    if r["recipe"] == "fp8_rowwise":
        model *= FP8_GEMM_IN_BLOCK_SPEEDUP  # the isolated price
    return meas / sum(v[1] for v in m.values()), model / meas, meas


def fp8_in_block_ratios(krecs: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Per fp8 rowwise kernel profile, :func:`in_block_gemm`'s ratio; ``fit``: the fit families', ``other``: every
    other family's."""
    out: dict[str, list[float]] = {"fit": [], "other": []}
    for r in krecs:
        g = in_block_gemm(r) if r["recipe"] == "fp8_rowwise" else None
        if g is not None:
            out["fit" if r["model"] in FIT else "other"].append(g[1])
    return out


def _derive_fp8_in_block(krecs: list[dict[str, Any]]) -> dict[str, float]:
    """FP8_GEMM_IN_BLOCK_SPEEDUP: the median of :func:`fp8_in_block_ratios` over the fit families' profiles, with its
    range, and the other families' range (shown, not fitted)."""
    q = fp8_in_block_ratios(krecs)
    if not q["fit"]:
        return {}
    out = {"fp8_gemm_in_block_speedup": float(np.median(q["fit"])), "fp8_gemm_in_block_min": float(min(q["fit"])),
           "fp8_gemm_in_block_max": float(max(q["fit"])), "fp8_gemm_in_block_n": float(len(q["fit"]))}  # fmt: skip
    if q["other"]:
        out |= {"fp8_gemm_in_block_other_min": float(min(q["other"])),
                "fp8_gemm_in_block_other_max": float(max(q["other"])),
                "fp8_gemm_in_block_other_n": float(len(q["other"]))}  # fmt: skip
    return out


#: every folder of block kernel profiles (torch.profiler, both recipes or bf16 only), for --fp8-in-block
KERNEL_FOLDERS = ("h200_2026-12-03b", "h200_2026-12-04x", "h200_2026-12-04z")


def gemm_in_block_table(data: Path) -> str:
    """Markdown: per block kernel profile of :data:`KERNEL_FOLDERS` under ``data``, the grouped GEMMs' share of the
    profiled kernel sum, the model's isolated grouped-GEMM price over the profiled grouped-GEMM seconds (fwd+bwd,
    before FP8_GEMM_IN_BLOCK_SPEEDUP) and the profiled rate; the fit families first. Then the range per recipe and
    set (what FP8_GEMM_IN_BLOCK_SPEEDUP's docstring quotes)."""
    rows, q = [], {}
    recs = [(f, r) for f in KERNEL_FOLDERS for r in load_kernels(data / f)]
    recs.sort(key=lambda fr: (fr[1]["model"] not in FIT, fr[1]["recipe"], fr[1]["model"], fr[1]["tokens"]))
    for folder, r in recs:
        g = in_block_gemm(r)
        if g is None:
            continue
        share, ratio, meas = g
        split = "fit" if r["model"] in FIT else "other"
        q.setdefault((r["recipe"], split), []).append(ratio)
        rows.append((split, folder.removeprefix("h200_"), r["id"], r["recipe"], f"{share:.2f}", f"{ratio:.3f}",
                     f"{3 * r['expert_flops_fwd'] / meas / 1e12:.0f}"))  # fmt: skip
    head = ("split", "folder", "config", "recipe", "GEMM share (measured)", "isolated price / in-block measured",
            "in-block TFLOP/s")  # fmt: skip
    summary = "; ".join(f"{rec} {split}: {min(v):.3f}-{max(v):.3f} (median {np.median(v):.3f}, n {len(v)})"
                        for (rec, split), v in sorted(q.items()))  # fmt: skip
    iso = isolated_fp8_bias(data)
    alone = "; ".join(f"{k}: {v[0]:.3f} (n {v[1]})" for k, v in iso.items())
    return (table(head, rows) + "\n\nRange: " + summary + ".\n\nAlone (the isolated fp8 sweeps of at least 0.5 TFLOP, "
            "the model's price over the measured time, median by measured rate in TFLOP/s, and for groups of 8192 "
            "rows and more): " + alone + ".")  # fmt: skip


def isolated_fp8_bias(data: Path) -> dict[str, tuple[float, int]]:
    """The grouped-GEMM model's price over the measured event time of every isolated fp8 rowwise sweep of at least
    0.5 TFLOP (``grouped_gemm_time.json.gz`` under ``data``): median and count by measured rate band (TFLOP/s) and for
    groups of at least 8192 rows on average."""
    out: dict[str, list[float]] = {"<600": [], "600-900": [], "900-1100": [], ">=1100": [], ">=8192 rows/group": []}
    for f in sorted(data.glob("h200_*/grouped_gemm_time.json.gz")):  # the H200's sweeps (other GPUs: their own)
        with gzip.open(f, "rt") as fh:
            recs = json.load(fh)["records"]
        for r in recs:
            if r.get("status", "ok") != "ok" or not r["dtype"].startswith("fp8") or not r.get("time_s"):
                continue
            if r["flops"] < 5e11:
                continue
            q = float(pm.moe.grouped_gemm_time_s(np.array(r["rows"]), r["K"], r["N"], dtype="fp8", scaling="rowwise",
                                                 op=r["op"], gpu="H200")) / r["time_s"]  # fmt: skip
            tf = r["flops"] / r["time_s"] / 1e12
            out["<600" if tf < 600 else "600-900" if tf < 900 else "900-1100" if tf < 1100 else ">=1100"].append(q)
            if r["total_rows"] / r["G"] >= 8192:
                out[">=8192 rows/group"].append(q)
    return {k: (float(np.median(v)), len(v)) for k, v in out.items() if v}


def _fit_event_law(k: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float]:
    """``y ~ H + k (1 + a k / (k + tau))`` by least squares on the relative error: ``tau`` on a log grid of 150 points
    in EVENT_LAW_TAU_RANGE_S, (H, a) linear at each, ``H >= 0`` and ``|a| <= EVENT_LAW_A_MAX`` (a bound hit: that
    coefficient fixed at the bound, the other refitted). Returns (H, a, tau, rms relative residual)."""
    from perfmodel.moe.block_constants import EVENT_LAW_A_MAX, EVENT_LAW_TAU_RANGE_S

    best = None
    rhs = (y - k) / y
    for tau in np.geomspace(*EVENT_LAW_TAU_RANGE_S, 150):
        A = np.c_[np.ones_like(k), k * k / (k + tau)] / y[:, None]
        (H, a), *_ = np.linalg.lstsq(A, rhs, rcond=None)
        if abs(a) > EVENT_LAW_A_MAX:
            a = float(np.clip(a, -EVENT_LAW_A_MAX, EVENT_LAW_A_MAX))
            H = float(A[:, 0] @ (rhs - a * A[:, 1]) / (A[:, 0] @ A[:, 0]))
        if H < 0:
            H = 0.0
            a = float(np.clip(A[:, 1] @ rhs / (A[:, 1] @ A[:, 1]), -EVENT_LAW_A_MAX, EVENT_LAW_A_MAX))
        res = A @ np.array([H, a]) - rhs
        sse = float(res @ res)
        if best is None or sse < best[0] - 1e-15:
            best = (sse, float(H), float(a), float(tau))
    sse, H, a, tau = best
    return H, a, tau, float(np.sqrt(sse / y.size))


def _derive_event_law(fit_times: list[dict[str, Any]]) -> dict[str, float]:
    """EVENT_LAW (perfmodel.moe.block_constants) per recipe and phase, on the fit families' do_bench rows: the
    phase's kernel sum as priced (``timing="kernel"``, measured eager rates) against do_bench fwd, and fwd+bwd minus
    fwd for the backward."""
    out: dict[str, float] = {}
    for rec, name in RECIPE.items():
        rows = [r for r in fit_times if r["recipe"] == rec]
        if len(rows) < 3:
            continue
        ks = [predict(r, True, "kernel") for r in rows]
        kf = np.array([b.fwd_s for b in ks])
        kb = np.array([b.total_s - b.fwd_s for b in ks])
        for phase, k, y in (
            ("fwd", kf, np.array([r["fwd_s"] for r in rows])),
            ("bwd", kb, np.array([r["fwd_bwd_s"] - r["fwd_s"] for r in rows])),
        ):
            H, a, tau, rms = _fit_event_law(k, y)
            key = f"event_law_{name}_{phase}"
            out.update({f"{key}_H_s": H, f"{key}_a": a, f"{key}_tau_s": tau, f"{key}_rms": rms,
                        f"{key}_k_max_s": float(k.max())})  # fmt: skip
        out[f"event_law_{name}_rows"] = float(len(rows))
    return out


def _derive_colwise(fit: list[dict[str, Any]]) -> dict[str, float]:
    """torchao's dual colwise cast: measured time = rate x (its bytes at copy bandwidth) + programs x seconds, a
    least-squares fit through the origin over the fit families' fp8 profiles (``EAGER_SLOWDOWN["colwise_dual"]``,
    ``COLWISE_DUAL_PROGRAM_S``); ``_resid_*``: the pair's per-config pred / meas - 1 on those profiles."""
    from perfmodel.moe.block_constants import colwise_dual_programs

    rows, y = [], []
    for r in fit:
        if r["recipe"] != "fp8_rowwise":
            continue
        copy = sum(k.seconds for k in predict(r, False, "kernel").kernels if "colwise_dual" in k.name)
        d, f, E = r["dim"], r["inter"], r["experts"]
        progs = 2 * colwise_dual_programs(E, d, f) + colwise_dual_programs(E, f, d)  # w1, w3: K = d; w2: K = f
        rows.append([copy, progs])
        y.append(measured_by_class(r)["q_colwise_dual"][1])
    if not rows:
        return {}
    A, b = np.array(rows, float), np.array(y, float)
    (rate, prog), *_ = np.linalg.lstsq(A, b, rcond=None)
    res = A @ np.array([rate, prog]) / b - 1
    return {"colwise_dual_rate": float(rate), "colwise_dual_program_s": float(prog),
            "colwise_dual_resid_min": float(res.min()), "colwise_dual_resid_max": float(res.max())}  # fmt: skip


def _derive_power(fit_times: list[dict[str, Any]]) -> dict[str, float]:
    """The backward's sustained-power derate: per fit-family do_bench row, need = (measured backward - the host
    gap HOST_GAP_BWD_S) / the model's backward kernel sum (timing="kernel", no derate), against the block's
    tensor-core duty (GEMM seconds / (kernel + host seconds)); a least-squares line need = 1 + slope (duty - duty0).
    ``_resid_*``: the line's residual range; ``n_power_rows``: rows used (both recipes, every token count)."""
    from perfmodel.moe import block as bm

    duty, need = [], []
    host = bm.HOST_SYNCS_FWD * bm.HOST_SYNC_S + bm.HOST_GAP_BWD_S
    for r in fit_times:
        k = predict(r, True, "kernel")
        kb = sum(x.seconds for x in k.kernels if x.phase == "bwd")
        duty.append(sum(x.seconds for x in k.kernels if x.flops > 0) / (k.total_s + host))
        need.append((r["fwd_bwd_s"] - r["fwd_s"] - bm.HOST_GAP_BWD_S) / kb)
    if len(duty) < 2:
        return {}
    slope, icpt = np.polyfit(duty, need, 1)
    res = np.array(need) - np.polyval([slope, icpt], duty)
    return {"power_derate_slope": float(slope), "power_derate_duty0": float((1 - icpt) / slope),
            "power_derate_resid_min": float(res.min()), "power_derate_resid_max": float(res.max()),
            "n_power_rows": float(len(duty))}  # fmt: skip


#: every block-time folder measured (fit and held-out families, fresh rounds 1-6), for --gemm-dense and
#: --derive-power-cap (round 6's repeat of rounds 3 and 5 configurations, h200_2026-12-04r6-repeat, is left out: the
#: same configurations twice)
BLOCK_FOLDERS = ("h200_2026-12-03b", "h200_2026-12-03f", "h200_2026-12-04f", "h200_2026-12-04t", "h200_2026-12-04y",
                 "h200_2026-12-04zz", "h200_2026-12-04r6")  # fmt: skip
#: the scored rounds' folders, in order (--rounds): split name -> folder; "repeat" re-measured eight configurations
#: of rounds 3 and 5 (mixtral_8x22b, grok1 at 16384 and 32768 tokens, the same counts) on round 6's board
ROUND_FOLDERS = {"fresh": "h200_2026-12-03f", "fresh2": "h200_2026-12-04f", "fresh3": "h200_2026-12-04t",
                 "fresh4": "h200_2026-12-04y", "fresh5": "h200_2026-12-04zz", "fresh6": "h200_2026-12-04r6",
                 "inshape6": "h200_2026-12-04r6", "fresh7": "h200_2026-12-04r7",
                 "repeat": "h200_2026-12-04r6-repeat", **REGISTERED_FOLDERS}  # fmt: skip
#: the families whose expert GEMM shapes are a fit family's: left out of the held-out GEMM-dense figures
SHAPE_OF_FIT = set(FIT) | {"llama4_scout"} | INSHAPE6


def derive_power_cap(data: Path) -> dict[str, float]:
    """POWER_CAP_SLOPE (perfmodel.moe.block_constants): least squares on the relative fwd+bwd error of the event
    law times the power-cap factor, over the do_bench rows of POWER_CAP_FIT_FAMILIES in :data:`BLOCK_FOLDERS` under
    ``data`` (both recipes), the slope on a grid of 0.001 in 0..2; ``_rms``: that fit's rms relative residual,
    ``_rows`` / ``_rows_above``: rows used / rows whose tensor load is above POWER_CAP_LOAD0."""
    from perfmodel.moe.block_constants import POWER_CAP_FIT_FAMILIES, POWER_CAP_LOAD0, block_event_times_s

    rows = [r for f in BLOCK_FOLDERS for r in load(data / f) if r["model"] in POWER_CAP_FIT_FAMILIES]
    ks = [predict(r, True, "kernel") for r in rows]
    meas = np.array([r["fwd_bwd_s"] for r in rows])

    def rel(b: float) -> np.ndarray:
        pred = []
        for r, k in zip(rows, ks, strict=True):
            f, bw, _ = block_event_times_s(RECIPE[r["recipe"]], k.fwd_s, k.total_s - k.fwd_s, k.tensor_load, slope=b)
            pred.append(f + bw)
        return np.array(pred) / meas - 1

    grid = np.round(np.arange(0.0, 2.0005, 0.001), 3)
    sse = [float(rel(b) @ rel(b)) for b in grid]
    b = float(grid[int(np.argmin(sse))])
    return {"power_cap_slope": b, "power_cap_slope_rms": float(np.sqrt(min(sse) / meas.size)),
            "power_cap_rows": float(meas.size),
            "power_cap_rows_above": float(sum(k.tensor_load > POWER_CAP_LOAD0 for k in ks))}  # fmt: skip


#: the folders of the long-step figures (--long-step): round 7 (held out by shape, pre-registered for the model of
#: its day) and the fit families' own long steps (in-shape, measured after round 7, in no fit)
LONG_STEP_FOLDERS = ("h200_2026-12-04r7", "h200_2026-12-04r7-fit")


def long_step_error(data: Path) -> dict[str, dict[str, float]]:
    """The model's error beyond LONG_STEP_TOKENS (perfmodel.moe.block) over :data:`LONG_STEP_FOLDERS` under ``data``
    (65536 and 131072 tokens): ``speedup`` (|pred / meas - 1| median and p90 %, the pred / meas ratio's median,
    range and the share above 1), ``bf16_block`` and ``rowwise_block`` (fwd+bwd, the same statistics), each with its
    count, on both folders pooled; ``speedup_held_out`` / ``speedup_in_shape``: the speedup on round 7 alone / on the
    fit families' own long steps alone."""
    q: dict[str, list[float]] = {"speedup": [], "bf16_block": [], "rowwise_block": [], "speedup_held_out": [],
                                 "speedup_in_shape": []}  # fmt: skip
    for folder in LONG_STEP_FOLDERS:
        pairs = pairs_by_config([r for r in load(data / folder) if r["tokens"] > LONG_STEP_TOKENS])
        for pair in pairs.values():
            for key, ratio in _pair_ratios(pair).items():
                q[key].append(ratio)
                if key == "speedup":
                    q["speedup_held_out" if folder == LONG_STEP_FOLDERS[0] else "speedup_in_shape"].append(ratio)
    return {name: ratio_stats_over(v) for name, v in q.items()}


def _pair_ratios(pair: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Predicted / measured of one configuration's records by recipe: ``bf16_block`` and ``rowwise_block`` (fwd+bwd)
    where measured, ``speedup`` where both are."""
    pred = {rec: predict(r) for rec, r in pair.items()}
    out = {key: pred[rec].total_s / pair[rec]["fwd_bwd_s"]
           for rec, key in (("bf16", "bf16_block"), ("fp8_rowwise", "rowwise_block")) if rec in pair}  # fmt: skip
    if set(pair) == set(RECIPE):
        p = pred["bf16"].total_s / pred["fp8_rowwise"].total_s
        out["speedup"] = p / (pair["bf16"]["fwd_bwd_s"] / pair["fp8_rowwise"]["fwd_bwd_s"])
    return out


#: the registrations the H200-board transfer was chosen on (round 8 and its repeat, priced for the H100 SXM):
#: pooled as one round of the twin's figures, "post_selection"
TWIN_CHOSEN_ON = ("round8_h100", "repeat2_h100")
#: twin registrations of blocks whose expert shapes are the H200's fit families' (in-shape for its block constants):
#: scored apart (:func:`twin_in_shape_table`, :func:`twin_in_shape_by_shape`), never pooled into the held-out-by-shape
#: figures of TWIN_ROUNDS
TWIN_IN_SHAPE = tuple(n for n in IN_SHAPE_ROUNDS if h200_twin(_REGISTERED[n].get("gpu", "H200")))
#: the folders of the H200-board twin's figures (--twin): every registered round priced for a GPU on the H200's board
#: that is not the H200 (perfmodel.moe.block.h200_twin: so far the H100 SXM's), each its own round under its split name
#: (fresh9_h100: the transfer's test; fresh10_h100, fresh11_h100: later tests), but those of TWIN_CHOSEN_ON
TWIN_ROUNDS: dict[str, tuple[str, ...]] = {
    "post_selection": tuple(_REGISTERED[n]["folder"] for n in TWIN_CHOSEN_ON),
    **{split_name(n): (reg["folder"],) for n, reg in _REGISTERED.items()
       if n not in TWIN_CHOSEN_ON + TWIN_IN_SHAPE and h200_twin(reg.get("gpu", "H200"))},
}  # fmt: skip
TWIN_FOLDERS = tuple(f for fs in TWIN_ROUNDS.values() for f in fs)
#: the rounds TWIN_BLOCK_FACTOR (perfmodel.moe.block_constants) was fitted on (2026-12-07); a later twin round is held
#: out of the fit (registered with the factor committed: its test)
TWIN_FACTOR_ROUNDS = ("post_selection", "fresh9_h100", "fresh10_h100", "fresh11_h100")


def _twin_blocks(data: Path) -> list[dict[str, Any]]:
    """Every timed block of :data:`TWIN_ROUNDS` under ``data``, as the model prices it without the twin's block factor:
    ``round``, ``pair`` (folder, configuration), ``recipe`` (the record's), ``tokens`` (per step), ``meas`` (fwd+bwd
    s), ``host`` (the event law's host seconds) and ``body`` (the rest of the priced fwd+bwd, before
    ``TWIN_BLOCK_FACTOR``)."""
    out = []
    for rnd, folders in TWIN_ROUNDS.items():
        for folder in folders:
            for key, pair in pairs_by_config(load(data / folder)).items():
                for rec, r in pair.items():
                    b = predict(r)
                    host = b.host_fwd_s + b.host_bwd_s
                    out.append({"round": rnd, "pair": (folder, key), "recipe": rec, "tokens": int(r["tokens"]),
                                "meas": r["fwd_bwd_s"], "host": host,
                                "body": (b.total_s - host) / b.board_factor})  # fmt: skip
    return out


def _fit_twin_factor(blocks: list[dict[str, Any]]) -> float:
    """Least squares on the relative error of ``factor * body + host`` against ``meas``."""
    x = np.array([b["body"] / b["meas"] for b in blocks])
    y = np.array([1 - b["host"] / b["meas"] for b in blocks])
    return float(x @ y / (x @ x))


def _twin_factors(blocks: list[dict[str, Any]], leave_out: str | None = None) -> dict[str, float]:
    """The factor per model recipe from the ``blocks`` (:func:`_twin_blocks`) of :data:`TWIN_FACTOR_ROUNDS`, without
    round ``leave_out`` where given."""
    fit = [b for b in blocks if b["round"] in TWIN_FACTOR_ROUNDS and b["round"] != leave_out]
    return {RECIPE[rec]: _fit_twin_factor([b for b in fit if b["recipe"] == rec]) for rec in RECIPE}


def twin_block_factor(data: Path, leave_out: str | None = None) -> dict[str, float]:
    """TWIN_BLOCK_FACTOR (perfmodel.moe.block_constants) per model recipe from the rounds of :data:`TWIN_FACTOR_ROUNDS`
    under ``data``, without round ``leave_out`` (one of them) where given."""
    return _twin_factors(_twin_blocks(data), leave_out)


def _twin_ratios(blocks: list[dict[str, Any]], factor: Callable[[str, str], float]) -> dict[str, list[float]]:
    """Predicted / measured per quantity (``bf16_block``, ``rowwise_block``, ``speedup``), per ``<name>@<round>`` and,
    for the blocks of more than ``LONG_STEP_TOKENS`` tokens (the H200's long-step regime), ``<name>@long``; with
    ``factor(round, model recipe)`` on each block's body."""
    by: dict[tuple[str, Any], dict[str, tuple[float, float]]] = {}
    tokens: dict[tuple[str, Any], int] = {}
    for b in blocks:
        p = factor(b["round"], RECIPE[b["recipe"]]) * b["body"] + b["host"]
        by.setdefault((b["round"], b["pair"]), {})[b["recipe"]] = (p, b["meas"])
        tokens[(b["round"], b["pair"])] = b["tokens"]
    q: dict[str, list[float]] = {}
    for (rnd, pair), d in by.items():
        pools = [rnd, "long"] if tokens[(rnd, pair)] > LONG_STEP_TOKENS else [rnd]
        ratios = {key: d[rec][0] / d[rec][1] for rec, key in (("bf16", "bf16_block"), ("fp8_rowwise", "rowwise_block"))
                  if rec in d}  # fmt: skip
        if set(d) == set(RECIPE):
            ratios["speedup"] = (d["bf16"][0] / d["fp8_rowwise"][0]) / (d["bf16"][1] / d["fp8_rowwise"][1])
        for key, ratio in ratios.items():
            q.setdefault(key, []).append(ratio)
            for pool in pools:
                q.setdefault(f"{key}@{pool}", []).append(ratio)
    return q


def twin_error(data: Path, mode: str = "held_out") -> dict[str, dict[str, float]]:
    """The model's error on the H100 SXM (:data:`TWIN_ROUNDS` under ``data``): ``speedup`` (|pred / meas - 1| median
    and p90 %, the pred / meas ratio's median, range and the share above 1), ``bf16_block`` and ``rowwise_block``
    (fwd+bwd, the same statistics), each with its count, pooled; the same per round as ``<name>@<round>``.
    ``mode``: "held_out" (each round of :data:`TWIN_FACTOR_ROUNDS` priced with TWIN_BLOCK_FACTOR fitted on the other
    three: held out by family; a later round with the factor as shipped, which it was registered with), "in_sample"
    (the factor as fitted on :data:`TWIN_FACTOR_ROUNDS`, as shipped) or "no_factor" (the transfer without it). Rounds
    not measured yet (no folder under ``data``) have no entries."""
    return _twin_error(_twin_blocks(data), mode)


def _twin_error(blocks: list[dict[str, Any]], mode: str) -> dict[str, dict[str, float]]:
    """:func:`twin_error` of the ``blocks`` (:func:`_twin_blocks`), priced once by the caller."""
    if mode == "no_factor":
        q = _twin_ratios(blocks, lambda rnd, rec: 1.0)
    elif mode == "in_sample":
        c = _twin_factors(blocks)
        q = _twin_ratios(blocks, lambda rnd, rec: c[rec])
    elif mode == "held_out":
        c = _twin_factors(blocks)
        loo = {rnd: _twin_factors(blocks, leave_out=rnd) for rnd in TWIN_FACTOR_ROUNDS}
        q = _twin_ratios(blocks, lambda rnd, rec: loo.get(rnd, c)[rec])
    else:
        raise ValueError(f"mode must be held_out, in_sample or no_factor, got {mode!r}")
    return {name: ratio_stats_over(v) for name, v in q.items()}


def twin_factor_table(data: Path) -> str:
    """Markdown: per measured H100 round (:data:`TWIN_ROUNDS`) and pooled, the bf16 and rowwise fwd+bwd and the float8
    speedup's MdAPE / p90 % and the speedup's share over-predicted, without TWIN_BLOCK_FACTOR, held out (each round of
    :data:`TWIN_FACTOR_ROUNDS` with the factor fitted on the other three, a later round with the factor as shipped)
    and with the factor as shipped (in-sample on :data:`TWIN_FACTOR_ROUNDS`); then the factor fitted without each
    round."""
    blocks = _twin_blocks(data)
    modes = {m: _twin_error(blocks, m) for m in ("no_factor", "held_out", "in_sample")}
    rows = []
    measured = [rnd for rnd in TWIN_ROUNDS if f"speedup@{rnd}" in modes["no_factor"]]
    for rnd in [*measured, "pooled"]:
        at = "" if rnd == "pooled" else f"@{rnd}"
        cells = [rnd, str(int(modes["no_factor"][f"speedup{at}"]["n"]))]
        for m in modes.values():
            e = {k: m[f"{k}{at}"] for k in ("bf16_block", "rowwise_block", "speedup")}
            cells.append(" · ".join(f"{x['p50']:.1f} / {x['p90']:.1f}" for x in e.values()))
            cells.append(f"{e['speedup']['over'] * 100:.0f} %")
        rows.append(cells)
    head = ("round", "pairs", "no factor: bf16 · rowwise · speedup", "speedup over", "held out by round",
            "speedup over", "shipped factor (in-sample on rounds 8-11)", "speedup over")  # fmt: skip
    loo = {rnd: _twin_factors(blocks, leave_out=rnd) for rnd in TWIN_FACTOR_ROUNDS}
    all_ = _twin_factors(blocks)
    facs = "; ".join(f"without {rnd}: bf16 {c['bf16']:.4f}, rowwise {c['rowwise']:.4f}" for rnd, c in loo.items())
    return (table(head, rows) + f"\n\nTWIN_BLOCK_FACTOR fitted on rounds 8-11 ({', '.join(TWIN_FACTOR_ROUNDS)}): "
            f"bf16 {all_['bf16']:.4f}, rowwise {all_['rowwise']:.4f}; {facs}.")  # fmt: skip


#: the H200's folder of the blocks TWIN_IN_SHAPE repeats on the H100 SXM (the same ids and counts)
TWIN_IN_SHAPE_H200 = "h200_2026-12-04r7-fit"


def _twin_in_shape_pairs(data: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """Each configuration of the :data:`TWIN_IN_SHAPE` rounds measured under ``data`` with both recipes, by id."""
    out = {}
    for name in TWIN_IN_SHAPE:
        folder = data / _REGISTERED[name]["folder"]
        if folder.is_dir():
            out.update({k: p for k, p in pairs_by_config(load(folder)).items() if set(p) == set(RECIPE)})
    return out


def twin_in_shape_by_shape(data: Path) -> dict[tuple[int, int], dict[str, Any]]:
    """The float8 speedup's predicted / measured on the H100 SXM per expert shape ``(dim, moe_inter)`` over the
    blocks of the :data:`TWIN_IN_SHAPE` rounds (TWIN_BLOCK_FACTOR as shipped): ``families`` (sorted, comma-separated)
    and :func:`ratio_stats_over` (TWIN_LONG_STEP_BY_SHAPE of perfmodel.moe.block holds it)."""
    by: dict[tuple[int, int], list[tuple[str, float]]] = {}
    for pair in _twin_in_shape_pairs(data).values():
        rec = pair["bf16"]
        by.setdefault((rec["dim"], rec["inter"]), []).append((rec["model"], _pair_ratios(pair)["speedup"]))
    return {shape: {"families": ", ".join(sorted({m for m, _ in rows})), **ratio_stats_over([r for _, r in rows])}
            for shape, rows in by.items()}  # fmt: skip


def twin_in_shape_table(data: Path) -> str:
    """Markdown: each block of the :data:`TWIN_IN_SHAPE` rounds measured on the H100 SXM beside the same id on the
    H200 (:data:`TWIN_IN_SHAPE_H200`): the measured float8 speedup on each board, the model's predicted / measured
    speedup on each (the H100's with TWIN_BLOCK_FACTOR as shipped, fitted on rounds 8-11, which ran none of these
    families) and the bf16 block's; then the medians and the share over-predicted. Empty where none is measured."""
    h200 = pairs_by_config(load(data / TWIN_IN_SHAPE_H200))
    both = [(key, pair, h200[key]) for key, pair in _twin_in_shape_pairs(data).items()
            if set(h200.get(key, {})) == set(RECIPE)]  # fmt: skip
    if not both:
        return ""
    lines = [
        "| configuration | H200 measured | H200 pred / meas | H100 measured | H100 pred / meas | H100 / H200 measured "
        "| bf16 block pred / meas, H200 · H100 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    q: dict[str, list[float]] = {"h200": [], "h100": [], "h200_bf16": [], "h100_bf16": []}
    for key, h1, h2 in both:
        m1, m2 = (p["bf16"]["fwd_bwd_s"] / p["fp8_rowwise"]["fwd_bwd_s"] for p in (h1, h2))
        r1, r2 = _pair_ratios(h1), _pair_ratios(h2)
        for board, r in (("h100", r1), ("h200", r2)):
            q[board].append(r["speedup"])
            q[f"{board}_bf16"].append(r["bf16_block"])
        lines.append(f"| {key} | {m2:.3f}x | {r2['speedup']:.3f} | {m1:.3f}x | {r1['speedup']:.3f} | {m1 / m2:.3f} | "
                     f"{r2['bf16_block']:.3f} · {r1['bf16_block']:.3f} |")  # fmt: skip
    over = {k: int(np.sum(np.array(v) > 1)) for k, v in q.items()}
    n = len(both)
    lines.append(
        f"| **median** ({n}; over-predicted: H200 {over['h200']}, H100 {over['h100']}) | | "
        f"{np.median(q['h200']):.3f} | | {np.median(q['h100']):.3f} | | "
        f"{np.median(q['h200_bf16']):.3f} · {np.median(q['h100_bf16']):.3f} |"
    )
    return "\n".join(lines)


def twin_diagnostics(data: Path) -> str:
    """Markdown: the H100 SXM against the H200 on the same work. Kernel classes: round 8's H100 profiles (49152 tokens)
    over the H200's of the same family and recipe at 32768 tokens (h200_2026-12-04x) times 1.5, the classes whose time
    grows with tokens (the weight casts do not: left out). Isolated grouped GEMMs: the H100's event time over the
    H200's on the records of the same id (round 8's diagnostic sweep against h200_2026-12-03f and -04t), and the
    model's H100 price over the H100's time, medians by dtype, op and size."""
    import gzip

    from perfmodel.calibrate import grouped as cg

    h1 = {(r["model"], r["recipe"]): r for r in load_kernels(data / TWIN_FOLDERS[0])}
    h2 = {(r["model"], r["recipe"]): r for r in load_kernels(data / "h200_2026-12-04x") if r["tokens"] == 32768}
    lines = [
        "| family | recipe | class | H100 ms | H200 ms x 1.5 | H100 / H200 |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    for key in sorted(set(h1) & set(h2)):
        a, b = measured_by_class(h1[key]), measured_by_class(h2[key])
        for c in CLASSES:
            if b[c][1] > 1e-3 and not c.startswith("q_w_"):
                lines.append(f"| {key[0]} | {key[1]} | {c} | {a[c][1] * 1e3:.1f} | {b[c][1] * 1.5e3:.1f} | "
                             f"{a[c][1] / (1.5 * b[c][1]):.3f} |")  # fmt: skip

    def sweep(folder: str) -> list[dict[str, Any]]:
        d = json.loads(gzip.decompress((data / folder / "grouped_gemm_time.json.gz").read_bytes()))
        return [r for r in d["records"] if r.get("time_s") and cg.in_training_layout(r)]

    h200 = {r["id"]: r for f in ("h200_2026-12-03f", "h200_2026-12-04t") for r in sweep(f)}
    groups: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for r in sweep(TWIN_FOLDERS[0]):
        fp8 = r["dtype"].startswith("fp8")
        rows = np.asarray(r.get("rows_requested") or r["rows"])
        kw = {"dtype": "fp8", "scaling": "rowwise"} if fp8 else {"dtype": "bf16"}
        t = pm.moe.grouped_gemm(rows, r["K"], r["N"], op=r["op"], timing="event", gpu="H100-SXM", **kw).time_s
        size = "< 0.1 TFLOP" if r["flops"] < 1e11 else "< 1 TFLOP" if r["flops"] < 1e12 else ">= 1 TFLOP"
        other = h200.get(r["id"])
        groups.setdefault(("fp8" if fp8 else "bf16", r["op"], size), []).append(
            (r["time_s"] / other["time_s"] if other else np.nan, float(t) / r["time_s"])
        )
    lines += ["", "| dtype | op | size | n | H100 / H200 measured | model's H100 price / H100 measured |",
              "| --- | --- | --- | ---: | ---: | ---: |"]  # fmt: skip
    for key in sorted(groups):
        x = np.array(groups[key])
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {len(x)} | {np.nanmedian(x[:, 0]):.3f} | "
                     f"{np.median(x[:, 1]):.3f} |")  # fmt: skip
    return "\n".join(lines)


def block_clocks(folder: Path) -> list[dict[str, Any]]:
    """Each timed block of ``folder`` with its nvidia-smi samples (``gpu_clocks.csv.gz``, one every 0.2 s, read by
    benchmarks.harness.validate_tiles.clock_log) between the record's ``t_start_utc`` and ``t_end_utc``: ``samples``,
    ``sm_mhz`` (mean SM clock), ``watts`` (mean board power) and ``tensor_load`` (the model's, :func:`predict`).
    Records without timestamps (before round 8) or samples are left out."""
    import datetime as dt

    from benchmarks.harness.validate_tiles import clock_log

    log = clock_log(folder / "gpu_clocks.csv.gz")
    if log is None:
        return []
    out = []
    for r in load(folder):
        if "t_start_utc" not in r or "t_end_utc" not in r:
            continue
        a, b = (dt.datetime.fromisoformat(r[k]).timestamp() for k in ("t_start_utc", "t_end_utc"))
        m = (log["t"] >= a) & (log["t"] <= b)
        if m.any():
            out.append({**r, "samples": int(m.sum()), "sm_mhz": float(log["sm_mhz"][m].mean()),
                        "watts": float(log["power_w"][m].mean()), "tensor_load": predict(r).tensor_load})  # fmt: skip
    return out


def clocks_table(data: Path) -> str:
    """Markdown: the SM clock and board power of the H100 SXM's timed blocks (:data:`TWIN_FOLDERS` under ``data``),
    by round, recipe and the model's tensor load (GEMM-dense: above :data:`POWER_CAP_LOAD0`, where the power-cap term
    acts): blocks, the range of their mean SM clock (MHz) and of their mean power (W)."""
    from perfmodel.moe.block_constants import POWER_CAP_LOAD0

    rows = []
    for rnd, folders in TWIN_ROUNDS.items():
        recs = [r for f in folders for r in block_clocks(data / f)]
        for recipe in RECIPE:
            for dense in (True, False):
                g = [r for r in recs if r["recipe"] == recipe and (r["tensor_load"] > POWER_CAP_LOAD0) == dense]
                if g:
                    mhz, w = [r["sm_mhz"] for r in g], [r["watts"] for r in g]
                    rows.append((rnd, RECIPE[recipe], f"{'above' if dense else 'at most'} {POWER_CAP_LOAD0:.2f}",
                                 len(g), f"{min(mhz):.0f}-{max(mhz):.0f}", f"{min(w):.0f}-{max(w):.0f}"))  # fmt: skip
    head = ("round", "recipe", "tensor load", "blocks", "mean SM clock, MHz", "mean power, W")
    return table(head, rows)


def gemm_dense_error(data: Path) -> dict[str, dict[str, float]]:
    """The float8 rowwise speedup's error above and below GEMM_DENSE_LOAD (the bf16 block's ``tensor_load`` as
    priced, event timing), over every measured pair of :data:`BLOCK_FOLDERS` under ``data``: |pred / meas - 1|
    median and p90 (%), the pred / meas ratio's median, range and the share under 1, the count; ``bf16_block``: the
    same for the GEMM-dense bf16 blocks' own fwd+bwd time. Rows of :data:`SHAPE_OF_FIT` (the power-cap term's fit,
    and round 6's in-shape check) are left out (``n_fit_left_out``): every figure is on families held out by shape
    from every fit."""
    from perfmodel.moe.block import GEMM_DENSE_LOAD

    recs = [{**r, "_folder": folder} for folder in BLOCK_FOLDERS for r in load(data / folder)]
    pairs = pairs_by_config(recs, key=lambda r: (r["_folder"], r["id"]))
    out: dict[str, list[tuple[float, str]]] = {"dense": [], "other": [], "bf16_block": []}
    for pair in pairs.values():
        if "bf16" in pair:
            b = predict(pair["bf16"])
            if b.tensor_load >= GEMM_DENSE_LOAD:
                out["bf16_block"].append((b.total_s / pair["bf16"]["fwd_bwd_s"], pair["bf16"]["model"]))
        if set(pair) != set(RECIPE):
            continue
        b, f = predict(pair["bf16"]), predict(pair["fp8_rowwise"])
        ratio = (b.total_s / f.total_s) / (pair["bf16"]["fwd_bwd_s"] / pair["fp8_rowwise"]["fwd_bwd_s"])
        out["dense" if b.tensor_load >= GEMM_DENSE_LOAD else "other"].append((ratio, pair["bf16"]["model"]))
    res = {}
    for name, rows in out.items():
        q = np.array([x for x, m in rows if m not in SHAPE_OF_FIT])
        res[name] = {**ratio_stats(q), "under": float(np.mean(q < 1)),
                     "n_fit_left_out": float(sum(m in SHAPE_OF_FIT for _, m in rows))}  # fmt: skip
    return res


def rounds_table(data: Path) -> str:
    """Markdown: every scored round under today's model (event timing, measured eager), one row each: families, the
    bf16 and rowwise fwd+bwd |pred / meas - 1| (MdAPE / p90 %), the float8 speedup's (MdAPE / p90 %), the clear
    calls (measured speedup more than 5 % from 1) right, and each wrong clear call. Rounds 1-5 were measured before
    the power-cap term existed (post-selection for it); round 6 after (pre-registered)."""

    def ms(v: list[float]) -> str:
        return f"{np.median(v):.1f} / {np.percentile(v, 90):.1f}" if v else "—"

    rows = []
    for split, folder in ROUND_FOLDERS.items():
        if not (data / folder).is_dir():
            continue  # a registered round not measured yet
        recs = [r for r in load(data / folder) if split in FOLDER_ROUNDS or split_of(r["model"]) == split]
        by = pairs_by_config(recs)
        err: dict[str, list[float]] = {"bf16": [], "fp8_rowwise": [], "speedup": []}
        clear, wrong = 0, []
        for key, pair in sorted(by.items()):
            pred = {rec: predict(r) for rec, r in pair.items()}
            for rec, r in pair.items():
                err[rec].append(ape(pred[rec].total_s, r["fwd_bwd_s"]))
            if set(pair) != set(RECIPE):
                continue
            m = pair["bf16"]["fwd_bwd_s"] / pair["fp8_rowwise"]["fwd_bwd_s"]
            p = pred["bf16"].total_s / pred["fp8_rowwise"].total_s
            err["speedup"].append(ape(p, m))
            if abs(m - 1) > 0.05:
                clear += 1
                if (p >= 1) != (m >= 1):
                    wrong.append(f"{key} ({p:.3f}x predicted, {m:.3f}x measured)")
        fams = ", ".join(sorted({r["model"] for r in recs}))
        right = clear - len(wrong)
        rows.append((split, fams, len(err["speedup"]), ms(err["bf16"]), ms(err["fp8_rowwise"]), ms(err["speedup"]),
                     f"{right}/{clear}", "; ".join(wrong) or "none"))  # fmt: skip
    head = ("round", "families", "pairs", "bf16 fwd+bwd MdAPE / p90 %", "rowwise fwd+bwd MdAPE / p90 %",
            "speedup MdAPE / p90 %", "clear calls right", "wrong clear calls")  # fmt: skip
    return table(head, rows)


# -------------------------------------------------------------------------------------------------
# scores
# -------------------------------------------------------------------------------------------------
def score(recs: list[dict[str, Any]], splits: list[str]) -> str:
    """Markdown: time MdAPE / p90 by split, recipe and phase, before -> after; speedup MdAPE and calls right."""
    pred = {(id(r), v): predict(r, v) for r in recs for v in (False, True)}
    out = ["| split | recipe | phase | n | before MdAPE % | before p90 % | after MdAPE % | after p90 % | "
           "after pred / meas (median) |", "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for split in splits:
        for rec in RECIPE:
            for phase, key in (("fwd", "fwd_s"), ("fwd+bwd", "fwd_bwd_s")):
                rs = [r for r in recs if in_split(r["model"], split) and r["recipe"] == rec]
                if not rs:
                    continue
                att = "fwd_s" if phase == "fwd" else "total_s"
                e = {v: [ape(getattr(pred[(id(r), v)], att), r[key]) for r in rs] for v in (False, True)}
                q = np.median([getattr(pred[(id(r), True)], att) / r[key] for r in rs])
                out.append(
                    f"| {split} | {rec} | {phase} | {len(rs)} | {np.median(e[False]):.1f} | "
                    f"{np.percentile(e[False], 90):.1f} | {np.median(e[True]):.1f} | {np.percentile(e[True], 90):.1f} "
                    f"| {q:.2f} |"
                )
    by = pairs_by_config(recs)
    res: dict[str, dict[bool, list[tuple[float, bool, bool]]]] = {s: {False: [], True: []} for s in splits}
    for pair in by.values():
        if set(pair) != set(RECIPE):
            continue
        b, f = pair["bf16"], pair["fp8_rowwise"]
        ms = b["fwd_bwd_s"] / f["fwd_bwd_s"]
        for v in (False, True):
            ps = pred[(id(b), v)].total_s / pred[(id(f), v)].total_s
            for s in splits:
                if in_split(b["model"], s):
                    res[s][v].append((ape(ps, ms), (ps >= 1) == (ms >= 1), abs(ms - 1) > 0.05))
    out += [
        "",
        "| split | n | before speedup MdAPE % | after speedup MdAPE % | before calls right | after calls right |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for s in splits:
        if not res[s][True]:
            continue
        cells = []
        for v in (False, True):
            clear = [x for x in res[s][v] if x[2]]
            cells.append((np.median([x[0] for x in res[s][v]]), f"{sum(x[1] for x in clear)}/{len(clear)}"))
        out.append(f"| {s} | {len(res[s][True])} | {cells[0][0]:.1f} | {cells[1][0]:.1f} | {cells[0][1]} | "
                   f"{cells[1][1]} |")  # fmt: skip
    return "\n".join(out)


#: the header of the derived-constants table (docs/validation/moe.md)
_DERIVE_HEAD = (
    "| constant | fit families (slowdowns, host gaps: median; colwise_dual, power_derate: least squares) |\n"
    "| --- | ---: |\n"
)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--final", action="store_true", help="also score the test families (look once, at the end)")
    ap.add_argument("--fresh", action="store_true", help="score the fresh families (their own folder), once")
    ap.add_argument("--fresh2", action="store_true", help="score the round-2 fresh families (their folder), once")
    ap.add_argument("--fresh3", action="store_true", help="score the round-3 fresh families (their folder), once")
    ap.add_argument("--fresh4", action="store_true", help="score the round-4 fresh families (their folder), once")
    ap.add_argument("--fresh5", action="store_true", help="score the round-5 fresh blocks (their folder), once")
    ap.add_argument("--fresh6", action="store_true", help="score the round-6 fresh blocks (their folder), once")
    ap.add_argument("--fresh7", action="store_true", help="score round 7 (65536 and 131072 tokens; its folder), once")
    ap.add_argument("--inshape6", action="store_true", help="score round 6's in-shape check (llama4_maverick_ep16)")
    ap.add_argument("--kernels", action="store_true", help="measured kernels vs the model's, class by class")
    ap.add_argument("--derive", action="store_true", help="the block constants from the fit families' profiles")
    ap.add_argument(
        "--derive-power-cap",
        action="store_true",
        help="POWER_CAP_SLOPE from the power-cap fit "
        "families' do_bench rows in every block folder under FOLDER (benchmarks/data)",
    )
    ap.add_argument(
        "--rounds",
        action="store_true",
        help="every scored round under today's model, one row each "
        "(FOLDER: benchmarks/data; with --docs, written to its moe-block-rounds block)",
    )
    ap.add_argument(
        "--long-step", action="store_true", help="the error beyond LONG_STEP_TOKENS (round 7; FOLDER: benchmarks/data)"
    )
    ap.add_argument(
        "--twin", action="store_true", help="the error on the H100 SXM, the H200's board twin (FOLDER: benchmarks/data)"
    )
    ap.add_argument("--twin-in-shape", action="store_true", help="the H100 SXM's blocks of the H200's fit families "
                    "beside the same blocks on the H200 (FOLDER: benchmarks/data)")  # fmt: skip
    ap.add_argument("--gemm-dense", action="store_true", help="the speedup error above / below GEMM_DENSE_LOAD "
                    "over every measured block (FOLDER: benchmarks/data)")  # fmt: skip
    ap.add_argument("--fp8-in-block", action="store_true", help="the grouped GEMMs' isolated price over their "
                    "in-block profiled time, per kernel profile (FOLDER: benchmarks/data)")  # fmt: skip
    ap.add_argument(
        "--derive-twin",
        action="store_true",
        help="TWIN_BLOCK_FACTOR from the H100 SXM's rounds and its "
        "scores without it, held out by round and in-sample (FOLDER: benchmarks/data)",
    )
    ap.add_argument("--clocks", action="store_true", help="the SM clock and power of the H100 SXM's timed blocks, "
                    "by tensor load (FOLDER: benchmarks/data)")  # fmt: skip
    ap.add_argument("--docs", type=Path, help="write the kernel and score tables between their markers in this file")
    a = ap.parse_args(argv[1:])
    for flag, make, block in (("fp8_in_block", gemm_in_block_table, "moe-gemm-in-block"),
                              ("rounds", rounds_table, "moe-block-rounds"),
                              ("clocks", clocks_table, "moe-h100-clocks")):  # fmt: skip
        if getattr(a, flag):
            body = make(a.folder)
            if a.docs:
                write_blocks([Block(doc=a.docs, name=block, body=body)])
            else:
                print(body)
            return 0
    if a.derive_power_cap:
        for name, v in derive_power_cap(a.folder).items():
            print(f"{name} = {v:.4g}")
        return 0
    if a.long_step:
        for name, v in long_step_error(a.folder).items():
            print(name, " ".join(f"{k}={x:.4g}" for k, x in v.items()))
        return 0
    if a.derive_twin:
        for name, v in twin_block_factor(a.folder).items():
            print(f"twin_block_factor_{name} = {v:.4f}")
        body = twin_factor_table(a.folder)
        print(body)
        if a.docs:
            write_blocks([Block(doc=a.docs, name="moe-h100-factor", body=body)])
        return 0
    if a.twin:
        for name, v in twin_error(a.folder).items():
            print(name, " ".join(f"{k}={x:.4g}" for k, x in v.items()))
        body = twin_diagnostics(a.folder)
        print(body)
        if a.docs:
            write_blocks([Block(doc=a.docs, name="moe-h100-twin", body=body)])
        return 0
    if a.twin_in_shape:
        body = twin_in_shape_table(a.folder)
        print(body or "no TWIN_IN_SHAPE round measured yet")
        if a.docs and body:
            write_blocks([Block(doc=a.docs, name="moe-h100-long-steps", body=body)])
        return 0
    if a.gemm_dense:
        for name, v in gemm_dense_error(a.folder).items():
            print(name, " ".join(f"{k}={x:.4g}" for k, x in v.items()))
        return 0
    recs = load(a.folder)
    if not recs:
        print("no ok records")
        return 1
    if a.docs:
        if not a.final:
            print("--docs writes the test split too: pass --final (and look once)", file=sys.stderr)
            return 2
        d = derive(load_kernels(a.folder), recs)
        consts = "\n".join(f"| {k} | {v:.4g} |" for k, v in d.items() if not k.endswith(("_min", "_max")))
        bodies = (
            ("moe-block-derive", _DERIVE_HEAD + consts),
            ("moe-block-kernels", kernel_tables(load_kernels(a.folder), recs)),
            ("moe-block-score", score(recs, ["fit", "validation", "test", "held-out"])),
        )
        write_blocks([Block(doc=a.docs, name=tag, body=body) for tag, body in bodies])
        return 0
    chosen = [n for n in [*ROUNDS, "fresh7"] if getattr(a, n)]
    if chosen:
        print(score(recs, chosen))
        return 0
    if a.derive:
        for k, v in derive(load_kernels(a.folder), recs).items():
            print(f"{k} = {v:.6g}")
        return 0
    if a.kernels:
        print(kernel_tables(load_kernels(a.folder), recs))
        return 0
    print(score(recs, ["fit", "validation"] + (["test", "held-out"] if a.final else [])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
