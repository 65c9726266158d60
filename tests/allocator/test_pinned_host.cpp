// Pinned host memory without a GPU: page-locked with mlock (the kernel's VmLck counts it),
// cached by its own caching allocator with its own stats, and a block read by a copy on
// another stream reused only after that copy's event completes.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <string>

#include "allocator/caching_allocator.h"
#include "allocator/default_allocators.h"
#include "allocator/pinned_host_backend.h"
#include "common/sanitizers.h"

using namespace frugal::alloc;

namespace {

// Locked memory of this process, from /proc/self/status (kB there).
std::size_t locked_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmLck:", 0) == 0) return std::stoul(line.substr(6));
  }
  return 0;
}

}  // namespace

TEST_CASE("pinned host memory is page-locked and cached", "[pinned]") {
  auto backend = std::make_shared<PinnedHostBackend>(PinnedHostBackend::Mode::kMlock);
  CachingAllocator allocator(backend);
  const std::size_t before = locked_kib();
  const Allocation a = allocator.allocate(3 << 20);
  std::memset(a.ptr, 7, 3 << 20);  // the memory is usable
  if (backend->pageable_bytes() == 0) {
    // Locked: the segment (3 MiB rounded to the large pool's 20 MiB segment) is in VmLck.
    CHECK(backend->locked_bytes() >= (std::size_t{3} << 20));
    // ASan and TSan turn mlock into a no-op, so only the backend's own count can be checked
    // there.
    if (!frugal::kSanitizerIgnoresMlock) CHECK(locked_kib() >= before + 3 * 1024);
  } else {
    WARN("mlock refused here (RLIMIT_MEMLOCK); the fallback to pageable memory is what is tested");
  }
  const auto reserved = allocator.memory_reserved();
  allocator.free(a);
  // Cached: a second request of the size reuses the block, with no new segment.
  const Allocation b = allocator.allocate(3 << 20);
  CHECK(b.ptr == a.ptr);
  CHECK(allocator.memory_reserved() == reserved);
  CHECK(allocator.stats().num_device_alloc == 1);
  allocator.free(b);
  allocator.empty_cache();
  CHECK(allocator.memory_reserved() == 0);
  CHECK(backend->locked_bytes() + backend->pageable_bytes() == 0);
  CHECK(locked_kib() <= before);
}

TEST_CASE("a pinned block read by a copy is reused only after the copy's event", "[pinned]") {
  auto backend = std::make_shared<PinnedHostBackend>(PinnedHostBackend::Mode::kMlock);
  backend->events().set_manual(true);
  CachingAllocator allocator(backend);
  constexpr StreamId kCopyStream = 5;
  const Allocation staging = allocator.allocate(1 << 16);
  allocator.record_stream(staging, kCopyStream);  // an asynchronous copy reads it
  allocator.free(staging);
  // Still being read: the next request gets other memory.
  const Allocation other = allocator.allocate(1 << 16);
  CHECK(other.ptr != staging.ptr);
  allocator.free(other);
  backend->events().complete_stream(kCopyStream);
  // The copy is done: the block is reusable (most recently freed first, same size).
  const Allocation again = allocator.allocate(1 << 16);
  const Allocation again2 = allocator.allocate(1 << 16);
  CHECK((again.ptr == staging.ptr || again2.ptr == staging.ptr));
  allocator.free(again);
  allocator.free(again2);
}

TEST_CASE("pinned_allocator() is a separate allocator with its own stats", "[pinned]") {
  CachingAllocator& pinned = pinned_allocator();
  CHECK(&pinned != &cpu_allocator());
  const auto cpu_before = cpu_allocator().memory_allocated();
  const Allocation a = pinned.allocate(1 << 20);
  CHECK(pinned.memory_allocated() >= (std::size_t{1} << 20));
  CHECK(cpu_allocator().memory_allocated() == cpu_before);
  pinned.free(a);
  CHECK(pinned.memory_allocated() == 0);
}
