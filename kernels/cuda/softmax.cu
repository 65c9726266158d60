// The CUDA softmax kernels. With inner == 1 a slice is a contiguous row, taken by a warp (short
// rows) or a block; otherwise a thread takes one (outer, inner) column, so that neighbouring
// threads read neighbouring memory at every step along the dim.
#include "kernels/cuda/softmax.h"

#include <limits>

#include "kernels/cuda/common.cuh"
#include "kernels/instantiations.h"

namespace frugal::kernels::cuda {

namespace {

// Rows up to this long take a warp each, longer ones a block.
constexpr std::int64_t kWarpRowMax = 1024;

enum class Kind { kSoftmax, kLogSoftmax, kSoftmaxBackward, kLogSoftmaxBackward };

// One row of `dim` elements per group of kGroup threads (a warp, or the whole block; the
// loop bound is uniform across a group, so the block's barriers are reached by all). For the
// forward kinds a is x and b is unused; for the backward kinds a is y and b is grad_y. Every
// element is written by the thread that read it, after the row's reductions, so out may alias
// a or b.
template <Kind kKind, int kGroup, class T>
__global__ void __launch_bounds__(kBlockSize)
    softmax_rows_kernel(const T* a, const T* b, T* out, std::int64_t rows, std::int64_t dim) {
  using C = compute_t<T>;
  const std::int64_t per_block = blockDim.x / kGroup;
  const int t = static_cast<int>(threadIdx.x % kGroup);
  for (std::int64_t row = blockIdx.x * per_block + threadIdx.x / kGroup; row < rows;
       row += gridDim.x * per_block) {
    const T* ar = a + row * dim;
    const T* br = b + row * dim;
    T* outr = out + row * dim;
    if constexpr (kKind == Kind::kSoftmax || kKind == Kind::kLogSoftmax) {
      C m = -std::numeric_limits<C>::infinity();
      for (std::int64_t i = t; i < dim; i += kGroup) {
        const C v = load(ar + i);
        m = v > m ? v : m;
      }
      m = group_max<kGroup>(m);
      double s = 0;
      for (std::int64_t i = t; i < dim; i += kGroup) s += exp_c(load(ar + i) - m);
      s = group_sum<kGroup>(s);
      if constexpr (kKind == Kind::kSoftmax) {
        const C inv = static_cast<C>(1.0 / s);
        for (std::int64_t i = t; i < dim; i += kGroup)
          store(outr + i, exp_c(load(ar + i) - m) * inv);
      } else {
        const C log_sum = static_cast<C>(log(s));
        for (std::int64_t i = t; i < dim; i += kGroup)
          store(outr + i, (load(ar + i) - m) - log_sum);
      }
    } else if constexpr (kKind == Kind::kSoftmaxBackward) {
      double s = 0;
      for (std::int64_t i = t; i < dim; i += kGroup)
        s += static_cast<double>(load(br + i)) * static_cast<double>(load(ar + i));
      const C sc = static_cast<C>(group_sum<kGroup>(s));
      for (std::int64_t i = t; i < dim; i += kGroup)
        store(outr + i, load(ar + i) * (load(br + i) - sc));
    } else {
      double s = 0;
      for (std::int64_t i = t; i < dim; i += kGroup) s += static_cast<double>(load(br + i));
      const C sc = static_cast<C>(group_sum<kGroup>(s));
      for (std::int64_t i = t; i < dim; i += kGroup)
        store(outr + i, load(br + i) - exp_c(load(ar + i)) * sc);
    }
  }
}

// One (outer, inner) column per thread, the dim strided by `inner`; a, b and out as above.
template <Kind kKind, class T>
__global__ void softmax_columns_kernel(const T* a, const T* b, T* out, std::int64_t outer,
                                       std::int64_t dim, std::int64_t inner) {
  using C = compute_t<T>;
  FRUGAL_CUDA_KERNEL_LOOP(c, outer * inner) {
    const std::int64_t base = (c / inner) * dim * inner + c % inner;
    const T* ac = a + base;
    const T* bc = b + base;
    T* outc = out + base;
    if constexpr (kKind == Kind::kSoftmax || kKind == Kind::kLogSoftmax) {
      C m = -std::numeric_limits<C>::infinity();
      for (std::int64_t d = 0; d < dim; ++d) {
        const C v = load(ac + d * inner);
        m = v > m ? v : m;
      }
      double s = 0;
      for (std::int64_t d = 0; d < dim; ++d) s += exp_c(load(ac + d * inner) - m);
      if constexpr (kKind == Kind::kSoftmax) {
        const C inv = static_cast<C>(1.0 / s);
        for (std::int64_t d = 0; d < dim; ++d)
          store(outc + d * inner, exp_c(load(ac + d * inner) - m) * inv);
      } else {
        const C log_sum = static_cast<C>(log(s));
        for (std::int64_t d = 0; d < dim; ++d)
          store(outc + d * inner, (load(ac + d * inner) - m) - log_sum);
      }
    } else if constexpr (kKind == Kind::kSoftmaxBackward) {
      double s = 0;
      for (std::int64_t d = 0; d < dim; ++d)
        s += static_cast<double>(load(bc + d * inner)) * static_cast<double>(load(ac + d * inner));
      const C sc = static_cast<C>(s);
      for (std::int64_t d = 0; d < dim; ++d)
        store(outc + d * inner, load(ac + d * inner) * (load(bc + d * inner) - sc));
    } else {
      double s = 0;
      for (std::int64_t d = 0; d < dim; ++d) s += static_cast<double>(load(bc + d * inner));
      const C sc = static_cast<C>(s);
      for (std::int64_t d = 0; d < dim; ++d)
        store(outc + d * inner, load(bc + d * inner) - exp_c(load(ac + d * inner)) * sc);
    }
  }
}

template <Kind kKind, class T>
void launch(const T* a, const T* b, T* out, std::int64_t outer, std::int64_t dim,
            std::int64_t inner) {
  if (outer <= 0 || dim <= 0 || inner <= 0) return;
  const cudaStream_t s = stream();
  if (inner > 1) {
    softmax_columns_kernel<kKind, T>
        <<<blocks_for(outer * inner), kBlockSize, 0, s>>>(a, b, out, outer, dim, inner);
  } else if (dim <= kWarpRowMax) {
    softmax_rows_kernel<kKind, 32, T>
        <<<blocks_for(outer, kBlockSize / 32), kBlockSize, 0, s>>>(a, b, out, outer, dim);
  } else {
    softmax_rows_kernel<kKind, kBlockSize, T>
        <<<blocks_for(outer, 1), kBlockSize, 0, s>>>(a, b, out, outer, dim);
  }
  FRUGAL_CUDA_CHECK_LAUNCH();
}

}  // namespace

template <class T>
void softmax(const T* x, T* y, std::int64_t outer, std::int64_t dim, std::int64_t inner) {
  launch<Kind::kSoftmax>(x, x, y, outer, dim, inner);
}

template <class T>
void log_softmax(const T* x, T* y, std::int64_t outer, std::int64_t dim, std::int64_t inner) {
  launch<Kind::kLogSoftmax>(x, x, y, outer, dim, inner);
}

template <class T>
void softmax_backward(const T* y, const T* grad_y, T* grad_x, std::int64_t outer, std::int64_t dim,
                      std::int64_t inner) {
  launch<Kind::kSoftmaxBackward>(y, grad_y, grad_x, outer, dim, inner);
}

template <class T>
void log_softmax_backward(const T* y, const T* grad_y, T* grad_x, std::int64_t outer,
                          std::int64_t dim, std::int64_t inner) {
  launch<Kind::kLogSoftmaxBackward>(y, grad_y, grad_x, outer, dim, inner);
}

FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_SOFTMAX)

}  // namespace frugal::kernels::cuda
