// The free-block index must always return the exact best fit: checked against a sorted
// multiset over random inserts, erases and queries.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>

#include "allocator/free_index.h"

using frugal::alloc::Block;
using frugal::alloc::FreeIndex;

TEST_CASE("best_fit returns the smallest size that fits, or nothing") {
  FreeIndex index;
  Block a, b, c;
  a.size = 512;
  b.size = 4096;
  c.size = std::size_t{64} << 20;
  index.insert(&a);
  index.insert(&b);
  index.insert(&c);
  CHECK(index.best_fit(1) == &a);
  CHECK(index.best_fit(512) == &a);
  CHECK(index.best_fit(513) == &b);
  CHECK(index.best_fit(4096) == &b);
  CHECK(index.best_fit(4097) == &c);
  CHECK(index.best_fit((std::size_t{64} << 20) + 1) == nullptr);
  CHECK(index.largest() == &c);
  index.erase(&b);
  CHECK(index.best_fit(513) == &c);
  CHECK(index.count() == 2);
  CHECK(index.bytes() == 512 + (std::size_t{64} << 20));
}

TEST_CASE("equal sizes come back most recently inserted first") {
  FreeIndex index;
  Block a, b;
  a.size = b.size = 8192;
  index.insert(&a);
  index.insert(&b);
  CHECK(index.best_fit(8000) == &b);
  index.erase(&b);
  CHECK(index.best_fit(8000) == &a);
}

TEST_CASE("best_fit agrees with a sorted multiset over random operations") {
  std::mt19937_64 rng(7);
  FreeIndex index;
  std::multiset<std::size_t> reference;
  std::vector<std::unique_ptr<Block>> live;
  auto random_size = [&] {
    // Log-uniform from 512 B to 4 GiB, in 512-byte units, to cross every tree level.
    std::uniform_real_distribution<double> exponent(9.0, 32.0);
    const auto bytes = static_cast<std::size_t>(std::pow(2.0, exponent(rng)));
    return std::max<std::size_t>(512, bytes / 512 * 512);
  };
  for (int step = 0; step < 20000; ++step) {
    const int op = static_cast<int>(rng() % 3);
    if (op == 0 || live.empty()) {
      auto block = std::make_unique<Block>();
      block->size = random_size();
      index.insert(block.get());
      reference.insert(block->size);
      live.push_back(std::move(block));
    } else if (op == 1) {
      const std::size_t i = rng() % live.size();
      index.erase(live[i].get());
      reference.erase(reference.find(live[i]->size));
      live[i] = std::move(live.back());
      live.pop_back();
    } else {
      const std::size_t want = random_size() - rng() % 512;
      const Block* found = index.best_fit(want);
      const auto expected = reference.lower_bound((want + 511) / 512 * 512);
      if (expected == reference.end()) {
        REQUIRE(found == nullptr);
      } else {
        REQUIRE(found != nullptr);
        REQUIRE(found->size == *expected);
      }
    }
    REQUIRE(index.count() == reference.size());
  }
  if (!reference.empty()) CHECK(index.largest()->size == *reference.rbegin());
}
