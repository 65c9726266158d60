#!/usr/bin/env bash
# A short real training run: 300 steps of the mlp on Fashion-MNIST must take the test
# accuracy far above chance (10%), and the run must report its figures, the kernels' level
# among them; a FRUGAL_CPU_ISA that cannot run stops it before training, named. Exits 77
# (skipped) without the data set.
#   train_short.sh FRUGAL_TRAIN
set -euo pipefail
train=$1
source "$(dirname "$0")/require_data.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$train" --model mlp --threads 2 --max-steps 300 --metrics-json "$tmp/m.json" | tee "$tmp/log"
accuracy=$(sed -n 's/.*"test_accuracy": \([0-9.]*\).*/\1/p' "$tmp/m.json" | head -1)
loss=$(sed -n 's/.*"train_loss": \([0-9.]*\).*/\1/p' "$tmp/m.json" | head -1)
echo "test accuracy $accuracy, mean train loss $loss"
isa=$(sed -n 's/.*"cpu_isa": "\([a-z0-9_]*\)".*/\1/p' "$tmp/m.json" | head -1)
[[ -n $isa ]] && grep -q "^kernels: $isa" "$tmp/log" || {
  echo "FAIL: the metrics and the log must name the kernels' level (got '$isa')" >&2
  exit 1
}
if FRUGAL_CPU_ISA=avx3 "$train" --model mlp --max-steps 1 >"$tmp/bad" 2>&1; then
  echo "FAIL: FRUGAL_CPU_ISA=avx3 was accepted" >&2
  exit 1
fi
grep -q "FRUGAL_CPU_ISA=avx3 is not a level" "$tmp/bad" || {
  echo "FAIL: FRUGAL_CPU_ISA=avx3 was refused without naming it:" >&2
  cat "$tmp/bad" >&2
  exit 1
}
awk -v a="$accuracy" -v l="$loss" 'BEGIN { exit !(a > 0.78 && l < 1.0) }' || {
  echo "FAIL: after 300 steps expected test accuracy > 0.78 and mean train loss < 1.0 (ln 10 = 2.30 at chance)" >&2
  exit 1
}
