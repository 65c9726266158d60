#!/usr/bin/env bash
# Soak: long runs that must not grow. A cnn run of STEPS steps at batch 8 (default 10,000:
# many steps in a few minutes) and MLP_EPOCHS epochs of the mlp (default 20), each logging the
# allocator's allocated and reserved bytes and the process RSS to TensorBoard after every step
# (--tensorboard), with the leak watch on at every epoch end. After the warm-up (the first 10%
# of the steps) each figure must stay within 1% of its value where the warm-up ends, and the
# leak watch must print no warning. Recorded in bench/results/soak-DATE.md; exits 1 on a miss.
#   bash bench/soak.sh [STEPS [MLP_EPOCHS]]   (FRUGAL_BUILD_DIR, default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-10000}
mlp_epochs=${2:-20}
build=${FRUGAL_BUILD_DIR:-build}
cmake --build "$build" --target frugal-train frugal-test-read-events > /dev/null
out=bench/results/soak-$(date +%Y-%m-%d).md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() {  # run NAME ARGS...: frugal-train with per-step TensorBoard scalars into $tmp/NAME
  local name=$1
  shift
  local start=$SECONDS
  "$build/examples/frugal-train" --threads 2 --tensorboard "$tmp/$name" \
    --metrics-json "$tmp/$name.json" "$@" > "$tmp/$name.log" 2>&1
  echo $((SECONDS - start)) > "$tmp/$name.seconds"
  "$build/tests/frugal-test-read-events" "$tmp/$name"/events.out.tfevents.* > "$tmp/$name.tsv"
}
run cnn --model cnn --batch-size 8 --epochs 100 --max-steps "$steps"
run mlp --model mlp --batch-size 128 --epochs "$mlp_epochs"

/usr/bin/python3 - "$tmp" "$out" "$steps" "$mlp_epochs" "$(git rev-parse --short HEAD)" \
  "$(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores" <<'PY'
import json, sys, datetime
tmp, out, steps, mlp_epochs, commit, machine = sys.argv[1:7]
tags = {"allocated": "memory/allocated_MiB", "reserved": "memory/reserved_MiB",
        "RSS": "memory/host_rss_MiB"}
rows, misses = [], []
for name, what in (("cnn", f"cnn, batch 8, {steps} steps"), ("mlp", f"mlp, batch 128, {mlp_epochs} epochs")):
    series = {k: {} for k in tags}
    for line in open(f"{tmp}/{name}.tsv"):
        step, tag, value = line.rstrip("\n").split("\t")
        for k, t in tags.items():
            if tag == t:
                series[k][int(step)] = float(value)
    last_step = max(series["allocated"])
    warm = max(1, last_step // 10)
    log = open(f"{tmp}/{name}.log").read()
    leak_warnings = [l for l in log.splitlines() if "possible memory leak" in l]
    seconds = open(f"{tmp}/{name}.seconds").read().strip()
    for k in tags:
        after = {s: v for s, v in series[k].items() if s >= warm}
        first = after[min(after)]
        last = after[max(after)]
        lo, hi = min(after.values()), max(after.values())
        spread = (hi - lo) / first if first else 0.0
        ok = spread <= 0.01
        if not ok:
            misses.append(f"{name} {k}: {100 * spread:.2f}% spread after warm-up")
        rows.append(f"| {what} | {k} | {series[k][min(series[k])]:.2f} | {first:.2f} (step {warm}) | "
                    f"{last:.2f} (step {last_step}) | {lo:.2f} .. {hi:.2f} | {100 * spread:.3f}% | "
                    f"{'yes' if ok else '**no**'} |")
    rows.append(f"| {what} | leak watch | | | | | {len(leak_warnings)} warnings | "
                f"{'yes' if not leak_warnings else '**no**'} |")
    if leak_warnings:
        misses.append(f"{name}: {len(leak_warnings)} leak-watch warnings: {leak_warnings[0]}")
    rows.append(f"| {what} | run time | | | | | {seconds} s | |")
with open(out, "w") as f:
    f.write("# Soak: memory over long runs\n\n")
    f.write(f"- date: {datetime.datetime.utcnow():%Y-%m-%dT%H:%MZ}, commit {commit}\n")
    f.write(f"- machine: {machine}\n")
    f.write(f"- command: `bash bench/soak.sh {steps} {mlp_epochs}`: frugal-train --threads 2 --tensorboard, "
            "the allocator's current allocated and reserved bytes and the process RSS logged after every "
            "step; warm-up = the first 10% of the steps; target: within 1% of the post-warm-up value "
            "(max - min over every later step, over the first), and no leak-watch warning.\n\n")
    f.write("| run | figure (MiB) | first step | after warm-up | last step | range after warm-up | spread | within 1% |\n")
    f.write("|---|---|---|---|---|---|---|---|\n")
    f.write("\n".join(rows) + "\n\n")
    f.write("Misses: " + ("; ".join(misses) if misses else "none") + "\n")
print(open(out).read())
sys.exit(1 if misses else 0)
PY
