// Max pooling, forward and backward, one input plane per task: the 2x2 / stride 2 window on
// 16 outputs per AVX-512 step, compact uint8 window places, and PyTorch's tie and NaN rules.
#include "kernels/cpu/isa_variant.h"

#include "kernels/cpu/pool.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "common/error.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/parallel.h"
#include "kernels/instantiations.h"

namespace frugal::kernels::cpu::FRUGAL_CPU_ISA {

namespace {

#if FRUGAL_CONVERT_AVX512
// 16 elements of T as floats, and back (exact for a maximum: it was one of the inputs).
inline __m512 load16(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
inline __m512 load16(const BFloat16* p, __mmask16 m) { return convert_detail::widen16(p, m); }
inline __m512 load16(const Half* p, __mmask16 m) { return convert_detail::widen16(p, m); }
inline void store16(__m512 v, float* p, __mmask16 m) { _mm512_mask_storeu_ps(p, m, v); }
inline void store16(__m512 v, BFloat16* p, __mmask16 m) { convert_detail::narrow16(v, p, m); }
inline void store16(__m512 v, Half* p, __mmask16 m) { convert_detail::narrow16(v, p, m); }

// One output row of the 2x2 / stride 2 window, 16 outputs per step: two input rows of 32
// values are split into even and odd columns with one permute each, and the scan a, b, c, d
// of the scalar loop (a later value wins when larger, or NaN) is done with masks. `place`
// (may be null) gets each maximum's place in its window as one byte. T: float, or a 16-bit
// type compared as float.
template <class T>
void max_pool_2x2_row(const T* r0, const T* r1, std::int64_t OW, T* out, std::uint8_t* place) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  for (std::int64_t ow = 0; ow < OW; ow += 16) {
    const std::int64_t n = std::min<std::int64_t>(16, OW - ow);
    const auto m_out = static_cast<__mmask16>((1u << n) - 1);
    const auto m_lo = static_cast<__mmask16>(n >= 8 ? 0xFFFF : (1u << (2 * n)) - 1);
    const auto m_hi = static_cast<__mmask16>(n <= 8 ? 0 : (1u << (2 * (n - 8))) - 1);
    const T* p0 = r0 + 2 * ow;
    const T* p1 = r1 + 2 * ow;
    const __m512 lo0 = load16(p0, m_lo), hi0 = load16(p0 + 16, m_hi);
    const __m512 lo1 = load16(p1, m_lo), hi1 = load16(p1 + 16, m_hi);
    const __m512 a = _mm512_permutex2var_ps(lo0, even, hi0),
                 b = _mm512_permutex2var_ps(lo0, odd, hi0);
    const __m512 c = _mm512_permutex2var_ps(lo1, even, hi1),
                 d = _mm512_permutex2var_ps(lo1, odd, hi1);
    __m512 best = a;
    __m512i k = _mm512_setzero_si512();
    auto take = [&](__m512 v, int at) {
      const __mmask16 wins =
          _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      best = _mm512_mask_blend_ps(wins, best, v);
      k = _mm512_mask_blend_epi32(wins, k, _mm512_set1_epi32(at));
    };
    take(b, 1);
    take(c, 2);
    take(d, 3);
    store16(best, out + ow, m_out);
    if (place) _mm_mask_storeu_epi8(place + ow, m_out, _mm512_cvtepi32_epi8(k));
  }
}
#endif

// The forward, writing each maximum's position as an Index: the plane offset h * W + w
// (int64, PyTorch's format) or, compact, its place kh * kW + kw inside the window (uint8).
template <class T, class Index>
void max_pool2d_forward_impl(const Pool2dParams& p, const T* input, T* output, Index* indices) {
  using A = compute_t<T>;
  constexpr bool kCompact = std::is_same_v<Index, std::uint8_t>;
  validate_pool2d(p, false);
  // Locals, not p's fields: the index stores could otherwise alias them, forcing a reload of
  // every bound after every store.
  const std::int64_t OH = p.out_h(), OW = p.out_w(), H = p.H, W = p.W, HW = H * W;
  const std::int64_t kH = p.kH, kW = p.kW, sh = p.stride_h, sw = p.stride_w, ph = p.pad_h,
                     pw = p.pad_w, dh = p.dilation_h, dw = p.dilation_w;
  if (kH == 2 && kW == 2 && sh == 2 && sw == 2 && ph == 0 && pw == 0 && dh == 1 && dw == 1) {
    // The 2x2 / stride 2 window of most CNNs: fixed-size, branch-free, vectorisable.
    parallel_for(0, p.N * p.C, plane_grain(HW), [=](std::int64_t u0, std::int64_t u1) {
      for (std::int64_t u = u0; u < u1; ++u)
        for (std::int64_t oh = 0; oh < OH; ++oh) {
          const T* r0 = input + u * HW + 2 * oh * W;
          const T* r1 = r0 + W;
          T* out = output + (u * OH + oh) * OW;
          Index* idx = indices ? indices + (u * OH + oh) * OW : nullptr;
#if FRUGAL_CONVERT_AVX512
          if constexpr (std::is_same_v<A, float>) {
            if (kCompact || idx == nullptr) {
              std::uint8_t* place = nullptr;
              if constexpr (kCompact) place = idx;
              max_pool_2x2_row(r0, r1, OW, out, place);
              continue;
            }
          }
#endif
          const std::int64_t base = 2 * oh * W;
#pragma omp simd
          for (std::int64_t ow = 0; ow < OW; ++ow) {
            // Scan order a, b, c, d; a later value wins only when larger, or NaN (PyTorch).
            const A a = static_cast<A>(r0[2 * ow]), b = static_cast<A>(r0[2 * ow + 1]);
            const A c = static_cast<A>(r1[2 * ow]), d = static_cast<A>(r1[2 * ow + 1]);
            A best = a;
            int k = 0;  // place in the window
            const bool tb = b > best || b != b;
            best = tb ? b : best;
            k = tb ? 1 : k;
            const bool tc = c > best || c != c;
            best = tc ? c : best;
            k = tc ? 2 : k;
            const bool td = d > best || d != d;
            best = td ? d : best;
            k = td ? 3 : k;
            out[ow] = static_cast<T>(best);
            if (idx) {
              if constexpr (kCompact)
                idx[ow] = static_cast<Index>(k);
              else
                idx[ow] = base + 2 * ow + (k >> 1) * W + (k & 1);
            }
          }
        }
    });
    return;
  }
  parallel_for(0, p.N * p.C, plane_grain(HW), [=](std::int64_t u0, std::int64_t u1) {
    for (std::int64_t u = u0; u < u1; ++u) {
      const T* in = input + u * HW;
      T* out = output + u * OH * OW;
      Index* idx = indices ? indices + u * OH * OW : nullptr;
      for (std::int64_t oh = 0; oh < OH; ++oh) {
        const std::int64_t hs = oh * sh - ph;  // the window's first row, maybe in the padding
        std::int64_t h0 = hs;
        const std::int64_t h1 = std::min(h0 + (kH - 1) * dh + 1, H);
        while (h0 < 0) h0 += dh;
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          const std::int64_t ws = ow * sw - pw;
          std::int64_t w0 = ws;
          const std::int64_t w1 = std::min(w0 + (kW - 1) * dw + 1, W);
          while (w0 < 0) w0 += dw;
          std::int64_t best_h = h0, best_w = w0;
          A best = -std::numeric_limits<A>::infinity();
          for (std::int64_t h = h0; h < h1; h += dh) {
            for (std::int64_t w = w0; w < w1; w += dw) {
              const A v = static_cast<A>(in[h * W + w]);
              // Selects, not a branch: which element wins is data-dependent.
              const bool take = v > best || v != v;  // a NaN wins, as in PyTorch
              best = take ? v : best;
              best_h = take ? h : best_h;
              best_w = take ? w : best_w;
            }
          }
          out[oh * OW + ow] = static_cast<T>(best);
          if (idx) {
            if constexpr (kCompact)
              idx[oh * OW + ow] = static_cast<Index>((best_h - hs) / dh * kW + (best_w - ws) / dw);
            else
              idx[oh * OW + ow] = best_h * W + best_w;
          }
        }
      }
    }
  });
}

}  // namespace

template <class T>
void max_pool2d_forward(const Pool2dParams& p, const T* input, T* output, std::int64_t* indices) {
  max_pool2d_forward_impl(p, input, output, indices);
}

template <class T>
void max_pool2d_forward_compact(const Pool2dParams& p, const T* input, T* output,
                                std::uint8_t* window_index) {
  FRUGAL_CHECK_FORMAT(p.kH * p.kW <= 256,
                      "max_pool2d: a {}x{} window has more places than a one-byte index holds",
                      p.kH, p.kW);
  max_pool2d_forward_impl(p, input, output, window_index);
}

template <class T>
void max_pool2d_backward(const Pool2dParams& p, const T* grad_output, const std::int64_t* indices,
                         T* grad_input) {
  using A = compute_t<T>;
  validate_pool2d(p, false);
  const std::int64_t OHW = p.out_h() * p.out_w(), HW = p.H * p.W;
  // An exception cannot leave a parallel region: bad indices are skipped, then reported.
  std::atomic<bool> bad_index{false};
  parallel_for(0, p.N * p.C, plane_grain(HW), [&](std::int64_t u0, std::int64_t u1) {
    for (std::int64_t u = u0; u < u1; ++u) {
      T* gin = grad_input + u * HW;
      std::fill(gin, gin + HW, T(0));
      const T* gout = grad_output + u * OHW;
      const std::int64_t* idx = indices + u * OHW;
      for (std::int64_t i = 0; i < OHW; ++i) {
        const std::int64_t at = idx[i];
        if (at < 0 || at >= HW) [[unlikely]] {
          bad_index.store(true, std::memory_order_relaxed);
          continue;
        }
        gin[at] = static_cast<T>(static_cast<A>(gin[at]) + static_cast<A>(gout[i]));
      }
    }
  });
  FRUGAL_CHECK_FORMAT(!bad_index.load(),
                      "max_pool2d_backward: an index lies outside its input plane of {} elements",
                      HW);
}

template <class T>
void max_pool2d_backward_compact(const Pool2dParams& p, const T* grad_output,
                                 const std::uint8_t* window_index, T* grad_input) {
  using A = compute_t<T>;
  validate_pool2d(p, false);
  const std::int64_t OH = p.out_h(), OW = p.out_w(), H = p.H, W = p.W, HW = H * W;
  const std::int64_t kH = p.kH, kW = p.kW, sh = p.stride_h, sw = p.stride_w, ph = p.pad_h,
                     pw = p.pad_w, dh = p.dilation_h, dw = p.dilation_w;
  std::atomic<bool> bad_index{false};
  parallel_for(0, p.N * p.C, plane_grain(HW), [&](std::int64_t u0, std::int64_t u1) {
    for (std::int64_t u = u0; u < u1; ++u) {
      T* gin = grad_input + u * HW;
      std::fill(gin, gin + HW, T(0));
      const T* gout = grad_output + u * OH * OW;
      const std::uint8_t* idx = window_index + u * OH * OW;
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          const std::int64_t k = idx[oh * OW + ow];
          const std::int64_t h = oh * sh - ph + k / kW * dh, w = ow * sw - pw + k % kW * dw;
          if (k >= kH * kW || h < 0 || h >= H || w < 0 || w >= W) [[unlikely]] {
            bad_index.store(true, std::memory_order_relaxed);
            continue;
          }
          T& g = gin[h * W + w];
          g = static_cast<T>(static_cast<A>(g) + static_cast<A>(gout[oh * OW + ow]));
        }
    }
  });
  FRUGAL_CHECK(!bad_index.load(),
               "max_pool2d_backward: a window index points outside its window or the "
               "input plane");
}

FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_MAX_POOL)

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA
