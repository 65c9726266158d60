// View ops: new sizes, strides and offset over the same storage, no data copied (reshape
// copies only when no strides can express the result). Their backward reshapes, permutes,
// sums or scatters the gradient back to the input's shape.
#pragma once

#include "engine/tensor.h"

namespace frugal {

// The strides that view `sizes` onto a tensor of `old_sizes`/`old_strides`, if any exist
// (PyTorch's rule: only dims that are contiguous with each other may merge or split).
std::optional<DimVector> view_strides(IntArrayRef old_sizes, IntArrayRef old_strides,
                                      IntArrayRef sizes);
// Replaces one -1 in `sizes` by what makes numel match; validates the element count.
DimVector infer_size(IntArrayRef sizes, std::int64_t numel, const char* op);

// Sums `grad` over the dims that broadcasting added or expanded, giving shape `sizes`.
Tensor sum_to_size(const Tensor& grad, IntArrayRef sizes);

}  // namespace frugal
