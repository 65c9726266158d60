// Integer arithmetic of dynamically quantized Linear layers (nn/quantized/linear.h): uint8
// activations times int8 weights accumulated in int32, and the quantizers that produce them.
#pragma once

#include <cstdint>

namespace frugal::kernels::cpu {

// The largest k whose sums cannot overflow int32: |a * b| <= 255 * 128 per term.
inline constexpr std::int64_t kMaxQuantizedGemmK = 2147483647LL / (255 * 128);

// C = A B^T in int32: c[i*ldc + j] = sum_k a[i*lda + k] * b[j*ldb + k], for A m x k (uint8)
// and B n x k (int8, a Linear weight [out, in] as stored). Exact: no rounding, no saturation
// (k <= kMaxQuantizedGemmK, checked). Threads: parallel over rows of C, or over its columns
// when there are few rows.
void gemm_u8s8s32(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint8_t* a,
                  std::int64_t lda, const std::int8_t* b, std::int64_t ldb, std::int32_t* c,
                  std::int64_t ldc);

// Per-row symmetric int8: scale[r] = max|x[r, :]| / 127 (1 for an all-zero row) and
// q = clamp(round(x / scale), -127, 127), so |x - scale * q| <= scale / 2. row_sum[r] is the sum
// of row r's q (what an asymmetric activation's zero point multiplies). x: rows x cols floats.
// Returns a row holding inf or NaN (whose q are meaningless), or -1 when every value is finite:
// the caller raises the error, outside any parallel region.
std::int64_t quantize_rows_symmetric_s8(const float* x, std::int64_t rows, std::int64_t cols,
                                        std::int8_t* q, float* scale, std::int32_t* row_sum);

// Per-row asymmetric uint8 over [min(0, min x), max(0, max x)] (0 is exactly representable,
// as in PyTorch's quantize_per_tensor_dynamic): scale[r] = (hi - lo) / 255 (1 when hi == lo),
// zero_point[r] = round(-lo / scale), q = clamp(round(x * (1 / scale)) + zero_point, 0, 255), so
// |x - scale * (q - zero_point)| <= scale / 2. Returns a row holding inf or NaN, or -1.
std::int64_t quantize_rows_asymmetric_u8(const float* x, std::int64_t rows, std::int64_t cols,
                                         std::uint8_t* q, float* scale, std::int32_t* zero_point);

// A dynamically quantized Linear's product: gemm_u8s8s32's sums, rescaled to float as they
// come out of the dot products (no int32 matrix is stored):
//   y[i*ldy + j] = x_scale[i] * w_scale[j] * (sum_k a[i, k] b[j, k] - x_zero_point[i] * w_sum[j])
//                  + bias[j]
// with w_sum[j] = sum_k b[j, k] and bias null for none. Same threading and limits as the GEMM.
void quantized_linear_u8s8(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint8_t* a,
                           std::int64_t lda, const std::int8_t* b, std::int64_t ldb,
                           const float* x_scale, const std::int32_t* x_zero_point,
                           const float* w_scale, const std::int32_t* w_sum, const float* bias,
                           float* y, std::int64_t ldy);

}  // namespace frugal::kernels::cpu
