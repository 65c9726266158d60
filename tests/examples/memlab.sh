#!/usr/bin/env bash
# frugal-memlab: every subcommand at its smallest settings must run and report its key
# figures in --json, and the figures that are correctness checks must hold. Exits 77
# (skipped) without the Fashion-MNIST data set (amp, loader and architectures read it).
#   memlab.sh FRUGAL_MEMLAB
set -euo pipefail
memlab=$1
source "$(dirname "$0")/require_data.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# run NAME ARGS...: the subcommand's JSON in $tmp/NAME.json
run() {
  local name=$1
  shift
  "$memlab" "$name" --json "$@" > "$tmp/$name.json"
}
# expect NAME PYTHON-CONDITION: a condition on the JSON object `j` (its figures in `f`)
expect() {
  python3 - "$tmp/$1.json" "$2" <<'PY' || fail=1
import json, sys
j = json.load(open(sys.argv[1]))
f = j["figures"]
ok = eval(sys.argv[2])
print(("ok   " if ok else "FAIL ") + j["subcommand"] + ": " + sys.argv[2])
sys.exit(0 if ok else 1)
PY
}

"$memlab" --help | grep -q checkpoint
for s in batch-size accumulate empty-cache amp loader leak no-grad architectures checkpoint monitor quantize prune; do
  "$memlab" "$s" --help > /dev/null
done
if "$memlab" no-such-lab > /dev/null 2>&1; then echo "FAIL: an unknown subcommand was accepted"; fail=1; fi

run batch-size --batches 16,48 --capacity-mib 16
expect batch-size 'f["worst_relative_error"] <= 0.05 and f["chosen_is_largest"] and abs(f["chosen_relative_error"]) <= 0.05'
run accumulate --batch-size 64
expect accumulate 'f["within_1e-5"] and f["accumulated_peak_bytes"] < f["whole_peak_bytes"] and f["accumulated_peak_bytes"] <= 1.05 * f["micro_batch_peak_bytes"]'
run empty-cache --mib 8 --repeats 3 --model mlp
expect empty-cache 'f["reserved_after_bytes"] < f["reserved_before_bytes"] and f["allocated_unchanged"] and f["fresh_new_segments"] == 3 and f["cached_new_segments"] == 0'
run amp --batch-size 16 --steps 4 --test 100
expect amp 'f["bf16_peak_bytes"] < f["fp32_peak_bytes"] and f["fp16_peak_bytes"] < f["fp32_peak_bytes"] and all(0 <= f[k + "_test_accuracy"] <= 1 for k in ("fp32", "bf16", "fp16"))'
run loader --count 128 --epochs 1 --dir "$tmp/images"
expect loader 'f["all_pixels_match"] and len(j["rows"]) == 8 and all(r["images_per_sec"] > 0 for r in j["rows"])'
run leak --steps 10 --epochs 20
expect leak 'f["leak_caught_within_3_epochs"] and f["correct_quiet"] and f["correct_epochs"] == 20'
run no-grad --batch-size 16
expect no-grad 'f["no_grad_peak_bytes"] < f["autograd_peak_bytes"] and f["inference_mode_held_bytes"] < f["autograd_held_bytes"] and f["no_grad_identical"] and f["inference_mode_identical"]'
run architectures --steps 5 --batch-size 16 --test 100
expect architectures 'f["mlp_parameters"] > 0 and f["cnn_activation_bytes"] > f["mlp_activation_bytes"] and 0 <= f["mobilenet_test_accuracy"] <= 1'
run checkpoint --blocks 8 --batch-size 2 --size 16 --repeats 1
expect checkpoint 'f["gradients_identical"] and f["checkpoint_peak_bytes"] < f["plain_peak_bytes"]'
run monitor --steps 2 --batch-size 8 --model mlp --out "$tmp/monitor"
expect monitor 'f["outputs_ok"] and f["event_records"] > 0 and "Allocated memory" in f["memory_summary"]'
run quantize --steps 100 --test 1000 --repeats 1
expect quantize 'f["int8_weight_bytes"] < 0.27 * f["float32_weight_bytes"] and abs(f["int8_test_accuracy"] - f["float32_test_accuracy"]) <= 0.02 and f["prediction_agreement"] >= 0.97 and f["int8_images_per_sec"] > 0'
run prune --steps 100 --finetune-steps 20 --test 1000
expect prune 'all(f["unstructured_%d_parameter_bytes" % p] == f["dense_parameter_bytes"] and abs(f["unstructured_%d_zero_weight_fraction" % p] - p / 100) < 1e-3 and f["unstructured_%d_mask_bytes" % p] == 4 * (784 * 512 + 512 * 512 + 512 * 10) for p in (50, 80, 90)) and f["zeros_kept_through_finetune"] and f["structured_50_parameter_bytes"] == 4 * (784 * 256 + 256 + 256 * 256 + 256 + 256 * 10 + 10) and 2 * f["structured_50_inference_peak_bytes"] == f["dense_inference_peak_bytes"] and abs(f["structured_25_test_accuracy"] - f["dense_test_accuracy"]) <= 0.03'
"$memlab" prune --json --model cnn --steps 5 --finetune-steps 2 --test 200 > "$tmp/prune-cnn.json"
expect prune-cnn 'f["structured_50_parameter_bytes"] == 4 * (16 * 9 + 16 * 16 * 9 + 32 * 16 * 9 + 32 * 32 * 9 + 2 * (16 + 16 + 32 + 32) + 32 * 49 * 64 + 64 + 64 * 10 + 10) and f["structured_50_hidden_units"] == 160 and f["structured_50_inference_peak_bytes"] < 0.6 * f["dense_inference_peak_bytes"] and f["unstructured_90_parameter_bytes"] == f["dense_parameter_bytes"] and f["zeros_kept_through_finetune"]'

for s in batch-size accumulate empty-cache amp loader leak no-grad architectures checkpoint monitor quantize prune; do
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("%-14s %5.1f s" % (j["subcommand"], j["seconds"]))' "$tmp/$s.json"
done
exit $fail
