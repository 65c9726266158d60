#!/usr/bin/env bash
# Engine benchmarks, recorded in bench/results/engine-DATE.md: op dispatch overhead against
# PyTorch eager, GEMM through frugal against Eigen called directly (512 and 1024, 1 and 2
# threads), and conv2d forward / forward+backward per layer of the cnn and mobilenet models
# at batch 128 against PyTorch at its fastest setting and out of the box (see
# ../shared/BENCHMARKS.md). frugal and PyTorch runs alternate (A B A B ...).
#   bash bench/engine.sh [REPEATS]   (FRUGAL_BUILD_DIR: the build to use, default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-3}
build=${FRUGAL_BUILD_DIR:-build}
FRUGAL_BUILD_DIR=$build bash scripts/build.sh >/dev/null
tmp=$(mktemp -d)
out=bench/results/engine-$(date +%Y-%m-%d).md

source bench/torch/env.sh

for i in $(seq "$repeats"); do
  "$build"/bench/frugal-bench-op-overhead --json > "$tmp/ops-frugal-$i.json"
  torch_fast bench/torch/op_overhead.py > "$tmp/ops-torch_fast-$i.json"
  torch_default bench/torch/op_overhead.py > "$tmp/ops-torch_default-$i.json"
done
for size in 512 1024; do
  for threads in 1 2; do
    "$build"/bench/frugal-bench-gemm --size "$size" --threads "$threads" --reps 21 --json \
      > "$tmp/gemm-$size-$threads.json"
  done
done
for model in cnn mobilenet; do
  for i in $(seq "$repeats"); do
    "$build"/bench/frugal-bench-conv --model "$model" --batch 128 --threads 2 --json \
      > "$tmp/conv-$model-frugal-$i.json"
    torch_fast bench/torch/conv_layers.py --model "$model" --batch 128 --threads 2 \
      > "$tmp/conv-$model-torch_fast-$i.json"
    torch_default bench/torch/conv_layers.py --model "$model" --batch 128 --threads 2 \
      > "$tmp/conv-$model-torch_default-$i.json"
  done
done
python3 bench/summarize_engine.py "$tmp" "$repeats" > "$out"
cat "$out"
echo "written to $out"
