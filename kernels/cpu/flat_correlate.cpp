// The register-blocked AVX-512 flat correlation (see flat_correlate.h). The loops over a
// block's registers carry "#pragma GCC unroll": without it GCC keeps the accumulator arrays
// on the stack and stores them every step, which ran at 40% of the speed. For each block of
// 12 output channels and 32 positions: 24 accumulators; per (input channel, tap), two loads
// of the input at the tap's shift and 12 broadcast weights, 24 fused multiply-adds. The last
// block of positions is masked, so nothing past Q is read or written.
#include "kernels/cpu/isa_variant.h"

#include "kernels/cpu/flat_correlate.h"

#include <algorithm>
#include <utility>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace frugal::kernels::cpu::FRUGAL_CPU_ISA {

#if defined(__AVX512F__)

namespace {

constexpr int kRows = static_cast<int>(kFlatCorrelateRows);

// Rows is the number of output channels of this block that exist (the packed weights carry
// zeros for the others, which are computed but not stored).
template <int Rows>
void block(std::int64_t C, std::int64_t taps, const std::int64_t* offsets, const float* w,
           const float* in, std::int64_t in_stride, std::int64_t q0, __mmask16 m0, __mmask16 m1,
           float* out, std::int64_t out_stride) {
  __m512 acc0[Rows], acc1[Rows];
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r) acc0[r] = acc1[r] = _mm512_setzero_ps();
  for (std::int64_t c = 0; c < C; ++c) {
    const float* plane = in + c * in_stride + q0;
    for (std::int64_t t = 0; t < taps; ++t, w += kRows) {
      const float* src = plane + offsets[t];
      const __m512 x0 = _mm512_maskz_loadu_ps(m0, src);
      const __m512 x1 = _mm512_maskz_loadu_ps(m1, src + 16);
#pragma GCC unroll 16
      for (int r = 0; r < Rows; ++r) {
        const __m512 wr = _mm512_set1_ps(w[r]);
        acc0[r] = _mm512_fmadd_ps(wr, x0, acc0[r]);
        acc1[r] = _mm512_fmadd_ps(wr, x1, acc1[r]);
      }
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r) {
    _mm512_mask_storeu_ps(out + r * out_stride + q0, m0, acc0[r]);
    _mm512_mask_storeu_ps(out + r * out_stride + q0 + 16, m1, acc1[r]);
  }
}

using BlockFn = void (*)(std::int64_t, std::int64_t, const std::int64_t*, const float*,
                         const float*, std::int64_t, std::int64_t, __mmask16, __mmask16, float*,
                         std::int64_t);

template <int... R>
constexpr BlockFn pick(int rows, std::integer_sequence<int, R...>) {
  BlockFn fns[] = {&block<R + 1>...};
  return fns[rows - 1];
}

constexpr int kTaps = 9;

template <int Rows>
void weight_block(std::int64_t o0, std::int64_t c0, std::int64_t C, const std::int64_t* offsets,
                  const float* gout, std::int64_t gout_stride, std::int64_t gout_sample_stride,
                  const float* in_t, std::int64_t channel_stride, std::int64_t in_sample_stride,
                  std::int64_t samples, std::int64_t Q, float* dw) {
  __m512 acc[Rows][kTaps];
#pragma GCC unroll 4
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 9
    for (int t = 0; t < kTaps; ++t) acc[r][t] = _mm512_setzero_ps();
  std::int64_t shift[kTaps];  // tap offsets in floats of the position-major input
  for (int t = 0; t < kTaps; ++t) shift[t] = offsets[t] * channel_stride;
  for (std::int64_t s = 0; s < samples; ++s) {
    const float* x = in_t + s * in_sample_stride + c0;
    const float* g = gout + s * gout_sample_stride + o0 * gout_stride;
    for (std::int64_t q = 0; q < Q; ++q, x += channel_stride) {
      __m512 gv[Rows];
#pragma GCC unroll 4
      for (int r = 0; r < Rows; ++r) gv[r] = _mm512_set1_ps(g[r * gout_stride + q]);
#pragma GCC unroll 9
      for (int t = 0; t < kTaps; ++t) {
        const __m512 xv = _mm512_load_ps(x + shift[t]);
#pragma GCC unroll 4
        for (int r = 0; r < Rows; ++r) acc[r][t] = _mm512_fmadd_ps(gv[r], xv, acc[r][t]);
      }
    }
  }
  // Lane j of acc[r][t] is input channel c0 + j.
  const std::int64_t lanes = std::min<std::int64_t>(16, C - c0);
  alignas(64) float out[16];
  for (int r = 0; r < Rows; ++r)
    for (int t = 0; t < kTaps; ++t) {
      _mm512_store_ps(out, acc[r][t]);
      for (std::int64_t j = 0; j < lanes; ++j) dw[((o0 + r) * C + c0 + j) * kTaps + t] += out[j];
    }
}

}  // namespace

void flat_correlate_weight_grad(std::int64_t O, std::int64_t C, const std::int64_t* offsets,
                                const float* gout, std::int64_t gout_stride,
                                std::int64_t gout_sample_stride, const float* in_t,
                                std::int64_t channel_stride, std::int64_t in_sample_stride,
                                std::int64_t samples, std::int64_t Q, float* dw) {
  constexpr std::int64_t kRowsW = 3;
  for (std::int64_t o0 = 0; o0 < O; o0 += kRowsW)
    for (std::int64_t c0 = 0; c0 < C; c0 += 16) {
      const std::int64_t rows = std::min(kRowsW, O - o0);
      auto* fn = rows == 3 ? &weight_block<3> : rows == 2 ? &weight_block<2> : &weight_block<1>;
      fn(o0, c0, C, offsets, gout, gout_stride, gout_sample_stride, in_t, channel_stride,
         in_sample_stride, samples, Q, dw);
    }
}

bool flat_correlate_available() { return __builtin_cpu_supports("avx512f"); }

void flat_correlate(std::int64_t O, std::int64_t C, std::int64_t taps, const std::int64_t* offsets,
                    const float* packed_weights, const float* in, std::int64_t in_stride,
                    std::int64_t Q, float* out, std::int64_t out_stride) {
  for (std::int64_t o0 = 0; o0 < O; o0 += kRows) {
    const int rows = static_cast<int>(std::min<std::int64_t>(kRows, O - o0));
    const BlockFn fn = pick(rows, std::make_integer_sequence<int, kRows>());
    const float* w = packed_weights + (o0 / kRows) * C * taps * kRows;
    for (std::int64_t q0 = 0; q0 < Q; q0 += 32) {
      const std::int64_t left = Q - q0;
      const auto m0 = static_cast<__mmask16>(left >= 16 ? 0xFFFF : (1u << left) - 1);
      const auto m1 = static_cast<__mmask16>(left >= 32   ? 0xFFFF
                                             : left <= 16 ? 0
                                                          : (1u << (left - 16)) - 1);
      fn(C, taps, offsets, w, in, in_stride, q0, m0, m1, out + o0 * out_stride, out_stride);
    }
  }
}

#else

bool flat_correlate_available() { return false; }

void flat_correlate(std::int64_t, std::int64_t, std::int64_t, const std::int64_t*, const float*,
                    const float*, std::int64_t, std::int64_t, float*, std::int64_t) {}
void flat_correlate_weight_grad(std::int64_t, std::int64_t, const std::int64_t*, const float*,
                                std::int64_t, std::int64_t, const float*, std::int64_t,
                                std::int64_t, std::int64_t, std::int64_t, float*) {}

#endif

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA
