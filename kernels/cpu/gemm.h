// Dense matrix multiply on row-major raw pointers (the BLAS gemm contract), single and batched.
// float and double run Eigen's GEMM in place; Half and BFloat16 compute in float (BFloat16 with
// vdpbf16ps on CPUs with AVX512_BF16).
#pragma once

#include <cstdint>

#include "common/half.h"

namespace frugal::kernels::cpu {

// C = alpha * op(A) * op(B) + beta * C, all row-major: op(A) is m x k, op(B) is k x n, C is
// m x n. With trans_a, `a` holds the k x m matrix A (so op(A) = A^T); likewise trans_b.
// lda, ldb, ldc are the distances in elements between consecutive rows as stored. beta == 0
// never reads C, so C may be uninitialised. C must not overlap A or B.
// Threads: Eigen's OpenMP team of get_num_threads(); one thread inside a parallel_for body.
// T: float, double, Half, BFloat16 (16-bit types accumulate in float).
template <class T>
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
          const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
          std::int64_t ldc);

// gemm with bfloat16 operands and a float C: the float sum is kept, not rounded to bfloat16, so
// a caller that accumulates over several calls (a convolution's taps or tiles) rounds once.
// Same contract as gemm otherwise.
void gemm_bf16_to_float(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                        float alpha, const BFloat16* a, std::int64_t lda, const BFloat16* b,
                        std::int64_t ldb, float beta, float* c, std::int64_t ldc);

// `batch` independent gemms; matrix i of each operand starts at (pointer + i * stride_x).
// A stride of 0 shares one matrix across the batch (a weight, say). Small matrices run in
// parallel over the batch, large ones one after another with a threaded GEMM each.
template <class T>
void gemm_batched(bool trans_a, bool trans_b, std::int64_t batch, std::int64_t m, std::int64_t n,
                  std::int64_t k, T alpha, const T* a, std::int64_t lda, std::int64_t stride_a,
                  const T* b, std::int64_t ldb, std::int64_t stride_b, T beta, T* c,
                  std::int64_t ldc, std::int64_t stride_c);

}  // namespace frugal::kernels::cpu
