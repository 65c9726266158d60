// CUDA mirror of kernels/cpu/optim.h: the fused one-pass optimizer updates on device pointers,
// same formulas and type set (float, double) as the CPU, launched on the thread's current stream.
#pragma once

#include <cstdint>

namespace frugal::kernels::cuda {

// PyTorch's SGD (see cpu::sgd_step). momentum_buffer may be null when momentum == 0.
template <class T>
void sgd_step(T* param, const T* grad, T* momentum_buffer, std::int64_t n, double lr,
              double momentum, double dampening, double weight_decay, bool nesterov,
              bool first_step);

// PyTorch's AdamW (see cpu::adamw_step); step counts from 1.
template <class T>
void adamw_step(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, std::int64_t n, double lr,
                double beta1, double beta2, double eps, double weight_decay, std::int64_t step);

// Gradient unscaling for mixed precision (see cpu::non_finite_check_and_unscale); found_inf is
// a device pointer, set to 1 by any thread that meets inf or NaN.
template <class T>
void non_finite_check_and_unscale(T* grad, std::int64_t n, float inv_scale, float* found_inf);

}  // namespace frugal::kernels::cuda
