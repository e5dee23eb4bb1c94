"""The preset table of docs/moe.md ("Decisions"): predicted rowwise speedups of the MoE presets on the H200 (balanced
routing; eager as torchao 0.17 runs, and ``compiled=True``) at 8192 and 32768 tokens, and the break-even tokens per
step (per expert) up to ``max_tokens`` 2^18, from :mod:`perfmodel.moe` as shipped.

    python benchmarks/moe_preset_table.py                   # prints the markdown table
    python benchmarks/moe_preset_table.py --docs docs/moe.md  # rewrites it (and the worked example) there

Deterministic; a prediction, not a measurement (the measured blocks are in "Block validation").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import perfmodel as pm  # noqa: E402
from benchmarks.harness.tables import Block, write_blocks  # noqa: E402

PRESETS = ("mixtral-8x7b", "deepseek-v3", "deepseek-v3-16b", "qwen3-30b-a3b", "llama4-scout", "llama4-maverick",
           "gpt-oss-120b", "mixtral-8x22b", "qwen3-235b-a22b", "qwen3-coder-480b-a35b", "dbrx", "olmoe-1b-7b",
           "gpt-oss-20b", "glm-4.5-air")  # fmt: skip
MAX_TOKENS = 1 << 18
#: the generated block of docs/moe.md (between ``<!-- moe-presets:begin -->`` and ``<!-- moe-presets:end -->``)
BLOCK = "moe-presets"
#: the worked example's block of docs/moe.md ("The routed-expert block"): one preset's block by kind
EXAMPLE_BLOCK = "moe-worked-example"
EXAMPLE = {"preset": "deepseek-v3-16b", "tokens": 8192}


def _be(preset: str, compiled: bool) -> tuple[str, bool]:
    b = pm.moe.break_even_tokens(preset, gpu="H200", recipe="rowwise", max_tokens=MAX_TOKENS, compiled=compiled)
    if b.tokens is None:
        return "none", b.monotone
    return f"{b.tokens} ({b.tokens_per_expert:.0f} per expert)", b.monotone


def table() -> str:
    lines = [
        "| preset | T = 8192 eager | T = 8192 compiled | T = 32768 eager | T = 32768 compiled | break-even eager | "
        "break-even compiled |",
        "| --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for p in PRESETS:
        s = [pm.moe.speedup(p, tokens=t, gpu="H200", recipe="rowwise", compiled=c) for t in (8192, 32768)
             for c in (False, True)]  # fmt: skip
        (be, _), (bc, _) = _be(p, False), _be(p, True)
        lines.append(f"| {p} | {s[0]:.3f} | {s[1]:.3f} | {s[2]:.3f} | {s[3]:.3f} | {be} | {bc} |")
    return "\n".join(lines)


def worked_example() -> str:
    """Markdown: :data:`EXAMPLE`'s block on the H200 (balanced, event timing), ms fwd+bwd by kind, bf16, eager
    rowwise and ``compiled=True`` rowwise, then what the fp8 GEMMs save and the casts cost."""
    kinds = ("router", "permute", "gemm", "quant", "act", "unpermute", "shared")
    head = "| recipe | " + " | ".join(kinds) + " | host | sustained run | total |"
    lines = [head, "| --- |" + " ---: |" * (len(kinds) + 3)]
    runs = {}
    for label, kw in (("bf16", {"recipe": "bf16"}), ("rowwise (eager)", {"recipe": "rowwise"}),
                      ("rowwise (`compiled=True`, an estimate)", {"recipe": "rowwise", "compiled": True})):  # fmt: skip
        b = pm.moe.expert_block_time(EXAMPLE["preset"], tokens=EXAMPLE["tokens"], gpu="H200", **kw)
        runs[label] = b
        k = b.by_kind()
        cells = [f"{k[n] * 1e3:.3f}" if k[n] else "0" for n in kinds]
        cells += [f"{(b.host_fwd_s + b.host_bwd_s) * 1e3:.3f}", f"{(b.sustained_fwd_s + b.sustained_bwd_s) * 1e3:+.3f}",
                  f"{b.total_s * 1e3:.3f}"]  # fmt: skip
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    b, f = runs["bf16"], runs["rowwise (eager)"]
    saved = b.by_kind()["gemm"] - f.by_kind()["gemm"]
    dual = sum(k.seconds for k in f.kernels if "colwise_dual" in k.name)
    lines += ["", f"The fp8 GEMMs save {saved * 1e3:.2f} ms (at the in-block fp8 rate, `FP8_GEMM_IN_BLOCK_SPEEDUP`); "
              f"the quantization kernels cost {f.by_kind()['quant'] * 1e3:.1f} ms, {dual * 1e3:.1f} of them torchao's "
              "per-group column-wise dual cast of the three wgrads."]  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=Path, help="rewrite the table between its markers in this file")
    args = ap.parse_args(argv)
    tab = table()
    if not args.docs:
        print(tab + "\n\n" + worked_example())
        return 0
    write_blocks([Block(doc=args.docs, name=BLOCK, body=tab),
                  Block(doc=args.docs, name=EXAMPLE_BLOCK, body=worked_example())])  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
