// The fused optimizer passes and gradient unscaling, parallel over contiguous chunks.
#include "kernels/cpu/optim.h"

#include <atomic>
#include <cmath>

#include "kernels/cpu/loops.h"
#include "kernels/cpu/parallel.h"

namespace frugal::kernels::cpu {

template <class T>
void sgd_step(T* param, const T* grad, T* buf, std::int64_t n, double lr, double momentum,
              double dampening, double weight_decay, bool nesterov, bool first_step) {
  const T l = static_cast<T>(lr), m = static_cast<T>(momentum), d = static_cast<T>(1 - dampening),
          wd = static_cast<T>(weight_decay);
  parallel_for(0, n, kElementwiseGrain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      T g = grad[i] + wd * param[i];
      if (momentum != 0) {
        buf[i] = first_step ? g : m * buf[i] + d * g;
        g = nesterov ? g + m * buf[i] : buf[i];
      }
      param[i] -= l * g;
    }
  });
}

template <class T>
void adamw_step(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, std::int64_t n, double lr,
                double beta1, double beta2, double eps, double weight_decay, std::int64_t step) {
  const double bias1 = 1 - std::pow(beta1, static_cast<double>(step));
  const double bias2_sqrt = std::sqrt(1 - std::pow(beta2, static_cast<double>(step)));
  const T decay = static_cast<T>(1 - lr * weight_decay), b1 = static_cast<T>(beta1),
          b2 = static_cast<T>(beta2), step_size = static_cast<T>(lr / bias1),
          inv_bias2_sqrt = static_cast<T>(1 / bias2_sqrt), e = static_cast<T>(eps);
  parallel_for(0, n, kElementwiseGrain, [&](std::int64_t b, std::int64_t end) {
    for (std::int64_t i = b; i < end; ++i) {
      const T g = grad[i];
      param[i] *= decay;
      exp_avg[i] = b1 * exp_avg[i] + (1 - b1) * g;
      exp_avg_sq[i] = b2 * exp_avg_sq[i] + (1 - b2) * g * g;
      param[i] -= step_size * exp_avg[i] / (std::sqrt(exp_avg_sq[i]) * inv_bias2_sqrt + e);
    }
  });
}

template <class T>
void non_finite_check_and_unscale(T* grad, std::int64_t n, float inv_scale, float* found_inf) {
  // PyTorch multiplies in float for float gradients (inv_scale is a float32 tensor there).
  const T s = static_cast<T>(inv_scale);
  parallel_for(0, n, kElementwiseGrain, [&](std::int64_t b, std::int64_t e) {
    bool non_finite = false;
    for (std::int64_t i = b; i < e; ++i) {
      non_finite |= !std::isfinite(grad[i]);
      grad[i] *= s;
    }
    // One flag for all chunks: set, never cleared, so the order of the stores does not matter.
    if (non_finite) std::atomic_ref<float>(*found_inf).store(1.0f, std::memory_order_relaxed);
  });
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

}  // namespace frugal::kernels::cpu
