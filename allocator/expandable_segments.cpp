// Expandable segments: instead of many separate device allocations, each pool and stream
// reserves one virtual address range and maps memory into it, a granule at a time, where
// blocks need it. Free neighbours then always merge, and free pages can be unmapped from
// the middle of the range, so fragmentation costs address space, not memory (PyTorch's
// expandable_segments, which uses cuMemMap the same way).
#include <algorithm>

#include "allocator/asan_poison.h"
#include "allocator/block.h"
#include "allocator/caching_allocator.h"
#include "allocator/free_index.h"
#include "allocator/live_stats.h"
#include "allocator/pools.h"

namespace frugal::alloc {

namespace {

std::uintptr_t round_down(std::uintptr_t x, std::size_t g) { return x / g * g; }
std::uintptr_t round_up(std::uintptr_t x, std::size_t g) { return (x + g - 1) / g * g; }

bool is_free(const Block* b) { return !b->allocated && !b->pending; }

void unmapped_push(Segment* seg, Block* b) {
  b->link_prev = nullptr;
  b->link_next = seg->unmapped_head;
  if (seg->unmapped_head != nullptr) seg->unmapped_head->link_prev = b;
  seg->unmapped_head = b;
}

void unmapped_remove(Segment* seg, Block* b) {
  if (b->link_prev != nullptr)
    b->link_prev->link_next = b->link_next;
  else
    seg->unmapped_head = b->link_next;
  if (b->link_next != nullptr) b->link_next->link_prev = b->link_prev;
  b->link_prev = b->link_next = nullptr;
}

// The part of unmapped block `x` that must be mapped for [lo, hi) to be usable: the
// overlap, widened to whole granules (x itself starts and ends on granule boundaries).
struct MapRange {
  Block* block;
  std::uintptr_t begin, end;
};
bool range_to_map(const Block* x, std::uintptr_t lo, std::uintptr_t hi, std::size_t g,
                  MapRange* out) {
  const std::uintptr_t a = std::max(lo, x->address), b = std::min(hi, x->end());
  if (a >= b) return false;
  *out = MapRange{const_cast<Block*>(x), std::max<std::uintptr_t>(round_down(a, g), x->address),
                  std::min<std::uintptr_t>(round_up(b, g), x->end())};
  return true;
}

}  // namespace

Block* CachingAllocator::split_off_after(Block* block, std::uintptr_t at) {
  Block* rest = new_block();
  rest->address = at;
  rest->size = block->end() - at;
  rest->segment = block->segment;
  rest->mapped = block->mapped;
  rest->free_tick = block->free_tick;
  rest->prev = block;
  rest->next = block->next;
  if (block->next != nullptr) block->next->prev = rest;
  block->next = rest;
  block->size = at - block->address;
  return rest;
}

void CachingAllocator::note_mapped(Segment* seg, std::uintptr_t address, std::size_t bytes) {
  if (seg->mapped == 0) live_.segment.increase(seg->pool, 1);
  seg->mapped += bytes;
  live_.reserved_bytes.increase(seg->pool, static_cast<std::int64_t>(bytes));
  ++live_.num_device_alloc;
  if (history_ != nullptr) {
    const HistoryContext& c = current_history_context;
    note_history(HistoryAction::kSegmentMap, address, bytes, seg->stream, seg->pool, c.op,
                 c.module);
  }
}

void CachingAllocator::note_unmapped(Segment* seg, std::uintptr_t address, std::size_t bytes) {
  seg->mapped -= bytes;
  live_.reserved_bytes.decrease(seg->pool, static_cast<std::int64_t>(bytes));
  if (seg->mapped == 0) live_.segment.decrease(seg->pool, 1);
  ++live_.num_device_free;
  if (history_ != nullptr) {
    const HistoryContext& c = current_history_context;
    note_history(HistoryAction::kSegmentUnmap, address, bytes, seg->stream, seg->pool, c.op,
                 c.module);
  }
}

Segment* CachingAllocator::new_expandable_range(StreamPool& sp, std::size_t size) {
  const std::size_t g = granularity_;
  // The device's whole memory (address space is cheap), at most 1 TiB.
  constexpr std::size_t kMaxRange = std::size_t{1} << 40;
  const std::size_t bytes =
      round_up(std::max(std::min(backend_->total_memory(), kMaxRange), size), g);
  void* base = backend_->reserve_address_range(bytes);
  auto* seg = new Segment;
  seg->base = reinterpret_cast<std::uintptr_t>(base);
  seg->size = bytes;
  seg->mapped = 0;
  seg->pool = sp.kind;
  seg->stream = sp.stream;
  seg->expandable = true;
  seg->free_blocks = &sp.free_blocks;
  link_segment(seg);
  sp.ranges.push_back(seg);
  Block* whole = new_block();
  whole->address = seg->base;
  whole->size = bytes;
  whole->segment = seg;
  whole->mapped = false;
  seg->first = whole;
  unmapped_push(seg, whole);
  return seg;
}

Block* CachingAllocator::grow_expandable(StreamPool& sp, std::size_t size) {
  const std::size_t g = granularity_;
  // Choose where to place the block: inside a run of free blocks (cached or unmapped) that
  // is long enough, at the run's start or end, wherever the fewest new bytes must be mapped
  // (lowest address on a tie). The search walks only unmapped blocks and their free
  // neighbours, and runs only when the device must be asked anyway.
  struct Placement {
    Block* run_first = nullptr;
    Block* run_last = nullptr;
    std::uintptr_t pos = 0;
    std::size_t cost = ~std::size_t{0};
  } best;
  auto mapping_cost = [&](Block* first, Block* last, std::uintptr_t lo, std::uintptr_t hi) {
    std::size_t cost = 0;
    MapRange r;
    for (Block* x = first;; x = x->next) {
      if (!x->mapped && range_to_map(x, lo, hi, g, &r)) cost += r.end - r.begin;
      if (x == last) break;
    }
    return cost;
  };
  for (Segment* seg : sp.ranges) {
    for (Block* u = seg->unmapped_head; u != nullptr; u = u->link_next) {
      Block* first = u;
      while (first->prev != nullptr && is_free(first->prev)) first = first->prev;
      Block* last = u;
      while (last->next != nullptr && is_free(last->next)) last = last->next;
      const std::uintptr_t begin = first->address, end = last->end();
      if (end - begin < size) continue;
      for (std::uintptr_t pos : {begin, end - size}) {
        const std::size_t cost = mapping_cost(first, last, pos, pos + size);
        if (cost < best.cost || (cost == best.cost && pos < best.pos)) {
          best = Placement{first, last, pos, cost};
        }
      }
    }
  }
  if (best.run_first == nullptr) {
    Segment* seg = new_expandable_range(sp, size);
    best = Placement{seg->first, seg->first, seg->base, round_up(size, g)};
  }
  if (!within_limit(best.cost)) return nullptr;

  // Map what is missing; on refusal, undo and report failure.
  std::vector<MapRange> to_map;
  MapRange r;
  for (Block* x = best.run_first;; x = x->next) {
    if (!x->mapped && range_to_map(x, best.pos, best.pos + size, g, &r)) to_map.push_back(r);
    if (x == best.run_last) break;
  }
  for (std::size_t i = 0; i < to_map.size(); ++i) {
    if (!backend_->map(reinterpret_cast<void*>(to_map[i].begin), to_map[i].end - to_map[i].begin)) {
      for (std::size_t j = 0; j < i; ++j) {
        backend_->unmap(reinterpret_cast<void*>(to_map[j].begin), to_map[j].end - to_map[j].begin);
      }
      return nullptr;
    }
  }

  // Turn the newly mapped pieces into cached blocks merged with their cached neighbours;
  // the last merge holds the whole placement.
  Block* merged = nullptr;
  for (const MapRange& m : to_map) {
    Segment* seg = m.block->segment;
    Block* piece = m.block;
    if (m.begin > piece->address) {
      piece = split_off_after(m.block, m.begin);  // the lower part stays unmapped
    } else {
      unmapped_remove(seg, piece);
    }
    if (m.end < piece->end()) unmapped_push(seg, split_off_after(piece, m.end));
    piece->mapped = true;
    piece->free_tick = tick_;
    note_mapped(seg, m.begin, m.end - m.begin);
    if (poison_) poison_memory(m.begin, m.end - m.begin);
    Unindexed removed{};
    merged = merge_free_neighbours(piece, removed);
    index_insert(merged, removed);
  }
  if (merged == nullptr) {
    // Everything needed was already mapped (a cached block passed over by the oversize rule).
    for (merged = best.run_first; merged->end() <= best.pos; merged = merged->next) {
    }
  }
  index_erase(merged);
  return merged;
}

std::size_t CachingAllocator::unmap_free_pages(Segment* seg) {
  std::size_t released = 0;
  for (Block* b = seg->first; b != nullptr; b = b->next) {
    if (b->is_cached()) b = unmap_block_pages(b, &released);
  }
  return released;
}

Block* CachingAllocator::unmap_block_pages(Block* block, std::size_t* released) {
  // Only whole granules inside the free block can go: a granule shared with an allocated
  // neighbour stays mapped.
  const std::size_t g = granularity_;
  const std::uintptr_t g0 = round_up(block->address, g), g1 = round_down(block->end(), g);
  if (g1 <= g0) return block;
  Segment* seg = block->segment;
  index_erase(block);
  Block* head = nullptr;
  Block* mid = block;
  Block* tail = nullptr;
  if (g0 > block->address) {
    head = block;
    mid = split_off_after(block, g0);
  }
  if (g1 < mid->end()) tail = split_off_after(mid, g1);
  if (poison_) unpoison_memory(g0, g1 - g0);
  backend_->unmap(reinterpret_cast<void*>(g0), g1 - g0);
  note_unmapped(seg, g0, g1 - g0);
  *released += g1 - g0;
  mid->mapped = false;
  unmapped_push(seg, mid);
  if (head != nullptr) index_insert(head);
  if (tail != nullptr) index_insert(tail);
  // Unmapped neighbours merge into one unmapped block (the lower one absorbs the higher).
  if (Block* prev = mid->prev; prev != nullptr && !prev->mapped) {
    prev->size += mid->size;
    prev->next = mid->next;
    if (mid->next != nullptr) mid->next->prev = prev;
    unmapped_remove(seg, mid);
    delete_block(mid);
    mid = prev;
  }
  if (Block* next = mid->next; next != nullptr && !next->mapped) {
    mid->size += next->size;
    mid->next = next->next;
    if (next->next != nullptr) next->next->prev = mid;
    unmapped_remove(seg, next);
    delete_block(next);
  }
  return tail != nullptr ? tail : mid;
}

}  // namespace frugal::alloc
