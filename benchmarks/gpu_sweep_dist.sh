#!/usr/bin/env bash
# The multi-GPU sweep (one host, 2 GPUs, NCCL): collectives, then FSDP2 / tensor-parallel training steps.
#
#   bash benchmarks/gpu_sweep_dist.sh                  # collectives (<= 90 s) + train (<= 450 s), ~9 min
#   bash benchmarks/gpu_sweep_dist.sh --quick          # smoke test: small sizes, three 1-layer configs (~3 min)
#   CONFIGS='fsdp_70b_*,tp_70b_*' SUFFIX=_70b bash benchmarks/gpu_sweep_dist.sh --train-only   # a later call
#   bash benchmarks/gpu_sweep_dist.sh --collectives-only
#
# Writes $OUT/data/collectives$SUFFIX.json and $OUT/data/train$SUFFIX.json (rank 0 flushes after every
# record, so a timeout still leaves valid JSON) and $OUT/log.txt; prints a summary table last.
# `python -m perfmodel.bench.dist plan --dry-run` lists the training configs in priority order with
# estimated seconds; one call measures the first ~5 of them, CONFIGS picks others for a later call.
# NVLink SHARP / multicast stays off (the three variables below; dist.py forces them too).
# Ends before DEADLINE_S (default 560) seconds.
set -u
OUT=${OUT:-out}
MODE=${1:-}
NPROC=${NPROC:-2}
DEADLINE_S=${DEADLINE_S:-560}
CONFIGS=${CONFIGS:-}
SUFFIX=${SUFFIX:-}
DEVICE=${DEVICE:-cuda}  # cpu: gloo, only to test this script without GPUs
mkdir -p "$OUT/data"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/tmp/inductor_cache TRITON_CACHE_DIR=/tmp/triton_cache
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
LOG="$OUT/log.txt"
{
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
  nvidia-smi topo -m
  python3 -c 'import torch, triton, torchao; print("torch", torch.__version__, "cuda", torch.version.cuda,
    "triton", triton.__version__, "torchao", torchao.__version__, "nccl", torch.cuda.nccl.version(),
    "gpus", torch.cuda.device_count())'
  env | grep -E '^(NCCL_|TORCH_SYMM_MEM|NVSHMEM_)' | sort
} 2>&1 | tee -a "$LOG"

QUICK=""
[ "$MODE" = "--quick" ] && QUICK="--quick"
# run LIMIT_S ARGS...: one torchrun, killed at LIMIT_S (its JSON is flushed record by record)
run() {
  local limit=$1
  shift
  echo "== $(date +%T) torchrun ($limit s max): $*" | tee -a "$LOG"
  timeout -k 10 "$limit" torchrun --standalone --nproc-per-node "$NPROC" -m perfmodel.bench.dist "$@" \
    --out "$OUT/data" --suffix "$SUFFIX" --device "$DEVICE" $QUICK 2>&1 | tee -a "$LOG"
  echo "== $(date +%T) exit ${PIPESTATUS[0]} at ${SECONDS} s" | tee -a "$LOG"
}

if [ "$MODE" != "--train-only" ]; then
  run 90 collectives --budget-s "${COLLECTIVES_BUDGET_S:-55}"
fi
if [ "$MODE" != "--collectives-only" ]; then
  left=$(( DEADLINE_S - SECONDS - 10 ))
  limit=$(( left < 450 ? left : 450 ))
  if [ "$limit" -gt 60 ]; then
    # inside dist.py: start no config after BUDGET, nor one whose estimate ends after DEADLINE (its own clock)
    run "$limit" train --budget-s $(( limit - 60 )) --deadline-s $(( limit - 20 )) ${CONFIGS:+--configs "$CONFIGS"}
  else
    echo "train skipped: only $left s left" | tee -a "$LOG"
  fi
fi
python3 -m perfmodel.bench.dist summary --out "$OUT/data" 2>&1 | tee -a "$LOG"
