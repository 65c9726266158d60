// InMemoryLoader: batch sizes and drop_last, targets staying with their samples, every
// sample once per epoch, and shuffles that depend only on (seed, epoch).
#include <catch2/catch.hpp>

#include <set>

#include "data/loader.h"
#include "engine/frugal.h"

using namespace frugal;
using namespace frugal::data;
using Catch::Matchers::Contains;

namespace {

// Sample i has data row [i, i + 0.5] and target 1000 + i, so a batch shows its indices.
InMemoryLoader make(std::int64_t n, DataLoaderOptions options) {
  Tensor data = empty({n, 2}, kFloat32);
  Tensor targets = empty({n}, kInt64);
  for (std::int64_t i = 0; i < n; ++i) {
    data.data_ptr<float>()[2 * i] = static_cast<float>(i);
    data.data_ptr<float>()[2 * i + 1] = static_cast<float>(i) + 0.5f;
    targets.data_ptr<std::int64_t>()[i] = 1000 + i;
  }
  return InMemoryLoader(data, targets, options);
}

std::vector<std::int64_t> epoch_indices(const InMemoryLoader& loader) {
  std::vector<std::int64_t> seen;
  for (const Batch& b : loader) {
    for (std::int64_t r = 0; r < b.data.size(0); ++r) {
      const auto i = static_cast<std::int64_t>(b.data.data_ptr<float>()[2 * r]);
      CHECK(b.data.data_ptr<float>()[2 * r + 1] == static_cast<float>(i) + 0.5f);
      CHECK(b.target.data_ptr<std::int64_t>()[r] == 1000 + i);
      seen.push_back(i);
    }
  }
  return seen;
}

}  // namespace

TEST_CASE("loader: batches in order without shuffle, last batch smaller unless drop_last") {
  InMemoryLoader loader = make(10, {.batch_size = 4, .shuffle = false});
  REQUIRE(loader.num_batches() == 3);
  CHECK(loader.batch(0).data.sizes() == IntArrayRef{4, 2});
  CHECK(loader.batch(2).data.sizes() == IntArrayRef{2, 2});
  CHECK(loader.batch(2).target.sizes() == IntArrayRef{2});
  CHECK(epoch_indices(loader) == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});

  InMemoryLoader dropping = make(10, {.batch_size = 4, .shuffle = false, .drop_last = true});
  CHECK(dropping.num_batches() == 2);
  CHECK(epoch_indices(dropping).size() == 8);
  CHECK(make(8, {.batch_size = 4, .drop_last = true}).num_batches() == 2);
  CHECK(make(3, {.batch_size = 4, .drop_last = true}).num_batches() == 0);
  CHECK(make(0, {.batch_size = 4}).num_batches() == 0);
}

TEST_CASE("loader: batches are fresh tensors, not views of the dataset") {
  Tensor data = arange(12, kFloat32).view({6, 2});
  InMemoryLoader loader(data, arange(6), {.batch_size = 2, .shuffle = false});
  Batch b = loader.batch(1);
  CHECK_FALSE(b.data.is_alias_of(data));
  b.data.fill_(-1);
  CHECK(loader.batch(1).data[0][0].item<float>() == 4.0f);
  // A non-contiguous dataset is gathered by its logical rows.
  InMemoryLoader transposed(arange(12, kFloat32).view({2, 6}).t(), arange(6),
                            {.batch_size = 6, .shuffle = false});
  CHECK(transposed.batch(0).data[1][1].item<float>() == 7.0f);
}

TEST_CASE("loader: each epoch is a permutation that depends only on (seed, epoch)") {
  DataLoaderOptions options{.batch_size = 7, .shuffle = true, .seed = 42};
  InMemoryLoader a = make(100, options);
  InMemoryLoader b = make(100, options);
  std::vector<std::vector<std::int64_t>> epochs;
  for (std::int64_t e = 0; e < 4; ++e) {
    a.set_epoch(e);
    std::vector<std::int64_t> seen = epoch_indices(a);
    REQUIRE(seen.size() == 100);
    CHECK(std::set<std::int64_t>(seen.begin(), seen.end()).size() == 100);  // each exactly once
    epochs.push_back(seen);
  }
  CHECK(epochs[0] != epochs[1]);
  CHECK(epochs[1] != epochs[2]);
  // A fresh loader (a resumed run) jumping straight to epoch 2 sees epoch 2's order.
  b.set_epoch(2);
  CHECK(epoch_indices(b) == epochs[2]);
  b.set_epoch(0);
  CHECK(epoch_indices(b) == epochs[0]);
  CHECK(b.order() == epochs[0]);
  // Another seed, another order.
  InMemoryLoader c = make(100, {.batch_size = 7, .shuffle = true, .seed = 43});
  CHECK(epoch_indices(c) != epochs[0]);
  // The order is pinned: the generator and the bounded draws are fully specified, so these
  // values hold for every compiler and platform.
  InMemoryLoader pinned = make(10, {.batch_size = 4, .shuffle = true, .seed = 0});
  CHECK(pinned.order() == std::vector<std::int64_t>{6, 1, 2, 4, 7, 5, 3, 0, 9, 8});
  pinned.set_epoch(1);
  CHECK(pinned.order() == std::vector<std::int64_t>{5, 0, 8, 7, 3, 1, 9, 6, 4, 2});
}

TEST_CASE("loader: bad options and mismatched tensors are refused") {
  CHECK_THROWS_WITH(make(4, {.batch_size = 0}), Contains("batch_size must be positive, got 0"));
  CHECK_THROWS_WITH(InMemoryLoader(zeros({5, 3}), zeros({4})),
                    Contains("data has 5 samples") && Contains("targets have 4"));
  CHECK_THROWS_WITH(InMemoryLoader(zeros({}), zeros({1})), Contains("0-dim"));
  CHECK_THROWS_WITH(InMemoryLoader(Tensor(), zeros({1})), Contains("data is an undefined tensor"));
  InMemoryLoader loader = make(5, {.batch_size = 2});
  CHECK_THROWS_WITH(loader.batch(3), Contains("index 3 out of range") && Contains("3 batches"));
  CHECK_THROWS_WITH(loader.batch(-1), Contains("out of range"));
}

TEST_CASE("loader: a transform is applied to each data batch, not to the stored data") {
  Tensor data = arange(20, kInt64).to(kUInt8).view({10, 2});
  DataLoaderOptions options;
  options.batch_size = 4;
  options.shuffle = false;
  options.transform = [](const Tensor& t) { return t.to(kFloat32) * 0.5; };
  InMemoryLoader loader(data, arange(10, kInt64), options);
  const Batch b = loader.batch(1);
  CHECK(b.data.dtype() == kFloat32);
  CHECK(b.data[0][1].item<float>() == 4.5f);  // row 4 = {8, 9}
  CHECK(data.dtype() == kUInt8);
}
