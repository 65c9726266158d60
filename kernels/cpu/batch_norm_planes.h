// Batch norm's loops over one contiguous plane (statistics, affine, gradient sums, input
// gradient), in registers on AVX-512; kernels/cpu/batch_norm.cpp takes channels in blocks of them.
#pragma once

#include "kernels/cpu/isa_variant.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "common/half.h"
#include "kernels/cpu/accumulate.h"
#include "kernels/cpu/convert.h"

namespace frugal::kernels::cpu::FRUGAL_CPU_ISA::batch_norm_planes {

using detail::Moments;

// Runs of up to kRun elements are summed in float and the runs' sums added in double: no
// float sum holds more than kRun terms.
constexpr std::int64_t kRun = 1024;

// A channel's work is five loops over contiguous planes (plane_*). With AVX-512 they run 16
// lanes at a time in registers, 16-bit data widened and rounded there (kernels/cpu/convert.h),
// the last step masked: float, bfloat16 and float16 take the same instructions, so 16-bit
// results are the float kernel's on the widened data, rounded once. (Widening into a float
// buffer first made the 49- and 196-value planes of 7x7 and 14x14 layers wait on every tail:
// a masked store does not forward to the loads that read it back.) Otherwise 16-bit data is
// converted in runs through float buffers and the loops are the compiler's.
#if FRUGAL_CONVERT_AVX512
template <class T>
constexpr bool kVectorPlanes = std::is_same_v<T, float> || is_16bit_float_v<T>;
using convert_detail::narrow16;
using convert_detail::tail_mask;
using convert_detail::widen16;
#else
template <class T>
constexpr bool kVectorPlanes = false;
#endif

template <class T>
const compute_t<T>* load_run(const T* x, std::int64_t len, compute_t<T>* buffer) {
  if constexpr (std::is_same_v<T, compute_t<T>>) {
    return x;
  } else {
    to_float(x, buffer, len);
    return buffer;
  }
}
// Where a run's results go before store_run: the output itself, or the buffer.
template <class T>
compute_t<T>* run_target(T* out, compute_t<T>* buffer) {
  if constexpr (std::is_same_v<T, compute_t<T>>) {
    return out;
  } else {
    return buffer;
  }
}
template <class T>
void store_run(const compute_t<T>* values, T* out, std::int64_t len) {
  if constexpr (!std::is_same_v<T, compute_t<T>>) from_float(values, out, len);
}

// sum(x) and sum((x - m)^2) of one plane: sum of squared deviations when `deviations`.
template <class T, bool deviations>
double plane_sum(const T* x, std::int64_t n, compute_t<T> m = 0) {
  using C = compute_t<T>;
  double sum = 0;
  for (std::int64_t r0 = 0; r0 < n; r0 += kRun) {
    const std::int64_t len = std::min(n - r0, kRun);
#if FRUGAL_CONVERT_AVX512
    if constexpr (kVectorPlanes<T>) {
      const __m512 vm = _mm512_set1_ps(m);
      __m512 run = _mm512_setzero_ps();
      for (std::int64_t e = 0; e < len; e += 16) {
        const __mmask16 k = tail_mask(len - e);
        const __m512 v = widen16(x + r0 + e, k);
        if constexpr (deviations) {
          const __m512 d = _mm512_maskz_sub_ps(k, v, vm);
          run = _mm512_fmadd_ps(d, d, run);
        } else {
          run = _mm512_add_ps(run, v);
        }
      }
      sum += static_cast<double>(_mm512_reduce_add_ps(run));
      continue;
    }
#endif
    alignas(64) C buffer[kRun];
    const C* xr = load_run(x + r0, len, buffer);
    C run = 0;
    if constexpr (deviations) {
#pragma omp simd reduction(+ : run)
      for (std::int64_t e = 0; e < len; ++e) run += (xr[e] - m) * (xr[e] - m);
    } else {
#pragma omp simd reduction(+ : run)
      for (std::int64_t e = 0; e < len; ++e) run += xr[e];
    }
    sum += static_cast<double>(run);
  }
  return sum;
}

// out = max(floor, in * k + b) over one plane (NaN stays NaN).
template <class T>
void plane_affine(const T* in, T* out, std::int64_t n, compute_t<T> k, compute_t<T> b,
                  compute_t<T> floor) {
  using C = compute_t<T>;
#if FRUGAL_CONVERT_AVX512
  if constexpr (kVectorPlanes<T>) {
    const __m512 vk = _mm512_set1_ps(k), vb = _mm512_set1_ps(b), vf = _mm512_set1_ps(floor);
    for (std::int64_t e = 0; e < n; e += 16) {
      const __mmask16 m = tail_mask(n - e);
      // max takes its second operand when either is NaN: a NaN sum is kept.
      narrow16(_mm512_max_ps(vf, _mm512_fmadd_ps(widen16(in + e, m), vk, vb)), out + e, m);
    }
    return;
  }
#endif
  alignas(64) C in_buffer[kRun], out_buffer[kRun];
  for (std::int64_t r0 = 0; r0 < n; r0 += kRun) {
    const std::int64_t len = std::min(n - r0, kRun);
    const C* ar = load_run(in + r0, len, in_buffer);
    C* orun = run_target(out + r0, out_buffer);
    for (std::int64_t e = 0; e < len; ++e) {
      const C v = ar[e] * k + b;
      orun[e] = v < floor ? floor : v;
    }
    store_run(orun, out + r0, len);
  }
}

// *sum_g += sum(g), *sum_gx += sum(g * (x - m)) over one plane.
template <class T>
void plane_grad_sums(const T* g, const T* x, std::int64_t n, compute_t<T> m, double* sum_g,
                     double* sum_gx) {
  using C = compute_t<T>;
  for (std::int64_t r0 = 0; r0 < n; r0 += kRun) {
    const std::int64_t len = std::min(n - r0, kRun);
#if FRUGAL_CONVERT_AVX512
    if constexpr (kVectorPlanes<T>) {
      const __m512 vm = _mm512_set1_ps(m);
      __m512 sg = _mm512_setzero_ps(), sgx = _mm512_setzero_ps();
      for (std::int64_t e = 0; e < len; e += 16) {
        const __mmask16 k = tail_mask(len - e);
        const __m512 gv = widen16(g + r0 + e, k);
        sg = _mm512_add_ps(sg, gv);
        sgx = _mm512_fmadd_ps(gv, _mm512_maskz_sub_ps(k, widen16(x + r0 + e, k), vm), sgx);
      }
      *sum_g += static_cast<double>(_mm512_reduce_add_ps(sg));
      *sum_gx += static_cast<double>(_mm512_reduce_add_ps(sgx));
      continue;
    }
#endif
    alignas(64) C g_buffer[kRun], x_buffer[kRun];
    const C* gr = load_run(g + r0, len, g_buffer);
    const C* xr = load_run(x + r0, len, x_buffer);
    C sg = 0, sgx = 0;
#pragma omp simd reduction(+ : sg, sgx)
    for (std::int64_t e = 0; e < len; ++e) {
      sg += gr[e];
      sgx += gr[e] * (xr[e] - m);
    }
    *sum_g += static_cast<double>(sg);
    *sum_gx += static_cast<double>(sgx);
  }
}

// gx = g * k + x * q + r over one plane.
template <class T>
void plane_grad_input(const T* g, const T* x, T* gx, std::int64_t n, compute_t<T> k, compute_t<T> q,
                      compute_t<T> r) {
  using C = compute_t<T>;
#if FRUGAL_CONVERT_AVX512
  if constexpr (kVectorPlanes<T>) {
    const __m512 vk = _mm512_set1_ps(k), vq = _mm512_set1_ps(q), vr = _mm512_set1_ps(r);
    for (std::int64_t e = 0; e < n; e += 16) {
      const __mmask16 m = tail_mask(n - e);
      const __m512 xq_r = _mm512_fmadd_ps(widen16(x + e, m), vq, vr);
      narrow16(_mm512_fmadd_ps(widen16(g + e, m), vk, xq_r), gx + e, m);
    }
    return;
  }
#endif
  alignas(64) C g_buffer[kRun], x_buffer[kRun], out_buffer[kRun];
  for (std::int64_t r0 = 0; r0 < n; r0 += kRun) {
    const std::int64_t len = std::min(n - r0, kRun);
    const C* gr = load_run(g + r0, len, g_buffer);
    const C* xr = load_run(x + r0, len, x_buffer);
    C* orun = run_target(gx + r0, out_buffer);
    for (std::int64_t e = 0; e < len; ++e) orun[e] = gr[e] * k + xr[e] * q + r;
    store_run(orun, gx + r0, len);
  }
}

// Two-pass moments of one contiguous plane, read from cache the second time.
template <class T>
Moments plane_moments(const T* x, std::int64_t n) {
  using C = compute_t<T>;
  const double mean = plane_sum<T, false>(x, n) / static_cast<double>(n);
  const C m = static_cast<C>(mean);
  double m2 = plane_sum<T, true>(x, n, m);
  // The deviations were taken from the rounded mean: correct m2 to the exact one.
  const double shift = mean - static_cast<double>(m);
  m2 -= static_cast<double>(n) * shift * shift;
  return Moments{static_cast<double>(n), mean, std::max(0.0, m2)};
}

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA::batch_norm_planes
