#!/usr/bin/env bash
# The MoE block's scatter-add and score multiply alone, either side of torch's 32-bit index limit, on one GPU
# (perfmodel.bench.index_add; docs/validation/moe.md, "The scatter-add's 64-bit path").
#
#   DEADLINE_S=150 bash benchmarks/gpu_index_add.sh      (with $OUT set; no wheel needed)
#
# Output: $OUT/index_add.tar.gz (index_add.json, the log with versions, the nvidia-smi clock log).
set -u -o pipefail
OUT=${OUT:-out}
WORK=${WORK:-/tmp/index_add_work}
DEADLINE_S=${DEADLINE_S:-150}
TARBALL=index_add.tar.gz
source "$(dirname "$0")/_gpu_env.sh"  # PYTHON, log, left, min, finish, run_phase; header, clock log
versions_header
start_clock_log
trap finish EXIT
run_phase index_add "$(min 90 $(( $(left) - 50 )))" \
  $PYTHON -m perfmodel.bench.index_add --out "$WORK" --budget-s "$(min 90 $(( $(left) - 50 )))"
