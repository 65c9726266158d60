// The CUDA batch-norm kernels: one block per channel sums over its n * hw values in double
// (two-pass for the variance) and writes the channel's coefficients; an elementwise kernel
// over all of [n, c, hw] then applies them, so every multiprocessor works even when c is small.
#include "kernels/cuda/batch_norm.h"

#include <limits>
#include <string>

#include "common/error.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/scratch.h"
#include "kernels/instantiations.h"

namespace frugal::kernels::cuda {

namespace {

constexpr int kChannelThreads = 512;

template <class P>
__device__ __forceinline__ double param(const P* p, std::int64_t ch, double absent) {
  return p ? static_cast<double>(p[ch]) : absent;
}

// The k-th of channel ch's n * hw values.
__device__ __forceinline__ std::int64_t channel_offset(std::int64_t k, std::int64_t ch,
                                                       std::int64_t c, std::int64_t hw) {
  const std::int64_t i = k / hw;
  return (i * c + ch) * hw + (k - i * hw);
}

// Block ch: mean and biased variance of channel ch; writes the saved and running statistics
// and the coefficients scale, shift with y = x * scale + shift.
template <class T>
__global__ void __launch_bounds__(kChannelThreads)
    forward_stats_kernel(const T* x, const compute_t<T>* weight, const compute_t<T>* bias,
                         compute_t<T>* running_mean, compute_t<T>* running_var, std::int64_t n,
                         std::int64_t c, std::int64_t hw, double momentum, double eps,
                         compute_t<T>* save_mean, compute_t<T>* save_invstd, compute_t<T>* scale,
                         compute_t<T>* shift) {
  using C = compute_t<T>;
  const std::int64_t ch = blockIdx.x, count = n * hw;
  double sum = 0;
  for (std::int64_t k = threadIdx.x; k < count; k += blockDim.x)
    sum += static_cast<double>(load(x + channel_offset(k, ch, c, hw)));
  const double mean = block_sum(sum) / static_cast<double>(count);
  double m2 = 0;
  for (std::int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    const double d = static_cast<double>(load(x + channel_offset(k, ch, c, hw))) - mean;
    m2 += d * d;
  }
  m2 = block_sum(m2);
  if (threadIdx.x != 0) return;
  const double cnt = static_cast<double>(count);
  const double invstd = 1.0 / sqrt(m2 / cnt + eps);
  const double k = param(weight, ch, 1.0) * invstd;
  scale[ch] = static_cast<C>(k);
  shift[ch] = static_cast<C>(param(bias, ch, 0.0) - mean * k);
  if (save_mean) save_mean[ch] = static_cast<C>(mean);
  if (save_invstd) save_invstd[ch] = static_cast<C>(invstd);
  if (running_mean)
    running_mean[ch] =
        static_cast<C>((1 - momentum) * static_cast<double>(running_mean[ch]) + momentum * mean);
  if (running_var)
    running_var[ch] = static_cast<C>((1 - momentum) * static_cast<double>(running_var[ch]) +
                                     momentum * m2 / (cnt - 1));
}

// The eval forward's coefficients from the running statistics, one thread per channel.
template <class C>
__global__ void eval_coefficients_kernel(const C* weight, const C* bias, const C* running_mean,
                                         const C* running_var, std::int64_t c, double eps, C* scale,
                                         C* shift) {
  FRUGAL_CUDA_KERNEL_LOOP(ch, c) {
    const double k = param(weight, ch, 1.0) / sqrt(static_cast<double>(running_var[ch]) + eps);
    scale[ch] = static_cast<C>(k);
    shift[ch] = static_cast<C>(param(bias, ch, 0.0) - static_cast<double>(running_mean[ch]) * k);
  }
}

// out = in * scale[channel] + shift[channel] (shift null: 0), then max(0, .) with relu; NaN
// stays NaN (the comparison is false).
template <class T>
__global__ void affine_kernel(const T* in, T* out, std::int64_t total, std::int64_t c,
                              std::int64_t hw, const compute_t<T>* scale, const compute_t<T>* shift,
                              bool relu) {
  using C = compute_t<T>;
  const C floor = relu ? C(0) : -std::numeric_limits<C>::infinity();
  FRUGAL_CUDA_KERNEL_LOOP(e, total) {
    const std::int64_t ch = (e / hw) % c;
    const C v = load(in + e) * scale[ch] + (shift ? shift[ch] : C(0));
    store(out + e, v < floor ? floor : v);
  }
}

// Block ch: sum(gy) and sum(gy * (x - mean)) over channel ch, mean and invstd being the saved
// statistics (train) or from the running ones (eval). Writes grad_bias, grad_weight, and, for
// the input gradient gx = gy * k + x * q + r, the coefficients (train: all three; eval: k only,
// and the sums are skipped when no parameter gradient is asked).
template <class T, bool kTrain>
__global__ void __launch_bounds__(kChannelThreads)
    backward_sums_kernel(const T* grad_y, const T* x, const compute_t<T>* weight,
                         const compute_t<T>* mean_in, const compute_t<T>* stat_in, double eps,
                         std::int64_t n, std::int64_t c, std::int64_t hw, compute_t<T>* grad_weight,
                         compute_t<T>* grad_bias, compute_t<T>* k, compute_t<T>* q,
                         compute_t<T>* r) {
  using C = compute_t<T>;
  const std::int64_t ch = blockIdx.x, count = n * hw;
  const double mean = static_cast<double>(mean_in[ch]);
  // stat_in: save_invstd (train) or running_var (eval).
  const double invstd = kTrain ? static_cast<double>(stat_in[ch])
                               : 1.0 / sqrt(static_cast<double>(stat_in[ch]) + eps);
  double sum_gy = 0, sum_gyx = 0;
  if (kTrain || grad_weight || grad_bias) {
    for (std::int64_t kk = threadIdx.x; kk < count; kk += blockDim.x) {
      const std::int64_t e = channel_offset(kk, ch, c, hw);
      const double g = static_cast<double>(load(grad_y + e));
      sum_gy += g;
      sum_gyx += g * (static_cast<double>(load(x + e)) - mean);
    }
    sum_gy = block_sum(sum_gy);
    sum_gyx = block_sum(sum_gyx);
  }
  if (threadIdx.x != 0) return;
  if (grad_bias) grad_bias[ch] = static_cast<C>(sum_gy);
  if (grad_weight) grad_weight[ch] = static_cast<C>(sum_gyx * invstd);
  if (!k) return;
  const double kw = param(weight, ch, 1.0) * invstd;
  k[ch] = static_cast<C>(kw);
  if constexpr (kTrain) {
    // gx = kw * (gy - sum_gy / M - (x - mean) * invstd^2 * sum_gyx / M)
    const double cnt = static_cast<double>(count);
    const double b = sum_gyx * invstd * invstd / cnt;
    q[ch] = static_cast<C>(-kw * b);
    r[ch] = static_cast<C>(kw * (mean * b - sum_gy / cnt));
  }
}

template <class T>
__global__ void grad_input_kernel(const T* grad_y, const T* x, T* grad_x, std::int64_t total,
                                  std::int64_t c, std::int64_t hw, const compute_t<T>* k,
                                  const compute_t<T>* q, const compute_t<T>* r) {
  FRUGAL_CUDA_KERNEL_LOOP(e, total) {
    const std::int64_t ch = (e / hw) % c;
    store(grad_x + e, load(grad_y + e) * k[ch] + load(x + e) * q[ch] + r[ch]);
  }
}

template <class T>
void launch_affine(const T* in, T* out, std::int64_t total, std::int64_t c, std::int64_t hw,
                   const compute_t<T>* scale, const compute_t<T>* shift, bool relu) {
  if (total == 0) return;
  affine_kernel<T>
      <<<blocks_for(total), kBlockSize, 0, stream()>>>(in, out, total, c, hw, scale, shift, relu);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

}  // namespace

template <class T>
void batch_norm_forward_train(const T* x, const compute_t<T>* weight, const compute_t<T>* bias,
                              compute_t<T>* running_mean, compute_t<T>* running_var, std::int64_t n,
                              std::int64_t c, std::int64_t hw, double momentum, double eps, T* y,
                              compute_t<T>* save_mean, compute_t<T>* save_invstd, bool relu) {
  using C = compute_t<T>;
  FRUGAL_CHECK(n >= 0 && c >= 0 && hw >= 0 && (c == 0 || n * hw > 1),
               "batch_norm: expected more than 1 value per channel when training, got input of "
               "shape [" +
                   std::to_string(n) + ", " + std::to_string(c) + ", " + std::to_string(hw) + "]");
  if (c == 0) return;
  Scratch coefficients(2 * static_cast<std::size_t>(c) * sizeof(C));
  C* scale = coefficients.get<C>();
  C* shift = scale + c;
  forward_stats_kernel<T><<<static_cast<unsigned>(c), kChannelThreads, 0, stream()>>>(
      x, weight, bias, running_mean, running_var, n, c, hw, momentum, eps, save_mean, save_invstd,
      scale, shift);
  FRUGAL_CUDA_CHECK_LAUNCH();
  launch_affine(x, y, n * c * hw, c, hw, scale, shift, relu);
}

template <class T>
void batch_norm_forward_eval(const T* x, const compute_t<T>* weight, const compute_t<T>* bias,
                             const compute_t<T>* running_mean, const compute_t<T>* running_var,
                             std::int64_t n, std::int64_t c, std::int64_t hw, double eps, T* y,
                             bool relu) {
  using C = compute_t<T>;
  FRUGAL_CHECK(n >= 0 && c >= 0 && hw >= 0, "batch_norm: bad input shape");
  if (n * c * hw == 0) return;
  Scratch coefficients(2 * static_cast<std::size_t>(c) * sizeof(C));
  C* scale = coefficients.get<C>();
  C* shift = scale + c;
  eval_coefficients_kernel<C><<<blocks_for(c), kBlockSize, 0, stream()>>>(
      weight, bias, running_mean, running_var, c, eps, scale, shift);
  FRUGAL_CUDA_CHECK_LAUNCH();
  launch_affine(x, y, n * c * hw, c, hw, scale, shift, relu);
}

template <class T>
void batch_norm_backward_train(const T* grad_y, const T* x, const compute_t<T>* weight,
                               const compute_t<T>* save_mean, const compute_t<T>* save_invstd,
                               std::int64_t n, std::int64_t c, std::int64_t hw, T* grad_x,
                               compute_t<T>* grad_weight, compute_t<T>* grad_bias) {
  using C = compute_t<T>;
  if ((!grad_x && !grad_weight && !grad_bias) || c == 0) return;
  const std::int64_t total = n * c * hw;
  const bool want_x = grad_x && total > 0;
  Scratch coefficients(3 * static_cast<std::size_t>(c) * sizeof(C));
  C* k = want_x ? coefficients.get<C>() : nullptr;
  C* q = want_x ? k + c : nullptr;
  C* r = want_x ? k + 2 * c : nullptr;
  backward_sums_kernel<T, true><<<static_cast<unsigned>(c), kChannelThreads, 0, stream()>>>(
      grad_y, x, weight, save_mean, save_invstd, 0.0, n, c, hw, grad_weight, grad_bias, k, q, r);
  FRUGAL_CUDA_CHECK_LAUNCH();
  if (!want_x) return;
  grad_input_kernel<T>
      <<<blocks_for(total), kBlockSize, 0, stream()>>>(grad_y, x, grad_x, total, c, hw, k, q, r);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

template <class T>
void batch_norm_backward_eval(const T* grad_y, const T* x, const compute_t<T>* weight,
                              const compute_t<T>* running_mean, const compute_t<T>* running_var,
                              double eps, std::int64_t n, std::int64_t c, std::int64_t hw,
                              T* grad_x, compute_t<T>* grad_weight, compute_t<T>* grad_bias) {
  using C = compute_t<T>;
  if ((!grad_x && !grad_weight && !grad_bias) || c == 0) return;
  const std::int64_t total = n * c * hw;
  const bool want_x = grad_x && total > 0;
  Scratch coefficients(static_cast<std::size_t>(c) * sizeof(C));
  C* k = want_x ? coefficients.get<C>() : nullptr;
  backward_sums_kernel<T, false><<<static_cast<unsigned>(c), kChannelThreads, 0, stream()>>>(
      grad_y, x, weight, running_mean, running_var, eps, n, c, hw, grad_weight, grad_bias, k,
      nullptr, nullptr);
  FRUGAL_CUDA_CHECK_LAUNCH();
  if (want_x) launch_affine<T>(grad_y, grad_x, total, c, hw, k, nullptr, false);
}

FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_BATCH_NORM)

}  // namespace frugal::kernels::cuda
