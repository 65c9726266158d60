#!/bin/bash
# Runs the activation-checkpointing and batch-size-finder benchmarks whose figures are in
# bench/results/checkpoint-*.md, printing the machine's load before each run (timings on a
# shared machine are only comparable as the alternating ratios the programs report).
# Usage: bench/checkpoint.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: bench/checkpoint.sh BUILD_DIR}
ckpt="$build/bench/frugal-bench-checkpoint"
finder="$build/bench/frugal-bench-batch-size"
for program in "$ckpt" "$finder"; do
  [ -x "$program" ] || { echo "missing $program: build the target first" >&2; exit 2; }
done
run() {
  echo "\$ $*"
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
  "$@"
  echo
}
# The network, 20 conv blocks, at frugal's benchmark thread count and at one thread.
# On a loaded machine libgomp's spinning threads wait on each other for whole time slices:
# OMP_WAIT_POLICY=passive makes them sleep instead, which keeps 2-thread timings meaningful.
run "$ckpt" --threads 2 --batch-size 8 --segments 2,4,6 --repeats 9 --steps 4
run env OMP_WAIT_POLICY=passive "$ckpt" --threads 2 --batch-size 16 --segments 2,4,6 --repeats 15 --steps 3
run "$ckpt" --threads 1 --batch-size 16 --segments 2,4,6 --repeats 15 --steps 3
# The benchmark models at the training batch: what --checkpoint-activations gives them.
run "$ckpt" --model cnn --threads 1 --batch-size 128 --segments 2,4,6 --repeats 5 --steps 2
run "$ckpt" --model mobilenet --threads 1 --batch-size 128 --segments 2,4,6 --repeats 5 --steps 2
run "$finder" --threads 2
