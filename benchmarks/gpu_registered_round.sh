#!/usr/bin/env bash
# A registered MoE block round on one H200, exactly as registered (benchmarks/registered/<round>.json, written by
# benchmarks/register_moe_round.py and committed before the measurement): each of the round's bench commands in turn,
# into $WORK/<the round's folder> (the first fresh, the rest --resume), under one deadline. The commands are in
# priority order: each may use what is left of the deadline, so a late one is the first to lose items. A round
# registered for another GPU than the device's (the registration's "gpu"; H200 where it has none) is skipped, so
# one call can name the H200 and H100 registrations of a round and run the one that matches the card it gets. The
# rounds' "diagnostics" (kernel profiles, pieces, isolated GEMMs: nothing scored) run after the scored commands of
# every round named (since 2026-12-08; before, after their own round's), round by round, on what is left; a
# diagnostic of a bench phase an earlier one of the round ran (two kernels commands) resumes its file.
#
#   ROUNDS="round8 repeat2 round11_h100" DEADLINE_S=540 bash benchmarks/gpu_registered_round.sh
#   (with $OUT set; the device call carries [".whl"])
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
DEVICE_NAME=${DEVICE_NAME:-$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)}
log "rounds $ROUNDS on $DEVICE_NAME"
# same_gpu REG: the registration's GPU is the device's (perfmodel.specs names; numpy only)
same_gpu() {
  $PARSE_PY -c 'import json, sys
from perfmodel.specs.gpu import get_gpu
want = json.load(open(sys.argv[1])).get("gpu", "H200")
try:
    ok = get_gpu(want).name == get_gpu(sys.argv[2]).name
except Exception:
    ok = False
sys.exit(0 if ok else 1)' "$1" "$DEVICE_NAME"
}

ran=""  # the rounds whose scored commands ran: their diagnostics follow, in the same order
for round in $ROUNDS; do
  reg="$(dirname "$0")/registered/$round.json"
  if [ ! -f "$reg" ]; then log "$round: no $reg"; continue; fi
  if ! same_gpu "$reg"; then log "$round: registered for another GPU than $DEVICE_NAME, skipped"; continue; fi
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
  ran="$ran $round"
done
for round in $ran; do
  reg="$(dirname "$0")/registered/$round.json"
  folder=$($PARSE_PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["folder"])' "$reg")
  seen=" "  # the bench phases ("module phase") a diagnostic of this round has written: a later one resumes that file
  while IFS= read -r cmd; do
    [ -n "$cmd" ] || continue
    budget=$(( $(left) - 20 ))
    set -- $cmd
    key="$3:$4"
    resume=""
    case "$seen" in *" $key "*) resume="--resume";; esac
    seen="$seen$key "
    run_phase "$round diagnostic" "$budget" $PYTHON ${cmd#python3 } --out "$WORK/$folder" --budget-s "$budget" $resume
  done < <($PARSE_PY -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1])).get("diagnostics", [])))' "$reg")
done
nvidia-smi --query-gpu=name,uuid,clocks.sm,temperature.gpu,power.draw --format=csv 2>&1 | tee -a "$LOG"
