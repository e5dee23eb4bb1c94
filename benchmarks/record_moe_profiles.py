"""Record real Proton profiles in the triton_kernels MoE bench layout, for the roofline CLI's tests.

Writes ``{out}/{log}/llama4-maverick/{x}-{w}-TP1-EP1/profiles/batch-{b}.hatchet`` for two "logs"
(the fixture Triton matmul with two tile configurations, fp8 x fp8) and a ``log_metadata.json``
naming them, so that ``perfmodel roofline -m log_metadata.json -d fp8fp8 --batch-ranges ...``
reads real H200 profiles. Each profile holds the expert-FFN GEMMs of one batch: ``tokens per expert
= batch · n_expts_act / n_expts_tot`` rows of ``[dim1] @ [dim1, dim2]``, launched once per active
expert with Proton ``launch_metadata`` (flops8, bytes) and a kernel name containing ``matmul``.

    python benchmarks/record_moe_profiles.py --out DIR     (on a GPU; torch + triton)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfmodel.bench.fixtures import triton_matmul  # noqa: E402
from perfmodel.measured.moe_bench import profile_path  # noqa: E402

BATCHES = range(256, 4097, 256)
DIM1, DIM2, N_TOT, N_ACT = 5120, 8192, 128, 4
LOGS = {"triton 128x128x128": (128, 128, 128), "triton 64x128x128": (64, 128, 128)}


def main() -> int:
    import torch
    import triton.profiler as proton

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    w = torch.randn(DIM2, DIM1, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn).t()  # K-major
    meta = []
    for log, tiles in LOGS.items():
        log_dir = args.out / log.replace(" ", "_")
        meta.append([log, str(log_dir.relative_to(args.out)), log == next(iter(LOGS))])
        for b in BATCHES:
            rows = max(1, b * N_ACT // N_TOT)
            x = torch.randn(rows, DIM1, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
            triton_matmul(x, w, block=tiles)  # compile + warm up outside the session
            path = profile_path(log_dir, "llama4-maverick", "fp8", "fp8", b, tp=1, ep=1)
            path.parent.mkdir(parents=True, exist_ok=True)
            proton.start(str(path.with_suffix("")), hook="triton")
            for _ in range(N_ACT):
                triton_matmul(x, w, block=tiles)
            torch.cuda.synchronize()
            proton.finalize()
        print(f"{log}: {len(BATCHES)} profiles under {log_dir}", flush=True)
    (args.out / "log_metadata.json").write_text(json.dumps(meta, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
