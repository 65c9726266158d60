// The caching allocator's limits and read-outs: the memory limit, the counters, the
// out-of-memory report, segment snapshots and the switch for the memory history.
#include <algorithm>
#include <limits>
#include <mutex>
#include <string>

#include "allocator/block.h"
#include "allocator/caching_allocator.h"
#include "allocator/free_index.h"
#include "allocator/live_stats.h"
#include "allocator/pools.h"
#include "common/error.h"

namespace frugal::alloc {

void CachingAllocator::set_memory_limit(std::size_t bytes) {
  std::lock_guard<SpinMutex> lock(mutex_);
  limit_ = bytes;
}

void CachingAllocator::set_memory_fraction(double fraction) {
  FRUGAL_CHECK(
      fraction > 0.0 && fraction <= 1.0,
      "set_memory_fraction: the fraction must be in (0, 1], got " + std::to_string(fraction));
  std::lock_guard<SpinMutex> lock(mutex_);
  limit_ = static_cast<std::size_t>(fraction * static_cast<double>(backend_->total_memory()));
}

std::size_t CachingAllocator::memory_limit() const {
  std::lock_guard<SpinMutex> lock(mutex_);
  return memory_limit_locked();
}

std::size_t CachingAllocator::memory_limit_locked() const {
  const std::size_t total = backend_->total_memory();
  return limit_ == 0 ? total : std::min(limit_, total);
}

DeviceStats CachingAllocator::stats() const {
  std::lock_guard<SpinMutex> lock(mutex_);
  return live_.publish(max_split_size_stat());
}

std::size_t CachingAllocator::memory_allocated() const {
  std::lock_guard<SpinMutex> lock(mutex_);
  return static_cast<std::size_t>(live_.allocated_bytes_all());
}

std::size_t CachingAllocator::memory_reserved() const {
  std::lock_guard<SpinMutex> lock(mutex_);
  return static_cast<std::size_t>(live_.reserved_bytes.current_all());
}

void CachingAllocator::reset_peak_memory_stats() {
  std::lock_guard<SpinMutex> lock(mutex_);
  live_.reset_peak();
}

void CachingAllocator::reset_accumulated_memory_stats() {
  std::lock_guard<SpinMutex> lock(mutex_);
  live_.reset_accumulated();
}

std::size_t CachingAllocator::largest_free_block_locked() const {
  std::size_t largest = 0;
  for (const auto& pool : pools_) {
    for (const auto& sp : pool->streams) {
      if (const Block* b = sp->free_blocks.largest()) largest = std::max(largest, b->size);
    }
  }
  return largest;
}

std::int64_t CachingAllocator::max_split_size_stat() const {
  return config_.max_split_size == std::numeric_limits<std::size_t>::max()
             ? -1
             : static_cast<std::int64_t>(config_.max_split_size);
}

MemoryReport CachingAllocator::memory_report(std::size_t bytes) const {
  std::lock_guard<SpinMutex> lock(mutex_);
  return report_locked(bytes);
}

MemoryReport CachingAllocator::report_locked(std::size_t bytes) const {
  MemoryReport r;
  r.device = backend_->name();
  r.requested = bytes;
  r.capacity = backend_->total_memory();
  r.device_free = backend_->device_free_memory();
  r.limit = memory_limit_locked();
  r.allocated = static_cast<std::size_t>(live_.allocated_bytes_all());
  r.reserved = static_cast<std::size_t>(live_.reserved_bytes.current_all());
  r.largest_free_block = largest_free_block_locked();
  r.expandable_segments = config_.expandable_segments;
  return r;
}

std::vector<SegmentInfo> CachingAllocator::snapshot() const {
  std::lock_guard<SpinMutex> lock(mutex_);
  return snapshot_locked();
}

std::vector<SegmentInfo> CachingAllocator::snapshot_locked() const {
  std::vector<SegmentInfo> out;
  for (const Segment* seg = segments_; seg != nullptr; seg = seg->next_segment) {
    SegmentInfo info;
    info.address = seg->base;
    info.size = seg->size;
    info.mapped = seg->mapped;
    info.pool = seg->pool;
    info.stream = seg->stream;
    info.expandable = seg->expandable;
    for (const Block* b = seg->first; b != nullptr; b = b->next) {
      info.blocks.push_back({b->address, b->size, b->requested, b->allocated, b->mapped, b->pending,
                             b->allocated || b->pending ? b->history_op : 0,
                             b->allocated || b->pending ? b->history_module : 0});
    }
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(),
            [](const SegmentInfo& a, const SegmentInfo& b) { return a.address < b.address; });
  return out;
}

void CachingAllocator::record_history(std::size_t max_entries) {
  std::lock_guard<SpinMutex> lock(mutex_);
  const bool was_on = history_ != nullptr;
  history_ = max_entries == 0 ? nullptr : std::make_unique<MemoryHistory>(max_entries);
  history_on_.store(history_ != nullptr, std::memory_order_relaxed);
  if (was_on != (history_ != nullptr)) allocators_recording_history += was_on ? -1 : 1;
}

void CachingAllocator::name_allocation_op(const Allocation& allocation, std::string_view op) {
  if (!history_on_.load(std::memory_order_relaxed) || allocation.block == nullptr) return;
  const HistoryTag tag = intern_history_tag(op);
  std::lock_guard<SpinMutex> lock(mutex_);
  Block* block = allocation.block;
  // A few events back: the op's own workspaces may have come and gone since its output.
  constexpr std::size_t kWindow = 16;
  if (history_ != nullptr && block->allocated && block->history_op == 0 &&
      history_->name_recent_alloc(block->address, tag, kWindow)) {
    block->history_op = tag;
  }
}

bool CachingAllocator::history_enabled() const {
  std::lock_guard<SpinMutex> lock(mutex_);
  return history_ != nullptr;
}

CachingAllocator::Snapshot CachingAllocator::memory_snapshot() const {
  Snapshot out;
  out.device = backend_->name();
  std::lock_guard<SpinMutex> lock(mutex_);
  out.segments = snapshot_locked();
  if (history_ != nullptr) {
    out.events = history_->events(live_.allocated_bytes_all(), live_.reserved_bytes.current_all());
    out.events_recorded = history_->recorded();
    out.history_capacity = history_->capacity();
  }
  out.allocated = static_cast<std::size_t>(live_.allocated_bytes_all());
  out.reserved = static_cast<std::size_t>(live_.reserved_bytes.current_all());
  return out;
}

void CachingAllocator::set_observer(AllocationObserver* observer) {
  std::lock_guard<SpinMutex> lock(mutex_);
  observer_ = observer;
}

}  // namespace frugal::alloc
