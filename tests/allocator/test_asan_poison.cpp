// The caching allocator under AddressSanitizer (scripts/sanitize.sh asan): the free bytes of
// host segments are poisoned, so reading past a tensor or using it after its storage went
// back to the cache is caught; memory given back to the system carries no poison. In a build
// without ASan there is no shadow memory to look at and the cases say so.
#include <catch2/catch.hpp>

#include "allocator/asan_poison.h"
#include "allocator/caching_allocator.h"
#include "allocator/host_backend.h"
#include "allocator/simulated_device.h"

using namespace frugal::alloc;

namespace {
#ifdef FRUGAL_ASAN
bool poisoned(const void* p) { return __asan_address_is_poisoned(p) != 0; }
#endif
}  // namespace

TEMPLATE_TEST_CASE_SIG("free host bytes are poisoned under AddressSanitizer", "",
                       ((bool Expandable), Expandable), (false), (true)) {
#ifndef FRUGAL_ASAN
  SUCCEED("not an AddressSanitizer build: nothing to check");
#else
  AllocatorConfig config;
  config.expandable_segments = Expandable;
  CachingAllocator a(std::make_shared<HostBackend>(), config);
  const Allocation x = a.allocate(1000);  // rounded up to a 1024-byte block
  const auto* p = static_cast<const unsigned char*>(x.ptr);
  CHECK_FALSE(poisoned(p));
  CHECK_FALSE(poisoned(p + 999));
  CHECK(poisoned(p + 1000));  // the rounding: past the tensor
  CHECK(poisoned(p + 1024));  // the rest of the segment, cached
  const Allocation y = a.allocate(512);
  CHECK_FALSE(poisoned(y.ptr));
  a.free(x);
  CHECK(poisoned(p));  // used after free
  CHECK_FALSE(poisoned(y.ptr));
  // Reused: the new owner's bytes are addressable again.
  const Allocation z = a.allocate(1000);
  CHECK(z.ptr == x.ptr);
  CHECK_FALSE(poisoned(z.ptr));
  a.free(z);
  a.free(y);
  // The shadow is cleared before the memory goes back, so whatever maps those pages next
  // (malloc, another library) is not reported for touching them.
  a.empty_cache();
  CHECK(a.memory_reserved() == 0);
  CHECK_FALSE(poisoned(p));
#endif
}

TEST_CASE("a device that the CPU cannot address is never poisoned") {
  // The simulated device hands out addresses with nothing behind them: the allocator must not
  // write shadow memory for them.
  CachingAllocator a(std::make_shared<SimulatedDevice>(std::size_t{1} << 30), AllocatorConfig{});
  const Allocation x = a.allocate(4096);
  a.free(x);
  a.empty_cache();
  CHECK(a.memory_reserved() == 0);
}
