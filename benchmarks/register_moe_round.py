"""Pre-register a round of MoE block measurements: the model's predictions for every item, written before the items
are measured and committed with the model that made them (docs/validation/moe.md, "Block validation").

    python benchmarks/register_moe_round.py round8            # print the predictions
    python benchmarks/register_moe_round.py round8 --write    # write benchmarks/registered/<round>.json

Needs torch (CPU is enough) for the skewed routings' counts: they are the bench's own (``routing_indices`` with its
seed), so the registered counts are the ones the device run will use. A round is a list of bench invocations
(:data:`ROUNDS`); the device call runs each one as printed in the file's ``commands``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from perfmodel.bench.moe_block.config import MODEL_BY_NAME, SEED  # noqa: E402
from perfmodel.bench.moe_block.plan import fits_memory, plan_items  # noqa: E402


class Round(NamedTuple):
    """One round: the folder its data will land in (``<gpu>_<date><suffix>`` under benchmarks/data), the minimum
    timed runs per do_bench, the bench invocations ``[(models, tokens, routings)]``, and the GPU it is priced for and
    measured on (a perfmodel.specs.get_gpu name). Its registration file carries all four; the validator reads them
    from there."""

    folder: str
    min_reps: int
    groups: list[tuple[tuple[str, ...], tuple[int, ...], tuple[str, ...]]]
    gpu: str = "H200"


#: round name -> :class:`Round`
ROUNDS: dict[str, Round] = {
    # registered 2026-12-05 with the in-block fp8 GEMM rate and the held sustained factor (both post-selection): new
    # step lengths of held-out families near break-even (49152, 98304, 24576 tokens: never measured), and two families
    # never measured beyond 32768 tokens
    "round8": Round(
        "h200_2026-12-05r8",
        3,
        [
            (("mixtral_8x22b", "dbrx", "hunyuan_large"), (49152,), ("balanced", "skewed")),
            (("grok1",), (24576,), ("balanced", "skewed")),
            (("minimax_m1", "phi35_moe"), (131072,), ("balanced", "skewed")),
            (("mixtral_8x22b", "skywork_moe"), (98304,), ("balanced",)),
        ],
    ),
    # the contested configuration a third time (measured twice, seen while the model was chosen: not a held-out
    # score), with five timed runs per do_bench, for the run-to-run spread
    "repeat2": Round("h200_2026-12-05r8-repeat", 5, [(("mixtral_8x22b",), (32768,), ("balanced", "skewed"))]),
}
# registered 2026-12-06 with the model of round8 / repeat2 unchanged (62809e3), for the H100 the device lends when no
# H200 comes: the same items priced on the H100 (the block model's transfer: "not validated" there), so an H100 run
# scores the transfer instead of being set against H200 predictions
ROUNDS["round8_h100"] = ROUNDS["round8"]._replace(folder="h100_2026-12-06r8", gpu="H100")
ROUNDS["repeat2_h100"] = ROUNDS["repeat2"]._replace(folder="h100_2026-12-06r8-repeat", gpu="H100")
# registered 2026-12-06 with the H200-board transfer (the board terms on the H200's twins and the SM-bound eager rule,
# both chosen after round8_h100 was seen): families held out by shape that no H100 ran, at step lengths no H100 block
# had (8192 and 16384 tokens); small-expert families first (the quantization kernels' share is largest there)
ROUNDS["round9_h100"] = Round(
    "h100_2026-12-06r9",
    3,
    [
        (("olmoe_1b_7b", "qwen3_235b_a22b", "gpt_oss_120b", "deepseek_v3_16b"), (16384,), ("balanced", "skewed")),
        (("mixtral_8x7b", "qwen2_57b_a14b", "glm45_air"), (16384,), ("balanced",)),
        (("olmoe_1b_7b", "qwen3_235b_a22b", "gpt_oss_120b", "deepseek_v3_16b"), (8192,), ("balanced",)),
    ],
    gpu="H100",
)
# registered 2026-12-06 with the grouped GEMMs' SM-bound memory rule (chosen on round 8's isolated H100 GEMMs): five
# families held out by shape that no H100 ran, at 16384 tokens, balanced and skewed (arctic left out: its fp8 block
# does not fit the bench's memory plan); its diagnostic profiles two of round 9's small blocks, whose bf16 side the
# model prices 5 % slow on the H100 (host time or kernels: unmeasured)
ROUNDS["round10_h100"] = Round(
    "h100_2026-12-06r10",
    3,
    [
        (
            ("granite_3b_a800m", "ernie45_21b_a3b", "minimax_m2", "glm45", "qwen3_coder_480b"),
            (16384,),
            ("balanced", "skewed"),
        ),
    ],
    gpu="H100",
)
# registered 2026-12-07 with the model of round 10, unchanged (at b7c8e17): five families whose (dim, inter) no earlier
# family had (added to the bench for this round; no GEMM shape of a fit family's or round 8's), for the H100 SXM.
# The GEMM-dense blocks first (grok2 and ernie45_300b_a47b at 32768 tokens, grok2 at 65536: predicted near
# break-even, where the twins' bf16 over-price matters most), then small blocks at 16384 and 8192. Its diagnostic
# profiles four of the timed blocks on the same board as their walls, which rounds 8-10 never had together for the
# small blocks (round 10's profiles crossed boards)
ROUNDS["round11_h100"] = Round(
    "h100_2026-12-07r11",
    3,
    [
        (("grok2", "ernie45_300b_a47b"), (32768,), ("balanced", "skewed")),
        (("grok2",), (65536,), ("balanced", "skewed")),
        (("hunyuan_a13b", "yuan2_m32", "qwen3_next_80b_a3b"), (16384,), ("balanced", "skewed")),
        (("hunyuan_a13b", "ernie45_300b_a47b"), (8192,), ("balanced",)),
    ],
    gpu="H100",
)
# registered 2026-12-07 with the H100 SXM's block factor (TWIN_BLOCK_FACTOR, fitted on rounds 8-11) committed first:
# its test. Five families added to the bench for it, whose (dim, inter) and expert GEMM shapes no earlier row had
# (so none of rounds 8-11, where the factor was fitted, nor any fit family or synthetic fit shape). The long steps
# first (jamba15_large_ep2, GEMM-dense and predicted at break-even, 0.99-1.04x, and the 8-expert minicpm_moe_8x2b, at
# 32768 and 65536 tokens), then the many-expert families at 16384 and 8192 tokens. Its diagnostic profiles two of the
# 32768-token blocks on the same board as their walls (round 11's GEMM-dense profiles were lost)
ROUNDS["round12_h100"] = Round(
    "h100_2026-12-07r12",
    3,
    [
        (("jamba15_large_ep2", "minicpm_moe_8x2b"), (32768, 65536), ("balanced", "skewed")),
        (("step3", "step35_flash", "ling_flash_20"), (16384,), ("balanced", "skewed")),
        (("step35_flash", "ling_flash_20", "minicpm_moe_8x2b"), (8192,), ("balanced",)),
    ],
    gpu="H100",
)
# registered 2026-12-07 with the model of 522a39f (TWIN_LONG_STEP_ERROR: the twin's long steps stated with no
# direction): the H200's long-step fit-family items of h200_2026-12-04r7-fit, the same counts, on the H100 SXM. No H100
# round ran these four families, so they are held out from TWIN_BLOCK_FACTOR by family; their expert shapes are the
# H200's fit families' (in-shape for the H200's block constants, as on the H200), so this round is scored apart from
# the held-out-by-shape rounds. It tests whether the H200's long-step over-prediction (every one of these 16 on the
# H200, 1.00-1.18) is the board's: the same blocks, another board. deepseek_v3_ep8 at 131072 tokens (107 GB on the
# H200) is left out: over the H100's 80 GB
ROUNDS["round13_h100"] = Round(
    "h100_2026-12-07r13",
    3,
    [
        (
            ("deepseek_v3_ep8", "qwen3_30b_a3b", "llama4_scout", "llama4_maverick_ep16"),
            (65536,),
            ("balanced", "skewed"),
        ),
        (("qwen3_30b_a3b", "llama4_scout", "llama4_maverick_ep16"), (131072,), ("balanced", "skewed")),
    ],
    gpu="H100",
)
# registered 2026-12-07 with the model of 115c37e (answers as of 2734c8f): the long steps of round 12's families, held
# out by shape from every other bench row and by family from TWIN_BLOCK_FACTOR, at step lengths no H100 block of them
# had (65536 tokens for step3, step35_flash and ling_flash_20; 131072 for the last two and minicpm_moe_8x2b; 49152 for
# jamba15_large_ep2, predicted near break-even, between its round-12 steps of 32768 and 65536 tokens). It tests
# TWIN_LONG_STEP_ERROR's "no known direction" beyond 32768 tokens on the H100 SXM with blocks in none of its 17. Its
# diagnostic profiles step3 at 65536 tokens, the GEMM-densest block of the round
ROUNDS["round14_h100"] = Round(
    "h100_2026-12-07r14",
    3,
    [
        (("step3", "step35_flash", "ling_flash_20"), (65536,), ("balanced", "skewed")),
        (("step35_flash", "ling_flash_20", "minicpm_moe_8x2b"), (131072,), ("balanced", "skewed")),
        (("jamba15_large_ep2",), (49152,), ("balanced", "skewed")),
    ],
    gpu="H100",
)
#: a round on another GPU -> the registered round whose items (and the bench's counts) it repeats: its counts are
#: read from that file, so registering it needs no torch
TWIN_OF: dict[str, str] = {"round8_h100": "round8", "repeat2_h100": "repeat2"}
#: commands run after the scored ones of every round of a device call, into the round's folder, on what is left of the
#: deadline: diagnostics, not predictions (kernel profiles of the round's largest blocks; the isolated grouped GEMMs
#: of its shapes; its blocks' pieces alone)
DIAGNOSTICS: dict[str, list[str]] = {
    # added to round8.json by hand on 2026-12-08, before its H200 run (its items and predictions untouched): the
    # bf16 pieces of its largest skewed blocks alone, and the skewed block's kernel profile
    # (benchmarks/score_block_pieces.py)
    "round8": [
        "python3 -m perfmodel.bench.moe_block pieces --models mixtral_8x22b,dbrx --tokens 49152 "
        "--routings balanced,skewed",
        "python3 -m perfmodel.bench.moe_block kernels --models mixtral_8x22b --tokens 49152 --routings skewed,balanced",
    ],
    "round8_h100": [
        "python3 -m perfmodel.bench.moe_block kernels --models mixtral_8x22b,dbrx,hunyuan_large --tokens 49152 "
        "--routings balanced",
        "python3 -m perfmodel.bench.grouped_gemm time --families mixtral_8x22b,dbrx,hunyuan_large --no-neighbours",
    ],
    "round10_h100": [
        "python3 -m perfmodel.bench.moe_block kernels --models olmoe_1b_7b,deepseek_v3_16b --tokens 8192 "
        "--routings balanced",
    ],
    "round12_h100": [
        "python3 -m perfmodel.bench.moe_block kernels --models jamba15_large_ep2,minicpm_moe_8x2b --tokens 32768 "
        "--routings balanced",
    ],
    "round13_h100": [
        "python3 -m perfmodel.bench.moe_block kernels --models llama4_scout,qwen3_30b_a3b --tokens 65536 "
        "--routings balanced",
    ],
    "round14_h100": [
        "python3 -m perfmodel.bench.moe_block kernels --models step3 --tokens 65536 --routings balanced",
    ],
    "round11_h100": [
        "python3 -m perfmodel.bench.moe_block kernels --models grok2,ernie45_300b_a47b --tokens 32768 "
        "--routings balanced",
        "python3 -m perfmodel.bench.moe_block kernels --models hunyuan_a13b,qwen3_next_80b_a3b --tokens 16384 "
        "--routings balanced",
    ],
}
#: where registered rounds are written
REGISTERED = ROOT / "benchmarks" / "registered"


def _counts(torch: Any, model: str, tokens: int, routing: str) -> list[int]:
    from perfmodel.bench.moe_block.block import routing_indices

    cfg = MODEL_BY_NAME[model]
    idx = routing_indices(torch, cfg, tokens, routing, SEED)
    return torch.bincount(idx.reshape(-1), minlength=cfg.experts).tolist()


def predicted_fwd_bwd_s(model: str, tokens: int, recipe: str, counts: list[int], gpu: str = "H200") -> float:
    """The default model's fwd+bwd seconds (event timing, measured eager) of bench model ``model`` at ``tokens`` with
    per-expert ``counts`` on ``gpu``, ``recipe`` as the bench names it (bf16, fp8_rowwise): what the validator
    scores."""
    import validate_moe_block as v

    c = MODEL_BY_NAME[model]
    rec = {"model": c.name, "dim": c.dim, "inter": c.inter, "experts": c.experts, "top_k": c.top_k,
           "shared_inter": c.shared_inter, "score_func": c.score_func, "router_experts": c.router_experts,
           "tokens": tokens, "recipe": recipe, "counts": counts, "_gpu": gpu}  # fmt: skip
    return v.predict(rec).total_s


def register(name: str) -> dict[str, Any]:
    """The registration of round ``name``: commands, items with their counts, and the predicted fwd+bwd seconds and
    rowwise speedup of each (event timing, measured eager: the default model)."""
    twin = TWIN_OF.get(name)
    if twin is not None:
        twin_counts = {it["id"]: it["counts"] for it in json.loads((REGISTERED / f"{twin}.json").read_text())["items"]}
    else:
        try:
            import torch
        except ImportError as exc:  # pragma: no cover - depends on the machine
            raise SystemExit("register_moe_round needs torch (any build; pip install torch)") from exc

    folder, min_reps, groups, gpu = ROUNDS[name]
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    items, commands = [], []
    for models, tokens, routings in groups:
        commands.append(
            f"python3 -m perfmodel.bench.moe_block time --models {','.join(models)} --tokens "
            f"{','.join(map(str, tokens))} --routings {','.join(routings)} --min-reps {min_reps}"
        )
        for it in plan_items(models, tokens, routings):
            c = it.cfg
            counts = twin_counts[it.id] if twin is not None else _counts(torch, c.name, it.tokens, it.routing)
            row: dict[str, Any] = {"id": it.id, "model": c.name, "tokens": it.tokens, "routing": it.routing,
                                   "counts": counts, "predicted_fwd_bwd_s": {}}  # fmt: skip
            for recipe in ("bf16", "fp8_rowwise"):
                if fits_memory(it, recipe):
                    row["predicted_fwd_bwd_s"][recipe] = predicted_fwd_bwd_s(c.name, it.tokens, recipe, counts, gpu)
            p = row["predicted_fwd_bwd_s"]
            if len(p) == 2:
                row["predicted_speedup"] = p["bf16"] / p["fp8_rowwise"]
            items.append(row)
    return {"round": name, "folder": folder, "gpu": gpu, "min_reps": min_reps, "model_commit": commit,
            "commands": commands, "diagnostics": DIAGNOSTICS.get(name, []), "items": items}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("round", choices=sorted(ROUNDS))
    ap.add_argument("--write", action="store_true", help=f"write {REGISTERED.relative_to(ROOT)}/<round>.json")
    a = ap.parse_args(argv)
    reg = register(a.round)
    for row in reg["items"]:
        s = row.get("predicted_speedup")
        print(f"{row['id']:<36} {'—' if s is None else f'{s:.3f}x'}")
    if a.write:
        REGISTERED.mkdir(exist_ok=True)
        (REGISTERED / f"{a.round}.json").write_text(json.dumps(reg, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
