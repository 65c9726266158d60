#!/usr/bin/env bash
# frugal's main job. For now: a tour of the caching allocator on the CPU, then the replay
# of a recorded CNN training trace on a simulated device with frugal's defaults and with
# PyTorch's default policy side by side.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
./build/examples/frugal-allocator-tour
echo
echo "== cnn-fixed.trace, frugal's defaults =="
./build/tools/frugal-alloc-replay bench/traces/cnn-fixed.trace --min-capacity
echo
echo "== cnn-fixed.trace, PyTorch's default policy (separate segments) =="
./build/tools/frugal-alloc-replay bench/traces/cnn-fixed.trace --min-capacity \
  --conf expandable_segments:False
