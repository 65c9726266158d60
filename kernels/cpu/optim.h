// Optimizer updates as single fused passes over contiguous parameters: one read of the
// gradient and the state and one write, no temporaries (PyTorch's "foreach"/fused idea).
#pragma once

#include <cstdint>

namespace frugal::kernels::cpu {

// PyTorch's SGD: g = grad + weight_decay * p; with momentum, buf = momentum * buf +
// (1 - dampening) * g (buf = g on the first step), then g = nesterov ? g + momentum * buf
// : buf; finally p -= lr * g. momentum_buffer may be null when momentum == 0.
// T: float, double.
template <class T>
void sgd_step(T* param, const T* grad, T* momentum_buffer, std::int64_t n, double lr,
              double momentum, double dampening, double weight_decay, bool nesterov,
              bool first_step);

// PyTorch's AdamW: p *= 1 - lr * weight_decay; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps), t the step number (from 1).
template <class T>
void adamw_step(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, std::int64_t n, double lr,
                double beta1, double beta2, double eps, double weight_decay, std::int64_t step);

// Mixed precision's gradient unscaling (PyTorch's _amp_non_finite_check_and_unscale_): grad *=
// inv_scale in place, and *found_inf = 1 when any element was inf or NaN before scaling (it is
// never reset to 0 here, so one flag can collect a whole set of gradients). found_inf lives
// where grad does. T: float, double.
template <class T>
void non_finite_check_and_unscale(T* grad, std::int64_t n, float inv_scale, float* found_inf);

}  // namespace frugal::kernels::cpu
