// data::Dataset: a source of samples that writes sample i straight into the slots of the batch
// being built (no per-sample tensor, no copy through a queue), plus the SampleError a loader
// raises when one sample cannot be made, naming its index and its file.
#pragma once

#include <cstdint>
#include <string>

#include "common/error.h"
#include "engine/dtype.h"
#include "engine/shape.h"

namespace frugal::data {

// The shape and dtype of one sample's data and target; a batch is [B, ...sizes].
struct SampleSpec {
  DimVector data_sizes;
  ScalarType data_dtype = ScalarType::Float32;
  DimVector target_sizes;  // {} for a class index
  ScalarType target_dtype = ScalarType::Int64;
};

// Where sample i goes: its rows in the batch buffers, and the seed of its random augmentation.
// The seed is a function of (loader seed, epoch, sample index) only, so a sample is augmented
// identically whichever worker thread makes it.
struct SampleSlot {
  void* data = nullptr;    // data_sizes elements of data_dtype
  void* target = nullptr;  // target_sizes elements of target_dtype
  std::uint64_t seed = 0;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::int64_t size() const = 0;
  virtual SampleSpec spec() const = 0;
  // Writes sample `index` into `slot`. Called from several threads at once, so it must not
  // change shared state. Throws frugal::Error (naming the file) for a sample it cannot make.
  virtual void get(std::int64_t index, const SampleSlot& slot) const = 0;
  // A hint that sample `index` will be asked for soon: a dataset reading memory-mapped
  // samples starts pulling them into the cache, so a random order does not wait on memory.
  virtual void prefetch(std::int64_t index) const {}
  // Where sample `index` comes from (a file name, "shard.frs entry 17"), for error messages.
  virtual std::string source(std::int64_t index) const { return "sample " + std::to_string(index); }
};

// A sample that could not be made: what went wrong, with the sample's index and source.
class SampleError : public Error {
 public:
  SampleError(std::int64_t index, std::string source, const std::string& reason)
      : Error("sample " + std::to_string(index) +
              (reason.find(source) == std::string::npos ? " (" + source + "): " : ": ") + reason),
        index_(index),
        source_(std::move(source)),
        reason_(reason) {}
  std::int64_t index() const { return index_; }
  const std::string& source() const { return source_; }
  const std::string& reason() const { return reason_; }

 private:
  std::int64_t index_;
  std::string source_, reason_;
};

}  // namespace frugal::data
