#!/usr/bin/env bash
# frugal-train --oom-recovery on an allocator capped below what a step of batch 128 needs
# (--memory-limit, a smaller device): without it the run stops at step 1 with the allocator's
# report and a hint; with it the step is retried in 2, then 4 micro-batches (on this machine;
# K in general), the run finishes, and its loss curve equals a run with --accum K from the
# start (the same update) to 1e-5.
# Exits 77 (skipped) without the data.
#   train_oom.sh FRUGAL_TRAIN
set -euo pipefail
train=$1
source "$(dirname "$0")/require_data.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A cnn step of batch 128 peaks at about 154 MiB allocated with the data set, 107 MiB in 2
# micro-batches and 84 MiB in 4; 100 MiB fits only the last.
run=("$train" --model cnn --batch-size 128 --threads 2 --max-steps 6)
limit=100M
set +e
"${run[@]}" --memory-limit $limit > "$tmp/plain.log" 2>&1
rc=$?
set -e
if [ $rc -ne 2 ] || ! grep -q "out of memory on cpu" "$tmp/plain.log" || ! grep -q -- "--oom-recovery" "$tmp/plain.log"; then
  echo "FAIL: without --oom-recovery the capped run should stop (status 2) naming the OOM and the option; got $rc:" >&2
  cat "$tmp/plain.log" >&2
  exit 1
fi

"${run[@]}" --memory-limit $limit --oom-recovery --memory-summary \
  --metrics-json "$tmp/recovered.json" > "$tmp/recovered.log" 2>&1 || {
  echo "FAIL: the run with --oom-recovery did not finish:" >&2
  cat "$tmp/recovered.log" >&2
  exit 1
}
grep -E "ran out of memory|oom recovery|OOMs" "$tmp/recovered.log"
k=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["accum"])' "$tmp/recovered.json")
"${run[@]}" --accum "$k" --metrics-json "$tmp/accum.json" > "$tmp/accum.log" 2>&1
/usr/bin/python3 - "$tmp/accum.json" "$tmp/recovered.json" <<'PY'
import json, sys
ref, rec = (json.load(open(p)) for p in sys.argv[1:3])
problems = []
k = rec["accum"]
if k < 2: problems.append("no step was retried: the limit does not bind")
if 2 ** rec["oom_retries"] != k: problems.append(f"{rec['oom_retries']} retries for {k} micro-batches (1 -> 2 -> ... doubling)")
if rec["num_ooms"] < 2: problems.append(f"the allocator counted {rec['num_ooms']} OOMs")
if rec["peak_reserved_bytes"] > rec["memory_limit_bytes"]: problems.append("reserved more than the limit")
if len(rec["step_losses"]) != 6: problems.append(f"{len(rec['step_losses'])} step losses")
worst = max(abs(a - b) for a, b in zip(ref["step_losses"], rec["step_losses"]))
if worst > 1e-5: problems.append(f"loss curve differs from --accum {k} by {worst:.3g}")
print(f"recovered run: {rec['oom_retries']} retries, accum {rec['accum']}, peak reserved "
      f"{rec['peak_reserved_bytes'] / 2**20:.1f} MiB of {rec['memory_limit_bytes'] / 2**20:.0f} MiB, "
      f"largest loss difference from --accum {k} over {len(rec['step_losses'])} steps: {worst:.3g}")
if problems:
    sys.exit("FAIL: " + "; ".join(problems))
PY
echo "ok: the capped run recovered and matches --accum $k"
