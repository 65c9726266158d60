#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, and runs every test under CTest.
# Where the CUDA toolkit is present, build/ is the CUDA build, and the CPU-only build
# (build-cpu/, -DFRUGAL_CUDA=OFF) is built and tested as well, since both must keep working.
# CUDA tests report "skipped" on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
run_tests() { (cd "$1" && ctest --output-on-failure --parallel "$(nproc)" --timeout 600); }
bash scripts/build.sh "$@"
run_tests build
if grep -q '^FRUGAL_WITH_CUDA_BUILT:INTERNAL=ON' build/CMakeCache.txt; then
  echo "== the CPU-only build (-DFRUGAL_CUDA=OFF) =="
  FRUGAL_BUILD_DIR=build-cpu bash scripts/build.sh -DFRUGAL_CUDA=OFF
  run_tests build-cpu
fi
