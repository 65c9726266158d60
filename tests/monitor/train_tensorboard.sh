#!/usr/bin/env bash
# frugal-train --tensorboard: a short run writes one event file whose records all pass their
# CRCs, with every per-step curve at every step and the epoch's figures. Exits 77 (skipped)
# without the data set.
#   train_tensorboard.sh FRUGAL_TRAIN FRUGAL_TEST_READ_EVENTS
set -euo pipefail
train=$1
read_events=$2
source "$(dirname "$0")/../examples/require_data.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
steps=30
"$train" --model mlp --threads 2 --max-steps $steps --tensorboard "$tmp/tb" > "$tmp/log"
files=("$tmp"/tb/events.out.tfevents.*)
[ ${#files[@]} -eq 1 ] && [ -s "${files[0]}" ] || { echo "FAIL: expected one event file in $tmp/tb" >&2; exit 1; }
"$read_events" "${files[0]}" > "$tmp/scalars"
for tag in memory/allocated_MiB memory/reserved_MiB memory/peak_allocated_MiB memory/host_rss_MiB \
           train/loss train/accuracy train/images_per_sec; do
  n=$(awk -F'\t' -v t="$tag" '$2 == t' "$tmp/scalars" | wc -l)
  [ "$n" -eq $steps ] || { echo "FAIL: $tag has $n points, expected $steps" >&2; exit 1; }
done
# Steps 1..N, each once per tag; memory and loss values make sense.
awk -F'\t' '$2 == "train/loss" { if ($1 != ++s || $3 <= 0 || $3 > 10) exit 1 }' "$tmp/scalars" ||
  { echo "FAIL: train/loss steps or values are wrong" >&2; exit 1; }
awk -F'\t' '$2 == "memory/allocated_MiB" && $3 <= 0 { exit 1 }' "$tmp/scalars" ||
  { echo "FAIL: allocated MiB not positive" >&2; exit 1; }
grep -q "epoch/test_accuracy" "$tmp/scalars" || { echo "FAIL: no epoch/test_accuracy" >&2; exit 1; }
echo "tensorboard: $(wc -l < "$tmp/scalars") scalars, every CRC valid"
