// The row pieces softmax, log-softmax and the fused cross-entropy share: a row's max and
// sum(exp(x - shift)), with Eigen's vectorised exp on float and double.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "common/half.h"
#include "kernels/cpu/accumulate.h"

namespace frugal::kernels::cpu::detail {

template <class T>
inline constexpr bool kEigenType = std::is_same_v<T, float> || std::is_same_v<T, double>;

// exp is computed on chunks of this many elements held on the stack, so that a row is read
// once, in-place calls work, and the sum of exps can be taken in double.
inline constexpr int kExpChunk = 256;

// The largest value of a row, ignoring NaN (which then reaches every output through exp).
template <class T>
compute_t<T> row_max(const T* x, std::int64_t n) {
  bool saw_nan;
  return extreme_run<T, true>(x, n, extreme_init<compute_t<T>, true>(), &saw_nan);
}

// buf[k] = exp(x[k] - shift[k or 0]) for k < n <= kExpChunk; `shift` has one value per
// element when kPerLane.
template <class T, bool kPerLane>
void exp_chunk(const T* x, const compute_t<T>* shift, int n, compute_t<T>* buf) {
  using C = compute_t<T>;
  if constexpr (kEigenType<T>) {
    using Array = Eigen::Array<C, Eigen::Dynamic, 1>;
    Eigen::Map<Array> out(buf, n);
    Eigen::Map<const Array> in(x, n);
    // exp(-inf) must be exactly 0 (a masked-out logit weighs nothing), but Eigen's SSE exp,
    // which the portable baseline build runs, returns a tiny positive number for it.
    const C minus_inf = -std::numeric_limits<C>::infinity();
    if constexpr (kPerLane) {
      const auto arg = in - Eigen::Map<const Array>(shift, n);
      out = (arg == minus_inf).select(C(0), arg.exp());
    } else {
      const auto arg = in - shift[0];
      out = (arg == minus_inf).select(C(0), arg.exp());
    }
  } else {
    for (int k = 0; k < n; ++k) buf[k] = std::exp(static_cast<C>(x[k]) - shift[kPerLane ? k : 0]);
  }
}

// sum(exp(x[i] - shift)) over a contiguous row, also stored to y when y is not null.
template <class T>
double exp_sum(const T* x, std::int64_t n, compute_t<T> shift, T* y) {
  compute_t<T> buf[kExpChunk];
  double s = 0;
  for (std::int64_t i = 0; i < n; i += kExpChunk) {
    const int m = static_cast<int>(std::min<std::int64_t>(kExpChunk, n - i));
    exp_chunk<T, false>(x + i, &shift, m, buf);
    s += sum_run(buf, m, 1);
    if (y)
      for (int k = 0; k < m; ++k) y[i + k] = static_cast<T>(buf[k]);
  }
  return s;
}

}  // namespace frugal::kernels::cpu::detail
