// Subset and stratified_split: the held-out part keeps every class's share, the two parts
// partition the data, the same seed gives the same split, and bad indices or fractions are
// errors naming them.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "data/subset.h"
#include "data/tensor_image_dataset.h"
#include "engine/frugal.h"

using namespace frugal;
using namespace frugal::data;
using Catch::Matchers::Contains;

TEST_CASE("stratified split: every class keeps its share, the parts partition the data") {
  std::vector<std::int64_t> labels;
  const std::map<std::int64_t, int> sizes = {{0, 100}, {1, 30}, {2, 7}, {3, 2}, {4, 1}};
  for (const auto& [label, n] : sizes)
    for (int i = 0; i < n; ++i) labels.push_back(label);
  // Interleave the classes so that held-out indices are not a prefix.
  std::vector<std::int64_t> mixed;
  for (std::size_t i = 0; i < labels.size(); ++i) mixed.push_back(labels[(i * 37) % labels.size()]);
  const StratifiedSplit split = stratified_split(mixed, 0.1, 5);
  std::map<std::int64_t, int> held;
  for (std::int64_t i : split.held_out) ++held[mixed[static_cast<std::size_t>(i)]];
  CHECK(held[0] == 10);
  CHECK(held[1] == 3);
  CHECK(held[2] == 1);  // round(0.7)
  CHECK(held[3] == 1);  // at least one of a class of two
  CHECK(held[4] == 0);  // a class of one is only trained on
  std::set<std::int64_t> all(split.train.begin(), split.train.end());
  all.insert(split.held_out.begin(), split.held_out.end());
  CHECK(all.size() == mixed.size());
  CHECK(split.train.size() + split.held_out.size() == mixed.size());
  CHECK(std::is_sorted(split.train.begin(), split.train.end()));
  CHECK(std::is_sorted(split.held_out.begin(), split.held_out.end()));
  CHECK(stratified_split(mixed, 0.1, 5).held_out == split.held_out);
  CHECK(stratified_split(mixed, 0.1, 6).held_out != split.held_out);
  CHECK_THROWS_WITH(stratified_split(mixed, 0.0, 0), Contains("strictly between 0 and 1"));
  CHECK_THROWS_WITH(stratified_split(mixed, 1.0, 0), Contains("strictly between 0 and 1"));
}

TEST_CASE("subset: samples, sources and errors come from the indices given") {
  Tensor images = zeros({5, 1, 2, 2}, TensorOptions(kUInt8));
  for (int i = 0; i < 5; ++i) images[i].fill_(10 * i);
  auto base = std::make_shared<TensorImageDataset>(images, arange(5, TensorOptions(kInt64)));
  const Subset subset(base, {4, 1});
  CHECK(subset.size() == 2);
  CHECK(subset.spec().data_sizes == base->spec().data_sizes);
  std::uint8_t pixels[4];
  std::int64_t label = -1;
  subset.get(0, {pixels, &label, 0});
  CHECK(label == 4);
  CHECK(pixels[0] == 40);
  subset.get(1, {pixels, &label, 0});
  CHECK(label == 1);
  CHECK(subset.source(0) == base->source(4));
  CHECK_THROWS_WITH(Subset(base, {0, 5}), Contains("index 5") && Contains("5 samples"));
  CHECK_THROWS(subset.get(2, {pixels, &label, 0}));
}
