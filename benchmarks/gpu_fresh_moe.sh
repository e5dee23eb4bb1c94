#!/usr/bin/env bash
# The fresh MoE families on one H200, measured after the model that predicts them was committed (pre-registered):
# grouped GEMMs and expert blocks of $FAMILIES (round 1, the default: qwen3_235b_a22b, olmoe_1b_7b, dbrx, phi35_moe;
# round 2: granite_3b_a800m, ernie45_21b_a3b, qwen2_57b_a14b, minimax_m1; round 3: glm45_air, glm45, mixtral_8x22b,
# hunyuan_large; round 4: minimax_m2, qwen3_coder_480b, arctic; no (K, N) of a round is in any earlier family), and
# torchao's mxfp8 helper kernels
# (perfmodel/bench/mxfp8_kernels.py; MX_S=0 skips them).
#
#   DEADLINE_S=540 bash benchmarks/gpu_fresh_moe.sh      # round 1; with $OUT set; carry=[".whl"]
#   FAMILIES=granite_3b_a800m,ernie45_21b_a3b,qwen2_57b_a14b,minimax_m1 MX_S=0 DEADLINE_S=420 \
#     bash benchmarks/gpu_fresh_moe.sh                   # round 2 (the mxfp8 kernels were measured in round 1)
#   FAMILIES=glm45_air,glm45,mixtral_8x22b,hunyuan_large MX_S=0 DEADLINE_S=440 \
#     bash benchmarks/gpu_fresh_moe.sh                   # round 3 (2026-12-04 evening)
#   FAMILIES=minimax_m2,qwen3_coder_480b,arctic MX_S=0 DEADLINE_S=440 \
#     bash benchmarks/gpu_fresh_moe.sh                   # round 4 (2026-12-04 night)
#
# Phases, each its own process under `timeout`: grouped time (do_bench, L2 flushed; the probe results of
# benchmarks/data/h200_2026-12-03 reused: same GPU model and software), grouped kernels (torch.profiler), block
# time (bf16 and fp8 rowwise, 4096-32768 tokens, balanced and skewed), mxfp8 re-layouts, mxfp8 casts (torchao's
# sm100-gated Triton casts defined here by --force-mx-casts). Output: $OUT/fresh_moe.tar.gz (all JSON, logs, the
# nvidia-smi clock log), re-packed after every phase. Set-up shared with gpu_moe_block.sh: _gpu_env.sh.
set -u -o pipefail
OUT=${OUT:-out}
WORK=${WORK:-/tmp/fresh_moe_work}
DEADLINE_S=${DEADLINE_S:-540}
GROUPED_TIME_S=${GROUPED_TIME_S:-170}
GROUPED_KERNELS_S=${GROUPED_KERNELS_S:-45}
BLOCK_TIME_S=${BLOCK_TIME_S:-110}
MX_S=${MX_S:-45}                                   # the mxfp8 phases' reserve; 0: skip them
FAMILIES=${FAMILIES:-qwen3_235b_a22b,olmoe_1b_7b,dbrx,phi35_moe}  # grouped families = block models
TARBALL=fresh_moe.tar.gz
source "$(dirname "$0")/_gpu_env.sh"  # PYTHON, log, left, min, pack, finish, run_phase; wheel, header, clock log
gpu_env_setup
log "families $FAMILIES; MX_S $MX_S"

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
if [ "$MX_S" -gt 0 ]; then
  mkdir -p "$WORK/mx_relayout" "$WORK/mx_casts"
  run_phase mx_relayout "$(min 30 $(( $(left) - 30 )))" $PYTHON -m perfmodel.bench.mxfp8_kernels --out "$WORK/mx_relayout" \
    --budget-s 25 --kernels rearrange_2d_K_groups,rearrange_2d_M_groups,rearrange_per_group_3d
  cp "$WORK/mx_relayout/mxfp8_kernels.json" "$WORK/mxfp8_relayout.json" 2>/dev/null
  run_phase mx_casts "$(min 20 $(( $(left) - 12 )))" $PYTHON -m perfmodel.bench.mxfp8_kernels --out "$WORK/mx_casts" \
    --budget-s 15 --force-mx-casts --kernels cast_dim0,cast_dim1
  cp "$WORK/mx_casts/mxfp8_kernels.json" "$WORK/mxfp8_casts.json" 2>/dev/null
else
  log "mxfp8 phases skipped (MX_S=0)"
fi
nvidia-smi --query-gpu=name,uuid,clocks.sm,temperature.gpu,power.draw --format=csv 2>&1 | tee -a "$LOG"
