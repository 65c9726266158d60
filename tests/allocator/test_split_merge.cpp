// Block carving: sizes round up, free remainders split off, freed neighbours merge back,
// and a wholly free segment can be handed back — with PyTorch-style segments and with
// expandable segments.
#include <catch2/catch.hpp>

#include "allocator/caching_allocator.h"
#include "allocator/simulated_device.h"

using namespace frugal::alloc;

namespace {

constexpr std::size_t KiB = 1024, MiB = 1024 * 1024;

AllocatorConfig segments_config() { return AllocatorConfig::parse("expandable_segments:False"); }

std::size_t count_blocks(const CachingAllocator& a) {
  std::size_t n = 0;
  for (const auto& seg : a.snapshot()) n += seg.blocks.size();
  return n;
}

}  // namespace

TEST_CASE("sizes round up to 512 bytes, or to power-of-two divisions when configured") {
  auto device = std::make_shared<SimulatedDevice>(1024 * MiB);
  CachingAllocator a(device, segments_config());
  CHECK(a.round_size(1) == 512);
  CHECK(a.round_size(512) == 512);
  CHECK(a.round_size(513) == 1024);
  CachingAllocator r(device, AllocatorConfig::parse("roundup_power2_divisions:4"));
  CHECK(r.round_size(1200 * KiB) == 1280 * KiB);  // 1 MiB + a quarter
  CHECK(r.round_size(1 * MiB) == 1 * MiB);
  CHECK(r.round_size(1000) == 1024);  // small sizes keep plain rounding
}

TEST_CASE("small requests share a 2 MiB segment and merge back on free") {
  auto device = std::make_shared<SimulatedDevice>(1024 * MiB);
  CachingAllocator a(device, segments_config());
  const Allocation x = a.allocate(1000);
  const Allocation y = a.allocate(3000);
  CHECK(reinterpret_cast<std::uintptr_t>(y.ptr) == reinterpret_cast<std::uintptr_t>(x.ptr) + 1024);
  DeviceStats s = a.stats();
  CHECK(s.reserved_bytes.all().current == 2 * MiB);
  CHECK(s.reserved_bytes.pool(PoolKind::kSmall).current == 2 * MiB);
  CHECK(s.segment.all().current == 1);
  CHECK(s.allocated_bytes.all().current == 1024 + 3072);
  CHECK(s.requested_bytes.all().current == 4000);
  CHECK(s.inactive_split.all().current == 1);  // the free tail of the segment
  a.free(x);
  CHECK(a.stats().inactive_split.all().current == 2);
  a.free(y);
  CHECK(count_blocks(a) == 1);
  s = a.stats();
  CHECK(s.inactive_split.all().current == 0);
  CHECK(s.allocated_bytes.all().current == 0);
  CHECK(s.reserved_bytes.all().current == 2 * MiB);  // cached, not returned
  CHECK(device->used() == 2 * MiB);
  a.empty_cache();
  CHECK(a.stats().reserved_bytes.all().current == 0);
  CHECK(device->used() == 0);
}

TEST_CASE("a freed block merges with free neighbours on both sides") {
  auto device = std::make_shared<SimulatedDevice>(1024 * MiB);
  CachingAllocator a(device, segments_config());
  const Allocation p = a.allocate(100 * KiB), q = a.allocate(100 * KiB), r = a.allocate(100 * KiB);
  a.free(p);
  a.free(r);
  CHECK(count_blocks(a) == 3);  // p | q | r+tail
  a.free(q);
  CHECK(count_blocks(a) == 1);
  // The merged block is reused from the segment start.
  const Allocation again = a.allocate(250 * KiB);
  CHECK(again.ptr == p.ptr);
  a.free(again);
}

TEST_CASE("mid-size requests get 20 MiB segments; large remainders split, small ones do not") {
  auto device = std::make_shared<SimulatedDevice>(1024 * MiB);
  CachingAllocator a(device, segments_config());
  const Allocation x = a.allocate(3 * MiB);
  CHECK(a.stats().reserved_bytes.all().current == 20 * MiB);
  const Allocation y = a.allocate(16 * MiB);  // fits the 17 MiB remainder
  CHECK(a.stats().segment.all().current == 1);
  CHECK(reinterpret_cast<std::uintptr_t>(y.ptr) ==
        reinterpret_cast<std::uintptr_t>(x.ptr) + 3 * MiB);
  // The last 1 MiB is not worth splitting off in the large pool: y took the whole rest.
  CHECK(a.stats().allocated_bytes.all().current == 20 * MiB);
  const Allocation z = a.allocate(19 * MiB + 512 * KiB);  // >= 10 MiB: rounded to 2 MiB
  CHECK(a.stats().reserved_bytes.all().current == 40 * MiB);
  CHECK(a.stats().allocated_bytes.pool(PoolKind::kLarge).current == 40 * MiB);
  for (const Allocation& al : {x, y, z}) a.free(al);
  a.empty_cache();
  CHECK(device->used() == 0);
}

TEST_CASE("max_split_size keeps big blocks whole and away from small requests") {
  auto device = std::make_shared<SimulatedDevice>(1024 * MiB);
  CachingAllocator a(device,
                     AllocatorConfig::parse("expandable_segments:False,max_split_size_mb:32"));
  const Allocation big = a.allocate(64 * MiB);
  CHECK(a.stats().oversize_allocations.current == 1);
  CHECK(a.stats().oversize_segments.current == 1);
  a.free(big);
  // A 12 MiB request may not carve the cached 64 MiB block.
  const Allocation small = a.allocate(12 * MiB);
  CHECK(a.stats().segment.all().current == 2);
  // A 60 MiB request may take it whole (within max_non_split_rounding).
  const Allocation again = a.allocate(60 * MiB);
  CHECK(again.ptr == big.ptr);
  CHECK(a.stats().segment.all().current == 2);
  a.free(small);
  a.free(again);
}

TEST_CASE("expandable segments map granules on demand and unmap them on empty_cache") {
  auto device = std::make_shared<SimulatedDevice>(1024 * MiB);
  CachingAllocator a(device, AllocatorConfig::parse("expandable_segments:True"));
  const Allocation x = a.allocate(3 * MiB);
  CHECK(a.stats().reserved_bytes.all().current == 4 * MiB);  // two 2 MiB granules
  const Allocation y = a.allocate(5 * MiB);
  // y follows x in the same range, and only the missing granules were mapped.
  CHECK(reinterpret_cast<std::uintptr_t>(y.ptr) ==
        reinterpret_cast<std::uintptr_t>(x.ptr) + 3 * MiB);
  CHECK(a.stats().reserved_bytes.all().current == 8 * MiB);
  CHECK(a.stats().segment.all().current == 1);
  a.free(x);
  a.empty_cache();
  // x's first granule was wholly free; its second is shared with y and stays.
  CHECK(a.stats().reserved_bytes.all().current == 6 * MiB);
  CHECK(device->used() == 6 * MiB);
  const Allocation z = a.allocate(2 * MiB);  // maps the hole back
  CHECK(z.ptr == x.ptr);
  a.free(y);
  a.free(z);
  a.empty_cache();
  CHECK(a.stats().reserved_bytes.all().current == 0);
  CHECK(a.stats().segment.all().current == 0);
  CHECK(device->used() == 0);
  CHECK(count_blocks(a) == 1);  // one unmapped block spans the range again
}
