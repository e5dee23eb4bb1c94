#!/usr/bin/env bash
# The bf16 pieces of MoE blocks timed alone on one GPU (python -m perfmodel.bench.moe_block pieces): each grouped GEMM,
# the permutation, SwiGLU and the unpermute on the block's own shapes and routed group sizes, L2 flushed. Scored by
# benchmarks/score_block_pieces.py (docs/validation/moe.md, "Skewed large-expert bf16 blocks").
#
#   DEADLINE_S=150 bash benchmarks/gpu_block_pieces.sh      (with $OUT set; no wheel needed: bf16 only)
#   MODELS=mixtral_8x22b,dbrx TOKENS=49152 ROUTINGS=balanced,skewed   (the defaults: round 8's large-expert blocks)
#
# Output: $OUT/block_pieces.tar.gz (moe_block_pieces.json, the log with versions, the nvidia-smi clock log).
set -u -o pipefail
OUT=${OUT:-out}
WORK=${WORK:-/tmp/block_pieces_work}
DEADLINE_S=${DEADLINE_S:-150}
MODELS=${MODELS:-mixtral_8x22b,dbrx}
TOKENS=${TOKENS:-49152}
ROUTINGS=${ROUTINGS:-balanced,skewed}
TARBALL=block_pieces.tar.gz
source "$(dirname "$0")/_gpu_env.sh"  # PYTHON, log, left, min, finish, run_phase; header, clock log
versions_header
start_clock_log
trap finish EXIT
budget=$(( $(left) - 30 ))
run_phase pieces "$budget" $PYTHON -m perfmodel.bench.moe_block pieces --out "$WORK" --budget-s "$budget" \
  --models "$MODELS" --tokens "$TOKENS" --routings "$ROUTINGS"
