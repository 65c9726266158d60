// The data pipeline's randomness: a per-sample generator seeded from (seed, epoch, index), so
// that shuffles and augmentations come out the same whatever the number of worker threads,
// and a bias-free bounded draw whose result does not depend on the standard library.
#pragma once

#include <cstdint>

namespace frugal::data {

// splitmix64's finaliser: spreads nearby inputs into unrelated 64-bit values.
inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The augmentation seed of sample `index` in `epoch` of a loader seeded with `seed`.
inline std::uint64_t sample_seed(std::uint64_t seed, std::int64_t epoch, std::int64_t index) {
  return mix64(mix64(seed ^ mix64(static_cast<std::uint64_t>(epoch))) +
               static_cast<std::uint64_t>(index));
}

// A small generator (splitmix64) for the few draws one sample's augmentation needs.
class SampleRandom {
 public:
  explicit SampleRandom(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ull;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound), by rejection (no modulo bias).
  std::uint64_t below(std::uint64_t bound) {
    const std::uint64_t limit = ~std::uint64_t{0} - ~std::uint64_t{0} % bound;
    std::uint64_t x;
    do x = next();
    while (x >= limit);
    return x % bound;
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  std::uint64_t state_;
};

}  // namespace frugal::data
