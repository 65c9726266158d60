// DistributedSampler: each of num_replicas processes visits its own share of a data set per
// epoch, with PyTorch's semantics — a (seed, epoch) permutation shared by all ranks, padded
// by repeating its start (or cut, with drop_last) to a multiple of num_replicas, then rank r
// takes positions r, r + num_replicas, ... Needs no MPI: the rank and count are just numbers.
#pragma once

#include <cstdint>

#include "data/sampler.h"

namespace frugal::data {

struct DistributedSamplerOptions {
  bool shuffle = true;
  std::uint64_t seed = 0;
  // Leave out the last dataset_size % num_replicas samples of the (shuffled) order instead of
  // padding with repeated samples, so every sample is seen at most once per epoch.
  bool drop_last = false;
};

class DistributedSampler : public Sampler {
 public:
  // A frugal::Error unless dataset_size >= 0, num_replicas >= 1 and 0 <= rank < num_replicas.
  DistributedSampler(std::int64_t dataset_size, std::int64_t num_replicas, std::int64_t rank,
                     DistributedSamplerOptions options = {});
  // This rank's indices for `epoch`; every rank gets size() of them.
  std::vector<std::int64_t> order(std::int64_t epoch) const override;
  // Samples per rank per epoch (PyTorch's num_samples).
  std::int64_t size() const override { return num_samples_; }
  // num_samples * num_replicas: the padded (or cut) epoch length over all ranks.
  std::int64_t total_size() const { return num_samples_ * num_replicas_; }
  // Call before each epoch so the shuffle differs per epoch (PyTorch's set_epoch).
  void set_epoch(std::int64_t epoch) { epoch_ = epoch; }
  std::vector<std::int64_t> operator()() const { return order(epoch_); }

 private:
  std::int64_t dataset_size_, num_replicas_, rank_;
  DistributedSamplerOptions options_;
  std::int64_t num_samples_ = 0;
  std::int64_t epoch_ = 0;
};

}  // namespace frugal::data
