// Random fills, parallel over counter blocks (each block is independent).
#include "kernels/cpu/random.h"

#include <cmath>

#include "common/half.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/philox.h"
#include "kernels/instantiations.h"

namespace frugal::kernels::cpu {

namespace {
constexpr std::int64_t kBlockGrain = 8192;

// Calls fn(j, u0, u1): the two uniforms of counter block j.
template <class F>
void for_each_block(std::int64_t n, std::uint64_t seed, std::uint64_t offset, const F& fn) {
  const auto blocks = static_cast<std::int64_t>(random_blocks(n));
  parallel_for(0, blocks, kBlockGrain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t j = b; j < e; ++j) {
      const Philox4x32 r = philox(seed, offset + static_cast<std::uint64_t>(j));
      fn(j, uniform53(r.word[0], r.word[1]), uniform53(r.word[2], r.word[3]));
    }
  });
}
}  // namespace

template <class T>
T narrow(double v) {
  if constexpr (sizeof(T) == 8)
    return static_cast<T>(v);
  else
    return static_cast<T>(static_cast<float>(v));
}

// v in [lo, hi) as T; rounding to a narrower type may land on hi, which stays excluded.
template <class T>
T narrow_half_open(double v, double lo, double hi) {
  const T t = narrow<T>(v);
  return static_cast<double>(t) < hi ? t : narrow<T>(lo);
}

template <class T>
void uniform(T* out, std::int64_t n, std::uint64_t seed, std::uint64_t offset, double lo,
             double hi) {
  for_each_block(n, seed, offset, [&](std::int64_t j, double u0, double u1) {
    out[2 * j] = narrow_half_open<T>(lo + (hi - lo) * u0, lo, hi);
    if (2 * j + 1 < n) out[2 * j + 1] = narrow_half_open<T>(lo + (hi - lo) * u1, lo, hi);
  });
}

template <class T>
void normal(T* out, std::int64_t n, std::uint64_t seed, std::uint64_t offset, double mean,
            double std) {
  for_each_block(n, seed, offset, [&](std::int64_t j, double u0, double u1) {
    const double radius = std::sqrt(-2.0 * std::log1p(-u0));  // 1 - u0 is in (0, 1]
    const double angle = 2.0 * M_PI * u1;
    out[2 * j] = static_cast<T>(mean + std * radius * std::cos(angle));
    if (2 * j + 1 < n) out[2 * j + 1] = static_cast<T>(mean + std * radius * std::sin(angle));
  });
}

void bernoulli(std::uint8_t* mask, std::int64_t n, std::uint64_t seed, std::uint64_t offset,
               double keep) {
  for_each_block(n, seed, offset, [&](std::int64_t j, double u0, double u1) {
    mask[2 * j] = u0 < keep;
    if (2 * j + 1 < n) mask[2 * j + 1] = u1 < keep;
  });
}

FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_RANDOM)

}  // namespace frugal::kernels::cpu
