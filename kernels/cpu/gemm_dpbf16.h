// bfloat16 GEMM on AVX512_BF16: both operands packed as pairs of consecutive k and multiplied
// with vdpbf16ps, which adds two bfloat16 products into each float lane in one instruction.
#pragma once

#include "kernels/cpu/isa_variant.h"

#if defined(__AVX512BF16__)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "common/half.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/parallel.h"

namespace frugal::kernels::cpu::FRUGAL_CPU_ISA::dpbf16 {

// Register block: 8 rows x 32 columns of C in 16 zmm accumulators. Each pair of k loads two
// vectors of B and broadcasts eight pairs of A into sixteen vdpbf16ps.
constexpr std::int64_t kMr = 8, kNr = 32;
// Cache block: a 64 x 128 float tile of C (32 KiB) over k blocks of 256 (128 pairs), whose
// packed A (32 KiB) and B (64 KiB) stay in the L2 cache. All three live on the stack:
// kernels do not allocate.
constexpr std::int64_t kMc = 64, kNc = 128, kKc = 256;
constexpr std::int64_t kPairsPerBlock = kKc / 2;

// dst[p * width + l] = X(l, 2p) | X(l, 2p + 1) << 16, where X(l, q) = src[l * l_stride +
// q * q_stride] for l < lanes and q < depth, and 0 outside (rows past the edge of C and the
// odd last k contribute nothing).
inline void pack_pairs(const std::uint16_t* src, std::int64_t l_stride, std::int64_t q_stride,
                       std::int64_t lanes, std::int64_t depth, std::int64_t width,
                       std::uint32_t* dst) {
  const std::int64_t pairs = (depth + 1) / 2, whole = depth / 2;
  if (lanes < width || whole < pairs) std::fill(dst, dst + pairs * width, 0u);
  if (q_stride == 1) {
    // Each lane's pairs are adjacent in memory: one 32-bit load each.
    for (std::int64_t l = 0; l < lanes; ++l) {
      const std::uint16_t* row = src + l * l_stride;
      for (std::int64_t p = 0; p < whole; ++p) std::memcpy(dst + p * width + l, row + 2 * p, 4);
      if (whole < pairs) dst[whole * width + l] = row[2 * whole];
    }
    return;
  }
  // Lanes are adjacent (l_stride == 1 in practice): interleave two rows of q, a vector at a time.
  for (std::int64_t p = 0; p < pairs; ++p) {
    const std::uint16_t* lo = src + 2 * p * q_stride;
    const std::uint16_t* hi = lo + q_stride;
    std::uint32_t* out = dst + p * width;
    if (2 * p + 1 < depth) {
      for (std::int64_t l = 0; l < lanes; ++l)
        out[l] = std::uint32_t{lo[l * l_stride]} | std::uint32_t{hi[l * l_stride]} << 16;
    } else {
      for (std::int64_t l = 0; l < lanes; ++l) out[l] = lo[l * l_stride];
    }
  }
}

// c[8 x 32] (leading dimension ldc) = (accumulate ? c : 0) + A block * B block over `pairs`.
inline void kernel_8x32(std::int64_t pairs, const std::uint32_t* ap, const std::uint32_t* bp,
                        float* c, std::int64_t ldc, bool accumulate) {
  __m512 acc[kMr][2];
#pragma GCC unroll 8
  for (int r = 0; r < kMr; ++r) {
    acc[r][0] = accumulate ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
    acc[r][1] = accumulate ? _mm512_loadu_ps(c + r * ldc + 16) : _mm512_setzero_ps();
  }
  for (std::int64_t p = 0; p < pairs; ++p) {
    const auto b0 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(bp + p * kNr));
    const auto b1 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(bp + p * kNr + 16));
#pragma GCC unroll 8
    for (int r = 0; r < kMr; ++r) {
      const auto a =
          reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(ap[p * kMr + r])));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], a, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], a, b1);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kMr; ++r) {
    _mm512_storeu_ps(c + r * ldc, acc[r][0]);
    _mm512_storeu_ps(c + r * ldc + 16, acc[r][1]);
  }
}

// C = alpha * op(A) * op(B) + beta * C for bfloat16 A and B, C float or bfloat16 (rounded once,
// from the float sum over all of k). vdpbf16ps treats subnormal inputs as zero and flushes
// subnormal results to zero whatever MXCSR says; bfloat16 carries float's exponent range, so
// only values below 1.2e-38 are affected.
template <class Out>
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const BFloat16* a, std::int64_t lda, const BFloat16* b, std::int64_t ldb, float beta,
          Out* c, std::int64_t ldc) {
  const auto* a16 = reinterpret_cast<const std::uint16_t*>(a);
  const auto* b16 = reinterpret_cast<const std::uint16_t*>(b);
  // op(A)(i, q) and op(B)(q, j) as (lane, depth) strides of the packing.
  const std::int64_t a_l = trans_a ? 1 : lda, a_q = trans_a ? lda : 1;
  const std::int64_t b_l = trans_b ? ldb : 1, b_q = trans_b ? 1 : ldb;
  const std::int64_t tiles_m = (m + kMc - 1) / kMc, tiles_n = (n + kNc - 1) / kNc;
  const std::int64_t tiles = tiles_m * tiles_n;
  const std::int64_t grain = m * n * k >= (std::int64_t{1} << 18) ? 1 : tiles;
  parallel_for(0, tiles, grain, [&](std::int64_t t0, std::int64_t t1) {
    alignas(64) std::uint32_t ap[kMc * kPairsPerBlock];
    alignas(64) std::uint32_t bp[kPairsPerBlock * kNc];
    alignas(64) float ct[kMc * kNc];
    for (std::int64_t t = t0; t < t1; ++t) {
      const std::int64_t i0 = (t / tiles_n) * kMc, j0 = (t % tiles_n) * kNc;
      const std::int64_t mb = std::min(kMc, m - i0), nb = std::min(kNc, n - j0);
      const std::int64_t row_blocks = (mb + kMr - 1) / kMr, col_blocks = (nb + kNr - 1) / kNr;
      if (k == 0) std::fill(ct, ct + kMc * kNc, 0.0f);
      for (std::int64_t k0 = 0; k0 < k; k0 += kKc) {
        const std::int64_t kb = std::min(kKc, k - k0), pairs = (kb + 1) / 2;
        for (std::int64_t rb = 0; rb < row_blocks; ++rb) {
          const std::int64_t i = i0 + rb * kMr;
          pack_pairs(a16 + i * a_l + k0 * a_q, a_l, a_q, std::min(kMr, m - i), kb, kMr,
                     ap + rb * pairs * kMr);
        }
        for (std::int64_t cb = 0; cb < col_blocks; ++cb) {
          const std::int64_t j = j0 + cb * kNr;
          pack_pairs(b16 + j * b_l + k0 * b_q, b_l, b_q, std::min(kNr, n - j), kb, kNr,
                     bp + cb * pairs * kNr);
        }
        for (std::int64_t rb = 0; rb < row_blocks; ++rb)
          for (std::int64_t cb = 0; cb < col_blocks; ++cb)
            kernel_8x32(pairs, ap + rb * pairs * kMr, bp + cb * pairs * kNr,
                        ct + rb * kMr * kNc + cb * kNr, kNc, k0 > 0);
      }
      for (std::int64_t i = 0; i < mb; ++i) {
        Out* crow = c + (i0 + i) * ldc + j0;
        const float* src = ct + i * kNc;
        for (std::int64_t j = 0; j < nb; ++j) {
          const float prior = beta == 0.0f ? 0.0f : beta * static_cast<float>(crow[j]);
          crow[j] = static_cast<Out>(alpha * src[j] + prior);
        }
      }
    }
  });
}

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA::dpbf16

#endif  // __AVX512BF16__
