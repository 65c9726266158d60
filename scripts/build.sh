#!/usr/bin/env bash
# Configures (Ninja, Release) and builds frugal into build/. Extra arguments go to CMake,
# e.g. -DFRUGAL_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build --parallel "$(nproc)"
