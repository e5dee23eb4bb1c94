#!/usr/bin/env bash
# The GEMM layout sweep on the GPU machine: every shape in bf16 rr / rc / cr plus fp8 e4m3 rc
# (tensorwise, rowwise), timed with do_bench (events) and, in a second process, profiled for the
# cuBLAS kernels it ran. See benchmarks/harness/gemm_layouts.py (run from the repository root: python -m benchmarks.harness.gemm_layouts).
#
#   bash benchmarks/gpu_sweep_gemm_layouts.sh                 # full sweep (~4-7 min on an H200)
#   bash benchmarks/gpu_sweep_gemm_layouts.sh --quick         # smoke test (~30 s)
#   SEED=2026 SUFFIX=_fresh bash benchmarks/gpu_sweep_gemm_layouts.sh   # a fresh draw, same mix
#   SEED=2026 ORDER_SEED=9026 SUFFIX=_fresh_order bash benchmarks/gpu_sweep_gemm_layouts.sh   # same shapes, other order
#   SEED=2082 ROTATE=1 SUFFIX=_fresh2082_rotate bash benchmarks/gpu_sweep_gemm_layouts.sh  # each shape starts elsewhere
#   SEED=2084 WARMUP_MS=25 REP_MS=100 TIME_ONLY=1 TIME_BUDGET_S=330 SUFFIX=_fresh2084_defaults \
#     bash benchmarks/gpu_sweep_gemm_layouts.sh      # do_bench at its own defaults, event times only
#   FAMILY_MIX=random=2000,odd=800,llm=0,small_m=0,square=0 SEED=3001 SUFFIX=_fit3001 \
#     bash benchmarks/gpu_sweep_gemm_layouts.sh                          # another mix (fit data)
#
# Writes under $OUT (default ./out): data/gemm_layouts_time$SUFFIX.json (timing "event"),
# data/gemm_layouts_kernels$SUFFIX.json (timing "kernel"), log.txt. The two phases are separate
# processes: the event times come from a process that never attached a profiler. Each flushes its
# JSON as it goes and stops starting items at its budget, and the budgets shrink to end everything
# before DEADLINE_S seconds (default 560; the device allows 600 per command). Summary table last.
set -u
OUT=${OUT:-out}
QUICK=${1:-}
SEED=${SEED:-0}
ORDER_SEED=${ORDER_SEED:-$SEED}             # the run order's seed alone (default: SEED's order)
ROTATE=${ROTATE:-}                        # non-empty: --rotate (each shape's five GEMMs start at another one)
SUFFIX=${SUFFIX:-}
FAMILY_MIX=${FAMILY_MIX:-}                # shapes per family, e.g. random=2000,llm=0 (default: the fixed mix)
DEADLINE_S=${DEADLINE_S:-560}
WARMUP_MS=${WARMUP_MS:-}                  # the time phase's do_bench warmup / rep, ms (default: the sweep's 1 / 10)
REP_MS=${REP_MS:-}
TIME_ONLY=${TIME_ONLY:-}                  # non-empty: no kernels phase (the time phase may use its share)
TIME_BUDGET_S=${TIME_BUDGET_S:-215}       # the time phase then ends within ~240 s
KERNELS_BUDGET_S=${KERNELS_BUDGET_S:-160} # the kernels phase then ends within ~180 s
mkdir -p "$OUT/data"
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/triton_cache
# the sweep lives in benchmarks/harness/ (not in the wheel): the repository root on the path, from any folder
export PYTHONPATH="$(cd "$(dirname "$0")/.." && pwd)${PYTHONPATH:+:$PYTHONPATH}"
LOG="$OUT/log.txt"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
  python3 -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda,
    "triton", triton.__version__, torch.cuda.get_device_name())'
} 2>&1 | tee -a "$LOG"

# the GPU's clocks, power and throttle reasons every 100 ms while the sweep runs (records carry wall_start_s /
# wall_end_s to align with it)
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv -lms 100 > "$OUT/data/gpu_clocks$SUFFIX.csv" 2>/dev/null &
SMI_PID=$!
trap 'kill $SMI_PID 2>/dev/null' EXIT

min() { if [ "$1" -lt "$2" ]; then echo "$1"; else echo "$2"; fi; }
OPTS=()  # the options FAMILY_MIX and ROTATE add
if [ -n "$FAMILY_MIX" ]; then OPTS=(--family-mix "$FAMILY_MIX"); fi
if [ -n "$ROTATE" ]; then OPTS+=(--rotate); fi
run() {
  python3 -m benchmarks.harness.gemm_layouts "$@" --out "$OUT/data" --seed "$SEED" --order-seed "$ORDER_SEED" --suffix "$SUFFIX" "${OPTS[@]}" $QUICK 2>&1 |
    tee -a "$LOG"
}

run plan --dry-run
# time phase: keep ~180 s for the kernels phase (none with TIME_ONLY), ~25 s for startup and the last item
KEEP_S=180
if [ -n "$TIME_ONLY" ]; then KEEP_S=0; fi
TIME_OPTS=()
if [ -n "$WARMUP_MS" ]; then TIME_OPTS+=(--warmup-ms "$WARMUP_MS"); fi
if [ -n "$REP_MS" ]; then TIME_OPTS+=(--rep-ms "$REP_MS"); fi
budget=$(min "$TIME_BUDGET_S" $(( DEADLINE_S - SECONDS - KEEP_S - 25 )))
if [ "$budget" -gt 5 ]; then
  run time --budget-s "$budget" "${TIME_OPTS[@]}"
else
  echo "no time left for the time phase (DEADLINE_S=$DEADLINE_S)" | tee -a "$LOG"
fi
# kernels phase: the items the time phase measured (same ids), in the same order
budget=$(min "$KERNELS_BUDGET_S" $(( DEADLINE_S - SECONDS - 30 )))
TIME_FILE="$OUT/data/gemm_layouts_time$SUFFIX.json"
if [ -n "$TIME_ONLY" ]; then
  echo "TIME_ONLY: no kernels phase" | tee -a "$LOG"
elif [ "$budget" -gt 5 ]; then
  if [ -f "$TIME_FILE" ]; then
    run kernels --budget-s "$budget" --only-ids-from "$TIME_FILE"
  else
    run kernels --budget-s "$budget"
  fi
else
  echo "no time left for the kernels phase (DEADLINE_S=$DEADLINE_S)" | tee -a "$LOG"
fi
echo "total ${SECONDS} s" | tee -a "$LOG"
python3 -m benchmarks.harness.gemm_layouts summary --out "$OUT/data" --suffix "$SUFFIX" 2>&1 | tee -a "$LOG"
