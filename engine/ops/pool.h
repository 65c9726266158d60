// 2-D pooling: max (saving the argmax indices, as PyTorch does), average, and adaptive
// average, over [N, C, H, W] inputs.
#pragma once

#include <optional>

#include "engine/ops/conv.h"

namespace frugal {

// stride defaults to the kernel size, as in PyTorch.
Tensor max_pool2d(const Tensor& input, Int2 kernel_size, std::optional<Int2> stride = std::nullopt,
                  Int2 padding = {0, 0}, Int2 dilation = {1, 1}, bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& input, Int2 kernel_size, std::optional<Int2> stride = std::nullopt,
                  Int2 padding = {0, 0}, bool ceil_mode = false, bool count_include_pad = true);
Tensor adaptive_avg_pool2d(const Tensor& input, Int2 output_size);

}  // namespace frugal
