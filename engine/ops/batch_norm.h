// Batch normalisation over dim 1 of [N, C, ...] inputs: batch statistics in training (moving
// the running statistics), running statistics in evaluation.
#pragma once

#include "engine/tensor.h"

namespace frugal {

// weight, bias, running_mean, running_var: [C] or undefined. float16/bfloat16 inputs keep
// them in float32, as mixed-precision layers do; other inputs in the input's dtype.
// training: normalise with the batch's statistics and move running_mean/var (when defined)
// by `momentum` towards them; otherwise normalise with the running statistics.
Tensor batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var, bool training,
                  double momentum = 0.1, double eps = 1e-5);

// relu(batch_norm(...)) in one pass over the activation, forward and backward: the ReLU's
// output is the only thing it saves beyond batch_norm's own (what an in-place ReLU saves too).
Tensor batch_norm_relu(const Tensor& input, const Tensor& weight, const Tensor& bias,
                       const Tensor& running_mean, const Tensor& running_var, bool training,
                       double momentum = 0.1, double eps = 1e-5);

}  // namespace frugal
