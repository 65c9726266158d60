// 2-D convolution on contiguous NCHW device pointers, mirroring kernels/cpu/conv.h: forward and
// the two backwards through cuDNN (depthwise ones through direct kernels), with workspace queries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/half.h"
#include "kernels/cpu/conv.h"

namespace frugal::kernels::cuda {

using cpu::Conv2dParams;
using cpu::validate_conv2d;

// Workspace: each function below runs fastest with `*_workspace_bytes(p, threads)` bytes of
// device scratch (0: none, a null pointer is fine); `threads` is ignored on CUDA. The query
// ranks cuDNN's algorithms (once per shape, parameters, type and device; cached) and returns
// the preferred one's workspace size. A call given less runs the best algorithm that fits in
// what it was given (a null workspace counts as 0 bytes); only when none fits does it throw
// frugal::Error.
// T: float, double, Half, BFloat16 (16-bit types compute in float, double in double).
template <class T>
std::size_t conv2d_forward_workspace_bytes(const Conv2dParams& p, int threads);
template <class T>
std::size_t conv2d_backward_input_workspace_bytes(const Conv2dParams& p, int threads);
template <class T>
std::size_t conv2d_backward_weight_workspace_bytes(const Conv2dParams& p, int threads);

// The workspace sizes worth trying when the preferred one cannot be allocated: the preferred
// algorithm's first, then each next-ranked algorithm's that needs less than all before it,
// down to the smallest (0 where cuDNN offers a workspace-free algorithm for the shape, which
// it normally does). Given sizes[i] bytes, a call runs the algorithm that size came from.
// {0} for depthwise shapes and N == 0. (CUDA only: the CPU's workspace is required.)
template <class T>
std::vector<std::size_t> conv2d_forward_workspace_fallbacks(const Conv2dParams& p);
template <class T>
std::vector<std::size_t> conv2d_backward_input_workspace_fallbacks(const Conv2dParams& p);
template <class T>
std::vector<std::size_t> conv2d_backward_weight_workspace_fallbacks(const Conv2dParams& p);

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
