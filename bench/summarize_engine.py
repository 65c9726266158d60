"""Turns the JSON files of bench/engine.sh into the markdown of bench/results/engine-DATE.md."""
import glob
import json
import os
import platform
import statistics
import subprocess
import sys
from datetime import datetime, timezone


def load(pattern):
    return [json.load(open(p)) for p in sorted(glob.glob(pattern))]


def run(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


def pairwise_ratio(a_runs, b_runs, key):
    """Median over run pairs of a/b for a figure where smaller is better: b time / a time."""
    return statistics.median(b[key] / a[key] for a, b in zip(a_runs, b_runs))


def main():
    tmp, repeats = sys.argv[1], sys.argv[2]
    model_line = run("lscpu | grep 'Model name' | sed 's/Model name: *//'")
    print("# Engine benchmarks\n")
    print(f"- date: {datetime.now(timezone.utc).strftime('%Y-%m-%dT%H:%MZ')}")
    print(f"- commit: {run('git rev-parse --short HEAD')}")
    print(f"- machine: {model_line}, {os.cpu_count()} cores")
    print(f"- compiler: {run('g++ --version | head -1')}")
    torch_version = run("/usr/bin/python3 -c 'import torch; print(torch.__version__)'")
    print(f"- PyTorch: {torch_version} (Debian python3-torch)")
    print(f"- command: `bash bench/engine.sh {repeats}`")
    print("- PyTorch fastest: OpenBLAS (openmp, SkylakeX), ATEN_CPU_CAPABILITY=avx512, jemalloc without decay;"
          " default: as installed")
    print()

    print("## Op dispatch overhead: a 1-element add (median ns per op)\n")
    fr, tf, td = load(f"{tmp}/ops-frugal-*.json"), load(f"{tmp}/ops-torch_fast-*.json"), load(f"{tmp}/ops-torch_default-*.json")
    rows = [("add, an input requires grad (records a node)", "add_autograd_ns"),
            ("add under no-grad mode", "add_no_grad_guard_ns"),
            ("add, no input requires grad", "add_plain_ns"),
            ("add + sum + backward()", "add_sum_backward_ns")]
    print("| op | frugal | PyTorch fastest | PyTorch default | PyTorch fastest / frugal |")
    print("|---|---|---|---|---|")
    for label, key in rows:
        f = statistics.median(r[key] for r in fr)
        t = statistics.median(r[key] for r in tf)
        d = statistics.median(r[key] for r in td)
        print(f"| {label} | {f:.0f} | {t:.0f} | {d:.0f} | {pairwise_ratio(fr, tf, key):.1f}x |")
    print()

    print("## GEMM, float32 square: frugal::mm against Eigen called directly\n")
    print("Alternating frugal / Eigen, 21 timed pairs; GFLOP/s medians; ratio = median of the pairwise ratios.\n")
    print("| n | threads | frugal GFLOP/s | Eigen GFLOP/s | frugal / Eigen |")
    print("|---|---|---|---|---|")
    for size in (512, 1024):
        for threads in (1, 2):
            r = load(f"{tmp}/gemm-{size}-{threads}.json")[0]
            print(f"| {size} | {threads} | {r['frugal_gflops']:.1f} | {r['eigen_gflops']:.1f} | {r['ratio']:.3f} |")
    print()

    for model in ("cnn", "mobilenet"):
        fr = load(f"{tmp}/conv-{model}-frugal-*.json")
        tf = load(f"{tmp}/conv-{model}-torch_fast-*.json")
        td = load(f"{tmp}/conv-{model}-torch_default-*.json")
        print(f"## conv2d per layer, {model}, batch 128, 2 threads (median ms; ratio = PyTorch fastest time / frugal time, >1 means frugal is faster)\n")
        print("| layer | frugal fwd | frugal fwd+bwd | PyTorch fastest fwd | PyTorch fastest fwd+bwd | PyTorch default fwd+bwd | ratio fwd | ratio fwd+bwd |")
        print("|---|---|---|---|---|---|---|---|")
        names = [l["layer"] for l in fr[0]["layers"]]
        for i, name in enumerate(names):
            def med(runs, key):
                return statistics.median(r["layers"][i][key] for r in runs)

            def ratio(key):
                return statistics.median(t["layers"][i][key] / f["layers"][i][key] for f, t in zip(fr, tf))
            print(f"| {name} | {med(fr, 'forward_ms'):.2f} | {med(fr, 'forward_backward_ms'):.2f} | "
                  f"{med(tf, 'forward_ms'):.2f} | {med(tf, 'forward_backward_ms'):.2f} | {med(td, 'forward_backward_ms'):.2f} | "
                  f"{ratio('forward_ms'):.2f} | {ratio('forward_backward_ms'):.2f} |")
        tot = lambda runs, key: statistics.median(r[key] for r in runs)
        rt = lambda key: statistics.median(t[key] / f[key] for f, t in zip(fr, tf))
        print(f"| all layers | {tot(fr, 'total_forward_ms'):.2f} | {tot(fr, 'total_forward_backward_ms'):.2f} | "
              f"{tot(tf, 'total_forward_ms'):.2f} | {tot(tf, 'total_forward_backward_ms'):.2f} | "
              f"{tot(td, 'total_forward_backward_ms'):.2f} | {rt('total_forward_ms'):.2f} | {rt('total_forward_backward_ms'):.2f} |")
        print()


if __name__ == "__main__":
    main()
