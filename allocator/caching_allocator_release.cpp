// The caching allocator giving memory back: empty_cache, the release of whole free segments
// (or free pages of expandable ones), and the garbage collection that runs near the limit.
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "allocator/asan_poison.h"
#include "allocator/block.h"
#include "allocator/caching_allocator.h"
#include "allocator/free_index.h"
#include "allocator/live_stats.h"
#include "allocator/pools.h"

namespace frugal::alloc {

void CachingAllocator::empty_cache() {
  std::lock_guard<SpinMutex> lock(mutex_);
  release_cached(/*wait_for_events=*/false);
}

std::size_t CachingAllocator::release_cached(bool wait_for_events) {
  if (!pending_.empty()) {
    if (wait_for_events) ++live_.num_sync_all_streams;
    process_events(wait_for_events);
  }
  std::size_t released = 0;
  for (Segment* seg = segments_; seg != nullptr;) {
    Segment* next = seg->next_segment;
    released += seg->expandable ? unmap_free_pages(seg) : release_segment_if_free(seg);
    seg = next;
  }
  return released;
}

std::size_t CachingAllocator::release_segment_if_free(Segment* seg) {
  Block* block = seg->first;
  if (!block->is_cached() || block->next != nullptr) return 0;
  index_erase(block);
  if (poison_) unpoison_memory(seg->base, seg->size);
  backend_->deallocate(reinterpret_cast<void*>(seg->base), seg->size);
  ++live_.num_device_free;
  live_.segment.decrease(seg->pool, 1);
  live_.reserved_bytes.decrease(seg->pool, static_cast<std::int64_t>(seg->size));
  if (seg->size >= config_.max_split_size) live_.oversize_segments.decrease(1);
  const std::size_t released = seg->size;
  if (history_ != nullptr) {
    const HistoryContext& c = current_history_context;
    note_history(HistoryAction::kSegmentFree, seg->base, seg->size, seg->stream, seg->pool, c.op,
                 c.module);
  }
  delete_block(block);
  unlink_segment(seg);
  delete seg;
  return released;
}

void CachingAllocator::garbage_collect(std::size_t needed) {
  // Like PyTorch's garbage_collection_threshold: once reserved memory passes the threshold
  // of the limit, release the releasable free blocks that have waited longest for reuse
  // (older than the average age), until back under the threshold.
  const auto threshold =
      static_cast<std::size_t>(config_.garbage_collection_threshold * memory_limit_locked());
  const auto reserved = static_cast<std::size_t>(live_.reserved_bytes.current_all());
  if (reserved + needed <= threshold) return;
  const std::size_t target = reserved + needed - threshold;
  std::size_t reclaimed = 0;
  while (reclaimed < target) {
    std::vector<std::pair<std::uint64_t, Segment*>> candidates;  // age, segment
    std::uint64_t total_age = 0;
    for (Segment* seg = segments_; seg != nullptr; seg = seg->next_segment) {
      if (seg->expandable || seg->pool != PoolKind::kLarge) continue;
      if (seg->first->is_cached() && seg->first->next == nullptr) {
        const std::uint64_t age = tick_ - seg->first->free_tick;
        candidates.emplace_back(age, seg);
        total_age += age;
      }
    }
    bool any_expandable_cache = false;
    for (Segment* seg = segments_; seg != nullptr; seg = seg->next_segment) {
      any_expandable_cache |= seg->expandable && seg->mapped > 0;
    }
    if (candidates.empty()) {
      // Expandable segments: unmap the free pages instead.
      if (any_expandable_cache) {
        for (Segment* seg = segments_; seg != nullptr; seg = seg->next_segment) {
          if (seg->expandable) reclaimed += unmap_free_pages(seg);
        }
      }
      return;
    }
    const double average = static_cast<double>(total_age) / candidates.size();
    for (auto [age, seg] : candidates) {
      if (static_cast<double>(age) >= average && reclaimed < target) {
        reclaimed += release_segment_if_free(seg);
      }
    }
  }
}

}  // namespace frugal::alloc
