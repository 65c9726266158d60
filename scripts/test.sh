#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, and runs every test under CTest.
# CUDA tests report "skipped" on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh "$@"
cd build
ctest --output-on-failure --parallel "$(nproc)" --timeout 600
