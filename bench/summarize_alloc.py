"""Turns the JSON of bench/alloc.sh into the Markdown record kept in bench/results/."""
import glob
import json
import os
import statistics
import subprocess
import sys


def sh(cmd):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()


def main(folder, repeats):
    runs = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(folder, "bench-*.json")))]
    by_key = {}
    for run in runs:
        for r in run["results"]:
            by_key.setdefault((r["subject"], r["threads"]), []).append(r)
    default = json.load(open(os.path.join(folder, "replay-default.json")))
    pytorch = json.load(open(os.path.join(folder, "replay-pytorch.json")))

    print("# Allocator benchmarks")
    print()
    print(f"- date: {sh('date -u +%Y-%m-%dT%H:%MZ')}")
    print(f"- commit: {sh('git rev-parse --short HEAD')}")
    model = sh("lscpu | grep 'Model name' | sed 's/.*: *//'")
    print(f"- machine: {model}, {sh('nproc')} cores")
    print(f"- compiler: {sh('g++ --version | head -1')}")
    build = os.environ.get("FRUGAL_BUILD_DIR")
    prefix = f"FRUGAL_BUILD_DIR={build} " if build else ""
    print(f"- command: `{prefix}bash bench/alloc.sh {repeats}`")
    load = os.path.join(folder, "load.txt")
    if os.path.exists(load):
        print(f"- machine load (1/5/15-minute averages, shared 2-core machine), {open(load).read().strip()}")
    print(f"- timer overhead subtracted per window: {runs[0]['timer_overhead_ns']:.1f} ns "
          "(the virtual TSC here advances in steps of about 10 ns)")
    print()
    print("## frugal-alloc-bench")
    print()
    print(f"Sizes {runs[0]['sizes']}, {runs[0]['live_blocks_per_thread']} live blocks per thread "
          f"freed and replaced at random, {len(runs)} runs of 200,000 measured pairs per thread. "
          "Each cell: median over the runs of the per-run median (min - max of the runs).")
    print()
    print("- *back to back*: runs of 16 pairs of random sizes, each block allocated and at once "
          "freed, one timed window per run (ns per pair), a random replacement before each run;")
    print("- *on its own*: one pair, its two calls timed apart, the block checked and stamped "
          "between them (on host memory the stamps touch up to 8 pages of the block, which "
          "evicts the allocator's entries from the TLB);")
    print("- *free random + malloc*: one live block freed at random and replaced, timed together.")
    print()
    print("| allocator | threads | pairs back to back, median ns | p99 ns | a pair on its own, median ns | p99 ns | "
          "free random + malloc, median ns | p99 ns |")
    print("|---|---|---|---|---|---|---|---|")
    for (subject, threads), rs in by_key.items():
        def cell(key):
            values = [r[key] for r in rs]
            return f"{statistics.median(values):.0f} ({min(values):.0f} - {max(values):.0f})"
        print(f"| {subject} | {threads} | {cell('back_to_back_median_ns')} | {cell('back_to_back_p99_ns')} | "
              f"{cell('median_ns')} | {cell('p99_ns')} | "
              f"{cell('replace_median_ns')} | {cell('replace_p99_ns')} |")
    plain, history = by_key.get(("caching, host memory", 1)), by_key.get(("caching, host memory, history on", 1))
    if plain and history:
        # Each pair records two events (alloc, free_completed): the difference per pair, halved.
        def med(rs, key):
            return statistics.median(r[key] for r in rs)
        per_event = [(med(history, k) - med(plain, k)) / 2
                     for k in ("back_to_back_median_ns", "median_ns", "replace_median_ns")]
        print()
        print("Memory history on (`record_history`, a ring of 65,536 events), single thread: "
              f"{per_event[0]:.1f} ns per event back to back, {per_event[1]:.1f} ns for a pair on its own, "
              f"{per_event[2]:.1f} ns for free random + malloc (the difference in median ns per pair, "
              "halved: each pair records an alloc and a free_completed).")
    failures = sum(r["check_failures"] for r in runs)
    print()
    print(f"Block checks (alignment, overlap with live blocks, patterns on host memory): "
          f"{failures} failures.")
    print()
    print("## cnn-fixed.trace (frugal-alloc-replay)")
    print()
    print("| settings | peak requested | peak allocated | peak reserved | reserved / allocated | "
          "min capacity | min capacity / peak requested | ns per event |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in (("frugal defaults (" + default["config"] + ")", default),
                    ("PyTorch's default policy (" + pytorch["config"] + ")", pytorch)):
        print(f"| {name} | {r['peak_requested']:,} | {r['peak_allocated']:,} | "
              f"{r['peak_reserved']:,} | {r['reserved_over_allocated']:.4f} | "
              f"{r['min_capacity']:,} | {r['min_capacity_over_peak_requested']:.4f} | "
              f"{r['ns_per_event']:.1f} |")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
