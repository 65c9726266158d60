// Depthwise 2-D convolution on CUDA devices (groups == C == O, NCHW contiguous, any kernel
// size, stride, padding and dilation) as direct kernels: cuDNN's convolution hands these shapes
// here. Same semantics as the CPU reference (kernels/cpu/conv.h with groups = C).
#pragma once

#include "common/half.h"
#include "kernels/cpu/conv.h"

namespace frugal::kernels::cuda {

using cpu::Conv2dParams;

// Whether p is a depthwise convolution: groups == C and O == C (C == 1 included).
bool is_depthwise(const cpu::Conv2dParams& p);

// All pointers are device pointers; the params stay on the host, where they are validated
// (cpu::validate_conv2d, then is_depthwise) before anything is launched: frugal::Error
// otherwise. Every call runs asynchronously on the current stream, needs no workspace, uses
// no atomics (results repeat bit for bit) and computes 16-bit types in float, double in
// double. Shapes: input [N, C, H, W], weight [C, 1, kH, kW], bias [C],
// output [N, C, out_h, out_w].
// T: float, double, Half, BFloat16.

// output = conv(input, weight) + bias; bias may be null.
template <class T>
void depthwise_conv2d_forward(const cpu::Conv2dParams& p, const T* input, const T* weight,
                              const T* bias, T* output);

// grad_input [N, C, H, W], overwritten, not accumulated.
template <class T>
void depthwise_conv2d_backward_input(const cpu::Conv2dParams& p, const T* grad_output,
                                     const T* weight, T* grad_input);

// grad_weight [C, 1, kH, kW] and, when grad_bias is not null, grad_bias [C] (grad_output
// summed over N, H, W); both overwritten (zeros when N == 0), summed in double.
template <class T>
void depthwise_conv2d_backward_weight(const cpu::Conv2dParams& p, const T* grad_output,
                                      const T* input, T* grad_weight, T* grad_bias);

}  // namespace frugal::kernels::cuda
