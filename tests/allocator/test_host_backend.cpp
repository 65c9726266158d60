// Host memory through the caching allocator: real, writable, aligned memory, huge-page
// sized segments, expandable ranges that are committed and dropped on demand, and the
// process-wide CPU allocator.
#include <catch2/catch.hpp>

#include <cstring>

#include "allocator/caching_allocator.h"
#include "allocator/default_allocators.h"
#include "allocator/host_backend.h"

using namespace frugal::alloc;

namespace {
constexpr std::size_t MiB = std::size_t{1} << 20;
}

TEMPLATE_TEST_CASE_SIG("host blocks are real, aligned memory", "", ((bool Expandable), Expandable),
                       (false), (true)) {
  AllocatorConfig config;
  config.expandable_segments = Expandable;
  CachingAllocator a(std::make_shared<HostBackend>(), config);
  std::vector<Allocation> blocks;
  for (std::size_t bytes : {std::size_t{1}, std::size_t{4096}, 3 * MiB, 33 * MiB}) {
    const Allocation x = a.allocate(bytes);
    CHECK(reinterpret_cast<std::uintptr_t>(x.ptr) % 512 == 0);
    std::memset(x.ptr, 0x5a, bytes);
    blocks.push_back(x);
  }
  for (const Allocation& x : blocks) {
    const auto* p = static_cast<const unsigned char*>(x.ptr);
    CHECK(p[0] == 0x5a);
    CHECK(p[x.size - 1] == 0x5a);
    a.free(x);
  }
  CHECK(a.memory_reserved() > 0);
  a.empty_cache();
  CHECK(a.memory_reserved() == 0);
}

TEST_CASE("large host segments are 2 MiB aligned, for transparent huge pages") {
  CachingAllocator a(std::make_shared<HostBackend>(),
                     AllocatorConfig::parse("expandable_segments:False"));
  const Allocation x = a.allocate(12 * MiB);
  CHECK(reinterpret_cast<std::uintptr_t>(x.ptr) % (2 * MiB) == 0);
  a.free(x);
}

TEST_CASE("an unmapped and remapped host granule reads back as fresh zero memory") {
  CachingAllocator a(std::make_shared<HostBackend>(),
                     AllocatorConfig::parse("expandable_segments:True"));
  const Allocation x = a.allocate(4 * MiB);
  std::memset(x.ptr, 0xff, 4 * MiB);
  a.free(x);
  a.empty_cache();
  CHECK(a.memory_reserved() == 0);
  const Allocation y = a.allocate(4 * MiB);
  REQUIRE(y.ptr == x.ptr);
  CHECK(static_cast<const unsigned char*>(y.ptr)[12345] == 0);  // the old pages were dropped
  a.free(y);
}

TEST_CASE("the process-wide CPU allocator is one shared instance") {
  CachingAllocator& a = cpu_allocator();
  CHECK(&a == &cpu_allocator());
  CHECK(a.backend().name() == "cpu");
  const Allocation x = a.allocate(100);
  CHECK(a.memory_allocated() >= 512);
  a.free(x);
}
