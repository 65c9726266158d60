// The inner loop of the shifted convolution path, for float, as one register-blocked kernel:
//   out[o][q] = sum over c, t of w[o][c][t] * in[c][q + offset[t]]   for q in [0, Q)
// On the shifted path's padded-width planes every tap is a flat shift, so a whole 3x3
// convolution of a sample (forward, or backward to its input) is this one loop nest. Blocks
// of kRows output channels by 32 positions stay in 24 AVX-512 registers for all C * taps
// multiply-adds, where a GEMM per tap would store and reload them after every tap.
#pragma once

#include "kernels/cpu/isa_variant.h"

#include "kernels/cpu/flat_correlate_bf16.h"

#include <algorithm>
#include <cstdint>
#include <vector>

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

// The same correlation straight on a convolution's unpadded H x W planes, for stride-1
// convolutions whose output is the input's size ("same" padding): tap t reads
//   in[c][(y + shift[t].dy) * W + x + shift[t].dx],  zero where that falls outside the plane.
// Positions run densely over y * W + x, and the lanes whose tap falls outside the plane (a
// row above or below, a column left or right) are masked off at the load, so no padded copy
// is made and every computed position is a real output: the padded-width planes above
// compute W + 2 * pad columns per row for W kept, 12.5% wasted at 14x14. `bias` (O values,
// or null) starts the sums; out rows are out_stride apart, input planes in_stride apart.
// Per call, besides the data, the kernel needs each tap's flat offset dy * W + dx and, per
// block of 32 positions and tap, the mask of the lanes whose tap falls inside the plane.
struct TapShift {
  std::int64_t dy, dx;
};
struct SameTaps {
  std::int64_t H = 0, W = 0;
  std::vector<std::int64_t> offsets;  // [tap]
  std::vector<std::uint32_t> masks;   // [position block][tap]
};
SameTaps same_taps(std::int64_t H, std::int64_t W, const std::vector<TapShift>& shifts);
void flat_correlate_same(std::int64_t O, std::int64_t C, const SameTaps& taps,
                         const float* packed_weights, const float* bias, const float* in,
                         std::int64_t in_stride, float* out, std::int64_t out_stride);

// The weight gradient of the same correlation for 3x3 kernels (9 taps), summed over
// `samples` samples and the output positions of `rows.count` rows of `rows.length`:
//   dw[o][c][t] += sum over samples, rows y, x < length of
//                  gout[o][y * rows.gout_pitch + x] * in[c][y * rows.in_pitch + x + offset[t]]
// so that the output gradient is read dense (pitch OW) while the input is padded (pitch Wp),
// and no discarded padding column is summed. The input is position-major: in_t[pos][c] with
// channel_stride (>= C, a multiple of 16) floats per position, so that 16 input channels are
// one aligned vector; sample s starts at in_t + s * in_sample_stride and gout + s *
// gout_sample_stride. Blocks of 3 output channels x 9 taps x 16 input channels stay in 27
// registers across all the samples' positions. dw is [O][C][9], accumulated into.
using ::frugal::kernels::cpu::PositionRows;  // flat_correlate_bf16.h
void flat_correlate_weight_grad(std::int64_t O, std::int64_t C, const std::int64_t* offsets,
                                const float* gout, std::int64_t gout_stride,
                                std::int64_t gout_sample_stride, const float* in_t,
                                std::int64_t channel_stride, std::int64_t in_sample_stride,
                                std::int64_t samples, const PositionRows& rows, float* dw);

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA
