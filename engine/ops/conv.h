// 2-D convolution (cross-correlation, as PyTorch's conv2d), with stride, padding, dilation
// and groups; groups == channels is the depthwise case, which runs its own direct kernel.
#pragma once

#include <array>

#include "engine/tensor.h"

namespace frugal {

using Int2 = std::array<std::int64_t, 2>;

// input [N, C, H, W], weight [O, C / groups, kH, kW], bias [O] or undefined.
// The scratch the kernels need (im2col columns) is taken from the caching allocator, like
// every other byte, and returned as soon as the call ends.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              Int2 stride = {1, 1}, Int2 padding = {0, 0}, Int2 dilation = {1, 1},
              std::int64_t groups = 1);

}  // namespace frugal
