#!/usr/bin/env bash
# Builds the test suite with clang and a sanitizer into its own folder and runs it under CTest.
#   scripts/sanitize.sh asan [--fast] [CTEST_ARGS...]   AddressSanitizer + LeakSanitizer + UBSan (build-asan/)
#   scripts/sanitize.sh ubsan [--fast] [CTEST_ARGS...]  UndefinedBehaviorSanitizer alone (build-ubsan/)
#   scripts/sanitize.sh tsan [CTEST_ARGS...]            ThreadSanitizer, OpenMP seen through libarcher (build-tsan/)
# CTEST_ARGS pick tests, e.g. `-R allocator/`; without them the whole suite runs (tsan: the
# threaded tests, see TSAN_TESTS below). --fast (what CI runs) builds for this machine's CPU
# only (-DFRUGAL_NATIVE=ON: one copy of the kernels instead of one per instruction-set level)
# and leaves out the tests that take over 15 s under ASan: frugal-train's and frugal-memlab's
# end-to-end runs and the suites repeated per level (about 1100 of the suite's 1200 s).
# The build is CPU-only (-DFRUGAL_CUDA=OFF): the sanitizers cannot see into GPU kernels.
# A finding fails the test that caused it; the report is in CTest's output.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kind=${1:-asan}
shift || true

case "$kind" in
  asan) sanitizers=address,undefined ;;
  ubsan) sanitizers=undefined ;;
  tsan) sanitizers=thread ;;
  *) echo "error: unknown sanitizer '$kind' (expected asan, ubsan or tsan)" >&2; exit 2 ;;
esac
fast=0
if [ "${1:-}" = --fast ]; then
  fast=1
  shift
fi
suffix=
extra=()
if [ $fast = 1 ]; then
  suffix=-fast
  extra+=(-DFRUGAL_NATIVE=ON)
fi
dir=${FRUGAL_BUILD_DIR:-$root/build-$kind$suffix}

bash "$root/scripts/install-deps.sh" --sanitize
# -O1 keeps stack traces exact and the suite fast enough; -g gives them file:line.
cmake -S "$root" -B "$dir" -G Ninja -DFRUGAL_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DFRUGAL_SANITIZE="$sanitizers" "${extra[@]}" >/dev/null
cmake --build "$dir" --parallel "$(nproc)"

supp=$root/scripts/sanitizers
# Allocation failures come back as nullptr, so that the allocator's out-of-memory paths (which
# ask the host for more than it has on purpose) report an error instead of aborting the test.
export ASAN_OPTIONS="allocator_may_return_null=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:abort_on_error=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export TSAN_OPTIONS="suppressions=$supp/tsan.supp:ignore_noninstrumented_modules=1:halt_on_error=1:second_deadlock_stack=1:history_size=4${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
# OpenMPI launches ranks through its own daemons, which are not instrumented; ranks are.
export OMPI_MCA_rmaps_base_oversubscribe=1
if [ "$kind" = tsan ]; then
  # libarcher tells TSan about OpenMP's barriers and task dependences, which it cannot see in
  # libomp's own synchronisation; without it every parallel region reports races.
  archer=$(ls /usr/lib/llvm-*/lib/libarcher.so 2>/dev/null | tail -1)
  [ -n "$archer" ] || { echo "error: libarcher.so not found (apt-get install libomp-dev)" >&2; exit 1; }
  export OMP_TOOL_LIBRARIES=$archer ARCHER_OPTIONS="verbose=0"
fi

args=("$@")
if [ "$kind" = tsan ] && [ ${#args[@]} -eq 0 ]; then
  # The threaded parts: the allocator across threads and streams, the DataLoader's workers,
  # the OpenMP kernels, and DistributedDataParallel's asynchronous all-reduce.
  TSAN_TESTS='^(allocator/|data/.*(DataLoader|loader|prefetch|pinned|worker)|kernels/|distributed/)'
  args=(-R "$TSAN_TESTS")
fi
if [ $fast = 1 ]; then
  args+=(-E '^(examples/(train_amp|train_resume|train_data|train_short|memlab)|nn/a few hundred SGD steps)')
fi
cd "$dir"
ctest --output-on-failure --parallel "$(nproc)" --timeout 1500 "${args[@]}"
