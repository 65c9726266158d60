// The register-blocked AVX-512 flat correlations (see flat_correlate.h). The loops over a
// block's registers carry "#pragma GCC unroll": without it GCC keeps the accumulator arrays
// on the stack and stores them every step, which ran at 40% of the speed. For each block of
// 12 output channels and 32 positions: 24 accumulators; per (input channel, tap), two loads
// of the input at the tap's shift and 12 broadcast weights, 24 fused multiply-adds. The last
// block of positions is masked, so nothing past Q is read or written; the same-size variant
// also masks each tap's lanes that fall outside the plane.
#include "kernels/cpu/isa_variant.h"

#include "kernels/cpu/flat_correlate.h"

#include <algorithm>
#include <utility>

#include "kernels/cpu/position_major.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace frugal::kernels::cpu::FRUGAL_CPU_ISA {

SameTaps same_taps(std::int64_t H, std::int64_t W, const std::vector<TapShift>& shifts) {
  SameTaps taps;
  taps.H = H;
  taps.W = W;
  for (const TapShift& s : shifts) taps.offsets.push_back(s.dy * W + s.dx);
  for (std::int64_t q0 = 0; q0 < H * W; q0 += 32)
    for (const TapShift& s : shifts) {
      std::uint32_t bits = 0;
      for (std::int64_t lane = 0; lane < 32 && q0 + lane < H * W; ++lane) {
        const std::int64_t y = (q0 + lane) / W + s.dy, x = (q0 + lane) % W + s.dx;
        if (y >= 0 && y < H && x >= 0 && x < W) bits |= std::uint32_t{1} << lane;
      }
      taps.masks.push_back(bits);
    }
  return taps;
}

#if defined(__AVX512F__)

namespace {

constexpr int kRows = static_cast<int>(kFlatCorrelateRows);

// The step both float kernels share: 12 (Rows) broadcast weights times two input vectors.
template <int Rows>
inline void madd_rows(const float* w, __m512 x0, __m512 x1, __m512* acc0, __m512* acc1) {
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r) {
    const __m512 wr = _mm512_set1_ps(w[r]);
    acc0[r] = _mm512_fmadd_ps(wr, x0, acc0[r]);
    acc1[r] = _mm512_fmadd_ps(wr, x1, acc1[r]);
  }
}

template <int Rows>
inline void store_rows(const __m512* acc0, const __m512* acc1, float* out, std::int64_t out_stride,
                       std::int64_t q0, __mmask16 m0, __mmask16 m1) {
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r) {
    _mm512_mask_storeu_ps(out + r * out_stride + q0, m0, acc0[r]);
    _mm512_mask_storeu_ps(out + r * out_stride + q0 + 16, m1, acc1[r]);
  }
}

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
      madd_rows<Rows>(w, x0, x1, acc0, acc1);
    }
  }
  store_rows<Rows>(acc0, acc1, out, out_stride, q0, m0, m1);
}

using BlockFn = void (*)(std::int64_t, std::int64_t, const std::int64_t*, const float*,
                         const float*, std::int64_t, std::int64_t, __mmask16, __mmask16, float*,
                         std::int64_t);

template <int... R>
constexpr BlockFn pick(int rows, std::integer_sequence<int, R...>) {
  BlockFn fns[] = {&block<R + 1>...};
  return fns[rows - 1];
}

// A block of the same-size correlation: as block<Rows>, with the taps outside and the input
// channels inside, so that each tap's two lane masks (masks[t], low and high half) are loaded
// once for all C channels. Sums start at the bias.
template <int Rows>
void same_block(std::int64_t C, std::int64_t taps, const std::int64_t* offsets,
                const std::uint32_t* masks, const float* w, const float* bias, const float* in,
                std::int64_t in_stride, std::int64_t q0, __mmask16 m0, __mmask16 m1, float* out,
                std::int64_t out_stride) {
  __m512 acc0[Rows], acc1[Rows];
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r)
    acc0[r] = acc1[r] = bias != nullptr ? _mm512_set1_ps(bias[r]) : _mm512_setzero_ps();
  const std::int64_t w_step = taps * kRows;  // from one input channel's weights to the next
  for (std::int64_t t = 0; t < taps; ++t) {
    const auto k0 = static_cast<__mmask16>(masks[t]), k1 = static_cast<__mmask16>(masks[t] >> 16);
    // Masked-off lanes may lie outside the planes (a row above the first, say): the loads
    // suppress them, so only in-plane addresses are read.
    const float* src = in + q0 + offsets[t];
    const float* wt = w + t * kRows;
    for (std::int64_t c = 0; c < C; ++c, src += in_stride, wt += w_step) {
      const __m512 x0 = _mm512_maskz_loadu_ps(k0, src);
      const __m512 x1 = _mm512_maskz_loadu_ps(k1, src + 16);
      madd_rows<Rows>(wt, x0, x1, acc0, acc1);
    }
  }
  store_rows<Rows>(acc0, acc1, out, out_stride, q0, m0, m1);
}

using SameBlockFn = void (*)(std::int64_t, std::int64_t, const std::int64_t*, const std::uint32_t*,
                             const float*, const float*, const float*, std::int64_t, std::int64_t,
                             __mmask16, __mmask16, float*, std::int64_t);

template <int... R>
constexpr SameBlockFn pick_same(int rows, std::integer_sequence<int, R...>) {
  SameBlockFn fns[] = {&same_block<R + 1>...};
  return fns[rows - 1];
}

// The lane masks of the last, partial block of positions (nothing at or past Q).
std::pair<__mmask16, __mmask16> tail_masks(std::int64_t left) {
  const auto m0 = static_cast<__mmask16>(left >= 16 ? 0xFFFF : (1u << left) - 1);
  const auto m1 = static_cast<__mmask16>(left >= 32   ? 0xFFFF
                                         : left <= 16 ? 0
                                                      : (1u << (left - 16)) - 1);
  return {m0, m1};
}

constexpr int kTaps = 9;

template <int Rows>
void weight_block(std::int64_t o0, std::int64_t c0, std::int64_t C, const std::int64_t* offsets,
                  const float* gout, std::int64_t gout_stride, std::int64_t gout_sample_stride,
                  const float* in_t, std::int64_t channel_stride, std::int64_t in_sample_stride,
                  std::int64_t samples, const PositionRows& rows, float* dw) {
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
    for (std::int64_t y = 0; y < rows.count; ++y) {
      const float* xr = x + y * rows.in_pitch * channel_stride;
      const float* gr = g + y * rows.gout_pitch;
      for (std::int64_t q = 0; q < rows.length; ++q, xr += channel_stride) {
        __m512 gv[Rows];
#pragma GCC unroll 4
        for (int r = 0; r < Rows; ++r) gv[r] = _mm512_set1_ps(gr[r * gout_stride + q]);
#pragma GCC unroll 9
        for (int t = 0; t < kTaps; ++t) {
          __m512 xv = _mm512_load_ps(xr + shift[t]);
          // Keep the load in a register: left to itself GCC folds it into each of the Rows
          // multiply-adds, one load per multiply-add, and the loop then waits on loads.
          asm("" : "+v"(xv));
#pragma GCC unroll 4
          for (int r = 0; r < Rows; ++r) acc[r][t] = _mm512_fmadd_ps(gv[r], xv, acc[r][t]);
        }
      }
    }
  }
  position_major_detail::add_weight_grad_block(acc, o0, c0, C, dw);
}

}  // namespace

void flat_correlate_weight_grad(std::int64_t O, std::int64_t C, const std::int64_t* offsets,
                                const float* gout, std::int64_t gout_stride,
                                std::int64_t gout_sample_stride, const float* in_t,
                                std::int64_t channel_stride, std::int64_t in_sample_stride,
                                std::int64_t samples, const PositionRows& rows, float* dw) {
  constexpr std::int64_t kRowsW = 3;
  for (std::int64_t o0 = 0; o0 < O; o0 += kRowsW)
    for (std::int64_t c0 = 0; c0 < C; c0 += 16) {
      const std::int64_t outs = std::min(kRowsW, O - o0);
      auto* fn = outs == 3 ? &weight_block<3> : outs == 2 ? &weight_block<2> : &weight_block<1>;
      fn(o0, c0, C, offsets, gout, gout_stride, gout_sample_stride, in_t, channel_stride,
         in_sample_stride, samples, rows, dw);
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
      const auto [m0, m1] = tail_masks(Q - q0);
      fn(C, taps, offsets, w, in, in_stride, q0, m0, m1, out + o0 * out_stride, out_stride);
    }
  }
}

void flat_correlate_same(std::int64_t O, std::int64_t C, const SameTaps& taps,
                         const float* packed_weights, const float* bias, const float* in,
                         std::int64_t in_stride, float* out, std::int64_t out_stride) {
  const std::int64_t Q = taps.H * taps.W, T = static_cast<std::int64_t>(taps.offsets.size());
  for (std::int64_t o0 = 0; o0 < O; o0 += kRows) {
    const int rows = static_cast<int>(std::min<std::int64_t>(kRows, O - o0));
    const SameBlockFn fn = pick_same(rows, std::make_integer_sequence<int, kRows>());
    const float* w = packed_weights + (o0 / kRows) * C * T * kRows;
    for (std::int64_t q0 = 0; q0 < Q; q0 += 32) {
      const auto [m0, m1] = tail_masks(Q - q0);
      fn(C, T, taps.offsets.data(), taps.masks.data() + q0 / 32 * T, w, bias ? bias + o0 : nullptr,
         in, in_stride, q0, m0, m1, out + o0 * out_stride, out_stride);
    }
  }
}

#else

bool flat_correlate_available() { return false; }

void flat_correlate(std::int64_t, std::int64_t, std::int64_t, const std::int64_t*, const float*,
                    const float*, std::int64_t, std::int64_t, float*, std::int64_t) {}
void flat_correlate_weight_grad(std::int64_t, std::int64_t, const std::int64_t*, const float*,
                                std::int64_t, std::int64_t, const float*, std::int64_t,
                                std::int64_t, std::int64_t, const PositionRows&, float*) {}
void flat_correlate_same(std::int64_t, std::int64_t, const SameTaps&, const float*, const float*,
                         const float*, std::int64_t, float*, std::int64_t) {}

#endif

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA
