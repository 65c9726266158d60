// Dense matrix multiply on row-major device pointers (the BLAS gemm contract of
// kernels/cpu/gemm.h), single and strided-batched, through cuBLAS on the current stream.
#pragma once

#include <cstdint>

#include "common/half.h"

namespace frugal::kernels::cuda {

// C = alpha * op(A) * op(B) + beta * C, all row-major, exactly as cpu::gemm: op(A) is m x k,
// op(B) is k x n, C is m x n; lda, ldb, ldc are row pitches in elements. beta == 0 never reads
// C. T: float, double, Half, BFloat16 (16-bit types multiply and accumulate in float).
template <class T>
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
          const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
          std::int64_t ldc);

// `batch` independent gemms; matrix i of each operand starts at (pointer + i * stride_x). A
// stride of 0 shares one A or B matrix across the batch (C's stride must not be 0 when batch
// > 1: the products would race on it, as they would in cuBLAS).
template <class T>
void gemm_batched(bool trans_a, bool trans_b, std::int64_t batch, std::int64_t m, std::int64_t n,
                  std::int64_t k, T alpha, const T* a, std::int64_t lda, std::int64_t stride_a,
                  const T* b, std::int64_t ldb, std::int64_t stride_b, T beta, T* c,
                  std::int64_t ldc, std::int64_t stride_c);

}  // namespace frugal::kernels::cuda
