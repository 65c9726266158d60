// Linear: parameters, default initialisation, and the fused linear op as forward.
#include "nn/linear.h"

#include <cmath>

#include "common/error.h"
#include "engine/ops/factory.h"
#include "engine/ops/matmul.h"
#include "nn/init.h"

namespace frugal::nn {

Linear::Linear(std::int64_t in, std::int64_t out, bool with_bias)
    : Module("Linear"), in_features(in), out_features(out) {
  FRUGAL_CHECK(in > 0 && out > 0, "Linear: in_features and out_features must be positive, got " +
                                      std::to_string(in) + " and " + std::to_string(out));
  weight = empty({out, in});
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  register_parameter("weight", weight);
  if (with_bias) {
    bias = empty({out});
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));
    init::uniform_(bias, -bound, bound);
    register_parameter("bias", bias);
  }
}

Tensor Linear::forward(const Tensor& input) { return linear(input, weight, bias); }

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(in_features) +
         ", out_features=" + std::to_string(out_features) +
         ", bias=" + (bias.defined() ? "true" : "false");
}

}  // namespace frugal::nn
