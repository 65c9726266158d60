#!/usr/bin/env bash
# frugal-train with --amp fp16 and --accum: a run interrupted after 2 steps and resumed to 4
# ends with exactly the weights, optimizer state and loss scale of a 4-step run (the scaler's
# state travels in the checkpoint); the metrics name the mode; bad --amp/--accum values and a
# resume under another --amp are clear errors; --auto-batch-size keeps the step within its
# --memory-budget; --checkpoint-activations trains; --memory-report writes the timeline. Exits 77
# (skipped) without the data set.
#   train_amp.sh FRUGAL_TRAIN
set -euo pipefail
train=$1
source "$(dirname "$0")/require_data.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run=("$train" --model cnn --threads 2 --amp fp16 --accum 2)
"${run[@]}" --max-steps 4 --save "$tmp/straight.safetensors" --metrics-json "$tmp/metrics.json" > "$tmp/straight.log"
"${run[@]}" --max-steps 2 --save "$tmp/resumed.safetensors" > /dev/null
"${run[@]}" --max-steps 4 --resume "$tmp/resumed.safetensors" --save "$tmp/resumed.safetensors" > /dev/null
if ! cmp -s "$tmp/straight.safetensors.digest.json" "$tmp/resumed.safetensors.digest.json"; then
  echo "FAIL: the resumed fp16 run's checkpoint differs from the uninterrupted run's" >&2
  diff "$tmp/straight.safetensors.digest.json" "$tmp/resumed.safetensors.digest.json" | head >&2
  exit 1
fi
grep -q '"scaler.scale"' "$tmp/straight.safetensors.digest.json" ||
  { echo "FAIL: the fp16 checkpoint holds no loss scale" >&2; exit 1; }
for pair in '"amp": "fp16"' '"accum": 2' '"skipped_steps": 0' '"loss_scale": 65536'; do
  grep -q "$pair" "$tmp/metrics.json" || { echo "FAIL: metrics-json lacks $pair" >&2; cat "$tmp/metrics.json" >&2; exit 1; }
done

# The batch-size finder picks the batch, whose measured step peak fits the budget; activation
# checkpointing trains the same model with less memory.
"$train" --threads 2 --auto-batch-size --memory-budget 150M --max-steps 1 --metrics-json "$tmp/auto.json" > "$tmp/auto.log"
grep -q "batch-size finder: .* budget 150.00 MiB" "$tmp/auto.log" || { echo "FAIL: no finder line" >&2; cat "$tmp/auto.log" >&2; exit 1; }
python3 - "$tmp/auto.json" "$tmp/auto.log" <<'PY'
import json, re, sys
m = json.load(open(sys.argv[1]))
line = re.search(r"batch (\d+), predicted ([\d.]+) MiB, measured ([\d.]+) MiB, budget 150.00 MiB", open(sys.argv[2]).read())
assert line, "no finder line"
batch, predicted, measured = int(line[1]), float(line[2]), float(line[3])
assert m["batch_size"] == batch > 16, (m["batch_size"], batch)
assert measured <= 150 and abs(predicted - measured) <= 0.05 * measured, (predicted, measured)
PY
"$train" --threads 2 --checkpoint-activations --max-steps 2 --memory-report "$tmp/memory.html" > /dev/null
# The memory timeline: one page, its events tagged with the ops that caused them.
grep -q "conv2d backward" "$tmp/memory.html" || { echo "FAIL: the memory report names no op" >&2; exit 1; }

expect_error() {
  local pattern=$1
  shift
  set +e
  "$train" "$@" > "$tmp/err.log" 2>&1
  local rc=$?
  set -e
  if [ "$rc" -ne 2 ] || ! grep -q -- "$pattern" "$tmp/err.log"; then
    echo "FAIL: '$*' exited $rc, expected 2 and '$pattern':" >&2
    cat "$tmp/err.log" >&2
    exit 1
  fi
}
expect_error "--amp must be off, bf16 or fp16, got 'fp8'" --amp fp8 --max-steps 1
expect_error "--accum must be between 1 and --batch-size" --accum 0 --max-steps 1
expect_error "--accum must be between 1 and --batch-size" --accum 129 --max-steps 1
expect_error "made with --amp fp16 but this run uses --amp off" --resume "$tmp/straight.safetensors" --max-steps 1
expect_error "memory-budget" --auto-batch-size --memory-budget lots --max-steps 1
echo "ok: fp16 with accumulation resumes exactly; bad options refused"
