// CUDA mirror of kernels/cpu/pool.h: 2-D max / average / adaptive average pooling on contiguous
// NCHW device pointers, forward and backward, same parameters and type set as the CPU.
#pragma once

#include <cstdint>

#include "common/half.h"
#include "kernels/cpu/pool.h"

namespace frugal::kernels::cuda {

using cpu::AdaptivePool2dParams;
using cpu::Pool2dParams;
using cpu::validate_adaptive_pool2d;
using cpu::validate_pool2d;

// T: float, double, Half, BFloat16 (computing in float for the 16-bit types). Parameters are
// validated on the host (same errors as the CPU) before anything is launched.

// indices (may be null): h * W + w of each window's first maximum; a NaN wins.
template <class T>
void max_pool2d_forward(const Pool2dParams& p, const T* input, T* output, std::int64_t* indices);

// Overwrites grad_input. Gathers: each input element sums the gradients of the windows that
// contain it and whose index names it (indices outside the window are ignored, not reported).
template <class T>
void max_pool2d_backward(const Pool2dParams& p, const T* grad_output, const std::int64_t* indices,
                         T* grad_input);

// Compact indices: each maximum's place kh * kW + kw inside its window, one byte.
template <class T>
void max_pool2d_forward_compact(const Pool2dParams& p, const T* input, T* output,
                                std::uint8_t* window_index);
template <class T>
void max_pool2d_backward_compact(const Pool2dParams& p, const T* grad_output,
                                 const std::uint8_t* window_index, T* grad_input);

template <class T>
void avg_pool2d_forward(const Pool2dParams& p, const T* input, T* output);

// Overwrites grad_input.
template <class T>
void avg_pool2d_backward(const Pool2dParams& p, const T* grad_output, T* grad_input);

template <class T>
void adaptive_avg_pool2d_forward(const AdaptivePool2dParams& p, const T* input, T* output);

// Overwrites grad_input.
template <class T>
void adaptive_avg_pool2d_backward(const AdaptivePool2dParams& p, const T* grad_output,
                                  T* grad_input);

}  // namespace frugal::kernels::cuda
