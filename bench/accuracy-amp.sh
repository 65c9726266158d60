#!/usr/bin/env bash
# Test accuracy after 3 epochs of the default cnn run in float32, --amp bf16 and --amp fp16,
# recorded in bench/results/accuracy-amp-DATE.md with the difference to float32. Each run is
# a fresh frugal-train with --metrics-json. (Slow: three full runs per seed.)
#   bash bench/accuracy-amp.sh [SEED ...]     (default: seed 0; FRUGAL_BUILD_DIR, default build/;
#                                              AMPS="off bf16" runs only those modes)
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=("${@:-0}")
build=${FRUGAL_BUILD_DIR:-build}
cmake --build "$build" --target frugal-train > /dev/null
amps=(${AMPS:-off bf16 fp16})
out=bench/results/accuracy-amp-$(date +%Y-%m-%d)-seeds-$(IFS=-; echo "${seeds[*]}").md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for seed in "${seeds[@]}"; do
  for amp in "${amps[@]}"; do
    "$build/examples/frugal-train" --amp "$amp" --seed "$seed" --threads 2 --metrics-json "$tmp/$amp-$seed.json" > /dev/null
  done
done
python3 bench/summarize_accuracy_amp.py "$tmp" "${seeds[@]}" > "$out"
cat "$out"
echo "written to $out"
