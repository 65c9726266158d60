#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ (clang, -fsanitize=fuzzer,address,undefined over
# the whole library, stb_image with ASan only: see data/CMakeLists.txt) and runs each from a
# seed corpus of valid inputs until RUNS executions (default 1,000,000) or SECONDS (default
# 600) have passed, printing libFuzzer's final statistics. Fails on any crash, sanitizer report,
# leak, or allocation above the bounds below. The g++ build never compiles these.
#   scripts/fuzz.sh [RUNS] [SECONDS] [TARGET...]
# Bounds: inputs of at most 64 KiB (-max_len); no malloc above 256 MiB (-malloc_limit_mb) and
# frugal's own allocator capped at 256 MiB (tests/fuzz/fuzz_input.h); RSS below 2 GiB.
set -euo pipefail
runs=${1:-1000000}
seconds=${2:-600}
shift 2 || shift $#
root=$(cd "$(dirname "$0")/.." && pwd)
out=${FRUGAL_FUZZ_DIR:-$root/build-fuzz}
all_targets=(fuzz_safetensors fuzz_idx fuzz_trace fuzz_alloc_conf fuzz_train_options fuzz_checkpoint
             fuzz_image_decode fuzz_shard_reader)
targets=("$@")
((${#targets[@]})) || targets=("${all_targets[@]}")

bash "$root/scripts/install-deps.sh" --sanitize
# For this machine's CPU only (-DFRUGAL_NATIVE=ON): one copy of the kernels builds 4x faster.
cmake -S "$root" -B "$out" -G Ninja -DFRUGAL_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DFRUGAL_NATIVE=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DFRUGAL_SANITIZE=address,undefined -DFRUGAL_FUZZ=ON -DFRUGAL_BUILD_TESTS=OFF >/dev/null
cmake --build "$out" --parallel "$(nproc)" --target "${targets[@]}" make_seeds make_file_seeds

# Seed corpora (tests/fuzz/make_seeds.cpp, make_file_seeds.cpp), and every input that once
# crashed a target (tests/fuzz/regressions/<target>-*), which must keep passing.
corpus=$out/corpus
mkdir -p "$corpus/image" "$corpus/shard"
ASAN_OPTIONS=detect_leaks=0 "$out/tests/fuzz/make_seeds" "$corpus/image" "$corpus/shard" >/dev/null
ASAN_OPTIONS=detect_leaks=0 "$out/tests/fuzz/make_file_seeds" "$corpus" >/dev/null
corpus_of() {
  case $1 in
    fuzz_image_decode) echo "$corpus/image" ;;
    fuzz_shard_reader) echo "$corpus/shard" ;;
    *) echo "$corpus/${1#fuzz_}" ;;
  esac
}
regression_prefix() {
  case $1 in
    fuzz_image_decode) echo image ;;
    fuzz_shard_reader) echo shard ;;
    *) echo "${1#fuzz_}" ;;
  esac
}

failed=0
for target in "${targets[@]}"; do
  dir=$(corpus_of "$target")
  cp "$root"/tests/fuzz/regressions/"$(regression_prefix "$target")"-* "$dir/" 2>/dev/null || true
  echo "== $target: up to $runs runs or $seconds s, from $(ls "$dir" | wc -l) seeds"
  log=$out/$target.log
  set +e
  "$out/tests/fuzz/$target" -runs="$runs" -max_total_time="$seconds" -max_len=65536 \
    -malloc_limit_mb=256 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -close_fd_mask=1 \
    -artifact_prefix="$out/$target-" "$dir" > "$log" 2>&1
  rc=$?
  set -e
  grep -E "^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==ERROR|SUMMARY)" "$log" || true
  if [ $rc -ne 0 ] || grep -q "ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|ERROR: libFuzzer\|runtime error" "$log"; then
    echo "FAIL: $target found a crash (exit $rc; see $log and $out/$target-crash-*)" >&2
    failed=1
  fi
done
[ $failed = 0 ] && echo "no crash found"
exit $failed
