// The shifted convolution path's register-blocked kernel (flat_correlate.h) for bfloat16 on
// CPUs with AVX512_BF16: input channels go in pairs, so one vdpbf16ps does two channels'
// multiply-adds per lane where the float kernel's vfmadd231ps does one.
//   out[o][q] = sum over c, t of w[o][c][t] * in[c][q + offset[t]]   for q in [0, Q)
#pragma once

#include <algorithm>
#include <cstdint>

#include "common/half.h"

namespace frugal::kernels::cpu {

// Whether the level running now (cpu_isa()) has AVX512_BF16; callers fall back otherwise.
bool flat_correlate_bf16_available();

// Output channels per register block, as in the float kernel.
inline constexpr std::int64_t kFlatCorrelatePairRows = 12;

// Two bfloat16 values in one 32-bit word, `lo` in the low half: the operand layout of
// vdpbf16ps, which multiplies the halves of two such words pairwise and adds both products.
inline std::uint32_t bf16_pair(BFloat16 lo, BFloat16 hi) {
  return std::uint32_t{lo.bits} | std::uint32_t{hi.bits} << 16;
}

// Weights in the kernel's order: blocks of kFlatCorrelatePairRows output channels (the last
// zero-filled), then [channel pair][t][row] words of (w[o][2p][t], w[o][2p + 1][t]); an odd
// last channel pairs with zero.
inline std::int64_t flat_correlate_bf16_packed_size(std::int64_t O, std::int64_t C,
                                                    std::int64_t taps) {
  return (O + kFlatCorrelatePairRows - 1) / kFlatCorrelatePairRows * kFlatCorrelatePairRows *
         ((C + 1) / 2) * taps;
}
// weight(o, c, t) gives the weight of output o, input c, tap t.
template <class F>
void pack_flat_correlate_bf16_weights(std::int64_t O, std::int64_t C, std::int64_t taps, F weight,
                                      std::uint32_t* packed) {
  const std::int64_t pairs = (C + 1) / 2;
  std::fill(packed, packed + flat_correlate_bf16_packed_size(O, C, taps), 0u);
  for (std::int64_t o = 0; o < O; ++o)
    for (std::int64_t p = 0; p < pairs; ++p)
      for (std::int64_t t = 0; t < taps; ++t) {
        const BFloat16 hi = 2 * p + 1 < C ? BFloat16(weight(o, 2 * p + 1, t)) : BFloat16(0.0f);
        packed[(((o / kFlatCorrelatePairRows) * pairs + p) * taps + t) * kFlatCorrelatePairRows +
               o % kFlatCorrelatePairRows] = bf16_pair(BFloat16(weight(o, 2 * p, t)), hi);
      }
}

// `in` holds (C + 1) / 2 planes of pair words, pair_stride words apart: word q of plane p is
// bf16_pair(in[2p][q], in[2p + 1][q]) (zero for a missing last channel). Offsets, Q and out as
// in flat_correlate; sums in float, overwrites out[o][0..Q). Single-threaded. Throws where
// flat_correlate_bf16_available() is false.
void flat_correlate_bf16(std::int64_t O, std::int64_t C, std::int64_t taps,
                         const std::int64_t* offsets, const std::uint32_t* packed_weights,
                         const std::uint32_t* in, std::int64_t pair_stride, std::int64_t Q,
                         float* out, std::int64_t out_stride);

// The positions a weight-gradient sum runs over: `count` rows of `length` output positions,
// rows gout_pitch apart in the output gradient and in_pitch apart in the (padded) input.
struct PositionRows {
  std::int64_t count, length, gout_pitch, in_pitch;
};

// The weight gradient of the correlation for 3x3 kernels on bfloat16 pairs of output
// positions (vdpbf16ps sums two positions' products per lane):
//   dw[o][c][t] += sum over samples, rows y, x < length of
//                  gout[o][y * gout_pitch + x] * in[c][y * in_pitch + x + offset[t]]
// Output positions go in pairs (x, x + 1), so rows.length must be even and gout_pitch too:
// gout, bfloat16 [o][position] as in the tensor (sample s at s * gout_sample_stride), is read
// as pair words in place. The input is position-pair-major: pairs[pos][c] =
// bf16_pair(in[c][pos], in[c][pos + 1]), channel_stride (a multiple of 16, >= C) words per
// position, sample s at s * in_sample_stride. Blocks of 3 output channels x 9 taps x 16 input
// channels stay in 27 registers; dw is [O][C][9] in float, accumulated into. Throws where
// flat_correlate_bf16_available() is false.
void flat_correlate_bf16_weight_grad(std::int64_t O, std::int64_t C, const std::int64_t* offsets,
                                     const BFloat16* gout, std::int64_t gout_stride,
                                     std::int64_t gout_sample_stride, const std::uint32_t* pairs,
                                     std::int64_t channel_stride, std::int64_t in_sample_stride,
                                     std::int64_t samples, const PositionRows& rows, float* dw);

}  // namespace frugal::kernels::cpu
