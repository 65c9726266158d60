#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, as one command for a machine without network: builds
# frugal there with CUDA (the Debian headers and Fashion-MNIST come from DEPS, made by
# pack-gpu-deps.sh), runs the CUDA tests, trains cnn and mobilenet for STEPS steps with
# frugal-train --device cuda and, where python3 has torch, the PyTorch reference on the same
# GPU, and times malloc+free pairs on the GPU through frugal's caching allocator against
# cudaMalloc/cudaFree and cudaMallocAsync; prints one short table at the end. Logs and JSON
# go to $OUT (or /tmp/gpu-check).
#   bash scripts/gpu-check.sh DEPS [STEPS]      (STEPS: default 300)
set -euo pipefail
cd "$(dirname "$0")/.."
deps=$(realpath "${1:?usage: gpu-check.sh DEPS (a folder made by scripts/pack-gpu-deps.sh)}")
steps=${2:-300}
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
# Training on the GPU, frugal and PyTorch alternating, the same models, data and step count.
for model in cnn mobilenet; do
  ./build-gpu/examples/frugal-train --device cuda --model "$model" --epochs 1 --max-steps "$steps" \
    --data "$deps/fashion-mnist" --metrics-json "$out/train-$model.json" > "$out/train-$model.log" 2>&1 ||
    tail -5 "$out/train-$model.log"
  if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    python3 bench/torch/train.py --device cuda --model "$model" --max-steps "$steps" \
      --data "$deps/fashion-mnist" > "$out/torch-$model.json" 2> "$out/torch-$model.log" ||
      tail -5 "$out/torch-$model.log"
  fi
done
python3 - "$out" "$tests_rc" "$(( $(date +%s) - start ))" <<'PY'
import json, os, re, sys
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
def load(name):
    path = f"{out}/{name}"
    try:
        return json.load(open(path)) if os.path.getsize(path) else None
    except (OSError, ValueError):
        return None
print("| model | frugal train img/s | PyTorch train img/s | frugal / PyTorch | frugal peak allocated |")
print("|---|---|---|---|---|")
for model in ("cnn", "mobilenet"):
    f, t = load(f"train-{model}.json"), load(f"torch-{model}.json")
    fr = f["train_images_per_sec"] if f else None
    tr = t.get("loop_images_per_sec") if t else None
    ratio = f"{fr / tr:.2f}" if fr and tr else "-"
    peak = f"{f['peak_allocated_bytes'] / 2**20:.0f} MiB" if f else "-"
    print(f"| {model} | {fr or 0:.0f} | {tr or 0:.0f} | {ratio} | {peak} |")
print(f"gpu-check: {seconds} s")
PY
exit "$tests_rc"
