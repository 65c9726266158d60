// The CUDA random fills: the same function of (seed, offset, i) as kernels/cpu/random.h, on
// device pointers, so uniform and bernoulli are bit-identical to the CPU's.
#pragma once

#include <cstdint>

#include "kernels/cpu/random.h"

namespace frugal::kernels::cuda {

using cpu::random_blocks;

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

}  // namespace frugal::kernels::cuda
