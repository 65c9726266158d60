#!/usr/bin/env bash
# frugal-ddp-train end to end on 2 ranks: 30 steps of the mlp must bring the global loss well
# under chance (ln 10 = 2.30) and the test accuracy far above chance (0.1), both ranks must
# report their batch and peak, and rank 0 must write the JSON. Exits 77 (skipped) without
# the data set.
#   ddp_train.sh MPIEXEC FRUGAL_DDP_TRAIN
set -euo pipefail
mpiexec=$1
train=$2
source "$(dirname "$0")/../examples/require_data.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$train" --help | grep -q -- "--metrics-json"
OMP_NUM_THREADS=1 "$mpiexec" -np 2 --allow-run-as-root --oversubscribe "$train" --model mlp --batch-size 64 \
  --max-steps 30 --metrics-json "$tmp/m.json" | tee "$tmp/log"
test "$(grep -c '^rank [01]/2: batch 32, peak allocated' "$tmp/log")" = 2
loss=$(sed -n 's/.*"last_loss": \([0-9.]*\).*/\1/p' "$tmp/m.json")
grep -q '"world_size": 2' "$tmp/m.json"
grep -q '"peak_allocated_bytes_per_rank": \[[0-9]*,[0-9]*\]' "$tmp/m.json"
accuracy=$(sed -n 's/.*"test_accuracy": \([0-9.]*\).*/\1/p' "$tmp/m.json")
awk -v l="$loss" -v a="$accuracy" 'BEGIN { exit !(l < 1.2 && a > 0.6) }' || {
  echo "FAIL: last loss $loss and test accuracy $accuracy, expected < 1.2 and > 0.6 (chance: 0.1) after 30 steps" >&2
  exit 1
}
# A global batch the ranks cannot share evenly is refused with a message, not a crash.
if "$mpiexec" -np 2 --allow-run-as-root --oversubscribe "$train" --batch-size 63 >"$tmp/bad" 2>&1; then
  echo "FAIL: --batch-size 63 on 2 ranks was accepted" >&2; exit 1
fi
grep -q "multiple of the world size" "$tmp/bad"
echo "ok: last loss $loss, test accuracy $accuracy"
