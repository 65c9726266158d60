// The caching allocator's pools (internal): cached free blocks are kept per pool (small,
// large) and per stream, because a block may be reused at once only on its own stream;
// and the bookkeeping that runs whenever a block enters or leaves a pool's free index,
// inline because it runs on every allocation and free.
#pragma once

#include <memory>
#include <vector>

#include "allocator/block.h"
#include "allocator/caching_allocator.h"
#include "allocator/free_index.h"
#include "allocator/live_stats.h"

namespace frugal::alloc {

// The free blocks of one pool on one stream, and its expandable ranges.
struct CachingAllocator::StreamPool {
  PoolKind kind;
  StreamId stream;
  FreeIndex free_blocks;
  std::vector<Segment*> ranges;
};

struct CachingAllocator::Pool {
  std::vector<std::unique_ptr<StreamPool>> streams;
  StreamPool* last_used = nullptr;  // most lookups repeat the previous stream
};

#define FRUGAL_HOT [[gnu::always_inline]] inline

FRUGAL_HOT CachingAllocator::StreamPool& CachingAllocator::stream_pool(PoolKind kind,
                                                                       StreamId stream) {
  Pool& pool = *pools_[static_cast<int>(kind)];
  if (pool.last_used != nullptr && pool.last_used->stream == stream) [[likely]] {
    return *pool.last_used;
  }
  return find_stream_pool(pool, kind, stream);
}

// A cached block's bytes that empty_cache() could not give back: all of it when it shares a
// segment with other blocks, or, in an expandable segment, the parts of granules it shares
// with neighbours. These are PyTorch's "inactive_split" (non-releasable) stats.
FRUGAL_HOT std::size_t CachingAllocator::non_releasable_bytes(const Block* block) const {
  if (!block->segment->expandable) return block->is_split() ? block->size : 0;
  const std::uintptr_t mask = granularity_ - 1;  // a power of two
  const std::uintptr_t g0 = (block->address + mask) & ~mask, g1 = block->end() & ~mask;
  return g1 > g0 ? block->size - (g1 - g0) : block->size;
}

FRUGAL_HOT void CachingAllocator::index_insert(Block* block) {
  block->segment->free_blocks->insert(block);
  if (const std::size_t bytes = non_releasable_bytes(block)) {
    live_.inactive_split.increase(block->segment->pool, 1);
    live_.inactive_split_bytes.increase(block->segment->pool, static_cast<std::int64_t>(bytes));
  }
}

FRUGAL_HOT void CachingAllocator::index_erase(Block* block) {
  block->segment->free_blocks->erase(block);
  if (const std::size_t bytes = non_releasable_bytes(block)) {
    live_.inactive_split.decrease(block->segment->pool, 1);
    live_.inactive_split_bytes.decrease(block->segment->pool, static_cast<std::int64_t>(bytes));
  }
}

}  // namespace frugal::alloc
