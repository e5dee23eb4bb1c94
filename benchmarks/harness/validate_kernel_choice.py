"""cuBLAS's kernel choice (:func:`perfmodel.gemm_kernel`, :func:`perfmodel.kernel_class`) against the kernels it ran
in the H200 layout sweeps of 2026-12-01 and 02 (the profiler's kernel names, ``benchmarks/data/h200_2026-12-01``).

Two answers, scored apart:

* **the kernel class** (Hopper, CUTLASS sm80 align2, CUTLASS sm75 align1, gemv): a rule read off these same
  sweeps, so its agreement here describes the data it came from — it is not a held-out score;
* **split-K**: the H200 tile model's formula (its fastest candidate splits K), fitted on the seed-0 sessions only;
  scored on every other session, against the baseline "never split".

    python benchmarks/validate.py kernel-choice           # print the tables and the constants
    python benchmarks/validate.py kernel-choice --write   # also rewrite docs/validation/kernel-choice.md
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]  # the repository (this file is benchmarks/harness/*.py)
sys.path.insert(0, str(ROOT))

import perfmodel as pm  # noqa: E402
from benchmarks.harness import tables  # noqa: E402
from perfmodel.models.kernel_choice import alternative, kernel_class, kernel_class_of  # noqa: E402
from perfmodel.models.registry import tile_model  # noqa: E402

BEGIN, END = "<!-- kernels:begin -->", "<!-- kernels:end -->"
#: the sessions the tile model's formula was fitted on (not a score of its split-K answer)
FORMULA_FIT = ("", "_repeat")
#: the sessions the kernel-class rule was read off (977ccf3): a session measured after it, added to
#: ``validate_tiles.SESSIONS``, is the rule's held-out score (the row "held out")
RULE_SEEN = (
    "", "_repeat", "_fresh", "_fresh_repeat", *(f"_fresh{s}" for s in range(2027, 2049)), "_fresh2032_repeat",
    "_fresh2036_repeat", "_fresh2037_repeat", "_fit3001", "_fit3002",
)  # fmt: skip
CLASSES = ("hopper", "cutlass_sm80", "cutlass_sm75", "gemv", "gemmSN", "other")


def all_sessions() -> tuple[str, ...]:
    """Every layout sweep with kernel names: those ``validate_tiles`` scores."""
    from benchmarks.harness import validate_tiles as vt

    return tuple(vt.SESSIONS)


def measured_class(r: dict[str, Any]) -> str:
    """The class of the kernel cuBLAS ran for a profiled record: :func:`~perfmodel.models.kernel_choice.kernel_class_of`
    of its
    main kernel's name (``"other"`` for none of the classes)."""
    return kernel_class_of(r.get("main_kernel") or "") or "other"


def evaluate(sessions: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Per format and layout and over all: GEMMs, rule right, alternative right, the confusion of classes, and
    the split-K answer's score on the sessions the formula was not fitted on."""
    from benchmarks.harness import validate_tiles as vt

    spec, tm = pm.get_gpu("H200"), tile_model()
    rows: list[dict[str, Any]] = []  # the shared records themselves (not copies); their sessions alongside
    where: list[str] = []
    for sfx in sessions if sessions is not None else all_sessions():
        for r in vt.records("kernel", sfx) or ():
            if r.get("main_kernel"):
                rows.append(r)
                where.append(sfx)
    by: dict[tuple[str, str | None, str], list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        by[r["dtype"], r.get("scaling"), r["layout"]].append(i)
    pred = np.empty(len(rows), dtype=object)
    split = np.zeros(len(rows), dtype=bool)
    for (dtype, scaling, layout), idx in by.items():
        M, K, N = (np.array([rows[i][d] for i in idx], dtype=np.float64) for d in "MKN")
        pred[idx] = kernel_class(M, K, N, dtype, layout=layout)
        fmt = pm.get_format("bf16" if dtype == "bf16" else "fp8_e4m3")
        split[idx] = tm.split_k(M, K, N, fmt=fmt, scaling=scaling, gpu=spec, layout=layout)
    classes: dict[str, str] = {}  # ~400k records run a few hundred distinct kernels: each name's class read once
    got = np.array([classes.get(r["main_kernel"]) or classes.setdefault(r["main_kernel"], measured_class(r))
                    for r in rows], dtype=object)  # fmt: skip
    alt = np.array([alternative(p, r["M"], r["layout"]) == "gemmSN" for p, r in zip(pred, rows, strict=True)])
    alt &= got == "gemmSN"
    kinds = np.array([vt.kind_of(r) for r in rows])
    held = np.array([sfx not in FORMULA_FIT for sfx in where]) & (pred != "gemv")
    measured_split = np.array([bool(r.get("split_k")) for r in rows])
    out: dict[str, Any] = {"sessions": len(set(where)), "kinds": {}}
    bf16 = np.array([r["dtype"] == "bf16" for r in rows])
    later = bf16 & np.array([sfx not in RULE_SEEN for sfx in where])
    extra = ["bf16, held out"] if later.any() else []
    for k in [*sorted(set(kinds)), "bf16", *extra, "all"]:
        sel = {"all": np.ones(len(rows), bool), "bf16": bf16, "bf16, held out": later}.get(k, kinds == k)
        s = sel & held
        out["kinds"][k] = {
            "gemms": int(sel.sum()),
            "right": int((sel & (pred == got)).sum()),
            "alternative": int((sel & alt).sum()),
            "confusion": Counter(zip(pred[sel], got[sel], strict=True)),
            "split_gemms": int(s.sum()),
            "split_right": int((s & (split == measured_split)).sum()),
            "split_never": int((s & ~measured_split).sum()),
            "split_measured": int((s & measured_split).sum()),
        }
    return out


def constants(rep: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    """:data:`~perfmodel.models.kernel_choice.KERNEL_RULE_AGREEMENT` and ``SPLIT_K_AGREEMENT`` as this data gives them
    (bf16:
    every fp8 GEMM runs a Hopper kernel, and rowwise fp8 never splits K)."""
    a = rep["kinds"]["bf16"]
    return _rule_counts(a), {"gemms": a["split_gemms"], "right": a["split_right"], "never": a["split_never"]}


def _rule_counts(row: dict[str, Any]) -> dict[str, int]:
    """The kernel-class rule's counts of one row of :func:`evaluate`: GEMMs, right, its alternative."""
    return {"gemms": row["gemms"], "right": row["right"], "alternative": row["alternative"]}


def held_out(rep: dict[str, Any]) -> dict[str, int] | None:
    """:data:`perfmodel.models.kernel_choice.KERNEL_RULE_HELD_OUT` as this data gives it: the bf16 GEMMs of the sessions
    measured after the rule was read (not in :data:`RULE_SEEN`); ``None`` without any."""
    a = rep["kinds"].get("bf16, held out")
    return None if a is None else _rule_counts(a)


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f}" if b else "–"


def markdown(rep: dict[str, Any]) -> str:
    lines = [
        f"**cuBLAS's kernel class and split-K, predicted and run** ({rep['sessions']} H200 layout sweeps of "
        "2026-12-01 and 02; `python benchmarks/validate.py kernel-choice`). `class`: the rule of "
        "`perfmodel.gemm_kernel`, read off the sweeps up to seed 3002 (on them a description of its data, not a "
        "held-out score; the row `bf16, held out` is the sweeps measured after it), % of GEMMs that ran the class it "
        "gives, and of those that ran its alternative (gemmSN, for few-row misaligned `rr`/`rc` GEMMs); `split-K`: "
        "the tile model's formula, on the sessions it was not fitted on (all but seed 0's two), % right, against "
        "never splitting:",
        "",
        "| GEMM | GEMMs | class right | alternative | misses | split-K GEMMs | split-K measured | split-K right "
        "| never split |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for k, v in rep["kinds"].items():
        miss = Counter()
        for (p, g), n in v["confusion"].items():
            if p != g and not (g == "gemmSN" and p.startswith("cutlass")):
                miss[f"{p} → {g}"] += n
        misses = ", ".join(f"{name} ({n})" for name, n in miss.most_common(3)) or "none"
        lines.append(
            f"| {k} | {v['gemms']} | {_pct(v['right'], v['gemms'])} | {_pct(v['alternative'], v['gemms'])} | "
            f"{misses} | {v['split_gemms']} | {_pct(v['split_measured'], v['split_gemms'])} | "
            f"{_pct(v['split_right'], v['split_gemms'])} | {_pct(v['split_never'], v['split_gemms'])} |"
        )
    return "\n".join(lines) + "\n"


def summary(rep: dict[str, Any]) -> str:
    """The kernel choice's rows of docs/validation.md's summary table (generated from :func:`evaluate`)."""
    rule, split = constants(rep)
    held = held_out(rep)
    rows = [
        [
            "kernel class (H200 bf16)",
            f"{rule['gemms']} GEMMs of {rep['sessions']} layout sweeps",
            "**in-sample** for the sweeps the rule was read off (the next row: the sweeps after it)",
            f"right {tables.pct(100 * rule['right'] / rule['gemms'])}",
            "—",
        ],
        [
            "kernel class, later sessions",
            f"{held['gemms']} GEMMs" if held else "—",
            "by session (measured after the rule was read; their shapes recur)",
            f"right {tables.pct(100 * held['right'] / held['gemms'])}" if held and held["gemms"] else "—",
            "—",
        ],
        [
            "split-K (tile formula)",
            f"{split['gemms']} bf16 GEMMs",
            "by session (formula fitted on seed 0)",
            f"right {tables.pct(100 * split['right'] / split['gemms'])}, never-split baseline "
            f"{tables.pct(100 * split['never'] / split['gemms'])}",
            "—",
        ],
    ]
    return tables.table(tables.SUMMARY_HEAD, rows)


#: the appendix this module writes (its generated block ``kernels``) and the summary doc
APPENDIX = ROOT / "docs" / "validation" / "kernel-choice.md"
SUMMARY_DOC = ROOT / "docs" / "validation.md"


def run(write: bool = False) -> list[tables.Block]:
    """The kernel choice's blocks: its appendix (``kernels``) and its rows of the summary (``summary-kernel-choice``);
    also prints the constants of :mod:`perfmodel.models.kernel_choice` this data gives."""
    rep = evaluate()
    rule, split = constants(rep)
    print(f"KERNEL_RULE_AGREEMENT = {rule}\nKERNEL_RULE_HELD_OUT = {held_out(rep)}\nSPLIT_K_AGREEMENT = {split}")
    return [
        tables.Block(doc=APPENDIX, name="kernels", body=markdown(rep)),
        tables.Block(doc=SUMMARY_DOC, name="summary-kernel-choice", body=summary(rep)),
    ]
