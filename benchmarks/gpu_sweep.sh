#!/usr/bin/env bash
# The one command the GPU machine runs: the H200 calibration sweeps and the Proton fixtures.
#
#   bash benchmarks/gpu_sweep.sh            # full sweep (~9 min on an H200)
#   bash benchmarks/gpu_sweep.sh --quick    # smoke test (~2.5 min)
#   bash benchmarks/gpu_sweep.sh --linear-static   # static-shape Linear sweep only (~5 min)
#
# Needs torchao as a wheel in .whl/ (the GPU machine has no registry). Writes under $OUT (default
# ./out): data/{gemm,linear,memory,launch}.json, fixtures.tar.gz (the .hatchet files), log.txt.
# Each section runs in its own process (torch.profiler, Proton and torch.compile stay apart) and
# flushes its JSON as it goes, so a timeout still leaves data. Prints a summary table last.
set -u
OUT=${OUT:-out}
QUICK=${1:-}
mkdir -p "$OUT/data"
export PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/tmp/inductor_cache TRITON_CACHE_DIR=/tmp/triton_cache
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
LOG="$OUT/log.txt"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
  python3 -c 'import torch, triton, torchao; print("torch", torch.__version__, "cuda", torch.version.cuda,
    "triton", triton.__version__, "torchao", torchao.__version__, torch.cuda.get_device_name())'
} 2>&1 | tee -a "$LOG"

bench() { python3 -m perfmodel.bench "$@" --out "$OUT/data" $QUICK 2>&1 | tee -a "$LOG"; }
if [ "$QUICK" = "--linear-static" ]; then
  # Static-shape Linear sweep (torch.compile dynamic=False, one compile per record): the float8
  # cast kernels of a dynamic-M compile run 8-80% slower (full sweep, 2026-11-30), so the
  # records that match static-shape training come from here. Ends before ${DEADLINE_S:-300} s.
  QUICK=""
  bench linear --linear-dynamic static --suffix _static_sweep \
    --linear-shapes 4096x4096,8192x28672,4096x1024,14336x4096,4096x14336,8192x8192 --linear-m 1024,4096,16384 \
    --linear-budget-s $(( ${DEADLINE_S:-300} - SECONDS - 30 ))
elif [ "$QUICK" = "--quick" ]; then
  bench launch
  bench memory
  bench fixtures
  bench gemm
  bench linear --linear-budget-s 100
  bench linear --linear-dynamic static --recipes bf16,tensorwise --suffix _static --linear-budget-s 40
else
  # Everything must end inside the device's 600 s per command: the Linear sweeps get what is left
  # before DEADLINE_S (seconds since this script started), keeping STATIC_S for the static check.
  DEADLINE_S=${DEADLINE_S:-555}
  STATIC_S=${STATIC_S:-75}
  bench launch
  bench memory
  bench fixtures
  (cd "$OUT/data" && tar czf ../fixtures.tar.gz fixtures && rm -rf fixtures)
  bench gemm --gemm-budget-s "${GEMM_BUDGET_S:-190}"
  bench linear --linear-budget-s $(( DEADLINE_S - STATIC_S - SECONDS - 20 ))
  left=$(( DEADLINE_S - SECONDS - 25 ))
  if [ "$left" -gt 10 ]; then
    # static shapes (dynamic=False), a compile per record: how much dynamic M costs
    bench linear --linear-dynamic static --linear-shapes 4096x4096,8192x8192 --linear-m 1024,8192 \
      --suffix _static --linear-budget-s "$left"
  fi
fi
[ -d "$OUT/data/fixtures" ] && (cd "$OUT/data" && tar czf ../fixtures.tar.gz fixtures && rm -rf fixtures)
python3 -m perfmodel.bench report --out "$OUT/data" 2>&1 | tee -a "$LOG"
