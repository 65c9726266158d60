// How the CUDA engine-level tests compare a tensor computed on the GPU with the same computation
// on the CPU: bit for bit, elementwise relative error, or error relative to the largest value
// (for 16-bit results, whose rounding is relative to the tensor's scale, not each element's).
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/frugal.h"

namespace frugal::test {

inline const Device kGpu(kCUDA, 0);

// Both on the CPU as a contiguous float64 tensor (no history).
inline Tensor host_f64(const Tensor& t) { return t.detach().cpu().to(kFloat64).contiguous(); }

// Same sizes, same dtype and the same bytes (NaN payloads included), wherever each lives.
inline bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  const Tensor x = a.detach().cpu().contiguous(), y = b.detach().cpu().contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

// max |a - b| / (1 + |b|) over all elements; NaN where exactly one side is NaN, 0 where both are.
inline double max_relative_difference(const Tensor& a, const Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  const Tensor x = host_f64(a), y = host_f64(b);
  const double* xp = x.data_ptr<double>();
  const double* yp = y.data_ptr<double>();
  double worst = 0;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    if (std::isnan(xp[i]) || std::isnan(yp[i])) {
      if (std::isnan(xp[i]) != std::isnan(yp[i])) return std::nan("");
      continue;
    }
    if (xp[i] == yp[i]) continue;  // equal infinities too
    worst = std::max(worst, std::abs(xp[i] - yp[i]) / (1 + std::abs(yp[i])));
  }
  return worst;
}

// max |a - b| / max |b|: the error measured against the tensor's scale, as a 16-bit GEMM or
// convolution's rounding is (its inputs round relative to their own size, and a sum of many
// products can cancel to near zero without its absolute error shrinking).
inline double max_scaled_difference(const Tensor& a, const Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  const Tensor x = host_f64(a), y = host_f64(b);
  const double* xp = x.data_ptr<double>();
  const double* yp = y.data_ptr<double>();
  double worst = 0, scale = 0;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    if (std::isnan(xp[i]) || std::isnan(yp[i])) return std::nan("");  // none expected here
    worst = std::max(worst, std::abs(xp[i] - yp[i]));
    scale = std::max(scale, std::abs(yp[i]));
  }
  return scale == 0 ? worst : worst / scale;
}

}  // namespace frugal::test
