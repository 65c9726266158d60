// Random fills from Philox: counter block offset + j gives elements 2j and 2j+1, so a fill
// of n elements consumes ceil(n / 2) counter values. Outputs are contiguous.
#pragma once

#include <cstdint>

namespace frugal::kernels::cpu {

inline std::uint64_t random_blocks(std::int64_t n) {
  return static_cast<std::uint64_t>((n + 1) / 2);
}

// Uniform in [lo, hi).
template <class T>
void uniform(T* out, std::int64_t n, std::uint64_t seed, std::uint64_t offset, double lo,
             double hi);
// Normal(mean, std) by the Box-Muller transform.
template <class T>
void normal(T* out, std::int64_t n, std::uint64_t seed, std::uint64_t offset, double mean,
            double std);
// mask[i] = 1 with probability keep, else 0 (dropout masks).
void bernoulli(std::uint8_t* mask, std::int64_t n, std::uint64_t seed, std::uint64_t offset,
               double keep);

}  // namespace frugal::kernels::cpu
