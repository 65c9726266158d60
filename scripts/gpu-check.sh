#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, as one command for a machine without network: builds
# frugal there with CUDA (the Debian headers and Fashion-MNIST come from DEPS, made by
# pack-gpu-deps.sh), runs the CUDA tests, trains cnn and mobilenet for STEPS steps with
# frugal-train --device cuda (cnn with --amp fp16 too) and, where python3 has torch, the PyTorch
# reference on the same GPU, and times malloc+free pairs on the GPU through frugal's caching
# allocator against cudaMalloc/cudaFree and cudaMallocAsync; prints one short table at the end.
# Logs and JSON go to $OUT (or /tmp/gpu-check); the table also to $OUT/gpu-check.md.
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
echo "frugal $(git rev-parse --short HEAD 2>/dev/null || echo '(no git)')" | tee -a "$out/gpu.txt"
# cuDNN may come as PyTorch's nvidia-cudnn wheel; its library loads its engines from its folder.
cudnn_wheel=$(python3 -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null || true)
[ -n "$cudnn_wheel" ] && export LD_LIBRARY_PATH="$cudnn_wheel/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
stage() { echo "== $1 ($(( $(date +%s) - start )) s)"; }
stage configure
cmake -S . -B build-gpu "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DFRUGAL_CUDA=ON \
  -DCMAKE_PREFIX_PATH="$deps" -DZLIB_INCLUDE_DIR="$deps/include" -DZLIB_LIBRARY="$deps/lib/libz.a" \
  > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
grep "frugal:" "$out/configure.log" || true
stage build
# Only what this script runs: the CUDA tests, frugal-train and the allocator benchmark.
cmake --build build-gpu --parallel "$(nproc)" --target cuda_tests frugal-train frugal-alloc-bench \
  > "$out/build.log" 2>&1 || { grep -m20 -A5 "error" "$out/build.log"; tail -20 "$out/build.log"; exit 1; }
stage "CUDA tests"
# Without a usable device (say, a driver older than the CUDA runtime needs) every CUDA test
# would skip: say why and stop, rather than print a table of skips.
if ! reason=$(./build-gpu/tests/cuda_tests "[no-such-tag]" 2>&1) && [[ $reason == skipped:* ]]; then
  echo "gpu-check: the GPU cannot be used: ${reason#skipped: }"
  exit 1
fi
set +e
# A hung kernel must not eat the machine's time: each test gets two minutes.
ctest --test-dir build-gpu -R '^cuda/' --output-on-failure --timeout 120 --parallel 4 \
  > "$out/cuda-tests.log" 2>&1
tests_rc=$?
set -e
grep -E "tests passed|\*\*\*Failed|\*\*\*Timeout|Exception" "$out/cuda-tests.log" | head -40 || true
stage "allocator benchmark"
./build-gpu/tools/frugal-alloc-bench --threads 1 --pairs 100000 --only cuda --json > "$out/alloc-bench.json" ||
  echo "frugal-alloc-bench failed"
# Training on the GPU, frugal and PyTorch alternating, the same models, data and step count.
have_torch=0
python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null && have_torch=1
for run in cnn:off mobilenet:off cnn:fp16; do
  model=${run%%:*} amp=${run##*:}
  stage "train $model amp $amp"
  ./build-gpu/examples/frugal-train --device cuda --model "$model" --amp "$amp" --epochs 1 \
    --max-steps "$steps" --data "$deps/fashion-mnist" --metrics-json "$out/train-$model-$amp.json" \
    > "$out/train-$model-$amp.log" 2>&1 || tail -5 "$out/train-$model-$amp.log"
  if [ "$have_torch" = 1 ]; then
    python3 bench/torch/train.py --device cuda --model "$model" --amp "$amp" --max-steps "$steps" \
      --data "$deps/fashion-mnist" > "$out/torch-$model-$amp.json" 2> "$out/torch-$model-$amp.log" ||
      tail -5 "$out/torch-$model-$amp.log"
  fi
done
# PyTorch as it comes, float32 convolutions in TF32 (faster, less exact than frugal's float32):
# the figure beside the same-arithmetic one, as BENCHMARKS.md asks.
if [ "$have_torch" = 1 ]; then
  stage "PyTorch cnn with TF32"
  python3 bench/torch/train.py --device cuda --model cnn --amp off --tf32 --max-steps "$steps" \
    --data "$deps/fashion-mnist" > "$out/torch-cnn-tf32.json" 2> "$out/torch-cnn-tf32.log" ||
    tail -5 "$out/torch-cnn-tf32.log"
fi
# Out-of-bounds and misaligned accesses that a value comparison can miss: the CUDA tests under
# compute-sanitizer's memcheck (10-100x slower; the grid-cap tests left out), where it exists
# and time is left within the 8 minutes.
if command -v compute-sanitizer >/dev/null && (( $(date +%s) - start < 300 )); then
  stage "compute-sanitizer memcheck"
  timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 ./build-gpu/tests/cuda_tests \
    "~*one launch's grid covers*" > "$out/memcheck.log" 2>&1 || true
  grep -E "ERROR SUMMARY|test cases" "$out/memcheck.log" | tail -2 || true
fi
python3 - "$out" "$tests_rc" "$(( $(date +%s) - start ))" <<'PY'
import json, os, re, sys
out, rc, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3]
log = open(f"{out}/cuda-tests.log").read()
summary = re.search(r"\d+% tests passed.*", log)
skipped = len(re.findall(r"\*\*\*Skipped", log))
def load(name):
    path = f"{out}/{name}"
    try:
        return json.load(open(path)) if os.path.getsize(path) else None
    except (OSError, ValueError):
        return None
lines = []
say = lines.append  # each line goes to the screen and to gpu-check.md at the end
say(f"GPU: {open(f'{out}/gpu.txt').read().strip()}")
say(f"CUDA tests: {summary.group(0) if summary else 'no summary'}, {skipped} skipped (ctest exit {rc})")
say("| allocator | back to back ns/pair | on its own ns | free random + malloc ns |")
say("|---|---|---|---|")
for r in (load("alloc-bench.json") or {"results": []})["results"]:
    say(f"| {r['subject']} | {r['back_to_back_median_ns']:.0f} | {r['median_ns']:.0f} | "
        f"{r['replace_median_ns']:.0f} |")
say("| model | amp | frugal train img/s | PyTorch train img/s | frugal / PyTorch | frugal peak allocated | PyTorch peak allocated |")
say("|---|---|---|---|---|---|---|")
for model, amp, torch_run in (("cnn", "off", "cnn-off"), ("mobilenet", "off", "mobilenet-off"),
                              ("cnn", "fp16", "cnn-fp16"), ("cnn", "off (PyTorch in TF32)", "cnn-tf32")):
    f, t = load(f"train-{model}-{amp.split()[0]}.json"), load(f"torch-{torch_run}.json")
    fr = f.get("train_images_per_sec") if f else None
    tr = t.get("loop_images_per_sec") if t else None
    ratio = f"{fr / tr:.2f}" if fr and tr else "-"
    mib = lambda d: f"{d['peak_allocated_bytes'] / 2**20:.0f} MiB" if d and "peak_allocated_bytes" in d else "-"
    say(f"| {model} | {amp} | {fr or 0:.0f} | {tr or 0:.0f} | {ratio} | {mib(f)} | {mib(t)} |")
if os.path.exists(f"{out}/memcheck.log"):
    memcheck = open(f"{out}/memcheck.log", errors="replace").read()
    errors = re.search(r"ERROR SUMMARY: \d+ errors?", memcheck)
    cases = re.findall(r"test cases:.*", memcheck)
    say(f"memcheck: {errors.group(0) if errors else 'no summary (timed out?)'}; {cases[-1] if cases else ''}")
say(f"gpu-check: {seconds} s")
failed = re.findall(r"^\s*\d+ - (cuda/.*) \((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)\)", log, re.M)
if failed:
    say(f"failed CUDA tests ({len(failed)}):")
    for name, why in failed[:40]:
        say(f"- {name} ({why})")
print()
print("\n".join(lines))
open(f"{out}/gpu-check.md", "w").write("\n".join(lines) + "\n")
PY
exit "$tests_rc"
