// Many threads, each on its own stream, allocating and freeing at random on real host
// memory: every block stays aligned, private (a pattern written at allocation survives
// until free) and the books balance at the end; with the memory history recording, while
// another thread reads snapshots and stats. Run under ThreadSanitizer by
// scripts/sanitize.sh tsan.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include "allocator/caching_allocator.h"
#include "allocator/host_backend.h"

using namespace frugal::alloc;

TEMPLATE_TEST_CASE_SIG("concurrent allocate/free from many threads", "",
                       ((bool Expandable, bool History), Expandable, History), (false, false),
                       (true, false), (true, true)) {
  AllocatorConfig config;
  config.expandable_segments = Expandable;
  CachingAllocator a(std::make_shared<HostBackend>(), config);
  if (History) a.record_history(1 << 14);
  constexpr int kThreads = 8, kSteps = 4000;
  std::atomic<int> corrupted{0}, misaligned{0};
  auto worker = [&](int t) {
    std::mt19937 rng(t);
    std::uniform_real_distribution<double> log_size(9.0, 22.0);  // 512 B .. 4 MiB
    std::vector<std::pair<Allocation, unsigned char>> live;
    for (int step = 0; step < kSteps; ++step) {
      if (live.size() < 16 && (live.empty() || rng() % 2)) {
        const auto bytes = static_cast<std::size_t>(std::pow(2.0, log_size(rng)));
        const Allocation x = a.allocate(bytes, static_cast<StreamId>(t % 3));
        const auto pattern = static_cast<unsigned char>(rng());
        if (reinterpret_cast<std::uintptr_t>(x.ptr) % 512 != 0) ++misaligned;
        std::memset(x.ptr, pattern, std::min<std::size_t>(bytes, 4096));
        std::memset(static_cast<char*>(x.ptr) + bytes - 1, pattern, 1);
        live.emplace_back(x, pattern);
      } else {
        const std::size_t i = rng() % live.size();
        const auto& [x, pattern] = live[i];
        const auto* bytes = static_cast<const unsigned char*>(x.ptr);
        for (std::size_t k = 0; k < std::min<std::size_t>(x.size, 4096); ++k) {
          if (bytes[k] != pattern) {
            ++corrupted;
            break;
          }
        }
        if (bytes[x.size - 1] != pattern) ++corrupted;
        a.free(x);
        live[i] = live.back();
        live.pop_back();
      }
    }
    for (const auto& [x, pattern] : live) a.free(x);
  };
  std::atomic<bool> done{false};
  std::atomic<std::int64_t> snapshots{0}, inconsistent{0};
  std::thread reader;
  if (History)
    reader = std::thread([&] {
      // What memory_report and the leak watch read while training runs.
      while (!done.load()) {
        const CachingAllocator::Snapshot snap = a.memory_snapshot();
        if (snap.allocated > snap.reserved) ++inconsistent;
        (void)a.stats();
        ++snapshots;
      }
    });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto& th : threads) th.join();
  done = true;
  if (reader.joinable()) reader.join();
  CHECK(inconsistent == 0);
  if (History) {
    CHECK(snapshots > 0);
    CHECK(a.memory_snapshot().events_recorded >= 2 * static_cast<std::uint64_t>(kThreads));
  }
  CHECK(corrupted == 0);
  CHECK(misaligned == 0);
  const DeviceStats s = a.stats();
  CHECK(s.allocation.all().current == 0);
  CHECK(s.allocated_bytes.all().current == 0);
  CHECK(s.requested_bytes.all().current == 0);
  CHECK(s.active_bytes.all().current == 0);
  CHECK(s.allocation.all().allocated == s.allocation.all().freed());
  a.empty_cache();
  CHECK(a.stats().reserved_bytes.all().current == 0);
}
