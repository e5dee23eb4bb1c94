#!/usr/bin/env bash
# The dense check of a Hopper GPU that is not the H200 (written for the H100 SXM): the H200 calibration's own
# sweeps, run unchanged on the lent card, to score the transferred model against measurements we took. Nothing
# measured here is fitted: the model that prices these records is the one committed before the run
# (the commit in the log's header), so the scores are pre-registered. What is scored, decided before the run
# (benchmarks/validate_dense_transfer.py):
#   * copies and casts (memory): the measured device-to-device copy bandwidth against the transferred one;
#   * GEMMs (the 969 shapes x 3 formats of the H200's gemm sweep, L2 flushed, event time): MdAPE / p90 by format,
#     apart for the shapes the H200 calibration was fitted on and those it held out by shape;
#   * float8 Linear fwd+bwd, static shapes (the H200's 6 (K, N) x M {1024, 4096, 16384} x 4 recipes): speedup
#     MdAPE / p90 by recipe and the decisions right where the measured speedup is more than 5 % from 1;
#   * launch floors (torch and Triton), reported beside the model's.
#
#   DEADLINE_S=540 bash benchmarks/gpu_dense_check.sh      # with $OUT set; carry [".whl"] (torchao 0.17.0)
#
# Output: $OUT/dense_check.tar.gz (data/{launch,memory,gemm,linear_static_sweep}.json, the log, the nvidia-smi
# clock log), re-packed after every phase. Set-up shared with the MoE scripts: _gpu_env.sh.
set -u -o pipefail
OUT=${OUT:-out}
WORK=${WORK:-/tmp/dense_check_work}
DEADLINE_S=${DEADLINE_S:-540}
TARBALL=dense_check.tar.gz
source "$(dirname "$0")/_gpu_env.sh"  # PYTHON, log, left, min, finish, run_phase; wheel, header, clock log
pack() {  # every file under $WORK, data/ included
  tar -C "$WORK" -czf "$OUT/$TARBALL.tmp" --exclude='*.tmp' . && mv "$OUT/$TARBALL.tmp" "$OUT/$TARBALL"
}
gpu_env_setup
log "model commit ${MODEL_COMMIT:-unknown} (the checkout the caller measured with; the device copy's git metadata can be stale)"
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-/tmp/inductor_cache}
DATA="$WORK/data"
mkdir -p "$DATA"
bench() { local name=$1 budget=$2; shift 2; run_phase "$name" "$budget" $PYTHON -m perfmodel.bench "$@" --out "$DATA"; }
bench launch 30 launch
bench memory 40 memory
bench gemm "$(min 200 $(( $(left) - 200 )))" gemm --gemm-budget-s "$(min 170 $(( $(left) - 230 )))"
# the static-shape Linear sweep of the H200's calibration (its README: h200_linear_static_2026-11-30.json)
budget=$(( $(left) - 25 ))
bench linear "$budget" linear --linear-dynamic static --suffix _static_sweep \
  --linear-shapes 4096x4096,8192x28672,4096x1024,14336x4096,4096x14336,8192x8192 --linear-m 1024,4096,16384 \
  --linear-budget-s "$(( budget - 15 ))"
nvidia-smi --query-gpu=name,uuid,clocks.sm,temperature.gpu,power.draw --format=csv 2>&1 | tee -a "$LOG"
