// The caching allocator's pools (internal): cached free blocks are kept per pool (small,
// large) and per stream, because a block may be reused at once only on its own stream.
#pragma once

#include <memory>
#include <vector>

#include "allocator/block.h"
#include "allocator/caching_allocator.h"
#include "allocator/free_index.h"

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

}  // namespace frugal::alloc
