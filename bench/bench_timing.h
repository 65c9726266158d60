// Timing helpers shared by the engine benchmarks: a steady-clock stopwatch and medians.
// Each figure is a median over many samples, because the shared machine drifts.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace frugal::bench {

inline double now_ns() {
  return std::chrono::duration<double, std::nano>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  return v[mid];
}

// Median wall time in ns of fn(), after `warmup` untimed calls.
template <class F>
double median_ns(int warmup, int reps, const F& fn) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const double t0 = now_ns();
    fn();
    t.push_back(now_ns() - t0);
  }
  return median(t);
}

}  // namespace frugal::bench
