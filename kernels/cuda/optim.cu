// The fused optimizer passes and gradient unscaling on the GPU: one thread per element
// (grid-stride) reads the gradient and state once and writes them once. Formulas and rounding
// follow kernels/cpu/optim.cpp: the scalar coefficients are cast to T on the host exactly as
// the CPU does, so results match.
#include "kernels/cuda/optim.h"

#include <cmath>

#include "kernels/cuda/common.cuh"

namespace frugal::kernels::cuda {
namespace {

template <class T>
__global__ void sgd_kernel(T* param, const T* grad, T* buf, std::int64_t n, T l, T m, T d, T wd,
                           bool use_momentum, bool nesterov, bool first_step) {
  FRUGAL_CUDA_KERNEL_LOOP(i, n) {
    T g = grad[i] + wd * param[i];
    if (use_momentum) {
      const T b = first_step ? g : m * buf[i] + d * g;
      buf[i] = b;
      g = nesterov ? g + m * b : b;
    }
    param[i] -= l * g;
  }
}

template <class T>
__global__ void adamw_kernel(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, std::int64_t n,
                             T decay, T b1, T b2, T step_size, T inv_bias2_sqrt, T e) {
  FRUGAL_CUDA_KERNEL_LOOP(i, n) {
    const T g = grad[i];
    const T p = param[i] * decay;
    const T m = b1 * exp_avg[i] + (T(1) - b1) * g;
    const T v = b2 * exp_avg_sq[i] + (T(1) - b2) * g * g;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    param[i] = p - step_size * m / (sqrt(v) * inv_bias2_sqrt + e);
  }
}

template <class T>
__global__ void unscale_kernel(T* grad, std::int64_t n, T inv_scale, float* found_inf) {
  FRUGAL_CUDA_KERNEL_LOOP(i, n) {
    const T g = grad[i];
    // Every writer stores the same 1, so the race between them is harmless (PyTorch's kernel
    // does the same); no thread ever stores 0.
    if (!isfinite(g)) *found_inf = 1.0f;
    grad[i] = g * inv_scale;
  }
}

}  // namespace

template <class T>
void non_finite_check_and_unscale(T* grad, std::int64_t n, float inv_scale, float* found_inf) {
  if (n <= 0) return;
  unscale_kernel<T>
      <<<blocks_for(n), kBlockSize, 0, stream()>>>(grad, n, static_cast<T>(inv_scale), found_inf);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

template <class T>
void sgd_step(T* param, const T* grad, T* buf, std::int64_t n, double lr, double momentum,
              double dampening, double weight_decay, bool nesterov, bool first_step) {
  if (n <= 0) return;
  sgd_kernel<T><<<blocks_for(n), kBlockSize, 0, stream()>>>(
      param, grad, buf, n, static_cast<T>(lr), static_cast<T>(momentum),
      static_cast<T>(1 - dampening), static_cast<T>(weight_decay), momentum != 0, nesterov,
      first_step);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

template <class T>
void adamw_step(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, std::int64_t n, double lr,
                double beta1, double beta2, double eps, double weight_decay, std::int64_t step) {
  if (n <= 0) return;
  const double bias1 = 1 - std::pow(beta1, static_cast<double>(step));
  const double bias2_sqrt = std::sqrt(1 - std::pow(beta2, static_cast<double>(step)));
  adamw_kernel<T><<<blocks_for(n), kBlockSize, 0, stream()>>>(
      param, grad, exp_avg, exp_avg_sq, n, static_cast<T>(1 - lr * weight_decay),
      static_cast<T>(beta1), static_cast<T>(beta2), static_cast<T>(lr / bias1),
      static_cast<T>(1 / bias2_sqrt), static_cast<T>(eps));
  FRUGAL_CUDA_CHECK_LAUNCH();
}

template void sgd_step<float>(float*, const float*, float*, std::int64_t, double, double, double,
                              double, bool, bool);
template void sgd_step<double>(double*, const double*, double*, std::int64_t, double, double,
                               double, double, bool, bool);
template void adamw_step<float>(float*, const float*, float*, float*, std::int64_t, double, double,
                                double, double, double, std::int64_t);
template void adamw_step<double>(double*, const double*, double*, double*, std::int64_t, double,
                                 double, double, double, double, std::int64_t);
template void non_finite_check_and_unscale<float>(float*, std::int64_t, float, float*);
template void non_finite_check_and_unscale<double>(double*, std::int64_t, float, float*);

}  // namespace frugal::kernels::cuda
