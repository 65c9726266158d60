// Subset: a data set seen through a list of its indices (torch.utils.data.Subset), and the
// seeded stratified split that holds out a fraction of every class for evaluation when a
// tree of class folders comes without a test split.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "data/dataset.h"

namespace frugal::data {

class Subset : public Dataset {
 public:
  // Every index must lie in [0, dataset->size()); errors name the first that does not.
  Subset(std::shared_ptr<const Dataset> dataset, std::vector<std::int64_t> indices);

  std::int64_t size() const override { return static_cast<std::int64_t>(indices_.size()); }
  SampleSpec spec() const override { return dataset_->spec(); }
  void get(std::int64_t index, const SampleSlot& slot) const override {
    dataset_->get(base_index(index), slot);
  }
  void prefetch(std::int64_t index) const override { dataset_->prefetch(base_index(index)); }
  std::string source(std::int64_t index) const override;

  const Dataset& dataset() const { return *dataset_; }
  const std::vector<std::int64_t>& indices() const { return indices_; }
  std::int64_t base_index(std::int64_t index) const {
    return indices_.at(static_cast<std::size_t>(index));
  }

 private:
  std::shared_ptr<const Dataset> dataset_;
  std::vector<std::int64_t> indices_;
};

// Indices into a labelled data set: those to train on and those held out.
struct StratifiedSplit {
  std::vector<std::int64_t> train, held_out;
};

// Holds out round(fraction * n) of the n samples of every class (at least one of a class
// with two or more samples, never all of one), drawn by a shuffle seeded with `seed`, so the
// held-out part has the classes in the proportions of the whole and the same seed gives the
// same split on every machine. Both lists are in ascending order. `fraction` must lie in
// (0, 1).
StratifiedSplit stratified_split(const std::vector<std::int64_t>& labels, double fraction,
                                 std::uint64_t seed);

}  // namespace frugal::data
