#!/usr/bin/env bash
# Data-loader benchmark, recorded in bench/results/loader-DATE.md (protocol:
# ../shared/BENCHMARKS.md "Data-loader figures"): 10,000 Fashion-MNIST training images written
# as PNG files, random crop (pad 2, crop 28), horizontal flip, normalize, batch 128.
#  - frugal-loader-bench at 0 and 2 workers against bench/torch/loader.py
#    (torch.utils.data.DataLoader + PIL + torchvision transforms) at 0 and 2 workers, PyTorch
#    both at its fastest setting and as Debian installs it, all runs interleaved;
#  - frugal from packed raw shards (frugal-pack) against its own PNG path, interleaved;
#  - frugal's peak RSS over EPOCHS_LONG epochs against its peak after epoch 1.
#   bash bench/loader.sh [REPEATS] [EPOCHS_LONG] [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-3}
epochs_long=${2:-20}
build=${3:-build}
if [ "$build" = build ]; then bash scripts/build.sh >/dev/null; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=bench/results/loader-$(date +%Y-%m-%d).md
source bench/torch/env.sh

"$build/bench/frugal-bench-write-images" --count 10000 --format png --output "$tmp/png" > /dev/null
"$build/tools/frugal-pack" --input "$tmp/png" --output "$tmp/shards" --channels 1 --samples-per-shard 2500 \
  --json "$tmp/pack.json" > /dev/null

# Worker threads persist across epochs on both sides (torch's persistent_workers=True).
bench() {
  "$build/bench/frugal-loader-bench" --epochs 3 --channels 1 --crop 28 --pad 2 --batch-size 128 \
    --persistent-workers "$@"
}
uptime > "$tmp/load-before.txt"
for i in $(seq "$repeats"); do
  for w in 0 2; do
    bench --data "$tmp/png" --workers "$w" --json "$tmp/frugal-png-w$w-$i.json" > /dev/null
    torch_fast bench/torch/loader.py --data "$tmp/png" --workers "$w" --epochs 3 --json "$tmp/torch_fast-w$w-$i.json" > /dev/null
    bench --data "$tmp/shards" --workers "$w" --json "$tmp/frugal-shards-w$w-$i.json" > /dev/null
    torch_default bench/torch/loader.py --data "$tmp/png" --workers "$w" --epochs 3 \
      --json "$tmp/torch_default-w$w-$i.json" > /dev/null
  done
done
# Memory over many epochs: a team per epoch (threads started and joined every epoch) on the
# PNG files, pinned batches from the shards.
"$build/bench/frugal-loader-bench" --data "$tmp/png" --workers 2 --epochs "$epochs_long" --json "$tmp/long-png.json" > /dev/null
"$build/bench/frugal-loader-bench" --data "$tmp/shards" --workers 2 --epochs "$epochs_long" --pin-memory \
  --json "$tmp/long-shards.json" > /dev/null
uptime > "$tmp/load-after.txt"
python3 bench/summarize_loader.py "$tmp" "$repeats" "$epochs_long" "bash bench/loader.sh $*" > "$out"
cat "$out"
echo "written to $out"
