// gradcheck for the engine tests: analytic gradients from backward() against central finite
// differences, in float64. The output is reduced as sum(out * v) with a random v, so every
// element of the Jacobian contributes and errors cannot cancel out.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/frugal.h"

namespace frugal::testing {

using OpFn = std::function<Tensor(const std::vector<Tensor>&)>;

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-6;
  double rtol = 1e-4;
};

// Float64 inputs of these shapes, standard normal (seeded), requiring grad.
std::vector<Tensor> random_inputs(const std::vector<std::vector<std::int64_t>>& shapes,
                                  std::uint64_t seed = 0);

// Empty when every gradient matches; otherwise a report of the worst mismatch per input.
// Inputs that do not require grad are held constant. f must be deterministic.
std::string gradcheck(const OpFn& f, const std::vector<Tensor>& inputs,
                      const GradcheckOptions& options = {});

}  // namespace frugal::testing
