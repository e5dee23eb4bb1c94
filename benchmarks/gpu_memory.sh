#!/usr/bin/env bash
# Peak memory and step time of real training steps on one H200 (issue 34 item 1), and the float8 all-gather
# pieces FSDP2 runs on each rank (item 5), in one device call:
#
#   DEADLINE_S=240 bash benchmarks/gpu_memory.sh              # $OUT set by the device tool
#   CONFIGS='fsdp_70b_*,amp_*' DEADLINE_S=300 bash benchmarks/gpu_memory.sh    # a later call, other configs
#   python -m perfmodel.bench.memory plan                      # the configurations, in order (no GPU)
#
# Phases (each its own processes; every config a subprocess, so an OOM or crash is a record):
#   1. (WARM_S, default 70 s) `memory warm` compiles the compile=True configs two at a time in the
#      background (inductor cache in /tmp/inductor_cache) while `fsdp_pieces` (PIECES_S, default 60 s)
#      times the shard casts, precompute_float8_dynamic_scale_for_fsdp and world-1 all-gathers (their meta
#      says they ran beside the compile warm-up);
#   2. `memory run`: the configs in plan order until DEADLINE_S (a config starts only if its guessed time fits).
# Writes $OUT/data/{memory.json, memory_warm.json, fsdp_pieces.json, log.txt} (JSON rewritten after every record).
# Assumes the caller installed torchao (.whl) and exported PYTHONPATH; installs .whl/*.whl itself otherwise.
set -u
OUT=${OUT:-out}
DEADLINE_S=${DEADLINE_S:-240}
CONFIGS=${CONFIGS:-}
WARM_S=${WARM_S:-70}
PIECES_S=${PIECES_S:-60}
mkdir -p "$OUT/data"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/tmp/inductor_cache TRITON_CACHE_DIR=/tmp/triton_cache
if [ -z "${PYTHONPATH:-}" ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
LOG="$OUT/data/log.txt"
export PERFMODEL_BENCH_COMMAND="DEADLINE_S=$DEADLINE_S CONFIGS='$CONFIGS' WARM_S=$WARM_S PIECES_S=$PIECES_S bash benchmarks/gpu_memory.sh"
{
  echo "== $(date -u +%FT%TZ) $PERFMODEL_BENCH_COMMAND"
  nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
  python3 -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)'
  python3 -c 'import torchao; print("torchao", torchao.__version__)' || echo "torchao: import FAILED (float8 configs will be error records)"
} 2>&1 | tee -a "$LOG"

ARGS=()
[ -n "$CONFIGS" ] && ARGS=(--configs "$CONFIGS")
echo "== $(date -u +%T) warm (background, $WARM_S s) + fsdp_pieces ($PIECES_S s)" | tee -a "$LOG"
timeout -k 5 "$WARM_S" python3 -m perfmodel.bench.memory warm --out "$OUT/data" --deadline-s $(( WARM_S - 5 )) \
  "${ARGS[@]}" >>"$LOG" 2>&1 &
WARM_PID=$!
timeout -k 5 "$PIECES_S" python3 -m perfmodel.bench.fsdp_pieces --out "$OUT/data" --deadline-s $(( PIECES_S - 6 )) \
  --note "ran beside the compile warm-up processes (CPU busy; GPU shared for their first steps)" 2>&1 | tee -a "$LOG"
echo "== $(date -u +%T) fsdp_pieces exit ${PIPESTATUS[0]} at $SECONDS s" | tee -a "$LOG"
wait "$WARM_PID"
echo "== $(date -u +%T) warm exit $? at $SECONDS s" | tee -a "$LOG"

left=$(( DEADLINE_S - SECONDS - 6 ))
if [ "$left" -gt 20 ]; then
  timeout -k 5 "$left" python3 -m perfmodel.bench.memory run --out "$OUT/data" --deadline-s $(( left - 4 )) --warmed \
    "${ARGS[@]}" 2>&1 | tee -a "$LOG"
  echo "== $(date -u +%T) run exit ${PIPESTATUS[0]} at $SECONDS s" | tee -a "$LOG"
else
  echo "memory run skipped: only $left s left" | tee -a "$LOG"
fi
python3 - "$OUT/data/memory.json" <<'PY' 2>&1 | tee -a "$LOG"
import json, sys
try:
    recs = json.load(open(sys.argv[1]))["records"]
except Exception as exc:
    sys.exit(f"no memory.json: {exc}")
G = 2**30
print(f"{'name':<36} {'status':<8} {'peak GiB':>8} {'resv GiB':>8} {'est GiB':>8} {'fits':>5} {'ms':>7} {'tok/s':>9}")
for r in recs:
    m = r.get("after_3_steps") or r.get("at_oom") or {}
    e = r.get("estimate") or {}
    pk, rs = m.get("max_memory_allocated"), m.get("max_memory_reserved")
    f = lambda v, s=1: f"{v / s:8.1f}" if isinstance(v, (int, float)) else f"{'-':>8}"
    print(f"{r['name']:<36} {r.get('status', '?'):<8} {f(pk, G)} {f(rs, G)} {f(e.get('memory_bytes'), G)} "
          f"{str(e.get('fits', '-')):>5} {f((r.get('step_time_s') or 0) * 1e3) if r.get('step_time_s') else '       -'} "
          f"{r.get('tokens_per_s', 0):9.0f}")
PY
echo "== $(date -u +%T) done at $SECONDS s" | tee -a "$LOG"
