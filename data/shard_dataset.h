// ShardDataset: the samples of one or more memory-mapped shards as one Dataset. Raw samples
// are read in place from the mapping (the transforms read the mapped pixels directly, the
// batch slot is the only copy); encoded ones are decoded from the mapping like ImageFolder's
// files. group_sizes() feeds a ShardShuffleSampler for shard-local shuffling.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/shard.h"
#include "data/transforms.h"

namespace frugal::data {

struct ShardDatasetOptions {
  // Encoded shards: the channels to decode into (0: the first sample's). Raw shards keep theirs.
  int channels = 0;
  Compose transform = {};
};

class ShardDataset : public Dataset {
 public:
  // `paths`: shard files, or directories whose *.frs files (sorted by name) are all taken.
  // Every shard must have the same encoding, shape and classes; errors name the file.
  explicit ShardDataset(const std::vector<std::string>& paths, ShardDatasetOptions options = {});

  std::int64_t size() const override { return size_; }
  SampleSpec spec() const override { return spec_; }
  void get(std::int64_t index, const SampleSlot& slot) const override;
  std::string source(std::int64_t index) const override;
  void prefetch(std::int64_t index) const override;

  const std::vector<std::string>& classes() const { return classes_; }
  std::int64_t label(std::int64_t index) const;
  std::size_t num_shards() const { return shards_.size(); }
  // Samples per shard, in order: for ShardShuffleSampler.
  std::vector<std::int64_t> group_sizes() const;

 private:
  std::pair<const ShardFile*, std::uint64_t> locate(std::int64_t index) const;
  void decode_sample(const ShardFile& shard, std::uint64_t i, Image& out) const;

  ShardDatasetOptions options_;
  std::vector<std::unique_ptr<ShardFile>> shards_;
  std::vector<std::int64_t> starts_;  // the global index of each shard's first sample
  std::int64_t size_ = 0;
  std::vector<std::string> classes_;
  ImageShape shape_;  // after the transforms
  SampleSpec spec_;
};

// The shard files a path names: itself, or a directory's *.frs sorted by name.
std::vector<std::string> list_shards(const std::string& path);

}  // namespace frugal::data
