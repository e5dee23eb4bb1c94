#!/usr/bin/env bash
# MoE routed-expert block fwd+bwd on one H200, bf16 against torchao 0.17.0 float8 rowwise (prototype/moe_training),
# plus Triton's own MoE bench for the seed's case. See perfmodel/bench/moe_block/.
#
#   DEADLINE_S=300 bash benchmarks/gpu_moe_block.sh      # with $OUT set; carry=[".whl", ".tk"]
#
# Phases (each its own process, each under `timeout`, budgets cut so that the script ends before DEADLINE_S):
#   selftest  tiny shapes vs a float64 loop reference; fp8 conversion check            (~15 s)
#   time      do_bench fwd and fwd+bwd, bf16 and fp8 rowwise, every MODELS row x tokens x routing (the rest)
#   kernels   torch.profiler kernel list per iteration, tokens 8192                    (KERNELS_BUDGET_S, 40)
#   seed      triton_kernels bench_mlp, Proton profiles (benchmarks/gpu_moe_seed.sh)  (SEED_BUDGET_S, 50)
#   pieces    bf16 pieces alone (router, permute, GEMM fwd/dgrad/wgrad, unpermute)     (PIECES_BUDGET_S, 30)
# Output: $OUT/moe_block_results.tar.gz (all JSON, log, nvidia-smi clock log) and $OUT/moe_seed_profiles.tar.gz,
# re-packed after every phase, so a kill leaves the phases already finished. Work files in $WORK (not $OUT).
# Set-up shared with gpu_fresh_moe.sh (torchao wheel, versions header, clock log, pack/finish): _gpu_env.sh.
set -u -o pipefail
OUT=${OUT:-out}
WORK=${WORK:-/tmp/moe_block_work}
DEADLINE_S=${DEADLINE_S:-300}
TIME_BUDGET_S=${TIME_BUDGET_S:-140}
KERNELS_BUDGET_S=${KERNELS_BUDGET_S:-40}
SEED_BUDGET_S=${SEED_BUDGET_S:-50}
PIECES_BUDGET_S=${PIECES_BUDGET_S:-30}
RESERVE_S=${RESERVE_S:-12}              # packing and process start-up at the end
TARBALL=moe_block_results.tar.gz
source "$(dirname "$0")/_gpu_env.sh"  # PYTHON, log, left, min, pack, finish; torchao wheel, header, clock log
gpu_env_setup

mb() { $PYTHON -m perfmodel.bench.moe_block "$@" --out "$WORK"; }
phase() {  # phase NAME BUDGET ARGS...: one process under timeout; a crashed time/kernels phase resumes once
  local name=$1 budget=$2; shift 2
  if [ "$budget" -lt 8 ]; then log "$name: no time left (budget $budget s)"; return; fi
  local t0=$SECONDS to
  to=$(min $(( budget + 40 )) $(( $(left) - 5 )))
  timeout -k 5 "$to" $PYTHON -m perfmodel.bench.moe_block "$name" --budget-s "$budget" --out "$WORK" "$@" \
    2>&1 | tee -a "$LOG"
  local rc=${PIPESTATUS[0]}
  log "$name exit $rc at ${SECONDS} s"
  local rest=$(( budget - (SECONDS - t0) ))
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$name" != selftest ] && [ "$rest" -gt 15 ]; then
    timeout -k 5 "$(min $(( rest + 30 )) $(( $(left) - 5 )))" $PYTHON -m perfmodel.bench.moe_block "$name" --budget-s "$rest" --out "$WORK" \
      --resume "$@" 2>&1 | tee -a "$LOG"
    log "$name (resumed) exit ${PIPESTATUS[0]} at ${SECONDS} s"
  fi
  pack
}

mb plan --budget-s "$TIME_BUDGET_S" 2>&1 | tail -3 | tee -a "$LOG"
phase selftest 40
after_time=$(( KERNELS_BUDGET_S + SEED_BUDGET_S + PIECES_BUDGET_S + RESERVE_S + 3 * 10 ))
phase time "$(min "$TIME_BUDGET_S" $(( $(left) - after_time )))"
phase kernels "$(min "$KERNELS_BUDGET_S" $(( $(left) - SEED_BUDGET_S - PIECES_BUDGET_S - RESERVE_S - 20 )))" --tokens 8192
b=$(min "$SEED_BUDGET_S" $(( $(left) - PIECES_BUDGET_S - RESERVE_S - 55 )))
if [ "$b" -gt 10 ]; then
  OUT="$OUT" WORK="$WORK" SEED_BUDGET_S="$b" PYTHON="$PYTHON" bash benchmarks/gpu_moe_seed.sh 2>&1 | tee -a "$LOG"
else
  log "seed: no time left ($b s)"
fi
phase pieces "$(min "$PIECES_BUDGET_S" $(( $(left) - RESERVE_S - 15 )))" --tokens 8192 --routings balanced
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv 2>&1 | tee -a "$LOG"
