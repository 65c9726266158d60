// 2-D pooling on contiguous NCHW raw pointers: max (with argmax indices, as PyTorch returns
// them), average, and adaptive average; forward and backward, parallel over the N*C planes.
#pragma once

#include <cstdint>

#include "common/half.h"

namespace frugal::kernels::cpu {

// input [N, C, H, W] -> output [N, C, out_h, out_w].
struct Pool2dParams {
  std::int64_t N = 1, C = 1, H = 1, W = 1;
  std::int64_t kH = 1, kW = 1;
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t pad_h = 0, pad_w = 0;
  std::int64_t dilation_h = 1, dilation_w = 1;  // max pooling only; average needs 1
  bool ceil_mode = false;  // round the output size up (a last window may start in the padding)
  bool count_include_pad = true;  // average pooling: divide by the window size incl. padding

  // PyTorch's pooling output size: floor or ceil of (H + 2 pad - dilation (k - 1) - 1) / stride
  // plus one, where with ceil_mode a last window that would start in the right/bottom
  // padding is dropped.
  std::int64_t out_h() const;
  std::int64_t out_w() const;
};

// Throws frugal::Error for parameters PyTorch refuses: sizes below 1 (N may be 0), stride or
// dilation below 1, padding negative or more than half the (dilated) kernel, an empty output.
// `average` also requires dilation 1.
void validate_pool2d(const Pool2dParams& p, bool average);

// T: float, double, Half, BFloat16 (computing in float for the 16-bit types).

// output = window maxima; indices[n, c, oh, ow] = h * W + w of the maximum inside its input
// plane (the first maximum; a NaN wins and propagates, as in PyTorch). indices may be null
// when no backward will follow: inference then writes only the output.
template <class T>
void max_pool2d_forward(const Pool2dParams& p, const T* input, T* output, std::int64_t* indices);

// grad_input = 0, then grad_input[plane][indices] += grad_output (overwrites grad_input).
template <class T>
void max_pool2d_backward(const Pool2dParams& p, const T* grad_output, const std::int64_t* indices,
                         T* grad_input);

// The same with compact indices: each maximum's place inside its window, kh * kW + kw, in one
// byte instead of eight (windows of up to 256 places) — what a backward needs, at an eighth
// of the memory and of the stores. window_index may be null for the forward.
template <class T>
void max_pool2d_forward_compact(const Pool2dParams& p, const T* input, T* output,
                                std::uint8_t* window_index);
template <class T>
void max_pool2d_backward_compact(const Pool2dParams& p, const T* grad_output,
                                 const std::uint8_t* window_index, T* grad_input);

template <class T>
void avg_pool2d_forward(const Pool2dParams& p, const T* input, T* output);

// Overwrites grad_input; each input element gathers from the windows that contain it.
template <class T>
void avg_pool2d_backward(const Pool2dParams& p, const T* grad_output, T* grad_input);

// Adaptive average pooling to [out_h, out_w]: output row i averages input rows
// floor(i * H / out_h) .. ceil((i + 1) * H / out_h) - 1, likewise for columns.
struct AdaptivePool2dParams {
  std::int64_t N = 1, C = 1, H = 1, W = 1;
  std::int64_t out_h = 1, out_w = 1;
};

// Throws frugal::Error unless N >= 0 and every other size is at least 1.
void validate_adaptive_pool2d(const AdaptivePool2dParams& p);

template <class T>
void adaptive_avg_pool2d_forward(const AdaptivePool2dParams& p, const T* input, T* output);

// Overwrites grad_input.
template <class T>
void adaptive_avg_pool2d_backward(const AdaptivePool2dParams& p, const T* grad_output,
                                  T* grad_input);

}  // namespace frugal::kernels::cpu
