// The CUDA softmax and log-softmax over one dim of contiguous data seen as [outer, dim, inner],
// and their backward formulas, mirroring kernels/cpu/softmax.h on device pointers.
#pragma once

#include <cstdint>

#include "common/half.h"

namespace frugal::kernels::cuda {

// T: float, double, Half, BFloat16 (computed in float; sums in double, as on the CPU). y may
// alias x, and grad_x may alias grad_y. A row holding NaN gives NaN throughout. Asynchronous
// on the current stream; nothing is launched when any extent is 0.

// y = exp(x - max) / sum(exp(x - max)) along dim.
template <class T>
void softmax(const T* x, T* y, std::int64_t outer, std::int64_t dim, std::int64_t inner);

// y = x - max - log(sum(exp(x - max))) along dim.
template <class T>
void log_softmax(const T* x, T* y, std::int64_t outer, std::int64_t dim, std::int64_t inner);

// y is softmax's output: grad_x = y * (grad_y - sum(grad_y * y)).
template <class T>
void softmax_backward(const T* y, const T* grad_y, T* grad_x, std::int64_t outer, std::int64_t dim,
                      std::int64_t inner);

// y is log_softmax's output: grad_x = grad_y - exp(y) * sum(grad_y).
template <class T>
void log_softmax_backward(const T* y, const T* grad_y, T* grad_x, std::int64_t outer,
                          std::int64_t dim, std::int64_t inner);

}  // namespace frugal::kernels::cuda
