#!/usr/bin/env bash
# Crash safety of frugal-train's checkpoints: a run saving every step (--save-every 1) is
# killed with SIGKILL at KILLS random moments (while training, while writing the checkpoint,
# while loading it to resume); each time the next run resumes from the last checkpoint, and
# the run that finally completes ends with exactly the weights and optimizer state of a run
# never interrupted. A run that cannot load its checkpoint fails the test: no half-written
# file may be read as valid, nor a valid one lost. Exits 77 (skipped) without the data.
#   train_kill.sh FRUGAL_TRAIN SOURCE_DIR [KILLS]
set -euo pipefail
train=$1
src=$2
kills_wanted=${3:-20}
source "$(dirname "$0")/require_data.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
RANDOM=20261207  # the same moments on every run of the test

run=("$train" --model mlp --threads 1 --batch-size 16 --lr-schedule cosine --max-steps 150 --seed 3)
start=$(date +%s%N)
"${run[@]}" --save "$tmp/straight.safetensors" > "$tmp/straight.log"
run_ms=$((($(date +%s%N) - start) / 1000000))

kills=0 resumes=0 mid_write=0 starting=0 completed=0
check_same() {
  if ! cmp -s "$tmp/straight.safetensors.digest.json" "$tmp/ck.safetensors.digest.json"; then
    echo "FAIL: after $kills kills the completed run's checkpoint differs from the uninterrupted run's" >&2
    diff "$tmp/straight.safetensors.digest.json" "$tmp/ck.safetensors.digest.json" | head >&2
    exit 1
  fi
}
while ((kills < kills_wanted)); do
  args=("${run[@]}" --save "$tmp/ck.safetensors" --save-every 1)
  if [ -f "$tmp/ck.safetensors" ]; then
    args+=(--resume "$tmp/ck.safetensors")
    resumes=$((resumes + 1))
  fi
  "${args[@]}" > "$tmp/run.log" 2>&1 &
  pid=$!
  # A moment anywhere in a whole run: start-up and loading, training, saving.
  delay_ms=$((RANDOM % (run_ms + 1)))
  sleep "$((delay_ms / 1000)).$(printf '%03d' $((delay_ms % 1000)))"
  resuming=0
  [[ " ${args[*]} " == *" --resume "* ]] && resuming=1
  killed=0
  kill -KILL "$pid" 2>/dev/null && killed=1
  set +e
  { wait "$pid"; } 2>/dev/null  # (without the shell's "Killed" line)
  rc=$?
  set -e
  if [ $killed = 1 ] && [ "$rc" -eq 137 ]; then
    kills=$((kills + 1))
    # The temporary file is there from its creation to its rename: killed mid-write.
    if [ -f "$tmp/ck.safetensors.tmp" ] || [ -f "$tmp/ck.safetensors.digest.json.tmp" ]; then
      mid_write=$((mid_write + 1))
    elif [ $resuming = 1 ] && ! grep -q "resumed from" "$tmp/run.log"; then
      starting=$((starting + 1))  # before the checkpoint was loaded, or while it was
    fi
    continue
  fi
  if [ "$rc" -ne 0 ]; then
    echo "FAIL: a run after $kills kills exited $rc:" >&2
    cat "$tmp/run.log" >&2
    exit 1
  fi
  # It finished before the kill: it must have reached the uninterrupted run's state.
  check_same
  completed=$((completed + 1))
  rm -f "$tmp"/ck.safetensors*
done
# The last kill's checkpoint, run to the end.
args=("${run[@]}" --save "$tmp/ck.safetensors" --save-every 1)
if [ -f "$tmp/ck.safetensors" ]; then
  args+=(--resume "$tmp/ck.safetensors")
  resumes=$((resumes + 1))
fi
"${args[@]}" > "$tmp/run.log" 2>&1 || { echo "FAIL: the final resume failed:" >&2; cat "$tmp/run.log" >&2; exit 1; }
check_same
completed=$((completed + 1))
echo "ok: $kills kills ($mid_write while a checkpoint was being written, $starting while starting" \
  "up and loading one to resume), $resumes resumes, all loaded;" \
  "$completed completed runs identical to the uninterrupted one (run of $run_ms ms)"
