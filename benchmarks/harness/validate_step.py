"""Score the decoder-layer step model (perfmodel.step) on the committed H200 layer data, held out by layer size.

    python benchmarks/validate.py step            # prints the tables of docs/step.md
    python benchmarks/validate.py step --write    # rewrites them in docs/step.md and docs/validation.md

Every number comes from ``benchmarks/data/h200_2026-12-01/`` (:data:`LAYER_FILES`, the repeats of
:data:`REPEAT_FILES`, the dim-5120 predictions committed before it was measured, and the one-GPU FSDP steps)
and the step model: for each layer size (dim 2048, 4096, 5120, 8192) the layer parameters are refitted on the
others (``perfmodel.calibrate.layer.fit(..., exclude_dims=(dim,))``) and the held-out size is predicted.
Measured step time is the CUDA-event median of 30-50 back-to-back steps (``step_time_s``); kernel time is the
profiled per-step kernel sum (``step_kernel_time_s``). ``tests/test_validation_step.py`` checks that the docs
are what this script gives.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]  # the repository (this file is benchmarks/harness/*.py)
sys.path.insert(0, str(ROOT))

from benchmarks.harness import tables as writer  # noqa: E402 (``tables`` is this module's step tables)
from perfmodel.calibrate import layer as cl  # noqa: E402
from perfmodel.presets import LayerShape  # noqa: E402
from perfmodel.step import best_convert, layer_time  # noqa: E402
from perfmodel.step.params import load_layer_params  # noqa: E402

DATA = ROOT / "benchmarks" / "data" / "h200_2026-12-01"
#: the layer sweep the model is fitted and scored on: every one of the 164 configs of the sweep measured with no
#: compile running beside the measurement (``--quiet``), in three device calls of two sessions, and the 28 of a
#: fourth layer size (dim 5120), measured later after the model's predictions for it were committed
LAYER_FILES = (
    DATA / "h200_layer_quiet_2026-12-01.json",
    DATA / "h200_layer_quiet_part2_2026-12-01.json",
    DATA / "h200_layer_quiet_large_2026-12-01.json",
    DATA / "h200_layer_fresh_d5120_2026-12-01.json",
    DATA / "h200_layer_mix_order_2026-12-01.json",
)
#: a layer size no fit saw (Qwen2.5-14B shapes), measured after the step model's predictions for it were committed
FRESH_FILE = DATA / "h200_layer_fresh_d5120_2026-12-01.json"
FRESH_PREDICTED = DATA / "h200_layer_fresh_d5120_predicted_2026-12-01.json"
#: a sixth layer size (Qwen2.5-7B shapes), measured after the shipped model's predictions for it were committed;
#: never fitted on
FRESH_D3584 = DATA / "h200_layer_fresh_d3584_2026-12-01.json"
FRESH_D3584_PREDICTED = DATA / "h200_layer_fresh_d3584_predicted_2026-12-01.json"
#: a seventh (dim 5120 with Qwen3-14B's MLP), the same way, predicted by the model with per-group cast factors
FRESH_D5120Q = DATA / "h200_layer_fresh_d5120q_2026-12-01.json"
FRESH_D5120Q_PREDICTED = DATA / "h200_layer_fresh_d5120q_predicted_2026-12-01.json"
#: the held-out-only sizes: key -> (measured, predicted, title)
FRESH_EXTRA = {
    "fresh_d3584": (
        FRESH_D3584,
        FRESH_D3584_PREDICTED,
        "A sixth layer size, never fitted on: dim 3584** (Qwen2.5-7B's shapes as a Llama-style layer: 28 query / "
        "4 KV heads, ffn 18944",
    ),
    "fresh_d5120q": (
        FRESH_D5120Q,
        FRESH_D5120Q_PREDICTED,
        "A seventh, never fitted on: dim 5120 with Qwen3-14B's MLP** (ffn 17408, 40 / 8 heads; no per-head q/k norm",
    ),
}
#: the same configs measured in other sessions (label -> file): the first sweep, with 7-11 workers compiling
#: beside every measurement, and a later one with host times (dims 2048 and 4096 at 4096 tokens, and four of 8192)
REPEAT_FILES = {
    "first sweep, compiles beside": DATA / "h200_layer_2026-12-01.json",
    "host-time session": DATA / "h200_layer_host_2026-12-01.json",
}
#: the host-bound layer (dim 2048 x 4096 tokens) and a GPU-bound control (dim 4096) measured in six processes one
#: after another on one machine; four came back with their JSON (a1 of the first device call, b2-b4 of the next):
#: a2's and a3's step times are only in log_layer_hostrep.txt (benchmarks/data/h200_2026-12-01/README.md)
PROCESS_FILES = tuple(DATA / f"h200_layer_hostrep_{p}_2026-12-01.json" for p in ("a1", "b2", "b3", "b4"))
#: the same configs with CUDA graphs (``--compile-mode reduce-overhead``) in three processes on a fresh machine, then
#: one process in the default mode on it (the same machine's eager reference)
GRAPH_FILES = tuple(DATA / f"h200_layer_graphs{i}_2026-12-01.json" for i in (1, 2, 3))
GRAPH_EAGER_FILE = DATA / "h200_layer_graphs_eager_2026-12-01.json"
#: dim 3072 x 4096 tokens (under 7 ms of kernels too) in three eager processes, then one with CUDA graphs, on another
#: machine: a small layer that the host does not decide
D3072_EAGER_FILES = tuple(DATA / f"h200_layer_d3072rep{i}_2026-12-01.json" for i in (1, 2, 3))
D3072_GRAPH_FILES = (DATA / "h200_layer_d3072graphs1_2026-12-01.json",)
#: the mix_order plan (perfmodel.bench.layer.MIX_ORDER_CASES), measured after its predictions were committed
MIX_ORDER_FILE = DATA / "h200_layer_mix_order_2026-12-01.json"
MIX_ORDER_PREDICTED = DATA / "h200_layer_mix_order_predicted_2026-12-01.json"
#: the filter plan (perfmodel.bench.layer.FILTER_CASES), measured after its predictions and choices were committed
FILTER_FILE = DATA / "h200_layer_filter_2026-12-01.json"
FILTER_PREDICTED = DATA / "h200_layer_filter_predicted_2026-12-01.json"
#: the kernel of inductor's mix-order norm backward with the fused transposed float8 cast (docs/step.md)
MIX_ORDER_KERNEL = ("triton_per_fused__scaled_mm_", "div_expand", "t_transpose")
FSDP_FILE = DATA / "h200_train_fsdp_1gpu_2026-12-01.json"
STEP_DOC = ROOT / "docs" / "step.md"
VALIDATION_DOC = ROOT / "docs" / "validation.md"
BEGIN, END = "<!-- step:begin -->", "<!-- step:end -->"
TABLES_BEGIN, TABLES_END = "<!-- step-tables:begin -->", "<!-- step-tables:end -->"
DIMS = (2048, 3072, 4096, 5120, 8192)
RECIPES = ("tensorwise", "rowwise", "rowwise_with_gw_hp")
#: kernels of an FSDP2 step that are not the layers' own compute (optimizer, FSDP copies, memsets)
NOT_LAYER = ("multi_tensor_apply", "chunk_cat", "Memcpy", "bfloat16_copy", "Memset", "vectorized_elementwise_kernel")


def torchao_auto_convert(layer: LayerShape, recipe: str) -> tuple[str, ...] | None:
    """The Linears torchao 0.18's ``torchao.float8._auto_filter_for_recipe(recipe, [])`` converts, by shape
    (``float8_linear_utils._auto_filter_for_tensorwise`` / ``_for_rowwise``); None where it refuses the recipe."""
    out = []
    for lin in layer.linears():
        K, N = lin.in_features, lin.out_features
        if K % 16 or N % 16:
            continue
        if recipe == "tensorwise":
            if K <= 4096 and N <= 1024:
                continue
        elif recipe == "rowwise":
            if N <= 2048 or K <= 1024 or (N <= 4096 and K <= 2048):
                continue
        else:
            return None  # rowwise_with_gw_hp: NotImplementedError in torchao
        out.append(lin.name)
    return tuple(out)


def _ms(t: float) -> str:
    return f"{t * 1e3:.3f}"


def _groups_label(groups: tuple[str, ...]) -> str:
    return "+".join(groups) if groups else "none (bf16)"


def evaluate() -> dict[str, Any]:
    with cl.reusing_raw_kernels():  # the held-out rotation and the refit fit the same records (each case once)
        return _evaluate()


def _evaluate() -> dict[str, Any]:
    records = cl.load_records(LAYER_FILES)
    shipped = load_layer_params(ROOT / "perfmodel" / "calibrations" / "h200_layer.json")
    rows, choices, rotation = [], [], {}
    for dim in DIMS:
        params = cl.fit(records, exclude_dims=(dim,))
        test = [r for r in records if int(r["dim"]) == dim]
        pred = {r["id"]: cl.LayerCase(r).predict(params) for r in test}
        step_ape, kern_ape, speed_ape, save_err, save_err_k = [], [], [], [], []
        for case in sorted({r["case"] for r in test}, key=lambda c: (len(c), c)):
            rs = [r for r in test if r["case"] == case]
            b = next(r for r in rs if r["recipe"] == "bf16")
            bcase = cl.LayerCase(b)
            pb, mb, kb = float(pred[b["id"]].step_s), b["step_time_s"], b["step_kernel_time_s"]
            pkb = float(pred[b["id"]].kernel_s)
            for r in rs:
                step_ape.append(abs(float(pred[r["id"]].step_s) / r["step_time_s"] - 1) * 100)
                kern_ape.append(abs(float(pred[r["id"]].kernel_s) / r["step_kernel_time_s"] - 1) * 100)
                if r["recipe"] != "bf16":
                    speed_ape.append(abs((pb / float(pred[r["id"]].step_s)) / (mb / r["step_time_s"]) - 1) * 100)
            rows.append(
                dict(held=dim, case=case, tokens=b["tokens"], recipe="bf16", meas=mb, pred=pb, kmeas=kb, kpred=pkb)
            )
            for recipe in RECIPES:
                sub = [r for r in rs if r["recipe"] == recipe]
                a = next((r for r in sub if r["subset"] == "all"), None)
                if a is None:  # the mix_order plan measures some recipes at some token counts only
                    continue
                pa, ma, ka, pka = (
                    float(pred[a["id"]].step_s),
                    a["step_time_s"],
                    a["step_kernel_time_s"],
                    float(pred[a["id"]].kernel_s),
                )
                err = ((pb - pa) - (mb - ma)) / mb * 100
                err_k = ((pkb - pka) - (kb - ka)) / kb * 100
                save_err.append(err)
                save_err_k.append(err_k)
                rows.append(
                    dict(
                        held=dim,
                        case=case,
                        tokens=b["tokens"],
                        recipe=recipe,
                        meas=ma,
                        pred=pa,
                        kmeas=ka,
                        kpred=pka,
                        speedup_meas=mb / ma,
                        speedup_pred=pb / pa,
                        save_meas=(mb - ma) / mb * 100,
                        save_pred=(pb - pa) / mb * 100,
                        save_err=err,
                        save_err_kernel=err_k,
                    )
                )
                measured = {tuple(r["groups"]): r for r in sub if r["subset"] not in ("q",)}
                measured[()] = b
                opts = dict(gpu="H200", seq_len=bcase.seq_len, batch=bcase.batch, recipe=recipe, layer_params=params)
                chosen = best_convert(bcase.layer, candidates=list(measured), **opts)
                free = best_convert(bcase.layer, **opts)
                best = min(measured.values(), key=lambda r: r["step_time_s"])
                best_k = min(measured.values(), key=lambda r: r["step_kernel_time_s"])
                ch = measured[chosen]
                ao = torchao_auto_convert(bcase.layer, recipe)
                ao_meas = None
                if ao is not None:
                    hit = [r for r in sub if {cl.canonical(n) for n in r["converted"]} == set(ao)]
                    ao_meas = hit[0]["step_time_s"] if hit else (mb if not ao else None)
                    ao_pred = float(
                        layer_time(
                            bcase.layer,
                            recipe=recipe if ao else "bf16",
                            convert=ao or None,
                            **{k: v for k, v in opts.items() if k != "recipe"},
                        ).step_s
                    )
                choices.append(
                    dict(
                        held=dim,
                        case=case,
                        recipe=recipe,
                        chosen=chosen,
                        free=free,
                        chosen_meas=ch["step_time_s"],
                        chosen_kmeas=ch["step_kernel_time_s"],
                        best=tuple(best["groups"]),
                        best_meas=best["step_time_s"],
                        best_k=tuple(best_k["groups"]),
                        best_kmeas=best_k["step_kernel_time_s"],
                        bf16_meas=mb,
                        bf16_kmeas=kb,
                        regret=(ch["step_time_s"] / best["step_time_s"] - 1) * 100,
                        regret_kernel=(ch["step_kernel_time_s"] / best_k["step_kernel_time_s"] - 1) * 100,
                        vs_bf16=(ch["step_time_s"] / mb - 1) * 100,
                        vs_bf16_kernel=(ch["step_kernel_time_s"] / kb - 1) * 100,
                        all_meas=a["step_time_s"],
                        torchao=ao,
                        torchao_meas=ao_meas,
                        torchao_pred=ao_pred if ao is not None else None,
                        n_measured=len(measured),
                    )
                )
        rotation[dim] = dict(
            n=len(test),
            step_mdape=float(np.median(step_ape)),
            kernel_mdape=float(np.median(kern_ape)),
            speedup_mdape=float(np.median(speed_ape)),
            max_save_err=float(max(save_err, key=abs)),
            max_save_err_kernel=float(max(save_err_k, key=abs)),
            params=params,
        )
    return dict(
        rows=rows,
        choices=choices,
        rotation=rotation,
        fsdp=score_fsdp(shipped),
        shipped=shipped,
        refit=cl.fit_with_residuals(records, source=shipped.source),
        kernels=kernel_counts(records),
        gemms_in_steps=score_gemms_in_steps(records),
        repeats={label: score_repeat(records, choices, path) for label, path in REPEAT_FILES.items() if path.exists()},
        host=score_host(records),
        processes=score_processes(shipped),
        graphs=score_processes(shipped, GRAPH_FILES),
        graphs_eager=score_processes(shipped, (GRAPH_EAGER_FILE,)),
        d3072_graphs=score_processes(shipped, D3072_GRAPH_FILES),
        d3072_eager=score_processes(shipped, D3072_EAGER_FILES),
        fresh=score_fresh(shipped),
        **{key: score_fresh(shipped, m, p) for key, (m, p, _) in FRESH_EXTRA.items()},
        mix_order=score_mix_order(),
        filter=score_filter(),
        n_records=len(records),
    )


def _spread(r: dict[str, Any]) -> float:
    return (r["step_time_s_p80"] - r["step_time_s_p20"]) / r["step_time_s"] * 100


def score_repeat(records: list[dict[str, Any]], choices: list[dict[str, Any]], path: Path) -> dict[str, Any]:
    """The layers measured again in another session (``path``): per case, how much event and kernel step times
    moved against the fitted sweep, the within-run spread in both, the all-Linears savings in both, and the
    filter's held-out choice re-scored on the repeat (where it measured every subset)."""
    first = {r["id"]: r for r in records}
    again = [r for r in cl.load_records(path) if r["id"] in first]
    out: dict[str, Any] = {"cases": {}, "choices": []}
    for case in sorted({r["case"] for r in again}, key=lambda c: (len(c), c)):
        rs = [r for r in again if r["case"] == case]
        ev = np.array([abs(r["step_time_s"] / first[r["id"]]["step_time_s"] - 1) * 100 for r in rs])
        kt = np.array([abs(r["step_kernel_time_s"] / first[r["id"]]["step_kernel_time_s"] - 1) * 100 for r in rs])
        b2 = next(r for r in rs if r["recipe"] == "bf16")
        b1 = first[b2["id"]]
        savings = {}
        for recipe in RECIPES:
            a2 = next((r for r in rs if r["recipe"] == recipe and r["subset"] == "all"), None)
            if a2 is None:
                continue
            a1 = first[a2["id"]]
            savings[recipe] = {
                w: [(b[f] - a[f]) / b[f] * 100 for b, a in ((b1, a1), (b2, a2))]
                for w, f in (("event", "step_time_s"), ("kernel", "step_kernel_time_s"))
            }
        out["cases"][case] = dict(
            n=len(rs),
            event_mdape=float(np.median(ev)),
            event_max=float(ev.max()),
            kernel_mdape=float(np.median(kt)),
            kernel_max=float(kt.max()),
            spread_first=float(np.median([_spread(first[r["id"]]) for r in rs])),
            spread_again=float(np.median([_spread(r) for r in rs])),
            savings=savings,
        )
        for c in (c for c in choices if c["case"] == case):
            sub = {tuple(r["groups"]): r for r in rs if r["recipe"] == c["recipe"] and r["subset"] != "q"}
            if len(sub) < c["n_measured"] - 1:  # every measured subset is needed for "the best"
                continue
            sub[()] = b2
            best = min(sub.values(), key=lambda r: r["step_time_s"])
            ch = sub[c["chosen"]]
            out["choices"].append(
                dict(
                    case=case,
                    recipe=c["recipe"],
                    chosen=c["chosen"],
                    vs_bf16=(ch["step_time_s"] / b2["step_time_s"] - 1) * 100,
                    regret=(ch["step_time_s"] / best["step_time_s"] - 1) * 100,
                    best=tuple(best["groups"]),
                )
            )
    return out


def score_fresh(shipped: Any, measured: Path = FRESH_FILE, predicted: Path = FRESH_PREDICTED) -> dict[str, Any]:
    """The fresh layer size against the predictions committed before it was measured (``FRESH_PREDICTED``) and
    against the shipped model: per case and recipe (every Linear), step and kernel time, speedup, savings error
    by events and by kernel time, and the filter's choice among the measured subsets; MdAPE over all configs."""
    if not (measured.exists() and predicted.exists()):
        return {}
    meas = {r["id"]: r for r in cl.load_records(measured)}
    pre = json.loads(predicted.read_text())
    sources = {
        "predicted before measuring": (
            {r["id"]: (r["step_s"], r["kernel_s"]) for r in pre["records"]},
            {k: tuple(v) for k, v in pre["choices"].items()},
        ),
    }
    now, choices = {}, {}
    for i, r in meas.items():
        lt = cl.LayerCase(r).predict(shipped)
        now[i] = (float(lt.step_s), float(lt.kernel_s))
    for case in sorted({r["case"] for r in meas.values()}):
        c = cl.LayerCase(next(r for r in meas.values() if r["case"] == case))
        for recipe in RECIPES:
            cands = [tuple(r["groups"]) for r in meas.values() if r["case"] == case and r["recipe"] == recipe]
            cands = [g for g in cands if g] + [()]
            opts = dict(gpu="H200", seq_len=c.seq_len, batch=c.batch, recipe=recipe, layer_params=shipped)
            choices[f"{case} {recipe}"] = best_convert(c.layer, candidates=cands, **opts)
    sources["shipped model"] = (now, choices)
    out: dict[str, Any] = {"commit": pre["meta"]["commit"], "n": len(meas)}
    for label, (pred, chosen) in sources.items():
        rows, picks = [], []
        for case in sorted({r["case"] for r in meas.values()}):
            b = meas[f"{case}-bf16"]
            for recipe in RECIPES:
                a = meas[f"{case}-{recipe}-all"]
                (pb, kb), (pa, ka) = pred[b["id"]], pred[a["id"]]
                mb, ma = b["step_time_s"], a["step_time_s"]
                rows.append(
                    dict(
                        case=case,
                        recipe=recipe,
                        speedup_meas=mb / ma,
                        speedup_pred=pb / pa,
                        save_err=((pb - pa) - (mb - ma)) / mb * 100,
                        save_err_kernel=((kb - ka) - (b["step_kernel_time_s"] - a["step_kernel_time_s"]))
                        / b["step_kernel_time_s"]
                        * 100,
                    )
                )
                sub = {tuple(r["groups"]): r for r in meas.values() if r["case"] == case and r["recipe"] == recipe}
                sub = {g: r for g, r in sub.items() if g} | {(): b}
                pick = sub[tuple(chosen[f"{case} {recipe}"])]
                best = min(sub.values(), key=lambda r: r["step_time_s"])
                picks.append(
                    dict(
                        case=case,
                        recipe=recipe,
                        chosen=tuple(chosen[f"{case} {recipe}"]),
                        vs_bf16=(pick["step_time_s"] / mb - 1) * 100,
                        regret=(pick["step_time_s"] / best["step_time_s"] - 1) * 100,
                        best=tuple(best["groups"]),
                    )
                )
        out[label] = dict(
            rows=rows,
            choices=picks,
            step_mdape=float(np.median([abs(pred[i][0] / r["step_time_s"] - 1) * 100 for i, r in meas.items()])),
            kernel_mdape=float(
                np.median([abs(pred[i][1] / r["step_kernel_time_s"] - 1) * 100 for i, r in meas.items()])
            ),
        )
    return out


def _ran_mix_order(record: dict[str, Any]) -> float:
    """Seconds per step of the mix-order norm-backward kernel with the fused cast (0: it did not run)."""
    first, *rest = MIX_ORDER_KERNEL
    return sum(
        k["time_s"] for k in record["kernels"] if k["name"].startswith(first) and all(p in k["name"] for p in rest)
    )


def score_mix_order() -> dict[str, Any]:
    """The mix_order plan against the predictions committed before it was measured: per config, whether the
    model expected the mix-order kernel and whether it ran (its time), step and kernel time errors; per float8
    config, the speedup and the savings error (points of the bf16 step) by events and by kernel time."""
    if not (MIX_ORDER_FILE.exists() and MIX_ORDER_PREDICTED.exists()):
        return {}
    meas = {r["id"]: r for r in cl.load_records(MIX_ORDER_FILE)}
    doc = json.loads(MIX_ORDER_PREDICTED.read_text())
    pred = {r["id"]: r for r in doc["records"]}
    rows = []
    for i, r in meas.items():
        p = pred[i]
        b, pb = meas[f"{r['case']}-bf16"], pred[f"{r['case']}-bf16"]
        row = dict(
            id=i,
            expected=bool(p["mix_order_cast"]),
            ran_s=_ran_mix_order(r),
            step_err=(p["step_s"] / r["step_time_s"] - 1) * 100,
            kernel_err=(p["kernel_s"] / r["step_kernel_time_s"] - 1) * 100,
        )
        if r["recipe"] != "bf16":
            mb, ma, kb, ka = b["step_time_s"], r["step_time_s"], b["step_kernel_time_s"], r["step_kernel_time_s"]
            row |= dict(
                speedup_meas=mb / ma,
                speedup_pred=pb["step_s"] / p["step_s"],
                save_err=((pb["step_s"] - p["step_s"]) - (mb - ma)) / mb * 100,
                save_err_kernel=((pb["kernel_s"] - p["kernel_s"]) - (kb - ka)) / kb * 100,
            )
        rows.append(row)
    return dict(
        commit=doc["meta"]["commit"],
        rows=rows,
        rule_right=sum(r["expected"] == (r["ran_s"] > 0) for r in rows),
        step_mdape=float(np.median([abs(r["step_err"]) for r in rows])),
        kernel_mdape=float(np.median([abs(r["kernel_err"]) for r in rows])),
    )


def score_filter() -> dict[str, Any]:
    """The filter plan against its committed predictions: per case and float8 recipe, the filter's free choice
    (any of the 16 group subsets), its measured step next to bf16's and every Linear's of the same session, the
    best of those, and the predicted and measured speedups."""
    if not (FILTER_FILE.exists() and FILTER_PREDICTED.exists()):
        return {}
    meas = {r["id"]: r for r in cl.load_records(FILTER_FILE)}
    doc = json.loads(FILTER_PREDICTED.read_text())
    pred = {r["id"]: r for r in doc["records"]}
    rows = []
    for key, groups in doc["choices"].items():
        case, recipe = key.split()
        b = meas[f"{case}-bf16"]
        label = "all" if tuple(groups) == ("qkv", "o", "w13", "w2") else "+".join(groups) or "none"
        pick = b if label == "none" else meas[f"{case}-{recipe}-{label}"]
        same = [r for r in meas.values() if r["case"] == case and r["recipe"] in ("bf16", recipe)]
        best = min(same, key=lambda r: r["step_time_s"])
        every = meas.get(f"{case}-{recipe}-all")
        rows.append(
            dict(
                case=case,
                recipe=recipe,
                chosen=label,
                speedup_meas=b["step_time_s"] / pick["step_time_s"],
                speedup_pred=pred[b["id"]]["step_s"] / pred[pick["id"]]["step_s"],
                all_meas=b["step_time_s"] / every["step_time_s"] if every else None,
                best=best["subset"] if best["recipe"] != "bf16" else "none",
                regret=(pick["step_time_s"] / best["step_time_s"] - 1) * 100,
                vs_bf16=(pick["step_time_s"] / b["step_time_s"] - 1) * 100,
            )
        )
    return dict(commit=doc["meta"]["commit"], rows=sorted(rows, key=lambda r: (r["case"], r["recipe"])))


def filter_table(fl: dict[str, Any]) -> str:
    """The pre-registered filter test (empty without its files)."""
    if not fl:
        return ""
    out = [
        "",
        "**The filter's picks where the mix-order rule fires, predicted before measuring** "
        "(`h200_layer_filter_2026-12-01.json`, the `filter` plan; choices and predictions committed first, "
        "`h200_layer_filter_predicted_2026-12-01.json`, model of "
        f"{fl['commit'][:7]}): the filter's free choice among the 16 group subsets, its measured float8 step "
        "speedup (bf16 / float8, events) against the prediction and against converting every Linear in the same "
        "session, and its regret against the best config measured there:\n",
        "| case | recipe | filter's choice | speedup meas / pred | every Linear, meas | best measured | vs bf16 % "
        "| regret % |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in fl["rows"]:
        every = f"{r['all_meas']:.2f}" if r["all_meas"] is not None else "–"
        out.append(
            f"| {r['case']} | {r['recipe']} | {r['chosen']} | {r['speedup_meas']:.2f} / {r['speedup_pred']:.2f} | "
            f"{every} | {r['best']} | {_pm(r['vs_bf16'])} | {r['regret']:.1f} |"
        )
    return "\n".join(out)


def mix_order_table(mo: dict[str, Any]) -> str:
    """The pre-registered mix_order test (empty without its files)."""
    if not mo:
        return ""
    out = [
        "",
        f"**The mix-order rule, predicted before measuring** (`h200_layer_mix_order_2026-12-01.json`: the `mix_order` "
        "plan of `perfmodel.bench.layer`, 21 configs at dims 2048, 3072 — Llama 3.2 3B, a size no fit saw — and 4096, "
        f"4096 to 16384 tokens, batch 1 and 2; predictions committed at {mo['commit'][:7]}, "
        "`h200_layer_mix_order_predicted_2026-12-01.json`): whether the model expected inductor's mix-order "
        "norm backward with the fused cast, whether it ran (ms per step), and the errors of the prediction:\n",
        "| config | expected | ran | step error | kernel error | speedup meas / pred | savings error (events) "
        "| (kernels) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in mo["rows"]:
        ran = f"yes, {r['ran_s'] * 1e3:.2f}" if r["ran_s"] else "no"
        f8 = (
            f"{r['speedup_meas']:.2f} / {r['speedup_pred']:.2f} | {_pm(r['save_err'])} | {_pm(r['save_err_kernel'])}"
            if "save_err" in r
            else "– | – | –"
        )
        out.append(
            f"| {r['id']} | {'yes' if r['expected'] else 'no'} | {ran} | {_pm(r['step_err'])} % "
            f"| {_pm(r['kernel_err'])} % | {f8} |"
        )
    out.append(
        f"\nThe rule was right for {mo['rule_right']} of {len(mo['rows'])} configs; step time MdAPE "
        f"{mo['step_mdape']:.1f} %, kernel time {mo['kernel_mdape']:.1f} %."
    )
    return "\n".join(out)


def _fresh_rows(fr: dict[str, Any], labels: tuple[str, ...], *, best: bool) -> list[str]:
    """One table row per (model, case, recipe) of :func:`score_fresh`'s result; ``best``: add the best measured
    subset as a last column."""
    out = []
    for label in labels:
        for r, c in zip(fr[label]["rows"], fr[label]["choices"], strict=True):
            cells = [
                label,
                16384 if "b4" in r["case"] else 4096,
                r["recipe"],
                f"{r['speedup_meas']:.2f} / {r['speedup_pred']:.2f}",
                _pm(r["save_err"]),
                _pm(r["save_err_kernel"]),
                _groups_label(c["chosen"]),
                _pm(c["vs_bf16"]),
                f"{c['regret']:.1f}",
            ]
            out.append(_row(*cells, *([_groups_label(c["best"])] if best else [])))
    return out


def fresh_table(fr: dict[str, Any]) -> str:
    """The fresh layer size as markdown (empty without its files)."""
    if not fr:
        return ""
    out = [
        "",
        f"**A layer size no fit saw: dim 5120** (Qwen2.5-14B's shapes as a Llama-style layer; "
        f"`{FRESH_FILE.name}`, {fr['n']} configs: bf16, every Linear in each recipe, each group alone and q alone, "
        f"at 4096 and 16384 tokens), measured after the step model's predictions for it were committed "
        f"(`{FRESH_PREDICTED.name}`, commit {fr['commit'][:7]}) — those predictions, and the shipped model's "
        "(whose step factors took their form after this measurement was seen, and whose parameters are fitted "
        "on it too: not a held-out score; the rotation above holds this size out):\n",
        "| model | tokens | recipe (all Linears) | speedup meas / pred | savings error (events) | (kernels) | "
        "filter's choice | vs bf16 % | regret % |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    out += _fresh_rows(fr, ("predicted before measuring", "shipped model"), best=False)
    pre, now = fr["predicted before measuring"], fr["shipped model"]
    out.append(
        f"\nStep time MdAPE over the {fr['n']} configs: {pre['step_mdape']:.1f} % before measuring, "
        f"{now['step_mdape']:.1f} % shipped; kernel time {pre['kernel_mdape']:.1f} % and {now['kernel_mdape']:.1f} %."
    )
    return "\n".join(out)


def fresh_extra_table(key: str, fr: dict[str, Any]) -> str:
    """A layer size held out from every fit (:data:`FRESH_EXTRA`), against its pre-registered predictions (empty
    without them)."""
    if not fr:
        return ""
    measured, predicted, title = FRESH_EXTRA[key]
    pre, now = fr["predicted before measuring"], fr["shipped model"]
    # the same model up to floating-point summation order (1e-6 relative; the rows print 3 digits): a change of the
    # model moves these by percents, a reordered sum by ~1e-9
    same = all(
        abs(a["speedup_pred"] / b["speedup_pred"] - 1) < 1e-6 for a, b in zip(pre["rows"], now["rows"], strict=True)
    )
    out = [
        "",
        f"**{title}; `{measured.name}`, {fr['n']} configs as for dim 5120), measured after the "
        f"predictions of the shipped model were committed (`{predicted.name}`, commit {fr['commit'][:7]}"
        + (
            "; the shipped model gives the same numbers"
            if same
            else "; the shipped model changed after this measurement was seen — its per-group cast factors — so its "
            "rows, though never fitted on this size, are not a pre-registered score"
        )
        + "):\n",
        "| model | tokens | recipe (all Linears) | speedup meas / pred | savings error (events) | (kernels) "
        "| filter's choice | vs bf16 % | regret % | best measured |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    labels = ("predicted before measuring",) if same else ("predicted before measuring", "shipped model")
    out += _fresh_rows(fr, labels, best=True)
    out.append(
        f"\nStep time MdAPE over the {fr['n']} configs: {pre['step_mdape']:.1f} % before measuring"
        + ("" if same else f", {now['step_mdape']:.1f} % shipped")
        + f"; kernel time {pre['kernel_mdape']:.1f} %"
        + ("." if same else f" and {now['kernel_mdape']:.1f} %.")
    )
    return "\n".join(out)


def score_host(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Host (launch) time per step against GPU time, from the host-time session: per case, bf16 and the
    float8 configs (min, median, max), their kernel time, and the host time per converted Linear."""
    path = REPEAT_FILES["host-time session"]
    if not path.exists():
        return {}
    out: dict[str, Any] = {}
    host = [r for r in cl.load_records(path) if r.get("host_step_s")]
    for case in sorted({r["case"] for r in host}, key=lambda c: (len(c), c)):
        rs = [r for r in host if r["case"] == case]
        bf = next(r for r in rs if r["recipe"] == "bf16")
        f8 = [r for r in rs if r["recipe"] != "bf16"]
        f8_host = [r["host_step_s"] for r in f8]
        f8_kern = [r["step_kernel_time_s"] for r in f8]
        spread = [(max(r["host_step_s_all"]) - min(r["host_step_s_all"])) / r["host_step_s"] * 100 for r in rs]
        out[case] = dict(
            n=len(rs),
            valid=all(r["host_step_valid"] for r in rs),
            bf16_host=bf["host_step_s"],
            bf16_kernel=bf["step_kernel_time_s"],
            f8_host=[min(f8_host), float(np.median(f8_host)), max(f8_host)],
            f8_kernel=[min(f8_kern), max(f8_kern)],
            per_linear=float(np.median([(r["host_step_s"] - bf["host_step_s"]) / len(r["converted"]) for r in f8])),
            spread=float(np.median(spread)),
        )
    return out


def score_processes(params: Any, paths: tuple[Path, ...] = PROCESS_FILES) -> dict[str, Any]:
    """The same configs in several processes on one machine (:data:`PROCESS_FILES`): per config id, the range
    (min, max) over the processes of its event and kernel step time and host time (ms), and of its savings
    against the same process's bf16 step (points of it: by events, and by kernel time against bf16's kernel time),
    beside the savings the step model with ``params`` predicts. Empty without the files."""
    runs = [{r["id"]: r for r in cl.load_records(q)} for q in paths if q.exists()]
    if not runs:
        return {}

    def rng(values: list[float]) -> list[float]:
        return [float(min(values)), float(max(values))]

    out: dict[str, Any] = {}
    for cid, r0 in runs[0].items():
        pairs = [(run[cid], run[f"{r0['case']}-bf16"]) for run in runs if cid in run and f"{r0['case']}-bf16" in run]
        row: dict[str, Any] = dict(
            case=r0["case"],
            recipe=r0["recipe"],
            subset=r0["subset"],
            n=len(pairs),
            event_ms=rng([r["step_time_s"] * 1e3 for r, _ in pairs]),
            kernel_ms=rng([r["step_kernel_time_s"] * 1e3 for r, _ in pairs]),
            host_ms=rng([r["host_step_s"] * 1e3 for r, _ in pairs if r.get("host_step_s")] or [float("nan")]),
        )
        if r0["recipe"] != "bf16":
            pf, pb = cl.case_of(r0).predict(params), cl.case_of(pairs[0][1]).predict(params)
            for w, f, a in (("event", "step_time_s", "step_s"), ("kernel", "step_kernel_time_s", "kernel_s")):
                row[f"save_{w}"] = rng([(b[f] - r[f]) / b[f] * 100 for r, b in pairs])
                row[f"pred_{w}"] = float((getattr(pb, a) - getattr(pf, a)) / getattr(pb, a) * 100)
        out[cid] = row
    order = sorted(out, key=lambda c: (out[c]["case"], out[c]["recipe"] != "bf16"))
    return {c: out[c] for c in order}


def _span(v: list[float], fmt: str = "{:.3f}") -> str:
    """A (min, max) range as text: one value when both are the same."""
    return fmt.format(v[0]) if abs(v[1] - v[0]) < 1e-12 else f"{fmt.format(v[0])} … {fmt.format(v[1])}"


def processes_table(pr: dict[str, Any]) -> str:
    """The process repeats as markdown (empty without their files)."""
    if not pr:
        return ""
    n = max(v["n"] for v in pr.values())
    out = [
        "",
        f"**Measured again: {n} processes on one machine** (`h200_layer_hostrep_*_2026-12-01.json`: the same "
        "configs measured one process after another on one GPU and one host, minutes apart) — the range over the "
        "processes of each config's step time (ms, CUDA events), kernel sum and host time, and of its savings against "
        "the same process's bf16 step (points), beside the shipped model's predicted savings:\n",
        "| config | processes | events ms | kernels ms | host ms | savings, events: measured · predicted "
        "| savings, kernels: measured · predicted |",
        "|---|---|---|---|---|---|---|",
    ]

    for v in pr.values():
        sub = "" if v["recipe"] == "bf16" else f" {v['subset']}"
        out.append(
            _row(
                f"{v['case']} {v['recipe']}{sub}",
                v["n"],
                _span(v["event_ms"]),
                _span(v["kernel_ms"]),
                _span(v["host_ms"], "{:.2f}"),
                f"{_span(v['save_event'], '{:+.1f}')} · {v['pred_event']:+.1f}" if "save_event" in v else "",
                f"{_span(v['save_kernel'], '{:+.1f}')} · {v['pred_kernel']:+.1f}" if "save_kernel" in v else "",
            )
        )
    return "\n".join(out)


def graphs_table(graphs: dict[str, Any], eager: dict[str, Any], files: str) -> str:
    """CUDA-graph processes beside the same machine's eager ones (``files``: their file names' pattern), as markdown
    (empty without their files)."""
    if not graphs or not eager:
        return ""
    n, m = max(v["n"] for v in graphs.values()), max(v["n"] for v in eager.values())
    case = next(iter(graphs.values()))["case"]

    def procs(k: int, how: str) -> str:
        return f"{'one process' if k == 1 else f'{k} processes'} {how}"

    graphed, plain = procs(n, 'compiled with `mode="reduce-overhead"`'), procs(m, "in the default mode")
    out = [
        "",
        f"**With CUDA graphs: {case}** (`{files}_2026-12-01.json`: the same configs, {graphed} and {plain}, one after "
        "another on one machine) — step time (ms, CUDA events) and savings against the same process's bf16 step "
        "(points), eager and with CUDA graphs (ranges over the processes), the kernel sum with CUDA graphs, and the "
        "shipped model's predicted savings (by events · by kernel time):\n",
        "| config | eager: events ms | eager: savings | graphs: events ms | graphs: kernels ms | graphs: savings "
        "| predicted savings |",
        "|---|---|---|---|---|---|---|",
    ]

    for cid, v in graphs.items():
        e = eager.get(cid)
        if e is None:
            continue
        sub = "" if v["recipe"] == "bf16" else f" {v['subset']}"
        f8 = "save_event" in v
        out.append(
            _row(
                f"{v['case']} {v['recipe']}{sub}",
                _span(e["event_ms"], "{:.3f}"),
                _span(e["save_event"], "{:+.1f}") if f8 else "",
                _span(v["event_ms"], "{:.3f}"),
                _span(v["kernel_ms"], "{:.3f}"),
                _span(v["save_event"], "{:+.1f}") if f8 else "",
                f"{v['pred_event']:+.1f} · {v['pred_kernel']:+.1f}" if f8 else "",
            )
        )
    return "\n".join(out)


def score_fsdp(params: Any) -> list[dict[str, Any]]:
    """The one-GPU FSDP2 steps (seq 8192, never fitted): the layers' own kernel time against the prediction."""
    data = json.loads(FSDP_FILE.read_text())
    out = []
    for r in data["records"]:
        lay = LayerShape(
            name=r["layer"],
            hidden=r["dim"],
            ffn=r["ffn"],
            heads=r["heads"],
            kv_heads=r["kv_heads"],
            head_dim=r["head_dim"],
        )
        lt = layer_time(
            lay, gpu="H200", seq_len=r["seq"], batch=r["batch"], recipe=r["recipe"], ac=r["ac"], layer_params=params
        )
        layer_k = sum(k["time_s"] for k in r["kernels"] if not any(x in k["name"] for x in NOT_LAYER))
        n = int(r["n_layers"])
        out.append(
            dict(
                config=r["config"],
                layers=n,
                seq=r["seq"],
                recipe=r["recipe"],
                ac=r["ac"],
                meas=layer_k,
                pred=float(lt.kernel_s) * n,
                recompute_pred=float(sum(k.time_s for k in lt.kernels if k.phase == "recompute")) * n,
                step=r["step_time_s"],
                rest=r["step_kernel_time_s"] - layer_k,
            )
        )
    return out


def score_gemms_in_steps(records: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """The GEMM kernels inside every fitted layer step (their summed profiled time) against each GEMM time model's
    price of them: the default (calibrated, with its in-layer GEMM factors — fitted on these steps) and the tile
    model (standalone GEMMs, no in-layer factor); MdAPE, p90 and median bias (predicted / measured − 1), %."""
    out: dict[str, dict[str, float]] = {}
    for label, tm in (("default", None), ("tiles", "tiles")):
        ratio = []
        for r in records:
            t = cl.LayerCase(r).predict(None, time_model=tm)  # the shipped layer parameters
            m = cl.measured_parts(r)
            ratio.append(sum(float(k.time_s) for k in t.kernels if k.part == "gemm") / (m["gemm_bf16"] + m["gemm_fp8"]))
        e = np.array(ratio) - 1
        out[label] = dict(
            n=len(e),
            mdape=float(np.median(np.abs(e)) * 100),
            p90=float(np.percentile(np.abs(e), 90) * 100),
            bias=float(np.median(e) * 100),
        )
    return out


def gemms_in_steps_table(g: dict[str, dict[str, float]]) -> str:
    if not g:
        return ""
    d, t = g["default"], g["tiles"]
    return (
        f"\n**The GEMMs inside the steps** ({d['n']} fitted layer steps; the GEMM kernels' summed profiled time "
        "against each GEMM model's price; MdAPE / p90 %, median bias): the default model with its in-layer GEMM "
        f"factors {d['mdape']:.1f} / {d['p90']:.0f} ({d['bias']:+.1f} %) — those factors were fitted on these "
        f'steps, so this is not a held-out score; the tile model (`time_model="tiles"`, standalone GEMMs with L2 '
        f"flushed, no in-layer factor) {t['mdape']:.1f} / {t['p90']:.0f} ({t['bias']:+.1f} %)"
        + (": GEMMs inside a compiled step run a little faster than the same GEMMs alone." if t["bias"] > 0.5 else ".")
    )


def kernel_counts(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Kernels per step and non-GEMM, non-SDPA kernel time, bf16 against every Linear converted."""
    out = []
    for case in sorted({r["case"] for r in records}, key=lambda c: (len(c), c)):
        rs = {(r["recipe"], r["subset"]): r for r in records if r["case"] == case}
        if not all(k in rs for k in (("bf16", "none"), ("tensorwise", "all"), ("rowwise", "all"))):
            continue  # the mix_order plan's cases without rowwise
        row = dict(case=case)
        for key, (recipe, subset) in (
            ("bf16", ("bf16", "none")),
            ("tensorwise", ("tensorwise", "all")),
            ("rowwise", ("rowwise", "all")),
        ):
            r = rs[recipe, subset]
            row[key] = (int(r["kernels_per_step"]), cl.measured_parts(r)["other"])
        out.append(row)
    return out


def _row(*cells: Any) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _pm(x: float) -> str:
    return f"{x:+.1f}"


def tables(rep: dict[str, Any]) -> str:
    """The generated part of docs/step.md."""
    out = []
    out.append(
        "**Held-out step time and float8 speedup** — each layer size predicted by parameters fitted on the others; "
        "step time in ms (CUDA events; kernel sum in brackets), speedup = bf16 step / float8 step, savings = "
        "(bf16 − float8) / bf16 step, error in points of the bf16 step:\n"
    )
    out.append(
        _row("held out", "tokens", "recipe (all Linears)", "measured ms", "predicted ms", "speedup meas / pred")[:-1]
        + _row("savings meas / pred", "savings error (events)", "(kernels)")
    )
    out.append("|---|---|---|---|---|---|---|---|---|")
    for r in rep["rows"]:
        if r["recipe"] == "bf16":
            out.append(
                _row(r["case"].split("-")[0], r["tokens"], "bf16", f"{_ms(r['meas'])} ({_ms(r['kmeas'])})")[:-1]
                + _row(f"{_ms(r['pred'])} ({_ms(r['kpred'])})", "", "", "", "")
            )
        else:
            out.append(
                f"| {r['case'].split('-')[0]} | {r['tokens']} | {r['recipe']} | {_ms(r['meas'])} ({_ms(r['kmeas'])}) | "
                f"{_ms(r['pred'])} ({_ms(r['kpred'])}) | {r['speedup_meas']:.2f} / {r['speedup_pred']:.2f} | "
                f"{r['save_meas']:.1f} / {r['save_pred']:.1f} % | {_pm(r['save_err'])} | {_pm(r['save_err_kernel'])} |"
            )
    out.append("")
    out.append(
        "**Per rotation** — MdAPE (%) of step time, kernel time and float8 speedup over every held-out config "
        "(all subsets), and the largest savings error (points of the bf16 step):\n"
    )
    out.append(
        "| held out | configs | step MdAPE | kernel MdAPE | speedup MdAPE | max savings error (events) | (kernels) |"
    )
    out.append("|---|---|---|---|---|---|---|")
    for dim, v in rep["rotation"].items():
        out.append(
            f"| dim {dim} | {v['n']} | {v['step_mdape']:.1f} | {v['kernel_mdape']:.1f} | {v['speedup_mdape']:.1f} | "
            f"{_pm(v['max_save_err'])} | {_pm(v['max_save_err_kernel'])} |"
        )
    out.append("")
    out.append(
        "**Which groups to convert** — the filter's choice (`best_convert` among the subsets measured for that "
        "layer: all 16 for dim 2048 and 4096, none / one group / all for 5120 and 8192, bf16 / all for "
        "rowwise_with_gw_hp), "
        "its measured step, the best measured "
        "subset, the regret (% slower than the best; by kernel time in brackets), next to torchao 0.18's "
        "`_auto_filter_for_recipe` (its rules applied to the layer's Linears by shape; its measured step where that "
        "exact "
        "set was measured, else predicted, marked *pred*) and converting everything:\n"
    )
    out.append(
        _row("held out", "recipe", "filter's choice", "measured ms", "best measured", "regret %", "vs bf16 %")[:-1]
        + _row("torchao auto filter", "its step ms", "all converted ms")
    )
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for c in rep["choices"]:
        if c["torchao"] is None:
            ao, ao_t = "refuses the recipe", "—"
        else:
            ao = ", ".join(c["torchao"]) or "nothing"
            ao_t = _ms(c["torchao_meas"]) if c["torchao_meas"] is not None else f"{_ms(c['torchao_pred'])} *pred*"
        free = "" if c["free"] == c["chosen"] else f" (any subset: {_groups_label(c['free'])})"
        out.append(
            f"| {c['case'].split('-')[0]} b{c['case'].split('-')[1][1]} | {c['recipe']} | "
            f"{_groups_label(c['chosen'])}{free} | "
            f"{_ms(c['chosen_meas'])} | {_groups_label(c['best'])} {_ms(c['best_meas'])} | "
            f"{c['regret']:.1f} ({c['regret_kernel']:.1f}) | "
            f"{_pm(c['vs_bf16'])} ({_pm(c['vs_bf16_kernel'])}) | {ao} | {ao_t} | {_ms(c['all_meas'])} |"
        )
    out.append("")
    out.append(
        "**Not fitted: one-GPU FSDP2 steps at sequence length 8192** (stacks of Llama 3 8B / 70B layers; the layers' "
        "own kernels — the optimizer, FSDP copies and memsets taken out — against the predicted kernel time):\n"
    )
    out.append("| config | layers | recipe | AC | measured ms | predicted ms | error % |")
    out.append("|---|---|---|---|---|---|---|")
    for f in rep["fsdp"]:
        out.append(
            _row(
                f["config"],
                f["layers"],
                f["recipe"],
                f["ac"],
                _ms(f["meas"]),
                _ms(f["pred"]),
                _pm(f["pred"] / f["meas"] * 100 - 100),
            )
        )
    ac = {f["config"]: f for f in rep["fsdp"]}
    if "fsdp_8b_bf16_ac" in ac and "fsdp_8b_bf16" in ac:
        m = ac["fsdp_8b_bf16_ac"]["meas"] - ac["fsdp_8b_bf16"]["meas"]
        p = ac["fsdp_8b_bf16_ac"]["pred"] - ac["fsdp_8b_bf16"]["pred"]
        out.append(
            f"\nFull activation checkpointing added {_ms(m)} ms of kernel time to the 4-layer 8B step; the model's "
            f"re-run forward adds {_ms(p)} ms ({_pm((p / m - 1) * 100)} %)."
        )
    out.append("")
    out.append("**Kernels per step** (count, and non-GEMM non-SDPA kernel ms) — bf16 against every Linear converted:\n")
    out.append("| layer, tokens | bf16 | tensorwise all | rowwise all |")
    out.append("|---|---|---|---|")
    for k in rep["kernels"]:
        cells = [f"{k[x][0]} ({_ms(k[x][1])})" for x in ("bf16", "tensorwise", "rowwise")]
        out.append(f"| {k['case']} | " + " | ".join(cells) + " |")
    out.append("")
    p = rep["shipped"]
    out.append(
        f"**Shipped parameters** (`perfmodel/calibrations/h200_layer.json`, fitted on all {rep['n_records']} "
        "configs):\n"
    )
    out.append("| parameter | value | unit |")
    out.append("|---|---|---|")
    out.append(f"| attention_fwd_fraction | {p.attention_fwd_fraction:.3f} | of the dense bf16 peak |")
    out.append(f"| attention_bwd_fraction | {p.attention_bwd_fraction:.3f} | of the dense bf16 peak |")
    out.append(f"| attention_fwd_row_s | {p.attention_fwd_row_s * 1e9:.3f} ns | per query row and head |")
    out.append(f"| attention_bwd_row_s | {p.attention_bwd_row_s * 1e9:.3f} ns | per query row and head |")
    out.append(f"| elementwise_bw_fraction | {p.elementwise_bw_fraction:.3f} | of the HBM bandwidth |")
    out.append(f"| elementwise_latency_s | {p.elementwise_latency_s * 1e6:.2f} µs | per kernel |")
    out.append(f"| fused_amax_cost | {p.fused_amax_cost:.2f} | HBM passes over the bytes a standalone amax reads |")
    out.append(
        _row(
            "norm_bwd_cast_cost",
            f"{p.norm_bwd_cast_cost:.2f}",
            "HBM passes over 3·tokens·hidden bytes (tensorwise q/k/v)",
        )
    )
    if p.mix_order_cast_cost is not None:
        out.append(
            _row(
                "mix_order_cast_cost",
                f"{p.mix_order_cast_cost:.2f}",
                "the same, in inductor's persistent mix-order norm backward (batch 1, tensorwise wq, wk, wv)",
            )
        )
    for k, v in p.gemm_factors.items():
        out.append(f"| gemm_factors[{k}] | {v:.3f} | × calibrated GEMM time |")
    for k, v in p.cast_factors.items():
        out.append(f"| cast_factors[{k}] | {v:.3f} | × calibrated cast time |")
    out.append(f"| in_step_factor | {p.in_step_factor:.3f} | event step / kernel sum, median of the GPU-bound steps |")
    for k, v in p.step_factors.items():
        out.append(f"| step_factors[{k}] | {v:.3f} | sustained / from-idle kernel time |")
    if p.boost_window_s is not None:
        out.append(f"| boost_window_s | {p.boost_window_s * 1e3:.1f} ms | of a step from idle at its first clocks |")
    for label, rp in (rep.get("repeats") or {}).items():
        out.append(repeat_table(label, rp))
    out.append(host_table(rep.get("host") or {}))
    out.append(processes_table(rep.get("processes") or {}))
    out.append(graphs_table(rep.get("graphs") or {}, rep.get("graphs_eager") or {}, "h200_layer_graphs*"))
    out.append(graphs_table(rep.get("d3072_graphs") or {}, rep.get("d3072_eager") or {}, "h200_layer_d3072*"))
    out.append(fresh_table(rep.get("fresh") or {}))
    for key in FRESH_EXTRA:
        out.append(fresh_extra_table(key, rep.get(key) or {}))
    out.append(mix_order_table(rep.get("mix_order") or {}))
    out.append(filter_table(rep.get("filter") or {}))
    out.append(gemms_in_steps_table(rep.get("gemms_in_steps") or {}))
    return "\n".join(out)


def host_table(host: dict[str, Any]) -> str:
    """Host time per step against GPU time (empty without the host-time session)."""
    if not host:
        return ""
    out = [
        "",
        "**Host time per step** (host-time session: the launches of 2 steps timed on the CPU while a GPU spin keeps "
        "the device busy, median of 5 runs; `host_step_s` of `h200_layer_host_2026-12-01.json`) against the GPU's "
        "kernel time — a step whose host time exceeds its GPU time waits for its launches:\n",
        "| case | configs | bf16: host / kernels ms | float8: host ms (min, median, max) "
        "| float8: kernels ms (min, max) | host per converted Linear | run-to-run spread |",
        "|---|---|---|---|---|---|---|",
    ]
    for case, v in host.items():
        f8, k8 = v["f8_host"], v["f8_kernel"]
        out.append(
            _row(
                case,
                v["n"],
                f"{_ms(v['bf16_host'])} / {_ms(v['bf16_kernel'])}",
                f"{_ms(f8[0])}, {_ms(f8[1])}, {_ms(f8[2])}",
                f"{_ms(k8[0])}, {_ms(k8[1])}",
                f"{v['per_linear'] * 1e3:.2f} ms",
                f"{v['spread']:.0f} %",
            )
        )
    return "\n".join(out)


def repeat_table(label: str, rp: dict[str, Any]) -> str:
    """One repeat session as markdown (empty when its file is absent)."""
    if not rp:
        return ""
    out = [
        "",
        f"**Measured again: {label}** (`{REPEAT_FILES[label].name}`) — against the fitted sweep: how far each "
        "config's step time moved (MdAPE / max, %), the p20–p80 spread of the steps within one run (median over "
        "configs, fitted sweep / this session), and the all-Linears savings (points of the bf16 step) in the "
        "fitted sweep / this session:\n",
        "| case | configs | events moved | kernels moved | spread within a run | savings, events | savings, kernels |",
        "|---|---|---|---|---|---|---|",
    ]

    def sav(savings: dict[str, Any], w: str) -> str:
        return "; ".join(f"{rec} {d[w][0]:+.1f} / {d[w][1]:+.1f}" for rec, d in savings.items())

    for case, v in rp["cases"].items():
        out.append(
            _row(
                case,
                v["n"],
                f"{v['event_mdape']:.1f} / {v['event_max']:.0f}",
                f"{v['kernel_mdape']:.1f} / {v['kernel_max']:.0f}",
                f"{v['spread_first']:.1f} / {v['spread_again']:.1f} %",
                sav(v["savings"], "event"),
                sav(v["savings"], "kernel"),
            )
        )
    if rp["choices"]:
        ch = rp["choices"]
        slower = sum(c["vs_bf16"] <= 0 for c in ch)
        within = sum(c["regret"] <= 2 for c in ch)
        out += [
            "",
            f"The filter's held-out choice re-scored on this session (events): never slower than bf16 in "
            f"{slower} of {len(ch)}, within 2 % of the best measured subset in {within} of {len(ch)}: "
            + "; ".join(
                f"{c['case']} {c['recipe']}: {_groups_label(c['chosen'])} {c['vs_bf16']:+.1f} % vs bf16, "
                f"{c['regret']:+.1f} % vs the best ({_groups_label(c['best'])})"
                for c in rp["choices"]
            )
            + ".",
        ]
    return "\n".join(out)


def criteria(rep: dict[str, Any]) -> dict[str, Any]:
    """The done criteria of the step issue, on events and on kernel time."""
    ch = rep["choices"]
    fl = [r for r in rep["rows"] if r["recipe"] != "bf16"]
    return dict(
        never_slower=sum(c["vs_bf16"] <= 0 for c in ch),
        never_slower_kernel=sum(c["vs_bf16_kernel"] <= 0 for c in ch),
        within2=sum(c["regret"] <= 2 for c in ch),
        within2_kernel=sum(c["regret_kernel"] <= 2 for c in ch),
        n_choices=len(ch),
        save5=sum(abs(r["save_err"]) <= 5 for r in fl),
        save5_kernel=sum(abs(r["save_err_kernel"]) <= 5 for r in fl),
        n_rows=len(fl),
    )


def summary(rep: dict[str, Any]) -> str:
    """The short section of docs/validation.md."""
    c = criteria(rep)
    rot = rep["rotation"]
    lines = [
        "## Decoder-layer steps",
        "",
        "The step model (`perfmodel.step`, [step.md](step.md)) scored on the H200 layer sweep, each layer size "
        "predicted by parameters fitted on the others (`python benchmarks/validate.py step`):",
        "",
        "| held out | configs | step time MdAPE | float8 speedup MdAPE | max savings error (points of the bf16 step) |",
        "|---|---|---|---|---|",
    ]
    for dim, v in rot.items():
        lines.append(
            _row(
                f"dim {dim}", v["n"], f"{v['step_mdape']:.1f} %", f"{v['speedup_mdape']:.1f} %", _pm(v["max_save_err"])
            )
        )
    lines += [
        "",
        f"Savings within 5 points of the bf16 step: {c['save5']}/{c['n_rows']} layer × recipe rows by CUDA-event step "
        f"time, {c['save5_kernel']}/{c['n_rows']} by kernel time. The filter's choice is never slower than bf16 in "
        f"{c['never_slower']}/{c['n_choices']} cases ({c['never_slower_kernel']}/{c['n_choices']} by kernel time) "
        "and within 2 % "
        f"of the best measured subset in {c['within2']}/{c['n_choices']} ({c['within2_kernel']}/{c['n_choices']}); "
        "what misses and why: [step.md](step.md#against-the-criteria).",
    ]
    return "\n".join(lines)


def _replace(text: str, begin: str, end: str, body: str) -> str:
    """``text`` with what lies between the markers ``begin`` and ``end`` replaced by ``body``."""
    if begin not in text or end not in text:
        raise SystemExit(f"markers {begin} / {end} not found")
    i = text.index(begin) + len(begin)
    j = text.index(end, i)
    return text[:i] + "\n" + body + "\n" + text[j:]


def generated(text: str, begin: str, end: str) -> str:
    """What lies between the markers (without the newlines next to them)."""
    i = text.index(begin) + len(begin)
    return text[i : text.index(end, i)].strip("\n")


def run(write: bool = False) -> list[writer.Block]:
    """The step model's blocks: docs/step.md's tables (``step-tables``) and docs/validation.md's short section
    (``step``, the step model's summary)."""
    rep = evaluate()
    print(json.dumps(criteria(rep)))
    return [
        writer.Block(doc=STEP_DOC, name="step-tables", body=tables(rep)),
        writer.Block(doc=VALIDATION_DOC, name="step", body=summary(rep)),
    ]


__all__ = ["criteria", "evaluate", "statistics", "summary", "tables", "torchao_auto_convert"]
