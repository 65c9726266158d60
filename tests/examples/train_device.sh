#!/usr/bin/env bash
# frugal-train --device: a device string that names no device is refused with its name; where
# no GPU can be used, --device cuda is refused before any data is read, saying why; where one
# can, 200 mlp steps on it must take the test accuracy far above chance. Exits 77 (skipped)
# without the data set.
#   train_device.sh FRUGAL_TRAIN
set -euo pipefail
train=$1
source "$(dirname "$0")/require_data.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

expect_refused() {  # expect_refused PATTERN ARGS...: exit status 2 and PATTERN in the error
  local pattern=$1
  shift
  local rc=0
  "$train" "$@" > "$tmp/out" 2>&1 || rc=$?
  if [[ $rc -ne 2 ]] || ! grep -q -- "$pattern" "$tmp/out"; then
    echo "FAIL: frugal-train $* should be refused (status 2) naming '$pattern'; got status $rc:" >&2
    cat "$tmp/out" >&2
    exit 1
  fi
  echo "refused as expected: $(cat "$tmp/out")"
}

expect_refused "invalid device string 'tpu'" --device tpu --max-steps 1
expect_refused "invalid device string 'cuda:x'" --device cuda:x --max-steps 1
if "$train" --device cuda --model mlp --max-steps 200 --metrics-json "$tmp/m.json" > "$tmp/log" 2>&1; then
  cat "$tmp/log"
  grep -q '"device": "cuda:0"' "$tmp/m.json" || { echo "FAIL: metrics do not name cuda:0" >&2; exit 1; }
  accuracy=$(sed -n 's/.*"test_accuracy": \([0-9.]*\).*/\1/p' "$tmp/m.json" | head -1)
  awk -v a="$accuracy" 'BEGIN { exit !(a > 0.7) }' || {
    echo "FAIL: 200 mlp steps on cuda reached test accuracy $accuracy, expected > 0.7" >&2
    exit 1
  }
else
  expect_refused "device cuda is not available" --device cuda --max-steps 1
fi
