// frugal-train's data: what --data names (a directory of idx files, ImageFolder trees or
// packed shards) opened as batches of normalised 1x28x28 images for training, in an order set
// by (seed, epoch), and as test batches for evaluation. --workers, --prefetch, --pin-memory
// and --skip-bad configure the DataLoader behind it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "data/loader.h"

namespace frugal::train {

struct DataSourceOptions {
  std::string path;
  std::int64_t batch_size = 128;
  std::uint64_t seed = 0;
  int workers = 0;
  int prefetch = 2;
  bool pin_memory = false;
  bool skip_bad = false;
};

class DataSource {
 public:
  // `options.path` is one of
  //  - a directory of idx files (train-images-idx3-ubyte[.gz] ...: Fashion-MNIST's layout);
  //  - a directory with train/ and test/ sub-directories, each an ImageFolder tree
  //    (<class>/<image>.png|jpg) or a directory of .frs shards;
  //  - a directory of shards named train-*.frs and test-*.frs (frugal-pack --split train|test).
  // Images are decoded to one gray channel and normalised with Fashion-MNIST's mean and std,
  // as the idx path normalises its pixels. The idx data set stays in an InMemoryLoader unless
  // --workers or --pin-memory ask for the DataLoader; the batch order is the same either way.
  static std::unique_ptr<DataSource> open(const DataSourceOptions& options);
  virtual ~DataSource() = default;

  virtual std::string kind() const = 0;  // "idx", "imagefolder" or "shards"
  virtual std::int64_t train_size() const = 0;
  virtual std::int64_t test_size() const = 0;
  virtual void set_epoch(std::int64_t epoch) = 0;
  virtual std::int64_t num_batches() const = 0;
  // Batch `index` of the current epoch. Asked in order (0, 1, 2 ... or from a resume point
  // on), batches come from the loader's prefetched stream; out of order, the epoch restarts
  // there.
  virtual data::Batch batch(std::int64_t index) = 0;
  // Every test sample once, in order, in batches of at most `batch_size`.
  virtual void for_each_test_batch(std::int64_t batch_size,
                                   const std::function<void(const data::Batch&)>& fn) = 0;
  // Samples left out by --skip-bad so far.
  virtual std::int64_t skipped() const { return 0; }
};

}  // namespace frugal::train
