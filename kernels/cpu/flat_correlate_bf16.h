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

}  // namespace frugal::kernels::cpu
