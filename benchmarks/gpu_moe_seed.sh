#!/usr/bin/env bash
# Triton's own MoE bench (python/triton_kernels/bench/bench_mlp.py) for the seed's case on one H200:
# llama4-maverick-like experts (dim1 5120, dim2 8192 = fused gate+up, 128 experts, 4 active, TP1 EP1), fp8 x fp8
# and bf16 x mx4 (Hopper has no native mx4), ~20 total-token batches 128..8192 from the seed's batch set.
# Proton profiles land in the seed's layout {root}/llama4-maverick/{x}-{w}-TP1-EP1/profiles/batch-{batch}.hatchet
# and are packed into $OUT/moe_seed_profiles.tar.gz. See perfmodel/bench/moe_block/ (phase seed, run_seed).
#
#   SEED_BUDGET_S=60 bash benchmarks/gpu_moe_seed.sh        # needs .tk/triton_kernels (carry=[".tk"])
#
# The triton_kernels source: upstream commit 004d7f5f58c2 (the 3.6.0 release point) from a mirror, with the bench
# fixes of upstream #8860 and #8877 applied (see the report in the commit that adds this file).
set -u -o pipefail
OUT=${OUT:-out}
WORK=${WORK:-/tmp/moe_seed_work}
SEED_BUDGET_S=${SEED_BUDGET_S:-60}
PYTHON=${PYTHON:-python3}
TK=${TK:-.tk/triton_kernels}
mkdir -p "$OUT" "$WORK"
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/triton_cache}
if [ ! -d "$TK/triton_kernels" ]; then
  echo "seed: $TK/triton_kernels missing (carry .tk); skipped"
  exit 0
fi
export PYTHONPATH="$TK:$TK/bench${PYTHONPATH:+:$PYTHONPATH}"
timeout -k 10 $(( SEED_BUDGET_S + 45 )) $PYTHON -m perfmodel.bench.moe_block seed --out "$WORK" \
  --budget-s "$SEED_BUDGET_S" --tk-dir "$TK" --seed-root "$WORK/seed_logs" 2>&1 | tee "$WORK/seed_log.txt"
rc=${PIPESTATUS[0]}
echo "seed phase exit $rc"
n=$(find "$WORK/seed_logs" -name '*.hatchet' 2>/dev/null | wc -l)
echo "seed: $n profiles"
tar -C "$WORK" -czf "$OUT/moe_seed_profiles.tar.gz" seed_logs moe_seed_status.json seed_log.txt 2>/dev/null
exit 0
