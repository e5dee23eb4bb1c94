#!/usr/bin/env bash
# Float8 vs bf16 all-gather as FSDP2 runs it, on NPROC GPUs of one host (issue 34 item 5). READY, NOT RUN:
# for when a 2-GPU kind (nvidia-h200-x2) is lent; ask `status` first. About 9 minutes:
#
#   NPROC=2 DEADLINE_S=540 bash benchmarks/gpu_fsdp_allgather_2gpu.sh     # $OUT set by the device tool
#
#   1. fsdp_pieces on NPROC ranks (60 s): each rank's shard cast (amax all-reduced across the ranks, as torchao
#      does without precomputed scales), precompute_float8_dynamic_scale_for_fsdp on 1/4/8 Llama 3 8B layers,
#      all_gather_into_tensor bf16 vs float8 (uint8) by message size — real collectives this time;
#   2. perfmodel.bench.dist collectives (90 s): all-gather / reduce-scatter / all-reduce, bf16 and fp8, 1 MiB-4 GiB;
#   3. perfmodel.bench.dist train, FSDP2 steps with and without float8 all-gather (the rest of the deadline):
#      8B x 4 layers and 70B x 2 layers, bf16 / tensorwise / tensorwise + enable_fsdp_float8_all_gather.
# Writes $OUT/data/{fsdp_pieces_w$NPROC.json, collectives_2gpu.json, train_2gpu.json, log.txt}.
# NVLink SHARP / multicast stays off (the three variables below; dist.py and fsdp_pieces force them too).
set -u
OUT=${OUT:-out}
NPROC=${NPROC:-2}
DEADLINE_S=${DEADLINE_S:-540}
TRAIN_CONFIGS=${TRAIN_CONFIGS:-fsdp_8b_bf16,fsdp_8b_tensorwise,fsdp_8b_tensorwise_fp8ag,fsdp_70b_bf16,fsdp_70b_tensorwise_fp8ag,fsdp_70b_tensorwise}
mkdir -p "$OUT/data"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/tmp/inductor_cache TRITON_CACHE_DIR=/tmp/triton_cache
if [ -z "${PYTHONPATH:-}" ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
LOG="$OUT/data/log.txt"
export PERFMODEL_BENCH_COMMAND="NPROC=$NPROC DEADLINE_S=$DEADLINE_S TRAIN_CONFIGS=$TRAIN_CONFIGS bash benchmarks/gpu_fsdp_allgather_2gpu.sh"
{
  echo "== $(date -u +%FT%TZ) NPROC=$NPROC DEADLINE_S=$DEADLINE_S TRAIN_CONFIGS=$TRAIN_CONFIGS bash benchmarks/gpu_fsdp_allgather_2gpu.sh"
  nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total,clocks.max.sm,power.limit --format=csv
  nvidia-smi topo -m
  python3 -c 'import torch; print("torch", torch.__version__, "gpus", torch.cuda.device_count(), "nccl", torch.cuda.nccl.version())'
  python3 -c 'import torchao; print("torchao", torchao.__version__)' || echo "torchao: import FAILED"
  env | grep -E '^(NCCL_|TORCH_SYMM_MEM|NVSHMEM_)' | sort
} 2>&1 | tee -a "$LOG"
n=$(python3 -c 'import torch; print(torch.cuda.device_count())')
if [ "$n" -lt "$NPROC" ]; then echo "only $n GPUs, NPROC=$NPROC: stop" | tee -a "$LOG"; exit 3; fi

trun() { local limit=$1; shift; echo "== $(date -u +%T) ($limit s max) torchrun $*" | tee -a "$LOG"
  timeout -k 10 "$limit" torchrun --standalone --nproc-per-node "$NPROC" "$@" 2>&1 | tee -a "$LOG"
  echo "== $(date -u +%T) exit ${PIPESTATUS[0]} at $SECONDS s" | tee -a "$LOG"; }

trun 75 -m perfmodel.bench.fsdp_pieces --out "$OUT/data" --deadline-s 60
trun 90 -m perfmodel.bench.dist collectives --out "$OUT/data" --suffix _2gpu --budget-s 55
left=$(( DEADLINE_S - SECONDS - 15 ))
if [ "$left" -gt 90 ]; then
  trun "$left" -m perfmodel.bench.dist train --out "$OUT/data" --suffix _2gpu --budget-s $(( left - 70 )) \
    --deadline-s $(( left - 20 )) --configs "$TRAIN_CONFIGS"
  python3 -m perfmodel.bench.dist summary --out "$OUT/data" 2>&1 | tee -a "$LOG"
else
  echo "train skipped: only $left s left" | tee -a "$LOG"
fi
