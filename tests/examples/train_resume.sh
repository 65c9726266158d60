#!/usr/bin/env bash
# frugal-train end to end on the real data set: a run interrupted after 3 steps and resumed
# to 6 ends with exactly the weights, buffers and optimizer state of a 6-step run; the
# checkpoint reads back identically in Python (bench/check_checkpoint.py, json + numpy);
# bad flags and damaged checkpoints are clear errors. Exits 77 (skipped) without the data.
# With WRITE_IMAGES, the same over a PNG class-folder tree through the threaded loader (2
# workers, random pad-crop augmentation), resumed in the middle of an epoch: the loader's
# position and every sample's random crop must come back too.
#   train_resume.sh FRUGAL_TRAIN SOURCE_DIR [WRITE_IMAGES]
set -euo pipefail
train=$1
src=$2
write_images=${3:-}
source "$(dirname "$0")/require_data.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A cosine schedule changes the rate every step, so the resumed run must also find its place in it.
run=("$train" --model cnn --threads 2 --lr-schedule cosine)
"${run[@]}" --max-steps 6 --save "$tmp/straight.safetensors" > "$tmp/straight.log"
"${run[@]}" --max-steps 3 --save "$tmp/resumed.safetensors" > /dev/null
"${run[@]}" --max-steps 6 --resume "$tmp/resumed.safetensors" \
  --save "$tmp/resumed.safetensors" --metrics-json "$tmp/metrics.json" > /dev/null
# Every tensor's dtype, shape and crc32, as frugal held them when saving.
if ! cmp -s "$tmp/straight.safetensors.digest.json" "$tmp/resumed.safetensors.digest.json"; then
  echo "FAIL: the resumed run's checkpoint differs from the uninterrupted run's" >&2
  diff "$tmp/straight.safetensors.digest.json" "$tmp/resumed.safetensors.digest.json" | head >&2
  exit 1
fi
if [ -n "$write_images" ]; then
  data=/usr/share/datasets/fashion-mnist
  "$write_images" --data "$data" --split train --count 600 --output "$tmp/png/train" > /dev/null
  "$write_images" --data "$data" --split test --count 100 --output "$tmp/png/test" > /dev/null
  folder=("$train" --model cnn --threads 1 --data "$tmp/png" --workers 2 --image-size 28
          --augment pad-crop --batch-size 16 --max-steps 30 --seed 5)
  "${folder[@]}" --save "$tmp/folder-straight.safetensors" > /dev/null 2>&1
  "${folder[@]}" --max-steps 13 --save "$tmp/folder-resumed.safetensors" > /dev/null 2>&1
  "${folder[@]}" --resume "$tmp/folder-resumed.safetensors" \
    --save "$tmp/folder-resumed.safetensors" > /dev/null 2>&1
  if ! cmp -s "$tmp/folder-straight.safetensors.digest.json" "$tmp/folder-resumed.safetensors.digest.json"; then
    echo "FAIL: the class-folder run resumed at batch 13 of 38 (2 workers, pad-crop) differs" >&2
    exit 1
  fi
fi
grep -q '"steps": 6' "$tmp/metrics.json" || { echo "FAIL: metrics-json lacks steps 6" >&2; exit 1; }
for key in model epochs steps test_accuracy train_images_per_sec peak_allocated_bytes \
           peak_reserved_bytes peak_rss_bytes parameters; do
  grep -q "\"$key\"" "$tmp/metrics.json" || { echo "FAIL: metrics-json lacks $key" >&2; exit 1; }
done
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  /usr/bin/python3 "$src/bench/check_checkpoint.py" "$tmp/straight.safetensors" \
    "$tmp/straight.safetensors.digest.json" > /dev/null
fi
# Errors name what is wrong, and exit 2 without a crash.
expect_error() {
  local pattern=$1
  shift
  set +e
  "$train" "$@" > "$tmp/err.log" 2>&1
  local rc=$?
  set -e
  if [ "$rc" -ne 2 ] || ! grep -q "$pattern" "$tmp/err.log"; then
    echo "FAIL: '$*' exited $rc, expected 2 and '$pattern':" >&2
    cat "$tmp/err.log" >&2
    exit 1
  fi
}
expect_error "resnet" --model resnet --max-steps 1
expect_error "adam" --optimizer adam --max-steps 1
expect_error "warmup" --lr-schedule warmup --max-steps 1
expect_error "mobilenet" --model mobilenet --resume "$tmp/straight.safetensors" --max-steps 1
expect_error "lr-schedule cosine" --resume "$tmp/straight.safetensors" --max-steps 1
head -c 100 "$tmp/straight.safetensors" > "$tmp/truncated.safetensors"
expect_error "truncated.safetensors" --resume "$tmp/truncated.safetensors" --max-steps 1
expect_error "nowhere" --data /nowhere --max-steps 1
echo "ok: resumed run identical to the uninterrupted one${write_images:+ (idx, and a PNG folder through 2 workers with augmentation)}"
