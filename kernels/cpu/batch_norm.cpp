// Batch-norm kernels. Work is split by channel: with hw > 1 one channel at a time (its planes
// are contiguous runs), with hw == 1 blocks of neighbouring channels (a row of [n, c] holds
// them side by side). A channel's statistics are taken two-pass per plane, in cache, so the
// forward reads the input from memory twice at most: once for statistics, once to normalise.
#include "kernels/cpu/isa_variant.h"

#include "kernels/cpu/batch_norm.h"
#include "kernels/cpu/batch_norm_planes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/accumulate.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/parallel.h"
#include "kernels/instantiations.h"

namespace frugal::kernels::cpu::FRUGAL_CPU_ISA {

namespace {

using namespace batch_norm_planes;
using detail::kLanes;
using detail::Moments;
using detail::to_double;

constexpr std::int64_t kGrain = 32768;
constexpr int kBlock = 64;  // channels per block when hw == 1
// With hw > 1, a block is as many neighbouring channels as make a run of about this many
// elements: one sample's planes of a block are contiguous, so a block is read as n runs.
constexpr std::int64_t kContiguous = 1024;

struct Shape {
  std::int64_t n, c, hw;
  std::int64_t offset(std::int64_t i, std::int64_t ch) const { return (i * c + ch) * hw; }
  double count() const { return static_cast<double>(n * hw); }
};

// fn(ch0, w) for blocks of channels covering [0, c), in parallel.
template <class F>
void for_each_block(const Shape& s, const F& fn) {
  const int width = s.hw == 1 ? kBlock
                              : static_cast<int>(std::clamp<std::int64_t>(
                                    kContiguous / std::max<std::int64_t>(1, s.hw), 1, kBlock));
  const std::int64_t blocks = (s.c + width - 1) / width;
  const std::int64_t work = std::max<std::int64_t>(1, s.n * s.hw * width);
  parallel_for(0, blocks, std::max<std::int64_t>(1, kGrain / work),
               [&](std::int64_t b, std::int64_t e) {
                 for (std::int64_t k = b; k < e; ++k) {
                   const std::int64_t ch0 = k * width;
                   fn(ch0, static_cast<int>(std::min<std::int64_t>(width, s.c - ch0)));
                 }
               });
}

// fn(ch, offset) for every plane of hw > 1 data, in memory order, in parallel: the passes that
// need no statistics stream the tensor front to back. (Channel by channel, consecutive planes
// are c * hw elements apart: a new page per plane, which the prefetcher does not follow.)
template <class F>
void for_each_plane(const Shape& s, const F& fn) {
  parallel_for(0, s.n * s.c, plane_grain(s.hw), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t p = b; p < e; ++p) fn(p % s.c, p * s.hw);
  });
}

template <class T>
void block_moments(const T* x, const Shape& s, std::int64_t ch0, int w, Moments* m) {
  if (s.hw == 1) {
    double sum[kBlock] = {}, m2[kBlock] = {}, mean[kBlock];
    for (std::int64_t i = 0; i < s.n; ++i)
      for (int j = 0; j < w; ++j) sum[j] += to_double(x[i * s.c + ch0 + j]);
    for (int j = 0; j < w; ++j) mean[j] = sum[j] / static_cast<double>(s.n);
    for (std::int64_t i = 0; i < s.n; ++i)
      for (int j = 0; j < w; ++j) {
        const double d = to_double(x[i * s.c + ch0 + j]) - mean[j];
        m2[j] += d * d;
      }
    for (int j = 0; j < w; ++j) m[j] = Moments{static_cast<double>(s.n), mean[j], m2[j]};
    return;
  }
  for (int j = 0; j < w; ++j) m[j] = Moments{};
  for (std::int64_t i = 0; i < s.n; ++i)
    for (int j = 0; j < w; ++j) m[j].merge(plane_moments(x + s.offset(i, ch0 + j), s.hw));
}

// out = in * scale[channel] + shift[channel], then max(0, .) with relu (NaN stays NaN).
template <class T>
void block_affine(const T* in, T* out, const Shape& s, std::int64_t ch0, int w,
                  const compute_t<T>* scale, const compute_t<T>* shift, bool relu = false) {
  using C = compute_t<T>;
  const C floor = relu ? C(0) : -std::numeric_limits<C>::infinity();
  if (s.hw == 1) {
    for (std::int64_t i = 0; i < s.n; ++i) {
      const T* a = in + i * s.c + ch0;
      T* o = out + i * s.c + ch0;
      for (int j = 0; j < w; ++j) {
        const C v = static_cast<C>(a[j]) * scale[j] + shift[j];
        o[j] = static_cast<T>(v < floor ? floor : v);
      }
    }
    return;
  }
  for (std::int64_t i = 0; i < s.n; ++i)
    for (int j = 0; j < w; ++j)
      plane_affine(in + s.offset(i, ch0 + j), out + s.offset(i, ch0 + j), s.hw, scale[j], shift[j],
                   floor);
}

// sum_gy = sum(gy), sum_gyx = sum(gy * (x - mean)) per channel, in one pass over both.
template <class T>
void block_grad_sums(const T* gy, const T* x, const Shape& s, std::int64_t ch0, int w,
                     const double* mean, double* sum_gy, double* sum_gyx) {
  for (int j = 0; j < w; ++j) sum_gy[j] = sum_gyx[j] = 0;
  if (s.hw == 1) {
    for (std::int64_t i = 0; i < s.n; ++i)
      for (int j = 0; j < w; ++j) {
        const std::int64_t e = i * s.c + ch0 + j;
        const double g = to_double(gy[e]);
        sum_gy[j] += g;
        sum_gyx[j] += g * (to_double(x[e]) - mean[j]);
      }
    return;
  }
  using C = compute_t<T>;
  C m[kBlock];
  for (int j = 0; j < w; ++j) m[j] = static_cast<C>(mean[j]);
  for (std::int64_t i = 0; i < s.n; ++i)
    for (int j = 0; j < w; ++j)
      plane_grad_sums(gy + s.offset(i, ch0 + j), x + s.offset(i, ch0 + j), s.hw, m[j], &sum_gy[j],
                      &sum_gyx[j]);
}

// gx = gy * k + x * q + r per channel: the training backward's input gradient, expanded.
template <class T>
void block_grad_input(const T* gy, const T* x, T* gx, const Shape& s, std::int64_t ch0, int w,
                      const compute_t<T>* k, const compute_t<T>* q, const compute_t<T>* r) {
  using C = compute_t<T>;
  if (s.hw == 1) {
    for (std::int64_t i = 0; i < s.n; ++i) {
      const std::int64_t off = i * s.c + ch0;
      for (int j = 0; j < w; ++j)
        gx[off + j] = static_cast<T>(static_cast<C>(gy[off + j]) * k[j] +
                                     static_cast<C>(x[off + j]) * q[j] + r[j]);
    }
    return;
  }
  for (std::int64_t i = 0; i < s.n; ++i)
    for (int j = 0; j < w; ++j) {
      const std::int64_t off = s.offset(i, ch0 + j);
      plane_grad_input(gy + off, x + off, gx + off, s.hw, k[j], q[j], r[j]);
    }
}

template <class P>
double param(const P* p, std::int64_t ch, double absent) {
  return p ? static_cast<double>(p[ch]) : absent;
}

}  // namespace

template <class T>
void batch_norm_forward_train(const T* x, const compute_t<T>* weight, const compute_t<T>* bias,
                              compute_t<T>* running_mean, compute_t<T>* running_var, std::int64_t n,
                              std::int64_t c, std::int64_t hw, double momentum, double eps, T* y,
                              compute_t<T>* save_mean, compute_t<T>* save_invstd, bool relu) {
  using C = compute_t<T>;
  const Shape s{n, c, hw};
  FRUGAL_CHECK_FORMAT(n >= 0 && c >= 0 && hw >= 0 && (c == 0 || n * hw > 1),
                      "batch_norm: expected more than 1 value per channel when training, got "
                      "input of shape [{}, {}, {}]",
                      n, c, hw);
  for_each_block(s, [&](std::int64_t ch0, int w) {
    Moments m[kBlock];
    C scale[kBlock], shift[kBlock];
    block_moments(x, s, ch0, w, m);
    for (int j = 0; j < w; ++j) {
      const std::int64_t ch = ch0 + j;
      const double invstd = 1.0 / std::sqrt(m[j].m2 / s.count() + eps);
      const double k = param(weight, ch, 1.0) * invstd;
      scale[j] = static_cast<C>(k);
      shift[j] = static_cast<C>(param(bias, ch, 0.0) - m[j].mean * k);
      if (save_mean) save_mean[ch] = static_cast<C>(m[j].mean);
      if (save_invstd) save_invstd[ch] = static_cast<C>(invstd);
      if (running_mean)
        running_mean[ch] = static_cast<C>((1 - momentum) * running_mean[ch] + momentum * m[j].mean);
      if (running_var)
        running_var[ch] =
            static_cast<C>((1 - momentum) * running_var[ch] + momentum * m[j].m2 / (s.count() - 1));
    }
    block_affine(x, y, s, ch0, w, scale, shift, relu);
  });
}

template <class T>
void batch_norm_forward_eval(const T* x, const compute_t<T>* weight, const compute_t<T>* bias,
                             const compute_t<T>* running_mean, const compute_t<T>* running_var,
                             std::int64_t n, std::int64_t c, std::int64_t hw, double eps, T* y,
                             bool relu) {
  using C = compute_t<T>;
  const Shape s{n, c, hw};
  auto affine_of = [&](std::int64_t ch, C* scale, C* shift) {
    const double k = param(weight, ch, 1.0) / std::sqrt(static_cast<double>(running_var[ch]) + eps);
    *scale = static_cast<C>(k);
    *shift = static_cast<C>(param(bias, ch, 0.0) - static_cast<double>(running_mean[ch]) * k);
  };
  if (hw == 1) {
    for_each_block(s, [&](std::int64_t ch0, int w) {
      C scale[kBlock], shift[kBlock];
      for (int j = 0; j < w; ++j) affine_of(ch0 + j, &scale[j], &shift[j]);
      block_affine(x, y, s, ch0, w, scale, shift, relu);
    });
    return;
  }
  std::vector<C> scale(static_cast<std::size_t>(c)), shift(scale.size());
  for (std::int64_t ch = 0; ch < c; ++ch) affine_of(ch, &scale[ch], &shift[ch]);
  const C floor = relu ? C(0) : -std::numeric_limits<C>::infinity();
  for_each_plane(s, [&](std::int64_t ch, std::int64_t off) {
    plane_affine(x + off, y + off, hw, scale[ch], shift[ch], floor);
  });
}

template <class T>
void batch_norm_backward_train(const T* grad_y, const T* x, const compute_t<T>* weight,
                               const compute_t<T>* save_mean, const compute_t<T>* save_invstd,
                               std::int64_t n, std::int64_t c, std::int64_t hw, T* grad_x,
                               compute_t<T>* grad_weight, compute_t<T>* grad_bias) {
  using C = compute_t<T>;
  if (!grad_x && !grad_weight && !grad_bias) return;
  const Shape s{n, c, hw};
  for_each_block(s, [&](std::int64_t ch0, int w) {
    double mean[kBlock] = {}, sum_gy[kBlock] = {}, sum_gyx[kBlock] = {};
    C k[kBlock], q[kBlock], r[kBlock];
    for (int j = 0; j < w; ++j) mean[j] = static_cast<double>(save_mean[ch0 + j]);
    block_grad_sums(grad_y, x, s, ch0, w, mean, sum_gy, sum_gyx);
    for (int j = 0; j < w; ++j) {
      const std::int64_t ch = ch0 + j;
      const double invstd = static_cast<double>(save_invstd[ch]);
      if (grad_bias) grad_bias[ch] = static_cast<C>(sum_gy[j]);
      if (grad_weight) grad_weight[ch] = static_cast<C>(sum_gyx[j] * invstd);
      // gx = kk * (gy - sum_gy / M - (x - mean) * invstd^2 * sum_gyx / M)
      const double kk = param(weight, ch, 1.0) * invstd;
      const double b = sum_gyx[j] * invstd * invstd / s.count();
      k[j] = static_cast<C>(kk);
      q[j] = static_cast<C>(-kk * b);
      r[j] = static_cast<C>(kk * (mean[j] * b - sum_gy[j] / s.count()));
    }
    if (grad_x) block_grad_input(grad_y, x, grad_x, s, ch0, w, k, q, r);
  });
}

template <class T>
void batch_norm_backward_eval(const T* grad_y, const T* x, const compute_t<T>* weight,
                              const compute_t<T>* running_mean, const compute_t<T>* running_var,
                              double eps, std::int64_t n, std::int64_t c, std::int64_t hw,
                              T* grad_x, compute_t<T>* grad_weight, compute_t<T>* grad_bias) {
  using C = compute_t<T>;
  const Shape s{n, c, hw};
  for_each_block(s, [&](std::int64_t ch0, int w) {
    double mean[kBlock] = {}, invstd[kBlock] = {}, sum_gy[kBlock] = {}, sum_gyx[kBlock] = {};
    C k[kBlock], zero[kBlock] = {};
    for (int j = 0; j < w; ++j) {
      mean[j] = static_cast<double>(running_mean[ch0 + j]);
      invstd[j] = 1.0 / std::sqrt(static_cast<double>(running_var[ch0 + j]) + eps);
      k[j] = static_cast<C>(param(weight, ch0 + j, 1.0) * invstd[j]);
    }
    if (grad_weight || grad_bias) {
      block_grad_sums(grad_y, x, s, ch0, w, mean, sum_gy, sum_gyx);
      for (int j = 0; j < w; ++j) {
        if (grad_bias) grad_bias[ch0 + j] = static_cast<C>(sum_gy[j]);
        if (grad_weight) grad_weight[ch0 + j] = static_cast<C>(sum_gyx[j] * invstd[j]);
      }
    }
    if (grad_x) block_affine(grad_y, grad_x, s, ch0, w, k, zero);
  });
}

FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_BATCH_NORM)

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA
