#!/usr/bin/env bash
# frugal's main job: trains the cnn on Fashion-MNIST for 3 epochs with frugal-train, showing
# loss, accuracy, images/s and memory as it goes. Extra arguments go to frugal-train
# (`bash scripts/run.sh --model mobilenet --epochs 1`, `--help` for all of them).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
./build/examples/frugal-train "$@"
