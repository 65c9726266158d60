#!/usr/bin/env bash
# Allocator benchmarks, recorded in bench/results/: frugal-alloc-bench repeated (the shared
# machine drifts from run to run, so each figure is the median over the repeats, with the
# spread), and frugal-alloc-replay on the recorded CNN trace with frugal's defaults and
# with PyTorch's default policy (separate segments).
#   bash bench/alloc.sh [REPEATS]        (FRUGAL_BUILD_DIR picks the build folder, default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-5}
dir=${FRUGAL_BUILD_DIR:-build}
bash scripts/install-deps.sh >/dev/null
if [ ! -f "$dir/CMakeCache.txt" ]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$dir" --target frugal-alloc-bench frugal-alloc-replay >/dev/null
out=bench/results/allocator-$(date +%Y-%m-%d).md
tmp=$(mktemp -d)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for i in $(seq "$repeats"); do
  ./$dir/tools/frugal-alloc-bench --pairs 200000 --seed "$i" --json > "$tmp/bench-$i.json"
done
./$dir/tools/frugal-alloc-replay bench/traces/cnn-fixed.trace --min-capacity --json > "$tmp/replay-default.json"
./$dir/tools/frugal-alloc-replay bench/traces/cnn-fixed.trace --min-capacity \
  --conf expandable_segments:False --json > "$tmp/replay-pytorch.json"
echo "load average before and after: $load_before / $(cut -d' ' -f1-3 /proc/loadavg)" > "$tmp/load.txt"
python3 bench/summarize_alloc.py "$tmp" "$repeats" > "$out"
cat "$out"
echo "written to $out"
