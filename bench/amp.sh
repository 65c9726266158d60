#!/usr/bin/env bash
# Mixed-precision benchmarks, recorded in bench/results/amp-DATE.md: the memory of one
# training step in float32, bf16 and fp16 (the allocator's exact counters), and training and
# inference images/s of --amp bf16 against float32 and against PyTorch's CPU autocast (bf16)
# on the same model, runs alternating (A B A B ...); PyTorch at its fastest (bench/torch/env.sh).
# Test accuracies after 3 epochs come from bench/accuracy-amp.sh (slow; run it separately).
#   bash bench/amp.sh [REPEATS] [MODELS]   (FRUGAL_BUILD_DIR: the build to use, default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-3}
models=${2:-cnn mobilenet}
build=${FRUGAL_BUILD_DIR:-build}
cmake --build "$build" --target frugal-bench-train frugal-bench-amp-memory > /dev/null
tmp=$(mktemp -d)
out=bench/results/amp-$(date +%Y-%m-%d).md
source bench/torch/env.sh

for model in cnn mobilenet; do
  "$build/bench/frugal-bench-amp-memory" --model "$model" --json > "$tmp/memory-$model.json"
done
uptime > "$tmp/load-before"
for model in $models; do
  for i in $(seq "$repeats"); do
    for amp in off bf16; do
      "$build/bench/frugal-bench-train" --model "$model" --threads 2 --amp "$amp" --json > "$tmp/speed-$model-frugal-$amp-$i.json"
      torch_fast bench/torch/train.py --model "$model" --threads 2 --bench --amp "$amp" > "$tmp/speed-$model-torch-$amp-$i.json"
    done
  done
done
uptime > "$tmp/load-after"
python3 bench/summarize_amp.py "$tmp" "$repeats" "$models" > "$out"
cat "$out"
echo "written to $out"
