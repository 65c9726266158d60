// The CUDA batch normalisation over contiguous [n, c, hw] data, mirroring
// kernels/cpu/batch_norm.h (same signatures and semantics) on device pointers.
#pragma once

#include <cstdint>

#include "common/half.h"

namespace frugal::kernels::cuda {

// T: float, double, Half, BFloat16; parameters and statistics compute_t<T> (float for 16-bit
// data); weight, bias and the optional outputs may be null, as on the CPU. One block per
// channel takes the statistics (two-pass, in double), then an elementwise kernel normalises.
// Asynchronous on the current stream; the [c] outputs are written even when n * hw == 0.

template <class T>
void batch_norm_forward_train(const T* x, const compute_t<T>* weight, const compute_t<T>* bias,
                              compute_t<T>* running_mean, compute_t<T>* running_var, std::int64_t n,
                              std::int64_t c, std::int64_t hw, double momentum, double eps, T* y,
                              compute_t<T>* save_mean, compute_t<T>* save_invstd,
                              bool relu = false);

template <class T>
void batch_norm_forward_eval(const T* x, const compute_t<T>* weight, const compute_t<T>* bias,
                             const compute_t<T>* running_mean, const compute_t<T>* running_var,
                             std::int64_t n, std::int64_t c, std::int64_t hw, double eps, T* y,
                             bool relu = false);

template <class T>
void batch_norm_backward_train(const T* grad_y, const T* x, const compute_t<T>* weight,
                               const compute_t<T>* save_mean, const compute_t<T>* save_invstd,
                               std::int64_t n, std::int64_t c, std::int64_t hw, T* grad_x,
                               compute_t<T>* grad_weight, compute_t<T>* grad_bias);

template <class T>
void batch_norm_backward_eval(const T* grad_y, const T* x, const compute_t<T>* weight,
                              const compute_t<T>* running_mean, const compute_t<T>* running_var,
                              double eps, std::int64_t n, std::int64_t c, std::int64_t hw,
                              T* grad_x, compute_t<T>* grad_weight, compute_t<T>* grad_bias);

}  // namespace frugal::kernels::cuda
