"""Turns the JSON files of bench/train.sh into the markdown of bench/results/train-DATE.md."""
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
    tmp, repeats, rss_steps = sys.argv[1], sys.argv[2], sys.argv[3]
    print("# Training benchmarks\n")
    print(f"- date: {datetime.now(timezone.utc).strftime('%Y-%m-%dT%H:%MZ')}")
    print(f"- commit: {run('git rev-parse --short HEAD')}")
    cpu = run("lscpu | grep 'Model name' | sed 's/Model name: *//'")
    print(f"- machine: {cpu}, {os.cpu_count()} cores")
    torch_version = run("/usr/bin/python3 -c 'import torch; print(torch.__version__)'")
    print(f"- PyTorch {torch_version} (Debian python3-torch); fastest = OpenBLAS SkylakeX + ATEN avx512 + jemalloc without decay")
    print(f"- command: `bash bench/train.sh {repeats} {rss_steps}`")
    print("- protocol: ../shared/BENCHMARKS.md — batch 128 training (SGD lr 0.05 momentum 0.9), batch 512 inference,"
          " 10 warm-up + 50 timed steps, median of 3 inside each run, median over the runs; 2 threads; float32")
    print()
    print("| model | frugal train img/s | PyTorch fastest | PyTorch default | frugal / fastest | frugal inference img/s | PyTorch fastest inference | frugal / fastest |")
    print("|---|---|---|---|---|---|---|---|")
    for model in ("cnn", "mobilenet", "mlp"):
        fr = load(f"{tmp}/speed-{model}-frugal-*.json")
        tf = load(f"{tmp}/speed-{model}-torch_fast-*.json")
        td = load(f"{tmp}/speed-{model}-torch_default-*.json")
        med = lambda runs, k: statistics.median(r[k] for r in runs)
        ratio = lambda k: statistics.median(f[k] / t[k] for f, t in zip(fr, tf))
        print(f"| {model} | {med(fr, 'train_images_per_sec'):.0f} | {med(tf, 'train_images_per_sec'):.0f} | "
              f"{med(td, 'train_images_per_sec'):.0f} | {ratio('train_images_per_sec'):.2f} | "
              f"{med(fr, 'inference_images_per_sec'):.0f} | {med(tf, 'inference_images_per_sec'):.0f} | "
              f"{ratio('inference_images_per_sec'):.2f} |")
    print()
    print(f"## Peak RSS training {rss_steps} steps (whole data set loaded), each in a fresh process\n")
    print("| model | frugal-train peak RSS | frugal peak allocated (allocator) | PyTorch reference peak RSS | frugal / PyTorch |")
    print("|---|---|---|---|---|")
    mib = lambda b: f"{b / 2**20:.0f} MiB"
    for model in ("cnn", "mobilenet", "mlp"):
        f = json.load(open(f"{tmp}/rss-{model}-frugal.json"))
        t = json.load(open(f"{tmp}/rss-{model}-torch_fast.json"))
        print(f"| {model} | {mib(f['peak_rss_bytes'])} | {mib(f['peak_allocated_bytes'])} | {mib(t['peak_rss_bytes'])} | "
              f"{f['peak_rss_bytes'] / t['peak_rss_bytes']:.2f} |")
    print()


if __name__ == "__main__":
    main()
