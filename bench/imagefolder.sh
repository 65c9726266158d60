#!/usr/bin/env bash
# Fashion-MNIST through the ImageFolder path against the idx path, at the same settings:
# the idx files are written as PNG class folders (train/<class>/*.png, test/<class>/*.png,
# torchvision's layout), and frugal-train trains the cnn for EPOCHS epochs on each, for every
# seed given. Recorded in bench/results/imagefolder-DATE.md with the test accuracies, their
# difference, and the speed of each path. (Slow: two full runs per seed.)
#   bash bench/imagefolder.sh [EPOCHS [SEED ...]]   (default: 1 epoch, seed 0; FRUGAL_BUILD_DIR,
#                                                    default build/; WORKERS, default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=${1:-1}
shift || true
seeds=("${@:-0}")
build=${FRUGAL_BUILD_DIR:-build}
workers=${WORKERS:-2}
cmake --build "$build" --target frugal-train frugal-bench-write-images > /dev/null
out=bench/results/imagefolder-$(date +%Y-%m-%d).md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
data=/usr/share/datasets/fashion-mnist
"$build/bench/frugal-bench-write-images" --data "$data" --split train --count 60000 --output "$tmp/png/train" > /dev/null
"$build/bench/frugal-bench-write-images" --data "$data" --split test --count 10000 --output "$tmp/png/test" > /dev/null
field() { sed -n "s/.*\"$2\": \([0-9.e+-]*\).*/\1/p" "$1" | head -1; }
{
  echo "# Fashion-MNIST as PNG class folders against the idx files"
  echo
  echo "- date: $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD)"
  echo "- machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores"
  echo "- command: \`bash bench/imagefolder.sh $epochs ${seeds[*]}\`: for each seed,"
  echo "  \`frugal-train --model cnn --epochs $epochs --seed N --threads 2\` on the idx files, and the same"
  echo "  with \`--data PNG_ROOT --workers $workers\` on the 70,000 images written as"
  echo "  PNG_ROOT/{train,test}/<class>/NNNNN.png by frugal-bench-write-images"
  echo "- both paths normalise with statistics frugal-train computes (the idx path over every"
  echo "  training pixel, the folder path over 500 training images) and shuffle with the same seed,"
  echo "  but the folder lists its samples by class, so the two see different batch orders"
  echo
  echo "| seed | idx test accuracy | folder test accuracy | difference (points) | idx img/s | folder img/s |"
  echo "|---|---|---|---|---|---|"
} > "$tmp/table.md"
for seed in "${seeds[@]}"; do
  "$build/examples/frugal-train" --model cnn --epochs "$epochs" --seed "$seed" --threads 2 \
    --metrics-json "$tmp/idx-$seed.json" > "$tmp/idx-$seed.log"
  "$build/examples/frugal-train" --model cnn --epochs "$epochs" --seed "$seed" --threads 2 \
    --data "$tmp/png" --workers "$workers" --metrics-json "$tmp/png-$seed.json" > "$tmp/png-$seed.log"
  a=$(field "$tmp/idx-$seed.json" test_accuracy)
  b=$(field "$tmp/png-$seed.json" test_accuracy)
  sa=$(field "$tmp/idx-$seed.json" train_images_per_sec)
  sb=$(field "$tmp/png-$seed.json" train_images_per_sec)
  awk -v s="$seed" -v a="$a" -v b="$b" -v sa="$sa" -v sb="$sb" \
    'BEGIN { printf "| %s | %.2f%% | %.2f%% | %+.2f | %.0f | %.0f |\n", s, 100*a, 100*b, 100*(b-a), sa, sb }' >> "$tmp/table.md"
done
{
  echo
  echo "The folder run's own account of its data (seed ${seeds[0]}):"
  echo
  echo '```'
  grep -E "^(data|split|images|transforms|            eval|normalize):?" "$tmp/png-${seeds[0]}.log"
  echo '```'
} >> "$tmp/table.md"
cp "$tmp/table.md" "$out"
cat "$out"
echo "written to $out"
