// Accurate sums that still vectorise, shared by the reduction, softmax, loss and
// normalisation kernels: sixteen independent double lanes folded together at the end.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "common/half.h"

namespace frugal::kernels::cpu::detail {

// Independent lanes are what lets the compiler put a sum into AVX registers without
// reassociating it (which it may not do without -ffast-math); double lanes keep a float sum
// of 1e7 terms exact to float precision at no cost on memory-bound loops.
inline constexpr int kLanes = 16;

inline double fold_lanes(const double* lanes) {
  double half[kLanes / 2];
  for (int k = 0; k < kLanes / 2; ++k) half[k] = lanes[k] + lanes[k + kLanes / 2];
  double s = 0;
  for (int k = 0; k < kLanes / 2; ++k) s += half[k];
  return s;
}

template <class T>
inline double to_double(T v) {
  return static_cast<double>(static_cast<compute_t<T>>(v));
}

template <class C>
inline bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    return v != v;
  } else {
    return false;
  }
}

// The start value of a max (kMax) or min reduction: the identity of the comparison.
template <class C, bool kMax>
constexpr C extreme_init() {
  if constexpr (std::is_floating_point_v<C>) {
    return kMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
  } else {
    return kMax ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
  }
}

// max (kMax) or min of `start` and the contiguous x[0, n), ignoring NaN; *saw_nan tells
// whether there was one. Written as an OpenMP simd reduction because a NaN-aware select in
// independent lanes is not vectorised by the compiler, while this form is.
template <class T, bool kMax>
compute_t<T> extreme_run(const T* x, std::int64_t n, compute_t<T> start, bool* saw_nan) {
  using C = compute_t<T>;
  C m = start;
  int nans = 0;
  if constexpr (std::is_same_v<C, bool>) {
    for (std::int64_t i = 0; i < n; ++i) m = kMax ? (m || x[i]) : (m && x[i]);
  } else if constexpr (kMax) {
#pragma omp simd reduction(max : m) reduction(+ : nans)
    for (std::int64_t i = 0; i < n; ++i) {
      const C v = static_cast<C>(x[i]);
      m = v > m ? v : m;
      nans += is_nan(v);
    }
  } else {
#pragma omp simd reduction(min : m) reduction(+ : nans)
    for (std::int64_t i = 0; i < n; ++i) {
      const C v = static_cast<C>(x[i]);
      m = v < m ? v : m;
      nans += is_nan(v);
    }
  }
  *saw_nan = nans != 0;
  return m;
}

// sum of x[i * stride] for i < n.
template <class T>
double sum_run(const T* x, std::int64_t n, std::int64_t stride) {
  double lanes[kLanes] = {};
  std::int64_t i = 0;
  if (stride == 1) {
    for (; i + kLanes <= n; i += kLanes)
      for (int k = 0; k < kLanes; ++k) lanes[k] += to_double(x[i + k]);
  }
  double tail = 0;
  for (; i < n; ++i) tail += to_double(x[i * stride]);
  return fold_lanes(lanes) + tail;
}

// sum of (x[i * stride] - center)^2 for i < n: the second pass of a two-pass variance.
template <class T>
double sum_sq_dev_run(const T* x, std::int64_t n, std::int64_t stride, double center) {
  double lanes[kLanes] = {};
  std::int64_t i = 0;
  if (stride == 1) {
    for (; i + kLanes <= n; i += kLanes)
      for (int k = 0; k < kLanes; ++k) {
        const double d = to_double(x[i + k]) - center;
        lanes[k] += d * d;
      }
  }
  double tail = 0;
  for (; i < n; ++i) {
    const double d = to_double(x[i * stride]) - center;
    tail += d * d;
  }
  return fold_lanes(lanes) + tail;
}

// sum of a[i] * b[i] over contiguous runs.
template <class T>
double dot_run(const T* a, const T* b, std::int64_t n) {
  double lanes[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) lanes[k] += to_double(a[i + k]) * to_double(b[i + k]);
  double tail = 0;
  for (; i < n; ++i) tail += to_double(a[i]) * to_double(b[i]);
  return fold_lanes(lanes) + tail;
}

// Merges the (count, mean, m2) of two disjoint sets of values (Chan et al.), so that
// variances computed two-pass over cache-sized pieces combine without losing accuracy.
struct Moments {
  double count = 0;
  double mean = 0;
  double m2 = 0;

  void merge(double n, double piece_mean, double piece_m2) {
    if (n == 0) return;
    const double total = count + n;
    const double delta = piece_mean - mean;
    mean += delta * (n / total);
    m2 += piece_m2 + delta * delta * (count * n / total);
    count = total;
  }
  void merge(const Moments& o) { merge(o.count, o.mean, o.m2); }
};

// Two-pass moments of one run: the run is read twice, but from cache when it fits there.
template <class T>
Moments run_moments(const T* x, std::int64_t n, std::int64_t stride) {
  Moments m;
  if (n <= 0) return m;
  m.count = static_cast<double>(n);
  m.mean = sum_run(x, n, stride) / m.count;
  m.m2 = sum_sq_dev_run(x, n, stride, m.mean);
  return m;
}

}  // namespace frugal::kernels::cpu::detail
