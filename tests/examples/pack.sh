#!/usr/bin/env bash
# frugal-pack end to end: an ImageFolder tree of PNG and JPEG files packed raw and encoded,
# both read back by frugal-loader-bench with every sample; a truncated image stops the
# packing naming its file unless --skip-bad, which counts it; a damaged shard is refused by
# the reader naming the file; idx files are packed when the data set is installed.
#   pack.sh FRUGAL_PACK FRUGAL_LOADER_BENCH FRUGAL_BENCH_WRITE_IMAGES
set -euo pipefail
pack=$1
bench=$2
write_images=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
data=/usr/share/datasets/fashion-mnist
if [ ! -e "$data/train-images-idx3-ubyte.gz" ] && [ ! -e "$data/train-images-idx3-ubyte" ]; then
  echo "skipped: $data is missing (package dataset-fashion-mnist)"
  exit 77
fi

"$write_images" --data "$data" --count 300 --format png --output "$tmp/tree" > /dev/null
"$write_images" --data "$data" --count 40 --format jpg --output "$tmp/jpg" > /dev/null
cp "$tmp/jpg/coat/"*.jpg "$tmp/tree/coat/"  # a tree of PNG and JPEG files together

for encoding in raw encoded; do
  "$pack" --input "$tmp/tree" --output "$tmp/$encoding" --encoding "$encoding" --channels 1 \
    --samples-per-shard 100 --json "$tmp/$encoding.json"
  grep -q '"samples": 3[0-9][0-9]' "$tmp/$encoding.json" || { echo "FAIL: $encoding: wrong sample count" >&2; cat "$tmp/$encoding.json" >&2; exit 1; }
  shards=$(ls "$tmp/$encoding"/*.frs | wc -l)
  [ "$shards" -ge 3 ] || { echo "FAIL: $encoding: expected at least 3 shards, got $shards" >&2; exit 1; }
  "$bench" --data "$tmp/$encoding" --workers 2 --epochs 2 --batch-size 64 --json "$tmp/$encoding-bench.json" > /dev/null
  samples=$(sed -n 's/.*"samples": \([0-9]*\).*/\1/p' "$tmp/$encoding-bench.json")
  want=$(sed -n 's/.*"samples": \([0-9]*\).*/\1/p' "$tmp/$encoding.json")
  [ "$samples" = "$want" ] || { echo "FAIL: $encoding: the reader sees $samples samples, packed $want" >&2; exit 1; }
  echo "$encoding: $want samples in $shards shards read back"
done

expect_refused() {  # expect_refused PATTERN COMMAND...: exit status 2 and PATTERN in the error
  local pattern=$1
  shift
  local rc=0
  "$@" > "$tmp/out" 2>&1 || rc=$?
  if [[ $rc -ne 2 ]] || ! grep -q -- "$pattern" "$tmp/out"; then
    echo "FAIL: $* should be refused (status 2) naming '$pattern'; got status $rc:" >&2
    cat "$tmp/out" >&2
    exit 1
  fi
  echo "refused as expected: $(head -c 300 "$tmp/out")"
}

victim=$(ls "$tmp/tree/bag/" | head -1)
head -c 50 "$tmp/tree/bag/$victim" > "$tmp/cut" && mv "$tmp/cut" "$tmp/tree/bag/$victim"
expect_refused "bag/$victim" "$pack" --input "$tmp/tree" --output "$tmp/bad" --channels 1
"$pack" --input "$tmp/tree" --output "$tmp/skipped" --channels 1 --skip-bad --json "$tmp/skipped.json" 2> "$tmp/skip.log"
grep -q '"skipped": 1' "$tmp/skipped.json" || { echo "FAIL: --skip-bad should count 1" >&2; cat "$tmp/skipped.json" >&2; exit 1; }
grep -q "bag/$victim" "$tmp/skip.log" || { echo "FAIL: --skip-bad should log the file" >&2; exit 1; }

first=$(ls "$tmp/raw"/*.frs | head -1)
printf 'XXXX' | dd of="$first" bs=1 seek=0 conv=notrunc status=none
expect_refused "$first" "$bench" --data "$tmp/raw" --epochs 1

"$pack" --input "$data" --output "$tmp/idx" --split test --samples-per-shard 4000 --json "$tmp/idx.json" > /dev/null
grep -q '"samples": 10000' "$tmp/idx.json" || { echo "FAIL: the idx test split should pack 10000 samples" >&2; exit 1; }
expect_refused "raw pixels only" "$pack" --input "$data" --output "$tmp/idx2" --encoding encoded
echo "PASS"
