#!/usr/bin/env bash
# Training benchmarks, recorded in bench/results/train-DATE.md: images/s of training (batch
# 128) and inference (batch 512) for cnn, mobilenet and mlp, frugal against PyTorch at its
# fastest and out of the box, alternating (A B A B ...); and the peak RSS of frugal-train
# against the PyTorch reference training the same steps, each in a fresh process.
#   bash bench/train.sh [REPEATS] [RSS_STEPS]   (FRUGAL_BUILD_DIR: the build to use, default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-3}
rss_steps=${2:-100}
build=${FRUGAL_BUILD_DIR:-build}
FRUGAL_BUILD_DIR=$build bash scripts/build.sh >/dev/null
tmp=$(mktemp -d)
out=bench/results/train-$(date +%Y-%m-%d).md

source bench/torch/env.sh

for model in cnn mobilenet mlp; do
  for i in $(seq "$repeats"); do
    "$build"/bench/frugal-bench-train --model "$model" --threads 2 --json > "$tmp/speed-$model-frugal-$i.json"
    torch_fast bench/torch/train.py --model "$model" --threads 2 --bench > "$tmp/speed-$model-torch_fast-$i.json"
    torch_default bench/torch/train.py --model "$model" --threads 2 --bench > "$tmp/speed-$model-torch_default-$i.json"
  done
  "$build"/examples/frugal-train --model "$model" --threads 2 --max-steps "$rss_steps" \
    --metrics-json "$tmp/rss-$model-frugal.json" > /dev/null
  torch_fast bench/torch/train.py --model "$model" --threads 2 --max-steps "$rss_steps" > "$tmp/rss-$model-torch_fast.json"
done
python3 bench/summarize_train.py "$tmp" "$repeats" "$rss_steps" > "$out"
cat "$out"
echo "written to $out"
