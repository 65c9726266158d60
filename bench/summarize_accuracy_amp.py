"""Turns the --metrics-json files of bench/accuracy-amp.sh (DIR/AMP-SEED.json) into markdown."""
import json
import os
import subprocess
import sys
from datetime import datetime, timezone


def main():
    tmp, seeds = sys.argv[1], sys.argv[2:]
    commit = subprocess.run("git rev-parse --short HEAD", shell=True, capture_output=True, text=True).stdout.strip()
    print("# Test accuracy after 3 epochs with mixed precision\n")
    print(f"- date: {datetime.now(timezone.utc).strftime('%Y-%m-%dT%H:%MZ')}")
    print(f"- commit: {commit}")
    print(f"- command: `bash bench/accuracy-amp.sh {' '.join(seeds)}`; each row: "
          "`frugal-train --amp AMP --seed N --threads 2` (cnn, SGD lr 0.05 momentum 0.9, batch 128, constant rate)")
    print()
    print("| seed | amp | epoch 1 | epoch 2 | epoch 3 | minus float32 (points) | skipped steps | final loss scale |")
    print("|---|---|---|---|---|---|---|---|")
    for seed in seeds:
        base = json.load(open(f"{tmp}/off-{seed}.json"))["test_accuracy"]
        for amp in ("off", "bf16", "fp16"):
            if not os.path.exists(f"{tmp}/{amp}-{seed}.json"):
                continue  # a mode left out with AMPS
            m = json.load(open(f"{tmp}/{amp}-{seed}.json"))
            acc = " | ".join(f"{100 * e['test_accuracy']:.2f}%" for e in m["per_epoch"])
            diff = 100 * (m["test_accuracy"] - base)
            scale = m.get("loss_scale", "-")
            print(f"| {seed} | {amp} | {acc} | {diff:+.2f} | {m.get('skipped_steps', 0)} | {scale} |")


if __name__ == "__main__":
    main()
