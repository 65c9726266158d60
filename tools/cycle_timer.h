// Timing of operations that take tens of nanoseconds: the time-stamp counter, calibrated
// once against the steady clock, with the timer's own overhead measured so it can be
// subtracted. Falls back to the steady clock where there is no TSC.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace frugal::tools {

class CycleTimer {
 public:
  CycleTimer() {
    const auto t0 = std::chrono::steady_clock::now();
    const std::uint64_t c0 = ticks();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(50)) {
    }
    const std::uint64_t c1 = ticks();
    const double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    ns_per_tick_ = ns / static_cast<double>(c1 - c0);
    std::vector<std::uint64_t> empty(1001);
    for (auto& e : empty) {
      const std::uint64_t a = ticks();
      e = ticks() - a;
    }
    std::nth_element(empty.begin(), empty.begin() + 500, empty.end());
    overhead_ticks_ = empty[500];
  }

  // Call before the first ticks() of a measured window: waits until earlier stores have
  // reached the cache, so a store miss left by preceding (unmeasured) work does not stall
  // the measured code.
  static void drain() { std::atomic_thread_fence(std::memory_order_seq_cst); }

  static std::uint64_t ticks() {
#if defined(__x86_64__)
    unsigned aux;
    return __rdtscp(&aux);  // waits for earlier instructions to finish
#else
    return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
  }

  // Nanoseconds between two ticks() readings, less the cost of reading the timer.
  double ns(std::uint64_t start, std::uint64_t end) const {
    const std::uint64_t d = end - start;
    return static_cast<double>(d > overhead_ticks_ ? d - overhead_ticks_ : 0) * ns_per_tick_;
  }
  double overhead_ns() const { return static_cast<double>(overhead_ticks_) * ns_per_tick_; }

 private:
  double ns_per_tick_ = 1.0;
  std::uint64_t overhead_ticks_ = 0;
};

}  // namespace frugal::tools
