// Gradient clipping over all of a model's gradients, with engine ops (so it runs on the
// gradients' device): per-gradient norms in float64 on the host add up to the total.
#include "nn/clip_grad.h"

#include <cmath>
#include <limits>
#include <string>

#include "common/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/reduce.h"

namespace frugal::nn::utils {

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  FRUGAL_CHECK(max_norm >= 0 && !std::isnan(max_norm),
               "clip_grad_norm_: max_norm must be >= 0, got " + std::to_string(max_norm));
  FRUGAL_CHECK(norm_type > 0,
               "clip_grad_norm_: norm_type must be > 0 (or inf), got " + std::to_string(norm_type));
  NoGradGuard no_grad;
  const bool inf_norm = std::isinf(norm_type);
  double total = 0;  // the largest |g| for inf, else the sum of |g|^p
  bool any = false;
  for (const Tensor& p : parameters) {
    const Tensor& g = p.grad();
    if (!g.defined() || g.numel() == 0) continue;
    any = true;
    const Tensor a = abs(g).to(kFloat64);
    if (inf_norm) {
      const double m = max(a).item<double>();
      total = std::isnan(m) || std::isnan(total) ? std::numeric_limits<double>::quiet_NaN()
                                                 : std::max(total, m);
    } else {
      total += sum(norm_type == 2.0 ? mul(a, a) : pow(a, norm_type)).item<double>();
    }
  }
  if (!any) return 0.0;
  if (!inf_norm) total = std::pow(total, 1.0 / norm_type);
  FRUGAL_CHECK(!error_if_nonfinite || std::isfinite(total),
               "clip_grad_norm_: the total norm of order " + std::to_string(norm_type) +
                   " of the gradients is non-finite, so they cannot be clipped");
  const double coefficient = max_norm / (total + 1e-6);
  if (coefficient < 1.0 || std::isnan(coefficient)) {
    for (const Tensor& p : parameters) {
      if (p.grad().defined()) Tensor(p.grad()).mul_(coefficient);
    }
  }
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  FRUGAL_CHECK(clip_value >= 0,
               "clip_grad_value_: clip_value must be >= 0, got " + std::to_string(clip_value));
  NoGradGuard no_grad;
  for (const Tensor& p : parameters) {
    const Tensor& g = p.grad();
    if (g.defined()) Tensor(g).copy_(clamp(g, -clip_value, clip_value));
  }
}

}  // namespace frugal::nn::utils
