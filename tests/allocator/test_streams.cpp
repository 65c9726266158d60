// Stream semantics: a freed block is reusable at once on its own stream, never directly on
// another, and — once another stream used it (record_stream) — only after events recorded
// on that stream have completed.
#include <catch2/catch.hpp>

#include "allocator/caching_allocator.h"
#include "allocator/simulated_device.h"

using namespace frugal::alloc;

namespace {
constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr StreamId kCompute = 0, kCopy = 7;
}  // namespace

TEMPLATE_TEST_CASE_SIG("stream-deferred reuse", "", ((bool Expandable), Expandable), (false),
                       (true)) {
  auto device = std::make_shared<SimulatedDevice>(1024 * MiB);
  device->events().set_manual(true);
  AllocatorConfig config;
  config.expandable_segments = Expandable;
  CachingAllocator a(device, config);

  SECTION("a block freed on its stream is reused at once on that stream") {
    const Allocation x = a.allocate(4 * MiB, kCompute);
    a.free(x);
    const Allocation y = a.allocate(4 * MiB, kCompute);
    CHECK(y.ptr == x.ptr);
    a.free(y);
  }

  SECTION("a cached block of one stream is not handed to another stream") {
    const Allocation x = a.allocate(4 * MiB, kCompute);
    a.free(x);
    const Allocation y = a.allocate(4 * MiB, kCopy);
    CHECK(y.ptr != x.ptr);
    a.free(y);
  }

  SECTION("record_stream defers reuse until that stream's events complete") {
    const Allocation x = a.allocate(4 * MiB, kCompute);
    a.record_stream(x, kCopy);
    a.free(x);
    CHECK(device->events().pending() == 1);
    DeviceStats s = a.stats();
    CHECK(s.allocation.all().current == 0);
    CHECK(s.active.all().current == 1);  // still in use by the copy stream
    CHECK(s.active_bytes.all().current == static_cast<std::int64_t>(4 * MiB));

    const Allocation y = a.allocate(4 * MiB, kCompute);
    CHECK(y.ptr != x.ptr);  // x is still busy
    a.free(y);

    device->events().complete_stream(kCopy);
    const Allocation z = a.allocate(4 * MiB, kCompute);  // polls events first
    CHECK(z.ptr == x.ptr);
    CHECK(a.stats().active.all().current == 1);
    a.free(z);
    CHECK(device->events().pending() == 0);
  }

  SECTION("a block used by several streams waits for all of them") {
    const Allocation x = a.allocate(1000, kCompute);
    a.record_stream(x, kCopy);
    a.record_stream(x, 9);
    a.record_stream(x, kCompute);  // its own stream: nothing to wait for
    a.free(x);
    CHECK(device->events().pending() == 2);
    device->events().complete_stream(kCopy);
    CHECK(a.allocate(1000, kCompute).ptr != x.ptr);  // leaked on purpose: still waits on 9
    device->events().complete_stream(9);
    const Allocation again = a.allocate(1000, kCompute);
    CHECK(again.ptr == x.ptr);
  }

  SECTION("empty_cache keeps blocks whose events are pending, and frees them later") {
    const Allocation x = a.allocate(4 * MiB, kCompute);
    a.record_stream(x, kCopy);
    a.free(x);
    a.empty_cache();
    CHECK(a.stats().reserved_bytes.all().current > 0);
    device->events().complete_all();
    a.empty_cache();
    CHECK(a.stats().reserved_bytes.all().current == 0);
    CHECK(device->used() == 0);
  }
}
