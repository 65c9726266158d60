# Turns the JSON files of bench/loader.sh into the markdown of bench/results/loader-DATE.md:
# medians over the interleaved repeats, ratios as medians of the per-repeat ratios, and the
# peak RSS of the long runs epoch by epoch.
import json
import os
import platform
import statistics
import subprocess
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def cpu_model():
    for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def main():
    tmp, repeats, epochs_long, command = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    runs = range(1, repeats + 1)
    rate = lambda name, w, i: load(f"{tmp}/{name}-w{w}-{i}.json")["images_per_sec"]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    torch_version = load(f"{tmp}/torch_fast-w0-1.json")["torch"]
    print("# Data-loader benchmark\n")
    print(f"- date: {subprocess.run(['date', '-u', '+%Y-%m-%dT%H:%MZ'], capture_output=True, text=True).stdout.strip()}")
    print(f"- commit: {commit}")
    print(f"- machine: {cpu_model()}, {os.cpu_count()} cores")
    print(f"- load (uptime) before: `{open(tmp + '/load-before.txt').read().strip()}`")
    print(f"- load (uptime) after: `{open(tmp + '/load-after.txt').read().strip()}`")
    print(f"- PyTorch {torch_version} (Debian python3-torch), torchvision (python3-torchvision), Pillow (python3-pil); "
          "fastest = OpenBLAS SkylakeX + ATen avx512 + jemalloc without decay (bench/torch/env.sh)")
    print(f"- command: `{command}`")
    print("- work: 10,000 Fashion-MNIST training images as PNG files (frugal-bench-write-images), decoded to gray, "
          "RandomCrop(28, padding=2), RandomHorizontalFlip, ToTensor, Normalize(0.2860, 0.3530), batch 128, shuffled; "
          "worker threads (processes for PyTorch) persistent across epochs; "
          "each run 3 epochs, its figure the median epoch; runs interleaved frugal / PyTorch fastest / frugal shards / "
          f"PyTorch default, {repeats} times; figures below are medians over the repeats\n")
    print("| workers | frugal PNG img/s | PyTorch fastest img/s | PyTorch default img/s | frugal / best PyTorch "
          "| frugal shards img/s | shards / frugal PNG |")
    print("|---|---|---|---|---|---|---|")
    for w in (0, 2):
        f = [rate("frugal-png", w, i) for i in runs]
        tf = [rate("torch_fast", w, i) for i in runs]
        td = [rate("torch_default", w, i) for i in runs]
        s = [rate("frugal-shards", w, i) for i in runs]
        vs_torch = statistics.median(f[i] / max(tf[i], td[i]) for i in range(repeats))
        vs_png = statistics.median(s[i] / f[i] for i in range(repeats))
        print(f"| {w} | {statistics.median(f):,.0f} | {statistics.median(tf):,.0f} | {statistics.median(td):,.0f} | "
              f"{vs_torch:.1f}x | {statistics.median(s):,.0f} | {vs_png:.1f}x |")
    print("\n## Peak memory\n")
    print("| run | peak RSS |")
    print("|---|---|")
    for w in (0, 2):
        f = load(f"{tmp}/frugal-png-w{w}-1.json")["peak_rss_bytes"]
        t = load(f"{tmp}/torch_fast-w{w}-1.json")["peak_rss_bytes"]
        print(f"| frugal PNG, {w} workers (one process) | {f / 2**20:.1f} MiB |")
        print(f"| PyTorch, {w} workers (main + worker processes, VmHWM summed) | {t / 2**20:.1f} MiB |")
    print(f"\n## Peak RSS over {epochs_long} epochs (2 workers)\n")
    print("| source | after epoch 1 | after the last epoch | growth | epochs whose peak moved |")
    print("|---|---|---|---|---|")
    for name, label in (("long-png", "PNG files, a worker team per epoch"), ("long-shards", "shards, pinned batches")):
        j = load(f"{tmp}/{name}.json")
        peaks = [e["peak_rss_bytes"] for e in j["per_epoch"]]
        moved = sum(1 for a, b in zip(peaks, peaks[1:]) if b != a)
        print(f"| {label} | {peaks[0] / 2**20:.2f} MiB | {peaks[-1] / 2**20:.2f} MiB | "
              f"{j['peak_rss_growth_percent']:+.2f}% | {moved} of {len(peaks) - 1} |")
    pack = load(f"{tmp}/pack.json")
    print(f"\nShards: {pack['samples']} samples in {pack['shards']} raw shards, {pack['bytes'] / 2**20:.2f} MiB, "
          f"packed in {pack['seconds']:.2f} s (frugal-pack).")


if __name__ == "__main__":
    main()
