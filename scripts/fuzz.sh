#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ with clang (-fsanitize=fuzzer,address,undefined;
# stb_image with address only, see below)
# and runs each for SECONDS seconds (default 180) from a seed corpus of valid files, printing
# libFuzzer's final statistics. The normal g++ build never compiles these.
#   scripts/fuzz.sh [SECONDS] [OUT_DIR]
set -euo pipefail
seconds=${1:-180}
out=${2:-build-fuzz}
root=$(cd "$(dirname "$0")/.." && pwd)
cxx=${CXX_FUZZ:-clang++}
command -v "$cxx" >/dev/null || { echo "error: $cxx not found (apt-get install clang)" >&2; exit 1; }
mkdir -p "$out"
# Images over 512x512 pixels are refused in the fuzz build, so that each input runs in
# milliseconds instead of decoding a 64-megapixel frame that a 100-byte header can claim.
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -DFRUGAL_MAX_IMAGE_PIXELS=262144 -I"$root" -I/usr/include)
# stb_image itself (Debian's header, not ours to change) runs under AddressSanitizer only: on
# malformed JPEG streams it shifts by more than 31 bits (stb_image.h, stbi__grow_buffer_unsafe),
# undefined behaviour that UBSan would report on every run but that reads and writes nothing
# out of bounds. Every frugal source keeps UBSan.
echo "building stb_image (AddressSanitizer only)"
"$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer-no-link,address -DFRUGAL_MAX_IMAGE_PIXELS=262144 -I"$root" \
  -c "$root/data/stb_image_impl.cpp" -o "$out/stb_image_impl.o"
sources=("$root/common/error.cpp" "$root/data/image.cpp" "$out/stb_image_impl.o")
echo "building image decode fuzzer"
"$cxx" "${flags[@]}" "${sources[@]}" "$root/tests/fuzz/fuzz_image_decode.cpp" -lz -o "$out/fuzz_image_decode"
echo "building shard reader fuzzer"
"$cxx" "${flags[@]}" "${sources[@]}" "$root/data/shard.cpp" "$root/data/file_io.cpp" \
  "$root/tests/fuzz/fuzz_shard_reader.cpp" -lz -o "$out/fuzz_shard_reader"

# Seed corpora: small valid PNG/JPEG files and raw and encoded shards (tests/fuzz/make_seeds.cpp).
mkdir -p "$out/corpus_image" "$out/corpus_shard"
"$cxx" -std=c++20 -O1 -I"$root" "$root/common/error.cpp" "$root/data/image.cpp" "$root/data/stb_image_impl.cpp" \
  "$root/data/file_io.cpp" "$root/data/shard.cpp" "$root/tests/fuzz/make_seeds.cpp" -lz -o "$out/make_seeds"
"$out/make_seeds" "$out/corpus_image" "$out/corpus_shard"
# Inputs that once crashed a target stay in its corpus (tests/fuzz/regressions/).
cp "$root"/tests/fuzz/regressions/image-* "$out/corpus_image/" 2>/dev/null || true
cp "$root"/tests/fuzz/regressions/shard-* "$out/corpus_shard/" 2>/dev/null || true

for target in fuzz_image_decode fuzz_shard_reader; do
  corpus=$out/corpus_image
  [ $target = fuzz_shard_reader ] && corpus=$out/corpus_shard
  echo "running $target for $seconds s"
  "$out/$target" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$out/" \
    "$corpus" 2>&1 | tee "$out/$target.log" | grep -E "^(#[0-9]+.*(DONE|pulse)|stat::|==.*ERROR|SUMMARY)" || true
  if grep -q "ERROR: AddressSanitizer\|ERROR: libFuzzer\|runtime error" "$out/$target.log"; then
    echo "FAIL: $target found a crash (see $out/$target.log and the crash-* file)" >&2
    exit 1
  fi
done
echo "no crash found"
