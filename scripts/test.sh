#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, and runs every test under CTest.
# Where the CUDA toolkit is present, build/ is the CUDA build (CUDA tests report "skipped" on a
# machine without a GPU). Then the CPU-only build (-DFRUGAL_CUDA=OFF) is built with clang
# under AddressSanitizer and UBSan and runs the tests that take under 15 s there
# (scripts/sanitize.sh asan --fast): both configurations must keep working, and memory errors,
# leaks and undefined behaviour fail the run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh "$@"
(cd build && ctest --output-on-failure --parallel "$(nproc)" --timeout 600)
echo "== the CPU-only build under AddressSanitizer + UBSan (scripts/sanitize.sh asan --fast) =="
bash scripts/sanitize.sh asan --fast
