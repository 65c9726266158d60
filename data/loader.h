// InMemoryLoader: batches over tensors that already hold a whole dataset (MNIST fits in
// 200 MB), shuffled per epoch in an order that depends only on (seed, epoch), so a resumed
// run replays exactly the batches the uninterrupted run would have seen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <vector>

#include "engine/tensor.h"

namespace frugal::data {

struct Batch {
  Tensor data;    // rows of the dataset's data, [B, ...]
  Tensor target;  // the matching rows of its targets, [B, ...]
};

struct DataLoaderOptions {
  std::int64_t batch_size = 64;
  bool shuffle = true;
  bool drop_last = false;  // leave out a last batch smaller than batch_size
  std::uint64_t seed = 0;
  // Applied to each gathered data batch (normalising stored uint8 pixels, say); none if empty.
  // InMemoryLoader only: DataLoader's datasets transform each sample themselves.
  std::function<Tensor(const Tensor&)> transform = nullptr;
  // DataLoader only (see data_loader.h). Worker threads making samples: 0 makes each batch on
  // the calling thread when it is asked for.
  int num_workers = 0;
  // Batches made ahead of the consumer, at most (with num_workers > 0).
  int prefetch = 2;
  // Batch buffers come from the pinned caching allocator, ready for non_blocking copies.
  bool pin_memory = false;
  // Keep the worker threads between epochs (joined when the loader is destroyed) instead of
  // starting and joining them every epoch; PyTorch's option of the same name.
  bool persistent_workers = false;
  // A sample that cannot be made is logged on stderr, counted and left out of its batch
  // (which becomes smaller) instead of ending the epoch with its error.
  bool skip_bad = false;
};

class InMemoryLoader {
 public:
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Batch;

    Iterator() = default;
    Iterator(const InMemoryLoader* loader, std::int64_t index) : loader_(loader), index_(index) {}
    Batch operator*() const { return loader_->batch(index_); }
    Iterator& operator++() {
      ++index_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator before = *this;
      ++index_;
      return before;
    }
    bool operator==(const Iterator& other) const { return index_ == other.index_; }

   private:
    const InMemoryLoader* loader_ = nullptr;
    std::int64_t index_ = 0;
  };

  // data and targets are CPU tensors with the same first dim (the samples); a
  // non-contiguous one is made contiguous once here. Starts at epoch 0.
  InMemoryLoader(Tensor data, Tensor targets, DataLoaderOptions options = {});

  // Sets the order of the epoch's batches. With shuffle it is a Fisher-Yates shuffle of
  // 0..N-1 driven by std::mt19937_64 seeded with a mix of (seed, epoch); both the engine and
  // the bounded draws are fully specified, so the order is the same on every platform.
  void set_epoch(std::int64_t epoch);
  std::int64_t epoch() const { return epoch_; }

  std::int64_t size() const { return data_.size(0); }  // samples
  std::int64_t num_batches() const;
  // Batch `index` of the current epoch: its rows gathered into fresh tensors from the
  // allocator (the last one is smaller unless drop_last).
  Batch batch(std::int64_t index) const;
  // The sample order of the current epoch.
  const std::vector<std::int64_t>& order() const { return order_; }
  const DataLoaderOptions& options() const { return options_; }

  Iterator begin() const { return {this, 0}; }
  Iterator end() const { return {this, num_batches()}; }

 private:
  Tensor data_, targets_;
  DataLoaderOptions options_;
  std::int64_t epoch_ = 0;
  std::vector<std::int64_t> order_;
};

}  // namespace frugal::data
