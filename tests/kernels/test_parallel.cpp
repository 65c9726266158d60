// parallel_for: chunks cover the range exactly once, small ranges stay on the calling
// thread, and the thread-count setting is honoured and validated.
#include <catch2/catch.hpp>

#include <atomic>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/parallel.h"

using namespace frugal::kernels::cpu;

TEST_CASE("parallel_for covers every index exactly once") {
  set_num_threads(2);
  for (std::int64_t n : {0, 1, 7, 1000, 100003}) {
    std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
    parallel_for(0, n, 16, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) hits[static_cast<std::size_t>(i)]++;
    });
    for (auto& h : hits) REQUIRE(h.load() == 1);
  }
}

TEST_CASE("parallel_for runs small ranges and nested calls inline") {
  set_num_threads(2);
  int calls = 0;
  parallel_for(0, 10, 100, [&](std::int64_t b, std::int64_t e) {
    ++calls;
    CHECK(b == 0);
    CHECK(e == 10);
  });
  CHECK(calls == 1);
  std::atomic<int> nested_chunks{0}, outside_region{0};
  // No CHECK inside the region: Catch2 is not thread-safe (ThreadSanitizer caught one here).
  parallel_for(0, 1000, 1, [&](std::int64_t, std::int64_t) {
    if (!in_parallel_region()) outside_region++;
    parallel_for(0, 1000, 1, [&](std::int64_t, std::int64_t) { nested_chunks++; });
  });
  CHECK(outside_region.load() == 0);
  CHECK(nested_chunks.load() == 2);  // one inline chunk per outer chunk
}

TEST_CASE("set_num_threads rejects a count below one") {
  REQUIRE_THROWS_AS(set_num_threads(0), frugal::Error);
  set_num_threads(1);
  CHECK(get_num_threads() == 1);
  set_num_threads(2);
}
