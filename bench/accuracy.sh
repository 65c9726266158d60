#!/usr/bin/env bash
# Test accuracy after 3 epochs of frugal-train, recorded in bench/results/: the default cnn
# run, and mobilenet with the constant rate of the benchmark protocol and with a cosine
# schedule. Each run is a fresh frugal-train with --metrics-json. (Speed is measured by
# bench/train.sh; these runs may share the machine.)
#   bash bench/accuracy.sh [SEED ...]     (default: seed 0)
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=("${@:-0}")
bash scripts/build.sh >/dev/null
out=bench/results/accuracy-$(date +%Y-%m-%d).md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
runs=("cnn constant" "mobilenet constant" "mobilenet cosine")
{
  echo "# Test accuracy after 3 epochs"
  echo
  echo "- date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "- commit: $(git rev-parse --short HEAD)"
  echo "- command: \`bash bench/accuracy.sh ${seeds[*]}\`; each row: \`frugal-train --model M --lr-schedule S --seed N\`"
  echo "  (SGD lr 0.05, momentum 0.9, batch 128, 2 threads, Fashion-MNIST's 60,000 / 10,000 images)"
  echo
  echo "| model | lr schedule | seed | epoch 1 | epoch 2 | epoch 3 |"
  echo "|---|---|---|---|---|---|"
} > "$tmp/table.md"
for seed in "${seeds[@]}"; do
  for run in "${runs[@]}"; do
    read -r model schedule <<< "$run"
    json="$tmp/$model-$schedule-$seed.json"
    ./build/examples/frugal-train --model "$model" --lr-schedule "$schedule" --seed "$seed" \
      --metrics-json "$json" > /dev/null
    /usr/bin/python3 - "$json" "$schedule" "$seed" >> "$tmp/table.md" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
acc = " | ".join(f"{100 * e['test_accuracy']:.2f}%" for e in m["per_epoch"])
print(f"| {m['model']} | {sys.argv[2]} | {sys.argv[3]} | {acc} |")
PY
  done
done
cp "$tmp/table.md" "$out"
cat "$out"
echo "written to $out"
