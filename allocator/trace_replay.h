// Replaying an allocation trace on a simulated device: what the allocator reserved, where
// it ran out of memory, how fast it served the events, and the smallest device on which
// the whole trace completes. The engine behind frugal-alloc-replay, and used by tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "allocator/config.h"
#include "allocator/stats.h"
#include "allocator/trace.h"

namespace frugal::alloc {

inline constexpr std::size_t kUnlimitedCapacity = std::size_t{1} << 40;  // 1 TiB

struct ReplayResult {
  std::size_t capacity = 0;
  std::size_t events = 0;
  std::size_t ooms = 0;  // allocations refused (their frees are skipped)
  std::int64_t peak_requested = 0;
  std::int64_t peak_allocated = 0;
  std::int64_t peak_reserved = 0;
  double seconds = 0;
  DeviceStats stats;

  bool completed() const { return ooms == 0; }
  double reserved_over_allocated() const {
    return peak_allocated ? static_cast<double>(peak_reserved) / peak_allocated : 0.0;
  }
  double ns_per_event() const { return events ? seconds * 1e9 / events : 0.0; }
};

ReplayResult replay_trace(const Trace& trace, std::size_t capacity, const AllocatorConfig& config);

struct MinCapacity {
  std::size_t capacity = 0;  // smallest completing capacity found, a multiple of resolution
  int replays = 0;
};

// Bisection between peak requested and the unlimited run's peak reserved, then a check of
// the few capacities just below the answer (more memory never hurting is assumed, and
// verified locally). `on_replay` is called after each replay (for a progress bar).
MinCapacity find_min_capacity(const Trace& trace, const AllocatorConfig& config,
                              std::size_t resolution = std::size_t{2} << 20,
                              const std::function<void(int)>& on_replay = {});

}  // namespace frugal::alloc
