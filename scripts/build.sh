#!/usr/bin/env bash
# Configures (Ninja, Release) and builds frugal into build/ (or $FRUGAL_BUILD_DIR). Extra
# arguments go to CMake, e.g. -DFRUGAL_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${FRUGAL_BUILD_DIR:-build}
bash scripts/install-deps.sh
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$dir" --parallel "$(nproc)"
