// Subset and the stratified split: per-class shuffles with the data pipeline's own generator
// (data/sample_random.h), which gives the same draws with every standard library.
#include "data/subset.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "common/error.h"
#include "data/sample_random.h"

namespace frugal::data {

Subset::Subset(std::shared_ptr<const Dataset> dataset, std::vector<std::int64_t> indices)
    : dataset_(std::move(dataset)), indices_(std::move(indices)) {
  FRUGAL_CHECK(dataset_ != nullptr, "Subset: the data set is null");
  const std::int64_t n = dataset_->size();
  for (std::size_t i = 0; i < indices_.size(); ++i)
    FRUGAL_CHECK(indices_[i] >= 0 && indices_[i] < n,
                 "Subset: index " + std::to_string(indices_[i]) + " (entry " + std::to_string(i) +
                     ") is outside a data set of " + std::to_string(n) + " samples");
}

std::string Subset::source(std::int64_t index) const {
  if (index < 0 || index >= size()) return "index " + std::to_string(index) + " of a subset";
  return dataset_->source(base_index(index));
}

StratifiedSplit stratified_split(const std::vector<std::int64_t>& labels, double fraction,
                                 std::uint64_t seed) {
  FRUGAL_CHECK(fraction > 0 && fraction < 1,
               "stratified_split: the held-out fraction must lie strictly between 0 and 1, got " +
                   std::to_string(fraction));
  std::map<std::int64_t, std::vector<std::int64_t>> by_class;
  for (std::size_t i = 0; i < labels.size(); ++i)
    by_class[labels[i]].push_back(static_cast<std::int64_t>(i));
  StratifiedSplit split;
  for (auto& [label, members] : by_class) {
    const auto n = static_cast<std::int64_t>(members.size());
    std::int64_t held = std::llround(fraction * static_cast<double>(n));
    if (n >= 2) held = std::clamp<std::int64_t>(held, 1, n - 1);
    else held = 0;  // a class of one sample is only trained on
    // Fisher-Yates over the class's members, seeded per class so that one class's size does
    // not change another's draw.
    SampleRandom random(mix64(seed ^ mix64(static_cast<std::uint64_t>(label))));
    for (std::int64_t i = n - 1; i > 0; --i)
      std::swap(members[static_cast<std::size_t>(i)],
                members[random.below(static_cast<std::uint64_t>(i + 1))]);
    split.held_out.insert(split.held_out.end(), members.begin(), members.begin() + held);
    split.train.insert(split.train.end(), members.begin() + held, members.end());
  }
  std::sort(split.train.begin(), split.train.end());
  std::sort(split.held_out.begin(), split.held_out.end());
  return split;
}

}  // namespace frugal::data
