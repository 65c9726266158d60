// The inner loop of the shifted convolution path, for float, as one register-blocked kernel:
//   out[o][q] = sum over c, t of w[o][c][t] * in[c][q + offset[t]]   for q in [0, Q)
// On the shifted path's padded-width planes every tap is a flat shift, so a whole 3x3
// convolution of a sample (forward, or backward to its input) is this one loop nest. Blocks
// of kRows output channels by 32 positions stay in 24 AVX-512 registers for all C * taps
// multiply-adds, where a GEMM per tap would store and reload them after every tap.
#pragma once

#include "kernels/cpu/isa_variant.h"

#include <algorithm>
#include <cstdint>

namespace frugal::kernels::cpu::FRUGAL_CPU_ISA {

// Whether this build and this CPU run the kernel (AVX-512F); callers fall back otherwise.
bool flat_correlate_available();

// Output channels per register block.
inline constexpr std::int64_t kFlatCorrelateRows = 12;

// Weights in the kernel's order: blocks of kFlatCorrelateRows output channels (the last one
// zero-filled), then [c][t][row]; flat_correlate_packed_size floats.
inline std::int64_t flat_correlate_packed_size(std::int64_t O, std::int64_t C, std::int64_t taps) {
  return (O + kFlatCorrelateRows - 1) / kFlatCorrelateRows * kFlatCorrelateRows * C * taps;
}
// weight(o, c, t) gives the weight of output o, input c, tap t.
template <class F>
void pack_flat_correlate_weights(std::int64_t O, std::int64_t C, std::int64_t taps, F weight,
                                 float* packed) {
  std::fill(packed, packed + flat_correlate_packed_size(O, C, taps), 0.0f);
  for (std::int64_t o = 0; o < O; ++o)
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t t = 0; t < taps; ++t)
        packed[(((o / kFlatCorrelateRows) * C + c) * taps + t) * kFlatCorrelateRows +
               o % kFlatCorrelateRows] = weight(o, c, t);
}

// out rows are out_stride apart, input channels in_stride apart; offsets may be negative as
// long as every in[c][q + offset[t]] read for q in [0, Q) lies inside the caller's buffer.
// Overwrites out[o][0..Q). Single-threaded (callers split samples across threads).
void flat_correlate(std::int64_t O, std::int64_t C, std::int64_t taps, const std::int64_t* offsets,
                    const float* packed_weights, const float* in, std::int64_t in_stride,
                    std::int64_t Q, float* out, std::int64_t out_stride);

// The weight gradient of the same correlation for 3x3 kernels (9 taps), summed over
// `samples` samples:
//   dw[o][c][t] += sum over samples, q in [0, Q) of gout[o][q] * in[c][q + offset[t]]
// Here the input is position-major: in_t[pos][c] with channel_stride (>= C, a multiple of 16)
// floats per position, so that 16 input channels are one aligned vector; sample s starts
// at in_t + s * in_sample_stride and gout + s * gout_sample_stride. Blocks of 3 output
// channels x 9 taps x 16 input channels stay in 27 registers across all the samples'
// positions. dw is [O][C][9], accumulated into.
void flat_correlate_weight_grad(std::int64_t O, std::int64_t C, const std::int64_t* offsets,
                                const float* gout, std::int64_t gout_stride,
                                std::int64_t gout_sample_stride, const float* in_t,
                                std::int64_t channel_stride, std::int64_t in_sample_stride,
                                std::int64_t samples, std::int64_t Q, float* dw);

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA
