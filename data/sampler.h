// Samplers: the order in which a loader visits a dataset's samples in one epoch, with
// libtorch's names. A random order depends only on (seed, epoch), as PyTorch's
// DistributedSampler does with set_epoch, so a resumed run replays the same batches.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace frugal::data {

class Sampler {
 public:
  virtual ~Sampler() = default;
  // The sample indices of `epoch`, in visiting order.
  virtual std::vector<std::int64_t> order(std::int64_t epoch) const = 0;
  virtual std::int64_t size() const = 0;
};

// 0, 1, ..., size-1 every epoch.
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(std::int64_t size);
  std::vector<std::int64_t> order(std::int64_t epoch) const override;
  std::int64_t size() const override { return size_; }

 private:
  std::int64_t size_;
};

// A Fisher-Yates permutation of 0..size-1 per epoch, driven by std::mt19937_64 seeded from
// (seed, epoch) with a bias-free bounded draw: fully specified, so the order is the same on
// every platform and compiler, and the same as InMemoryLoader's for the same seed.
class RandomSampler : public Sampler {
 public:
  RandomSampler(std::int64_t size, std::uint64_t seed);
  std::vector<std::int64_t> order(std::int64_t epoch) const override;
  std::int64_t size() const override { return size_; }
  // The epoch order() uses by default through operator(): PyTorch's set_epoch.
  void set_epoch(std::int64_t epoch) { epoch_ = epoch; }
  std::vector<std::int64_t> operator()() const { return order(epoch_); }

 private:
  std::int64_t size_;
  std::uint64_t seed_;
  std::int64_t epoch_ = 0;
};

// For samples stored in consecutive groups (shards): shuffles the order of the groups and
// the order within each group, so that reads stay within one file at a time (the page cache
// works on one shard, as WebDataset and FFCV's quasi-random order do) while every epoch
// still sees a different order. group_sizes[g] samples belong to group g, numbered
// consecutively.
class ShardShuffleSampler : public Sampler {
 public:
  ShardShuffleSampler(std::vector<std::int64_t> group_sizes, std::uint64_t seed);
  std::vector<std::int64_t> order(std::int64_t epoch) const override;
  std::int64_t size() const override { return size_; }

 private:
  std::vector<std::int64_t> group_sizes_;
  std::uint64_t seed_;
  std::int64_t size_ = 0;
};

// In-place Fisher-Yates shuffle of `values` from std::mt19937_64 seeded with `seed`.
void shuffle_in_place(std::vector<std::int64_t>& values, std::uint64_t seed);

}  // namespace frugal::data
