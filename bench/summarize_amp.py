"""Turns the JSON files of bench/amp.sh into the markdown of bench/results/amp-DATE.md."""
import glob
import json
import os
import statistics
import subprocess
import sys
from datetime import datetime, timezone


def load(pattern):
    return [json.load(open(p)) for p in sorted(glob.glob(pattern))]


def run(cmd):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()


def main():
    tmp, repeats, models = sys.argv[1], sys.argv[2], sys.argv[3].split()
    print("# Mixed precision on the CPU\n")
    print(f"- date: {datetime.now(timezone.utc).strftime('%Y-%m-%dT%H:%MZ')}")
    print(f"- commit: {run('git rev-parse --short HEAD')}")
    cpu = run("lscpu | grep 'Model name' | sed 's/Model name: *//'")
    flags = run("grep -o -w 'avx512_bf16\\|amx_bf16\\|avx512_fp16\\|f16c' /proc/cpuinfo | sort -u | tr '\\n' ' '")
    print(f"- machine: {cpu}, {os.cpu_count()} cores ({flags.strip()})")
    torch_version = run("/usr/bin/python3 -c 'import torch; print(torch.__version__)'")
    print(f"- PyTorch {torch_version} (Debian python3-torch) at its fastest (bench/torch/env.sh), "
          "`torch.autocast('cpu', dtype=torch.bfloat16)` around forward and loss")
    print(f"- command: `bash bench/amp.sh {repeats} '{' '.join(models)}'`")
    print(f"- load: before `{open(os.path.join(tmp, 'load-before')).read().strip()}`, "
          f"after `{open(os.path.join(tmp, 'load-after')).read().strip()}`")
    print()
    print("## Memory of one training step (batch 128, SGD with momentum, after a warm-up step)\n")
    print("`frugal-bench-amp-memory`: the CPU allocator's `allocated_bytes.all`; *activations* = what the graph "
          "holds once forward and loss are done (saved tensors, weight casts, logits), *step* = the step's peak "
          "minus what was allocated before it (activations + gradients + transients).\n")
    print("| model | amp | activations | / float32 | step peak - before | / float32 | peak allocated | / float32 |")
    print("|---|---|---|---|---|---|---|---|")
    mib = lambda b: f"{b / 2**20:.1f} MiB"
    for model in ("cnn", "mobilenet"):
        m = json.load(open(f"{tmp}/memory-{model}.json"))
        for r in m["modes"]:
            step = r["peak_allocated_bytes"] - r["before_step_bytes"]
            print(f"| {model} | {r['amp']} | {mib(r['activation_bytes'])} | {r['activation_fraction']:.3f} | "
                  f"{mib(step)} | {r['step_fraction']:.3f} | {mib(r['peak_allocated_bytes'])} | "
                  f"{r['peak_fraction']:.3f} |")
    print()
    print("## Speed (2 threads; training batch 128, inference batch 512; 10 warm-up + 50 timed steps, median of 3 "
          f"inside each run, median over {repeats} alternating runs)\n")
    print("| model | what | frugal float32 | frugal bf16 | bf16 / float32 | PyTorch float32 | PyTorch bf16 autocast | "
          "frugal bf16 / PyTorch bf16 |")
    print("|---|---|---|---|---|---|---|---|")
    for model in models:
        f32 = load(f"{tmp}/speed-{model}-frugal-off-*.json")
        fbf = load(f"{tmp}/speed-{model}-frugal-bf16-*.json")
        t32 = load(f"{tmp}/speed-{model}-torch-off-*.json")
        tbf = load(f"{tmp}/speed-{model}-torch-bf16-*.json")
        for key, name in (("train_images_per_sec", "training img/s"), ("inference_images_per_sec", "inference img/s")):
            med = lambda runs: statistics.median(r[key] for r in runs)
            pair = lambda a, b: statistics.median(x[key] / y[key] for x, y in zip(a, b))
            print(f"| {model} | {name} | {med(f32):.0f} | {med(fbf):.0f} | {pair(fbf, f32):.2f} | {med(t32):.0f} | "
                  f"{med(tbf):.0f} | {pair(fbf, tbf):.2f} |")


if __name__ == "__main__":
    main()
