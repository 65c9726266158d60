// Channel planes rewritten position-major and back, the layout of the shifted path's
// weight-gradient kernel (flat_correlate_weight_grad) and of the channel-blocked depthwise
// path (conv_depthwise_blocked.cpp): 16 channels of one position are one aligned vector.
// On AVX-512 the rewrite moves 16 x 16 blocks through registers with a transpose; the
// element-by-element loop it replaces, one strided store per element, took 15% of the
// weight gradient's time on the cnn.
#pragma once

#include "kernels/cpu/isa_variant.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/cpu/convert.h"

namespace frugal::kernels::cpu::FRUGAL_CPU_ISA {

#if FRUGAL_CONVERT_AVX512
namespace position_major_detail {

// r[i][j] becomes r[j][i]: element pairs, then quadruples within each 128-bit lane, then the
// lanes themselves.
inline void transpose16x16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 16; i += 8)
    for (int k = 0; k < 4; ++k) {
      t[i + k] = _mm512_shuffle_f32x4(r[i + k], r[i + k + 4], 0x88);
      t[i + k + 4] = _mm512_shuffle_f32x4(r[i + k], r[i + k + 4], 0xDD);
    }
  for (int k = 0; k < 8; ++k) {
    r[k] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0x88);
    r[k + 8] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0xDD);
  }
}

// A weight-gradient kernel's accumulators for output channels o0.. o0 + Rows - 1, each tap t,
// with input channels c0.. c0 + 15 in the lanes, added into dw laid out [O][C][Taps]; lanes
// past the last channel C - 1 are left out.
template <int Rows, int Taps>
inline void add_weight_grad_block(const __m512 (&acc)[Rows][Taps], std::int64_t o0, std::int64_t c0,
                                  std::int64_t C, float* dw) {
  const std::int64_t lanes = std::min<std::int64_t>(16, C - c0);
  alignas(64) float out[16];
  for (int r = 0; r < Rows; ++r)
    for (int t = 0; t < Taps; ++t) {
      _mm512_store_ps(out, acc[r][t]);
      for (std::int64_t j = 0; j < lanes; ++j) dw[((o0 + r) * C + c0 + j) * Taps + t] += out[j];
    }
}

}  // namespace position_major_detail
#endif

// out[(h * row_pitch + w) * channel_stride + c] = in[(c * H + h) * W + w] for the C x H x W
// input; channel_stride is a multiple of 16 at least C, and the channels from C up to the
// next multiple of 16 are written as zeros. Nothing else in out is touched.
template <class T>
void to_position_major(const T* in, std::int64_t C, std::int64_t H, std::int64_t W, float* out,
                       std::int64_t row_pitch, std::int64_t channel_stride) {
#if FRUGAL_CONVERT_AVX512
  using convert_detail::widen16;
  for (std::int64_t h = 0; h < H; ++h)
    for (std::int64_t c0 = 0; c0 < C; c0 += 16)
      for (std::int64_t w0 = 0; w0 < W; w0 += 16) {
        const __mmask16 m = convert_detail::tail_mask(W - w0);
        __m512 r[16];
        for (std::int64_t i = 0; i < 16; ++i)
          r[i] = c0 + i < C ? widen16(in + ((c0 + i) * H + h) * W + w0, m) : _mm512_setzero_ps();
        position_major_detail::transpose16x16(r);
        float* dst = out + (h * row_pitch + w0) * channel_stride + c0;
        for (std::int64_t j = 0; j < 16 && w0 + j < W; ++j)
          _mm512_storeu_ps(dst + j * channel_stride, r[j]);
      }
#else
  for (std::int64_t h = 0; h < H; ++h)
    for (std::int64_t c = 0; c < (C + 15) / 16 * 16; ++c) {
      float* dst = out + h * row_pitch * channel_stride + c;
      if (c >= C) {
        for (std::int64_t w = 0; w < W; ++w) dst[w * channel_stride] = 0.0f;
        continue;
      }
      const T* src = in + (c * H + h) * W;
      for (std::int64_t w = 0; w < W; ++w) dst[w * channel_stride] = static_cast<float>(src[w]);
    }
#endif
}

// The inverse: out[c * plane_stride + q] = T(in[q * channel_stride + c]) for c < C and
// q < positions (rounded to nearest even for 16-bit T).
template <class T>
void from_position_major(const float* in, std::int64_t C, std::int64_t positions,
                         std::int64_t channel_stride, T* out, std::int64_t plane_stride) {
#if FRUGAL_CONVERT_AVX512
  for (std::int64_t c0 = 0; c0 < C; c0 += 16)
    for (std::int64_t q0 = 0; q0 < positions; q0 += 16) {
      const __mmask16 m = convert_detail::tail_mask(positions - q0);
      __m512 r[16];
      for (std::int64_t j = 0; j < 16; ++j)
        r[j] = q0 + j < positions ? _mm512_loadu_ps(in + (q0 + j) * channel_stride + c0)
                                  : _mm512_setzero_ps();
      position_major_detail::transpose16x16(r);
      for (std::int64_t i = 0; i < 16 && c0 + i < C; ++i) {
        T* dst = out + (c0 + i) * plane_stride + q0;
        if constexpr (std::is_same_v<T, float>) {
          _mm512_mask_storeu_ps(dst, m, r[i]);
        } else {
          convert_detail::narrow16(r[i], dst, m);
        }
      }
    }
#else
  for (std::int64_t c = 0; c < C; ++c)
    for (std::int64_t q = 0; q < positions; ++q)
      out[c * plane_stride + q] = static_cast<T>(in[q * channel_stride + c]);
#endif
}

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA
