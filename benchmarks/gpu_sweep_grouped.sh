#!/usr/bin/env bash
# The grouped-GEMM (MoE expert) sweep on the GPU machine: bf16 torch._grouped_mm and fp8 rowwise
# torch._scaled_grouped_mm in the fwd (2D x 3D) and wgrad (2D x 2D) forms, plus dense fp8 _scaled_mm at
# aligned neighbours of 4096 / 50304. See perfmodel/bench/grouped_gemm/.
#
#   bash benchmarks/gpu_sweep_grouped.sh              # probes, event times, kernel times (~9 min on an H200)
#   bash benchmarks/gpu_sweep_grouped.sh --quick      # smoke test (~1.5 min)
#   SEED=1 SUFFIX=_seed1 bash benchmarks/gpu_sweep_grouped.sh   # another draw of group sizes and shape order
#
# Phases, each its own process: probe (every layout and token-alignment rule on small groups; a probe that kills
# the CUDA context is recorded and the phase resumes in a new process), time (do_bench, warmup 25 / rep 100 ms, no
# profiler ever attached), kernels (torch.profiler, the time phase's ids), summary. Budgets shrink so that
# everything ends before DEADLINE_S seconds (default 540; the device allows 600 per command).
#
# Works in $WORK (default /tmp/grouped_work, outside $OUT), then writes to $OUT (default ./out) at most 8 files:
# grouped_gemm_{probe,time,kernels}$SUFFIX.json.gz, fp8_neighbours_{time,kernels}$SUFFIX.json.gz,
# grouped_gemm_plan$SUFFIX.json.gz and logs_grouped$SUFFIX.tar.gz (log.txt and the nvidia-smi clock log,
# gpu_clocks$SUFFIX.csv, sampled every 100 ms). Summary table last.
set -u
OUT=${OUT:-out}
WORK=${WORK:-/tmp/grouped_work}
QUICK=${1:-}
SEED=${SEED:-0}
SUFFIX=${SUFFIX:-}
DEADLINE_S=${DEADLINE_S:-540}
TIME_BUDGET_S=${TIME_BUDGET_S:-330}     # the time phase stops starting shapes after this
KERNELS_BUDGET_S=${KERNELS_BUDGET_S:-120}
KERNELS_KEEP_S=${KERNELS_KEEP_S:-110}   # kept for the kernels phase (its estimate ~80 s + startup)
PROBE_END_S=${PROBE_END_S:-120}         # no probe process starts after this many seconds
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT" "$WORK"
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/triton_cache
LOG="$WORK/log.txt"
: > "$LOG"
{
  nvidia-smi --query-gpu=name,uuid,driver_version --format=csv
  nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
  $PYTHON -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda,
    "triton", triton.__version__, torch.cuda.get_device_name())'
} 2>&1 | tee -a "$LOG"

nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv -lms 100 > "$WORK/gpu_clocks$SUFFIX.csv" 2>/dev/null &
SMI_PID=$!

PACKED=
pack() {  # the results into $OUT: gzipped JSON, one tarball of logs (idempotent)
  if [ -n "$PACKED" ]; then return; fi
  PACKED=1
  kill "$SMI_PID" 2>/dev/null
  for f in grouped_gemm_probe grouped_gemm_time grouped_gemm_kernels fp8_neighbours_time fp8_neighbours_kernels \
           grouped_gemm_plan; do
    if [ -f "$WORK/$f$SUFFIX.json" ]; then gzip -c "$WORK/$f$SUFFIX.json" > "$OUT/$f$SUFFIX.json.gz"; fi
  done
  tar -C "$WORK" -czf "$OUT/logs_grouped$SUFFIX.tar.gz" log.txt "gpu_clocks$SUFFIX.csv" 2>/dev/null
}
trap pack EXIT

min() { if [ "$1" -lt "$2" ]; then echo "$1"; else echo "$2"; fi; }
gg() { $PYTHON -m perfmodel.bench.grouped_gemm "$@" --out "$WORK" --seed "$SEED" --suffix "$SUFFIX" $QUICK; }

gg plan --dry-run 2>&1 | tee -a "$LOG"

# probe: resume after each probe that killed the CUDA context (exit 3, or any failure that added a record)
PROBE="$WORK/grouped_gemm_probe$SUFFIX.json"
n_probes() { if [ -f "$PROBE" ]; then grep -c '"op": "probe"' "$PROBE"; else echo 0; fi; }
for attempt in 1 2 3 4 5 6 7 8 9 10; do
  before=$(n_probes)
  if [ "$SECONDS" -gt "$PROBE_END_S" ]; then echo "probe: no time left (PROBE_END_S=$PROBE_END_S)" | tee -a "$LOG"; break; fi
  timeout -k 5 90 $PYTHON -m perfmodel.bench.grouped_gemm probe --resume --out "$WORK" --seed "$SEED" \
    --suffix "$SUFFIX" $QUICK 2>&1 | tee -a "$LOG"
  rc=${PIPESTATUS[0]}
  echo "probe attempt $attempt exit $rc at ${SECONDS} s" | tee -a "$LOG"
  if [ "$rc" -eq 0 ] || [ "$(n_probes)" -le "$before" ]; then break; fi
done

# time phase: keep KERNELS_KEEP_S for the kernels phase and ~25 s for its last item, the summary and packing
budget=$(min "$TIME_BUDGET_S" $(( DEADLINE_S - SECONDS - KERNELS_KEEP_S - 25 )))
if [ "$budget" -gt 10 ]; then
  gg plan --budget-s "$budget" > /dev/null 2>&1  # the plan file: the items the time phase plans at this budget
  timeout -k 10 $(( budget + 60 )) $PYTHON -m perfmodel.bench.grouped_gemm time --budget-s "$budget" \
    --probe-file "$PROBE" --out "$WORK" --seed "$SEED" --suffix "$SUFFIX" $QUICK 2>&1 | tee -a "$LOG"
  echo "time phase exit ${PIPESTATUS[0]} at ${SECONDS} s (budget $budget)" | tee -a "$LOG"
else
  echo "no time left for the time phase (DEADLINE_S=$DEADLINE_S)" | tee -a "$LOG"
fi

# kernels phase: the items the time phase measured (same ids)
budget=$(min "$KERNELS_BUDGET_S" $(( DEADLINE_S - SECONDS - 40 )))
TIME_FILE="$WORK/grouped_gemm_time$SUFFIX.json"
if [ "$budget" -gt 5 ] && [ -f "$TIME_FILE" ]; then
  timeout -k 10 $(( DEADLINE_S - SECONDS - 10 )) $PYTHON -m perfmodel.bench.grouped_gemm kernels \
    --budget-s "$budget" --probe-file "$PROBE" --only-ids-from "$TIME_FILE" --out "$WORK" --seed "$SEED" \
    --suffix "$SUFFIX" $QUICK 2>&1 | tee -a "$LOG"
  echo "kernels phase exit ${PIPESTATUS[0]} at ${SECONDS} s (budget $budget)" | tee -a "$LOG"
else
  echo "no kernels phase (budget $budget s, time file present: $([ -f "$TIME_FILE" ] && echo yes || echo no))" | tee -a "$LOG"
fi
nvidia-smi --query-gpu=name,uuid,clocks.sm,temperature.gpu,power.draw --format=csv 2>&1 | tee -a "$LOG"
echo "total ${SECONDS} s" | tee -a "$LOG"
$PYTHON -m perfmodel.bench.grouped_gemm summary --out "$WORK" --suffix "$SUFFIX" 2>&1 | tee -a "$LOG"
pack
