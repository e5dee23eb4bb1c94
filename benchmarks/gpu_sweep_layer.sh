#!/usr/bin/env bash
# Decoder-layer fwd+bwd sweep on one GPU (H200): bf16 against torchao float8 with all, one group or a
# subset of the Linears converted (perfmodel/bench/layer/; `python -m perfmodel.bench.layer plan`
# lists the 164 configs and their priorities).
#
#   bash benchmarks/gpu_sweep_layer.sh                 # the sweep, by priority, ends before DEADLINE_S (575 s)
#   bash benchmarks/gpu_sweep_layer.sh --quick         # smoke test: bf16 + tensorwise-all of a small layer (~1 min)
#   bash benchmarks/gpu_sweep_layer.sh --skip-from prev/layer.json --suffix _part2   # a second call: the rest
#   bash benchmarks/gpu_sweep_layer.sh --quiet --only 'd2048-*'   # no measurement while a worker compiles
#
# Arguments are passed to `python -m perfmodel.bench.layer run` (e.g. --only 'd2048-*', --priority-max 3,
# --workers 8). Needs torchao as a wheel in .whl/ (the GPU machine has no registry). Writes under $OUT
# (default ./out): data/layer*.json (flushed after every config, so a timeout still leaves data) and
# log.txt; prints a table last (per layer and token count: bf16 ms, every float8 config's ms and speedup).
set -u
OUT=${OUT:-out}
DEADLINE_S=${DEADLINE_S:-575}  # this script ends by then (seconds since it started); the device allows 600
mkdir -p "$OUT/data"
export PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/tmp/inductor_cache TRITON_CACHE_DIR=/tmp/triton_cache
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
LOG="$OUT/log.txt"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu,memory.total \
    --format=csv
  nproc
  grep -m1 'model name' /proc/cpuinfo
  python3 -c 'import torch, triton, torchao; print("torch", torch.__version__, "cuda", torch.version.cuda,
    "triton", triton.__version__, "torchao", torchao.__version__, torch.cuda.get_device_name())'
} 2>&1 | tee -a "$LOG"

# The sweep ends by its --deadline-s (it kills configs still running then and records them as errors);
# no config starts after --budget-s or when it would not finish by the deadline. Both count from the
# start of the python process; keep ~20 s for the table and the shutdown.
left=$(( DEADLINE_S - SECONDS - 20 ))
case " $* " in
  *" --quick "*) limits=() ;;  # the quick defaults: budget 30 s, deadline 58 s
  *) limits=(--deadline-s "$left" --budget-s "$(( left - 50 ))") ;;
esac
# `run` prints the table last; if it was cut off (timeout), print the table from the file instead
timeout -k 5 $(( left + 10 )) python3 -m perfmodel.bench.layer run --out "$OUT/data" ${limits[@]+"${limits[@]}"} "$@" \
  2>&1 | tee -a "$LOG"
status=${PIPESTATUS[0]}
echo "layer sweep: exit status $status after ${SECONDS} s" >> "$LOG"
if [ "$status" -ne 0 ]; then
  python3 -m perfmodel.bench.layer table --out "$OUT/data" 2>&1 | tee -a "$LOG"
fi
