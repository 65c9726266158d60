// nn::utils::clip_grad_norm_ and clip_grad_value_ (libtorch's torch::nn::utils): bounding the
// gradients before the optimizer step — with a GradScaler, after unscale_().
#pragma once

#include <vector>

#include "engine/tensor.h"

namespace frugal::nn::utils {

// Scales every gradient in place by max_norm / (total_norm + 1e-6) when the total p-norm of
// all gradients together exceeds max_norm; returns that total norm (inf for norm_type inf:
// the largest absolute value). Parameters without a gradient are skipped. An inf or NaN total
// is returned as is, and the gradients are then scaled by a NaN factor, as in PyTorch; pass
// error_if_nonfinite to get a frugal::Error instead.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm,
                       double norm_type = 2.0, bool error_if_nonfinite = false);

// Clamps every gradient element into [-clip_value, clip_value] in place.
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);

}  // namespace frugal::nn::utils
