// The allocator's running counters (internal), kept in the form that is cheapest to update
// on every allocation and free, and published as PyTorch-shaped DeviceStats when read:
//  - per pool only; "all" is the sum, except its peak, which is tracked;
//  - "freed" totals are derived (see Stat::freed);
//  - "active" is not counted at all: it is allocated + pending (freed by its user while
//    another stream may still use it), and pending blocks are rare.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "allocator/stats.h"

namespace frugal::alloc {

class PoolCounter {
 public:
  void increase(PoolKind kind, std::int64_t amount) {
    pools_[static_cast<int>(kind)].increase(amount);
    all_peak_ = std::max(all_peak_, current_all());
  }
  void decrease(PoolKind kind, std::int64_t amount) {
    pools_[static_cast<int>(kind)].decrease(amount);
  }
  // A decrease by `removed` followed by an increase by `added`, as one update. The value in
  // between is below the peak, so current, total and peak come out exactly as with two.
  void replace(PoolKind kind, std::int64_t removed, std::int64_t added) {
    Stat& s = pools_[static_cast<int>(kind)];
    s.current += added - removed;
    s.allocated += added;
    if (s.current > s.peak) s.peak = s.current;
    all_peak_ = std::max(all_peak_, current_all());
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
  PoolCounter allocation, segment, inactive_split, allocated_bytes, reserved_bytes,
      inactive_split_bytes, requested_bytes;
  PoolCounter pending_count, pending_bytes;  // freed, waiting for other streams
  // Peaks of active = allocated + pending, tracked only while something is pending:
  // otherwise they equal the allocated peaks. Indexed all / small / large.
  std::array<std::int64_t, 3> active_count_peak{}, active_bytes_peak{};
  Stat oversize_allocations, oversize_segments;
  std::int64_t num_alloc_retries = 0, num_ooms = 0, num_sync_all_streams = 0;
  std::int64_t num_device_alloc = 0, num_device_free = 0;

  PoolCounter* counters[9] = {&allocation,     &segment,         &inactive_split,
                              &allocated_bytes, &reserved_bytes,  &inactive_split_bytes,
                              &requested_bytes, &pending_count,   &pending_bytes};

  LiveStats() = default;
  LiveStats(const LiveStats&) = delete;
  LiveStats& operator=(const LiveStats&) = delete;

  // Called on allocation while blocks are pending.
  void note_active_peaks(PoolKind kind) {
    auto bump = [](std::array<std::int64_t, 3>& peak, int i, std::int64_t now) {
      peak[i] = std::max(peak[i], now);
    };
    const int p = 1 + static_cast<int>(kind);
    bump(active_count_peak, 0, allocation.current_all() + pending_count.current_all());
    bump(active_count_peak, p, allocation.current(kind) + pending_count.current(kind));
    bump(active_bytes_peak, 0, allocated_bytes.current_all() + pending_bytes.current_all());
    bump(active_bytes_peak, p, allocated_bytes.current(kind) + pending_bytes.current(kind));
  }

  void reset_peak() {
    for (PoolCounter* c : counters) c->reset_peak();
    oversize_allocations.reset_peak();
    oversize_segments.reset_peak();
    const StatArray a = allocation.publish(), pc = pending_count.publish();
    const StatArray b = allocated_bytes.publish(), pb = pending_bytes.publish();
    for (int i = 0; i < 3; ++i) {
      active_count_peak[i] = a.by_type[i].current + pc.by_type[i].current;
      active_bytes_peak[i] = b.by_type[i].current + pb.by_type[i].current;
    }
  }

  void reset_accumulated() {
    for (PoolCounter* c : counters) c->reset_accumulated();
    oversize_allocations.reset_accumulated();
    oversize_segments.reset_accumulated();
    num_alloc_retries = num_ooms = num_sync_all_streams = 0;
    num_device_alloc = num_device_free = 0;
  }

  DeviceStats publish(std::int64_t max_split_size) const {
    DeviceStats s;
    s.allocation = allocation.publish();
    s.segment = segment.publish();
    s.inactive_split = inactive_split.publish();
    s.allocated_bytes = allocated_bytes.publish();
    s.reserved_bytes = reserved_bytes.publish();
    s.inactive_split_bytes = inactive_split_bytes.publish();
    s.requested_bytes = requested_bytes.publish();
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
