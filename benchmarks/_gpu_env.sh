# Shared set-up of the one-GPU MoE bench scripts (benchmarks/gpu_moe_block.sh, benchmarks/gpu_fresh_moe.sh).
# Not run on its own: a script sets OUT, WORK, DEADLINE_S and TARBALL (the file under $OUT that pack writes), then
#
#   source "$(dirname "$0")/_gpu_env.sh"
#   gpu_env_setup        # torchao wheel, versions header, nvidia-smi clock log, EXIT trap (finish)
#
# It creates $OUT and $WORK, starts $WORK/log.txt afresh and defines:
#   log MSG...            echo to stdout and the log
#   left                  seconds left before DEADLINE_S (bash's SECONDS: since the script started)
#   min A B               the smaller integer
#   pack                  every *.json *.txt *.csv of $WORK into $OUT/$TARBALL (written to .tmp, then moved)
#   finish                stop the clock logger, log the total, pack (the EXIT trap)
#   run_phase NAME BUDGET CMD...   one process under timeout (BUDGET + 40 s, or up to 8 s before the deadline),
#                                  skipped when BUDGET < 8; logs its exit status, then packs
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT" "$WORK"
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/triton_cache}
LOG="$WORK/log.txt"
: > "$LOG"
SMI_PID=""
log() { echo "$*" | tee -a "$LOG"; }
left() { echo $(( DEADLINE_S - SECONDS )); }
min() { if [ "$1" -lt "$2" ]; then echo "$1"; else echo "$2"; fi; }

install_torchao() {  # torchao 0.17.0 (built for torch 2.11, stable ABI): the only wheel these scripts install
  local whl
  whl=$(ls .whl/torchao-0.17.0-*.whl 2>/dev/null | head -1)
  if [ -n "$whl" ]; then
    $PYTHON -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site_moe "$whl" \
      && export PYTHONPATH=/tmp/site_moe${PYTHONPATH:+:$PYTHONPATH} || log "torchao wheel install failed"
  else
    log "no .whl/torchao-0.17.0-*.whl: fp8 items will record the import error"
  fi
}

versions_header() {  # date, commit, GPU, driver, clocks, torch / CUDA / triton / torchao versions into the log
  {
    date -u
    git log -1 --format='commit %H %s' 2>/dev/null || true
    nvidia-smi -L
    nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
    $PYTHON -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda, "triton",
      triton.__version__, torch.cuda.get_device_name())'
    $PYTHON -c 'import torchao; print("torchao", torchao.__version__, torchao.__file__)'
  } 2>&1 | tee -a "$LOG"
}

start_clock_log() {  # nvidia-smi every 200 ms into $WORK/gpu_clocks.csv, in the background (SMI_PID)
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv -lms 200 > "$WORK/gpu_clocks.csv" 2>/dev/null &
  SMI_PID=$!
}

pack() {  # idempotent: everything so far into one tarball
  tar -C "$WORK" -czf "$OUT/$TARBALL.tmp" --exclude='*.tmp' $(cd "$WORK" && ls *.json *.txt *.csv 2>/dev/null) \
    && mv "$OUT/$TARBALL.tmp" "$OUT/$TARBALL"
}

finish() { if [ -n "$SMI_PID" ]; then kill "$SMI_PID" 2>/dev/null; fi; log "total ${SECONDS} s"; pack; }

gpu_env_setup() { install_torchao; versions_header; start_clock_log; trap finish EXIT; }

run_phase() {  # run_phase NAME BUDGET CMD...: one process, killed at BUDGET + 40 s or before the deadline
  local name=$1 budget=$2; shift 2
  if [ "$budget" -lt 8 ]; then log "$name: no time left"; return; fi
  timeout -k 5 "$(min $(( budget + 40 )) $(( $(left) - 8 )))" "$@" 2>&1 | tee -a "$LOG"
  log "$name exit ${PIPESTATUS[0]} at ${SECONDS} s"
  pack
}
