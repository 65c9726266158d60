// The allocator's bookkeeping records (internal): a Block is a run of bytes inside a
// Segment; neighbouring blocks of a segment are linked in address order so that a freed
// block merges with free neighbours in O(1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "allocator/backend.h"
#include "allocator/stats.h"

namespace frugal::alloc {

struct Segment;
class FreeIndex;

// 128 bytes, cache-line aligned; the first line holds everything the allocate/free hot
// path touches on neighbours and free-list members.
struct alignas(64) Block {
  std::uintptr_t address = 0;
  std::size_t size = 0;        // bytes, a multiple of 512
  Segment* segment = nullptr;  // also gives the block's pool and stream
  Block* prev = nullptr;       // address-order neighbours in the segment
  Block* next = nullptr;
  Block* link_prev = nullptr;  // links in a free list (FreeIndex) or a segment's unmapped list
  Block* link_next = nullptr;
  bool allocated = false;
  bool mapped = true;    // false: reserved address space with no memory behind it
  bool pending = false;  // freed, but other streams may still use it
  // While cached: its non-releasable bytes / 512 as counted in the stats when it entered
  // the free index (segments are below 2 TiB, so this fits).
  std::uint32_t counted_non_releasable = 0;
  // -- second cache line: the block's own history --
  std::int32_t pending_events = 0;  // events still to complete before it can be reused
  std::size_t requested = 0;        // what the user asked for; 0 while free
  std::uint64_t free_tick = 0;      // allocation counter when it became free (age for GC)
  std::uint64_t trace_id = 0;
  std::uint32_t history_op = 0, history_module = 0;  // tags of its allocation (history)
  // Streams other than the segment's that used the block (record_stream). Rare, so created
  // only when needed; owned by the block and deleted when the block is freed.
  std::vector<StreamId>* stream_uses = nullptr;

  bool is_split() const { return prev != nullptr || next != nullptr; }
  // Free, with memory behind it: it may serve an allocation.
  bool is_cached() const { return !allocated && !pending && mapped; }
  std::uintptr_t end() const { return address + size; }
};

// One device allocation, or one expandable virtual range (mapped on demand).
struct Segment {
  std::uintptr_t base = 0;
  std::size_t size = 0;    // bytes of address space
  std::size_t mapped = 0;  // bytes with memory behind them (== size unless expandable)
  PoolKind pool = PoolKind::kLarge;
  StreamId stream = 0;
  bool expandable = false;
  FreeIndex* free_blocks = nullptr;  // where this segment's cached blocks are indexed
  Block* first = nullptr;            // lowest-address block
  Block* unmapped_head = nullptr;    // expandable: the unmapped blocks, via link_*
  Segment* prev_segment = nullptr;   // all segments of an allocator
  Segment* next_segment = nullptr;
};

}  // namespace frugal::alloc
