// The tensor-level pass mixed precision's GradScaler needs: unscaling gradients in place while
// finding out, in the same read, whether any of them holds inf or NaN.
#pragma once

#include <vector>

#include "engine/tensor.h"

namespace frugal {

// PyTorch's torch._amp_foreach_non_finite_check_and_unscale_: multiplies every gradient by
// inv_scale in place (one pass each) and sets found_inf — a one-element float32 tensor on the
// gradients' device — to 1 when any element of any of them was inf or NaN; it is never reset
// here. Gradients must be contiguous float32 or float64 (master weights), on found_inf's
// device; undefined ones are skipped. Runs without recording autograd history.
void amp_non_finite_check_and_unscale_(const std::vector<Tensor>& grads, Tensor& found_inf,
                                       double inv_scale);

}  // namespace frugal
