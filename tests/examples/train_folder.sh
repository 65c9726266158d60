#!/usr/bin/env bash
# frugal-train on a class-folder root as a user's disk holds it (tests/data/messy_folder.cpp:
# 15 readable images of every kind, mixed sizes, gray and colour, in 3 classes, and 7
# damaged files): without --skip-bad the first damaged file stops the run (status 2, named,
# nothing written); with it every damaged file is left out, named, and counted exactly once
# after an epoch and an evaluation, for the cnn, the mobilenet and the mlp, on RGB and gray,
# with 0 and 2 loader workers; --preview writes the first batch as a PNG.
#   train_folder.sh FRUGAL_TRAIN FRUGAL_TEST_MESSY_FOLDER
set -euo pipefail
train=$1
make_folder=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
field() { sed -n "s/.*\"$2\": \([0-9.]*\).*/\1/p" "$1" | head -1; }

"$make_folder" "$tmp/photos" > "$tmp/made.txt"
damaged=$(($(wc -l < "$tmp/made.txt") - 1))
[[ $damaged -eq 7 ]] || fail "the messy folder should hold 7 damaged files, made $damaged"

# Without --skip-bad: the scan meets the decompression bomb first and stops there.
rc=0
"$train" --data "$tmp/photos" --model cnn --image-size 32 --batch-size 4 --threads 1 \
  --metrics-json "$tmp/none.json" --save "$tmp/none.safetensors" > "$tmp/stop.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || { cat "$tmp/stop.log" >&2; fail "a damaged file should stop the run with status 2, got $rc"; }
grep -q "0-bomb.png: image of 9000x9000 pixels is larger than the limit" "$tmp/stop.log" ||
  { cat "$tmp/stop.log" >&2; fail "the error should name the bomb and why"; }
[[ ! -e "$tmp/none.json" && ! -e "$tmp/none.safetensors" ]] || fail "a stopped run wrote its outputs"
echo "stopped as expected: $(grep -m1 error "$tmp/stop.log")"

# Without --skip-bad, past the scan: the first damaged file a sample read meets.
mv "$tmp/photos/gray/0-bomb.png" "$tmp/bomb.png"
rc=0
"$train" --data "$tmp/photos" --model cnn --image-size 32 --batch-size 4 --threads 1 > "$tmp/stop2.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -Eq "error: .*(damaged|not a PNG or JPEG)" "$tmp/stop2.log" ||
  { cat "$tmp/stop2.log" >&2; fail "a damaged file met while reading should stop the run (status $rc)"; }
echo "stopped as expected: $(grep -m1 error "$tmp/stop2.log")"
mv "$tmp/bomb.png" "$tmp/photos/gray/0-bomb.png"

# With --skip-bad: each model, channels and worker count trains on the 15 readable images.
run() {  # run NAME ARGS...
  local name=$1
  shift
  "$train" --data "$tmp/photos" --epochs 1 --batch-size 4 --threads 1 --val-fraction 0.2 --skip-bad \
    --metrics-json "$tmp/$name.json" "$@" > "$tmp/$name.log" 2>&1 || { cat "$tmp/$name.log" >&2; fail "$name: status $?"; }
  local skipped train eval
  skipped=$(field "$tmp/$name.json" skipped_files)
  [[ $skipped -eq 7 ]] || { cat "$tmp/$name.log" >&2; fail "$name: skipped_files $skipped, expected 7"; }
  [[ $(grep -c "skipping" "$tmp/$name.log") -eq 7 ]] || fail "$name: each damaged file should be named once"
  grep -q "skipped 7 damaged files" "$tmp/$name.log" || fail "$name: the count is not printed at the end"
  train=$(sed -n 's/.*"train": \([0-9]*\), "eval": \([0-9]*\).*/\1/p' "$tmp/$name.json")
  eval=$(sed -n 's/.*"train": \([0-9]*\), "eval": \([0-9]*\).*/\2/p' "$tmp/$name.json")
  # 22 files, the bomb left out by the scan: 21 split; 6 of them fail when read.
  [[ $((train + eval)) -eq 21 ]] || fail "$name: the split holds $train + $eval files, expected 21"
  grep -q '"kind": "held_out"' "$tmp/$name.json" || fail "$name: the split is not reported as held out"
  echo "$name: $(grep '^split' "$tmp/$name.log"); $(grep '^images' "$tmp/$name.log"); skipped $skipped"
}
run cnn_rgb --model cnn --image-size 32 --preview "$tmp/preview.png"
grep -q '"channels": 3' "$tmp/cnn_rgb.json" || fail "a folder with colour images should train on 3 channels"
grep -q '"image_height": 32' "$tmp/cnn_rgb.json" || fail "--image-size 32 should give 32x32 samples"
[[ $(head -c 8 "$tmp/preview.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] ||
  fail "--preview did not write a PNG"
run mobilenet_rgb --model mobilenet --image-size 40 --augment resized-crop --workers 2
run cnn_gray --model cnn --image-size 28 --channels 1 --normalize 0.5,0.25 --workers 2
grep -q '"channels": 1' "$tmp/cnn_gray.json" || fail "--channels 1 should give gray samples"
grep -q '"normalize_mean": \[0.5\]' "$tmp/cnn_gray.json" || fail "--normalize 0.5,0.25 not applied"
run mlp_rgb --model mlp --image-size 16

# Impossible options are named.
for bad in "--channels 2" "--image-size 0" "--val-fraction 1" "--augment sideways" "--augment pad-crop" \
  "--normalize 0.5" "--normalize a,b"; do
  rc=0
  # shellcheck disable=SC2086
  "$train" --data "$tmp/photos" --skip-bad $bad > "$tmp/opt.log" 2>&1 || rc=$?
  [[ $rc -eq 2 ]] && grep -q "error: --" "$tmp/opt.log" ||
    { cat "$tmp/opt.log" >&2; fail "'$bad' should be refused naming the option (status $rc)"; }
done
echo "PASS"
