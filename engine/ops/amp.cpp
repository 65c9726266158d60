// amp_non_finite_check_and_unscale_: one fused kernel per gradient, on its device.
#include "engine/ops/amp.h"

#include <string>

#include "common/error.h"
#include "engine/ops/kernels.h"

namespace frugal {

void amp_non_finite_check_and_unscale_(const std::vector<Tensor>& grads, Tensor& found_inf,
                                       double inv_scale) {
  const char* op = "amp_non_finite_check_and_unscale_";
  FRUGAL_CHECK(found_inf.defined() && found_inf.dtype() == kFloat32 && found_inf.numel() == 1,
               std::string(op) + ": found_inf must be a one-element float32 tensor");
  const auto scale = static_cast<float>(inv_scale);
  for (const Tensor& g : grads) {
    if (!g.defined()) continue;
    FRUGAL_CHECK(g.device() == found_inf.device(), std::string(op) + ": a gradient is on " +
                                                       g.device().str() + ", found_inf on " +
                                                       found_inf.device().str());
    FRUGAL_CHECK(g.is_contiguous(), std::string(op) + ": gradients must be contiguous");
    float* flag = found_inf.data_ptr<float>();
    if (g.dtype() == kFloat32) {
      FRUGAL_KERNEL(g.device(), non_finite_check_and_unscale<float>)
      (g.data_ptr<float>(), g.numel(), scale, flag);
    } else if (g.dtype() == kFloat64) {
      FRUGAL_KERNEL(g.device(), non_finite_check_and_unscale<double>)
      (g.data_ptr<double>(), g.numel(), scale, flag);
    } else {
      throw Error(std::string(op) + ": a " + dtype_name(g.dtype()) +
                  " gradient; unscaling needs float32 or float64 gradients (keep master weights in "
                  "float32)");
    }
    g.impl()->storage()->bump_version();
  }
}

}  // namespace frugal
