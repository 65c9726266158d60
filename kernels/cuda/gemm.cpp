// cuBLAS behind the row-major gemm contract of kernels/cpu/gemm.h: a row-major product is the
// column-major product of the transposes, so each call swaps A and B and passes n before m.
#include "kernels/cuda/gemm.h"

#include <cublas_v2.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "common/error.h"
#include "kernels/cuda/cublas_library.h"
#include "kernels/cuda/handles.h"
#include "kernels/instantiations.h"

namespace frugal::kernels::cuda {

namespace {

// The same checks and messages as the CPU reference's.
void check_args(const char* name, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
                std::int64_t k, std::int64_t lda, std::int64_t ldb, std::int64_t ldc) {
  FRUGAL_CHECK(m >= 0 && n >= 0 && k >= 0,
               std::string(name) + ": negative size m=" + std::to_string(m) +
                   " n=" + std::to_string(n) + " k=" + std::to_string(k));
  const std::int64_t a_cols = trans_a ? m : k, b_cols = trans_b ? k : n;
  FRUGAL_CHECK(lda >= a_cols && ldb >= b_cols && ldc >= n,
               std::string(name) + ": leading dimension smaller than a row (lda=" +
                   std::to_string(lda) + " for " + std::to_string(a_cols) +
                   " columns, ldb=" + std::to_string(ldb) + " for " + std::to_string(b_cols) +
                   ", ldc=" + std::to_string(ldc) + " for " + std::to_string(n) + ")");
}

// The cuBLAS types for T: storage type, compute type and the type alpha and beta are passed
// in (the compute type's). float stays in true float32 (no TF32: the handle's math mode does
// not allow it); 16-bit types compute in float.
template <class T>
struct Types;
template <>
struct Types<float> {
  static constexpr cudaDataType data = CUDA_R_32F;
  static constexpr cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  using Scalar = float;
};
template <>
struct Types<double> {
  static constexpr cudaDataType data = CUDA_R_64F;
  static constexpr cublasComputeType_t compute = CUBLAS_COMPUTE_64F;
  using Scalar = double;
};
template <>
struct Types<Half> {
  static constexpr cudaDataType data = CUDA_R_16F;
  static constexpr cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  using Scalar = float;
};
template <>
struct Types<BFloat16> {
  static constexpr cudaDataType data = CUDA_R_16BF;
  static constexpr cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  using Scalar = float;
};

cublasOperation_t op(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

// cuBLAS wants every leading dimension >= 1 even where the matrix is empty (k == 0), when the
// CPU contract accepts 0; nothing is read then, so 1 is as good.
std::int64_t ld(std::int64_t v) { return v < 1 ? 1 : v; }

}  // namespace

template <class T>
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
          const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
          std::int64_t ldc) {
  check_args("gemm", trans_a, trans_b, m, n, k, lda, ldb, ldc);
  if (m == 0 || n == 0) return;
  using Ty = Types<T>;
  const auto alpha_s = static_cast<typename Ty::Scalar>(alpha);
  const auto beta_s = static_cast<typename Ty::Scalar>(beta);
  // With k == 0 cuBLAS sets C = beta * C, and with beta == 0 it writes C without reading it,
  // both as the CPU reference does.
  FRUGAL_CUBLAS_CHECK(cublas().gemm_ex(cublas_handle(), op(trans_b), op(trans_a), n, m, k, &alpha_s,
                                       b, Ty::data, ld(ldb), a, Ty::data, ld(lda), &beta_s, c,
                                       Ty::data, ld(ldc), Ty::compute, CUBLAS_GEMM_DEFAULT));
}

template <class T>
void gemm_batched(bool trans_a, bool trans_b, std::int64_t batch, std::int64_t m, std::int64_t n,
                  std::int64_t k, T alpha, const T* a, std::int64_t lda, std::int64_t stride_a,
                  const T* b, std::int64_t ldb, std::int64_t stride_b, T beta, T* c,
                  std::int64_t ldc, std::int64_t stride_c) {
  check_args("gemm_batched", trans_a, trans_b, m, n, k, lda, ldb, ldc);
  FRUGAL_CHECK(batch >= 0, "gemm_batched: negative batch " + std::to_string(batch));
  if (batch == 0 || m == 0 || n == 0) return;
  // The batch's products run concurrently on the GPU: a shared C would be a data race.
  FRUGAL_CHECK(batch == 1 || stride_c != 0, "gemm_batched: stride_c is 0 for a batch of " +
                                                std::to_string(batch) +
                                                " (the products would all write the same C)");
  using Ty = Types<T>;
  const auto alpha_s = static_cast<typename Ty::Scalar>(alpha);
  const auto beta_s = static_cast<typename Ty::Scalar>(beta);
  FRUGAL_CUBLAS_CHECK(cublas().gemm_strided_batched_ex(
      cublas_handle(), op(trans_b), op(trans_a), n, m, k, &alpha_s, b, Ty::data, ld(ldb),
      static_cast<long long>(stride_b), a, Ty::data, ld(lda), static_cast<long long>(stride_a),
      &beta_s, c, Ty::data, ld(ldc), static_cast<long long>(stride_c), batch, Ty::compute,
      CUBLAS_GEMM_DEFAULT));
}

FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_GEMM)

}  // namespace frugal::kernels::cuda
