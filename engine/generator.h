// The random number generator behind rand, randn, dropout and initialisation: a seed and a
// Philox counter offset. Its state is two integers, so a checkpoint can save it and a
// resumed run draws exactly the numbers the uninterrupted run would have drawn.
#pragma once

#include <cstdint>

namespace frugal {

class Generator {
 public:
  explicit Generator(std::uint64_t seed = 67280421310721ull) : seed_(seed) {}
  void manual_seed(std::uint64_t seed) {
    seed_ = seed;
    offset_ = 0;
  }
  std::uint64_t seed() const { return seed_; }
  std::uint64_t offset() const { return offset_; }
  void set_state(std::uint64_t seed, std::uint64_t offset) {
    seed_ = seed;
    offset_ = offset;
  }
  // Claims `blocks` counter values; returns the first.
  std::uint64_t reserve(std::uint64_t blocks) {
    const std::uint64_t first = offset_;
    offset_ += blocks;
    return first;
  }

 private:
  std::uint64_t seed_;
  std::uint64_t offset_ = 0;
};

// The process-wide generator that ops use when none is passed (not thread-safe, as in
// PyTorch: seed and draw from one thread, or pass a Generator per thread).
Generator& default_generator();
// Seeds the default generator: `frugal::manual_seed(0)` makes a run reproducible.
void manual_seed(std::uint64_t seed);

}  // namespace frugal
