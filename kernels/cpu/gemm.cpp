// gemm over raw row-major pointers: float and double map the operands in place for Eigen's
// GEMM (no copy, so the speed is Eigen's own); bfloat16 multiplies with vdpbf16ps where the
// level has AVX512_BF16 (gemm_dpbf16.h); other 16-bit cases multiply float tiles on the stack.
#include "kernels/cpu/isa_variant.h"

#include "kernels/cpu/gemm.h"

#include <Eigen/Core>
#include <algorithm>
#include <string>
#include <type_traits>

#include "common/error.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/gemm_dpbf16.h"
#include "kernels/cpu/parallel.h"
#include "kernels/instantiations.h"

namespace frugal::kernels::cpu::FRUGAL_CPU_ISA {

namespace {

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ConstMap = Eigen::Map<const RowMat<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <class T>
using MutMap = Eigen::Map<RowMat<T>, Eigen::Unaligned, Eigen::OuterStride<>>;

void check_args(const char* name, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
                std::int64_t k, std::int64_t lda, std::int64_t ldb, std::int64_t ldc) {
  FRUGAL_CHECK_FORMAT(m >= 0 && n >= 0 && k >= 0, "{}: negative size m={} n={} k={}", name, m, n,
                      k);
  const std::int64_t a_cols = trans_a ? m : k, b_cols = trans_b ? k : n;
  // An empty operand may carry any leading dimension, so 0 is accepted when a row is empty.
  FRUGAL_CHECK_FORMAT(lda >= a_cols && ldb >= b_cols && ldc >= n,
                      "{}: leading dimension smaller than a row (lda={} for {} columns, ldb={} "
                      "for {}, ldc={} for {})",
                      name, lda, a_cols, ldb, b_cols, ldc, n);
}

// The scalar factor and the transposes fold into Eigen's GEMM call; noalias() keeps Eigen
// from computing into a temporary first.
template <class T, class L, class R>
void eigen_product(MutMap<T>& c, const L& lhs, const R& rhs, T alpha, T beta) {
  if (beta == T(0)) {
    c.noalias() = alpha * lhs * rhs;
  } else {
    if (beta != T(1)) c *= beta;
    c.noalias() += alpha * lhs * rhs;
  }
}

template <class T>
void gemm_eigen(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
                const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
                std::int64_t ldc) {
  MutMap<T> cm(c, m, n, Eigen::OuterStride<>(ldc));
  ConstMap<T> am(a, trans_a ? k : m, trans_a ? m : k, Eigen::OuterStride<>(lda));
  ConstMap<T> bm(b, trans_b ? n : k, trans_b ? k : n, Eigen::OuterStride<>(ldb));
  if (trans_a) {
    if (trans_b) {
      eigen_product(cm, am.transpose(), bm.transpose(), alpha, beta);
    } else {
      eigen_product(cm, am.transpose(), bm, alpha, beta);
    }
  } else if (trans_b) {
    eigen_product(cm, am, bm.transpose(), alpha, beta);
  } else {
    eigen_product(cm, am, bm, alpha, beta);
  }
}

// Threads split C into one block of whole rows (or of columns, when C is wide) each, and each
// block is a single-threaded Eigen GEMM (Eigen runs one thread inside a parallel region).
// Measured here at 2 threads this beats Eigen's own threading by 15-45% on the shapes of
// linear layers ([128 x 3136] x [3136 x 128] and its two backward products) and matches it
// on large squares: no synchronisation between the threads' packing of shared panels.
constexpr std::int64_t kSplitMinMacs = std::int64_t{1} << 18;
constexpr std::int64_t kSplitAlign = 16;  // block edges on whole SIMD vectors

template <class T>
void gemm_split(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
                const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
                std::int64_t ldc) {
  const std::int64_t threads = in_parallel_region() ? 1 : get_num_threads();
  const bool by_rows = m >= n;
  const std::int64_t extent = by_rows ? m : n;
  const std::int64_t parts =
      std::min<std::int64_t>({threads, std::max<std::int64_t>(1, m * n * k / kSplitMinMacs),
                              std::max<std::int64_t>(1, extent / kSplitAlign)});
  if (parts <= 1) return gemm_eigen(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  const std::int64_t step = (extent / parts + kSplitAlign - 1) / kSplitAlign * kSplitAlign;
  parallel_for(0, parts, 1, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t part = p0; part < p1; ++part) {
      const std::int64_t lo = std::min(extent, part * step);
      const std::int64_t hi = part + 1 == parts ? extent : std::min(extent, lo + step);
      if (hi <= lo) continue;
      if (by_rows)  // rows lo..hi of op(A) and of C
        gemm_eigen(trans_a, trans_b, hi - lo, n, k, alpha, trans_a ? a + lo : a + lo * lda, lda, b,
                   ldb, beta, c + lo * ldc, ldc);
      else  // columns lo..hi of op(B) and of C
        gemm_eigen(trans_a, trans_b, m, hi - lo, k, alpha, a, lda, trans_b ? b + lo * ldb : b + lo,
                   ldb, beta, c + lo, ldc);
    }
  });
}

// 16-bit operands: tiles of op(A) and op(B) are widened to float on the stack (kernels do not
// allocate), multiplied by Eigen, and the float sum over all of k is rounded once at the end
// to Out (T itself, or float for gemm_bf16_to_float).
constexpr std::int64_t kTileM = 64, kTileN = 64, kTileK = 128;

template <class T, class Out>
void gemm_16bit(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                float alpha, const T* a, std::int64_t lda, const T* b, std::int64_t ldb, float beta,
                Out* c, std::int64_t ldc) {
  const std::int64_t tiles_m = (m + kTileM - 1) / kTileM, tiles_n = (n + kTileN - 1) / kTileN;
  const std::int64_t tiles = tiles_m * tiles_n;
  const std::int64_t grain = m * n * k >= (std::int64_t{1} << 18) ? 1 : tiles;
  parallel_for(0, tiles, grain, [&](std::int64_t t0, std::int64_t t1) {
    alignas(64) float at[kTileM * kTileK];
    alignas(64) float bt[kTileK * kTileN];
    alignas(64) float ct[kTileM * kTileN];
    for (std::int64_t t = t0; t < t1; ++t) {
      const std::int64_t i0 = (t / tiles_n) * kTileM, j0 = (t % tiles_n) * kTileN;
      const std::int64_t mb = std::min(kTileM, m - i0), nb = std::min(kTileN, n - j0);
      MutMap<float> cm(ct, mb, nb, Eigen::OuterStride<>(kTileN));
      if (k == 0) cm.setZero();
      for (std::int64_t k0 = 0; k0 < k; k0 += kTileK) {
        const std::int64_t kb = std::min(kTileK, k - k0);
        // Rows that are contiguous in memory widen sixteen at a time; transposed ones gather.
        for (std::int64_t i = 0; i < mb; ++i) {
          if (!trans_a) {
            to_float(a + (i0 + i) * lda + k0, at + i * kTileK, kb);
          } else {
            for (std::int64_t p = 0; p < kb; ++p)
              at[i * kTileK + p] = static_cast<float>(a[(k0 + p) * lda + i0 + i]);
          }
        }
        for (std::int64_t p = 0; p < kb; ++p) {
          if (!trans_b) {
            to_float(b + (k0 + p) * ldb + j0, bt + p * kTileN, nb);
          } else {
            for (std::int64_t j = 0; j < nb; ++j)
              bt[p * kTileN + j] = static_cast<float>(b[(j0 + j) * ldb + k0 + p]);
          }
        }
        ConstMap<float> am(at, mb, kb, Eigen::OuterStride<>(kTileK));
        ConstMap<float> bm(bt, kb, nb, Eigen::OuterStride<>(kTileN));
        if (k0 == 0) {
          cm.noalias() = am * bm;
        } else {
          cm.noalias() += am * bm;
        }
      }
      for (std::int64_t i = 0; i < mb; ++i) {
        Out* crow = c + (i0 + i) * ldc + j0;
        for (std::int64_t j = 0; j < nb; ++j) {
          const float prior = beta == 0.0f ? 0.0f : beta * static_cast<float>(crow[j]);
          crow[j] = static_cast<Out>(alpha * ct[i * kTileN + j] + prior);
        }
      }
    }
  });
}

// bfloat16 operands into Out (BFloat16 or float): vdpbf16ps where this level has it.
template <class Out>
void gemm_bf16(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
               float alpha, const BFloat16* a, std::int64_t lda, const BFloat16* b,
               std::int64_t ldb, float beta, Out* c, std::int64_t ldc) {
#if defined(__AVX512BF16__)
  dpbf16::gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#else
  gemm_16bit(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
}

}  // namespace

template <class T>
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
          const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
          std::int64_t ldc) {
  check_args("gemm", trans_a, trans_b, m, n, k, lda, ldb, ldc);
  if (m == 0 || n == 0) return;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (k == 0) {
      MutMap<T> cm(c, m, n, Eigen::OuterStride<>(ldc));
      if (beta == T(0)) {
        cm.setZero();
      } else {
        cm *= beta;
      }
      return;
    }
    gemm_split(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    gemm_bf16(trans_a, trans_b, m, n, k, static_cast<float>(alpha), a, lda, b, ldb,
              static_cast<float>(beta), c, ldc);
  } else {
    gemm_16bit(trans_a, trans_b, m, n, k, static_cast<float>(alpha), a, lda, b, ldb,
               static_cast<float>(beta), c, ldc);
  }
}

void gemm_bf16_to_float(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                        float alpha, const BFloat16* a, std::int64_t lda, const BFloat16* b,
                        std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  check_args("gemm_bf16_to_float", trans_a, trans_b, m, n, k, lda, ldb, ldc);
  if (m == 0 || n == 0) return;
  gemm_bf16(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template <class T>
void gemm_batched(bool trans_a, bool trans_b, std::int64_t batch, std::int64_t m, std::int64_t n,
                  std::int64_t k, T alpha, const T* a, std::int64_t lda, std::int64_t stride_a,
                  const T* b, std::int64_t ldb, std::int64_t stride_b, T beta, T* c,
                  std::int64_t ldc, std::int64_t stride_c) {
  check_args("gemm_batched", trans_a, trans_b, m, n, k, lda, ldb, ldc);
  FRUGAL_CHECK_FORMAT(batch >= 0, "gemm_batched: negative batch {}", batch);
  // Splitting the batch across threads needs no synchronisation inside a product, so it wins
  // whenever the matrices are too small for Eigen to thread well or the split is balanced.
  const std::int64_t threads = get_num_threads();
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const bool split_batch =
      batch > 1 && (work < 64.0 * 64.0 * 64.0 || batch % threads == 0 || batch >= 4 * threads);
  auto one = [&](std::int64_t i) {
    gemm(trans_a, trans_b, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b, ldb, beta,
         c + i * stride_c, ldc);
  };
  if (split_batch) {
    // Each thread gets at least 2^16 multiply-adds: below that a fork costs more than it saves.
    const auto grain = static_cast<std::int64_t>(std::max(1.0, 65536.0 / std::max(work, 1.0)));
    parallel_for(0, batch, grain, [&](std::int64_t b0, std::int64_t b1) {
      for (std::int64_t i = b0; i < b1; ++i) one(i);
    });
  } else {
    for (std::int64_t i = 0; i < batch; ++i) one(i);
  }
}

FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_GEMM)

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA
