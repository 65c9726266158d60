// DistributedSampler: one permutation per (seed, epoch) for all ranks, padded or cut to a
// multiple of the rank count, strided by rank — torch.utils.data.DistributedSampler's rules.
#include "data/distributed_sampler.h"

#include <numeric>
#include <string>

#include "common/error.h"
#include "data/sample_random.h"

namespace frugal::data {

DistributedSampler::DistributedSampler(std::int64_t dataset_size, std::int64_t num_replicas,
                                       std::int64_t rank, DistributedSamplerOptions options)
    : dataset_size_(dataset_size), num_replicas_(num_replicas), rank_(rank), options_(options) {
  FRUGAL_CHECK(dataset_size >= 0, "DistributedSampler: dataset size must be >= 0, got " +
                                      std::to_string(dataset_size));
  FRUGAL_CHECK(num_replicas >= 1, "DistributedSampler: num_replicas must be >= 1, got " +
                                      std::to_string(num_replicas));
  FRUGAL_CHECK(rank >= 0 && rank < num_replicas, "DistributedSampler: invalid rank " +
                                                     std::to_string(rank) +
                                                     ", rank should be in the interval [0, " +
                                                     std::to_string(num_replicas - 1) + "]");
  // PyTorch: with drop_last the tail that does not divide evenly is dropped; without it the
  // epoch is rounded up and padded.
  if (options_.drop_last && dataset_size % num_replicas != 0)
    num_samples_ = dataset_size / num_replicas;
  else
    num_samples_ = (dataset_size + num_replicas - 1) / num_replicas;
}

std::vector<std::int64_t> DistributedSampler::order(std::int64_t epoch) const {
  std::vector<std::int64_t> all(static_cast<std::size_t>(dataset_size_));
  std::iota(all.begin(), all.end(), std::int64_t{0});
  // The same seed mixing as RandomSampler, so rank order = a RandomSampler epoch, strided.
  if (options_.shuffle)
    shuffle_in_place(all, mix64(options_.seed ^ mix64(static_cast<std::uint64_t>(epoch))));
  const std::int64_t total = total_size();
  if (total > dataset_size_ && dataset_size_ > 0) {
    // Pad by repeating the order from its start, as many times as needed.
    const std::size_t n = all.size();
    for (std::int64_t i = 0; static_cast<std::int64_t>(all.size()) < total; ++i)
      all.push_back(all[static_cast<std::size_t>(i) % n]);
  }
  all.resize(static_cast<std::size_t>(total));
  std::vector<std::int64_t> mine;
  mine.reserve(static_cast<std::size_t>(num_samples_));
  for (std::int64_t i = rank_; i < total; i += num_replicas_)
    mine.push_back(all[static_cast<std::size_t>(i)]);
  return mine;
}

}  // namespace frugal::data
