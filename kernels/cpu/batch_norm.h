// Batch normalisation over contiguous [n, c, hw] data (NCHW with hw = H*W, or [n, c] with
// hw = 1): training and eval forward, and the two backward formulas, per channel.
#pragma once

#include <cstdint>

#include "common/half.h"

namespace frugal::kernels::cpu {

// T: float, double, Half, BFloat16. Parameters and statistics have type compute_t<T> (float
// for 16-bit data, whose layer keeps float32 parameters). weight and bias may be null
// (affine=false: 1 and 0). All statistics are computed in double.

// relu: both forwards apply max(0, .) in the same pass (batch norm + ReLU fused, one pass
// fewer over the activation); the caller masks the gradient with relu_backward before the
// backward (measured faster than masking inside its two passes).
// Normalises with the batch's per-channel mean and biased variance; throws frugal::Error when
// a channel has fewer than two values (n * hw < 2), as PyTorch does. save_mean and
// save_invstd ([c], 1/sqrt(var + eps)) receive what the backward needs when not null.
// running_mean / running_var ([c], null when not tracked) move by `momentum` towards the
// batch mean and the unbiased batch variance; for PyTorch's momentum=None (a cumulative
// average) pass 1 / num_batches_tracked.
template <class T>
void batch_norm_forward_train(const T* x, const compute_t<T>* weight, const compute_t<T>* bias,
                              compute_t<T>* running_mean, compute_t<T>* running_var, std::int64_t n,
                              std::int64_t c, std::int64_t hw, double momentum, double eps, T* y,
                              compute_t<T>* save_mean, compute_t<T>* save_invstd,
                              bool relu = false);

// Normalises with the running statistics.
template <class T>
void batch_norm_forward_eval(const T* x, const compute_t<T>* weight, const compute_t<T>* bias,
                             const compute_t<T>* running_mean, const compute_t<T>* running_var,
                             std::int64_t n, std::int64_t c, std::int64_t hw, double eps, T* y,
                             bool relu = false);

// Backward of the training forward, from its save_mean and save_invstd. Each of grad_x
// ([n, c, hw]), grad_weight and grad_bias ([c]) may be null when not needed.
template <class T>
void batch_norm_backward_train(const T* grad_y, const T* x, const compute_t<T>* weight,
                               const compute_t<T>* save_mean, const compute_t<T>* save_invstd,
                               std::int64_t n, std::int64_t c, std::int64_t hw, T* grad_x,
                               compute_t<T>* grad_weight, compute_t<T>* grad_bias);

// Backward of the eval forward (the statistics are constants). x is read only for
// grad_weight.
template <class T>
void batch_norm_backward_eval(const T* grad_y, const T* x, const compute_t<T>* weight,
                              const compute_t<T>* running_mean, const compute_t<T>* running_var,
                              double eps, std::int64_t n, std::int64_t c, std::int64_t hw,
                              T* grad_x, compute_t<T>* grad_weight, compute_t<T>* grad_bias);

}  // namespace frugal::kernels::cpu
