// The bfloat16 flat correlation (flat_correlate_bf16.h), compiled once per level: the
// avx512_bf16 copy is the kernel, the others only say that they cannot run it. Blocks of 12
// output channels by 32 positions in 24 accumulators; per (channel pair, tap), two loads of
// input pairs at the tap's shift and 12 broadcast weight pairs, 24 vdpbf16ps.
#include "kernels/cpu/isa_variant.h"

#include "kernels/cpu/flat_correlate_bf16.h"

#include <cstring>
#include <utility>

#include "common/error.h"
#include "kernels/cpu/position_major.h"

#if defined(__AVX512BF16__)
#include <immintrin.h>
#endif

namespace frugal::kernels::cpu::FRUGAL_CPU_ISA {

void flat_correlate_bf16(std::int64_t O, std::int64_t C, std::int64_t taps,
                         const std::int64_t* offsets, const std::uint32_t* packed_weights,
                         const std::uint32_t* in, std::int64_t pair_stride, std::int64_t Q,
                         float* out, std::int64_t out_stride);
void flat_correlate_bf16_weight_grad(std::int64_t O, std::int64_t C, const std::int64_t* offsets,
                                     const BFloat16* gout, std::int64_t gout_stride,
                                     std::int64_t gout_sample_stride, const std::uint32_t* pairs,
                                     std::int64_t channel_stride, std::int64_t in_sample_stride,
                                     std::int64_t samples, const PositionRows& rows, float* dw);

#if defined(__AVX512BF16__)

namespace {

constexpr int kRows = static_cast<int>(kFlatCorrelatePairRows);

// Rows is the number of output channels of this block that exist (the packed weights carry
// zeros for the others, which are computed but not stored). The unroll pragmas keep the
// accumulators in registers, as in the float kernel.
template <int Rows>
void block(std::int64_t pairs, std::int64_t taps, const std::int64_t* offsets,
           const std::uint32_t* w, const std::uint32_t* in, std::int64_t pair_stride,
           std::int64_t q0, __mmask16 m0, __mmask16 m1, float* out, std::int64_t out_stride) {
  __m512 acc0[Rows], acc1[Rows];
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r) acc0[r] = acc1[r] = _mm512_setzero_ps();
  for (std::int64_t p = 0; p < pairs; ++p) {
    const std::uint32_t* plane = in + p * pair_stride + q0;
    for (std::int64_t t = 0; t < taps; ++t, w += kRows) {
      const std::uint32_t* src = plane + offsets[t];
      const auto x0 = reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi32(m0, src));
      const auto x1 = reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi32(m1, src + 16));
#pragma GCC unroll 16
      for (int r = 0; r < Rows; ++r) {
        const auto wr = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(w[r])));
        acc0[r] = _mm512_dpbf16_ps(acc0[r], wr, x0);
        acc1[r] = _mm512_dpbf16_ps(acc1[r], wr, x1);
      }
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r) {
    _mm512_mask_storeu_ps(out + r * out_stride + q0, m0, acc0[r]);
    _mm512_mask_storeu_ps(out + r * out_stride + q0 + 16, m1, acc1[r]);
  }
}

using BlockFn = void (*)(std::int64_t, std::int64_t, const std::int64_t*, const std::uint32_t*,
                         const std::uint32_t*, std::int64_t, std::int64_t, __mmask16, __mmask16,
                         float*, std::int64_t);

template <int... R>
constexpr BlockFn pick(int rows, std::integer_sequence<int, R...>) {
  BlockFn fns[] = {&block<R + 1>...};
  return fns[rows - 1];
}

constexpr int kTaps = 9;

// As the float weight_block (flat_correlate.cpp), two output positions per step.
template <int Rows>
void weight_block(std::int64_t o0, std::int64_t c0, std::int64_t C, const std::int64_t* offsets,
                  const BFloat16* gout, std::int64_t gout_stride, std::int64_t gout_sample_stride,
                  const std::uint32_t* pairs, std::int64_t channel_stride,
                  std::int64_t in_sample_stride, std::int64_t samples, const PositionRows& rows,
                  float* dw) {
  __m512 acc[Rows][kTaps];
#pragma GCC unroll 4
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 9
    for (int t = 0; t < kTaps; ++t) acc[r][t] = _mm512_setzero_ps();
  std::int64_t shift[kTaps];  // tap offsets in words of the position-pair-major input
  for (int t = 0; t < kTaps; ++t) shift[t] = offsets[t] * channel_stride;
  for (std::int64_t s = 0; s < samples; ++s) {
    const std::uint32_t* x = pairs + s * in_sample_stride + c0;
    const BFloat16* g = gout + s * gout_sample_stride + o0 * gout_stride;
    for (std::int64_t y = 0; y < rows.count; ++y) {
      const std::uint32_t* xr = x + y * rows.in_pitch * channel_stride;
      const BFloat16* gr = g + y * rows.gout_pitch;
      for (std::int64_t q = 0; q < rows.length; q += 2, xr += 2 * channel_stride) {
        __m512bh gv[Rows];
#pragma GCC unroll 4
        for (int r = 0; r < Rows; ++r) {
          std::uint32_t word;  // gout[o][q] and gout[o][q + 1], the low half first
          std::memcpy(&word, gr + r * gout_stride + q, sizeof word);
          gv[r] = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(word)));
        }
#pragma GCC unroll 9
        for (int t = 0; t < kTaps; ++t) {
          __m512i xv = _mm512_load_si512(xr + shift[t]);
          asm("" : "+v"(xv));  // one load for the Rows products, as in the float kernel
#pragma GCC unroll 4
          for (int r = 0; r < Rows; ++r)
            acc[r][t] = _mm512_dpbf16_ps(acc[r][t], gv[r], reinterpret_cast<__m512bh>(xv));
        }
      }
    }
  }
  position_major_detail::add_weight_grad_block(acc, o0, c0, C, dw);
}

}  // namespace

void flat_correlate_bf16_weight_grad(std::int64_t O, std::int64_t C, const std::int64_t* offsets,
                                     const BFloat16* gout, std::int64_t gout_stride,
                                     std::int64_t gout_sample_stride, const std::uint32_t* pairs,
                                     std::int64_t channel_stride, std::int64_t in_sample_stride,
                                     std::int64_t samples, const PositionRows& rows, float* dw) {
  FRUGAL_CHECK(rows.length % 2 == 0 && rows.gout_pitch % 2 == 0,
               "flat_correlate_bf16_weight_grad: output rows of odd length cannot go in pairs");
  constexpr std::int64_t kRowsW = 3;
  for (std::int64_t o0 = 0; o0 < O; o0 += kRowsW)
    for (std::int64_t c0 = 0; c0 < C; c0 += 16) {
      const std::int64_t outs = std::min(kRowsW, O - o0);
      auto* fn = outs == 3 ? &weight_block<3> : outs == 2 ? &weight_block<2> : &weight_block<1>;
      fn(o0, c0, C, offsets, gout, gout_stride, gout_sample_stride, pairs, channel_stride,
         in_sample_stride, samples, rows, dw);
    }
}

void flat_correlate_bf16(std::int64_t O, std::int64_t C, std::int64_t taps,
                         const std::int64_t* offsets, const std::uint32_t* packed_weights,
                         const std::uint32_t* in, std::int64_t pair_stride, std::int64_t Q,
                         float* out, std::int64_t out_stride) {
  const std::int64_t pairs = (C + 1) / 2;
  for (std::int64_t o0 = 0; o0 < O; o0 += kRows) {
    const int rows = static_cast<int>(std::min<std::int64_t>(kRows, O - o0));
    const BlockFn fn = pick(rows, std::make_integer_sequence<int, kRows>());
    const std::uint32_t* w = packed_weights + (o0 / kRows) * pairs * taps * kRows;
    for (std::int64_t q0 = 0; q0 < Q; q0 += 32) {
      const std::int64_t left = Q - q0;
      const auto m0 = static_cast<__mmask16>(left >= 16 ? 0xFFFF : (1u << left) - 1);
      const auto m1 = static_cast<__mmask16>(left >= 32   ? 0xFFFF
                                             : left <= 16 ? 0
                                                          : (1u << (left - 16)) - 1);
      fn(pairs, taps, offsets, w, in, pair_stride, q0, m0, m1, out + o0 * out_stride, out_stride);
    }
  }
}

#else

void flat_correlate_bf16(std::int64_t, std::int64_t, std::int64_t, const std::int64_t*,
                         const std::uint32_t*, const std::uint32_t*, std::int64_t, std::int64_t,
                         float*, std::int64_t) {
  FRUGAL_CHECK(false,
               "flat_correlate_bf16: this copy of the kernels was compiled without AVX512_BF16; "
               "callers check flat_correlate_bf16_available() first");
}
void flat_correlate_bf16_weight_grad(std::int64_t, std::int64_t, const std::int64_t*,
                                     const BFloat16*, std::int64_t, std::int64_t,
                                     const std::uint32_t*, std::int64_t, std::int64_t,
                                     std::int64_t, const PositionRows&, float*) {
  FRUGAL_CHECK(false,
               "flat_correlate_bf16_weight_grad: this copy of the kernels was compiled without "
               "AVX512_BF16; callers check flat_correlate_bf16_available() first");
}

#endif

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA
