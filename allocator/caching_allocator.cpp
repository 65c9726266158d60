// The caching allocator's hot path and policy: find a cached block by best fit, split it,
// and on free merge it with its free neighbours; go to the device only on a cache miss,
// and when the device refuses, release the cache and retry before reporting out of memory.
#include "allocator/caching_allocator.h"

#include <algorithm>
#include <bit>
#include <mutex>

#include "allocator/asan_poison.h"
#include "allocator/block.h"
#include "allocator/free_index.h"
#include "allocator/live_stats.h"
#include "allocator/pools.h"
#include "common/error.h"

namespace frugal::alloc {

namespace {
// Larger requests are refused outright: no device has this much memory, and block sizes
// then always fit Block::counted_non_releasable.
constexpr std::size_t kMaxRequest = std::size_t{1} << 40;
}  // namespace

CachingAllocator::CachingAllocator(std::shared_ptr<Backend> backend, AllocatorConfig config)
    : backend_(std::move(backend)), config_(config) {
  FRUGAL_CHECK(backend_ != nullptr, "CachingAllocator: backend is null");
  pools_[0] = std::make_unique<Pool>();
  pools_[1] = std::make_unique<Pool>();
  if (!backend_->supports_virtual_memory()) config_.expandable_segments = false;
  granularity_ = backend_->mapping_granularity();
  poison_ = kPoisonsCachedMemory && backend_->host_addressable();
  for (std::size_t d : config_.roundup_power2_divisions) roundup_enabled_ |= d > 1;
  FRUGAL_CHECK(std::has_single_bit(granularity_),
               "CachingAllocator: the backend's mapping granularity must be a power of two");
}

CachingAllocator::~CachingAllocator() {
  if (history_ != nullptr) --allocators_recording_history;
  for (const PendingFree& p : pending_) backend_->destroy_event(p.event);
  while (segments_ != nullptr) {
    Segment* seg = segments_;
    for (Block* b = seg->first; b != nullptr; b = b->next) delete b->stream_uses;
    if (seg->expandable) {
      // Unmap every mapped run, then give the address range back.
      for (Block* b = seg->first; b != nullptr;) {
        std::uintptr_t run_begin = b->address;
        while (b != nullptr && b->mapped) b = b->next;
        const std::uintptr_t run_end = b == nullptr ? seg->base + seg->size : b->address;
        if (run_end > run_begin) {
          if (poison_) unpoison_memory(run_begin, run_end - run_begin);
          backend_->unmap(reinterpret_cast<void*>(run_begin), run_end - run_begin);
        }
        while (b != nullptr && !b->mapped) b = b->next;
      }
      backend_->release_address_range(reinterpret_cast<void*>(seg->base), seg->size);
    } else {
      if (poison_) unpoison_memory(seg->base, seg->size);
      backend_->deallocate(reinterpret_cast<void*>(seg->base), seg->size);
    }
    unlink_segment(seg);
    delete seg;
  }
}

// ---------------------------------------------------------------------------------------
// Sizes and pools

std::size_t CachingAllocator::round_size_with_divisions(std::size_t bytes) const {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  const std::size_t divisions = config_.roundup_divisions_for(bytes);
  if (divisions > 1 && bytes > kMinBlockSize * divisions && !std::has_single_bit(bytes)) {
    // Round up to the next of `divisions` equal steps between two powers of two, so that
    // nearby sizes share blocks (PyTorch's roundup_power2_divisions).
    const std::size_t floor = std::bit_floor(bytes);
    const std::size_t step = floor / divisions;
    return (bytes + step - 1) / step * step;
  }
  return (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

std::size_t CachingAllocator::segment_size_for(std::size_t size) const {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

CachingAllocator::StreamPool& CachingAllocator::find_stream_pool(Pool& pool, PoolKind kind,
                                                                 StreamId stream) {
  StreamPool*& last = last_used_[static_cast<int>(kind)];
  for (auto& sp : pool.streams) {
    if (sp->stream == stream) return *(last = sp.get());
  }
  auto sp = std::make_unique<StreamPool>();
  sp->kind = kind;
  sp->stream = stream;
  pool.streams.push_back(std::move(sp));
  return *(last = pool.streams.back().get());
}

bool CachingAllocator::within_limit(std::size_t extra) const {
  return static_cast<std::size_t>(live_.reserved_bytes.current_all()) + extra <=
         memory_limit_locked();
}

// ---------------------------------------------------------------------------------------
// allocate / free

Allocation CachingAllocator::allocate(std::size_t bytes, StreamId stream) {
  if (bytes == 0) return {};
  std::lock_guard<SpinMutex> lock(mutex_);
  if (!pending_.empty()) process_events(false);
  if (bytes > kMaxRequest) [[unlikely]]
    throw_out_of_memory(bytes);
  const std::size_t size = round_size(bytes);
  StreamPool& sp = stream_pool(size <= kSmallSize ? PoolKind::kSmall : PoolKind::kLarge, stream);
  ++tick_;
  Block* block = find_cached_block(sp, size);
  if (block == nullptr) block = obtain_block(sp, size, bytes);
  take_block(block, size, bytes);
  if (observer_ != nullptr) [[unlikely]]
    notify_allocate(block, bytes, stream);
  if (history_ != nullptr) [[unlikely]] {
    const HistoryContext& c = current_history_context;
    block->history_op = c.op;
    block->history_module = c.module;
    note_block_history(HistoryAction::kAlloc, block);
  }
  return Allocation{reinterpret_cast<void*>(block->address), block, bytes};
}

// The rare parts of allocate and free, out of line so that the hot path keeps few registers
// and no stack frame for them.
void CachingAllocator::throw_out_of_memory(std::size_t requested) {
  ++live_.num_ooms;
  if (history_ != nullptr) {
    const HistoryContext& c = current_history_context;
    note_history(HistoryAction::kOom, 0, requested, 0, PoolKind::kLarge, c.op, c.module);
  }
  throw OutOfMemoryError(report_locked(requested));
}

void CachingAllocator::notify_allocate(Block* block, std::size_t bytes, StreamId stream) {
  block->trace_id = next_trace_id_++;
  observer_->on_allocate(block->trace_id, bytes, stream);
}

void CachingAllocator::throw_not_allocated(const Block* block) {
  FRUGAL_CHECK(false, "CachingAllocator::free: the block at " + std::to_string(block->address) +
                          " is not allocated (double free?)");
}

FRUGAL_HOT Block* CachingAllocator::find_cached_block(StreamPool& sp, std::size_t size) {
  Block* block = sp.free_blocks.best_fit(size);
  if (block == nullptr) return nullptr;
  // Big unsplittable blocks serve only big requests, and only with bounded waste.
  if (size < config_.max_split_size && block->size >= config_.max_split_size) return nullptr;
  if (size >= config_.max_split_size && block->size >= size + config_.max_non_split_rounding) {
    return nullptr;
  }
  // Out of the index; its stats leave in take_block, together with a split's remainder.
  sp.free_blocks.erase(block);
  return block;
}

Block* CachingAllocator::obtain_block(StreamPool& sp, std::size_t size, std::size_t requested) {
  if (config_.garbage_collection_threshold > 0) garbage_collect(size);
  auto from_device = [&]() -> Block* {
    return config_.expandable_segments ? grow_expandable(sp, size)
                                       : new_segment(sp, segment_size_for(size));
  };
  Block* block = from_device();
  if (block == nullptr) {
    // The device said no: give back everything cached (after the streams that still use
    // freed blocks have finished), then ask once more.
    release_cached(/*wait_for_events=*/true);
    ++live_.num_alloc_retries;
    block = from_device();
  }
  if (block == nullptr) throw_out_of_memory(requested);
  return block;
}

Block* CachingAllocator::new_segment(StreamPool& sp, std::size_t size) {
  if (!within_limit(size)) return nullptr;
  void* ptr = backend_->allocate(size);
  if (ptr == nullptr) return nullptr;
  if (poison_) poison_memory(reinterpret_cast<std::uintptr_t>(ptr), size);
  ++live_.num_device_alloc;
  auto* seg = new Segment;
  seg->base = reinterpret_cast<std::uintptr_t>(ptr);
  seg->size = seg->mapped = size;
  seg->pool = sp.kind;
  seg->stream = sp.stream;
  seg->free_blocks = &sp.free_blocks;
  link_segment(seg);
  Block* block = new_block();
  block->address = seg->base;
  block->size = size;
  block->segment = seg;
  seg->first = block;
  live_.segment.increase(sp.kind, 1);
  live_.reserved_bytes.increase(sp.kind, static_cast<std::int64_t>(size));
  if (size >= config_.max_split_size) live_.oversize_segments.increase(1);
  if (history_ != nullptr) {
    const HistoryContext& c = current_history_context;
    note_history(HistoryAction::kSegmentAlloc, seg->base, size, sp.stream, sp.kind, c.op, c.module);
  }
  return block;
}

FRUGAL_HOT void CachingAllocator::take_block(Block* block, std::size_t size,
                                             std::size_t requested) {
  Segment* seg = block->segment;
  // What the block counted in the non-releasable stats while cached (0 if it came from the
  // device, or was never indexed).
  const std::uint32_t units = block->counted_non_releasable;
  block->counted_non_releasable = 0;
  const std::size_t remaining = block->size - size;
  const bool split = (seg->expandable || seg->pool == PoolKind::kSmall)
                         ? remaining >= kMinBlockSize
                         : size < config_.max_split_size && remaining > kSmallSize;
  std::size_t rest_non_releasable = 0;
  if (split) {
    Block* rest = new_block();
    rest->address = block->address + size;
    rest->size = remaining;
    rest->segment = seg;
    rest->prev = block;
    rest->next = block->next;
    if (block->next != nullptr) block->next->prev = rest;
    block->next = rest;
    block->size = size;
    rest_non_releasable = index_insert_uncounted(rest);
  }
  block->allocated = true;
  block->requested = requested;
  // Only the bytes asked for: the rounding beyond them stays poisoned.
  if (poison_) unpoison_memory(block->address, requested);
  const PoolKind kind = seg->pool;
  // One update: the allocation, the block leaving the non-releasable stats, the remainder
  // entering them.
  const auto rest_bytes = static_cast<std::int64_t>(rest_non_releasable);
  const HotLanes added{1,
                       static_cast<std::int64_t>(block->size),
                       static_cast<std::int64_t>(requested),
                       rest_bytes != 0,
                       rest_bytes,
                       0,
                       0,
                       0};
  const std::int64_t units_bytes = std::int64_t{units} * std::int64_t{FreeIndex::kUnitBytes};
  const HotLanes removed{0, 0, 0, units != 0, units_bytes, 0, 0, 0};
  live_.hot.apply(kind, added, removed);
  if (live_.pending_count.current_all() != 0) [[unlikely]]
    live_.note_active_peaks(kind);
  if (block->size >= config_.max_split_size) live_.oversize_allocations.increase(1);
}

void CachingAllocator::free(const Allocation& allocation) {
  Block* block = allocation.block;
  if (block == nullptr) return;
  std::lock_guard<SpinMutex> lock(mutex_);
  if (!block->allocated) [[unlikely]]
    throw_not_allocated(block);
  if (observer_ != nullptr) [[unlikely]]
    observer_->on_free(block->trace_id);
  const PoolKind kind = block->segment->pool;
  const auto bytes = static_cast<std::int64_t>(block->size);
  block->allocated = false;
  if (poison_) poison_memory(block->address, block->size);
  const auto requested = static_cast<std::int64_t>(block->requested);
  if (block->size >= config_.max_split_size) live_.oversize_allocations.decrease(1);
  block->requested = 0;
  if (block->stream_uses != nullptr) [[unlikely]] {
    // Other streams may still read or write it: reusable once their current work is done.
    live_.hot.apply(kind, HotLanes{}, HotLanes{1, bytes, requested, 0, 0, 0, 0, 0});
    for (StreamId s : *block->stream_uses) {
      pending_.push_back(PendingFree{backend_->record_event(s), block});
      ++block->pending_events;
    }
    block->pending = true;
    delete block->stream_uses;
    block->stream_uses = nullptr;
    live_.pending_count.increase(kind, 1);
    live_.pending_bytes.increase(kind, bytes);
    if (history_ != nullptr) [[unlikely]]
      note_block_history(HistoryAction::kFreeRequested, block);
    return;
  }
  if (history_ != nullptr) [[unlikely]] {
    // The block's own address and size, before the merge; the totals, after it.
    const Block freed = *block;
    cache_block(block, bytes, requested);
    note_block_history(HistoryAction::kFreeCompleted, &freed);
    return;
  }
  cache_block(block, bytes, requested);
}

void CachingAllocator::record_stream(const Allocation& allocation, StreamId stream) {
  Block* block = allocation.block;
  if (block == nullptr) return;
  std::lock_guard<SpinMutex> lock(mutex_);
  FRUGAL_CHECK(block->allocated, "record_stream: the block is not allocated");
  if (stream == block->segment->stream) return;
  if (block->stream_uses == nullptr) block->stream_uses = new std::vector<StreamId>();
  std::vector<StreamId>& uses = *block->stream_uses;
  if (std::find(uses.begin(), uses.end(), stream) == uses.end()) uses.push_back(stream);
}

void CachingAllocator::process_events(bool wait) {
  for (std::size_t i = 0; i < pending_.size();) {
    const PendingFree p = pending_[i];
    const bool done = wait ? backend_->wait_event(p.event) : backend_->event_completed(p.event);
    if (!done) {
      ++i;
      continue;
    }
    backend_->destroy_event(p.event);
    pending_[i] = pending_.back();
    pending_.pop_back();
    if (--p.block->pending_events == 0) {
      p.block->pending = false;
      const PoolKind kind = p.block->segment->pool;
      live_.pending_count.decrease(kind, 1);
      live_.pending_bytes.decrease(kind, static_cast<std::int64_t>(p.block->size));
      const Block freed = *p.block;
      cache_block(p.block, 0, 0);
      if (history_ != nullptr) note_block_history(HistoryAction::kFreeCompleted, &freed, true);
    }
  }
}

// ---------------------------------------------------------------------------------------
// The cache: merging and indexing free blocks

FRUGAL_HOT void CachingAllocator::cache_block(Block* block, std::int64_t released_bytes,
                                              std::int64_t released_requested) {
  Unindexed gone{};
  block = merge_free_neighbours(block, gone);
  block->free_tick = tick_;
  const auto non_releasable = static_cast<std::int64_t>(index_insert_uncounted(block));
  // One update: the free's own change, the merged neighbours leaving the non-releasable
  // stats, the merged block entering them.
  const HotLanes added{0, 0, 0, non_releasable != 0, non_releasable, 0, 0, 0};
  const std::int64_t gone_bytes = gone.units * std::int64_t{FreeIndex::kUnitBytes};
  const HotLanes removed{
      released_bytes != 0, released_bytes, released_requested, gone.blocks, gone_bytes, 0, 0, 0};
  live_.hot.apply(block->segment->pool, added, removed);
}

// ---------------------------------------------------------------------------------------
// Memory history records (the switch and the reports are in caching_allocator_stats.cpp)

void CachingAllocator::note_history(HistoryAction action, std::uintptr_t address,
                                    std::uint64_t size, StreamId stream, PoolKind pool,
                                    HistoryTag op, HistoryTag module) {
  history_->record(action, address, size, stream, pool, op, module);
}

void CachingAllocator::note_block_history(HistoryAction action, const Block* block,
                                          bool counted_before) {
  history_->record(action, block->address, block->size, block->segment->stream,
                   block->segment->pool, block->history_op, block->history_module, counted_before);
}

// ---------------------------------------------------------------------------------------
// Bookkeeping records

void CachingAllocator::link_segment(Segment* seg) {
  seg->prev_segment = nullptr;
  seg->next_segment = segments_;
  if (segments_ != nullptr) segments_->prev_segment = seg;
  segments_ = seg;
}

void CachingAllocator::unlink_segment(Segment* seg) {
  if (seg->prev_segment != nullptr)
    seg->prev_segment->next_segment = seg->next_segment;
  else
    segments_ = seg->next_segment;
  if (seg->next_segment != nullptr) seg->next_segment->prev_segment = seg->prev_segment;
}

void CachingAllocator::add_spare_blocks() {
  constexpr std::size_t kChunk = 256;
  block_chunks_.push_back(std::make_unique<Block[]>(kChunk));
  Block* chunk = block_chunks_.back().get();
  for (std::size_t i = 0; i < kChunk; ++i) delete_block(&chunk[i]);
}

}  // namespace frugal::alloc
