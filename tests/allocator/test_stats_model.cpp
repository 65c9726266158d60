// The statistics are checked against a reference model over random operation sequences:
// counts and requested bytes from the model's own books, allocated / reserved /
// non-releasable bytes recomputed from the segment snapshot and the device's own counter,
// and the structural invariants of the block lists after every single operation.
#include <catch2/catch.hpp>

#include <random>

#include "allocator/caching_allocator.h"
#include "allocator/simulated_device.h"

using namespace frugal::alloc;

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr std::size_t kGranule = 2 * MiB;

struct Live {
  Allocation allocation;
  std::size_t requested;
  bool small;
  bool used_elsewhere = false;  // record_stream was called on it
};

// Peak-tracking reference counter.
struct Counter {
  std::int64_t current = 0, peak = 0, allocated = 0, freed = 0;
  void add(std::int64_t n) {
    current += n;
    allocated += n;
    peak = std::max(peak, current);
  }
  void remove(std::int64_t n) {
    current -= n;
    freed += n;
  }
  void observe(std::int64_t now) { peak = std::max(peak, current = now); }
};

void check_stat(const Stat& s, const Counter& c, const char* what) {
  INFO(what);
  CHECK(s.current == c.current);
  CHECK(s.peak == c.peak);
  CHECK(s.allocated == c.allocated);
  CHECK(s.freed() == c.freed);
}

struct Derived {
  std::int64_t allocated = 0, reserved = 0, non_releasable = 0, non_releasable_blocks = 0,
               segments = 0, pending = 0, pending_bytes = 0;
};

// Everything the snapshot implies, with the structural invariants checked on the way.
Derived derive(const std::vector<SegmentInfo>& segments) {
  Derived d;
  for (const SegmentInfo& seg : segments) {
    REQUIRE(!seg.blocks.empty());
    REQUIRE(seg.blocks.front().address == seg.address);
    std::size_t total = 0, mapped = 0;
    for (std::size_t i = 0; i < seg.blocks.size(); ++i) {
      const auto& b = seg.blocks[i];
      REQUIRE(b.address == seg.address + total);  // blocks tile the segment
      REQUIRE(b.size % 512 == 0);
      total += b.size;
      if (b.mapped) mapped += b.size;
      if (i > 0) {
        const auto& p = seg.blocks[i - 1];
        const bool both_cached =
            !p.allocated && !b.allocated && p.mapped && b.mapped && !p.pending && !b.pending;
        REQUIRE_FALSE(both_cached);               // free neighbours were merged
        REQUIRE_FALSE((!p.mapped && !b.mapped));  // unmapped neighbours too
      }
      if (!b.mapped) {
        REQUIRE(b.address % kGranule == 0);
        REQUIRE(b.size % kGranule == 0);
        REQUIRE_FALSE(b.allocated);
      }
      if (b.allocated) {
        d.allocated += static_cast<std::int64_t>(b.size);
        REQUIRE(b.requested <= b.size);
      } else if (b.pending) {
        d.pending += 1;
        d.pending_bytes += static_cast<std::int64_t>(b.size);
      } else if (b.mapped) {
        std::size_t stuck = 0;
        if (seg.expandable) {
          const std::size_t g0 = (b.address + kGranule - 1) / kGranule * kGranule;
          const std::size_t g1 = (b.address + b.size) / kGranule * kGranule;
          stuck = g1 > g0 ? b.size - (g1 - g0) : b.size;
        } else if (seg.blocks.size() > 1) {
          stuck = b.size;
        }
        d.non_releasable += static_cast<std::int64_t>(stuck);
        d.non_releasable_blocks += stuck > 0;
      }
    }
    REQUIRE(total == seg.size);
    if (seg.expandable) {
      // Mapped bytes are counted per granule: a granule is mapped if any block in it is.
      REQUIRE(seg.mapped % kGranule == 0);
      REQUIRE(seg.mapped >= mapped);
      REQUIRE(seg.mapped < mapped + kGranule * seg.blocks.size());
    } else {
      REQUIRE(seg.mapped == seg.size);
    }
    d.reserved += static_cast<std::int64_t>(seg.mapped);
    d.segments += seg.mapped > 0;
  }
  return d;
}

void run_model(const std::string& conf, std::size_t capacity, std::uint32_t seed) {
  auto device = std::make_shared<SimulatedDevice>(capacity);
  device->events().set_manual(true);  // blocks used by stream 9 wait for complete_all()
  CachingAllocator a(device, AllocatorConfig::parse(conf));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> log_size(0.0, 26.0);  // 1 B .. 64 MiB
  std::vector<Live> live;
  Counter allocations[3], requested[3], allocated, reserved, non_releasable, active, active_bytes;
  int pending = 0;      // freed blocks waiting for stream 9 (the model's own count)
  int completable = 0;  // of those, the ones whose events complete_all() has completed;
                        // the allocator notices at its next allocate or empty_cache
  auto process_completed = [&] {
    pending -= completable;
    completable = 0;
  };
  auto pool_of = [](bool small) { return small ? 1 : 2; };

  for (int step = 0; step < 3000; ++step) {
    const unsigned op = rng() % 100;
    if (op < 2) {
      process_completed();
      a.empty_cache();
    } else if (op < 3) {
      a.reset_peak_memory_stats();
      for (Counter* c :
           {&allocations[0], &allocations[1], &allocations[2], &requested[0], &requested[1],
            &requested[2], &allocated, &reserved, &non_releasable, &active, &active_bytes}) {
        c->peak = c->current;
      }
    } else if (op < 6) {
      device->events().complete_all();
      completable = pending;
    } else if (op < 10 && !live.empty()) {
      Live& l = live[rng() % live.size()];
      a.record_stream(l.allocation, 9);
      l.used_elsewhere = true;
    } else if (op < 55 && live.size() < 24) {
      process_completed();
      const auto bytes = static_cast<std::size_t>(std::pow(2.0, log_size(rng)));
      const StreamId stream = rng() % 2;
      const Allocation x = a.allocate(bytes, stream);
      REQUIRE(x.ptr != nullptr);
      const bool small = a.round_size(bytes) <= CachingAllocator::kSmallSize;
      live.push_back({x, bytes, small});
      for (int k : {0, pool_of(small)}) {
        allocations[k].add(1);
        requested[k].add(static_cast<std::int64_t>(bytes));
      }
    } else if (!live.empty()) {
      const std::size_t i = rng() % live.size();
      a.free(live[i].allocation);
      if (live[i].used_elsewhere) ++pending;
      for (int k : {0, pool_of(live[i].small)}) {
        allocations[k].remove(1);
        requested[k].remove(static_cast<std::int64_t>(live[i].requested));
      }
      live[i] = live.back();
      live.pop_back();
    }

    const DeviceStats s = a.stats();
    const Derived d = derive(a.snapshot());
    allocated.observe(d.allocated);
    reserved.observe(d.reserved);
    active.observe(allocations[0].current + pending);
    active_bytes.observe(d.allocated + d.pending_bytes);
    CHECK(d.pending == pending);
    non_releasable.observe(d.non_releasable);
    static const char* const kPools[] = {"all", "small_pool", "large_pool"};
    for (int k = 0; k < 3; ++k) {
      INFO("pool " << kPools[k] << ", step " << step << ", " << conf);
      check_stat(s.allocation.by_type[k], allocations[k], "allocation");
      check_stat(s.requested_bytes.by_type[k], requested[k], "requested_bytes");
    }
    CHECK(s.active.all().current == active.current);
    CHECK(s.active.all().peak == active.peak);
    CHECK(s.active_bytes.all().current == active_bytes.current);
    CHECK(s.active_bytes.all().peak == active_bytes.peak);
    CHECK(s.active.all().allocated == allocations[0].allocated);
    INFO("step " << step << ", " << conf);
    CHECK(s.allocated_bytes.all().current == allocated.current);
    CHECK(s.allocated_bytes.all().peak == allocated.peak);
    CHECK(s.allocated_bytes.all().allocated - s.allocated_bytes.all().freed() == allocated.current);
    CHECK(s.reserved_bytes.all().current == reserved.current);
    CHECK(s.reserved_bytes.all().peak == reserved.peak);
    CHECK(s.reserved_bytes.all().current == static_cast<std::int64_t>(device->used()));
    CHECK(s.segment.all().current == d.segments);
    CHECK(s.inactive_split_bytes.all().current == non_releasable.current);
    CHECK(s.inactive_split.all().current == d.non_releasable_blocks);
    CHECK(s.allocated_bytes.all().current == s.allocated_bytes.pool(PoolKind::kSmall).current +
                                                 s.allocated_bytes.pool(PoolKind::kLarge).current);
    CHECK(s.reserved_bytes.all().current == s.reserved_bytes.pool(PoolKind::kSmall).current +
                                                s.reserved_bytes.pool(PoolKind::kLarge).current);
    for (const Live& l : live) {
      CHECK(l.allocation.size == l.requested);
    }
    if (Catch::getResultCapture().lastAssertionPassed() == false) break;
  }
  for (const Live& l : live) a.free(l.allocation);
  device->events().complete_all();
  a.empty_cache();
  CHECK(a.stats().reserved_bytes.all().current == 0);
  CHECK(device->used() == 0);
}

}  // namespace

TEST_CASE("stats match the reference model: expandable segments (default)") {
  run_model("", std::size_t{64} << 30, 1);
}

TEST_CASE("stats match the reference model: separate segments") {
  run_model("expandable_segments:False", std::size_t{64} << 30, 2);
}

TEST_CASE("stats match the reference model: max_split_size and power-of-two rounding") {
  run_model("expandable_segments:False,max_split_size_mb:32,roundup_power2_divisions:4",
            std::size_t{64} << 30, 3);
  run_model("max_split_size_mb:24,roundup_power2_divisions:[4:2,>:8]", std::size_t{64} << 30, 4);
}

TEST_CASE("stats match the reference model: garbage collection under a tight device") {
  run_model("expandable_segments:False,garbage_collection_threshold:0.5", std::size_t{3} << 30, 5);
  run_model("garbage_collection_threshold:0.5", std::size_t{3} << 30, 6);
}
