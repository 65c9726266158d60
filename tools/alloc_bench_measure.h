// frugal-alloc-bench's measurement, included by alloc_bench.cpp: the block checks (alignment,
// overlap, stamps), one thread's timed loop over a subject, and the per-thread merge into medians.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/progress.h"
#include "tools/alloc_bench_subjects.h"
#include "tools/cycle_timer.h"

namespace frugal::tools {

// A pattern of 64-byte stamps at both ends of the block and at 6 evenly spaced places in
// between: enough to catch memory handed out twice or unmapped under its owner, while
// touching little enough not to flush the allocator's own data from the CPU caches.
template <typename F>
void for_each_stamp(const Handle& h, F f) {
  constexpr std::size_t kStamps = 8, kStamp = 64;
  auto* bytes = static_cast<unsigned char*>(h.ptr);
  const std::size_t n = std::min(kStamp, h.size);
  for (std::size_t i = 0; i < kStamps; ++i) {
    f(bytes + (h.size - n) * i / (kStamps - 1), n);
  }
}

// The alignment a subject promises, which the checks hold it to: frugal's 512 bytes unless the
// subject says otherwise (cudaMalloc and cudaMallocAsync promise CUDA's 256).
template <typename Subject>
std::size_t promised_alignment(const Subject& subject) {
  if constexpr (requires { subject.alignment(); }) {
    return subject.alignment();
  } else {
    return kAlignment;
  }
}

struct Failures {
  std::atomic<std::uint64_t> misaligned{0}, overlapping{0}, corrupted{0};
  std::uint64_t total() const { return misaligned + overlapping + corrupted; }
};

struct Workload {
  std::size_t pairs = 100000;  // measured pairs per thread
  std::size_t warmup = 20000;
  std::size_t live = 64;  // live blocks per thread
  std::uint32_t seed = 1;
};

// Back-to-back pairs timed in one window.
constexpr std::size_t kRun = 16;

struct Times {
  std::vector<double> run_pair;       // ns per pair, one entry per run of kRun pairs
  std::vector<double> pair, replace;  // ns each
};

struct Result {
  std::string subject;
  int threads = 1;
  double run_median_ns = 0, run_p99_ns = 0;          // malloc+free pairs, back to back
  double median_ns = 0, p99_ns = 0;                  // a malloc+free pair on its own
  double replace_median_ns = 0, replace_p99_ns = 0;  // free a random live block + malloc
  double pairs_per_second = 0;                       // whole loop, checks included
  std::uint64_t pairs = 0;
};

// Times three things on this thread's stream:
//  - a malloc+free pair on its own: a block of a random size is allocated, checked, and
//    freed again (the check runs between the two timed halves, outside the timing);
//  - malloc+free pairs back to back: runs of blocks of random sizes, each allocated and
//    freed at once;
//  - a replacement: one of the thread's live blocks, chosen at random, is freed and a new
//    block of a random size takes its place — the random frees that keep the cache's
//    contents changing, so no pair finds the allocator in the state the previous one left.
template <typename Subject>
void run_thread(Subject& subject, const Workload& w, int thread, const tools::CycleTimer& timer,
                LiveSet& live_set, Failures& failures, Times& out,
                const std::function<void(std::size_t)>& progress) {
  std::mt19937_64 rng(w.seed * 7919 + thread);
  std::uniform_real_distribution<double> log_size(std::log(512.0), std::log(64.0 * 1024 * 1024));
  auto random_size = [&] { return static_cast<std::size_t>(std::exp(log_size(rng))); };
  std::vector<Handle> slots(w.live);
  std::vector<unsigned char> patterns(w.live);
  const auto stream = static_cast<StreamId>(thread);
  const std::size_t alignment = promised_alignment(subject);
  out.pair.reserve(w.pairs);
  out.replace.reserve(w.pairs);

  // Checks a block just allocated: aligned, overlapping no live block; stamps a pattern.
  auto admit = [&](const Handle& h, unsigned char pattern) {
    if (reinterpret_cast<std::uintptr_t>(h.ptr) % alignment != 0) ++failures.misaligned;
    if (!live_set.insert(reinterpret_cast<std::uintptr_t>(h.ptr), h.size)) ++failures.overlapping;
    if (subject.host_memory()) {
      for_each_stamp(h, [&](unsigned char* p, std::size_t n) { std::memset(p, pattern, n); });
    }
  };
  // Checks a block allocated and already freed again: aligned, and inside none of this
  // thread's live blocks.
  auto check_placement = [&](const Handle& h) {
    const auto begin = reinterpret_cast<std::uintptr_t>(h.ptr);
    if (begin % alignment != 0) ++failures.misaligned;
    for (const Handle& live : slots) {
      const auto live_begin = reinterpret_cast<std::uintptr_t>(live.ptr);
      if (begin < live_begin + live.size && live_begin < begin + h.size) ++failures.overlapping;
    }
  };
  // Checks a block about to be freed: its pattern is intact; it leaves the live set.
  auto release = [&](const Handle& h, unsigned char pattern) {
    if (subject.host_memory()) {
      for_each_stamp(h, [&](unsigned char* p, std::size_t n) {
        for (std::size_t k = 0; k < n; ++k) {
          if (p[k] != pattern) {
            ++failures.corrupted;
            break;
          }
        }
      });
    }
    live_set.erase(reinterpret_cast<std::uintptr_t>(h.ptr));
  };

  for (std::size_t i = 0; i < w.live; ++i) {
    slots[i] = subject.allocate(random_size(), stream);
    patterns[i] = static_cast<unsigned char>(rng() | 1);
    admit(slots[i], patterns[i]);
  }
  // Frees one live block chosen at random and allocates a block of a random size in its
  // place, checking both; the two calls are timed together.
  auto replace_one = [&](bool measured) {
    const std::size_t i = rng() % w.live;
    const std::size_t new_bytes = random_size();
    release(slots[i], patterns[i]);
    tools::CycleTimer::drain();
    const std::uint64_t t0 = tools::CycleTimer::ticks();
    subject.free(slots[i]);
    slots[i] = subject.allocate(new_bytes, stream);
    const std::uint64_t t1 = tools::CycleTimer::ticks();
    if (measured) out.replace.push_back(timer.ns(t0, t1));
    patterns[i] = static_cast<unsigned char>(rng() | 1);
    admit(slots[i], patterns[i]);
  };

  for (std::size_t it = 0; it < w.warmup + w.pairs; ++it) {
    const bool measured = it >= w.warmup;
    // A pair on its own: allocated, checked and stamped, its stamps read back, and freed.
    // The two calls are timed apart, so the check stays outside the timing, though it
    // leaves the allocator's data colder in the CPU's caches, as the work between a
    // tensor's allocation and its free would.
    const std::size_t bytes = random_size();
    tools::CycleTimer::drain();
    const std::uint64_t t0 = tools::CycleTimer::ticks();
    const Handle h = subject.allocate(bytes, stream);
    const std::uint64_t t1 = tools::CycleTimer::ticks();
    const auto pattern = static_cast<unsigned char>(rng() | 1);
    admit(h, pattern);
    release(h, pattern);
    tools::CycleTimer::drain();
    const std::uint64_t t2 = tools::CycleTimer::ticks();
    subject.free(h);
    const std::uint64_t t3 = tools::CycleTimer::ticks();
    if (measured) out.pair.push_back(timer.ns(t0, t1) + timer.ns(t2, t3));
    replace_one(measured);
    if (thread == 0 && it % 4096 == 0) progress(it);
  }

  // Then pairs back to back: after each replacement, a run of kRun blocks of random sizes,
  // each allocated and at once freed, in one timed window, as allocator benchmarks time
  // warm pairs (the anchors among them: RMM's per-operation figure, PyTorch's at::empty).
  // One window for several pairs also spreads the timer's resolution (a step of about
  // 10 ns here) over them, and counts what a pair leaves for the next (stores still to
  // reach the cache), which a window per call does not. Checked afterwards: aligned, and
  // overlapping none of this thread's live blocks, which do not change in the window
  // (blocks of other threads are checked above).
  std::vector<std::size_t> run_sizes(kRun);
  std::vector<Handle> run(kRun);
  for (std::size_t it = 0; it < w.pairs / kRun; ++it) {
    replace_one(false);
    for (std::size_t& run_size : run_sizes) run_size = random_size();
    tools::CycleTimer::drain();
    const std::uint64_t t0 = tools::CycleTimer::ticks();
    for (std::size_t k = 0; k < kRun; ++k) {
      run[k] = subject.allocate(run_sizes[k], stream);
      subject.free(run[k]);
    }
    const std::uint64_t t1 = tools::CycleTimer::ticks();
    out.run_pair.push_back(timer.ns(t0, t1) / kRun);
    for (const Handle& handle : run) check_placement(handle);
  }
  for (std::size_t i = 0; i < w.live; ++i) {
    release(slots[i], patterns[i]);
    subject.free(slots[i]);
  }
}

template <typename Subject>
Result measure(const std::string& name, Subject& subject, int threads, const Workload& w,
               const tools::CycleTimer& timer, Failures& failures) {
  LiveSet live_set;
  std::vector<Times> times(threads);
  ProgressBar bar(name + " x" + std::to_string(threads), w.warmup + w.pairs);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      run_thread(subject, w, t, timer, live_set, failures, times[t],
                 [&](std::size_t done) { bar.update(done); });
    });
  }
  for (auto& th : pool) th.join();
  bar.finish();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<double> run_pairs, pairs, replaces;
  for (const auto& t : times) {
    run_pairs.insert(run_pairs.end(), t.run_pair.begin(), t.run_pair.end());
    pairs.insert(pairs.end(), t.pair.begin(), t.pair.end());
    replaces.insert(replaces.end(), t.replace.begin(), t.replace.end());
  }
  auto quantile = [](std::vector<double>& v, double q) {
    auto at = v.begin() + static_cast<std::ptrdiff_t>(q * (v.size() - 1));
    std::nth_element(v.begin(), at, v.end());
    return *at;
  };
  Result r;
  r.subject = name;
  r.threads = threads;
  r.pairs = pairs.size();
  r.median_ns = quantile(pairs, 0.5);
  r.p99_ns = quantile(pairs, 0.99);
  r.run_median_ns = quantile(run_pairs, 0.5);
  r.run_p99_ns = quantile(run_pairs, 0.99);
  r.replace_median_ns = quantile(replaces, 0.5);
  r.replace_p99_ns = quantile(replaces, 0.99);
  r.pairs_per_second = static_cast<double>((w.warmup + w.pairs) * threads) / seconds;
  return r;
}

}  // namespace frugal::tools
