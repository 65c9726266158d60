// When the device refuses: the cache is released and the request retried; if it still
// fails, OutOfMemoryError says what was asked and where the memory is, and the allocator
// is left intact.
#include <catch2/catch.hpp>

#include "allocator/caching_allocator.h"
#include "allocator/simulated_device.h"
#include "common/format.h"

using namespace frugal::alloc;
using frugal::OutOfMemoryError;

namespace {
constexpr std::size_t MiB = std::size_t{1} << 20;
}

TEMPLATE_TEST_CASE_SIG("a refused allocation frees the cache and retries", "",
                       ((bool Expandable), Expandable), (false), (true)) {
  auto device = std::make_shared<SimulatedDevice>(100 * MiB);
  AllocatorConfig config;
  config.expandable_segments = Expandable;
  CachingAllocator a(device, config);
  // Fill the device with cached 30 MiB blocks on another stream, unusable for stream 0.
  std::vector<Allocation> blocks;
  for (int i = 0; i < 3; ++i) blocks.push_back(a.allocate(30 * MiB, 5));
  for (const Allocation& b : blocks) a.free(b);
  CHECK(a.stats().reserved_bytes.all().current >= static_cast<std::int64_t>(90 * MiB));
  const Allocation big = a.allocate(80 * MiB, 0);
  const DeviceStats s = a.stats();
  CHECK(s.num_alloc_retries == 1);
  CHECK(s.num_ooms == 0);
  CHECK(s.reserved_bytes.all().current == static_cast<std::int64_t>(80 * MiB));
  a.free(big);
}

TEST_CASE("OutOfMemoryError states the request, the capacity and where memory went") {
  auto device = std::make_shared<SimulatedDevice>(100 * MiB);
  CachingAllocator a(device, AllocatorConfig::parse("expandable_segments:False"));
  const Allocation held = a.allocate(60 * MiB);
  const Allocation small = a.allocate(12 * MiB);
  const Allocation other = a.allocate(12 * MiB);
  a.free(small);  // cached; released by the retry, which still cannot make 50 MiB fit
  std::string message;
  try {
    (void)a.allocate(50 * MiB);
    FAIL("expected OutOfMemoryError");
  } catch (const OutOfMemoryError& e) {
    message = e.what();
    CHECK(e.report().requested == 50 * MiB);
    CHECK(e.report().capacity == 100 * MiB);
    CHECK(e.report().allocated == 72 * MiB);
  }
  CHECK_THAT(message, Catch::Contains("tried to allocate 50.00 MiB"));
  CHECK_THAT(message, Catch::Contains("capacity of 100.00 MiB"));
  CHECK_THAT(message, Catch::Contains("72.00 MiB is allocated"));
  CHECK_THAT(message, Catch::Contains("reserved but unallocated"));
  CHECK_THAT(message, Catch::Contains("largest free block"));
  CHECK_THAT(message, Catch::Contains("fragmentation"));
  CHECK_THAT(message, Catch::Contains("Try:"));
  const DeviceStats s = a.stats();
  CHECK(s.num_ooms == 1);
  CHECK(s.num_alloc_retries == 1);
  // Nothing was lost: the allocator keeps working.
  const Allocation fits = a.allocate(20 * MiB);
  CHECK(fits);
  for (const Allocation& x : {held, other, fits}) a.free(x);
  CHECK(a.stats().allocated_bytes.all().current == 0);
}

TEST_CASE("the fragmentation figure and the advice follow the free cache's shape") {
  frugal::MemoryReport r;
  r.requested = 64 * MiB;
  r.capacity = r.limit = 1024 * MiB;
  r.allocated = 900 * MiB;
  r.reserved = 1000 * MiB;
  r.largest_free_block = 25 * MiB;
  CHECK(r.fragmentation() == Approx(0.75));
  const std::string text = OutOfMemoryError(r).what();
  CHECK_THAT(text, Catch::Contains("fragmentation 75.0%"));
  CHECK_THAT(text, Catch::Contains("expandable_segments:True"));
}

TEST_CASE("memory limits and fractions cap what may be reserved") {
  auto device = std::make_shared<SimulatedDevice>(1000 * MiB);
  CachingAllocator a(device);
  a.set_memory_fraction(0.5);
  CHECK(a.memory_limit() == 500 * MiB);
  CHECK_THROWS_AS(a.allocate(600 * MiB), OutOfMemoryError);
  const Allocation ok = a.allocate(400 * MiB);
  a.set_memory_limit(200 * MiB);
  CHECK(a.memory_limit() == 200 * MiB);
  CHECK_THROWS_AS(a.allocate(100 * MiB), OutOfMemoryError);
  a.free(ok);
  CHECK(a.allocate(150 * MiB));  // served from the cached 400 MiB, no device call
  CHECK_THROWS_AS(a.set_memory_fraction(0.0), frugal::Error);
  CHECK_THROWS_AS(a.set_memory_fraction(1.5), frugal::Error);
  try {
    a.set_memory_fraction(-1);
  } catch (const frugal::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("set_memory_fraction"));
  }
}

TEST_CASE("an impossible request is an OutOfMemoryError, not a crash") {
  auto device = std::make_shared<SimulatedDevice>(100 * MiB);
  CachingAllocator a(device);
  CHECK_THROWS_AS(a.allocate(~std::size_t{0}), OutOfMemoryError);
  CHECK_THROWS_AS(a.allocate(std::size_t{1} << 40), OutOfMemoryError);
  CHECK(a.stats().num_ooms == 2);
  CHECK(a.allocate(0).ptr == nullptr);  // zero bytes: an empty allocation
}

TEST_CASE("double free is an error, not corruption") {
  auto device = std::make_shared<SimulatedDevice>(100 * MiB);
  CachingAllocator a(device);
  const Allocation x = a.allocate(1000);
  a.free(x);
  CHECK_THROWS_AS(a.free(x), frugal::Error);
}
