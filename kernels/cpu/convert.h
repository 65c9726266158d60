// Bulk conversions between float and the element types, for the loops that widen 16-bit data
// into a float workspace and round results back: 16 elements per step on AVX-512 (F16C's
// vcvtph2ps / vcvtps2ph for float16, a shift and integer round-to-nearest-even for bfloat16),
// with exactly the results of the scalar conversions in common/half.h, subnormals and NaN
// included (AVX512_BF16's vcvtneps2bf16 would flush subnormals, so it is not used).
#pragma once

#include "kernels/cpu/isa_variant.h"

#include <cstdint>
#include <type_traits>

#include "common/half.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#include <immintrin.h>
#define FRUGAL_CONVERT_AVX512 1
#endif

namespace frugal::kernels::cpu::FRUGAL_CPU_ISA {

#if FRUGAL_CONVERT_AVX512
namespace convert_detail {

inline __mmask16 tail_mask(std::int64_t left) {
  return left >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
}

inline __m512 widen16(const BFloat16* src, __mmask16 m) {
  const __m256i h = _mm256_maskz_loadu_epi16(m, src);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
inline __m512 widen16(const Half* src, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, src));
}
// The same for float (a masked load), so that loops over any element type read floats alike.
inline __m512 widen16(const float* src, __mmask16 m) { return _mm512_maskz_loadu_ps(m, src); }

inline void narrow16(__m512 f, BFloat16* dst, __mmask16 m) {
  // Round to nearest even on the bits: add 0x7fff plus the lowest kept bit, keep the top half.
  // NaN keeps its sign and payload and gets the quiet bit, as float_to_bfloat16_bits does.
  const __m512i x = _mm512_castps_si512(f);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(x, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
  const __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
  const __m512i bits =
      _mm512_mask_blend_epi32(nan, rounded, _mm512_or_si512(x, _mm512_set1_epi32(0x400000)));
  _mm256_mask_storeu_epi16(dst, m, _mm512_cvtepi32_epi16(_mm512_srli_epi32(bits, 16)));
}
// And float again (a masked store), so that loops over any element type write floats alike.
inline void narrow16(__m512 f, float* dst, __mmask16 m) { _mm512_mask_storeu_ps(dst, m, f); }
inline void narrow16(__m512 f, Half* dst, __mmask16 m) {
  _mm256_mask_storeu_epi16(dst, m,
                           _mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

}  // namespace convert_detail
#endif

// dst[i] = float(src[i]) for i < n.
template <class T>
inline void to_float(const T* src, float* dst, std::int64_t n) {
#if FRUGAL_CONVERT_AVX512
  if constexpr (is_16bit_float_v<T>) {
    for (std::int64_t i = 0; i < n; i += 16) {
      const __mmask16 m = convert_detail::tail_mask(n - i);
      _mm512_mask_storeu_ps(dst + i, m, convert_detail::widen16(src + i, m));
    }
    return;
  }
#endif
  for (std::int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

// dst[i] = T(src[i] + add) for i < n, rounded to nearest even. With add == 0 nothing is added
// (-0 + 0 would turn a negative zero positive).
template <class T>
inline void from_float(const float* src, T* dst, std::int64_t n, float add = 0.0f) {
#if FRUGAL_CONVERT_AVX512
  if constexpr (is_16bit_float_v<T>) {
    const __m512 a = _mm512_set1_ps(add);
    for (std::int64_t i = 0; i < n; i += 16) {
      const __mmask16 m = convert_detail::tail_mask(n - i);
      const __m512 v = _mm512_maskz_loadu_ps(m, src + i);
      convert_detail::narrow16(add == 0.0f ? v : _mm512_add_ps(v, a), dst + i, m);
    }
    return;
  }
#endif
  if (add == 0.0f) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(src[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(src[i] + add);
  }
}

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA
