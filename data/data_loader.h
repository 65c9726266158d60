// data::DataLoader: batches from a Dataset in a sampler's order, made by a team of OpenMP
// worker threads that decode and augment each sample straight into its slot of the batch
// tensor, with at most `prefetch` batches in flight, optionally in pinned memory. One epoch
// is an RAII object: leaving it (or breaking out of the loop) stops and joins its threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "data/dataset.h"
#include "data/loader.h"
#include "data/sampler.h"

namespace frugal::data {

// One pass over the data set. With num_workers > 0 a producer thread leads an OpenMP team of
// num_workers threads (itself one of them) that fills batch after batch ahead of the
// consumer; with 0 every batch is made on the calling thread when asked for. Destroying it
// stops the producer (unfinished samples are abandoned) and joins it — or, with
// persistent_workers, waits until the loader's team is idle again.
class LoaderEpoch {
 public:
  ~LoaderEpoch();
  LoaderEpoch(const LoaderEpoch&) = delete;
  LoaderEpoch& operator=(const LoaderEpoch&) = delete;

  // The next batch in order, or nothing after the last. Rethrows, as a SampleError naming the
  // sample's index and file, the first error a worker met in that batch (unless skip_bad).
  std::optional<Batch> next();
  // The index within the epoch of the batch next() returns next.
  std::int64_t next_index() const;

  struct State;

 private:
  friend class DataLoader;
  explicit LoaderEpoch(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

class DataLoader {
 public:
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = Batch*;
    using reference = Batch&;

    Iterator() = default;
    explicit Iterator(std::shared_ptr<LoaderEpoch> epoch);
    Batch& operator*() { return *current_; }
    Batch* operator->() { return &*current_; }
    Iterator& operator++();
    // Only the end is compared against: an iterator equals end() when its epoch is over.
    bool operator==(const Iterator& other) const { return !current_ && !other.current_; }

   private:
    std::shared_ptr<LoaderEpoch> epoch_;
    std::optional<Batch> current_;
  };

  // Uses options.shuffle to pick a RandomSampler(size, seed) or a SequentialSampler.
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options = {});
  // Visits the samples in `sampler`'s order (e.g. ShardShuffleSampler); options.shuffle is
  // then ignored. The sampler may visit a part of the dataset (a DistributedSampler gives each
  // rank its share): an epoch is sampler->size() samples, each index checked against the
  // dataset.
  DataLoader(std::shared_ptr<const Dataset> dataset, std::shared_ptr<const Sampler> sampler,
             DataLoaderOptions options = {});

  void set_epoch(std::int64_t epoch) { epoch_ = epoch; }
  std::int64_t epoch() const { return epoch_; }
  std::int64_t num_batches() const;
  const Dataset& dataset() const { return *dataset_; }
  const DataLoaderOptions& options() const { return options_; }

  // Starts the current epoch at batch `first_batch` (a resumed run skips the batches it saw).
  std::unique_ptr<LoaderEpoch> start(std::int64_t first_batch = 0) const;
  // for (Batch& b : loader): one epoch; breaking out stops its threads.
  Iterator begin() const;
  Iterator end() const { return {}; }

  // Samples left out under skip_bad since this loader was made, over all its epochs (a bad
  // sample met in three epochs counts three times).
  std::int64_t skipped() const;
  // The distinct dataset indices left out so far, ascending.
  std::vector<std::int64_t> skipped_indices() const;

  struct SkipRecord;

 private:
  std::shared_ptr<const Dataset> dataset_;
  std::shared_ptr<const Sampler> sampler_;
  DataLoaderOptions options_;
  std::int64_t epoch_ = 0;
  std::shared_ptr<SkipRecord> skipped_;
  // With persistent_workers: the team kept for the loader's life (made by the first epoch).
  mutable std::shared_ptr<class WorkerTeam> team_;
};

}  // namespace frugal::data
