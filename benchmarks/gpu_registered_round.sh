#!/usr/bin/env bash
# A registered MoE block round on one H200, exactly as registered (benchmarks/registered/<round>.json, written by
# benchmarks/register_moe_round.py and committed before the measurement): each of the round's bench commands in turn,
# into $WORK/<the round's folder> (the first fresh, the rest --resume), under one deadline. The commands are in
# priority order: each may use what is left of the deadline, so a late one is the first to lose items.
#
#   ROUNDS="round8 repeat2" DEADLINE_S=540 bash benchmarks/gpu_registered_round.sh   # with $OUT set; carry [".whl"]
#
# Output: $OUT/registered_round.tar.gz (one folder per round with moe_block_time.json; the log and the nvidia-smi
# clock log at the top), re-packed after every command. Set-up shared with the other MoE scripts: _gpu_env.sh.
set -u -o pipefail
OUT=${OUT:-out}
WORK=${WORK:-/tmp/registered_round_work}
DEADLINE_S=${DEADLINE_S:-540}
ROUNDS=${ROUNDS:-round8}
PARSE_PY=${PARSE_PY:-python3}                      # reads the registration files (any python 3)
TARBALL=registered_round.tar.gz
source "$(dirname "$0")/_gpu_env.sh"  # PYTHON, log, left, min, finish, run_phase; wheel, header, clock log
pack() {  # every file under $WORK, round folders included
  tar -C "$WORK" -czf "$OUT/$TARBALL.tmp" --exclude='*.tmp' . && mv "$OUT/$TARBALL.tmp" "$OUT/$TARBALL"
}
gpu_env_setup
log "rounds $ROUNDS"

for round in $ROUNDS; do
  reg="$(dirname "$0")/registered/$round.json"
  if [ ! -f "$reg" ]; then log "$round: no $reg"; continue; fi
  folder=$($PARSE_PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["folder"])' "$reg")
  mkdir -p "$WORK/$folder"
  resume=""
  while IFS= read -r cmd; do
    [ -n "$cmd" ] || continue
    budget=$(( $(left) - 20 ))
    # the registered command with this run's python, output folder and what is left of the deadline
    run_phase "$round" "$budget" $PYTHON ${cmd#python3 } --out "$WORK/$folder" --budget-s "$budget" $resume
    resume="--resume"
  done < <($PARSE_PY -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1]))["commands"]))' "$reg")
done
nvidia-smi --query-gpu=name,uuid,clocks.sm,temperature.gpu,power.draw --format=csv 2>&1 | tee -a "$LOG"
