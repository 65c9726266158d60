// DistributedSampler without MPI: the ranks of one epoch partition the data set exactly (or
// cover it with PyTorch's padding), the shuffle depends on (seed, epoch), bad ranks throw.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "common/error.h"
#include "data/distributed_sampler.h"
#include "data/sampler.h"

using namespace frugal::data;

namespace {
// Every rank's order for `epoch`, concatenated.
std::vector<std::int64_t> all_ranks(std::int64_t n, std::int64_t replicas, std::int64_t epoch,
                                    DistributedSamplerOptions options) {
  std::vector<std::int64_t> out;
  for (std::int64_t r = 0; r < replicas; ++r) {
    DistributedSampler s(n, replicas, r, options);
    s.set_epoch(epoch);
    const auto mine = s();
    CHECK(static_cast<std::int64_t>(mine.size()) == s.size());
    out.insert(out.end(), mine.begin(), mine.end());
  }
  return out;
}
std::vector<std::int64_t> range(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), std::int64_t{0});
  return v;
}
}  // namespace

TEST_CASE("distributed sampler: ranks partition an epoch exactly when the size divides") {
  for (std::int64_t replicas : {1, 2, 3, 4}) {
    for (bool shuffle : {false, true}) {
      auto got = all_ranks(120, replicas, 3, {.shuffle = shuffle, .seed = 7});
      CHECK(got.size() == 120);
      std::sort(got.begin(), got.end());
      CHECK(got == range(120));
    }
  }
}

TEST_CASE("distributed sampler: PyTorch's strided split without shuffle") {
  DistributedSampler r0(10, 3, 0, {.shuffle = false}), r1(10, 3, 1, {.shuffle = false}),
      r2(10, 3, 2, {.shuffle = false});
  // Padded to 12 by repeating the start: 0..9, 0, 1.
  CHECK(r0.order(0) == std::vector<std::int64_t>{0, 3, 6, 9});
  CHECK(r1.order(0) == std::vector<std::int64_t>{1, 4, 7, 0});
  CHECK(r2.order(0) == std::vector<std::int64_t>{2, 5, 8, 1});
  CHECK(r0.total_size() == 12);
  DistributedSampler d0(10, 3, 0, {.shuffle = false, .drop_last = true}),
      d2(10, 3, 2, {.shuffle = false, .drop_last = true});
  CHECK(d0.order(0) == std::vector<std::int64_t>{0, 3, 6});
  CHECK(d2.order(0) == std::vector<std::int64_t>{2, 5, 8});
  CHECK(d0.total_size() == 9);
}

TEST_CASE("distributed sampler: padding covers every sample, drop_last sees each at most once") {
  const DistributedSamplerOptions pad{.shuffle = true, .seed = 1};
  auto padded = all_ranks(101, 4, 0, pad);
  CHECK(padded.size() == 104);
  std::sort(padded.begin(), padded.end());
  auto unique = padded;
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  CHECK(unique == range(101));  // all seen; 3 of them twice

  auto dropped = all_ranks(101, 4, 0, {.shuffle = true, .seed = 1, .drop_last = true});
  CHECK(dropped.size() == 100);
  std::sort(dropped.begin(), dropped.end());
  CHECK(std::adjacent_find(dropped.begin(), dropped.end()) == dropped.end());
  // A data set smaller than the rank count is padded by repetition too.
  CHECK(all_ranks(1, 3, 0, {.shuffle = false}) == std::vector<std::int64_t>{0, 0, 0});
}

TEST_CASE("distributed sampler: the shuffle is the same on every rank, new each epoch") {
  // On one replica, the order is RandomSampler's for the same seed and epoch.
  const RandomSampler random(50, 9);
  const DistributedSampler one(50, 1, 0, {.shuffle = true, .seed = 9});
  CHECK(one.order(2) == random.order(2));
  CHECK(one.order(2) != one.order(3));
  const DistributedSampler a(50, 2, 0, {.seed = 9}), b(50, 2, 0, {.seed = 9});
  CHECK(a.order(4) == b.order(4));
}

TEST_CASE("distributed sampler: impossible settings are frugal::Error") {
  CHECK_THROWS_AS(DistributedSampler(10, 2, 2), frugal::Error);
  CHECK_THROWS_AS(DistributedSampler(10, 2, -1), frugal::Error);
  CHECK_THROWS_AS(DistributedSampler(10, 0, 0), frugal::Error);
  CHECK_THROWS_AS(DistributedSampler(-1, 2, 0), frugal::Error);
  CHECK_THROWS_WITH(DistributedSampler(10, 2, 5), Catch::Contains("invalid rank 5"));
}
