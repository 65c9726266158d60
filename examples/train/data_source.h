// frugal-train's data: what --data names (a directory of idx files, a tree of class folders,
// train/ and test/ trees, or packed shards) opened as training batches in an order set by
// (seed, epoch) and as evaluation batches, with the transforms --image-size, --channels,
// --augment and --normalize ask for, and --skip-bad covering every place damage shows.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

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
  // Resize the short side to N, then crop N x N (centre for evaluation; training as
  // `augment` says). 0 keeps the images' own size, which must then agree.
  int image_size = 0;
  // 1 or 3: what every image is converted to. 0: 1 for gray data, 3 when any sampled image
  // holds colour.
  int channels = 0;
  // "" (computed from a sample of the training images), "none", "MEAN,STD" for every channel,
  // or "M1,...,Mc,S1,...,Sc" per channel.
  std::string normalize;
  // none, flip, pad-crop (CIFAR's recipe), resized-crop (ImageNet's), or auto: none without
  // image_size, else resized-crop from 64 pixels up and pad-crop below.
  std::string augment = "auto";
  // For a root of class folders without train/ and test/: the part of every class held out
  // for evaluation.
  double val_fraction = 0.1;
};

// What open() made of the data, for the run's log and --metrics-json.
struct DataInfo {
  std::string kind;   // "idx", "imagefolder" or "shards"
  std::string split;  // "idx", "folders" (train/ and test/), "held_out" or "shards"
  double val_fraction = 0;  // with "held_out"
  std::int64_t channels = 1, height = 28, width = 28;
  std::vector<std::string> classes;
  std::string augment;  // as resolved from "auto"
  std::string train_transform, eval_transform;
  std::vector<float> mean, std;
  std::string normalize_from;  // where mean and std came from
};

class DataSource {
 public:
  // `options.path` is one of
  //  - a directory of idx files (train-images-idx3-ubyte[.gz] ...: Fashion-MNIST's layout);
  //  - a directory with train/ and test/ (or val/) sub-directories, each an ImageFolder tree
  //    (<class>/<image>.png|jpg) or a directory of .frs shards;
  //  - a directory of shards named train-*.frs and test-*.frs (frugal-pack --split train|test);
  //  - an ImageFolder root (<class>/<image>) with no split below it: a seeded stratified
  //    split holds out `val_fraction` of every class for evaluation.
  // The idx data set stays in an InMemoryLoader unless --workers, --pin-memory or
  // --image-size ask for the DataLoader; the batch order is the same either way. Errors
  // (a damaged file without skip_bad, an impossible option) name what was wrong.
  static std::unique_ptr<DataSource> open(const DataSourceOptions& options);
  virtual ~DataSource() = default;

  const DataInfo& info() const { return info_; }
  virtual std::int64_t train_size() const = 0;
  virtual std::int64_t test_size() const = 0;
  virtual void set_epoch(std::int64_t epoch) = 0;
  virtual std::int64_t num_batches() const = 0;
  // Batch `index` of the current epoch. Asked in order (0, 1, 2 ... or from a resume point
  // on), batches come from the loader's prefetched stream; out of order, the epoch restarts
  // there.
  virtual data::Batch batch(std::int64_t index) = 0;
  // Every evaluation sample once, in order, in batches of at most `batch_size`.
  virtual void for_each_test_batch(std::int64_t batch_size,
                                   const std::function<void(const data::Batch&)>& fn) = 0;
  // The distinct files (or samples) --skip-bad has left out so far: found damaged while the
  // tree was scanned, or when a sample was read, decoded or transformed, in training or in
  // evaluation. Each is named once however many epochs met it.
  virtual std::vector<std::string> skipped_files() const { return {}; }

 protected:
  DataInfo info_;
};

}  // namespace frugal::train
