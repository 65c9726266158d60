// What the CUDA kernel tests share: device buffers from frugal's CUDA caching allocator
// (so the tests exercise it too), copies to and from them, random inputs, and the check
// that a CUDA kernel's result matches its CPU reference within the element type's precision.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "allocator/caching_allocator.h"
#include "allocator/default_allocators.h"
#include "common/half.h"
#include "kernels/cuda/stream.h"

namespace frugal::test {

// n elements of T on the current CUDA device, freed with the buffer.
template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t n)
      : n_(n),
        allocation_(alloc::cuda_allocator(kernels::cuda::current_device())
                        .allocate(std::max<std::size_t>(n, 1) * sizeof(T),
                                  kernels::cuda::current_stream())) {}
  explicit DeviceBuffer(const std::vector<T>& values) : DeviceBuffer(values.size()) {
    upload(values);
  }
  ~DeviceBuffer() { alloc::cuda_allocator(kernels::cuda::current_device()).free(allocation_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const { return static_cast<T*>(allocation_.ptr); }
  std::size_t size() const { return n_; }

  void upload(const std::vector<T>& values) {
    REQUIRE(values.size() == n_);
    kernels::cuda::copy_bytes(get(), values.data(), n_ * sizeof(T),
                              kernels::cuda::CopyKind::HostToDevice,
                              kernels::cuda::current_stream(), false);
  }
  // Waits for the kernels queued on the current stream, then copies back.
  std::vector<T> download() const {
    std::vector<T> values(n_);
    kernels::cuda::copy_bytes(values.data(), get(), n_ * sizeof(T),
                              kernels::cuda::CopyKind::DeviceToHost,
                              kernels::cuda::current_stream(), false);
    return values;
  }

 private:
  std::size_t n_;
  alloc::Allocation allocation_;
};

// n values uniform in [lo, hi), reproducible from seed (integers: rounded down).
template <class T>
std::vector<T> random_values(std::size_t n, std::uint32_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<T> values(n);
  for (auto& v : values) {
    const double x = dist(rng);
    if constexpr (std::is_same_v<T, bool>) {
      v = x >= (lo + hi) / 2;
    } else if constexpr (std::is_integral_v<T>) {
      v = static_cast<T>(std::floor(x));
    } else {
      v = static_cast<T>(static_cast<float>(x));
    }
  }
  return values;
}

// The relative tolerance a T result is held to: a few units of T's rounding (float32
// rounds at 6e-8; float16 at 4.9e-4, bfloat16 at 3.9e-3), with room for sums taken in
// another order than the CPU reference's.
template <class T>
double tolerance() {
  if constexpr (std::is_same_v<T, double>)
    return 1e-12;
  else if constexpr (std::is_same_v<T, float>)
    return 1e-5;
  else if constexpr (std::is_same_v<T, Half>)
    return 2e-3;
  else if constexpr (std::is_same_v<T, BFloat16>)
    return 1.6e-2;
  else
    return 0;  // integers and bool: exact
}

inline const char* type_name(float) { return "float32"; }
inline const char* type_name(double) { return "float64"; }
inline const char* type_name(Half) { return "float16"; }
inline const char* type_name(BFloat16) { return "bfloat16"; }

// Every element of got within tolerance<T>() * scale of want: |got - want| <= tol * (1 +
// |want|) (relative, absolute near zero); NaN only where want is NaN. The first mismatch is
// reported with its index and both values.
template <class T>
void require_close(const std::vector<T>& got, const std::vector<T>& want, const std::string& what,
                   double scale = 1.0) {
  REQUIRE(got.size() == want.size());
  const double tol = tolerance<T>() * scale;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(
        static_cast<std::conditional_t<std::is_same_v<T, bool>, int, T>>(got[i]));
    const double w = static_cast<double>(
        static_cast<std::conditional_t<std::is_same_v<T, bool>, int, T>>(want[i]));
    const bool ok = std::isnan(w) ? std::isnan(g) : std::abs(g - w) <= tol * (1.0 + std::abs(w));
    if (!ok) {
      INFO(what << ": element " << i << " is " << g << ", the CPU reference " << w << " (tolerance "
                << tol << ")");
      REQUIRE(ok);
    }
  }
}

}  // namespace frugal::test
