// Philox4x32-10, the counter-based generator PyTorch uses on GPUs: each 128-bit counter
// value maps to four random words, independently of any other. Element i of a random tensor
// depends only on (seed, offset, i), so results do not change with the thread count, and a
// CUDA kernel computing the same function reproduces the CPU's numbers.
#pragma once

#include <cstdint>

#include "common/host_device.h"

namespace frugal::kernels::cpu {

struct Philox4x32 {
  std::uint32_t word[4];
};

FRUGAL_HOST_DEVICE inline Philox4x32 philox(std::uint64_t seed, std::uint64_t counter) {
  std::uint32_t c0 = static_cast<std::uint32_t>(counter),
                c1 = static_cast<std::uint32_t>(counter >> 32);
  std::uint32_t c2 = 0, c3 = 0;
  std::uint32_t k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = std::uint64_t{0xD2511F53u} * c0;
    const std::uint64_t p1 = std::uint64_t{0xCD9E8D57u} * c2;
    const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<std::uint32_t>(p1);
    c3 = static_cast<std::uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

// A double in [0, 1) from 53 random bits.
FRUGAL_HOST_DEVICE inline double uniform53(std::uint32_t hi, std::uint32_t lo) {
  const std::uint64_t bits = ((std::uint64_t{hi} << 32) | lo) >> 11;
  return static_cast<double>(bits) * (1.0 / 9007199254740992.0);
}

}  // namespace frugal::kernels::cpu
