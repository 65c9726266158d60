// Softmax kernels. A slice with inner == 1 is a contiguous row, handled whole; otherwise the
// dim is strided by `inner`, and blocks of neighbouring columns are handled together so that
// every access still runs along contiguous memory.
#include "kernels/cpu/softmax.h"

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/softmax_rows.h"
#include "kernels/instantiations.h"

namespace frugal::kernels::cpu {

namespace {

using detail::exp_chunk;

constexpr std::int64_t kGrain = 32768;
constexpr int kBlock = 64;  // columns per block; at most detail::kExpChunk
static_assert(kBlock <= detail::kExpChunk);

// row(offset) for each row of a [outer, dim] problem, col(offset, w) for each block of w
// columns of an [outer, dim, inner] one; offset is the slice's first element.
template <class Row, class Col>
void for_each_slice(std::int64_t outer, std::int64_t dim, std::int64_t inner, const Row& row,
                    const Col& col) {
  if (outer <= 0 || dim <= 0 || inner <= 0) return;
  if (inner == 1) {
    parallel_for(0, outer, std::max<std::int64_t>(1, kGrain / dim),
                 [&](std::int64_t b, std::int64_t e) {
                   for (std::int64_t r = b; r < e; ++r) row(r * dim);
                 });
    return;
  }
  const std::int64_t blocks = (inner + kBlock - 1) / kBlock;
  const std::int64_t work = dim * std::min<std::int64_t>(inner, kBlock);
  parallel_for(0, outer * blocks, std::max<std::int64_t>(1, kGrain / work),
               [&](std::int64_t b, std::int64_t e) {
                 for (std::int64_t t = b; t < e; ++t) {
                   const std::int64_t j0 = (t % blocks) * kBlock;
                   const int w = static_cast<int>(std::min<std::int64_t>(kBlock, inner - j0));
                   col((t / blocks) * dim * inner + j0, w);
                 }
               });
}

template <class T>
void column_max(const T* x, std::int64_t dim, std::int64_t inner, int w, compute_t<T>* mx) {
  using C = compute_t<T>;
  for (int j = 0; j < w; ++j) mx[j] = -std::numeric_limits<C>::infinity();
  for (std::int64_t d = 0; d < dim; ++d)
    for (int j = 0; j < w; ++j) {
      const C v = static_cast<C>(x[d * inner + j]);
      mx[j] = v > mx[j] ? v : mx[j];
    }
}

// s[j] = sum over d of exp(x[d, j] - mx[j]), also stored to y when y is not null.
template <class T>
void column_exp_sum(const T* x, std::int64_t dim, std::int64_t inner, int w, const compute_t<T>* mx,
                    double* s, T* y) {
  compute_t<T> buf[kBlock];
  for (int j = 0; j < w; ++j) s[j] = 0;
  for (std::int64_t d = 0; d < dim; ++d) {
    exp_chunk<T, true>(x + d * inner, mx, w, buf);
    for (int j = 0; j < w; ++j) s[j] += buf[j];
    if (y)
      for (int j = 0; j < w; ++j) y[d * inner + j] = static_cast<T>(buf[j]);
  }
}

}  // namespace

template <class T>
void softmax(const T* x, T* y, std::int64_t outer, std::int64_t dim, std::int64_t inner) {
  using C = compute_t<T>;
  for_each_slice(
      outer, dim, inner,
      [&](std::int64_t off) {
        const C m = detail::row_max(x + off, dim);
        const C inv = static_cast<C>(1.0 / detail::exp_sum(x + off, dim, m, y + off));
        T* yr = y + off;
        for (std::int64_t i = 0; i < dim; ++i) yr[i] = static_cast<T>(static_cast<C>(yr[i]) * inv);
      },
      [&](std::int64_t off, int w) {
        C mx[kBlock], inv[kBlock];
        double s[kBlock];
        column_max(x + off, dim, inner, w, mx);
        column_exp_sum(x + off, dim, inner, w, mx, s, y + off);
        for (int j = 0; j < w; ++j) inv[j] = static_cast<C>(1.0 / s[j]);
        for (std::int64_t d = 0; d < dim; ++d) {
          T* yr = y + off + d * inner;
          for (int j = 0; j < w; ++j) yr[j] = static_cast<T>(static_cast<C>(yr[j]) * inv[j]);
        }
      });
}

template <class T>
void log_softmax(const T* x, T* y, std::int64_t outer, std::int64_t dim, std::int64_t inner) {
  using C = compute_t<T>;
  for_each_slice(
      outer, dim, inner,
      [&](std::int64_t off) {
        const C m = detail::row_max(x + off, dim);
        const C log_sum =
            static_cast<C>(std::log(detail::exp_sum(x + off, dim, m, static_cast<T*>(nullptr))));
        for (std::int64_t i = 0; i < dim; ++i)
          y[off + i] = static_cast<T>((static_cast<C>(x[off + i]) - m) - log_sum);
      },
      [&](std::int64_t off, int w) {
        C mx[kBlock], log_sum[kBlock];
        double s[kBlock];
        column_max(x + off, dim, inner, w, mx);
        column_exp_sum(x + off, dim, inner, w, mx, s, static_cast<T*>(nullptr));
        for (int j = 0; j < w; ++j) log_sum[j] = static_cast<C>(std::log(s[j]));
        for (std::int64_t d = 0; d < dim; ++d) {
          const T* xr = x + off + d * inner;
          T* yr = y + off + d * inner;
          for (int j = 0; j < w; ++j)
            yr[j] = static_cast<T>((static_cast<C>(xr[j]) - mx[j]) - log_sum[j]);
        }
      });
}

template <class T>
void softmax_backward(const T* y, const T* grad_y, T* grad_x, std::int64_t outer, std::int64_t dim,
                      std::int64_t inner) {
  using C = compute_t<T>;
  for_each_slice(
      outer, dim, inner,
      [&](std::int64_t off) {
        const C s = static_cast<C>(detail::dot_run(grad_y + off, y + off, dim));
        for (std::int64_t i = 0; i < dim; ++i)
          grad_x[off + i] =
              static_cast<T>(static_cast<C>(y[off + i]) * (static_cast<C>(grad_y[off + i]) - s));
      },
      [&](std::int64_t off, int w) {
        double acc[kBlock] = {};
        C s[kBlock];
        for (std::int64_t d = 0; d < dim; ++d) {
          const std::int64_t r = off + d * inner;
          for (int j = 0; j < w; ++j)
            acc[j] += detail::to_double(grad_y[r + j]) * detail::to_double(y[r + j]);
        }
        for (int j = 0; j < w; ++j) s[j] = static_cast<C>(acc[j]);
        for (std::int64_t d = 0; d < dim; ++d) {
          const std::int64_t r = off + d * inner;
          for (int j = 0; j < w; ++j)
            grad_x[r + j] =
                static_cast<T>(static_cast<C>(y[r + j]) * (static_cast<C>(grad_y[r + j]) - s[j]));
        }
      });
}

template <class T>
void log_softmax_backward(const T* y, const T* grad_y, T* grad_x, std::int64_t outer,
                          std::int64_t dim, std::int64_t inner) {
  using C = compute_t<T>;
  const C zero = 0;
  for_each_slice(
      outer, dim, inner,
      [&](std::int64_t off) {
        const C s = static_cast<C>(detail::sum_run(grad_y + off, dim, 1));
        C chunk[detail::kExpChunk];
        for (std::int64_t i = 0; i < dim; i += detail::kExpChunk) {
          const int m = static_cast<int>(std::min<std::int64_t>(detail::kExpChunk, dim - i));
          exp_chunk<T, false>(y + off + i, &zero, m, chunk);
          for (int k = 0; k < m; ++k)
            grad_x[off + i + k] =
                static_cast<T>(static_cast<C>(grad_y[off + i + k]) - chunk[k] * s);
        }
      },
      [&](std::int64_t off, int w) {
        double acc[kBlock] = {};
        C s[kBlock], chunk[kBlock];
        for (std::int64_t d = 0; d < dim; ++d)
          for (int j = 0; j < w; ++j) acc[j] += detail::to_double(grad_y[off + d * inner + j]);
        for (int j = 0; j < w; ++j) s[j] = static_cast<C>(acc[j]);
        for (std::int64_t d = 0; d < dim; ++d) {
          const std::int64_t r = off + d * inner;
          exp_chunk<T, false>(y + r, &zero, w, chunk);
          for (int j = 0; j < w; ++j)
            grad_x[r + j] = static_cast<T>(static_cast<C>(grad_y[r + j]) - chunk[j] * s[j]);
        }
      });
}

FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_SOFTMAX)

}  // namespace frugal::kernels::cpu
