// The CUDA random fills: one thread per Philox counter block, mapping its words to values
// exactly as kernels/cpu/random.cpp does, so results depend only on (seed, offset, i).
#include "kernels/cuda/random.h"

#include "kernels/cpu/philox.h"
#include "kernels/cuda/common.cuh"
#include "kernels/instantiations.h"

namespace frugal::kernels::cuda {

namespace {

constexpr double kPi = 3.14159265358979323846;  // M_PI, as the CPU uses

// v rounded to T (through float for the narrower types, as the CPU's narrow<T>).
template <class T>
__device__ __forceinline__ void store_narrow(T* out, double v) {
  if constexpr (sizeof(T) == 8)
    *out = static_cast<T>(v);
  else
    store(out, static_cast<float>(v));
}

// v in [lo, hi) as T; rounding to a narrower type may land on hi, which stays excluded.
template <class T>
__device__ __forceinline__ void store_half_open(T* out, double v, double lo, double hi) {
  store_narrow(out, v);
  if (!(static_cast<double>(load(out)) < hi)) store_narrow(out, lo);
}

template <class T>
__global__ void uniform_kernel(T* out, std::int64_t n, std::int64_t blocks, std::uint64_t seed,
                               std::uint64_t offset, double lo, double hi) {
  FRUGAL_CUDA_KERNEL_LOOP(j, blocks) {
    const cpu::Philox4x32 r = cpu::philox(seed, offset + static_cast<std::uint64_t>(j));
    const double u0 = cpu::uniform53(r.word[0], r.word[1]),
                 u1 = cpu::uniform53(r.word[2], r.word[3]);
    store_half_open(out + 2 * j, lo + (hi - lo) * u0, lo, hi);
    if (2 * j + 1 < n) store_half_open(out + 2 * j + 1, lo + (hi - lo) * u1, lo, hi);
  }
}

template <class T>
__global__ void normal_kernel(T* out, std::int64_t n, std::int64_t blocks, std::uint64_t seed,
                              std::uint64_t offset, double mean, double std) {
  FRUGAL_CUDA_KERNEL_LOOP(j, blocks) {
    const cpu::Philox4x32 r = cpu::philox(seed, offset + static_cast<std::uint64_t>(j));
    const double u0 = cpu::uniform53(r.word[0], r.word[1]),
                 u1 = cpu::uniform53(r.word[2], r.word[3]);
    const double radius = sqrt(-2.0 * log1p(-u0));  // 1 - u0 is in (0, 1]
    double s, c;
    sincos(2.0 * kPi * u1, &s, &c);
    // static_cast<T>(double) on the CPU: one rounding for float/double, via float for 16-bit.
    if constexpr (sizeof(T) == 2) {
      store(out + 2 * j, static_cast<float>(mean + std * radius * c));
      if (2 * j + 1 < n) store(out + 2 * j + 1, static_cast<float>(mean + std * radius * s));
    } else {
      out[2 * j] = static_cast<T>(mean + std * radius * c);
      if (2 * j + 1 < n) out[2 * j + 1] = static_cast<T>(mean + std * radius * s);
    }
  }
}

__global__ void bernoulli_kernel(std::uint8_t* mask, std::int64_t n, std::int64_t blocks,
                                 std::uint64_t seed, std::uint64_t offset, double keep) {
  FRUGAL_CUDA_KERNEL_LOOP(j, blocks) {
    const cpu::Philox4x32 r = cpu::philox(seed, offset + static_cast<std::uint64_t>(j));
    mask[2 * j] = cpu::uniform53(r.word[0], r.word[1]) < keep;
    if (2 * j + 1 < n) mask[2 * j + 1] = cpu::uniform53(r.word[2], r.word[3]) < keep;
  }
}

}  // namespace

template <class T>
void uniform(T* out, std::int64_t n, std::uint64_t seed, std::uint64_t offset, double lo,
             double hi) {
  if (n <= 0) return;
  const auto blocks = static_cast<std::int64_t>(random_blocks(n));
  uniform_kernel<T>
      <<<blocks_for(blocks), kBlockSize, 0, stream()>>>(out, n, blocks, seed, offset, lo, hi);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

template <class T>
void normal(T* out, std::int64_t n, std::uint64_t seed, std::uint64_t offset, double mean,
            double std) {
  if (n <= 0) return;
  const auto blocks = static_cast<std::int64_t>(random_blocks(n));
  normal_kernel<T>
      <<<blocks_for(blocks), kBlockSize, 0, stream()>>>(out, n, blocks, seed, offset, mean, std);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

void bernoulli(std::uint8_t* mask, std::int64_t n, std::uint64_t seed, std::uint64_t offset,
               double keep) {
  if (n <= 0) return;
  const auto blocks = static_cast<std::int64_t>(random_blocks(n));
  bernoulli_kernel<<<blocks_for(blocks), kBlockSize, 0, stream()>>>(mask, n, blocks, seed, offset,
                                                                    keep);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_RANDOM)

}  // namespace frugal::kernels::cuda
