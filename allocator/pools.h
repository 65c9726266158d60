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
};

#define FRUGAL_HOT [[gnu::always_inline]] inline

FRUGAL_HOT CachingAllocator::StreamPool& CachingAllocator::stream_pool(PoolKind kind,
                                                                       StreamId stream) {
  StreamPool* last = last_used_[static_cast<int>(kind)];
  if (last != nullptr && last->stream == stream) [[likely]]
    return *last;
  return find_stream_pool(*pools_[static_cast<int>(kind)], kind, stream);
}

// A cached block's bytes that empty_cache() could not give back: all of it when it shares a
// segment with other blocks, or, in an expandable segment, the parts of granules it shares
// with neighbours. These are PyTorch's "inactive_split" (non-releasable) stats.
FRUGAL_HOT std::size_t CachingAllocator::non_releasable_bytes(const Block* block) const {
  if (!block->segment->expandable) return block->is_split() ? block->size : 0;
  const std::uintptr_t mask = granularity_ - 1;  // a power of two
  const std::uintptr_t g0 = (block->address + mask) & ~mask, g1 = block->end() & ~mask;
  // The bytes of the granules it covers whole, selected by mask: whether it covers one
  // depends on its size and place and is unpredictable, and a plain ?: becomes a branch.
  const std::uintptr_t covers = std::uintptr_t{0} - (g1 > g0);
  return block->size - ((g1 - g0) & covers);
}

// Entering and leaving the free index changes the non-releasable ("inactive split") stats;
// the amount counted on entry is kept in the block, so leaving costs no recomputation.
// Blocks that leave on the way to an insert (merged neighbours, the block a split cuts)
// are subtracted in the insert's own update, and on the hot paths that update also
// carries the allocation's own change: one vector update for all of them.
FRUGAL_HOT void CachingAllocator::note_non_releasable(PoolKind kind, Unindexed removed,
                                                      std::size_t added_bytes) {
  const auto added = static_cast<std::int64_t>(added_bytes);
  const std::int64_t removed_bytes = removed.units * std::int64_t{FreeIndex::kUnitBytes};
  live_.hot.apply(kind, HotLanes{0, 0, 0, added != 0, added, 0, 0, 0},
                  HotLanes{0, 0, 0, removed.blocks, removed_bytes, 0, 0, 0});
}

// Indexes a cached block and returns the non-releasable bytes it now counts, for the
// caller's stats update.
FRUGAL_HOT std::size_t CachingAllocator::index_insert_uncounted(Block* block) {
  block->segment->free_blocks->insert(block);
  const std::size_t bytes = non_releasable_bytes(block);
  block->counted_non_releasable = static_cast<std::uint32_t>(bytes / FreeIndex::kUnitBytes);
  return bytes;
}

FRUGAL_HOT void CachingAllocator::index_insert(Block* block, Unindexed removed) {
  note_non_releasable(block->segment->pool, removed, index_insert_uncounted(block));
}

// Takes a block out of the free index; its stats leave with the next index_insert.
FRUGAL_HOT void CachingAllocator::unindex(Block* block, Unindexed& removed) {
  block->segment->free_blocks->erase(block);
  const std::uint32_t units = block->counted_non_releasable;
  removed.blocks += units != 0;
  removed.units += units;
  block->counted_non_releasable = 0;
}

FRUGAL_HOT void CachingAllocator::index_erase(Block* block) {
  Unindexed removed{};
  unindex(block, removed);
  note_non_releasable(block->segment->pool, removed, 0);
}

// Spare records form a list through link_next; nothing is given back until destruction.
FRUGAL_HOT void CachingAllocator::delete_block(Block* block) {
  block->link_next = spare_blocks_;
  spare_blocks_ = block;
}

FRUGAL_HOT Block* CachingAllocator::new_block() {
  if (spare_blocks_ == nullptr) [[unlikely]]
    add_spare_blocks();
  Block* block = spare_blocks_;
  spare_blocks_ = block->link_next;
  // Field by field: assigning a fresh Block{} copies a 128-byte temporary.
  block->prev = block->next = block->link_prev = block->link_next = nullptr;
  block->allocated = false;
  block->mapped = true;
  block->pending = false;
  block->counted_non_releasable = 0;
  block->pending_events = 0;
  block->requested = block->free_tick = block->trace_id = 0;
  block->history_op = block->history_module = 0;
  block->stream_uses = nullptr;
  return block;
}

// Merges a block that just became free with its cached neighbours; the lower block of a
// pair absorbs the higher one. Returns the merged block, not yet indexed; the neighbours'
// stats are left in `removed` for its index_insert.
FRUGAL_HOT Block* CachingAllocator::merge_free_neighbours(Block* block, Unindexed& removed) {
  if (Block* prev = block->prev; prev != nullptr && prev->is_cached()) {
    unindex(prev, removed);
    prev->size += block->size;
    prev->next = block->next;
    if (block->next != nullptr) block->next->prev = prev;
    delete_block(block);
    block = prev;
  }
  if (Block* next = block->next; next != nullptr && next->is_cached()) {
    unindex(next, removed);
    block->size += next->size;
    block->next = next->next;
    if (next->next != nullptr) next->next->prev = block;
    delete_block(next);
  }
  return block;
}

}  // namespace frugal::alloc
