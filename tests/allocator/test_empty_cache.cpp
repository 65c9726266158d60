// empty_cache() gives back exactly what is wholly free: whole free segments, or the whole
// free granules of expandable segments — and nothing that is still in use.
#include <catch2/catch.hpp>

#include "allocator/caching_allocator.h"
#include "allocator/simulated_device.h"

using namespace frugal::alloc;

namespace {
constexpr std::size_t MiB = std::size_t{1} << 20;
}

TEST_CASE("empty_cache returns wholly free segments and keeps partly used ones") {
  auto device = std::make_shared<SimulatedDevice>(1024 * MiB);
  CachingAllocator a(device, AllocatorConfig::parse("expandable_segments:False"));
  const Allocation keep = a.allocate(12 * MiB);  // own 12 MiB segment
  const Allocation drop = a.allocate(14 * MiB);  // own 14 MiB segment
  const Allocation small1 = a.allocate(4096);    // 2 MiB small segment
  const Allocation small2 = a.allocate(4096);    // same small segment
  CHECK(a.stats().segment.all().current == 3);
  a.free(drop);
  a.free(small1);
  a.empty_cache();
  // The 14 MiB segment went back; the small one still holds small2.
  const DeviceStats s = a.stats();
  CHECK(s.segment.all().current == 2);
  CHECK(s.reserved_bytes.all().current == static_cast<std::int64_t>(14 * MiB));
  CHECK(s.num_device_free == 1);
  CHECK(device->used() == 14 * MiB);
  a.free(keep);
  a.free(small2);
  a.empty_cache();
  CHECK(a.stats().reserved_bytes.all().current == 0);
  CHECK(a.stats().segment.all().current == 0);
  CHECK(device->used() == 0);
}

TEST_CASE("empty_cache on expandable segments unmaps free granules from the middle") {
  auto device = std::make_shared<SimulatedDevice>(1024 * MiB);
  CachingAllocator a(device, AllocatorConfig::parse("expandable_segments:True"));
  const Allocation first = a.allocate(8 * MiB);
  const Allocation middle = a.allocate(64 * MiB);
  const Allocation last = a.allocate(8 * MiB);
  CHECK(device->used() == 80 * MiB);
  a.free(middle);
  a.empty_cache();
  // The hole between two live blocks no longer costs memory.
  CHECK(device->used() == 16 * MiB);
  CHECK(a.stats().reserved_bytes.all().current == static_cast<std::int64_t>(16 * MiB));
  CHECK(a.stats().segment.all().current == 1);
  // ...and a new block can be mapped back into it.
  const Allocation refill = a.allocate(40 * MiB);
  CHECK(refill.ptr == middle.ptr);
  CHECK(device->used() == 56 * MiB);
  for (const Allocation& x : {first, refill, last}) a.free(x);
  a.empty_cache();
  CHECK(device->used() == 0);
}

TEST_CASE("memory held only by the cache is reused before the device is asked again") {
  auto device = std::make_shared<SimulatedDevice>(1024 * MiB);
  CachingAllocator a(device);
  for (int step = 0; step < 10; ++step) {
    std::vector<Allocation> step_blocks;
    for (std::size_t mb : {3, 9, 1, 27, 2}) step_blocks.push_back(a.allocate(mb * MiB));
    for (const Allocation& x : step_blocks) a.free(x);
  }
  // Only the first step went to the device.
  const DeviceStats s = a.stats();
  CHECK(s.num_device_alloc <= 5);
  CHECK(device->calls() == static_cast<std::uint64_t>(s.num_device_alloc));
}
