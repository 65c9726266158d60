#!/usr/bin/env bash
# frugal-train --data beyond the idx files: an ImageFolder tree of PNGs and packed shards, each
# through the DataLoader (--workers, --prefetch, --pin-memory), must train the mlp well above
# chance; the idx files through the DataLoader must give the InMemoryLoader's batches (the
# same losses); a damaged image fails naming its file, and --skip-bad counts it instead.
# Exits 77 (skipped) without the data set.
#   train_data.sh FRUGAL_TRAIN FRUGAL_PACK FRUGAL_BENCH_WRITE_IMAGES
set -euo pipefail
train=$1
pack=$2
write_images=$3
source "$(dirname "$0")/require_data.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

accuracy_of() { sed -n 's/.*"test_accuracy": \([0-9.]*\).*/\1/p' "$1" | head -1; }
loss_of() { sed -n 's/.*"train_loss": \([0-9.]*\).*/\1/p' "$1" | head -1; }
expect_above() {  # expect_above VALUE LIMIT WHAT
  awk -v v="$1" -v l="$2" 'BEGIN { exit !(v > l) }' || { echo "FAIL: $3: $1 is not above $2" >&2; exit 1; }
}

# An ImageFolder tree: 3,000 training and 1,000 test images as PNG files.
"$write_images" --data "$data" --split train --count 3000 --output "$tmp/folder/train" > /dev/null
"$write_images" --data "$data" --split test --count 1000 --output "$tmp/folder/test" > /dev/null
"$train" --model mlp --threads 1 --data "$tmp/folder" --workers 2 --prefetch 3 --epochs 1 --max-steps 23 \
  --metrics-json "$tmp/folder.json" | tee "$tmp/folder.log"
grep -q "imagefolder" "$tmp/folder.log" || { echo "FAIL: the run does not say it read an ImageFolder" >&2; exit 1; }
expect_above "$(accuracy_of "$tmp/folder.json")" 0.45 "ImageFolder test accuracy after 23 steps (chance: 0.1)"

# Shards packed from the idx files, read with pinned batches.
"$pack" --input "$data" --output "$tmp/shards" --split train --samples-per-shard 20000 > /dev/null
"$pack" --input "$data" --output "$tmp/shards" --split test > /dev/null
"$train" --model mlp --threads 1 --data "$tmp/shards" --workers 2 --pin-memory --max-steps 100 \
  --metrics-json "$tmp/shards.json" | tee "$tmp/shards.log"
grep -q "shards" "$tmp/shards.log" || { echo "FAIL: the run does not say it read shards" >&2; exit 1; }
expect_above "$(accuracy_of "$tmp/shards.json")" 0.7 "shard test accuracy after 100 steps"

# The idx files through the DataLoader (2 workers) against the InMemoryLoader: same batches.
"$train" --model mlp --threads 1 --max-steps 30 --metrics-json "$tmp/idx0.json" > /dev/null
"$train" --model mlp --threads 1 --max-steps 30 --workers 2 --metrics-json "$tmp/idx2.json" > /dev/null
l0=$(loss_of "$tmp/idx0.json")
l2=$(loss_of "$tmp/idx2.json")
echo "idx train loss: InMemoryLoader $l0, DataLoader with 2 workers $l2"
awk -v a="$l0" -v b="$l2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1e-3) }' || {
  echo "FAIL: the DataLoader's batches differ from the InMemoryLoader's (losses $l0 and $l2)" >&2
  exit 1
}

# A damaged PNG: an error naming it, or --skip-bad counting it.
bad=$(ls "$tmp/folder/train/coat/" | head -1)
head -c 60 "$tmp/folder/train/coat/$bad" > "$tmp/cut.png" && mv "$tmp/cut.png" "$tmp/folder/train/coat/$bad"
rc=0
"$train" --model mlp --threads 1 --data "$tmp/folder" --workers 2 --epochs 1 > "$tmp/bad.log" 2>&1 || rc=$?
if [[ $rc -ne 2 ]] || ! grep -q "coat/$bad" "$tmp/bad.log"; then
  echo "FAIL: a truncated PNG should stop the run (status 2) naming it; got status $rc:" >&2
  cat "$tmp/bad.log" >&2
  exit 1
fi
echo "refused as expected: $(grep -m1 "coat/$bad" "$tmp/bad.log")"
"$train" --model mlp --threads 1 --data "$tmp/folder" --workers 2 --epochs 1 --skip-bad \
  --metrics-json "$tmp/skip.json" > "$tmp/skip.log" 2>&1
grep -q '"skipped_files": 1' "$tmp/skip.json" || {
  echo "FAIL: --skip-bad should count 1 skipped file" >&2
  cat "$tmp/skip.json" >&2
  exit 1
}
echo "PASS"
