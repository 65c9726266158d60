#!/usr/bin/env bash
# Allocator benchmarks, recorded in bench/results/: frugal-alloc-bench repeated (the shared
# machine drifts from run to run, so each figure is the median over the repeats, with the
# spread), and frugal-alloc-replay on the recorded CNN trace with frugal's defaults and
# with PyTorch's default policy (separate segments).
#   bash bench/alloc.sh [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-5}
bash scripts/build.sh >/dev/null
out=bench/results/allocator-$(date +%Y-%m-%d).md
tmp=$(mktemp -d)
for i in $(seq "$repeats"); do
  ./build/tools/frugal-alloc-bench --pairs 200000 --seed "$i" --json > "$tmp/bench-$i.json"
done
./build/tools/frugal-alloc-replay bench/traces/cnn-fixed.trace --min-capacity --json > "$tmp/replay-default.json"
./build/tools/frugal-alloc-replay bench/traces/cnn-fixed.trace --min-capacity \
  --conf expandable_segments:False --json > "$tmp/replay-pytorch.json"
python3 bench/summarize_alloc.py "$tmp" "$repeats" > "$out"
cat "$out"
echo "written to $out"
