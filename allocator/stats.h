// Allocator statistics under PyTorch's names (torch.cuda.memory_stats), so that a PyTorch
// user reads them without a manual: each stat has current / peak / allocated / freed, for
// all blocks and for the small and large pools.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>

namespace frugal::alloc {

struct Stat {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  std::int64_t allocated = 0;         // total added since the last reset
  std::int64_t current_at_reset = 0;  // `current` when the totals were last reset

  // Total removed since the last reset. Derived, so that a decrease — on every free — is
  // a single subtraction.
  std::int64_t freed() const { return allocated - (current - current_at_reset); }

  void increase(std::int64_t amount) {
    current += amount;
    allocated += amount;
    if (current > peak) peak = current;
  }
  void decrease(std::int64_t amount) { current -= amount; }
  void reset_peak() { peak = current; }
  void reset_accumulated() {
    allocated = 0;
    current_at_reset = current;
  }
};

enum class PoolKind : int { kSmall = 0, kLarge = 1 };

// all / small_pool / large_pool
struct StatArray {
  std::array<Stat, 3> by_type;
  Stat& all() { return by_type[0]; }
  const Stat& all() const { return by_type[0]; }
  Stat& pool(PoolKind kind) { return by_type[1 + static_cast<int>(kind)]; }
  const Stat& pool(PoolKind kind) const { return by_type[1 + static_cast<int>(kind)]; }
  // Applies the change to "all" and to the pool.
  void increase(PoolKind kind, std::int64_t amount) {
    by_type[0].increase(amount);
    pool(kind).increase(amount);
  }
  void decrease(PoolKind kind, std::int64_t amount) {
    by_type[0].decrease(amount);
    pool(kind).decrease(amount);
  }
};

struct DeviceStats {
  StatArray allocation;      // blocks handed to users
  StatArray segment;         // device allocations (or mapped expandable ranges)
  StatArray active;          // allocated, or freed but still in use by another stream
  StatArray inactive_split;  // free blocks that cannot be released (part of a segment)
  StatArray allocated_bytes;
  StatArray reserved_bytes;  // memory obtained from the device
  StatArray active_bytes;
  StatArray inactive_split_bytes;
  StatArray requested_bytes;  // what users asked for, before rounding

  std::int64_t num_alloc_retries = 0;  // device refused, cache freed, tried again
  std::int64_t num_ooms = 0;           // out-of-memory errors thrown
  std::int64_t num_sync_all_streams = 0;
  std::int64_t num_device_alloc = 0;  // allocate + map calls on the backend
  std::int64_t num_device_free = 0;   // deallocate + unmap calls on the backend
  Stat oversize_allocations;          // allocations above max_split_size
  Stat oversize_segments;
  std::int64_t max_split_size = 0;

  // Flat view with PyTorch's keys: "allocated_bytes.all.peak", "num_ooms", ...
  std::map<std::string, std::int64_t> as_map() const;
};

}  // namespace frugal::alloc
