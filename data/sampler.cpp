// Samplers: sequential, seeded random permutations per epoch, and the shard-local shuffle.
#include "data/sampler.h"

#include <numeric>
#include <random>

#include "common/error.h"
#include "data/sample_random.h"

namespace frugal::data {

namespace {

std::int64_t checked_size(std::int64_t size, const char* who) {
  FRUGAL_CHECK(size >= 0, std::string(who) + ": size must be >= 0, got " + std::to_string(size));
  return size;
}

std::uint64_t epoch_seed(std::uint64_t seed, std::int64_t epoch) {
  return mix64(seed ^ mix64(static_cast<std::uint64_t>(epoch)));
}

// A uniform integer in [0, bound) by rejection. std::uniform_int_distribution is not used
// because its algorithm is left to each standard library.
std::uint64_t below(std::mt19937_64& engine, std::uint64_t bound) {
  const std::uint64_t limit = ~std::uint64_t{0} - ~std::uint64_t{0} % bound;
  std::uint64_t x;
  do x = engine();
  while (x >= limit);
  return x % bound;
}

}  // namespace

// The same generator and draws as InMemoryLoader::set_epoch, so a DataLoader with a
// RandomSampler visits an in-memory data set in exactly the InMemoryLoader's order.
void shuffle_in_place(std::vector<std::int64_t>& values, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  for (std::size_t i = values.size(); i > 1; --i)
    std::swap(values[i - 1], values[below(engine, i)]);
}

SequentialSampler::SequentialSampler(std::int64_t size)
    : size_(checked_size(size, "SequentialSampler")) {}

std::vector<std::int64_t> SequentialSampler::order(std::int64_t) const {
  std::vector<std::int64_t> out(static_cast<std::size_t>(size_));
  std::iota(out.begin(), out.end(), std::int64_t{0});
  return out;
}

RandomSampler::RandomSampler(std::int64_t size, std::uint64_t seed)
    : size_(checked_size(size, "RandomSampler")), seed_(seed) {}

std::vector<std::int64_t> RandomSampler::order(std::int64_t epoch) const {
  std::vector<std::int64_t> out(static_cast<std::size_t>(size_));
  std::iota(out.begin(), out.end(), std::int64_t{0});
  shuffle_in_place(out, epoch_seed(seed_, epoch));
  return out;
}

ShardShuffleSampler::ShardShuffleSampler(std::vector<std::int64_t> group_sizes, std::uint64_t seed)
    : group_sizes_(std::move(group_sizes)), seed_(seed) {
  for (std::int64_t n : group_sizes_) size_ += checked_size(n, "ShardShuffleSampler");
}

std::vector<std::int64_t> ShardShuffleSampler::order(std::int64_t epoch) const {
  const std::uint64_t base = epoch_seed(seed_, epoch);
  std::vector<std::int64_t> starts(group_sizes_.size());
  std::exclusive_scan(group_sizes_.begin(), group_sizes_.end(), starts.begin(), std::int64_t{0});
  std::vector<std::int64_t> groups(group_sizes_.size());
  std::iota(groups.begin(), groups.end(), std::int64_t{0});
  shuffle_in_place(groups, base);
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(size_));
  std::vector<std::int64_t> within;
  for (std::int64_t g : groups) {
    within.resize(static_cast<std::size_t>(group_sizes_[g]));
    std::iota(within.begin(), within.end(), starts[g]);
    shuffle_in_place(within, mix64(base + 1 + static_cast<std::uint64_t>(g)));
    out.insert(out.end(), within.begin(), within.end());
  }
  return out;
}

}  // namespace frugal::data
