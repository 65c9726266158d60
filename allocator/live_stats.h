// The allocator's running counters (internal), kept in the form that is cheapest to update
// on every allocation and free, and published as PyTorch-shaped DeviceStats when read:
//  - the five statistics that change on every allocation and free (allocation,
//    allocated_bytes, requested_bytes, inactive_split, inactive_split_bytes) are lanes of
//    small vectors, so one update of a few vector instructions covers them all, for the
//    pool and for "all";
//  - the others, which change only with device calls or pending frees, per pool, "all"
//    being the sum, except its peak, which is tracked;
//  - "freed" totals are derived (see Stat::freed);
//  - "active" is not counted at all: it is allocated + pending (freed by its user while
//    another stream may still use it), and pending blocks are rare.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "allocator/stats.h"

namespace frugal::alloc {

// The lanes of HotCounters.
enum HotStat : int {
  kAllocation = 0,
  kAllocatedBytes,
  kRequestedBytes,
  kInactiveSplit,
  kInactiveSplitBytes,
  kHotStats
};

// One value per hot statistic, padded to eight 64-bit lanes: a vector of the GCC/Clang
// vector extension (one AVX-512 register, or two AVX2 ones). Built from scalars, it is
// assembled in registers; an array would be assembled in memory, and a vector load of
// several smaller stores waits until they reach the cache. Only code works on vectors:
// the counters are stored as plain arrays, so no class carries a vector type into code
// that nvcc compiles (it refuses such classes in device code).
using HotLanes = std::int64_t __attribute__((vector_size(64)));
static_assert(kHotStats <= 8);

// Passing a 64-byte vector by value has a different ABI with and without AVX-512, which GCC
// warns about (-Wpsabi) in the portable build; these functions are inline, and every file
// that includes this header is compiled with the same flags (the library's baseline).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
class HotCounters {
 public:
  // Removes `removed` and adds `added`, lane by lane, as one update of current, peak and
  // total, in the pool and in "all". The value in between is below the peak, so the
  // results are exactly those of a decrease followed by an increase.
  void apply(PoolKind kind, const HotLanes& added, const HotLanes& removed) {
    Lanes& p = pools_[static_cast<int>(kind)];
    const HotLanes delta = added - removed;
    const HotLanes now = load(p.current) + delta;
    store(p.current, now);
    const HotLanes peak = load(p.peak);
    store(p.peak, now > peak ? now : peak);
    store(p.allocated, load(p.allocated) + added);
    const HotLanes all = load(all_current_) + delta;
    store(all_current_, all);
    const HotLanes all_peak = load(all_peak_);
    store(all_peak_, all > all_peak ? all : all_peak);
  }
  std::int64_t current(PoolKind kind, HotStat s) const {
    return pools_[static_cast<int>(kind)].current.v[s];
  }
  std::int64_t current_all(HotStat s) const { return all_current_.v[s]; }

  void reset_peak() {
    for (Lanes& p : pools_) p.peak = p.current;
    all_peak_ = all_current_;
  }
  void reset_accumulated() {
    for (Lanes& p : pools_) {
      p.allocated = Array{};
      p.current_at_reset = p.current;
    }
  }
  StatArray publish(HotStat s) const {
    StatArray out;
    for (int k = 0; k < 2; ++k) {
      const Lanes& p = pools_[k];
      out.pool(static_cast<PoolKind>(k)) =
          Stat{p.current.v[s], p.peak.v[s], p.allocated.v[s], p.current_at_reset.v[s]};
    }
    const Stat& small = out.pool(PoolKind::kSmall);
    const Stat& large = out.pool(PoolKind::kLarge);
    out.all() = Stat{all_current_.v[s], all_peak_.v[s], small.allocated + large.allocated,
                     small.current_at_reset + large.current_at_reset};
    return out;
  }

 private:
  struct alignas(64) Array {
    std::int64_t v[8] = {};
  };
  static HotLanes load(const Array& a) {
    HotLanes v;
    std::memcpy(&v, a.v, sizeof v);  // one aligned vector load
    return v;
  }
  static void store(Array& a, const HotLanes& v) { std::memcpy(a.v, &v, sizeof v); }
  struct Lanes {
    Array current, peak, allocated, current_at_reset;
  };
  Lanes pools_[2];  // indexed by PoolKind
  Array all_current_, all_peak_;
};
#pragma GCC diagnostic pop

class PoolCounter {
 public:
  void increase(PoolKind kind, std::int64_t amount) {
    pools_[static_cast<int>(kind)].increase(amount);
    all_peak_ = std::max(all_peak_, current_all());
  }
  void decrease(PoolKind kind, std::int64_t amount) {
    pools_[static_cast<int>(kind)].decrease(amount);
  }
  std::int64_t current(PoolKind kind) const { return pools_[static_cast<int>(kind)].current; }
  std::int64_t current_all() const { return pools_[0].current + pools_[1].current; }

  void reset_peak() {
    for (Stat& s : pools_) s.reset_peak();
    all_peak_ = current_all();
  }
  void reset_accumulated() {
    for (Stat& s : pools_) s.reset_accumulated();
  }
  StatArray publish() const {
    StatArray out;
    out.pool(PoolKind::kSmall) = pools_[0];
    out.pool(PoolKind::kLarge) = pools_[1];
    Stat& all = out.all();
    all.current = current_all();
    all.peak = all_peak_;
    all.allocated = pools_[0].allocated + pools_[1].allocated;
    all.current_at_reset = pools_[0].current_at_reset + pools_[1].current_at_reset;
    return out;
  }

 private:
  std::array<Stat, 2> pools_;  // indexed by PoolKind
  std::int64_t all_peak_ = 0;
};

struct LiveStats {
  HotCounters hot;  // allocation, allocated/requested bytes, inactive_split (+ bytes)
  PoolCounter segment, reserved_bytes;
  PoolCounter pending_count, pending_bytes;  // freed, waiting for other streams
  // Peaks of active = allocated + pending, tracked only while something is pending:
  // otherwise they equal the allocated peaks. Indexed all / small / large.
  std::array<std::int64_t, 3> active_count_peak{}, active_bytes_peak{};
  Stat oversize_allocations, oversize_segments;
  std::int64_t num_alloc_retries = 0, num_ooms = 0, num_sync_all_streams = 0;
  std::int64_t num_device_alloc = 0, num_device_free = 0;

  PoolCounter* counters[4] = {&segment, &reserved_bytes, &pending_count, &pending_bytes};

  LiveStats() = default;
  LiveStats(const LiveStats&) = delete;
  LiveStats& operator=(const LiveStats&) = delete;

  std::int64_t allocated_bytes_all() const { return hot.current_all(kAllocatedBytes); }

  // Called on allocation while blocks are pending.
  void note_active_peaks(PoolKind kind) {
    auto bump = [](std::array<std::int64_t, 3>& peak, int i, std::int64_t now) {
      peak[i] = std::max(peak[i], now);
    };
    const int p = 1 + static_cast<int>(kind);
    bump(active_count_peak, 0, hot.current_all(kAllocation) + pending_count.current_all());
    bump(active_count_peak, p, hot.current(kind, kAllocation) + pending_count.current(kind));
    bump(active_bytes_peak, 0, hot.current_all(kAllocatedBytes) + pending_bytes.current_all());
    bump(active_bytes_peak, p, hot.current(kind, kAllocatedBytes) + pending_bytes.current(kind));
  }

  void reset_peak() {
    hot.reset_peak();
    for (PoolCounter* c : counters) c->reset_peak();
    oversize_allocations.reset_peak();
    oversize_segments.reset_peak();
    const StatArray a = hot.publish(kAllocation), pc = pending_count.publish();
    const StatArray b = hot.publish(kAllocatedBytes), pb = pending_bytes.publish();
    for (int i = 0; i < 3; ++i) {
      active_count_peak[i] = a.by_type[i].current + pc.by_type[i].current;
      active_bytes_peak[i] = b.by_type[i].current + pb.by_type[i].current;
    }
  }

  void reset_accumulated() {
    hot.reset_accumulated();
    for (PoolCounter* c : counters) c->reset_accumulated();
    oversize_allocations.reset_accumulated();
    oversize_segments.reset_accumulated();
    num_alloc_retries = num_ooms = num_sync_all_streams = 0;
    num_device_alloc = num_device_free = 0;
  }

  DeviceStats publish(std::int64_t max_split_size) const {
    DeviceStats s;
    s.allocation = hot.publish(kAllocation);
    s.segment = segment.publish();
    s.inactive_split = hot.publish(kInactiveSplit);
    s.allocated_bytes = hot.publish(kAllocatedBytes);
    s.reserved_bytes = reserved_bytes.publish();
    s.inactive_split_bytes = hot.publish(kInactiveSplitBytes);
    s.requested_bytes = hot.publish(kRequestedBytes);
    s.active = active(s.allocation, pending_count.publish(), active_count_peak);
    s.active_bytes = active(s.allocated_bytes, pending_bytes.publish(), active_bytes_peak);
    s.oversize_allocations = oversize_allocations;
    s.oversize_segments = oversize_segments;
    s.num_alloc_retries = num_alloc_retries;
    s.num_ooms = num_ooms;
    s.num_sync_all_streams = num_sync_all_streams;
    s.num_device_alloc = num_device_alloc;
    s.num_device_free = num_device_free;
    s.max_split_size = max_split_size;
    return s;
  }

 private:
  // Active = allocated + pending, term by term; its peak is the larger of the allocated
  // peak and the peak tracked while blocks were pending.
  static StatArray active(const StatArray& allocated, const StatArray& pending,
                          const std::array<std::int64_t, 3>& tracked_peak) {
    StatArray out;
    for (int i = 0; i < 3; ++i) {
      const Stat& a = allocated.by_type[i];
      const Stat& p = pending.by_type[i];
      Stat& o = out.by_type[i];
      o.current = a.current + p.current;
      o.allocated = a.allocated;
      o.current_at_reset = a.current_at_reset + p.current_at_reset;
      o.peak = std::max(a.peak, tracked_peak[i]);
    }
    return out;
  }
};

}  // namespace frugal::alloc
