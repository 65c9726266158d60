// The in-memory loader: a reproducible per-epoch permutation and a row gather (one memcpy
// per sample) into fresh batch tensors.
#include "data/loader.h"

#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "common/error.h"
#include "engine/ops/factory.h"

namespace frugal::data {

namespace {

// splitmix64's finaliser: spreads (seed, epoch) so that nearby pairs give unrelated streams.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A uniform integer in [0, bound) by rejection. std::uniform_int_distribution is not used
// because its algorithm is left to each standard library, and the order must not change
// with the compiler.
std::uint64_t below(std::mt19937_64& engine, std::uint64_t bound) {
  const std::uint64_t limit =
      std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % bound;
  std::uint64_t x;
  do x = engine();
  while (x >= limit);
  return x % bound;
}

Tensor checked(Tensor t, const char* what) {
  FRUGAL_CHECK(t.defined(), std::string("InMemoryLoader: ") + what + " is an undefined tensor");
  FRUGAL_CHECK(t.is_cpu(), std::string("InMemoryLoader: ") + what +
                               " must be a CPU tensor, not on " + t.device().str());
  FRUGAL_CHECK(t.dim() >= 1, std::string("InMemoryLoader: ") + what +
                                 " needs a first dim for the samples, got a 0-dim tensor");
  return t.detach().contiguous();
}

Tensor gather_rows(const Tensor& source, const std::int64_t* rows, std::int64_t count) {
  DimVector sizes(source.sizes());
  sizes[0] = count;
  Tensor out = empty(sizes, source.dtype());
  const std::size_t row_bytes = source.size(0) == 0 ? 0 : source.nbytes() / source.size(0);
  if (row_bytes == 0) return out;
  const char* src = static_cast<const char*>(source.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  for (std::int64_t i = 0; i < count; ++i)
    std::memcpy(dst + i * row_bytes, src + rows[i] * row_bytes, row_bytes);
  return out;
}

}  // namespace

InMemoryLoader::InMemoryLoader(Tensor data, Tensor targets, DataLoaderOptions options)
    : data_(checked(std::move(data), "data")),
      targets_(checked(std::move(targets), "targets")),
      options_(options) {
  FRUGAL_CHECK(options_.batch_size > 0, "InMemoryLoader: batch_size must be positive, got " +
                                            std::to_string(options_.batch_size));
  FRUGAL_CHECK(data_.size(0) == targets_.size(0),
               "InMemoryLoader: data has " + std::to_string(data_.size(0)) + " samples " +
                   shape_string(data_.sizes()) + " but targets have " +
                   std::to_string(targets_.size(0)) + " " + shape_string(targets_.sizes()));
  set_epoch(0);
}

void InMemoryLoader::set_epoch(std::int64_t epoch) {
  epoch_ = epoch;
  order_.resize(static_cast<std::size_t>(size()));
  std::iota(order_.begin(), order_.end(), std::int64_t{0});
  if (!options_.shuffle) return;
  std::mt19937_64 engine(mix(options_.seed ^ mix(static_cast<std::uint64_t>(epoch))));
  for (std::size_t i = order_.size(); i > 1; --i)
    std::swap(order_[i - 1], order_[below(engine, i)]);
}

std::int64_t InMemoryLoader::num_batches() const {
  const std::int64_t b = options_.batch_size;
  return options_.drop_last ? size() / b : (size() + b - 1) / b;
}

Batch InMemoryLoader::batch(std::int64_t index) const {
  FRUGAL_CHECK(index >= 0 && index < num_batches(),
               "InMemoryLoader::batch: index " + std::to_string(index) + " out of range: epoch " +
                   std::to_string(epoch_) + " has " + std::to_string(num_batches()) + " batches");
  const std::int64_t start = index * options_.batch_size;
  const std::int64_t count = std::min(options_.batch_size, size() - start);
  const std::int64_t* rows = order_.data() + start;
  Tensor data = gather_rows(data_, rows, count);
  if (options_.transform) data = options_.transform(data);
  return {std::move(data), gather_rows(targets_, rows, count)};
}

}  // namespace frugal::data
