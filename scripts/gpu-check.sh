#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, as one command for a machine without network: builds
# frugal there with CUDA (the Debian headers come from DEPS, made by pack-gpu-deps.sh), runs
# the CUDA tests, and times malloc+free pairs on the GPU through frugal's caching allocator
# against cudaMalloc/cudaFree and cudaMallocAsync; prints one short table at the end. Logs
# and JSON go to $OUT (or /tmp/gpu-check).
#   bash scripts/gpu-check.sh DEPS
# Still to come with the CUDA kernels: frugal-train --device cuda and the PyTorch reference
# on the same GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
deps=$(realpath "${1:?usage: gpu-check.sh DEPS (a folder made by scripts/pack-gpu-deps.sh)}")
out=${OUT:-/tmp/gpu-check}
mkdir -p "$out"
start=$(date +%s)
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
cmake -S . -B build-gpu "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DFRUGAL_CUDA=ON \
  -DCMAKE_PREFIX_PATH="$deps" -DZLIB_INCLUDE_DIR="$deps/include" -DZLIB_LIBRARY="$deps/lib/libz.a" \
  > "$out/configure.log"
cmake --build build-gpu --parallel "$(nproc)" > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
set +e
ctest --test-dir build-gpu -R '^cuda/' --output-on-failure > "$out/cuda-tests.log" 2>&1
tests_rc=$?
set -e
./build-gpu/tools/frugal-alloc-bench --threads 1 --pairs 100000 --only cuda --json > "$out/alloc-bench.json"
python3 - "$out" "$tests_rc" "$(( $(date +%s) - start ))" <<'PY'
import json, re, sys
out, rc, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3]
log = open(f"{out}/cuda-tests.log").read()
summary = re.search(r"\d+% tests passed.*", log)
print()
print(f"GPU: {open(f'{out}/gpu.txt').read().strip()}")
print(f"CUDA tests: {summary.group(0) if summary else 'no summary'} (ctest exit {rc})")
print("| allocator | back to back ns/pair | on its own ns | free random + malloc ns |")
print("|---|---|---|---|")
for r in json.load(open(f"{out}/alloc-bench.json"))["results"]:
    print(f"| {r['subject']} | {r['back_to_back_median_ns']:.0f} | {r['median_ns']:.0f} | "
          f"{r['replace_median_ns']:.0f} |")
print(f"gpu-check: {seconds} s")
PY
exit "$tests_rc"
