// The uint8 x int8 -> int32 GEMM, its fused rescale, and the per-row quantizers of
// quantized_gemm.h. The GEMM's inner loop is a plain widening dot product of 4 rows of A with 4
// weight rows at once (16 sums), written so that the compiler vectorises it (with -march=native
// on a VNNI machine GCC emits vpdpbusd for it); 4 rows measured faster than 1, 2, 6 or 8.
#include "kernels/cpu/isa_variant.h"

#include "kernels/cpu/quantized_gemm.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>

#include "common/error.h"
#include "kernels/cpu/parallel.h"

namespace frugal::kernels::cpu::FRUGAL_CPU_ISA {
namespace {

// Weight rows per block: 32 rows of k <= ~1500 bytes stay in L1 while every row of A uses them.
constexpr std::int64_t kWeightBlock = 32;
// Rows of A multiplied together against each 4 weight rows.
constexpr int kRows = 4;

// c[0..3] = the dot products of a with 4 consecutive weight rows.
inline void dot_1x4(const std::uint8_t* __restrict a, const std::int8_t* __restrict b,
                    std::int64_t ldb, std::int64_t k, std::int32_t* __restrict c) {
  const std::int8_t* __restrict b0 = b;
  const std::int8_t* __restrict b1 = b + ldb;
  const std::int8_t* __restrict b2 = b + 2 * ldb;
  const std::int8_t* __restrict b3 = b + 3 * ldb;
  std::int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (std::int64_t p = 0; p < k; ++p) {
    const std::int32_t x = a[p];
    s0 += x * b0[p];
    s1 += x * b1[p];
    s2 += x * b2[p];
    s3 += x * b3[p];
  }
  c[0] = s0;
  c[1] = s1;
  c[2] = s2;
  c[3] = s3;
}

// c[r][0..3] for R rows of A against 4 weight rows: each weight byte is loaded once for all R
// rows and each activation byte once for the 4 weight rows (the loads, not the multiplies,
// bound a single row's version).
template <int R>
inline void dot_rx4(const std::uint8_t* __restrict a, std::int64_t lda,
                    const std::int8_t* __restrict b, std::int64_t ldb, std::int64_t k,
                    std::int32_t (&c)[R][4]) {
  std::int32_t s[R][4] = {};
  for (std::int64_t p = 0; p < k; ++p) {
    std::int32_t w[4];
    for (int t = 0; t < 4; ++t) w[t] = b[t * ldb + p];
    for (int r = 0; r < R; ++r) {
      const std::int32_t x = a[r * lda + p];
      for (int t = 0; t < 4; ++t) s[r][t] += x * w[t];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < 4; ++t) c[r][t] = s[r][t];
}

inline std::int32_t dot_1x1(const std::uint8_t* __restrict a, const std::int8_t* __restrict b,
                            std::int64_t k) {
  std::int32_t s = 0;
  for (std::int64_t p = 0; p < k; ++p) s += static_cast<std::int32_t>(a[p]) * b[p];
  return s;
}

// Rows [i0, i1) of C = A B^T, columns [j0, j1): store(i, j, sums, count) receives the int32
// sums of row i, columns j .. j + count - 1, as they come out of the dot products.
template <class Store>
void gemm_tile(std::int64_t i0, std::int64_t i1, std::int64_t j0, std::int64_t j1, std::int64_t k,
               const std::uint8_t* a, std::int64_t lda, const std::int8_t* b, std::int64_t ldb,
               const Store& store) {
  for (std::int64_t jb = j0; jb < j1; jb += kWeightBlock) {
    const std::int64_t je = std::min(j1, jb + kWeightBlock);
    std::int64_t i = i0;
    for (; i + kRows <= i1; i += kRows) {
      const std::uint8_t* ai = a + i * lda;
      std::int32_t sums[kRows][4];
      std::int64_t j = jb;
      for (; j + 4 <= je; j += 4) {
        dot_rx4<kRows>(ai, lda, b + j * ldb, ldb, k, sums);
        for (int r = 0; r < kRows; ++r) store(i + r, j, sums[r], 4);
      }
      for (; j < je; ++j)
        for (int r = 0; r < kRows; ++r) {
          sums[r][0] = dot_1x1(ai + r * lda, b + j * ldb, k);
          store(i + r, j, sums[r], 1);
        }
    }
    for (; i < i1; ++i) {
      const std::uint8_t* ai = a + i * lda;
      std::int32_t sums[4];
      std::int64_t j = jb;
      for (; j + 4 <= je; j += 4) {
        dot_1x4(ai, b + j * ldb, ldb, k, sums);
        store(i, j, sums, 4);
      }
      for (; j < je; ++j) {
        sums[0] = dot_1x1(ai, b + j * ldb, k);
        store(i, j, sums, 1);
      }
    }
  }
}

// The GEMM's threading: rows of C per thread when there are enough, else weight rows (in
// blocks of 4) per thread.
template <class Store>
void gemm_parallel(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint8_t* a,
                   std::int64_t lda, const std::int8_t* b, std::int64_t ldb, const Store& store) {
  FRUGAL_CHECK(m >= 0 && n >= 0 && k >= 0, "quantized gemm: negative size");
  FRUGAL_CHECK_FORMAT(k <= kMaxQuantizedGemmK,
                      "quantized gemm: k = {} could overflow the int32 sums (at most {})", k,
                      kMaxQuantizedGemmK);
  if (m == 0 || n == 0) return;
  const std::int64_t work_per_row = n * std::max<std::int64_t>(k, 1);
  if (m >= 4 * get_num_threads()) {
    const std::int64_t grain = std::max<std::int64_t>(1, 32768 / work_per_row);
    parallel_for(0, m, grain, [&](std::int64_t i0, std::int64_t i1) {
      gemm_tile(i0, i1, 0, n, k, a, lda, b, ldb, store);
    });
  } else {
    const std::int64_t blocks = (n + 3) / 4;
    const std::int64_t grain =
        std::max<std::int64_t>(1, 32768 / (4 * m * std::max<std::int64_t>(k, 1)));
    parallel_for(0, blocks, grain, [&](std::int64_t b0, std::int64_t b1) {
      gemm_tile(0, m, 4 * b0, std::min(n, 4 * b1), k, a, lda, b, ldb, store);
    });
  }
}

}  // namespace

void gemm_u8s8s32(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint8_t* a,
                  std::int64_t lda, const std::int8_t* b, std::int64_t ldb, std::int32_t* c,
                  std::int64_t ldc) {
  gemm_parallel(m, n, k, a, lda, b, ldb,
                [&](std::int64_t i, std::int64_t j, const std::int32_t* sums, int count) {
                  for (int t = 0; t < count; ++t) c[i * ldc + j + t] = sums[t];
                });
}

void quantized_linear_u8s8(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint8_t* a,
                           std::int64_t lda, const std::int8_t* b, std::int64_t ldb,
                           const float* x_scale, const std::int32_t* x_zero_point,
                           const float* w_scale, const std::int32_t* w_sum, const float* bias,
                           float* y, std::int64_t ldy) {
  gemm_parallel(m, n, k, a, lda, b, ldb,
                [&](std::int64_t i, std::int64_t j, const std::int32_t* sums, int count) {
                  const float xs = x_scale[i];
                  const std::int32_t zp = x_zero_point[i];
                  for (int t = 0; t < count; ++t) {
                    // Exact in int32: it is sum_k (a - zp) * b, bounded like the sums.
                    const std::int32_t centred = sums[t] - zp * w_sum[j + t];
                    // An explicit fma: whether the compiler would contract a * b + c depends
                    // on how this is inlined, and a row must give the same bits on any path.
                    y[i * ldy + j + t] = std::fma(xs * w_scale[j + t], static_cast<float>(centred),
                                                  bias != nullptr ? bias[j + t] : 0.0f);
                  }
                });
}

std::int64_t quantize_rows_symmetric_s8(const float* x, std::int64_t rows, std::int64_t cols,
                                        std::int8_t* q, float* scale, std::int32_t* row_sum) {
  std::atomic<std::int64_t> bad_row{-1};
  parallel_for(0, rows, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(cols, 1)),
               [&](std::int64_t r0, std::int64_t r1) {
                 for (std::int64_t r = r0; r < r1; ++r) {
                   const float* xr = x + r * cols;
                   float amax = 0, probe = 0;  // probe: NaN if any value is inf or NaN
#pragma omp simd reduction(max : amax) reduction(+ : probe)
                   for (std::int64_t c = 0; c < cols; ++c) {
                     const float v = std::fabs(xr[c]);
                     amax = v > amax ? v : amax;
                     probe += xr[c] * 0.0f;
                   }
                   std::int8_t* qr = q + r * cols;
                   if (!std::isfinite(probe)) {
                     // Reported to the caller, which throws. The row is left unquantized:
                     // converting a NaN to an integer is undefined behaviour.
                     bad_row.store(r);
                     std::fill(qr, qr + cols, std::int8_t{0});
                     scale[r] = 1.0f;
                     row_sum[r] = 0;
                     continue;
                   }
                   const float s = amax > 0 ? amax / 127.0f : 1.0f;
                   std::int32_t sum = 0;
#pragma omp simd reduction(+ : sum)
                   for (std::int64_t c = 0; c < cols; ++c) {
                     const float v = std::clamp(std::nearbyint(xr[c] / s), -127.0f, 127.0f);
                     const auto qv = static_cast<std::int32_t>(v);
                     qr[c] = static_cast<std::int8_t>(qv);
                     sum += qv;
                   }
                   scale[r] = s;
                   row_sum[r] = sum;
                 }
               });
  return bad_row.load();
}

std::int64_t quantize_rows_asymmetric_u8(const float* x, std::int64_t rows, std::int64_t cols,
                                         std::uint8_t* q, float* scale, std::int32_t* zero_point) {
  std::atomic<std::int64_t> bad_row{-1};
  parallel_for(0, rows, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(cols, 1)),
               [&](std::int64_t r0, std::int64_t r1) {
                 for (std::int64_t r = r0; r < r1; ++r) {
                   const float* xr = x + r * cols;
                   float lo = 0, hi = 0, probe = 0;  // probe: NaN if any value is inf or NaN
#pragma omp simd reduction(min : lo) reduction(max : hi) reduction(+ : probe)
                   for (std::int64_t c = 0; c < cols; ++c) {
                     const float v = xr[c];
                     lo = v < lo ? v : lo;  // (std::min's reference form stays scalar in GCC 12)
                     hi = v > hi ? v : hi;
                     probe += v * 0.0f;
                   }
                   std::uint8_t* qr = q + r * cols;
                   if (!std::isfinite(probe)) {  // as above
                     bad_row.store(r);
                     std::fill(qr, qr + cols, std::uint8_t{0});
                     scale[r] = 1.0f;
                     zero_point[r] = 0;
                     continue;
                   }
                   const float s = hi > lo ? (hi - lo) / 255.0f : 1.0f;
                   const float zp = std::clamp(std::nearbyint(-lo / s), 0.0f, 255.0f);
                   // A multiply, not a division per element (which costs as much as the GEMM's
                   // share of the row): x * (1/s) may differ from x / s in the last bit, which
                   // moves a value sitting exactly between two steps by one step at most.
                   const float inv = 1.0f / s;
#pragma omp simd
                   for (std::int64_t c = 0; c < cols; ++c) {
                     const float v = std::clamp(std::nearbyint(xr[c] * inv) + zp, 0.0f, 255.0f);
                     qr[c] = static_cast<std::uint8_t>(static_cast<std::int32_t>(v));
                   }
                   scale[r] = s;
                   zero_point[r] = static_cast<std::int32_t>(zp);
                 }
               });
  return bad_row.load();
}

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA
