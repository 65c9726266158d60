// 2-D convolution on contiguous NCHW device pointers, mirroring kernels/cpu/conv.h: forward and
// the two backwards through cuDNN (depthwise ones through direct kernels), with workspace queries.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/half.h"
#include "kernels/cpu/conv.h"

namespace frugal::kernels::cuda {

using cpu::Conv2dParams;
using cpu::validate_conv2d;

// Workspace: each function below needs `*_workspace_bytes(p, threads)` bytes of device
// scratch (0: none, a null pointer is fine); `threads` is ignored on CUDA. The query picks the
// cuDNN algorithm (once per shape, parameters, type and device; cached) and returns its
// workspace size; a call given less than that throws frugal::Error.
// T: float, double, Half, BFloat16 (16-bit types compute in float, double in double).
template <class T>
std::size_t conv2d_forward_workspace_bytes(const Conv2dParams& p, int threads);
template <class T>
std::size_t conv2d_backward_input_workspace_bytes(const Conv2dParams& p, int threads);
template <class T>
std::size_t conv2d_backward_weight_workspace_bytes(const Conv2dParams& p, int threads);

// output = conv(input, weight) + bias; bias may be null.
template <class T>
void conv2d_forward(const Conv2dParams& p, const T* input, const T* weight, const T* bias,
                    T* output, void* workspace, std::size_t workspace_bytes);

// grad_input [N, C, H, W]; overwritten, not accumulated.
template <class T>
void conv2d_backward_input(const Conv2dParams& p, const T* grad_output, const T* weight,
                           T* grad_input, void* workspace, std::size_t workspace_bytes);

// grad_weight [O, C / groups, kH, kW] and, when grad_bias is not null, grad_bias [O]; both
// overwritten (zeros when N == 0).
template <class T>
void conv2d_backward_weight(const Conv2dParams& p, const T* grad_output, const T* input,
                            T* grad_weight, T* grad_bias, void* workspace,
                            std::size_t workspace_bytes);

}  // namespace frugal::kernels::cuda
