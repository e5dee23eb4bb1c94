#!/usr/bin/env bash
# The fresh MoE families on one H200, measured after the model that predicts them was committed (pre-registered):
# grouped GEMMs and expert blocks of qwen3_235b_a22b, olmoe_1b_7b, dbrx and phi35_moe (no (K, N) of theirs is in
# any earlier family), and torchao's mxfp8 helper kernels (perfmodel/bench/mxfp8_kernels.py).
#
#   DEADLINE_S=540 bash benchmarks/gpu_fresh_moe.sh      # with $OUT set; carry=[".whl"]
#
# Phases, each its own process under `timeout`: grouped time (do_bench, L2 flushed; the probe results of
# benchmarks/data/h200_2026-12-03 reused: same GPU model and software), grouped kernels (torch.profiler), block
# time (bf16 and fp8 rowwise, 4096-32768 tokens, balanced and skewed), mxfp8 re-layouts, mxfp8 casts (torchao's
# sm100-gated Triton casts defined here by --force-mx-casts). Output: $OUT/fresh_moe.tar.gz (all JSON, logs, the
# nvidia-smi clock log), re-packed after every phase.
set -u -o pipefail
OUT=${OUT:-out}
WORK=${WORK:-/tmp/fresh_moe_work}
DEADLINE_S=${DEADLINE_S:-540}
GROUPED_TIME_S=${GROUPED_TIME_S:-170}
GROUPED_KERNELS_S=${GROUPED_KERNELS_S:-45}
BLOCK_TIME_S=${BLOCK_TIME_S:-110}
MX_S=${MX_S:-45}
FAMILIES=qwen3_235b_a22b,olmoe_1b_7b,dbrx,phi35_moe
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT" "$WORK"
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/triton_cache}
LOG="$WORK/log.txt"
: > "$LOG"
log() { echo "$*" | tee -a "$LOG"; }
left() { echo $(( DEADLINE_S - SECONDS )); }
min() { if [ "$1" -lt "$2" ]; then echo "$1"; else echo "$2"; fi; }

WHL=$(ls .whl/torchao-0.17.0-*.whl 2>/dev/null | head -1)
if [ -n "$WHL" ]; then
  $PYTHON -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site_moe "$WHL" \
    && export PYTHONPATH=/tmp/site_moe${PYTHONPATH:+:$PYTHONPATH} || log "torchao wheel install failed"
fi
{
  date -u
  git log -1 --format='commit %H %s' 2>/dev/null || true
  nvidia-smi -L
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
  $PYTHON -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda, "triton",
    triton.__version__, torch.cuda.get_device_name())'
  $PYTHON -c 'import torchao; print("torchao", torchao.__version__)'
} 2>&1 | tee -a "$LOG"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv -lms 200 > "$WORK/gpu_clocks.csv" 2>/dev/null &
SMI_PID=$!
pack() {
  tar -C "$WORK" -czf "$OUT/fresh_moe.tar.gz.tmp" $(cd "$WORK" && ls *.json *.txt *.csv 2>/dev/null) \
    && mv "$OUT/fresh_moe.tar.gz.tmp" "$OUT/fresh_moe.tar.gz"
}
finish() { kill "$SMI_PID" 2>/dev/null; log "total ${SECONDS} s"; pack; }
trap finish EXIT
run_phase() {  # run_phase NAME BUDGET CMD...: one process, killed at BUDGET + 40 s or before the deadline
  local name=$1 budget=$2; shift 2
  if [ "$budget" -lt 8 ]; then log "$name: no time left"; return; fi
  timeout -k 5 "$(min $(( budget + 40 )) $(( $(left) - 8 )))" "$@" 2>&1 | tee -a "$LOG"
  log "$name exit ${PIPESTATUS[0]} at ${SECONDS} s"
  pack
}

PROBE="$WORK/grouped_gemm_probe_fresh.json"
gunzip -c benchmarks/data/h200_2026-12-03/grouped_gemm_probe.json.gz > "$PROBE"
$PYTHON -m perfmodel.bench.grouped_gemm plan --out "$WORK" --suffix _fresh --families "$FAMILIES" --no-neighbours \
  --budget-s "$GROUPED_TIME_S" 2>&1 | tail -4 | tee -a "$LOG"
run_phase grouped_time "$GROUPED_TIME_S" $PYTHON -m perfmodel.bench.grouped_gemm time --out "$WORK" --suffix _fresh \
  --families "$FAMILIES" --no-neighbours --budget-s "$GROUPED_TIME_S" --probe-file "$PROBE"
run_phase grouped_kernels "$(min "$GROUPED_KERNELS_S" $(( $(left) - BLOCK_TIME_S - MX_S - 60 )))" \
  $PYTHON -m perfmodel.bench.grouped_gemm kernels --out "$WORK" --suffix _fresh --families "$FAMILIES" \
  --no-neighbours --budget-s "$GROUPED_KERNELS_S" --probe-file "$PROBE" \
  --only-ids-from "$WORK/grouped_gemm_time_fresh.json"
run_phase block_time "$(min "$BLOCK_TIME_S" $(( $(left) - MX_S - 30 )))" \
  $PYTHON -m perfmodel.bench.moe_block time --out "$WORK" --models "$FAMILIES" --budget-s "$BLOCK_TIME_S"
mkdir -p "$WORK/mx_relayout" "$WORK/mx_casts"
run_phase mx_relayout "$(min 30 $(( $(left) - 30 )))" $PYTHON -m perfmodel.bench.mxfp8_kernels --out "$WORK/mx_relayout" \
  --budget-s 25 --kernels rearrange_2d_K_groups,rearrange_2d_M_groups,rearrange_per_group_3d
cp "$WORK/mx_relayout/mxfp8_kernels.json" "$WORK/mxfp8_relayout.json" 2>/dev/null
run_phase mx_casts "$(min 20 $(( $(left) - 12 )))" $PYTHON -m perfmodel.bench.mxfp8_kernels --out "$WORK/mx_casts" \
  --budget-s 15 --force-mx-casts --kernels cast_dim0,cast_dim1
cp "$WORK/mx_casts/mxfp8_kernels.json" "$WORK/mxfp8_casts.json" 2>/dev/null
nvidia-smi --query-gpu=name,uuid,clocks.sm,temperature.gpu,power.draw --format=csv 2>&1 | tee -a "$LOG"
